//! The prelude's two parts, `prelude.lua` (every interpreter runs it) and
//! `prelude_functions.lua` (the functions API, loaded in an interpreter on
//! its first FUNCTION LOAD or FCALL), compiled once per process: each
//! interpreter loads the precompiled chunk instead of parsing the source
//! again, and the chunk is stripped of debug information
//! ([`super::lua_bytecode`]), which the prelude's functions would otherwise
//! keep in every interpreter (their line tables and variable names: about a
//! third of their size).

use std::sync::OnceLock;

use mlua::{Chunk, ChunkMode, Lua};

/// The chunk name of both parts (their functions' `source` in
/// `debug.getinfo`, which the error handler skips).
pub const NAME: &str = "@cairn_prelude";

/// A part of the prelude.
#[derive(Debug, Clone, Copy)]
pub enum Part {
    /// `prelude.lua`.
    Core,
    /// `prelude_functions.lua`.
    Functions,
}

impl Part {
    pub fn source(self) -> &'static str {
        match self {
            Part::Core => include_str!("prelude.lua"),
            Part::Functions => include_str!("prelude_functions.lua"),
        }
    }

    fn compiled(self) -> &'static OnceLock<Option<Vec<u8>>> {
        static CORE: OnceLock<Option<Vec<u8>>> = OnceLock::new();
        static FUNCTIONS: OnceLock<Option<Vec<u8>>> = OnceLock::new();
        match self {
            Part::Core => &CORE,
            Part::Functions => &FUNCTIONS,
        }
    }
}

/// A part as `lua` loads it: the precompiled chunk, or the source if it
/// could not be compiled here.
pub fn load(lua: &Lua, part: Part) -> Chunk<'_> {
    match compiled(part) {
        Some(bytes) => lua.load(bytes).set_name(NAME).set_mode(ChunkMode::Binary),
        None => lua.load(part.source()).set_name(NAME),
    }
}

fn compiled(part: Part) -> Option<&'static [u8]> {
    part.compiled()
        .get_or_init(|| match compile(part.source()) {
            Ok(bytes) => Some(bytes),
            Err(e) => {
                tracing::warn!(error = %e, "the Lua prelude could not be precompiled; it is compiled per interpreter");
                None
            }
        })
        .as_deref()
}

/// Why the prelude was not precompiled.
#[derive(Debug, thiserror::Error)]
enum CompileError {
    #[error("compiling the prelude: {0}")]
    Lua(#[from] mlua::Error),
    #[error(transparent)]
    Strip(#[from] super::lua_bytecode::BadChunk),
}

/// Compiles the prelude in a throwaway interpreter (the chunk's format is
/// this process's Lua's) and strips the result.
fn compile(source: &str) -> Result<Vec<u8>, CompileError> {
    let lua = Lua::new();
    let dump = lua.load(source).set_name(NAME).into_function()?.dump(false);
    Ok(super::lua_bytecode::strip(&dump)?)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn both_parts_are_precompiled_and_smaller_than_their_full_dumps() {
        for part in [Part::Core, Part::Functions] {
            let compiled = compiled(part).expect("precompiled");
            let full = Lua::new().load(part.source()).into_function().expect("compiles").dump(false);
            assert!(compiled.len() < full.len(), "{part:?}: {} < {}", compiled.len(), full.len());
        }
    }
}

//! Loading a library's code (FUNCTION LOAD, FUNCTION RESTORE, replay): its
//! shebang read, its code run once in this thread's functions interpreter in load
//! mode, and the functions it registered collected into a [`Library`].

use std::collections::BTreeMap;
use std::time::Duration;

use mlua::{Table, Value};

use super::library::{metadata, FunctionInfo, Libraries, Library};
use super::lua_env::{with_env, Engine};
use super::Scripting;

/// How long a library's load may run for a client (Redis's LOAD_TIMEOUT_MS);
/// replay has no limit.
pub const LOAD_TIMEOUT: Duration = Duration::from_millis(500);

/// Builds the library `code` declares. Err: Redis's error reply text.
pub fn load(scripting: &Scripting, code: &[u8], timeout: Option<Duration>) -> Result<Library, String> {
    let meta = metadata(code)?;
    let libraries: &Libraries = &scripting.libraries;
    let library = Library { id: libraries.next_id(), name: meta.name, code: code.to_vec(), functions: BTreeMap::new() };
    let generation = scripting.cache.generation();
    let functions = with_env(Engine::Functions, generation, |env| {
        let table = env.load_library(library.body(), timeout)?;
        let functions = collect(&table).map_err(|e| format!("ERR {e}"));
        let _ = env.lua.gc_collect();
        functions
    })
    .map_err(|e| format!("ERR {e}"))??;
    super::lua_env::report_memory(Engine::Functions, &scripting.functions_memory);
    Ok(Library { functions, ..library })
}

/// The registered functions (lowercase name → name, description, flags).
fn collect(table: &Table) -> mlua::Result<BTreeMap<String, FunctionInfo>> {
    let mut functions = BTreeMap::new();
    for pair in table.pairs::<String, Table>() {
        let (key, entry) = pair?;
        let name: String = entry.raw_get("name")?;
        let description = match entry.raw_get::<Value>("description")? {
            Value::String(s) => Some(s.as_bytes().to_vec()),
            _ => None,
        };
        let flags = entry.raw_get::<i64>("flags")? as u8;
        functions.insert(key, FunctionInfo { name, description, flags, speed: Default::default() });
    }
    Ok(functions)
}

//! Lua 5.1 precompiled chunks without their debug information.
//!
//! `lua_dump` (what `string.dump` and mlua's `Function::dump` call) keeps
//! every function's line table (one `int` per instruction), local variable
//! names and upvalue names: Lua 5.1 has no stripping dump (`luac -s` strips
//! in `luaU_dump`, which the API does not expose). [`strip`] rewrites a dump
//! without them, keeping the source name (so `debug.getinfo` still tells the
//! prelude's frames apart). Without line information an error raised in
//! such a function has no `name:line:` prefix; the prelude raises its errors
//! with level 0 or at its caller's level. Lua's loader checks the code of a
//! binary chunk (`luaG_checkcode`), and empty debug tables are valid there.
//!
//! Format (lundump.c/ldump.c, 5.1): a 12-byte header giving the sizes of
//! `int`, `size_t`, `Instruction` and `lua_Number` and the byte order, then
//! the main function: source (string), line defined, last line defined
//! (ints), upvalue count, parameter count, vararg flag, stack size (bytes),
//! code (int count, instructions), constants (int count, each a type byte
//! and a boolean byte, a number or a string), nested functions (int count,
//! each a function), line info (int count, ints), local variables (int
//! count, each a name string and two ints), upvalue names (int count,
//! strings). A string is its size (`size_t`, counting a final NUL; 0 for
//! none) and its bytes.

/// The dump is not a Lua 5.1 chunk this reader understands.
#[derive(Debug, thiserror::Error)]
#[error("unreadable Lua 5.1 chunk: {0}")]
pub struct BadChunk(&'static str);

const HEADER_LEN: usize = 12;
const SIGNATURE: &[u8] = b"\x1bLua\x51\x00";

/// `chunk` (a `lua_dump` of Lua 5.1) without line info, local variable and
/// upvalue names.
pub fn strip(chunk: &[u8]) -> Result<Vec<u8>, BadChunk> {
    let header = chunk.get(..HEADER_LEN).ok_or(BadChunk("short header"))?;
    if !header.starts_with(SIGNATURE) {
        return Err(BadChunk("not a Lua 5.1 binary chunk"));
    }
    let mut reader = Reader {
        input: chunk,
        at: HEADER_LEN,
        little_endian: header[6] == 1,
        int_size: usize::from(header[7]),
        size_t_size: usize::from(header[8]),
        instruction_size: usize::from(header[9]),
        number_size: usize::from(header[10]),
        out: header.to_vec(),
    };
    reader.function()?;
    if reader.at != chunk.len() {
        return Err(BadChunk("trailing bytes"));
    }
    Ok(reader.out)
}

/// Reads a dump, copying what is kept to `out`.
struct Reader<'a> {
    input: &'a [u8],
    at: usize,
    little_endian: bool,
    int_size: usize,
    size_t_size: usize,
    instruction_size: usize,
    number_size: usize,
    out: Vec<u8>,
}

impl Reader<'_> {
    fn function(&mut self) -> Result<(), BadChunk> {
        self.copy_string()?;
        self.copy(2 * self.int_size + 4)?;
        let code = self.copy_count()?;
        self.copy(code.checked_mul(self.instruction_size).ok_or(BadChunk("code size"))?)?;
        self.constants()?;
        for _ in 0..self.copy_count()? {
            self.function()?;
        }
        self.debug()
    }

    fn constants(&mut self) -> Result<(), BadChunk> {
        for _ in 0..self.copy_count()? {
            let kind = self.take(1)?[0];
            self.out.push(kind);
            match kind {
                0 => {}
                1 => self.copy(1)?,
                3 => self.copy(self.number_size)?,
                4 => self.copy_string()?,
                _ => return Err(BadChunk("constant type")),
            }
        }
        Ok(())
    }

    /// Skips line info, local variables and upvalue names, writing empty ones.
    fn debug(&mut self) -> Result<(), BadChunk> {
        let lines = self.count()?;
        self.take(lines.checked_mul(self.int_size).ok_or(BadChunk("line info size"))?)?;
        for _ in 0..self.count()? {
            self.string()?;
            self.take(2 * self.int_size)?;
        }
        for _ in 0..self.count()? {
            self.string()?;
        }
        for _ in 0..3 {
            self.out.extend(std::iter::repeat_n(0, self.int_size));
        }
        Ok(())
    }

    fn take(&mut self, len: usize) -> Result<&[u8], BadChunk> {
        let end = self.at.checked_add(len).ok_or(BadChunk("size"))?;
        let bytes = self.input.get(self.at..end).ok_or(BadChunk("truncated"))?;
        self.at = end;
        Ok(bytes)
    }

    fn copy(&mut self, len: usize) -> Result<(), BadChunk> {
        let start = self.at;
        self.take(len)?;
        self.out.extend_from_slice(&self.input[start..self.at]);
        Ok(())
    }

    fn unsigned(&mut self, size: usize) -> Result<usize, BadChunk> {
        let little_endian = self.little_endian;
        let bytes = self.take(size)?;
        let mut value: u64 = 0;
        let mut push = |b: &u8| value = (value << 8) | u64::from(*b);
        if little_endian {
            bytes.iter().rev().for_each(&mut push);
        } else {
            bytes.iter().for_each(&mut push);
        }
        usize::try_from(value).map_err(|_| BadChunk("size"))
    }

    /// An `int` count (never negative in a dump).
    fn count(&mut self) -> Result<usize, BadChunk> {
        let count = self.unsigned(self.int_size)?;
        if self.int_size < 8 && count >> (8 * self.int_size - 1) != 0 {
            return Err(BadChunk("negative count"));
        }
        Ok(count)
    }

    fn copy_count(&mut self) -> Result<usize, BadChunk> {
        let start = self.at;
        let count = self.count()?;
        self.out.extend_from_slice(&self.input[start..self.at]);
        Ok(count)
    }

    fn string(&mut self) -> Result<(), BadChunk> {
        let len = self.unsigned(self.size_t_size)?;
        self.take(len)?;
        Ok(())
    }

    fn copy_string(&mut self) -> Result<(), BadChunk> {
        let start = self.at;
        self.string()?;
        self.out.extend_from_slice(&self.input[start..self.at]);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use mlua::{ChunkMode, Lua, LuaOptions, StdLib};

    const CODE: &str = "local up = 40\nlocal function add(a, b)\n  local s = a + b\n  return s + up\nend\n\
                        return add(1, 1), 'text', 1.5, true, nil";

    fn unsafe_lua() -> Lua {
        // SAFETY: the tests load binary chunks they made themselves.
        unsafe { Lua::unsafe_new_with(StdLib::NONE, LuaOptions::new()) }
    }

    #[test]
    fn a_stripped_chunk_runs_as_the_original_and_is_smaller() {
        let lua = unsafe_lua();
        let dump = lua.load(CODE).set_name("@test").into_function().expect("compiles").dump(false);
        let stripped = strip(&dump).expect("strips");
        assert!(stripped.len() < dump.len(), "{} < {}", stripped.len(), dump.len());
        let f = lua.load(&stripped[..]).set_mode(ChunkMode::Binary).into_function().expect("loads");
        let (sum, text, number, flag): (i64, String, f64, bool) = f.call(()).expect("runs");
        assert_eq!((sum, text.as_str(), number, flag), (42, "text", 1.5, true));
        assert_eq!(strip(&stripped).expect("strips again"), stripped);
    }

    #[test]
    fn bad_chunks_are_refused() {
        assert!(strip(b"return 1").is_err());
        let lua = unsafe_lua();
        let dump = lua.load(CODE).into_function().expect("compiles").dump(false);
        assert!(strip(&dump[..dump.len() - 1]).is_err());
        let mut longer = dump.clone();
        longer.push(0);
        assert!(strip(&longer).is_err());
    }
}

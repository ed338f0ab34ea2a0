//! The `struct` library of Redis's Lua (Roberto Ierusalimschy's struct):
//! `struct.pack(fmt, ...)`, `struct.unpack(fmt, s, [pos])`, `struct.size(fmt)`,
//! with the sizes of Redis's x86-64 build.
//!
//! Format: `>` big endian, `<` little endian (the default, native), `!n`
//! maximum alignment (default 8), `x` a zero byte, `b`/`B` (signed/unsigned
//! char), `h`/`H` (short), `l`/`L` (long, 8), `T` (size_t, 8), `i`/`I`
//! [n] (int of n bytes, default 4, at most 32), `f` float, `d` double, `s`
//! zero-terminated string, `c`[n] n bytes (`c0`: the whole string when
//! packing, the previous value's length when unpacking), spaces ignored.
//! The format ends at its first NUL byte, as a C string.

use mlua::{Lua, MultiValue, Table, Value};

use super::lua_lib::{check_bytes, check_number, opt_integer, to_number, LibResult, Maker, Raise, MAX_STACK_SLOTS};

const MAX_INT_SIZE: usize = 32;
/// The largest alignment `!` sets by default (the alignment of a double).
const MAX_ALIGN: usize = 8;

/// Installs the `struct` table into `globals`.
pub fn install(lua: &Lua, maker: &Maker, globals: &Table) -> mlua::Result<()> {
    let t = lua.create_table()?;
    t.raw_set("pack", maker.function(lua, pack)?)?;
    t.raw_set("unpack", maker.function(lua, unpack)?)?;
    t.raw_set("size", maker.function(lua, size)?)?;
    globals.raw_set("struct", t)
}

#[derive(Clone, Copy, PartialEq)]
enum Endian {
    Big,
    Little,
}

/// The format being read, with the current endianness and alignment.
struct Format {
    bytes: Vec<u8>,
    pos: usize,
    endian: Endian,
    align: usize,
    /// The function whose errors these are (`pack`, `unpack`, `size`).
    function: &'static str,
}

impl Format {
    fn new(args: &MultiValue, function: &'static str) -> LibResult<Format> {
        let mut bytes = check_bytes(args, 1, function)?;
        if let Some(nul) = bytes.iter().position(|&b| b == 0) {
            bytes.truncate(nul);
        }
        Ok(Format { bytes, pos: 0, endian: Endian::Little, align: 1, function })
    }

    fn next_option(&mut self) -> Option<u8> {
        let opt = self.bytes.get(self.pos).copied()?;
        self.pos += 1;
        Some(opt)
    }

    /// The number written after an option, or `default`.
    fn number(&mut self, default: usize) -> LibResult<usize> {
        if !self.bytes.get(self.pos).is_some_and(u8::is_ascii_digit) {
            return Ok(default);
        }
        let mut n: i32 = 0;
        while let Some(d) = self.bytes.get(self.pos).filter(|b| b.is_ascii_digit()) {
            let digit = i32::from(d - b'0');
            if n > i32::MAX / 10 || n * 10 > i32::MAX - digit {
                return Err(Raise::message("integral size overflow"));
            }
            n = n * 10 + digit;
            self.pos += 1;
        }
        Ok(n as usize)
    }

    /// The size of option `opt` (reading its number), 0 for the others.
    fn size(&mut self, opt: u8) -> LibResult<usize> {
        Ok(match opt {
            b'B' | b'b' | b'x' => 1,
            b'H' | b'h' => 2,
            b'L' | b'l' | b'T' | b'd' => 8,
            b'f' => 4,
            b'c' => self.number(1)?,
            b'i' | b'I' => {
                let size = self.number(4)?;
                if size > MAX_INT_SIZE {
                    return Err(Raise::message(format!("integral size {size} is larger than limit of {MAX_INT_SIZE}")));
                }
                size
            }
            _ => 0,
        })
    }

    /// The padding before an item of `size` at offset `len`.
    fn padding(&self, len: usize, opt: u8, size: usize) -> usize {
        if size == 0 || opt == b'c' {
            return 0;
        }
        let size = size.min(self.align);
        (size - (len & (size - 1))) & (size - 1)
    }

    /// Endianness, alignment and spaces; anything else is an invalid option.
    fn control(&mut self, opt: u8) -> LibResult<()> {
        match opt {
            b' ' => {}
            b'>' => self.endian = Endian::Big,
            b'<' => self.endian = Endian::Little,
            b'!' => {
                let align = self.number(MAX_ALIGN)?;
                if !align.is_power_of_two() {
                    return Err(Raise::message(format!("alignment {align} is not a power of 2")));
                }
                self.align = align;
            }
            other => {
                let mut detail = b"invalid format option '".to_vec();
                detail.extend_from_slice(&[other, b'\'']);
                return Err(Raise::argument(1, self.function, detail));
            }
        }
        Ok(())
    }

    /// `bytes` (little endian) in the current order.
    fn ordered(&self, mut bytes: Vec<u8>) -> Vec<u8> {
        if self.endian == Endian::Big {
            bytes.reverse();
        }
        bytes
    }
}

fn pack(lua: &Lua, mut args: MultiValue) -> LibResult<MultiValue> {
    let mut fmt = Format::new(&args, "pack")?;
    // struct pushes a nil after the arguments: a missing one is "got nil".
    args.push_back(Value::Nil);
    let mut out = Vec::new();
    let mut arg = 2;
    let mut total = 0usize;
    while let Some(opt) = fmt.next_option() {
        let mut size = fmt.size(opt)?;
        let padding = fmt.padding(total, opt, size);
        total += padding;
        out.resize(out.len() + padding, 0);
        match opt {
            b'b' | b'B' | b'h' | b'H' | b'l' | b'L' | b'T' | b'i' | b'I' => {
                let n = check_number(&args, arg, "pack")?;
                arg += 1;
                // Negative numbers through the signed type, as C converts.
                let value = if n < 0.0 { super::lua_lib::to_integer(n) as u64 } else { n as u64 };
                let bytes = (0..size).map(|i| if i < 8 { (value >> (8 * i)) as u8 } else { 0 }).collect();
                out.extend(fmt.ordered(bytes));
            }
            b'x' => out.push(0),
            b'f' => {
                let n = check_number(&args, arg, "pack")? as f32;
                arg += 1;
                out.extend(fmt.ordered(n.to_le_bytes().to_vec()));
            }
            b'd' => {
                let n = check_number(&args, arg, "pack")?;
                arg += 1;
                out.extend(fmt.ordered(n.to_le_bytes().to_vec()));
            }
            b'c' | b's' => {
                let s = check_bytes(&args, arg, "pack")?;
                arg += 1;
                if size == 0 {
                    size = s.len();
                }
                if s.len() < size {
                    // struct names the argument after the string.
                    return Err(Raise::argument(arg, "pack", "string too short"));
                }
                out.extend_from_slice(&s[..size]);
                if opt == b's' {
                    out.push(0);
                    size += 1;
                }
            }
            other => fmt.control(other)?,
        }
        total += size;
    }
    Ok(MultiValue::from_iter([Value::String(lua.create_string(&out)?)]))
}

/// An integer of `bytes` (in the format's order) as struct reads it: in an
/// unsigned long, sign-extended for the lowercase options.
fn read_integer(bytes: &[u8], endian: Endian, signed: bool) -> f64 {
    let fold = |acc: u64, b: &u8| acc.wrapping_shl(8) | u64::from(*b);
    let value = match endian {
        Endian::Big => bytes.iter().fold(0, fold),
        Endian::Little => bytes.iter().rev().fold(0, fold),
    };
    if !signed {
        return value as f64;
    }
    let mask = u64::MAX.wrapping_shl((bytes.len() * 8).wrapping_sub(1) as u32);
    let extended = if value & mask != 0 { value | mask } else { value };
    extended as i64 as f64
}

fn too_short() -> Raise {
    Raise::argument(2, "unpack", "data string too short")
}

fn unpack(lua: &Lua, args: MultiValue) -> LibResult<MultiValue> {
    let mut fmt = Format::new(&args, "unpack")?;
    let data = check_bytes(&args, 2, "unpack")?;
    // size_t: a negative offset wraps to a huge one.
    let pos = opt_integer(&args, 3, "unpack", 1)? as u64;
    if pos == 0 {
        return Err(Raise::argument(3, "unpack", "offset must be 1 or greater"));
    }
    let mut pos = pos - 1;
    let len = data.len() as u64;
    let mut results = MultiValue::new();
    while let Some(opt) = fmt.next_option() {
        let mut size = fmt.size(opt)? as u64;
        pos = pos.wrapping_add(fmt.padding(pos as usize, opt, size as usize) as u64);
        if size > len || pos > len - size {
            return Err(too_short());
        }
        if results.len() + 3 > MAX_STACK_SLOTS {
            return Err(Raise::stack_overflow("too many results"));
        }
        let at = pos as usize;
        let item = &data[at..at + size as usize];
        match opt {
            b'b' | b'B' | b'h' | b'H' | b'l' | b'L' | b'T' | b'i' | b'I' => {
                results.push_back(Value::Number(read_integer(item, fmt.endian, opt.is_ascii_lowercase())));
            }
            b'x' => {}
            b'f' => {
                let bytes = fmt.ordered(item.to_vec());
                let raw = <[u8; 4]>::try_from(bytes.as_slice()).map_err(|_| too_short())?;
                results.push_back(Value::Number(f64::from(f32::from_le_bytes(raw))));
            }
            b'd' => {
                let bytes = fmt.ordered(item.to_vec());
                let raw = <[u8; 8]>::try_from(bytes.as_slice()).map_err(|_| too_short())?;
                results.push_back(Value::Number(f64::from_le_bytes(raw)));
            }
            b'c' => {
                if size == 0 {
                    let previous = results.back().and_then(to_number);
                    let Some(n) = previous else {
                        return Err(Raise::message("format 'c0' needs a previous size"));
                    };
                    results.pop_back();
                    size = if n < 0.0 { u64::MAX } else { n as u64 };
                    if size > len || pos > len - size {
                        return Err(too_short());
                    }
                }
                results.push_back(Value::String(lua.create_string(&data[at..at + size as usize])?));
            }
            b's' => {
                let Some(end) = data[at..].iter().position(|&b| b == 0) else {
                    return Err(Raise::message("unfinished string in data"));
                };
                results.push_back(Value::String(lua.create_string(&data[at..at + end])?));
                size = end as u64 + 1;
            }
            other => fmt.control(other)?,
        }
        pos += size;
    }
    results.push_back(Value::Integer(pos as i64 + 1));
    Ok(results)
}

fn size(_: &Lua, args: MultiValue) -> LibResult<MultiValue> {
    let mut fmt = Format::new(&args, "size")?;
    let mut pos = 0usize;
    while let Some(opt) = fmt.next_option() {
        let size = fmt.size(opt)?;
        pos += fmt.padding(pos, opt, size);
        if opt == b's' {
            return Err(Raise::argument(1, "size", "option 's' has no fixed size"));
        }
        if opt == b'c' && size == 0 {
            return Err(Raise::argument(1, "size", "option 'c0' has no fixed size"));
        }
        if !opt.is_ascii_alphanumeric() {
            fmt.control(opt)?;
        }
        pos += size;
    }
    Ok(MultiValue::from_iter([Value::Integer(pos as i64)]))
}

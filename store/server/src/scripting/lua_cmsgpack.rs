//! The `cmsgpack` library of Redis's Lua (lua-cmsgpack 0.4.0):
//! `cmsgpack.pack(v1, ...)`, `cmsgpack.unpack(s)`,
//! `cmsgpack.unpack_one(s, [offset])`, `cmsgpack.unpack_limit(s, limit, [offset])`.
//!
//! Encoding, as lua-cmsgpack chooses: an integral number that fits in 64
//! bits as the smallest integer encoding, any other number as float 32 when
//! that is lossless, else float 64; a table whose keys are exactly 1..n as
//! an array (the empty table too), any other table as a map; tables deeper
//! than 16 levels, and values of other types, as nil. Decoding reads what it
//! writes (str 8/16/32 and fixstr, not bin or ext types).

use mlua::{Lua, MultiValue, Table, Value};

use super::lua_lib::{check_bytes, check_integer, opt_integer, LibResult, Maker, Raise, MAX_STACK_SLOTS};

/// Tables nested deeper are encoded as nil (lua-cmsgpack's circular reference guard).
const MAX_NESTING: usize = 16;

/// Installs the `cmsgpack` table into `globals`.
pub fn install(lua: &Lua, maker: &Maker, globals: &Table) -> mlua::Result<()> {
    let t = lua.create_table()?;
    t.raw_set("pack", maker.function(lua, pack)?)?;
    t.raw_set("unpack", maker.function(lua, |lua, args| unpack(lua, &args, 0, 0, "unpack"))?)?;
    t.raw_set(
        "unpack_one",
        maker.function(lua, |lua, args| {
            let offset = opt_integer(&args, 2, "unpack_one", 0)?;
            unpack(lua, &args, 1, offset, "unpack_one")
        })?,
    )?;
    t.raw_set(
        "unpack_limit",
        maker.function(lua, |lua, args| {
            let limit = check_integer(&args, 2, "unpack_limit")?;
            let offset = opt_integer(&args, 3, "unpack_limit", 0)?;
            unpack(lua, &args, limit, offset, "unpack_limit")
        })?,
    )?;
    t.raw_set("_NAME", "cmsgpack")?;
    t.raw_set("_VERSION", "lua-cmsgpack 0.4.0")?;
    t.raw_set("_COPYRIGHT", "Copyright (C) 2012, Salvatore Sanfilippo")?;
    t.raw_set("_DESCRIPTION", "MessagePack C implementation for Lua")?;
    globals.raw_set("cmsgpack", t)
}

fn pack(lua: &Lua, args: MultiValue) -> LibResult<MultiValue> {
    if args.is_empty() {
        return Err(Raise::argument(0, "pack", "MessagePack pack needs input."));
    }
    let mut out = Vec::new();
    for value in args.iter() {
        encode(&mut out, value, 0)?;
    }
    Ok(MultiValue::from_iter([Value::String(lua.create_string(&out)?)]))
}

/// Encodes one value (`level`: the tables it is nested in).
pub fn encode(out: &mut Vec<u8>, value: &Value, level: usize) -> mlua::Result<()> {
    match value {
        Value::String(s) => encode_bytes(out, &s.as_bytes()),
        Value::Boolean(b) => out.push(if *b { 0xc3 } else { 0xc2 }),
        Value::Integer(n) => encode_int(out, *n),
        Value::Number(n) => encode_number(out, *n),
        Value::Table(t) if level < MAX_NESTING => encode_table(out, t, level)?,
        _ => out.push(0xc0),
    }
    Ok(())
}

fn encode_number(out: &mut Vec<u8>, n: f64) {
    // An integral double within int64 is an integer (IS_INT64_EQUIVALENT).
    if n.is_finite() && n.fract() == 0.0 && (-9.223_372_036_854_776e18..9.223_372_036_854_776e18).contains(&n) {
        return encode_int(out, n as i64);
    }
    let single = n as f32;
    if f64::from(single) == n {
        out.push(0xca);
        out.extend_from_slice(&single.to_be_bytes());
    } else {
        out.push(0xcb);
        out.extend_from_slice(&n.to_be_bytes());
    }
}

fn encode_int(out: &mut Vec<u8>, n: i64) {
    match n {
        0..=127 => out.push(n as u8),
        128..=0xff => out.extend_from_slice(&[0xcc, n as u8]),
        0x100..=0xffff => {
            out.push(0xcd);
            out.extend_from_slice(&(n as u16).to_be_bytes());
        }
        0x1_0000..=0xffff_ffff => {
            out.push(0xce);
            out.extend_from_slice(&(n as u32).to_be_bytes());
        }
        -32..=-1 => out.push(n as i8 as u8),
        -128..=-33 => out.extend_from_slice(&[0xd0, n as i8 as u8]),
        -32768..=-129 => {
            out.push(0xd1);
            out.extend_from_slice(&(n as i16).to_be_bytes());
        }
        -2_147_483_648..=-32769 => {
            out.push(0xd2);
            out.extend_from_slice(&(n as i32).to_be_bytes());
        }
        _ if n > 0 => {
            out.push(0xcf);
            out.extend_from_slice(&(n as u64).to_be_bytes());
        }
        _ => {
            out.push(0xd3);
            out.extend_from_slice(&n.to_be_bytes());
        }
    }
}

/// A header: the fix form (`fix | n`) up to `fix_max`, else 16 or 32 bits.
fn encode_header(out: &mut Vec<u8>, n: usize, fix: u8, fix_max: usize, codes: [u8; 2]) {
    if n <= fix_max {
        out.push(fix | n as u8);
    } else if n <= 0xffff {
        out.push(codes[0]);
        out.extend_from_slice(&(n as u16).to_be_bytes());
    } else {
        out.push(codes[1]);
        out.extend_from_slice(&(n as u32).to_be_bytes());
    }
}

fn encode_bytes(out: &mut Vec<u8>, bytes: &[u8]) {
    let n = bytes.len();
    if (32..=0xff).contains(&n) {
        out.extend_from_slice(&[0xd9, n as u8]);
    } else {
        encode_header(out, n, 0xa0, 31, [0xda, 0xdb]);
    }
    out.extend_from_slice(bytes);
}

/// lua-cmsgpack's `table_is_an_array`: every key a positive integer (of C
/// `int` range), as many keys as the largest.
fn is_array(table: &Table) -> mlua::Result<bool> {
    let (mut count, mut max) = (0i64, 0i64);
    for pair in table.pairs::<Value, Value>() {
        let (key, _) = pair?;
        let k = match key {
            Value::Integer(k) => k as f64,
            Value::Number(k) => k,
            _ => return Ok(false),
        };
        if k <= 0.0 || k.fract() != 0.0 || k > f64::from(i32::MAX) {
            return Ok(false);
        }
        max = max.max(k as i64);
        count += 1;
    }
    Ok(max == count)
}

fn encode_table(out: &mut Vec<u8>, table: &Table, level: usize) -> mlua::Result<()> {
    if is_array(table)? {
        let length = table.raw_len();
        encode_header(out, length, 0x90, 15, [0xdc, 0xdd]);
        for i in 1..=length {
            let item: Value = table.get(i)?;
            encode(out, &item, level + 1)?;
        }
        return Ok(());
    }
    let count = table.pairs::<Value, Value>().count();
    encode_header(out, count, 0x80, 15, [0xde, 0xdf]);
    for pair in table.pairs::<Value, Value>() {
        let (key, item) = pair?;
        encode(out, &key, level + 1)?;
        encode(out, &item, level + 1)?;
    }
    Ok(())
}

/// lua-cmsgpack's `mp_unpack_full`: `limit` values from `offset` (0 and 0:
/// all values, returned without the next offset).
fn unpack(lua: &Lua, args: &MultiValue, limit: i64, offset: i64, function: &str) -> LibResult<MultiValue> {
    let data = check_bytes(args, 1, function)?;
    let decode_all = limit == 0 && offset == 0;
    if offset < 0 || limit < 0 {
        return Err(Raise::message(format!(
            "Invalid request to unpack with offset of {} and limit of {}.",
            offset as i32,
            data.len() as i32
        )));
    }
    if offset as u64 > data.len() as u64 {
        return Err(Raise::message(format!(
            "Start offset {} greater than input length {}.",
            offset as i32,
            data.len() as i32
        )));
    }
    let limit = if decode_all { i64::from(i32::MAX) } else { limit };
    let mut decoder = Decoder { lua, data: &data, pos: offset as usize, slots: 1 };
    let mut values = MultiValue::new();
    while decoder.pos < data.len() && (values.len() as i64) < limit {
        values.push_back(decoder.value().map_err(Decoder::message)?);
    }
    if !decode_all {
        let next = if decoder.pos == data.len() { -1 } else { decoder.pos as i64 };
        values.push_front(Value::Integer(next));
    }
    Ok(values)
}

/// Why decoding stopped.
enum Stop {
    Missing,
    BadFormat,
    Raise(Raise),
}

impl From<mlua::Error> for Stop {
    fn from(e: mlua::Error) -> Stop {
        Stop::Raise(Raise::Lua(e))
    }
}

struct Decoder<'a> {
    lua: &'a Lua,
    data: &'a [u8],
    pos: usize,
    /// The Lua stack slots lua-cmsgpack would use (it stops at Lua's limit).
    slots: usize,
}

impl Decoder<'_> {
    fn message(stop: Stop) -> Raise {
        match stop {
            Stop::Missing => Raise::message("Missing bytes in input."),
            Stop::BadFormat => Raise::message("Bad data format in input."),
            Stop::Raise(raise) => raise,
        }
    }

    /// The `n` bytes after the type byte (and consumes both).
    fn take(&mut self, n: usize) -> Result<&[u8], Stop> {
        let start = self.pos + 1;
        if self.data.len() - self.pos < n + 1 {
            return Err(Stop::Missing);
        }
        self.pos = start + n;
        Ok(&self.data[start..start + n])
    }

    fn be(&mut self, n: usize) -> Result<u64, Stop> {
        Ok(self.take(n)?.iter().fold(0u64, |acc, b| (acc << 8) | u64::from(*b)))
    }

    /// A string whose length is in the `header` bytes after the type byte.
    fn string(&mut self, header: usize) -> Result<Value, Stop> {
        let len = self.be(header)? as usize;
        self.string_body(len)
    }

    /// A string of `len` bytes at `pos`.
    fn string_body(&mut self, len: usize) -> Result<Value, Stop> {
        if self.data.len() - self.pos < len {
            return Err(Stop::Missing);
        }
        let bytes = &self.data[self.pos..self.pos + len];
        self.pos += len;
        Ok(Value::String(self.lua.create_string(bytes)?))
    }

    /// Decodes the value at `pos`; it then takes one more stack slot.
    fn value(&mut self) -> Result<Value, Stop> {
        if self.pos >= self.data.len() {
            return Err(Stop::Missing);
        }
        if self.slots + 1 > MAX_STACK_SLOTS {
            return Err(Stop::Raise(Raise::stack_overflow(
                "too many return values at once; use unpack_one or unpack_limit instead.",
            )));
        }
        let value = self.decode()?;
        self.slots += 1;
        Ok(value)
    }

    fn decode(&mut self) -> Result<Value, Stop> {
        let code = self.data[self.pos];
        Ok(match code {
            0xcc => Value::Number(self.be(1)? as f64),
            0xcd => Value::Number(self.be(2)? as f64),
            0xce => Value::Number(self.be(4)? as f64),
            // lua-cmsgpack pushes uint 64 as a lua_Integer: above 2^63 it wraps.
            0xcf => Value::Number(self.be(8)? as i64 as f64),
            0xd0 => Value::Number(f64::from(self.be(1)? as u8 as i8)),
            0xd1 => Value::Number(f64::from(self.be(2)? as u16 as i16)),
            0xd2 => Value::Number(f64::from(self.be(4)? as u32 as i32)),
            0xd3 => Value::Number(self.be(8)? as i64 as f64),
            0xc0 | 0xc2 | 0xc3 => {
                self.pos += 1;
                match code {
                    0xc0 => Value::Nil,
                    other => Value::Boolean(other == 0xc3),
                }
            }
            0xca => Value::Number(f64::from(f32::from_bits(self.be(4)? as u32))),
            0xcb => Value::Number(f64::from_bits(self.be(8)?)),
            0xd9 => self.string(1)?,
            0xda => self.string(2)?,
            0xdb => self.string(4)?,
            0xdc => self.array_body(2)?,
            0xdd => self.array_body(4)?,
            0xde => self.map_body(2)?,
            0xdf => self.map_body(4)?,
            0x00..=0x7f => {
                self.pos += 1;
                Value::Number(f64::from(code))
            }
            0xe0..=0xff => {
                self.pos += 1;
                Value::Number(f64::from(code as i8))
            }
            0xa0..=0xbf => {
                if self.data.len() - self.pos < 1 + usize::from(code & 0x1f) {
                    return Err(Stop::Missing);
                }
                self.pos += 1;
                self.string_body(usize::from(code & 0x1f))?
            }
            0x90..=0x9f => self.array(usize::from(code & 0xf))?,
            0x80..=0x8f => self.map(usize::from(code & 0xf))?,
            _ => return Err(Stop::BadFormat),
        })
    }

    fn array_body(&mut self, header: usize) -> Result<Value, Stop> {
        let len = self.be(header)? as usize;
        self.pos -= 1;
        self.array(len)
    }

    fn map_body(&mut self, header: usize) -> Result<Value, Stop> {
        let len = self.be(header)? as usize;
        self.pos -= 1;
        self.map(len)
    }

    /// An array of `len` values after the byte at `pos` (the type byte, or
    /// the header's last byte).
    fn array(&mut self, len: usize) -> Result<Value, Stop> {
        self.pos += 1;
        let table = self.lua.create_table_with_capacity(len.min(self.data.len() - self.pos), 0)?;
        // The table is on the stack while its items are decoded, each after its index.
        if self.slots + 2 > MAX_STACK_SLOTS {
            return Err(Stop::Raise(Raise::stack_overflow("in function mp_decode_to_lua_array")));
        }
        self.slots += 1;
        for i in 1..=len {
            self.slots += 1;
            let item = self.value()?;
            table.raw_set(i, item)?;
            self.slots -= 2;
        }
        self.slots -= 1;
        Ok(Value::Table(table))
    }

    fn map(&mut self, len: usize) -> Result<Value, Stop> {
        self.pos += 1;
        let table = self.lua.create_table()?;
        self.slots += 1;
        for _ in 0..len {
            let key = self.value()?;
            let item = self.value()?;
            match &key {
                Value::Nil => return Err(Stop::Raise(Raise::Bare(b"table index is nil".to_vec()))),
                Value::Number(n) if n.is_nan() => return Err(Stop::Raise(Raise::Bare(b"table index is NaN".to_vec()))),
                _ => table.raw_set(key, item)?,
            }
            self.slots -= 2;
        }
        self.slots -= 1;
        Ok(Value::Table(table))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn eval(code: &str) -> String {
        let lua = Lua::new();
        let maker = Maker::new(&lua).expect("maker");
        install(&lua, &maker, &lua.globals()).expect("installed");
        match lua.load(code).set_name("@user_script").eval::<mlua::String>() {
            Ok(s) => s.to_string_lossy(),
            Err(e) => format!("error: {e}"),
        }
    }

    #[test]
    fn truncated_input_is_missing_bytes() {
        assert_eq!(eval("local ok, e = pcall(cmsgpack.unpack, '\\146\\1') return e"), "Missing bytes in input.");
    }
}

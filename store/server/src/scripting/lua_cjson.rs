//! The `cjson` library of Redis's Lua (lua-cjson 2.1.0): `cjson.encode`,
//! `cjson.decode` ([`super::lua_cjson_decode`]), `cjson.null`, the
//! configuration functions (`encode_sparse_array`, `encode_max_depth`,
//! `decode_max_depth`, `encode_number_precision`, `encode_keep_buffer`,
//! `encode_invalid_numbers`, `decode_invalid_numbers`) and `cjson.new`.
//!
//! The configuration belongs to the module table (each `cjson.new()` has its
//! own) and lasts as long as the interpreter, as in Redis, where a script's
//! `cjson.encode_max_depth(1)` holds for the scripts after it.

use std::cell::RefCell;
use std::rc::Rc;

use mlua::{LightUserData, Lua, MultiValue, Table, Value};

use super::lua_lib::{check_integer, type_name, LibResult, Maker, Raise, MAX_STACK_SLOTS};
use super::lua_number::format_g;

/// lua-cjson's settings (its defaults as Redis builds it).
#[derive(Debug, Clone)]
pub struct Config {
    pub sparse_convert: bool,
    pub sparse_ratio: i32,
    pub sparse_safe: i32,
    pub encode_max_depth: i32,
    pub decode_max_depth: i32,
    /// 0: refuse NaN and Inf, 1: write them (`nan`, `inf`), 2: write `null`.
    pub encode_invalid_numbers: u8,
    pub decode_invalid_numbers: bool,
    pub keep_buffer: bool,
    pub number_precision: i32,
}

impl Default for Config {
    fn default() -> Config {
        Config {
            sparse_convert: false,
            sparse_ratio: 2,
            sparse_safe: 10,
            encode_max_depth: 1000,
            decode_max_depth: 1000,
            encode_invalid_numbers: 0,
            decode_invalid_numbers: true,
            keep_buffer: true,
            number_precision: 14,
        }
    }
}

type Shared = Rc<RefCell<Config>>;

/// A configuration function: reads its arguments into the settings.
type OptionFn = fn(&Lua, &mut Config, &MultiValue) -> LibResult<MultiValue>;

/// `cjson.null`: the NULL light userdata.
pub fn null() -> Value {
    Value::LightUserData(LightUserData(std::ptr::null_mut()))
}

/// Installs the `cjson` table into `globals`.
pub fn install(lua: &Lua, maker: &Rc<Maker>, globals: &Table) -> mlua::Result<()> {
    globals.raw_set("cjson", module(lua, maker)?)
}

/// A module table with its own configuration (`cjson.new`).
fn module(lua: &Lua, maker: &Rc<Maker>) -> mlua::Result<Table> {
    let config: Shared = Rc::default();
    let t = lua.create_table()?;
    let c = config.clone();
    t.raw_set("encode", maker.function(lua, move |lua, args| encode(lua, &c, args))?)?;
    let c = config.clone();
    t.raw_set(
        "decode",
        maker.function(lua, move |lua, args| {
            let cfg = c.borrow().clone();
            super::lua_cjson_decode::decode(lua, &cfg, args)
        })?,
    )?;
    let options: [(&str, OptionFn); 7] = [
        ("encode_sparse_array", encode_sparse_array),
        ("encode_max_depth", |lua, cfg, args| {
            integer_option(lua, args, "encode_max_depth", &mut cfg.encode_max_depth, 1, i32::MAX)
        }),
        ("decode_max_depth", |lua, cfg, args| {
            integer_option(lua, args, "decode_max_depth", &mut cfg.decode_max_depth, 1, i32::MAX)
        }),
        ("encode_number_precision", |lua, cfg, args| {
            integer_option(lua, args, "encode_number_precision", &mut cfg.number_precision, 1, 14)
        }),
        ("encode_keep_buffer", |lua, cfg, args| bool_option(lua, args, "encode_keep_buffer", &mut cfg.keep_buffer)),
        ("encode_invalid_numbers", encode_invalid_numbers),
        ("decode_invalid_numbers", |lua, cfg, args| {
            bool_option(lua, args, "decode_invalid_numbers", &mut cfg.decode_invalid_numbers)
        }),
    ];
    for (name, option) in options {
        let c = config.clone();
        t.raw_set(name, maker.function(lua, move |lua, args| option(lua, &mut c.borrow_mut(), &args))?)?;
    }
    let m = maker.clone();
    t.raw_set("new", maker.function(lua, move |lua, _| Ok(MultiValue::from_iter([Value::Table(module(lua, &m)?)])))?)?;
    t.raw_set("null", null())?;
    t.raw_set("_NAME", "cjson")?;
    t.raw_set("_VERSION", "2.1.0")?;
    Ok(t)
}

/// `json_arg_init`: at most `count` arguments.
fn at_most(args: &MultiValue, count: usize, function: &str) -> LibResult<()> {
    if args.len() > count {
        return Err(Raise::argument(count + 1, function, "found too many arguments"));
    }
    Ok(())
}

fn present(args: &MultiValue, n: usize) -> bool {
    !matches!(args.get(n - 1), None | Some(Value::Nil))
}

/// `json_integer_option`: sets the setting from argument `n` if given (its
/// range error names argument #1, as lua-cjson's does), returns it.
fn set_integer(args: &MultiValue, n: usize, function: &str, setting: &mut i32, min: i32, max: i32) -> LibResult<Value> {
    if present(args, n) {
        let value = check_integer(args, n, function)? as i32;
        if value < min || value > max {
            return Err(Raise::argument(1, function, format!("expected integer between {min} and {max}")));
        }
        *setting = value;
    }
    Ok(Value::Integer(i64::from(*setting)))
}

fn integer_option(
    _: &Lua,
    args: &MultiValue,
    function: &str,
    setting: &mut i32,
    min: i32,
    max: i32,
) -> LibResult<MultiValue> {
    at_most(args, 1, function)?;
    Ok(MultiValue::from_iter([set_integer(args, 1, function, setting, min, max)?]))
}

/// `json_enum_option`: a boolean, or one of `options` by name; returns the
/// setting as a boolean when it is off (0) or on (1), else by name.
fn set_enum(
    lua: &Lua,
    args: &MultiValue,
    n: usize,
    function: &str,
    setting: &mut u8,
    options: &[&str],
) -> LibResult<Value> {
    match args.get(n - 1) {
        None | Some(Value::Nil) => {}
        Some(Value::Boolean(b)) => *setting = u8::from(*b),
        Some(_) => {
            let name = super::lua_lib::check_bytes(args, n, function)?;
            let Some(index) = options.iter().position(|o| o.as_bytes() == name.as_slice()) else {
                let mut detail = b"invalid option '".to_vec();
                detail.extend_from_slice(&name);
                detail.push(b'\'');
                return Err(Raise::argument(n, function, detail));
            };
            *setting = index as u8;
        }
    }
    Ok(match *setting {
        0 | 1 => Value::Boolean(*setting == 1),
        other => Value::String(lua.create_string(options[usize::from(other)])?),
    })
}

fn bool_option(lua: &Lua, args: &MultiValue, function: &str, setting: &mut bool) -> LibResult<MultiValue> {
    at_most(args, 1, function)?;
    let mut value = u8::from(*setting);
    let result = set_enum(lua, args, 1, function, &mut value, &["off", "on"])?;
    *setting = value == 1;
    Ok(MultiValue::from_iter([result]))
}

fn encode_invalid_numbers(lua: &Lua, cfg: &mut Config, args: &MultiValue) -> LibResult<MultiValue> {
    let function = "encode_invalid_numbers";
    at_most(args, 1, function)?;
    let result = set_enum(lua, args, 1, function, &mut cfg.encode_invalid_numbers, &["off", "on", "null"])?;
    Ok(MultiValue::from_iter([result]))
}

fn encode_sparse_array(lua: &Lua, cfg: &mut Config, args: &MultiValue) -> LibResult<MultiValue> {
    let function = "encode_sparse_array";
    at_most(args, 3, function)?;
    let mut convert = u8::from(cfg.sparse_convert);
    let convert_value = set_enum(lua, args, 1, function, &mut convert, &["off", "on"])?;
    cfg.sparse_convert = convert == 1;
    let ratio = set_integer(args, 2, function, &mut cfg.sparse_ratio, 0, i32::MAX)?;
    let safe = set_integer(args, 3, function, &mut cfg.sparse_safe, 0, i32::MAX)?;
    Ok(MultiValue::from_iter([convert_value, ratio, safe]))
}

fn encode(lua: &Lua, config: &Shared, args: MultiValue) -> LibResult<MultiValue> {
    if args.len() != 1 {
        return Err(Raise::argument(1, "encode", "expected 1 argument"));
    }
    let cfg = config.borrow().clone();
    let mut out = Vec::new();
    Encoder { cfg: &cfg, out: &mut out }.value(&args[0], 0)?;
    Ok(MultiValue::from_iter([Value::String(lua.create_string(&out)?)]))
}

struct Encoder<'a> {
    cfg: &'a Config,
    out: &'a mut Vec<u8>,
}

fn cannot_serialise(value: &Value, reason: &str) -> Raise {
    Raise::message(format!("Cannot serialise {}: {reason}", type_name(Some(value))))
}

impl Encoder<'_> {
    fn value(&mut self, value: &Value, depth: usize) -> LibResult<()> {
        match value {
            Value::String(s) => self.string(&s.as_bytes()),
            Value::Integer(n) => self.number(value, *n as f64)?,
            Value::Number(n) => self.number(value, *n)?,
            Value::Boolean(b) => self.out.extend_from_slice(if *b { b"true" } else { b"false" }),
            Value::Nil => self.out.extend_from_slice(b"null"),
            Value::LightUserData(p) if p.0.is_null() => self.out.extend_from_slice(b"null"),
            Value::Table(t) => self.table(t, depth + 1)?,
            other => return Err(cannot_serialise(other, "type not supported")),
        }
        Ok(())
    }

    fn string(&mut self, bytes: &[u8]) {
        self.out.reserve(bytes.len() + 2);
        self.out.push(b'"');
        for &b in bytes {
            match b {
                b'"' => self.out.extend_from_slice(b"\\\""),
                b'\\' => self.out.extend_from_slice(b"\\\\"),
                b'/' => self.out.extend_from_slice(b"\\/"),
                b'\x08' => self.out.extend_from_slice(b"\\b"),
                b'\t' => self.out.extend_from_slice(b"\\t"),
                b'\n' => self.out.extend_from_slice(b"\\n"),
                b'\x0c' => self.out.extend_from_slice(b"\\f"),
                b'\r' => self.out.extend_from_slice(b"\\r"),
                0..=0x1f | 0x7f => self.out.extend_from_slice(format!("\\u{b:04x}").as_bytes()),
                _ => self.out.push(b),
            }
        }
        self.out.push(b'"');
    }

    fn number(&mut self, value: &Value, n: f64) -> LibResult<()> {
        match self.cfg.encode_invalid_numbers {
            0 if !n.is_finite() => return Err(cannot_serialise(value, "must not be NaN or Inf")),
            1 if n.is_nan() => {
                self.out.extend_from_slice(b"nan");
                return Ok(());
            }
            2 if !n.is_finite() => {
                self.out.extend_from_slice(b"null");
                return Ok(());
            }
            _ => {}
        }
        self.out.extend_from_slice(format_g(n, self.cfg.number_precision.max(1) as usize).as_bytes());
        Ok(())
    }

    fn table(&mut self, table: &Table, depth: usize) -> LibResult<()> {
        // lua-cjson also stops where the Lua stack would (3 slots a level).
        if depth > self.cfg.encode_max_depth.max(0) as usize || 3 * depth + 1 > MAX_STACK_SLOTS {
            return Err(Raise::message(format!("Cannot serialise, excessive nesting ({depth})")));
        }
        match self.array_length(table)? {
            Some(length) if length > 0 => self.array(table, length, depth),
            _ => self.object(table, depth),
        }
    }

    /// lua-cjson's `lua_array_length`: Some(max index) when every key is an
    /// integer ≥ 1 and the array is not excessively sparse; None for an
    /// object (or an error when sparse arrays are not converted).
    fn array_length(&self, table: &Table) -> LibResult<Option<i64>> {
        let mut max: i32 = 0;
        let mut items: i64 = 0;
        for pair in table.pairs::<Value, Value>() {
            let (key, _) = pair?;
            let k = match key {
                Value::Integer(k) => k as f64,
                Value::Number(k) => k,
                _ => return Ok(None),
            };
            if k == 0.0 || k.floor() != k || k < 1.0 {
                return Ok(None);
            }
            if k > f64::from(max) {
                // C assigns the double to an int: x86's out-of-range value.
                max = if k <= f64::from(i32::MAX) { k as i32 } else { i32::MIN };
            }
            items += 1;
        }
        let cfg = self.cfg;
        let max = i64::from(max);
        if cfg.sparse_ratio > 0 && max > items * i64::from(cfg.sparse_ratio) && max > i64::from(cfg.sparse_safe) {
            if !cfg.sparse_convert {
                return Err(cannot_serialise(&Value::Table(table.clone()), "excessively sparse array"));
            }
            return Ok(None);
        }
        Ok(Some(max))
    }

    fn array(&mut self, table: &Table, length: i64, depth: usize) -> LibResult<()> {
        self.out.push(b'[');
        for i in 1..=length {
            if i > 1 {
                self.out.push(b',');
            }
            let item: Value = table.raw_get(i)?;
            self.value(&item, depth)?;
        }
        self.out.push(b']');
        Ok(())
    }

    fn object(&mut self, table: &Table, depth: usize) -> LibResult<()> {
        self.out.push(b'{');
        let mut first = true;
        for pair in table.pairs::<Value, Value>() {
            let (key, item) = pair?;
            if !first {
                self.out.push(b',');
            }
            first = false;
            match &key {
                Value::Integer(n) => self.number_key(&key, *n as f64)?,
                Value::Number(n) => self.number_key(&key, *n)?,
                Value::String(s) => {
                    self.string(&s.as_bytes());
                    self.out.push(b':');
                }
                other => return Err(cannot_serialise(other, "table key must be a number or string")),
            }
            self.value(&item, depth)?;
        }
        self.out.push(b'}');
        Ok(())
    }

    fn number_key(&mut self, key: &Value, n: f64) -> LibResult<()> {
        self.out.push(b'"');
        self.number(key, n)?;
        self.out.extend_from_slice(b"\":");
        Ok(())
    }
}

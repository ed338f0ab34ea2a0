//! Redis's conversion rules between replies and Lua values.
//!
//! Reply → Lua (what `redis.call` returns): integer → number, bulk → string,
//! null → false (RESP2) or nil (RESP3), array → table (nils as false),
//! status → `{ok=...}`, error → `{err=...}`; with `redis.setresp(3)`: map →
//! `{map={...}}`, set → `{set={k=true}}`, double → `{double=n}`, boolean →
//! boolean, big number → `{big_number=s}`, verbatim → `{verbatim_string={format=, string=}}`.
//!
//! Lua → reply (what the script returns): string → bulk, number → integer
//! (truncated), boolean → 1 / null (RESP2 script) or boolean, table with
//! `err`/`ok`/`double`/`big_number`/`verbatim_string`/`map`/`set` → that type,
//! other tables → array up to the first nil, anything else → null.

use cairn_protocol::ReplyWriter;
use mlua::{Lua, Table, Value};

/// Deepest reply nesting converted (deeper values are cut as errors).
const MAX_DEPTH: usize = 512;

/// Parses one reply from `bytes` (a complete reply the dispatcher wrote) into a Lua value.
pub fn reply_to_lua(lua: &Lua, bytes: &[u8]) -> mlua::Result<Value> {
    let mut pos = 0;
    parse(lua, bytes, &mut pos, 0)
}

fn line<'b>(bytes: &'b [u8], pos: &mut usize) -> &'b [u8] {
    let start = *pos;
    let end = bytes[start..].windows(2).position(|w| w == b"\r\n").map_or(bytes.len(), |i| start + i);
    *pos = (end + 2).min(bytes.len());
    &bytes[start..end]
}

fn number(text: &[u8]) -> i64 {
    cairn_engine::number::parse_i64(text).unwrap_or(0)
}

fn parse(lua: &Lua, bytes: &[u8], pos: &mut usize, depth: usize) -> mlua::Result<Value> {
    if *pos >= bytes.len() || depth > MAX_DEPTH {
        return Ok(Value::Boolean(false));
    }
    let kind = bytes[*pos];
    *pos += 1;
    let head = line(bytes, pos);
    match kind {
        b':' => Ok(Value::Number(number(head) as f64)),
        b'+' => single(lua, "ok", Value::String(lua.create_string(head)?)),
        b'-' | b'!' => {
            let text = if kind == b'!' { bulk_body(bytes, pos, number(head)) } else { head };
            single(lua, "err", Value::String(lua.create_string(text)?))
        }
        b'$' => match number(head) {
            n if n < 0 => Ok(Value::Boolean(false)),
            n => Ok(Value::String(lua.create_string(bulk_body(bytes, pos, n))?)),
        },
        b'*' | b'~' | b'>' => {
            let n = number(head);
            if n < 0 {
                return Ok(Value::Boolean(false));
            }
            let items = aggregate(lua, bytes, pos, n as usize, depth)?;
            if kind == b'~' {
                let set = lua.create_table()?;
                for item in items.sequence_values::<Value>() {
                    set.raw_set(item?, true)?;
                }
                return single(lua, "set", Value::Table(set));
            }
            Ok(Value::Table(items))
        }
        b'%' | b'|' => {
            let map = lua.create_table()?;
            for _ in 0..number(head).max(0) {
                let key = parse(lua, bytes, pos, depth + 1)?;
                let value = parse(lua, bytes, pos, depth + 1)?;
                if !key.is_nil() {
                    map.raw_set(key, value)?;
                }
            }
            single(lua, "map", Value::Table(map))
        }
        b'_' => Ok(Value::Nil),
        b'#' => Ok(Value::Boolean(head == b"t")),
        b',' => {
            let n = std::str::from_utf8(head).ok().and_then(|t| t.parse::<f64>().ok()).unwrap_or(0.0);
            single(lua, "double", Value::Number(n))
        }
        b'(' => single(lua, "big_number", Value::String(lua.create_string(head)?)),
        b'=' => {
            let body = bulk_body(bytes, pos, number(head));
            let (format, text) = if body.len() >= 4 { (&body[..3], &body[4..]) } else { (&b"txt"[..], body) };
            let verbatim = lua.create_table()?;
            verbatim.raw_set("format", lua.create_string(format)?)?;
            verbatim.raw_set("string", lua.create_string(text)?)?;
            single(lua, "verbatim_string", Value::Table(verbatim))
        }
        _ => Ok(Value::Boolean(false)),
    }
}

fn bulk_body<'b>(bytes: &'b [u8], pos: &mut usize, len: i64) -> &'b [u8] {
    let start = (*pos).min(bytes.len());
    let end = (start + len.max(0) as usize).min(bytes.len());
    *pos = (end + 2).min(bytes.len());
    &bytes[start..end]
}

fn aggregate(lua: &Lua, bytes: &[u8], pos: &mut usize, n: usize, depth: usize) -> mlua::Result<Table> {
    let table = lua.create_table_with_capacity(n.min(1 << 16), 0)?;
    for i in 1..=n {
        let item = parse(lua, bytes, pos, depth + 1)?;
        table.raw_set(i, item)?;
    }
    Ok(table)
}

fn single(lua: &Lua, field: &str, value: Value) -> mlua::Result<Value> {
    let table = lua.create_table_with_capacity(0, 1)?;
    table.raw_set(field, value)?;
    Ok(Value::Table(table))
}

/// Writes a script's return value as a reply. `resp3_script`: the script
/// called `redis.setresp(3)` (booleans then stay booleans).
pub fn lua_to_reply(value: &Value, out: &mut ReplyWriter<'_>, resp3_script: bool) {
    write_value(value, out, resp3_script, 0);
}

fn write_value(value: &Value, out: &mut ReplyWriter<'_>, resp3: bool, depth: usize) {
    if depth > MAX_DEPTH {
        out.error("ERR reached lua stack limit");
        return;
    }
    match value {
        Value::String(s) => out.bulk(&s.as_bytes()),
        Value::Boolean(b) if resp3 => out.boolean(*b),
        Value::Boolean(true) => out.int(1),
        Value::Number(n) => out.int(*n as i64),
        Value::Integer(n) => out.int(*n),
        Value::Table(t) => write_table(t, out, resp3, depth),
        _ => out.null_bulk(),
    }
}

fn field(t: &Table, name: &str) -> Value {
    t.raw_get::<Value>(name).unwrap_or(Value::Nil)
}

fn write_table(t: &Table, out: &mut ReplyWriter<'_>, resp3: bool, depth: usize) {
    if let Value::String(err) = field(t, "err") {
        out.error(&error_text(&err.to_string_lossy()));
        return;
    }
    if let Value::String(ok) = field(t, "ok") {
        out.simple(&ok.to_string_lossy().replace(['\r', '\n'], " "));
        return;
    }
    if let Value::Number(d) = field(t, "double") {
        out.double(d);
        return;
    }
    if let Value::String(n) = field(t, "big_number") {
        out.big_number(&n.to_string_lossy().replace(['\r', '\n'], " "));
        return;
    }
    if let Value::Table(v) = field(t, "verbatim_string") {
        if let (Value::String(format), Value::String(text)) = (field(&v, "format"), field(&v, "string")) {
            out.verbatim(&format.to_string_lossy(), &text.as_bytes());
            return;
        }
    }
    if let Value::Table(map) = field(t, "map") {
        let pairs: Vec<(Value, Value)> = map.pairs::<Value, Value>().filter_map(Result::ok).collect();
        out.map(pairs.len());
        for (k, v) in &pairs {
            write_value(k, out, resp3, depth + 1);
            write_value(v, out, resp3, depth + 1);
        }
        return;
    }
    if let Value::Table(set) = field(t, "set") {
        let members: Vec<Value> = set.pairs::<Value, Value>().filter_map(Result::ok).map(|(k, _)| k).collect();
        out.set(members.len());
        for m in &members {
            write_value(m, out, resp3, depth + 1);
        }
        return;
    }
    let mut items = Vec::new();
    for i in 1.. {
        match t.raw_get::<Value>(i) {
            Ok(Value::Nil) | Err(_) => break,
            Ok(v) => items.push(v),
        }
    }
    out.array(items.len());
    for item in &items {
        write_value(item, out, resp3, depth + 1);
    }
}

/// An `err` field as the reply's text: Redis keeps the code, or adds `ERR`
/// when the text is a bare message without one... it writes it verbatim
/// (`-` stripped), so `{err='My Error'}` replies `-My Error`.
fn error_text(err: &str) -> String {
    let err = err.strip_prefix('-').unwrap_or(err);
    err.trim_end_matches(['\r', '\n']).to_string()
}

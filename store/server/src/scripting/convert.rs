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

use std::ffi::CStr;
use std::os::raw::c_int;

use cairn_protocol::ReplyWriter;
use mlua::{ffi, Lua, Table, Value};

/// Deepest reply nesting converted (deeper values are cut as errors).
const MAX_DEPTH: usize = 512;

/// Parses one reply from `bytes` (a complete reply the dispatcher wrote) into a Lua value.
///
/// Built with Lua's C API in one protected call: through mlua's typed API
/// each table, string and field costs a protected call of its own (and, in
/// Lua 5.1, a C closure allocated for it), more than the whole conversion.
pub fn reply_to_lua(lua: &Lua, bytes: &[u8]) -> mlua::Result<Value> {
    // SAFETY: `push` pushes exactly one value (the one exec_raw returns),
    // checks the stack before each nesting level, and reads `bytes` only
    // within bounds; errors it raises (out of memory, a NaN map key) are
    // caught by exec_raw's protected call.
    unsafe {
        lua.exec_raw::<Value>((), |state| {
            let mut pos = 0;
            push(state, bytes, &mut pos, 0);
        })
    }
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

/// Pushes the reply at `pos` as one Lua value.
unsafe fn push(state: *mut ffi::lua_State, bytes: &[u8], pos: &mut usize, depth: usize) {
    // SAFETY: on the Lua state exec_raw gives `reply_to_lua`, in its
    // protected call; see there.
    unsafe {
        if *pos >= bytes.len() || depth > MAX_DEPTH {
            ffi::lua_pushboolean(state, 0);
            return;
        }
        ffi::luaL_checkstack(state, 4, c"reply nested too deep".as_ptr());
        let kind = bytes[*pos];
        *pos += 1;
        let head = line(bytes, pos);
        match kind {
            b':' => ffi::lua_pushnumber(state, number(head) as f64),
            b'+' => single(state, c"ok", |state| push_bytes(state, head)),
            b'-' | b'!' => {
                let text = if kind == b'!' { bulk_body(bytes, pos, number(head)) } else { head };
                single(state, c"err", |state| push_bytes(state, text));
            }
            b'$' => match number(head) {
                n if n < 0 => ffi::lua_pushboolean(state, 0),
                n => push_bytes(state, bulk_body(bytes, pos, n)),
            },
            b'*' | b'>' => match number(head) {
                n if n < 0 => ffi::lua_pushboolean(state, 0),
                n => push_array(state, bytes, pos, n as usize, depth),
            },
            b'~' => match number(head) {
                n if n < 0 => ffi::lua_pushboolean(state, 0),
                n => single(state, c"set", |state| push_set(state, bytes, pos, n as usize, depth)),
            },
            b'%' => single(state, c"map", |state| push_map(state, bytes, pos, number(head).max(0) as usize, depth)),
            b'|' => {
                // An attribute is not shown to scripts (as Redis 7.0): read
                // past it, then the reply it annotates is the value.
                push_map(state, bytes, pos, number(head).max(0) as usize, depth);
                ffi::lua_pop(state, 1);
                push(state, bytes, pos, depth + 1);
            }
            b'_' => ffi::lua_pushnil(state),
            b'#' => ffi::lua_pushboolean(state, i32::from(head == b"t")),
            b',' => {
                let n = std::str::from_utf8(head).ok().and_then(|t| t.parse::<f64>().ok()).unwrap_or(0.0);
                single(state, c"double", |state| ffi::lua_pushnumber(state, n));
            }
            b'(' => single(state, c"big_number", |state| push_bytes(state, head)),
            b'=' => {
                let body = bulk_body(bytes, pos, number(head));
                let (format, text) = if body.len() >= 4 { (&body[..3], &body[4..]) } else { (&b"txt"[..], body) };
                single(state, c"verbatim_string", |state| {
                    ffi::lua_createtable(state, 0, 2);
                    push_bytes(state, format);
                    ffi::lua_setfield(state, -2, c"format".as_ptr());
                    push_bytes(state, text);
                    ffi::lua_setfield(state, -2, c"string".as_ptr());
                });
            }
            _ => ffi::lua_pushboolean(state, 0),
        }
    }
}

/// Pushes `{items[1], items[2], ...}` as Lua strings, in one protected call
/// with its caller (mlua's typed calls would each be one).
///
/// # Safety
/// `state` must be the state of a running exec_raw with a free stack slot
/// beyond the ones its caller uses (a C function has 20).
pub(super) unsafe fn push_strings(state: *mut ffi::lua_State, items: &[Vec<u8>]) {
    // SAFETY: as the function's contract says; the table stays pushed,
    // each string is pushed and popped into it.
    unsafe {
        ffi::lua_createtable(state, i32::try_from(items.len()).unwrap_or(i32::MAX), 0);
        for (i, item) in items.iter().enumerate() {
            push_bytes(state, item);
            ffi::lua_rawseti(state, -2, (i + 1) as ffi::lua_Integer);
        }
    }
}

unsafe fn push_bytes(state: *mut ffi::lua_State, bytes: &[u8]) {
    // SAFETY: on the Lua state exec_raw gives `reply_to_lua`, in its
    // protected call; see there.
    unsafe {
        ffi::lua_pushlstring(state, bytes.as_ptr().cast(), bytes.len());
    }
}

/// `{field = value}`, the value pushed by `value`.
unsafe fn single(state: *mut ffi::lua_State, field: &CStr, value: impl FnOnce(*mut ffi::lua_State)) {
    // SAFETY: on the Lua state exec_raw gives `reply_to_lua`, in its
    // protected call; see there.
    unsafe {
        ffi::lua_createtable(state, 0, 1);
        value(state);
        ffi::lua_setfield(state, -2, field.as_ptr());
    }
}

/// An array of `n` replies (a null inside stays a hole, as Lua sees a nil).
unsafe fn push_array(state: *mut ffi::lua_State, bytes: &[u8], pos: &mut usize, n: usize, depth: usize) {
    // SAFETY: on the Lua state exec_raw gives `reply_to_lua`, in its
    // protected call; see there.
    unsafe {
        ffi::lua_createtable(state, n.min(1 << 16) as c_int, 0);
        for i in 1..=n {
            push(state, bytes, pos, depth + 1);
            ffi::lua_rawseti(state, -2, i as ffi::lua_Integer);
        }
    }
}

/// `{member = true, ...}` of `n` replies (nulls skipped).
unsafe fn push_set(state: *mut ffi::lua_State, bytes: &[u8], pos: &mut usize, n: usize, depth: usize) {
    // SAFETY: on the Lua state exec_raw gives `reply_to_lua`, in its
    // protected call; see there.
    unsafe {
        ffi::lua_createtable(state, 0, 0);
        for _ in 0..n {
            push(state, bytes, pos, depth + 1);
            if ffi::lua_isnil(state, -1) != 0 {
                ffi::lua_pop(state, 1);
            } else {
                ffi::lua_pushboolean(state, 1);
                ffi::lua_rawset(state, -3);
            }
        }
    }
}

/// `{key = value, ...}` of `n` reply pairs (pairs with a null key skipped).
unsafe fn push_map(state: *mut ffi::lua_State, bytes: &[u8], pos: &mut usize, n: usize, depth: usize) {
    // SAFETY: on the Lua state exec_raw gives `reply_to_lua`, in its
    // protected call; see there.
    unsafe {
        ffi::lua_createtable(state, 0, 0);
        for _ in 0..n {
            push(state, bytes, pos, depth + 1);
            push(state, bytes, pos, depth + 1);
            if ffi::lua_isnil(state, -2) != 0 {
                ffi::lua_pop(state, 2);
            } else {
                ffi::lua_rawset(state, -3);
            }
        }
    }
}

fn bulk_body<'b>(bytes: &'b [u8], pos: &mut usize, len: i64) -> &'b [u8] {
    let start = (*pos).min(bytes.len());
    let end = (start + len.max(0) as usize).min(bytes.len());
    *pos = (end + 2).min(bytes.len());
    &bytes[start..end]
}

/// The field names a returned table is read by, created once per
/// interpreter: a Rust `&str` key would be a new Lua string (and a
/// protected call) at each lookup.
#[derive(Debug)]
pub struct FieldNames {
    err: mlua::String,
    ok: mlua::String,
    double: mlua::String,
    big_number: mlua::String,
    verbatim_string: mlua::String,
    format: mlua::String,
    string: mlua::String,
    map: mlua::String,
    set: mlua::String,
}

impl FieldNames {
    pub fn new(lua: &Lua) -> mlua::Result<FieldNames> {
        Ok(FieldNames {
            err: lua.create_string("err")?,
            ok: lua.create_string("ok")?,
            double: lua.create_string("double")?,
            big_number: lua.create_string("big_number")?,
            verbatim_string: lua.create_string("verbatim_string")?,
            format: lua.create_string("format")?,
            string: lua.create_string("string")?,
            map: lua.create_string("map")?,
            set: lua.create_string("set")?,
        })
    }
}

/// Writes a script's return value as a reply. `resp3_script`: the script
/// called `redis.setresp(3)` (booleans then stay booleans).
pub fn lua_to_reply(value: &Value, out: &mut ReplyWriter<'_>, resp3_script: bool, names: &FieldNames) {
    Writer { out, resp3: resp3_script, names }.value(value, 0);
}

/// Where a script's return value is written, and how.
struct Writer<'w, 'o> {
    out: &'w mut ReplyWriter<'o>,
    resp3: bool,
    names: &'w FieldNames,
}

impl Writer<'_, '_> {
    fn value(&mut self, value: &Value, depth: usize) {
        if depth > MAX_DEPTH {
            self.out.error("ERR reached lua stack limit");
            return;
        }
        match value {
            Value::String(s) => self.out.bulk(&s.as_bytes()),
            Value::Boolean(b) if self.resp3 => self.out.boolean(*b),
            Value::Boolean(true) => self.out.int(1),
            Value::Number(n) => self.out.int(*n as i64),
            Value::Integer(n) => self.out.int(*n),
            Value::Table(t) => self.table(t, depth),
            _ => self.out.null_bulk(),
        }
    }

    fn table(&mut self, t: &Table, depth: usize) {
        let names = self.names;
        if let Value::String(err) = field(t, &names.err) {
            let text = error_text(&err.to_string_lossy());
            self.out.error(&text);
            if counted_where_it_arose(t) {
                self.out.note_error(cairn_protocol::ErrorCode::of(&text), true);
            }
            return;
        }
        if let Value::String(ok) = field(t, &names.ok) {
            self.out.simple(&ok.to_string_lossy().replace(['\r', '\n'], " "));
            return;
        }
        if let Value::Number(d) = field(t, &names.double) {
            self.out.double(d);
            return;
        }
        if let Value::String(n) = field(t, &names.big_number) {
            self.out.big_number(&n.to_string_lossy().replace(['\r', '\n'], " "));
            return;
        }
        if let Value::Table(v) = field(t, &names.verbatim_string) {
            if let (Value::String(format), Value::String(text)) = (field(&v, &names.format), field(&v, &names.string)) {
                self.out.verbatim(&format.to_string_lossy(), &text.as_bytes());
                return;
            }
        }
        if let Value::Table(map) = field(t, &names.map) {
            let pairs: Vec<(Value, Value)> = map.pairs::<Value, Value>().filter_map(Result::ok).collect();
            self.out.map(pairs.len());
            for (k, v) in &pairs {
                self.value(k, depth + 1);
                self.value(v, depth + 1);
            }
            return;
        }
        if let Value::Table(set) = field(t, &names.set) {
            let members: Vec<Value> = set.pairs::<Value, Value>().filter_map(Result::ok).map(|(k, _)| k).collect();
            self.out.set(members.len());
            for m in &members {
                self.value(m, depth + 1);
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
        self.out.array(items.len());
        for item in &items {
            self.value(item, depth + 1);
        }
    }
}

fn field(t: &Table, name: &mlua::String) -> Value {
    t.raw_get::<Value>(name).unwrap_or(Value::Nil)
}

/// An `err` field as the reply's text: Redis keeps the code, or adds `ERR`
/// when the text is a bare message without one... it writes it verbatim
/// (`-` stripped), so `{err='My Error'}` replies `-My Error`.
fn error_text(err: &str) -> String {
    let err = err.strip_prefix('-').unwrap_or(err);
    err.trim_end_matches(['\r', '\n']).to_string()
}

/// Whether an error table's error was counted where it arose (an error a
/// command called by the script replied, see `callbacks::COUNTED`).
pub(super) fn counted_where_it_arose(t: &Table) -> bool {
    matches!(t.raw_get::<Value>(super::callbacks::COUNTED), Ok(Value::Boolean(true)))
}

//! What the C libraries Redis embeds (cjson, cmsgpack, struct) share when
//! they are written in Rust: errors raised as Lua strings, as `luaL_error`
//! raises them (`user_script:1: message`, a plain string to `pcall`), and
//! argument checks with the auxiliary library's messages
//! (`bad argument #1 to 'pack' (number expected, got nil)`).
//!
//! A Rust function cannot raise a string (mlua raises its errors as
//! userdata), so each library function is a Rust function that returns
//! `true, results...` or `false, message`, behind a small C function that
//! returns the results or raises the message as `luaL_error` does (`nil,
//! message`: without the position, as the Lua core's own errors; `false,
//! detail, n`: `luaL_argerror`'s; `n, table`: n results, in a table).

use mlua::{ffi, Function, Lua, MultiValue, Value};

use super::lua_number;

/// Lua's C stack limit (LUAI_MAXCSTACK): the most values a C function may
/// push, which bounds the libraries' nesting and result counts.
pub const MAX_STACK_SLOTS: usize = 8000;

/// Above this many results, a function passes them in a table (mlua's
/// callbacks cannot return as many values as a C function can push).
const MANY_RESULTS: usize = 64;

/// An error a library function raises.
#[derive(Debug, thiserror::Error)]
pub enum Raise {
    /// A message raised as a Lua string, with the caller's position.
    #[error("{}", String::from_utf8_lossy(.0))]
    Message(Vec<u8>),
    /// `luaL_argerror`'s `bad argument #n to 'function' (detail)`.
    #[error("bad argument #{n} to '{function}' ({})", String::from_utf8_lossy(.detail))]
    Argument { n: usize, function: String, detail: Vec<u8> },
    /// A message raised without a position, as the Lua core raises its
    /// own errors in a C function (`table index is nil`).
    #[error("{}", String::from_utf8_lossy(.0))]
    Bare(Vec<u8>),
    /// An error of the interpreter (memory), raised as it is.
    #[error(transparent)]
    Lua(#[from] mlua::Error),
}

impl Raise {
    pub fn message(text: impl Into<Vec<u8>>) -> Raise {
        Raise::Message(text.into())
    }

    /// `luaL_argerror`: `bad argument #n to 'function' (detail)`.
    /// (Raised by `luaL_argerror` itself, which names the function as the
    /// caller called it: `'?'` through `pcall`; `function` is for Rust.)
    pub fn argument(n: usize, function: &str, detail: impl AsRef<[u8]>) -> Raise {
        Raise::Argument { n, function: function.to_string(), detail: detail.as_ref().to_vec() }
    }

    /// `luaL_checkstack`'s error: `stack overflow (detail)`.
    pub fn stack_overflow(detail: &str) -> Raise {
        Raise::message(format!("stack overflow ({detail})"))
    }
}

pub type LibResult<T> = Result<T, Raise>;

/// Makes library functions from Rust closures (see the module comment).
pub struct Maker;

/// The C function in front of a library function (its upvalue 1): calls
/// it, then returns its results after the leading `true`, or raises its
/// message after the caller's position (`luaL_where(L, 1)`), as
/// `luaL_error` does: `user_script:1: message`, a bare message to `pcall`.
unsafe extern "C-unwind" fn raise_or_return(state: *mut ffi::lua_State) -> std::os::raw::c_int {
    // SAFETY: called by Lua as a C closure with one upvalue, the Rust
    // function; the stack operations stay within what Lua grants a call.
    unsafe {
        let nargs = ffi::lua_gettop(state);
        ffi::lua_pushvalue(state, ffi::lua_upvalueindex(1));
        ffi::lua_insert(state, 1);
        ffi::lua_call(state, nargs, ffi::LUA_MULTRET);
        if ffi::lua_type(state, 1) == ffi::LUA_TNUMBER {
            // Many results, in the table after their count.
            let count = ffi::lua_tointeger(state, 1) as std::os::raw::c_int;
            ffi::lua_settop(state, 2);
            ffi::lua_replace(state, 1);
            if ffi::lua_checkstack(state, count) == 0 {
                ffi::lua_pushstring(state, c"stack overflow".as_ptr());
                ffi::lua_error(state)
            }
            for i in 1..=i64::from(count) {
                ffi::lua_rawgeti(state, 1, i);
            }
            return count;
        }
        if ffi::lua_toboolean(state, 1) != 0 {
            ffi::lua_remove(state, 1);
            return ffi::lua_gettop(state);
        }
        if ffi::lua_type(state, 3) == ffi::LUA_TNUMBER {
            let n = ffi::lua_tointeger(state, 3) as std::os::raw::c_int;
            let detail = ffi::lua_tolstring(state, 2, std::ptr::null_mut());
            return ffi::luaL_argerror(state, n, detail);
        }
        if ffi::lua_isnil(state, 1) != 0 {
            ffi::lua_pushvalue(state, 2);
            ffi::lua_error(state)
        }
        ffi::luaL_where(state, 1);
        ffi::lua_pushvalue(state, 2);
        ffi::lua_concat(state, 2);
        ffi::lua_error(state)
    }
}

impl Maker {
    pub fn new(_: &Lua) -> mlua::Result<Maker> {
        Ok(Maker)
    }

    /// A Lua function running `f`: its results, or its [`Raise`] raised.
    pub fn function<F>(&self, lua: &Lua, f: F) -> mlua::Result<Function>
    where
        F: Fn(&Lua, MultiValue) -> LibResult<MultiValue> + 'static,
    {
        let raw = lua.create_function(move |lua, args: MultiValue| match f(lua, args) {
            Ok(values) if values.len() > MANY_RESULTS => {
                let count = values.len() as i64;
                let table = lua.create_sequence_from(values)?;
                Ok(MultiValue::from_iter([Value::Integer(count), Value::Table(table)]))
            }
            Ok(mut values) => {
                values.push_front(Value::Boolean(true));
                Ok(values)
            }
            Err(Raise::Message(text)) => {
                Ok(MultiValue::from_iter([Value::Boolean(false), Value::String(lua.create_string(text)?)]))
            }
            Err(Raise::Argument { n, detail, .. }) => Ok(MultiValue::from_iter([
                Value::Boolean(false),
                Value::String(lua.create_string(detail)?),
                Value::Integer(n as i64),
            ])),
            Err(Raise::Bare(text)) => Ok(MultiValue::from_iter([Value::Nil, Value::String(lua.create_string(text)?)])),
            Err(Raise::Lua(e)) => Err(e),
        })?;
        // SAFETY: the closure pops the one value exec_raw pushed (`raw`, as
        // the upvalue) and pushes the C closure, which exec_raw returns.
        unsafe {
            lua.exec_raw::<Function>(raw, |state| {
                ffi::lua_pushcclosure(state, raise_or_return, 1);
            })
        }
    }
}

/// Lua's name of a value's type (`lua_typename`), `no value` when absent.
pub fn type_name(value: Option<&Value>) -> &'static str {
    match value {
        None => "no value",
        Some(Value::Nil) => "nil",
        Some(Value::Boolean(_)) => "boolean",
        Some(Value::LightUserData(_)) | Some(Value::UserData(_)) => "userdata",
        Some(Value::Integer(_)) | Some(Value::Number(_)) => "number",
        Some(Value::String(_)) => "string",
        Some(Value::Table(_)) => "table",
        Some(Value::Function(_)) => "function",
        Some(Value::Thread(_)) => "thread",
        Some(_) => "userdata",
    }
}

/// A Lua value as a number, as `lua_tonumber` converts (numeric strings too).
pub fn to_number(value: &Value) -> Option<f64> {
    match value {
        Value::Integer(n) => Some(*n as f64),
        Value::Number(n) => Some(*n),
        Value::String(s) => {
            let bytes = s.as_bytes();
            let text = bytes.trim_ascii();
            match lua_number::strtod(text) {
                Some((n, used)) if used == text.len() => Some(n),
                _ => None,
            }
        }
        _ => None,
    }
}

/// `luaL_checknumber` of argument `n` (1-based) of `function`.
pub fn check_number(args: &MultiValue, n: usize, function: &str) -> LibResult<f64> {
    let value = args.get(n - 1);
    value.and_then(to_number).ok_or_else(|| type_error(n, function, "number", value))
}

/// `luaL_checkinteger`: the number truncated toward zero.
pub fn check_integer(args: &MultiValue, n: usize, function: &str) -> LibResult<i64> {
    Ok(to_integer(check_number(args, n, function)?))
}

/// `luaL_optinteger`: `default` when the argument is absent or nil.
pub fn opt_integer(args: &MultiValue, n: usize, function: &str, default: i64) -> LibResult<i64> {
    match args.get(n - 1) {
        None | Some(Value::Nil) => Ok(default),
        Some(_) => check_integer(args, n, function),
    }
}

/// `lua_Number` → `lua_Integer` as x86-64 converts (truncation; out of
/// range gives the "integer indefinite" value).
pub fn to_integer(n: f64) -> i64 {
    if !(-9.223_372_036_854_776e18..9.223_372_036_854_776e18).contains(&n) {
        i64::MIN
    } else {
        n as i64
    }
}

/// `luaL_checklstring`: a string, or a number as `%.14g`.
pub fn check_bytes(args: &MultiValue, n: usize, function: &str) -> LibResult<Vec<u8>> {
    let value = args.get(n - 1);
    match value {
        Some(Value::String(s)) => Ok(s.as_bytes().to_vec()),
        Some(Value::Integer(i)) => Ok(lua_number::format_g(*i as f64, 14).into_bytes()),
        Some(Value::Number(x)) => Ok(lua_number::format_g(*x, 14).into_bytes()),
        _ => Err(type_error(n, function, "string", value)),
    }
}

fn type_error(n: usize, function: &str, expected: &str, got: Option<&Value>) -> Raise {
    Raise::argument(n, function, format!("{expected} expected, got {}", type_name(got)))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lua_with(f: impl Fn(&Lua, MultiValue) -> LibResult<MultiValue> + 'static) -> Lua {
        let lua = Lua::new();
        let maker = Maker::new(&lua).expect("maker");
        let function = maker.function(&lua, f).expect("function");
        lua.globals().set("f", function).expect("set");
        lua
    }

    #[test]
    fn raises_strings_with_the_callers_position() {
        let lua = lua_with(|_, args| match args.front() {
            Some(Value::Boolean(true)) => Err(Raise::argument(1, "f", "boom")),
            _ => Ok(args),
        });
        let text: String = lua.load("local ok, e = pcall(f, true) return type(e) .. ':' .. e").eval().expect("ran");
        assert_eq!(text, "string:bad argument #1 to '?' (boom)");
        let err = lua.load("f(true)").set_name("@user_script").exec().expect_err("raises");
        assert!(err.to_string().contains("user_script:1: bad argument #1 to 'f' (boom)"), "{err}");
        let n: i64 = lua.load("return select('#', f(1, 2, nil))").eval().expect("ran");
        assert_eq!(n, 3);
    }

    #[test]
    fn numbers_convert_as_lua_does() {
        let lua = Lua::new();
        assert_eq!(to_number(&Value::String(lua.create_string(" 0x10 ").expect("s"))), Some(16.0));
        assert_eq!(to_number(&Value::String(lua.create_string("1e2x").expect("s"))), None);
        assert_eq!(to_integer(-3.7), -3);
        assert_eq!(to_integer(1e300), i64::MIN);
    }
}

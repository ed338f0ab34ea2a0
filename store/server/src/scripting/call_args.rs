//! `redis.call` with thousands of arguments (Redis takes as many as Lua can
//! pass, e.g. `redis.call('lpush', k, unpack(t))` with 7,999 values).
//!
//! An mlua callback holds each string or table argument as a reference on
//! mlua's reference thread, whose stack Lua 5.1 caps at 8,000 slots, so a
//! call with ~8,000 arguments fails with "out of Lua stack". A C function
//! in front of the callback ([`packing`]) passes many arguments as one
//! table instead, behind a marker, and [`unpacked`] reads them back one at
//! a time.

use std::os::raw::c_int;

use mlua::{ffi, Function, LightUserData, Lua, MultiValue, Table, Value};

/// Above this many arguments, they travel in a table.
const PACK_ABOVE: c_int = 64;

/// The marker's address: the first argument of a packed call.
static MARKER: u8 = 0;

fn marker() -> *mut std::ffi::c_void {
    std::ptr::addr_of!(MARKER) as *mut std::ffi::c_void
}

unsafe extern "C-unwind" fn pack_then_call(state: *mut ffi::lua_State) -> c_int {
    // SAFETY: called by Lua as a C closure whose upvalue 1 is the callback.
    // A C function may push LUA_MINSTACK (20) values without checking; this
    // one pushes at most 2 above its arguments.
    unsafe {
        let nargs = ffi::lua_gettop(state);
        if nargs > PACK_ABOVE {
            ffi::lua_createtable(state, nargs, 0);
            for i in 1..=nargs {
                ffi::lua_pushvalue(state, i);
                ffi::lua_rawseti(state, -2, i as _);
            }
            ffi::lua_replace(state, 1);
            ffi::lua_settop(state, 1);
            ffi::lua_pushinteger(state, nargs as _);
            ffi::lua_pushlightuserdata(state, marker());
            ffi::lua_insert(state, 1);
        }
        ffi::lua_pushvalue(state, ffi::lua_upvalueindex(1));
        ffi::lua_insert(state, 1);
        ffi::lua_call(state, ffi::lua_gettop(state) - 1, ffi::LUA_MULTRET);
        ffi::lua_gettop(state)
    }
}

/// `callback` behind the C function that packs many arguments.
pub fn packing(lua: &Lua, callback: Function) -> mlua::Result<Function> {
    // SAFETY: the closure pops the value exec_raw pushed (`callback`, as the
    // upvalue) and pushes the C closure, which exec_raw returns.
    unsafe {
        lua.exec_raw::<Function>(callback, |state| {
            ffi::lua_pushcclosure(state, pack_then_call, 1);
        })
    }
}

/// The arguments as the script passed them, each through `convert`; a
/// packed call's are read from its table one at a time.
pub fn unpacked<T>(
    args: MultiValue,
    mut convert: impl FnMut(Value) -> Result<T, &'static str>,
) -> Result<Vec<T>, &'static str> {
    let packed = matches!(args.front(), Some(Value::LightUserData(LightUserData(p))) if *p == marker());
    if !packed {
        return args.into_iter().map(convert).collect();
    }
    let (Some(Value::Table(table)), Some(Value::Integer(count))) = (args.get(1), args.get(2)) else {
        return Err(NOT_STRINGS);
    };
    let table: &Table = table;
    let mut out = Vec::with_capacity(usize::try_from(*count).unwrap_or(0));
    for i in 1..=*count {
        let value: Value = table.raw_get(i).map_err(|_| NOT_STRINGS)?;
        out.push(convert(value)?);
    }
    Ok(out)
}

const NOT_STRINGS: &str = "ERR Lua redis lib command arguments must be strings or integers";

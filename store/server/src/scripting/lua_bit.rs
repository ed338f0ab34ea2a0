//! The `bit` library Redis's Lua has (Lua BitOp 1.0): 32-bit operations on
//! numbers, results as signed 32-bit integers (`bit.tobit`, `band`, `bor`,
//! `bxor`, `bnot`, `lshift`, `rshift`, `arshift`, `rol`, `ror`, `bswap`,
//! `tohex`).

use mlua::{Lua, MultiValue, Table, Value};

/// A number normalized as BitOp's `tobit`: modulo 2^32, as a signed int.
fn tobit(value: &Value) -> mlua::Result<i32> {
    let n = match value {
        Value::Integer(n) => *n as f64,
        Value::Number(n) => *n,
        Value::String(s) => s.to_str()?.trim().parse::<f64>().map_err(|_| bad_argument())?,
        _ => return Err(bad_argument()),
    };
    // BitOp adds 2^52 + 2^51 and keeps the low word: round half to even, modulo 2^32.
    let rounded = n.round_ties_even();
    Ok(rounded.rem_euclid(4_294_967_296.0) as u32 as i32)
}

fn bad_argument() -> mlua::Error {
    mlua::Error::runtime("bad argument (number expected)")
}

fn arg(args: &MultiValue, i: usize) -> mlua::Result<i32> {
    tobit(args.get(i).unwrap_or(&Value::Nil))
}

fn fold(args: MultiValue, op: fn(i32, i32) -> i32) -> mlua::Result<i32> {
    let mut acc = arg(&args, 0)?;
    for i in 1..args.len() {
        acc = op(acc, arg(&args, i)?);
    }
    Ok(acc)
}

fn shift(args: &MultiValue, op: fn(u32, u32) -> u32) -> mlua::Result<i32> {
    let x = arg(args, 0)? as u32;
    let n = (arg(args, 1)? as u32) & 31;
    Ok(op(x, n) as i32)
}

fn tohex(args: &MultiValue) -> mlua::Result<String> {
    let x = arg(args, 0)? as u32;
    let n = if args.len() > 1 { arg(args, 1)? } else { 8 };
    let (upper, digits) = if n < 0 { (true, n.unsigned_abs()) } else { (false, n as u32) };
    let digits = digits.clamp(1, 8);
    let masked = if digits < 8 { x & ((1u32 << (4 * digits)) - 1) } else { x };
    let text = format!("{masked:0width$x}", width = digits as usize);
    Ok(if upper { text.to_ascii_uppercase() } else { text })
}

/// Installs the `bit` table into `globals`.
pub fn install(lua: &Lua, globals: &Table) -> mlua::Result<()> {
    let bit = lua.create_table()?;
    let unary = |f: fn(i32) -> i32| move |_: &Lua, args: MultiValue| Ok(f(arg(&args, 0)?));
    bit.raw_set("tobit", lua.create_function(unary(|x| x))?)?;
    bit.raw_set("bnot", lua.create_function(unary(|x| !x))?)?;
    bit.raw_set("bswap", lua.create_function(unary(|x| x.swap_bytes()))?)?;
    bit.raw_set("band", lua.create_function(|_, args: MultiValue| fold(args, |a, b| a & b))?)?;
    bit.raw_set("bor", lua.create_function(|_, args: MultiValue| fold(args, |a, b| a | b))?)?;
    bit.raw_set("bxor", lua.create_function(|_, args: MultiValue| fold(args, |a, b| a ^ b))?)?;
    bit.raw_set("lshift", lua.create_function(|_, args: MultiValue| shift(&args, |x, n| x << n))?)?;
    bit.raw_set("rshift", lua.create_function(|_, args: MultiValue| shift(&args, |x, n| x >> n))?)?;
    bit.raw_set("arshift", lua.create_function(|_, args: MultiValue| shift(&args, |x, n| ((x as i32) >> n) as u32))?)?;
    bit.raw_set("rol", lua.create_function(|_, args: MultiValue| shift(&args, u32::rotate_left))?)?;
    bit.raw_set("ror", lua.create_function(|_, args: MultiValue| shift(&args, u32::rotate_right))?)?;
    bit.raw_set("tohex", lua.create_function(|_, args: MultiValue| tohex(&args))?)?;
    globals.raw_set("bit", bit)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn eval(code: &str) -> String {
        let lua = Lua::new();
        install(&lua, &lua.globals()).expect("installed");
        lua.load(code).eval::<mlua::String>().expect("ran").to_string_lossy()
    }

    #[test]
    fn matches_lua_bitop() {
        assert_eq!(eval("return tostring(bit.tobit(0xffffffff))"), "-1");
        assert_eq!(eval("return tostring(bit.tobit(0xffffffff + 1))"), "0");
        assert_eq!(eval("return tostring(bit.bnot(0))"), "-1");
        assert_eq!(eval("return tostring(bit.band(0x12345678, 0xff))"), "120");
        assert_eq!(eval("return tostring(bit.bor(1, 2, 4, 8))"), "15");
        assert_eq!(eval("return tostring(bit.lshift(1, 31))"), "-2147483648");
        assert_eq!(eval("return tostring(bit.rshift(-1, 28))"), "15");
        assert_eq!(eval("return tostring(bit.arshift(-256, 8))"), "-1");
        assert_eq!(eval("return bit.tohex(1)"), "00000001");
        assert_eq!(eval("return bit.tohex(-1, -4)"), "FFFF");
        assert_eq!(eval("return bit.tohex(bit.bswap(0x12345678))"), "78563412");
        assert_eq!(eval("return tostring(bit.rol(0x12345678, 12))"), tostring(0x45678123u32 as i32));
    }

    fn tostring(n: i32) -> String {
        n.to_string()
    }
}

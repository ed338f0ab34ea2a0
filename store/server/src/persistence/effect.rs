//! The form a write command is logged in: its deterministic effect.
//!
//! Replay runs records in LSN order with the clock set to each record's time,
//! so most commands are logged as sent. The exceptions, as Redis's own
//! propagation does:
//! - results that depend on randomness or on float formatting are logged as
//!   their outcome: `INCR`/`DECR`/`INCRBY`/`DECRBY`/`INCRBYFLOAT` become
//!   `SET key <new value> KEEPTTL`, `HINCRBY`/`HINCRBYFLOAT` become `HSET`,
//!   `SPOP` becomes `SREM` of the members it popped;
//! - relative expiry becomes absolute: `EXPIRE`/`PEXPIRE`/`EXPIREAT` become
//!   `PEXPIREAT`, `SETEX`/`PSETEX` and `SET ... EX|PX|EXAT` become
//!   `SET ... PXAT`, `GETEX` becomes `PEXPIREAT` or `PERSIST`;
//! - a command that changed nothing it could report (SPOP of nothing,
//!   EXPIRE of a missing key, GETEX of a missing key) is not logged.
//!
//! A form that needs the value's state after the command (XADD and XTRIM's
//! approximate trim, logged as the exact one) comes from the handler itself,
//! in `Client::log_as`, and takes precedence (see `logging::log`).

use std::borrow::Cow;

use smallvec::{smallvec, SmallVec};

use crate::commands::is;

/// What to log for one executed command.
#[derive(Debug, PartialEq, Eq)]
pub enum Effect<'a> {
    /// The arguments as sent.
    AsSent,
    /// These arguments instead (inline up to [`INLINE_ARGS`]: a counter's
    /// rewrite allocates nothing; an absolute expiry is still formatted into
    /// a buffer of its own).
    Rewritten(Args<'a>),
    /// Nothing changed.
    Nothing,
}

/// Rewritten arguments held inline up to this many.
pub const INLINE_ARGS: usize = 6;

/// A rewritten command's arguments: borrowed from the request or the reply
/// where they can be.
pub type Args<'a> = SmallVec<[Cow<'a, [u8]>; INLINE_ARGS]>;

/// The logged form of `args` (already executed successfully at `now_ms`,
/// having produced `reply`).
pub fn of<'a>(name: &str, args: &[&'a [u8]], reply: &'a [u8], now_ms: u64) -> Effect<'a> {
    let b = |s: &'static str| Cow::Borrowed(s.as_bytes());
    let owned = |v: Vec<u8>| Cow::Owned(v);
    match name {
        "incr" | "decr" | "incrby" | "decrby" | "incrbyfloat" => match scalar(reply) {
            Some(value) => {
                Effect::Rewritten(smallvec![b("SET"), Cow::Borrowed(args[1]), Cow::Borrowed(value), b("KEEPTTL")])
            }
            None => Effect::AsSent,
        },
        "hincrby" | "hincrbyfloat" => match scalar(reply) {
            Some(value) => Effect::Rewritten(smallvec![
                b("HSET"),
                Cow::Borrowed(args[1]),
                Cow::Borrowed(args[2]),
                Cow::Borrowed(value)
            ]),
            None => Effect::AsSent,
        },
        "spop" => {
            let members = bulks(reply);
            if members.is_empty() {
                return Effect::Nothing;
            }
            let mut out: Args<'a> = smallvec![b("SREM"), Cow::Borrowed(args[1])];
            out.extend(members.into_iter().map(Cow::Borrowed));
            Effect::Rewritten(out)
        }
        "expire" | "pexpire" | "expireat" => {
            if reply == b":0\r\n" {
                return Effect::Nothing;
            }
            let Some(at) = absolute_ms(name.as_bytes(), args[2], now_ms) else { return Effect::AsSent };
            let mut out: Args<'a> =
                smallvec![b("PEXPIREAT"), Cow::Borrowed(args[1]), owned(at.to_string().into_bytes())];
            out.extend(args[3..].iter().map(|a| Cow::Borrowed(*a)));
            Effect::Rewritten(out)
        }
        "setex" | "psetex" => {
            let unit: &[u8] = if name == "setex" { b"ex" } else { b"px" };
            let Some(at) = absolute_ms(unit, args[2], now_ms) else { return Effect::AsSent };
            let at = owned(at.to_string().into_bytes());
            Effect::Rewritten(smallvec![b("SET"), Cow::Borrowed(args[1]), Cow::Borrowed(args[3]), b("PXAT"), at])
        }
        "set" if args.len() > 3 => set_form(args, now_ms),
        "getex" => getex_form(args, reply, now_ms),
        // SORT writes only with STORE.
        "sort" if !args.iter().skip(2).any(|a| is(a, "store")) => Effect::Nothing,
        _ => Effect::AsSent,
    }
}

/// SET with EX/PX/EXAT becomes SET with PXAT.
fn set_form<'a>(args: &[&'a [u8]], now_ms: u64) -> Effect<'a> {
    let Some(i) = args.iter().skip(3).position(|a| is(a, "ex") || is(a, "px") || is(a, "exat")).map(|p| p + 3) else {
        return Effect::AsSent;
    };
    let Some(value) = args.get(i + 1) else { return Effect::AsSent };
    let Some(at) = absolute_ms(args[i], value, now_ms) else { return Effect::AsSent };
    let mut out: Args<'a> = args.iter().map(|a| Cow::Borrowed(*a)).collect();
    out[i] = Cow::Borrowed(b"PXAT");
    out[i + 1] = Cow::Owned(at.to_string().into_bytes());
    Effect::Rewritten(out)
}

/// GETEX: PEXPIREAT or PERSIST when the key existed; nothing otherwise.
fn getex_form<'a>(args: &[&'a [u8]], reply: &'a [u8], now_ms: u64) -> Effect<'a> {
    if is_null(reply) || args.len() < 3 {
        return Effect::Nothing;
    }
    let option = args[2];
    if is(option, "persist") {
        return Effect::Rewritten(smallvec![Cow::Borrowed(&b"PERSIST"[..]), Cow::Borrowed(args[1])]);
    }
    let Some(value) = args.get(3) else { return Effect::AsSent };
    let unit: &[u8] = if is(option, "pxat") { b"pxat" } else { option };
    let Some(at) = absolute_ms(unit, value, now_ms) else { return Effect::AsSent };
    Effect::Rewritten(smallvec![
        Cow::Borrowed(&b"PEXPIREAT"[..]),
        Cow::Borrowed(args[1]),
        Cow::Owned(at.to_string().into_bytes()),
    ])
}

/// An expiry argument as absolute Unix ms, by its unit keyword or command
/// name (ex/expire: seconds from now; px/pexpire: ms from now; exat/expireat:
/// Unix seconds; pxat: Unix ms).
fn absolute_ms(unit: &[u8], value: &[u8], now_ms: u64) -> Option<i64> {
    let v = cairn_engine::number::parse_i64(value)?;
    let now = i64::try_from(now_ms).ok()?;
    if is(unit, "ex") || is(unit, "expire") {
        v.checked_mul(1000)?.checked_add(now)
    } else if is(unit, "px") || is(unit, "pexpire") {
        v.checked_add(now)
    } else if is(unit, "exat") || is(unit, "expireat") {
        v.checked_mul(1000)
    } else if is(unit, "pxat") {
        Some(v)
    } else {
        None
    }
}

fn is_null(reply: &[u8]) -> bool {
    reply.starts_with(b"$-1") || reply.starts_with(b"*-1") || reply.starts_with(b"_")
}

/// The value of an integer, bulk, simple string or double reply.
fn scalar(reply: &[u8]) -> Option<&[u8]> {
    let (&kind, rest) = reply.split_first()?;
    let line_end = rest.windows(2).position(|w| w == b"\r\n")?;
    let line = &rest[..line_end];
    match kind {
        b':' | b'+' | b',' => Some(line),
        b'$' => {
            let len: usize = std::str::from_utf8(line).ok()?.parse().ok()?;
            rest.get(line_end + 2..line_end + 2 + len)
        }
        _ => None,
    }
}

/// The bulk strings in a bulk, array or set reply (empty for a null).
fn bulks(reply: &[u8]) -> Vec<&[u8]> {
    let mut out = Vec::new();
    let Some(&kind) = reply.first() else { return out };
    if kind == b'$' {
        if let Some(v) = scalar(reply) {
            out.push(v);
        }
        return out;
    }
    if kind != b'*' && kind != b'~' {
        return out;
    }
    let mut pos = match reply.windows(2).position(|w| w == b"\r\n") {
        Some(p) => p + 2,
        None => return out,
    };
    while pos < reply.len() && reply[pos] == b'$' {
        let Some(v) = scalar(&reply[pos..]) else { break };
        let header = reply[pos..].windows(2).position(|w| w == b"\r\n").unwrap_or(0) + 2;
        pos += header + v.len() + 2;
        out.push(v);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rewritten(args: &[&[u8]], reply: &[u8], now: u64) -> Vec<String> {
        let name = String::from_utf8_lossy(args[0]).to_ascii_lowercase();
        match of(&name, args, reply, now) {
            Effect::Rewritten(v) => v.iter().map(|a| String::from_utf8_lossy(a).into_owned()).collect(),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn counters_log_their_result() {
        assert_eq!(rewritten(&[b"INCR", b"k"], b":5\r\n", 0), ["SET", "k", "5", "KEEPTTL"]);
        assert_eq!(rewritten(&[b"incrbyfloat", b"k", b"0.1"], b"$3\r\n1.1\r\n", 0), ["SET", "k", "1.1", "KEEPTTL"]);
        assert_eq!(rewritten(&[b"HINCRBY", b"h", b"f", b"2"], b":7\r\n", 0), ["HSET", "h", "f", "7"]);
    }

    #[test]
    fn spop_logs_the_members() {
        assert_eq!(rewritten(&[b"SPOP", b"s"], b"$1\r\na\r\n", 0), ["SREM", "s", "a"]);
        assert_eq!(rewritten(&[b"SPOP", b"s", b"2"], b"*2\r\n$1\r\na\r\n$2\r\nbc\r\n", 0), ["SREM", "s", "a", "bc"]);
        assert_eq!(rewritten(&[b"SPOP", b"s", b"2"], b"~1\r\n$1\r\nz\r\n", 0), ["SREM", "s", "z"]);
        assert_eq!(of("spop", &[b"SPOP", b"s"], b"$-1\r\n", 0), Effect::Nothing);
        assert_eq!(of("spop", &[b"SPOP", b"s", b"3"], b"*0\r\n", 0), Effect::Nothing);
    }

    #[test]
    fn expiry_becomes_absolute() {
        assert_eq!(rewritten(&[b"EXPIRE", b"k", b"10", b"NX"], b":1\r\n", 1000), ["PEXPIREAT", "k", "11000", "NX"]);
        assert_eq!(rewritten(&[b"pexpire", b"k", b"10"], b":1\r\n", 1000), ["PEXPIREAT", "k", "1010"]);
        assert_eq!(rewritten(&[b"expireat", b"k", b"5"], b":1\r\n", 1000), ["PEXPIREAT", "k", "5000"]);
        assert_eq!(of("expire", &[b"expire", b"k", b"5"], b":0\r\n", 1000), Effect::Nothing);
        assert_eq!(rewritten(&[b"SETEX", b"k", b"2", b"v"], b"+OK\r\n", 1000), ["SET", "k", "v", "PXAT", "3000"]);
        assert_eq!(
            rewritten(&[b"SET", b"k", b"v", b"NX", b"EX", b"1"], b"+OK\r\n", 1000),
            ["SET", "k", "v", "NX", "PXAT", "2000"]
        );
        assert_eq!(of("set", &[b"SET", b"k", b"v"], b"+OK\r\n", 1000), Effect::AsSent);
        assert_eq!(rewritten(&[b"GETEX", b"k", b"PX", b"5"], b"$1\r\nv\r\n", 1000), ["PEXPIREAT", "k", "1005"]);
        assert_eq!(rewritten(&[b"GETEX", b"k", b"PERSIST"], b"$1\r\nv\r\n", 1000), ["PERSIST", "k"]);
        assert_eq!(of("getex", &[b"GETEX", b"k", b"EX", b"5"], b"$-1\r\n", 1000), Effect::Nothing);
        assert_eq!(of("getex", &[b"GETEX", b"k"], b"$1\r\nv\r\n", 1000), Effect::Nothing);
    }
}

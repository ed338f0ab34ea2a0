//! Expiry commands: EXPIRE/PEXPIRE/EXPIREAT/PEXPIREAT with NX/XX/GT/LT, TTL,
//! PTTL, EXPIRETIME, PEXPIRETIME, PERSIST. Expiry times are absolute Unix
//! milliseconds in the engine.

use cairn_engine::entry::NO_EXPIRY;
use cairn_engine::events as ev;

use super::{int_arg, is, text, CmdError, CmdResult, Ctx};

/// EXPIRE's conditions.
#[derive(Default, Clone, Copy)]
struct Conditions {
    nx: bool,
    xx: bool,
    gt: bool,
    lt: bool,
}

fn parse_conditions(args: &[&[u8]]) -> Result<Conditions, CmdError> {
    let mut c = Conditions::default();
    for a in args {
        if is(a, "nx") {
            c.nx = true;
        } else if is(a, "xx") {
            c.xx = true;
        } else if is(a, "gt") {
            c.gt = true;
        } else if is(a, "lt") {
            c.lt = true;
        } else {
            return Err(CmdError::err(format!("Unsupported option {}", text(a))));
        }
    }
    if c.nx && (c.xx || c.gt || c.lt) {
        return Err(CmdError::Static("ERR NX and XX, GT or LT options at the same time are not compatible"));
    }
    if c.gt && c.lt {
        return Err(CmdError::Static("ERR GT and LT options at the same time are not compatible"));
    }
    Ok(c)
}

/// Whether the conditions allow replacing `current` (None: no expiry) by `new`.
fn allowed(c: Conditions, current: Option<u64>, new: u64) -> bool {
    match current {
        None => !(c.xx || c.gt),
        Some(cur) => !(c.nx || (c.gt && new <= cur) || (c.lt && new >= cur)),
    }
}

/// The shared body: `relative` adds the base time, `unit_ms` scales seconds.
fn expire_generic(ctx: &mut Ctx<'_>, args: &[&[u8]], relative: bool, unit_ms: i64) -> CmdResult {
    let when = int_arg(args[2])?;
    let conditions = parse_conditions(&args[3..])?;
    let mut at = when.checked_mul(unit_ms).ok_or(CmdError::InvalidExpire)?;
    if relative {
        at = at.checked_add(ctx.now_ms as i64).ok_or(CmdError::InvalidExpire)?;
    }
    let db = ctx.db();
    let now = ctx.now_ms;
    let mut shard = ctx.server.keyspace.lock_key(args[1]);
    let table = shard.db(db);
    let Some(entry) = table.get(args[1], now) else {
        ctx.out.int(0);
        return Ok(());
    };
    let effective = at.max(0) as u64;
    if !allowed(conditions, entry.expire_at(), effective) {
        ctx.out.int(0);
        return Ok(());
    }
    if at <= now as i64 {
        table.remove(args[1]);
        ctx.notify(ev::GENERIC, "del", args[1]);
    } else {
        table.set_expire(args[1], effective, now);
        ctx.notify(ev::GENERIC, "expire", args[1]);
    }
    ctx.out.int(1);
    Ok(())
}

pub fn expire(ctx: &mut Ctx<'_>, args: &[&[u8]]) -> CmdResult {
    expire_generic(ctx, args, true, 1000)
}

pub fn pexpire(ctx: &mut Ctx<'_>, args: &[&[u8]]) -> CmdResult {
    expire_generic(ctx, args, true, 1)
}

pub fn expireat(ctx: &mut Ctx<'_>, args: &[&[u8]]) -> CmdResult {
    expire_generic(ctx, args, false, 1000)
}

pub fn pexpireat(ctx: &mut Ctx<'_>, args: &[&[u8]]) -> CmdResult {
    expire_generic(ctx, args, false, 1)
}

/// The key's expiry: `Err(-2)` missing, `Err(-1)` no expiry, `Ok(ms)` absolute.
/// Reading it is not an access (Redis's `LOOKUP_NOTOUCH`).
fn expiry_of(ctx: &mut Ctx<'_>, key: &[u8]) -> Result<u64, i64> {
    let db = ctx.db();
    let mut shard = ctx.server.keyspace.lock_key(key);
    let entry = shard.db(db).get_untouched(key, ctx.now_ms).ok_or(-2)?;
    entry.expire_at().ok_or(-1)
}

pub fn ttl(ctx: &mut Ctx<'_>, args: &[&[u8]]) -> CmdResult {
    let reply = match expiry_of(ctx, args[1]) {
        Ok(at) => (at.saturating_sub(ctx.now_ms) as i64 + 500) / 1000,
        Err(code) => code,
    };
    ctx.out.int(reply);
    Ok(())
}

pub fn pttl(ctx: &mut Ctx<'_>, args: &[&[u8]]) -> CmdResult {
    let reply = match expiry_of(ctx, args[1]) {
        Ok(at) => at.saturating_sub(ctx.now_ms) as i64,
        Err(code) => code,
    };
    ctx.out.int(reply);
    Ok(())
}

pub fn expiretime(ctx: &mut Ctx<'_>, args: &[&[u8]]) -> CmdResult {
    let reply = expiry_of(ctx, args[1]).map(|at| at as i64 / 1000).unwrap_or_else(|code| code);
    ctx.out.int(reply);
    Ok(())
}

pub fn pexpiretime(ctx: &mut Ctx<'_>, args: &[&[u8]]) -> CmdResult {
    let reply = expiry_of(ctx, args[1]).map(|at| at as i64).unwrap_or_else(|code| code);
    ctx.out.int(reply);
    Ok(())
}

pub fn persist(ctx: &mut Ctx<'_>, args: &[&[u8]]) -> CmdResult {
    let db = ctx.db();
    let now = ctx.now_ms;
    let mut shard = ctx.server.keyspace.lock_key(args[1]);
    let table = shard.db(db);
    let had_expiry = table.get(args[1], now).is_some_and(|e| e.expire_at().is_some());
    if had_expiry {
        table.set_expire(args[1], NO_EXPIRY, now);
        ctx.notify(ev::GENERIC, "persist", args[1]);
    }
    ctx.out.int(i64::from(had_expiry));
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn conditions() {
        let c = |s: &[&[u8]]| parse_conditions(s).unwrap();
        assert!(allowed(c(&[]), None, 5));
        assert!(!allowed(c(&[b"nx"]), Some(1), 5));
        assert!(!allowed(c(&[b"xx"]), None, 5));
        assert!(!allowed(c(&[b"gt"]), None, 5));
        assert!(allowed(c(&[b"lt"]), None, 5));
        assert!(allowed(c(&[b"gt"]), Some(1), 5));
        assert!(!allowed(c(&[b"lt"]), Some(1), 5));
        assert!(parse_conditions(&[b"nx", b"xx"]).is_err());
        assert!(parse_conditions(&[b"gt", b"lt"]).is_err());
    }
}

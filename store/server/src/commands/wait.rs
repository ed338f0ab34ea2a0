//! WAIT numreplicas timeout, as Redis 7.0.15's `waitCommand` on a primary
//! with no replicas: Cairn has no replication, so no replica ever
//! acknowledges and the reply is always 0.
//!
//! - `numreplicas` ≤ 0: replies 0 at once (Redis: enough replicas acked).
//! - Otherwise the client blocks until `timeout` milliseconds pass (0:
//!   forever), CLIENT UNBLOCK, or it disconnects, and then gets 0. It
//!   counts in `blocked_clients` and is flagged `b` in CLIENT LIST, as in
//!   Redis.
//! - Where a client may not block (inside MULTI/EXEC, scripts refuse WAIT
//!   by its `noscript` flag), replies 0 at once.
//!
//! Applications call WAIT after writes to ask for replication; against a
//! server without replicas they get the same answer Redis would give them.

use super::{CmdError, CmdResult, Ctx};

/// WAIT numreplicas timeout
pub fn wait(ctx: &mut Ctx<'_>, args: &[&[u8]]) -> CmdResult {
    let numreplicas = super::int_arg(args[1])?;
    let deadline_ms = deadline(args[2], ctx.now_ms)?;
    if numreplicas <= 0 {
        ctx.out.int(0);
        return Ok(());
    }
    let server = ctx.server;
    if !server.blocking.block_without_keys(ctx.client, args, deadline_ms) {
        ctx.out.int(0);
    }
    Ok(())
}

/// WAIT's timeout (integer milliseconds) as an absolute deadline in Unix
/// milliseconds; 0 means forever. Redis's `getTimeoutFromObjectOrReply`
/// with `UNIT_MILLISECONDS`.
fn deadline(arg: &[u8], now_ms: u64) -> Result<u64, CmdError> {
    let ms = cairn_engine::number::parse_i64(arg)
        .ok_or(CmdError::Static("ERR timeout is not an integer or out of range"))?;
    if ms < 0 {
        return Err(CmdError::Static("ERR timeout is negative"));
    }
    if ms == 0 {
        return Ok(0);
    }
    Ok(now_ms.saturating_add(ms as u64).min(u64::MAX / 2))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn timeouts_are_milliseconds_from_now() {
        assert_eq!(deadline(b"0", 1000), Ok(0));
        assert_eq!(deadline(b"250", 1000), Ok(1250));
        assert_eq!(deadline(b"-1", 0), Err(CmdError::Static("ERR timeout is negative")));
        assert_eq!(deadline(b"1.5", 0), Err(CmdError::Static("ERR timeout is not an integer or out of range")));
        assert_eq!(deadline(b"abc", 0), Err(CmdError::Static("ERR timeout is not an integer or out of range")));
        let huge = i64::MAX.to_string();
        assert_eq!(deadline(huge.as_bytes(), 1000), Ok(u64::MAX / 2));
    }
}

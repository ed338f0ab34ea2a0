//! REPLCONF, as Redis 7.0's `replconfCommand` answers it, and what it
//! leaves on the client for a later SYNC: `rdb-only 1` (what `redis-cli
//! --rdb` sends) and `rdb-filter-only` (`redis-cli --functions-rdb`).
//! The options only a replica's link uses (`listening-port`, `ip-address`,
//! `capa`) are checked and accepted; `ack` and `getack` reply nothing, as
//! in Redis for a client that is not a replica.

use crate::commands::{int_arg, is, CmdError, CmdResult, Ctx};

/// Redis's `NET_HOST_STR_LEN`: an `ip-address` must be shorter.
const HOST_STR_LEN: usize = 256;

/// What REPLCONF set for this connection, and a SYNC waiting to be served.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct ReplState {
    /// `REPLCONF rdb-only 1`: the client wants the RDB image only.
    pub rdb_only: bool,
    /// `REPLCONF rdb-filter-only ...`: no keys; functions when `true`.
    pub filter_functions_only: Option<bool>,
    /// A SYNC/PSYNC the connection serves after the batch (see [`super::sync`]).
    pub pending: Option<super::sync::Pending>,
}

/// REPLCONF <option> <value> [<option> <value> ...]
pub fn replconf(ctx: &mut Ctx<'_>, args: &[&[u8]]) -> CmdResult {
    if args.len() % 2 == 0 {
        return Err(CmdError::Syntax);
    }
    for pair in args[1..].chunks_exact(2) {
        let (option, value) = (pair[0], pair[1]);
        if is(option, "listening-port") {
            int_arg(value)?;
        } else if is(option, "ip-address") {
            if value.len() >= HOST_STR_LEN {
                return Err(CmdError::Message(format!(
                    "ERR REPLCONF ip-address provided by replica instance is too long: {} bytes",
                    value.len()
                )));
            }
        } else if is(option, "capa") {
            // Capabilities this server does not use are ignored, as in Redis.
        } else if is(option, "ack") || is(option, "getack") {
            return Ok(()); // no reply, as Redis to a client that is not a replica
        } else if is(option, "rdb-only") {
            let rdb_only = int_arg(value)?;
            if !(0..=1).contains(&rdb_only) {
                return Err(CmdError::Static("ERR value is out of range, value must between 0 and 1"));
            }
            ctx.client.repl.rdb_only = rdb_only == 1;
        } else if is(option, "rdb-filter-only") {
            ctx.client.repl.filter_functions_only = Some(filter_functions(value)?);
        } else {
            let option = String::from_utf8_lossy(option);
            return Err(CmdError::Message(format!("ERR Unrecognized REPLCONF option: {option}")));
        }
    }
    ctx.out.ok();
    Ok(())
}

/// `rdb-filter-only`'s include filters: none (an empty image) or `functions`.
fn filter_functions(value: &[u8]) -> Result<bool, CmdError> {
    let mut functions = false;
    for filter in value.split(|b| b.is_ascii_whitespace()).filter(|f| !f.is_empty()) {
        if !is(filter, "functions") {
            let filter = String::from_utf8_lossy(filter);
            return Err(CmdError::Message(format!("ERR Unsupported rdb-filter-only option: {filter}")));
        }
        functions = true;
    }
    Ok(functions)
}

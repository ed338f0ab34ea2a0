//! The replication and cluster commands of Redis 7.0, answered as a Redis
//! primary with no replicas and `cluster-enabled no` answers them: Cairn
//! has no replication (yet) and no cluster mode. Clients, sentinels-aware
//! libraries and health checks call ROLE and REPLICAOF NO ONE; cluster
//! clients probe with READONLY/READWRITE/ASKING.
//!
//! - ROLE: `master`, the replication offset (0), no replicas.
//! - REPLICAOF/SLAVEOF NO ONE: OK (it already is a primary). REPLICAOF
//!   host port: refused with a clear error after Redis's own port check.
//! - FAILOVER: Redis's argument checks, then "requires connected
//!   replicas"; FAILOVER ABORT: "No failover in progress."
//! - READONLY, READWRITE, ASKING: cluster support disabled.

use cairn_engine::number;

use super::{int_arg, is, CmdError, CmdResult, Ctx};

/// ROLE
pub fn role(ctx: &mut Ctx<'_>, _args: &[&[u8]]) -> CmdResult {
    ctx.out.array(3);
    ctx.out.bulk(b"master");
    ctx.out.int(0);
    ctx.out.array(0);
    Ok(())
}

/// REPLICAOF host port | NO ONE (and its old name SLAVEOF).
pub fn replicaof(ctx: &mut Ctx<'_>, args: &[&[u8]]) -> CmdResult {
    if is(args[1], "no") && is(args[2], "one") {
        ctx.out.ok();
        return Ok(());
    }
    if !number::parse_i64(args[2]).is_some_and(|port| (0..=65535).contains(&port)) {
        return Err(CmdError::Static("ERR Invalid master port"));
    }
    Err(CmdError::Static(
        "ERR Cairn has no replication: it cannot become a replica (REPLICAOF NO ONE is accepted, it is always a \
         primary)",
    ))
}

/// FAILOVER [TO host port [FORCE]] [ABORT] [TIMEOUT milliseconds]
pub fn failover(_ctx: &mut Ctx<'_>, args: &[&[u8]]) -> CmdResult {
    if args.len() == 2 && is(args[1], "abort") {
        return Err(CmdError::Static("ERR No failover in progress."));
    }
    let mut timeout_seen = false;
    let mut to_seen = false;
    let mut force_seen = false;
    let mut at = 1;
    while at < args.len() {
        let word = args[at];
        if is(word, "timeout") && at + 1 < args.len() && !timeout_seen {
            if int_arg(args[at + 1])? <= 0 {
                return Err(CmdError::Static("ERR FAILOVER timeout must be greater than 0"));
            }
            timeout_seen = true;
            at += 2;
        } else if is(word, "to") && at + 2 < args.len() && !to_seen {
            int_arg(args[at + 2])?;
            to_seen = true;
            at += 3;
        } else if is(word, "force") && !force_seen {
            force_seen = true;
            at += 1;
        } else {
            return Err(CmdError::Syntax);
        }
    }
    Err(CmdError::Static("ERR FAILOVER requires connected replicas."))
}

/// READONLY, READWRITE, ASKING
pub fn cluster_only(_ctx: &mut Ctx<'_>, _args: &[&[u8]]) -> CmdResult {
    Err(CmdError::Static("ERR This instance has cluster support disabled"))
}

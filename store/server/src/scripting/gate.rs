//! What a command a client sends while a script runs does: run (SCRIPT KILL,
//! MULTI, ...: Redis's `allow-busy` commands that touch no data), wait for the
//! script (before `busy-reply-threshold`), or fail with -BUSY (after it).

use crate::commands::{is, table, Ctx};
use crate::server::Server;

/// The dispatcher's decision for one command.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Gate {
    Run,
    /// Refused with -BUSY (the reply is written).
    Answered,
    /// Wait until the script ends or passes the threshold, then retry.
    Wait,
}

/// Commands Redis 7.0 flags `allow-busy` that touch no shard here (WATCH,
/// which reads its key, waits instead).
fn allowed_while_busy(args: &[&[u8]]) -> bool {
    let name = args[0];
    ["auth", "hello", "multi", "discard", "unwatch", "quit", "reset", "shutdown"].iter().any(|c| is(name, c))
        || (is(name, "script") && args.get(1).is_some_and(|sub| is(sub, "kill")))
        || (is(name, "function") && args.get(1).is_some_and(|sub| is(sub, "kill") || is(sub, "stats")))
}

/// The decision for a command sent while a script is pending.
pub fn check(ctx: &mut Ctx<'_>, args: &[&[u8]]) -> Gate {
    if allowed_while_busy(args) {
        return Gate::Run;
    }
    if !past_threshold(ctx.server) {
        return Gate::Wait;
    }
    reject(ctx, args);
    Gate::Answered
}

/// Whether a batch must stop and wait before its next request: a script is
/// pending and not yet past the threshold.
pub fn should_wait(server: &Server) -> bool {
    server.scripting.script_pending() && !past_threshold(server)
}

/// For a request already running inside a batch (a native frame's
/// operations): refused with -BUSY past the threshold. Before it, the request
/// runs: a script announced meanwhile waits for the batch to end before it
/// takes the shards. True when the reply is written.
pub fn refused_while_busy(ctx: &mut Ctx<'_>, args: &[&[u8]]) -> bool {
    if !ctx.server.scripting.script_pending() || allowed_while_busy(args) || !past_threshold(ctx.server) {
        return false;
    }
    reject(ctx, args);
    true
}

fn past_threshold(server: &Server) -> bool {
    let threshold = server.runtime.busy_reply_threshold_ms.load(std::sync::atomic::Ordering::Relaxed);
    server.scripting.busy.past_threshold(threshold)
}

/// Redis's rejectCommand: the error, a transaction flagged (or discarded by EXEC).
fn reject(ctx: &mut Ctx<'_>, args: &[&[u8]]) {
    if let Some(index) = table::lookup(args[0]) {
        ctx.stats.per_command[table::stat_of_request(index, args)].rejected.add(1);
    }
    let busy = ctx.server.scripting.busy.busy_message();
    if is(args[0], "exec") && ctx.client.multi.is_some() {
        ctx.client.multi = None;
        crate::commands::transactions::unwatch_all(ctx);
        ctx.out.error(&format!("EXECABORT Transaction discarded because of: {busy}"));
    } else {
        if let Some(multi) = ctx.client.multi.as_mut() {
            multi.aborted = true;
        }
        ctx.out.error(busy);
    }
    if let Some(code) = ctx.out.take_error_code() {
        ctx.stats.record_error(code.as_str());
    }
}

//! Running a short script on the worker that received it.
//!
//! A script sent to the script thread costs two thread hand-offs and, on a
//! busy CPU, a context switch each way, far more than a short script itself
//! (`redis.call('set', ...)` runs in a few microseconds). So a script known
//! to be short (a run finished within `--script-inline-us`, none was long:
//! see [`super::speed`]) runs right here, in the worker's batch, as Redis runs
//! every script on its one thread: announced, the other workers out of
//! their batches, every shard held (see [`super::quiesce`]).
//!
//! What keeps the worker responsive is the deadline: a script still running
//! at `now + budget` that has not written is abandoned (it changed nothing)
//! and runs again on the script thread, where the worker's other clients
//! get BUSY replies and SCRIPT KILL reaches it. One that has written cannot
//! be undone and runs to its end here; if that takes longer than
//! [`super::speed::LONG_RUN`] it is marked long, so that its later runs go to
//! the script thread from the start (docs/scripting.md).
//!
//! Only one worker at a time runs a script ([`Scripting::on_worker`]): two
//! would each wait for the other to leave its batch.
//!
//! [`Scripting::on_worker`]: super::Scripting::on_worker

use std::time::{Duration, Instant};

use super::run::{self, Caller, ScriptRequest, Within};
use crate::commands::Ctx;

/// Runs the script here if it is known to be short and no other worker is
/// running one. False when it did not run (or was abandoned): the caller
/// sends it to the script thread.
pub fn try_run(ctx: &mut Ctx<'_>, request: &ScriptRequest) -> bool {
    let server = ctx.server;
    let budget_us = server.config.script_inline_us;
    if budget_us == 0 || !request.speed.is_short() {
        return false;
    }
    let Some(_only_worker_running_a_script) = server.scripting.on_worker.try_lock() else {
        return false;
    };
    let caller = Caller::of(ctx.client);
    let deadline = Instant::now() + Duration::from_micros(budget_us);
    let outcome = run::execute(server, ctx.stats, &caller, request, Within::Worker { deadline });
    let counts = &server.scripting.where_ran;
    if outcome.abandoned {
        counts.count_abandoned_on_worker();
        return false;
    }
    counts.count_on_worker();
    outcome.answer(ctx);
    true
}

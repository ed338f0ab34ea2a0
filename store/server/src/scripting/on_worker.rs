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
//! A short script whose runs kept to its declared keys runs *keyed* instead:
//! holding only those keys' shards, without the handshake, beside the other
//! workers (see [`super::key_scope`]).
//!
//! One handshake and one hold of every shard serve all the short scripts
//! a batch runs back to back (a pipeline of EVALSHAs): the worker keeps the
//! keyspace ([`BatchHold`], in the batch's [`ScriptHold`]) from its first script
//! until the batch's next command that is not a script, the batch's end, or
//! the budget's end, whichever comes first. The other workers' clients wait
//! meanwhile, as they would for one script; with the per-script deadline a
//! hold lasts at most about two budgets.
//!
//! Only one worker at a time runs scripts ([`Scripting::on_worker`]): two
//! would each wait for the other to leave its batch.
//!
//! [`Scripting::on_worker`]: super::Scripting::on_worker

use std::time::{Duration, Instant};

use parking_lot::MutexGuard;

use super::run::{self, Caller, Exclusive, Outcome, ScriptRequest, Stopped};
use crate::commands::Ctx;
use crate::server::Server;
use crate::stats::WorkerStats;

/// The keyspace held by one worker across the short scripts of a batch.
/// Dropping it releases the shards and the announcement, wakes the clients
/// that waited for it, and lets another worker run scripts.
struct BatchHold<'s> {
    exclusive: Option<Exclusive<'s>>,
    server: &'s Server,
    stats: &'s WorkerStats,
    /// No script starts under this hold from then on.
    until: Instant,
    _only_worker_running_scripts: MutexGuard<'s, ()>,
}

impl<'s> BatchHold<'s> {
    /// Announces, waits for the other workers to leave their batches and
    /// holds every shard; None when another worker runs scripts now.
    fn take(server: &'s Server, stats: &'s WorkerStats, budget: Duration) -> Option<BatchHold<'s>> {
        let token = server.scripting.on_worker.try_lock()?;
        let exclusive = Exclusive::take(server, true);
        let until = Instant::now() + budget;
        Some(BatchHold { exclusive: Some(exclusive), server, stats, until, _only_worker_running_scripts: token })
    }
}

impl Drop for BatchHold<'_> {
    fn drop(&mut self) {
        drop(self.exclusive.take());
        run::after_scripts(self.server, self.stats);
    }
}

/// What a worker's batch of commands keeps for its short scripts (the
/// connection creates one per batch; commands reach it through
/// [`Ctx::scripts_here`]).
pub struct ScriptHold<'s> {
    server: &'s Server,
    stats: &'s WorkerStats,
    held: Option<BatchHold<'s>>,
}

impl<'s> ScriptHold<'s> {
    pub fn new(server: &'s Server, stats: &'s WorkerStats) -> ScriptHold<'s> {
        ScriptHold { server, stats, held: None }
    }
}

/// What became of a short script offered to the worker.
pub enum RanHere {
    Ran(Outcome),
    /// Another worker runs scripts now.
    NotNow,
    /// Still running at its deadline without having written: it changed
    /// nothing and is long from now on.
    Abandoned,
}

/// The batch's hold as commands see it (a trait object, so that [`Ctx`]
/// needs no second lifetime).
pub trait ScriptsHere {
    /// Runs a short script under the batch's hold (taken if needed). When
    /// it does not run here, it goes to the script thread.
    fn run_short(&mut self, caller: &Caller, request: &ScriptRequest, budget: Duration) -> RanHere;
    /// Before each command of the batch: whether the worker still holds the
    /// keyspace. Only script commands run under the hold (one that does not
    /// run here, or an error reply, touches no shard either); any other
    /// command releases it first.
    fn keep_for(&mut self, args: &[&[u8]]) -> bool;
}

impl ScriptsHere for ScriptHold<'_> {
    fn run_short(&mut self, caller: &Caller, request: &ScriptRequest, budget: Duration) -> RanHere {
        let counts = &self.server.scripting.where_ran;
        if self.held.is_none() && request.speed.is_keyed() {
            let deadline = Instant::now() + budget;
            let outcome = run::execute_keyed(self.server, self.stats, caller, request, deadline);
            match outcome.stopped {
                Stopped::AtDeadline => return RanHere::Abandoned,
                Stopped::No => {
                    counts.count_keyed_on_worker();
                    return RanHere::Ran(outcome);
                }
                Stopped::LeftScope => {}
            }
            // Not keyed after all (and never again): it runs with every shard.
            counts.count_left_keys_on_worker();
        }
        if self.held.as_ref().is_some_and(|hold| Instant::now() >= hold.until) {
            // Its time is up: the other workers' clients go first.
            self.held = None;
        }
        if self.held.is_none() {
            self.held = BatchHold::take(self.server, self.stats, budget);
        }
        let Some(exclusive) = self.held.as_ref().and_then(|hold| hold.exclusive.as_ref()) else {
            return RanHere::NotNow;
        };
        let deadline = Instant::now() + budget;
        let outcome = run::execute_on_worker(self.server, self.stats, caller, request, exclusive, deadline);
        if outcome.stopped != Stopped::No {
            // The script thread takes the keyspace next.
            self.held = None;
            return RanHere::Abandoned;
        }
        RanHere::Ran(outcome)
    }

    fn keep_for(&mut self, args: &[&[u8]]) -> bool {
        if self.held.is_some() && !args.first().is_some_and(|name| crate::commands::table::names_script(name)) {
            self.held = None;
        }
        self.held.is_some()
    }
}

/// Runs the script here if it is known to be short, the command runs in a
/// worker's batch and no other worker is running scripts. False when it did
/// not run (or was abandoned): the caller sends it to the script thread.
pub fn try_run(ctx: &mut Ctx<'_>, request: &ScriptRequest) -> bool {
    let server = ctx.server;
    let budget_us = server.config.script_inline_us;
    if budget_us == 0 || !request.speed.is_short() {
        return false;
    }
    let caller = Caller::of(ctx.client);
    let Some(here) = ctx.scripts_here.as_deref_mut() else { return false };
    let counts = &server.scripting.where_ran;
    match here.run_short(&caller, request, Duration::from_micros(budget_us)) {
        RanHere::Ran(outcome) => {
            counts.count_on_worker();
            outcome.answer(ctx);
            true
        }
        RanHere::NotNow => false,
        RanHere::Abandoned => {
            counts.count_abandoned_on_worker();
            false
        }
    }
}

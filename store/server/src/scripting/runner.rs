//! The thread that runs clients' scripts (EVAL, FCALL) for a server.
//!
//! Scripts run one at a time (each holds every shard), so one thread serves
//! them all, and it runs them in rounds: the scripts queued when a round
//! starts run back to back under one announcement, one wait for the
//! workers to leave their batches and one acquisition of the shard locks
//! (see [`super::quiesce`]), and their callers are woken when the round
//! ends. A round is bounded ([`MAX_ROUND`]) so that the workers' other
//! clients get their turn. One long-lived thread also keeps one Lua
//! interpreter warm (compiled scripts, loaded libraries, cjson settings),
//! where tokio's blocking pool spread scripts over dozens of threads, each
//! with its own interpreter and malloc arena.
//!
//! The thread starts with the first script and ends when the server's
//! [`Runner`] is dropped; it holds the server only while it runs a job.
//! Between rounds it drops what SCRIPT FLUSH or a library change made stale
//! in its interpreter when told ([`Runner::release_stale`], see
//! [`super::stale`]).

use std::collections::VecDeque;
use std::sync::Arc;

use parking_lot::{Condvar, Mutex};
use tokio::sync::oneshot;

use super::run::{self, Caller, Outcome, ScriptRequest};
use super::stale::{self, Generations};
use crate::server::Server;
use crate::stats::WorkerStats;

/// Most scripts in one round.
const MAX_ROUND: usize = 32;

/// A client's script waiting for the runner.
pub struct Job {
    pub server: Arc<Server>,
    pub stats: Arc<WorkerStats>,
    pub caller: Caller,
    pub request: ScriptRequest,
    done: oneshot::Sender<Outcome>,
}

/// The runner of one server: its queue, and its thread once started.
#[derive(Debug, Default)]
pub struct Runner {
    shared: Arc<Shared>,
}

#[derive(Debug, Default)]
struct Shared {
    queue: Mutex<Queue>,
    wake: Condvar,
}

#[derive(Default)]
struct Queue {
    jobs: VecDeque<Job>,
    /// The generations to release the thread's interpreter against, when
    /// SCRIPT FLUSH or a library change asked for it.
    release: Option<Generations>,
    thread_started: bool,
    closed: bool,
}

impl std::fmt::Debug for Queue {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Queue").field("jobs", &self.jobs.len()).field("closed", &self.closed).finish()
    }
}

/// The runner is gone (its thread could not start, or the server stops).
#[derive(Debug, thiserror::Error)]
#[error("the script runner is not available: {0}")]
pub struct Unavailable(String);

impl Runner {
    /// Queues a client's scripts, in order; each receiver gets its script's
    /// outcome when its round ends (None for all when the thread cannot
    /// start or the server is stopping).
    pub fn submit(
        &self,
        server: &Arc<Server>,
        stats: &Arc<WorkerStats>,
        caller: &Caller,
        requests: impl ExactSizeIterator<Item = ScriptRequest>,
    ) -> Vec<Option<oneshot::Receiver<Outcome>>> {
        let count = requests.len();
        let mut queue = self.shared.queue.lock();
        if let Err(e) = self.start_thread(&mut queue) {
            tracing::error!(error = %e, "the script thread could not start");
            return (0..count).map(|_| None).collect();
        }
        let receivers = requests
            .map(|request| {
                let (done, outcome) = oneshot::channel();
                let job = Job { server: server.clone(), stats: stats.clone(), caller: caller.clone(), request, done };
                queue.jobs.push_back(job);
                Some(outcome)
            })
            .collect();
        drop(queue);
        self.shared.wake.notify_one();
        receivers
    }

    /// Asks the thread (if started) to release its interpreter, or the
    /// libraries it loaded, if older than `current`.
    pub fn release_stale(&self, current: Generations) {
        let mut queue = self.shared.queue.lock();
        if !queue.thread_started {
            return;
        }
        queue.release = Some(current);
        drop(queue);
        self.shared.wake.notify_one();
    }

    /// Starts the runner thread unless it runs already.
    fn start_thread(&self, queue: &mut Queue) -> Result<(), Unavailable> {
        if queue.closed {
            return Err(Unavailable("the server is stopping".into()));
        }
        if !queue.thread_started {
            let shared = self.shared.clone();
            std::thread::Builder::new()
                .name("cairn-scripts".into())
                .stack_size(super::SCRIPT_THREAD_STACK_BYTES)
                .spawn(move || serve(&shared))
                .map_err(|e| Unavailable(e.to_string()))?;
            queue.thread_started = true;
        }
        Ok(())
    }
}

impl Drop for Runner {
    fn drop(&mut self) {
        self.shared.queue.lock().closed = true;
        self.shared.wake.notify_one();
    }
}

/// What the runner thread does next.
enum Work {
    Round(Vec<Job>),
    Release(Generations),
}

/// The runner thread: rounds until the runner is dropped.
fn serve(shared: &Shared) {
    while let Some(work) = next_work(shared) {
        match work {
            Work::Round(round) => {
                run_round(round);
                if shared.queue.lock().jobs.is_empty() {
                    // Idle: the garbage of the round's last scripts goes now
                    // (see lua_env::collect_after_scripts).
                    super::lua_env::collect_after_scripts();
                }
            }
            Work::Release(current) => stale::release(current),
        }
    }
}

/// Waits for queued scripts and takes up to [`MAX_ROUND`] of them, or else
/// a request to release; None once the runner is closed and its queue empty.
fn next_work(shared: &Shared) -> Option<Work> {
    let mut queue = shared.queue.lock();
    loop {
        if !queue.jobs.is_empty() {
            let take = queue.jobs.len().min(MAX_ROUND);
            return Some(Work::Round(queue.jobs.drain(..take).collect()));
        }
        if let Some(current) = queue.release.take() {
            return Some(Work::Release(current));
        }
        if queue.closed {
            return None;
        }
        shared.wake.wait(&mut queue);
    }
}

/// Runs a round's scripts under one exclusive hold of the keyspace, then
/// hands each caller its outcome.
fn run_round(round: Vec<Job>) {
    let Some(first) = round.first() else { return };
    let server = first.server.clone();
    let scripts: Vec<(&WorkerStats, &Caller, &ScriptRequest)> =
        round.iter().map(|job| (&*job.stats, &job.caller, &job.request)).collect();
    let outcomes = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| run::execute_round(&server, &scripts)));
    drop(scripts);
    server.scripting.where_ran.count_on_script_thread(round.len() as u64);
    match outcomes {
        Ok(outcomes) => {
            for (job, outcome) in round.into_iter().zip(outcomes) {
                // A caller that went away (its connection closed) needs nothing.
                let _ = job.done.send(outcome);
            }
        }
        Err(_) => {
            // Dropping the senders answers each caller with an error.
            tracing::error!(scripts = round.len(), "a round of scripts panicked");
        }
    }
}

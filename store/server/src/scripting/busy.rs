//! Whether a script is running, for how long, and SCRIPT KILL.
//!
//! While a script is pending (see [`super::quiesce`]) a client's commands wait
//! for it to end ([`Busy::wait`]) or, once it has run past
//! `busy-reply-threshold`, are refused with [`BUSY`].

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::Duration;

use tokio::sync::Notify;

use super::quiesce::Quiesce;

/// How often a waiting client looks again at a script that is announced but
/// not started (it waits for workers to leave their batches, or for shards).
const NOT_STARTED_RECHECK: Duration = Duration::from_millis(5);

/// Redis 7.0's reply to commands sent while a script is past the threshold.
pub const BUSY: &str = "BUSY Redis is busy running a script. You can only call SCRIPT KILL or SHUTDOWN NOSAVE.";
/// The same while a function (FCALL) runs.
pub const BUSY_FUNCTION: &str =
    "BUSY Redis is busy running a script. You can only call FUNCTION KILL or SHUTDOWN NOSAVE.";
pub const NOTBUSY: &str = "NOTBUSY No scripts in execution right now.";
pub const UNKILLABLE: &str = "UNKILLABLE Sorry the script already executed write commands against the dataset. \
You can either wait the script termination or kill the server in a hard way using the SHUTDOWN NOSAVE command.";
/// The error a killed script ends with (the Lua error's text).
pub const KILLED: &str = "Script killed by user with SCRIPT KILL...";

/// The running script's state (at most one script runs at a time: it holds every shard).
#[derive(Debug, Default)]
pub struct Busy {
    /// Monotonic ms when the running script started, 0 when none runs.
    started_ms: AtomicU64,
    /// SCRIPT KILL asked the running script to stop.
    kill: AtomicBool,
    /// The running script called a write command (it can no longer be killed).
    wrote: AtomicBool,
    /// Woken when a script starts or ends.
    changed: Notify,
    /// The running function's name and command (FCALL), None for EVAL.
    function: parking_lot::Mutex<Option<RunningFunction>>,
    /// Whether the running script is a function (read without the mutex).
    is_function: AtomicBool,
}

/// What FUNCTION STATS shows of a running function.
#[derive(Debug, Clone)]
pub struct RunningFunction {
    pub name: String,
    pub command: Vec<Vec<u8>>,
}

/// Why SCRIPT KILL failed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum KillRefused {
    NotBusy,
    Unkillable,
    /// SCRIPT KILL while a function runs, or FUNCTION KILL while EVAL does:
    /// the BUSY reply of what runs.
    OtherKind(&'static str),
}

impl KillRefused {
    pub fn message(self) -> &'static str {
        match self {
            KillRefused::NotBusy => NOTBUSY,
            KillRefused::Unkillable => UNKILLABLE,
            KillRefused::OtherKind(busy) => busy,
        }
    }
}

impl Busy {
    /// Whether a script is running (the dispatcher's per-command check).
    #[inline]
    pub fn is_running(&self) -> bool {
        self.started_ms.load(Ordering::Relaxed) != 0
    }

    /// A script starts (its caller holds every shard).
    pub fn begin(&self) {
        self.kill.store(false, Ordering::SeqCst);
        self.wrote.store(false, Ordering::SeqCst);
        self.started_ms.store(cairn_engine::clock::monotonic_now_ms().max(1), Ordering::SeqCst);
        self.changed.notify_waiters();
    }

    /// The script ended. Its shards and its announcement are still held, so
    /// the clients woken here find it announced but not running and look
    /// again every [`NOT_STARTED_RECHECK`]; the code that drops the
    /// announcement wakes them once more ([`Busy::notify_changed`]). This
    /// wake-up is the safety net when that code does not run (a panic
    /// unwinding the script): a client waiting with `busy-reply-threshold` 0
    /// would otherwise wait for a notification that never comes.
    pub fn end(&self) {
        *self.function.lock() = None;
        self.is_function.store(false, Ordering::SeqCst);
        self.started_ms.store(0, Ordering::SeqCst);
        self.kill.store(false, Ordering::SeqCst);
        self.changed.notify_waiters();
    }

    /// Wakes the clients waiting in [`Busy::wait`] to look again.
    pub fn notify_changed(&self) {
        self.changed.notify_waiters();
    }

    /// How long the running script has run, if one runs.
    pub fn running_for_ms(&self) -> Option<u64> {
        match self.started_ms.load(Ordering::SeqCst) {
            0 => None,
            started => Some(cairn_engine::clock::monotonic_now_ms().saturating_sub(started)),
        }
    }

    /// Whether the running script has run past `threshold_ms` (0: never).
    pub fn past_threshold(&self, threshold_ms: u64) -> bool {
        threshold_ms != 0 && self.running_for_ms().is_some_and(|ran| ran >= threshold_ms)
    }

    pub fn note_write(&self) {
        self.wrote.store(true, Ordering::Relaxed);
    }

    /// Whether SCRIPT KILL asked the running script to stop.
    #[inline]
    pub fn kill_requested(&self) -> bool {
        self.kill.load(Ordering::Relaxed)
    }

    /// The BUSY reply while the running script runs (EVAL's or FCALL's).
    pub fn busy_message(&self) -> &'static str {
        if self.is_function.load(Ordering::SeqCst) {
            BUSY_FUNCTION
        } else {
            BUSY
        }
    }

    /// The running function, if a function (not EVAL) runs.
    pub fn running_function(&self) -> Option<(RunningFunction, u64)> {
        let function = self.function.lock().clone()?;
        Some((function, self.running_for_ms()?))
    }

    /// Whether an EVAL-family script (not a function) is running.
    pub fn eval_running(&self) -> bool {
        self.is_running() && !self.is_function.load(Ordering::SeqCst)
    }

    /// SCRIPT KILL (`function` false) or FUNCTION KILL (true).
    pub fn kill(&self, function: bool) -> Result<(), KillRefused> {
        if !self.is_running() {
            return Err(KillRefused::NotBusy);
        }
        if self.wrote.load(Ordering::SeqCst) {
            return Err(KillRefused::Unkillable);
        }
        if self.is_function.load(Ordering::SeqCst) != function {
            return Err(KillRefused::OtherKind(self.busy_message()));
        }
        self.kill.store(true, Ordering::SeqCst);
        Ok(())
    }

    /// SHUTDOWN: stops the running script even if it wrote (its writes so far
    /// are logged, as a script that fails midway).
    pub fn force_kill(&self) {
        if self.is_running() {
            self.kill.store(true, Ordering::SeqCst);
        }
    }

    /// Waits until no script is pending, or the running one has run past the
    /// threshold (read from `threshold_ms` each time: CONFIG SET may change it).
    pub async fn wait(&self, quiesce: &Quiesce, threshold_ms: &AtomicU64) {
        loop {
            let notified = self.changed.notified();
            tokio::pin!(notified);
            notified.as_mut().enable();
            if !quiesce.script_pending() {
                return;
            }
            let threshold = threshold_ms.load(Ordering::Relaxed);
            let nap = match (self.running_for_ms(), threshold) {
                (None, _) => Some(NOT_STARTED_RECHECK),
                (Some(_), 0) => None,
                (Some(ran), threshold) if ran >= threshold => return,
                (Some(ran), threshold) => Some(Duration::from_millis(threshold - ran)),
            };
            match nap {
                None => notified.await,
                Some(nap) => {
                    tokio::select! {
                        _ = notified => {}
                        _ = tokio::time::sleep(nap) => {}
                    }
                }
            }
        }
    }
}

/// Ends the script however its run ends (a panic included).
pub struct Running<'a>(pub &'a Busy);

impl<'a> Running<'a> {
    /// A script starts; `function`: the function FCALL runs (None: EVAL).
    pub fn start(busy: &'a Busy, function: Option<RunningFunction>) -> Self {
        busy.is_function.store(function.is_some(), Ordering::SeqCst);
        *busy.function.lock() = function;
        busy.begin();
        Running(busy)
    }
}

impl Drop for Running<'_> {
    fn drop(&mut self) {
        self.0.end();
    }
}

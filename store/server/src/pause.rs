//! CLIENT PAUSE / UNPAUSE (Redis 7.0's `pauseClients`).
//!
//! A pause has a mode, `WRITE` (commands that write or may replicate, EXEC
//! of a transaction holding one, scripts not declared `no-writes`) or `ALL`
//! (every command), and an end time; a second pause keeps the stricter mode
//! and the later end. While paused, a connection stops its batch before the
//! first affected command (after its arity check: malformed commands are
//! answered at once) and waits in [`ClientPause::wait`] until the pause ends,
//! then runs it; waiting clients count in INFO `blocked_clients`. Queuing
//! inside MULTI is not paused, EXEC is. Active expiry and eviction stop, and
//! keys found expired read as absent but are not deleted, so no write
//! happens during a pause (the engine's `KeyEvents::pause_expiry`).
//!
//! Cost while not paused: one relaxed load per command.

use std::sync::atomic::{AtomicU64, AtomicU8, AtomicUsize, Ordering};
use std::time::Duration;

use tokio::sync::Notify;

use crate::commands::{is, table};

/// Longest a waiting client sleeps before it looks at the clock again (a
/// pause also ends by its timeout, which nothing signals).
const RECHECK: Duration = Duration::from_millis(10);

/// What a pause stops.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum PauseMode {
    Write = 1,
    All = 2,
}

/// The server's pause state.
#[derive(Debug)]
pub struct ClientPause {
    /// 0: none, else a [`PauseMode`].
    mode: AtomicU8,
    /// Wall-clock ms when the pause ends.
    until_ms: AtomicU64,
    /// Clients waiting for the pause to end (INFO `blocked_clients`).
    waiting: AtomicUsize,
    ended: Notify,
    /// Serializes PAUSE and UNPAUSE (the readers take no lock).
    changes: parking_lot::Mutex<()>,
    /// Where the keyspace learns that expiry is paused.
    expiry: std::sync::Arc<cairn_engine::events::KeyEvents>,
}

impl ClientPause {
    /// No pause; `expiry` is the keyspace's, told when expiry pauses.
    pub fn new(expiry: std::sync::Arc<cairn_engine::events::KeyEvents>) -> Self {
        ClientPause {
            mode: AtomicU8::new(0),
            until_ms: AtomicU64::new(0),
            waiting: AtomicUsize::new(0),
            ended: Notify::new(),
            changes: parking_lot::Mutex::new(()),
            expiry,
        }
    }

    /// Pauses until `until_ms` in `mode`, or extends the pause in force
    /// (stricter mode, later end).
    pub fn pause(&self, mode: PauseMode, until_ms: u64, now_ms: u64) {
        let _change = self.changes.lock();
        let (mode, until_ms) = match self.mode(now_ms) {
            Some(current) => (mode.max(current), until_ms.max(self.until_ms.load(Ordering::Acquire))),
            None => (mode, until_ms),
        };
        self.until_ms.store(until_ms, Ordering::Release);
        self.mode.store(mode as u8, Ordering::Release);
        self.expiry.pause_expiry_until(until_ms);
    }

    /// CLIENT UNPAUSE.
    pub fn unpause(&self) {
        let _change = self.changes.lock();
        self.mode.store(0, Ordering::Release);
        self.until_ms.store(0, Ordering::Release);
        self.expiry.pause_expiry_until(0);
        self.ended.notify_waiters();
    }

    /// The mode of the pause in force at `now_ms`, if any (one relaxed load
    /// when none was ever set).
    #[inline]
    pub fn mode(&self, now_ms: u64) -> Option<PauseMode> {
        match self.mode.load(Ordering::Relaxed) {
            0 => None,
            _ if self.until_ms.load(Ordering::Acquire) <= now_ms => None,
            1 => Some(PauseMode::Write),
            _ => Some(PauseMode::All),
        }
    }

    /// Whether anything is paused now (writes at least: expiry and eviction stop).
    pub fn is_paused(&self) -> bool {
        self.mode(cairn_engine::clock::now_ms()).is_some()
    }

    /// Clients waiting for the pause to end.
    pub fn waiting(&self) -> usize {
        self.waiting.load(Ordering::Relaxed)
    }

    /// Waits until the pause no longer holds a command that a write pause
    /// holds when `held_by_write` (an `ALL` pause holds every command).
    pub async fn wait(&self, held_by_write: bool) {
        self.waiting.fetch_add(1, Ordering::Relaxed);
        loop {
            let ended = self.ended.notified();
            let held = match self.mode(cairn_engine::clock::now_ms()) {
                None => false,
                Some(PauseMode::Write) => held_by_write,
                Some(PauseMode::All) => true,
            };
            if !held {
                break;
            }
            let _ = tokio::time::timeout(RECHECK, ended).await;
        }
        self.waiting.fetch_sub(1, Ordering::Relaxed);
    }
}

/// Before a connection runs `args`: `Some(held_by_write)` when a pause
/// holds it now, so the batch stops there and waits (see
/// [`ClientPause::wait`]). Unknown and malformed commands are not held:
/// their errors go out at once.
#[inline]
pub fn gate(ctx: &crate::commands::Ctx<'_>, args: &[&[u8]]) -> Option<bool> {
    let mode = ctx.server.pause.mode(ctx.now_ms)?;
    let index = table::lookup(args[0])?;
    if !table::spec(index).arity_ok(args.len()) {
        return None;
    }
    let by_write = held_by_write(ctx.client, index, args) && !resolves_to_no_writes(ctx.server, args);
    (mode == PauseMode::All || by_write).then_some(by_write)
}

/// EVALSHA of a cached script whose shebang declares `no-writes`, or FCALL
/// of a `no-writes` function: what the command names, not its text, says
/// it cannot write (so a write pause lets it run, as Redis).
fn resolves_to_no_writes(server: &crate::server::Server, args: &[&[u8]]) -> bool {
    let Some(target) = args.get(1) else { return false };
    if is(args[0], "evalsha") {
        let Some(body) = server.scripting.cache.get(target).map(|cached| cached.body) else { return false };
        return matches!(crate::scripting::shebang::parse(&body), Ok(Some(s)) if s.no_writes);
    }
    if is(args[0], "fcall") {
        let registry = server.scripting.libraries.read();
        return registry.function(target).is_some_and(|(_, f)| f.flags & crate::scripting::library::NO_WRITES != 0);
    }
    false
}

/// Whether a write pause holds the command `args` (already looked up as
/// `index`, arity checked) that `client` is about to run: false while it is
/// queued inside MULTI; EXEC by what it queued.
pub fn held_by_write(client: &crate::client::Client, index: usize, args: &[&[u8]]) -> bool {
    let control = table::spec(index).flags & table::TXN_CONTROL != 0;
    match &client.multi {
        Some(_) if !control => false,
        Some(multi) => holds(Some(PauseMode::Write), index, args, multi.queued.iter().any(|q| queued_writes(q))),
        None => holds(Some(PauseMode::Write), index, args, false),
    }
}

/// Whether a queued command writes or may replicate.
fn queued_writes(argv: &[Vec<u8>]) -> bool {
    let Some(index) = argv.first().and_then(|name| table::lookup(name)) else { return false };
    let args: Vec<&[u8]> = argv.iter().map(Vec::as_slice).collect();
    holds(Some(PauseMode::Write), index, &args, false)
}

/// Whether a pause in `mode` holds command `index` with arguments `args`;
/// `queued_writes`: inside EXEC's decision, whether the transaction queued a
/// command that writes or may replicate.
pub fn holds(mode: Option<PauseMode>, index: usize, args: &[&[u8]], queued_writes: bool) -> bool {
    match mode {
        None => false,
        Some(PauseMode::All) => true,
        Some(PauseMode::Write) => {
            let spec = table::spec(index);
            if spec.name == "exec" {
                return queued_writes;
            }
            if spec.runs_script() {
                return !declares_no_writes(spec.name, args);
            }
            writes_or_replicates(index)
        }
    }
}

/// Whether command `index` writes or may replicate (Redis's `write` and
/// `may_replicate` flags).
pub fn writes_or_replicates(index: usize) -> bool {
    table::spec(index).flags & table::WRITE != 0 || table::may_replicate(index)
}

/// A read-only script command (EVAL_RO, ...), or EVAL of a body whose
/// shebang declares `flags=no-writes`.
fn declares_no_writes(name: &str, args: &[&[u8]]) -> bool {
    if name.ends_with("_ro") {
        return true;
    }
    if !is(args[0], "eval") {
        return false;
    }
    let Some(body) = args.get(1) else { return false };
    let first_line = body.split(|&b| b == b'\n').next().unwrap_or_default();
    let Some(shebang) = first_line.strip_prefix(b"#!") else { return false };
    let text = String::from_utf8_lossy(shebang);
    text.split_whitespace()
        .filter_map(|word| word.strip_prefix("flags="))
        .any(|flags| flags.split(',').any(|f| f == "no-writes"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn index(name: &str) -> usize {
        table::lookup(name.as_bytes()).expect("a command")
    }

    #[test]
    fn a_write_pause_holds_writes_scripts_and_writing_transactions_only() {
        let write = Some(PauseMode::Write);
        assert!(holds(write, index("set"), &[b"set", b"k", b"v"], false));
        assert!(holds(write, index("publish"), &[b"publish", b"c", b"m"], false), "may replicate");
        assert!(!holds(write, index("get"), &[b"get", b"k"], false));
        assert!(holds(write, index("exec"), &[b"exec"], true));
        assert!(!holds(write, index("exec"), &[b"exec"], false));
        assert!(holds(write, index("eval"), &[b"eval", b"return 1", b"0"], false));
        assert!(!holds(write, index("eval"), &[b"eval", b"#!lua flags=no-writes\nreturn 1", b"0"], false));
        assert!(!holds(write, index("eval_ro"), &[b"eval_ro", b"return 1", b"0"], false));
        assert!(holds(Some(PauseMode::All), index("get"), &[b"get", b"k"], false));
        assert!(!holds(None, index("set"), &[b"set", b"k", b"v"], false));
    }

    #[test]
    fn pauses_keep_the_stricter_mode_and_the_later_end() {
        let pause = ClientPause::new(Default::default());
        assert_eq!(pause.mode(100), None);
        pause.pause(PauseMode::All, 1_000, 100);
        pause.pause(PauseMode::Write, 2_000, 200);
        assert_eq!(pause.mode(1_500), Some(PauseMode::All));
        assert_eq!(pause.mode(2_000), None, "ended");
        // A pause after the last one ended starts afresh.
        pause.pause(PauseMode::Write, 3_000, 2_500);
        assert_eq!(pause.mode(2_600), Some(PauseMode::Write));
        pause.unpause();
        assert_eq!(pause.mode(2_600), None);
    }
}

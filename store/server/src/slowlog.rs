//! SLOWLOG: the commands that ran longer than `slowlog-log-slower-than` µs,
//! newest first, at most `slowlog-max-len` of them (Redis's slowlog.c).
//!
//! The dispatcher times every command already (INFO commandstats); after
//! one, [`SlowLog::threshold_us`] (one relaxed load) decides whether it is
//! logged. Only a logged command takes the log's lock. As in Redis, an entry
//! keeps at most [`MAX_ARGS`] arguments of at most [`MAX_ARG_BYTES`] bytes
//! (the rest summarized), credentials are `(redacted)`, and commands that
//! Redis's table marks `skip_slowlog` (EXEC: its commands are logged one by
//! one) are never logged. A command that blocks is logged when it is served
//! or unblocked (`blocking::Waiter`), not when it blocks.

use std::collections::VecDeque;
use std::sync::atomic::{AtomicI64, AtomicU64, AtomicUsize, Ordering};
use std::sync::OnceLock;

use parking_lot::Mutex;

use crate::commands::{meta, table};

/// Arguments kept per entry; the last one says how many more there were.
pub const MAX_ARGS: usize = 32;
/// Bytes kept per argument; the rest is summarized.
pub const MAX_ARG_BYTES: usize = 128;

/// One logged command.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Entry {
    pub id: u64,
    /// Unix time, seconds, when it was logged.
    pub time_secs: u64,
    pub duration_us: u64,
    pub args: Vec<Vec<u8>>,
    /// `ip:port` of the client.
    pub peer: String,
    /// CLIENT SETNAME's name, or empty.
    pub client_name: Vec<u8>,
}

/// The server's slow log.
#[derive(Debug)]
pub struct SlowLog {
    /// `slowlog-log-slower-than`: µs; negative turns logging off.
    threshold_us: AtomicI64,
    /// `slowlog-max-len`.
    max_len: AtomicUsize,
    next_id: AtomicU64,
    entries: Mutex<VecDeque<Entry>>,
}

impl Default for SlowLog {
    fn default() -> Self {
        SlowLog {
            threshold_us: AtomicI64::new(10_000),
            max_len: AtomicUsize::new(128),
            next_id: AtomicU64::new(0),
            entries: Mutex::new(VecDeque::new()),
        }
    }
}

/// A command about to be logged.
pub struct Logged<'a> {
    pub args: &'a [&'a [u8]],
    pub duration_us: u64,
    pub peer: String,
    pub client_name: Vec<u8>,
}

impl<'a> Logged<'a> {
    /// `args`, run by the client behind `handle` in `duration_us`.
    pub fn by(handle: &crate::client::ClientHandle, args: &'a [&'a [u8]], duration_us: u64) -> Logged<'a> {
        let client_name = handle.name.lock().clone().unwrap_or_default();
        Logged { args, duration_us, peer: handle.addr.to_string(), client_name }
    }
}

impl SlowLog {
    /// Applies CONFIG SET `slowlog-log-slower-than`.
    pub fn set_threshold_us(&self, us: i64) {
        self.threshold_us.store(us, Ordering::Relaxed);
    }

    /// Applies CONFIG SET `slowlog-max-len`, dropping the oldest entries over it.
    pub fn set_max_len(&self, len: usize) {
        self.max_len.store(len, Ordering::Relaxed);
        self.entries.lock().truncate(len);
    }

    /// Whether a command of `index` that took `duration_us` is logged.
    #[inline]
    pub fn wants(&self, index: usize, duration_us: u64) -> bool {
        let threshold = self.threshold_us.load(Ordering::Relaxed);
        threshold >= 0 && duration_us >= threshold as u64 && !skipped(index)
    }

    /// Logs a command (see [`SlowLog::wants`]).
    pub fn record(&self, command: Logged<'_>) {
        let entry = Entry {
            id: self.next_id.fetch_add(1, Ordering::Relaxed),
            time_secs: cairn_engine::clock::now_ms() / 1000,
            duration_us: command.duration_us,
            args: trimmed_args(command.args),
            peer: command.peer,
            client_name: command.client_name,
        };
        let max_len = self.max_len.load(Ordering::Relaxed);
        let mut entries = self.entries.lock();
        entries.push_front(entry);
        entries.truncate(max_len);
    }

    /// The newest `count` entries (all of them for `None`), newest first.
    pub fn newest(&self, count: Option<usize>) -> Vec<Entry> {
        let entries = self.entries.lock();
        entries.iter().take(count.unwrap_or(usize::MAX)).cloned().collect()
    }

    pub fn len(&self) -> usize {
        self.entries.lock().len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    pub fn reset(&self) {
        self.entries.lock().clear();
    }
}

/// The arguments as an entry keeps them (Redis's `slowlogCreateEntry`).
fn trimmed_args(args: &[&[u8]]) -> Vec<Vec<u8>> {
    let kept = args.len().min(MAX_ARGS);
    (0..kept)
        .map(|i| {
            if kept != args.len() && i == kept - 1 {
                format!("... ({} more arguments)", args.len() - kept + 1).into_bytes()
            } else if crate::redact::is_secret(args, i) {
                b"(redacted)".to_vec()
            } else {
                trimmed(args[i])
            }
        })
        .collect()
}

fn trimmed(arg: &[u8]) -> Vec<u8> {
    if arg.len() <= MAX_ARG_BYTES {
        return arg.to_vec();
    }
    let mut kept = arg[..MAX_ARG_BYTES].to_vec();
    kept.extend_from_slice(format!("... ({} more bytes)", arg.len() - MAX_ARG_BYTES).as_bytes());
    kept
}

/// Whether Redis's command table marks command `index` `skip_slowlog`.
fn skipped(index: usize) -> bool {
    static SKIPPED: OnceLock<Vec<bool>> = OnceLock::new();
    SKIPPED.get_or_init(|| table::all().iter().map(|spec| meta::has_flag(spec.name, "skip_slowlog")).collect())[index]
}

#[cfg(test)]
mod tests {
    use super::*;

    fn logged<'a>(args: &'a [&'a [u8]]) -> Logged<'a> {
        Logged { args, duration_us: 5, peer: "127.0.0.1:1".into(), client_name: Vec::new() }
    }

    #[test]
    fn keeps_the_newest_entries_up_to_the_limit() {
        let log = SlowLog::default();
        log.set_max_len(2);
        for key in [b"a", b"b", b"c"] {
            log.record(logged(&[b"GET", key]));
        }
        let newest = log.newest(None);
        assert_eq!(newest.iter().map(|e| e.id).collect::<Vec<_>>(), [2, 1]);
        assert_eq!(newest[0].args, [b"GET".to_vec(), b"c".to_vec()]);
        assert_eq!(log.newest(Some(1)).len(), 1);
        log.set_max_len(1);
        assert_eq!(log.len(), 1);
        log.reset();
        assert!(log.is_empty());
    }

    #[test]
    fn long_commands_and_arguments_are_summarized_and_credentials_hidden() {
        let many: Vec<Vec<u8>> = (0..35).map(|i| i.to_string().into_bytes()).collect();
        let args: Vec<&[u8]> = many.iter().map(Vec::as_slice).collect();
        let kept = trimmed_args(&args);
        assert_eq!(kept.len(), MAX_ARGS);
        assert_eq!(kept[31], b"... (4 more arguments)");
        let long = vec![b'A'; 129];
        assert_eq!(trimmed(&long), [vec![b'A'; 128], b"... (1 more bytes)".to_vec()].concat());
        assert_eq!(trimmed_args(&[b"AUTH", b"pw"]), [b"AUTH".to_vec(), b"(redacted)".to_vec()]);
    }

    #[test]
    fn a_negative_threshold_turns_logging_off() {
        let log = SlowLog::default();
        let get = table::lookup(b"get").expect("GET");
        assert!(!log.wants(get, 9_999) && log.wants(get, 10_000));
        log.set_threshold_us(-1);
        assert!(!log.wants(get, u64::MAX));
        log.set_threshold_us(0);
        assert!(log.wants(get, 0));
        assert!(!log.wants(table::lookup(b"exec").expect("EXEC"), 1_000_000), "skip_slowlog");
    }
}

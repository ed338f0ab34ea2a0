//! MONITOR: connections that watch every command the server runs.
//!
//! - [`Monitors`] (one per server) holds the watching connections' queues;
//!   a queue is a pub/sub [`Subscriber`] (bytes plus a wake-up), which the
//!   connection loop already drains while idle and after each batch.
//! - [`feed`] formats a command as Redis does,
//!   `+1733400000.123456 [0 127.0.0.1:50000] "set" "k" "v"`, and queues it to
//!   every monitor. Commands a script runs show `[db lua]`.
//!
//! What is shown follows Redis 7.0 (`call()` and `replicationFeedMonitors`):
//! every command that reached its handler, error replies included; not the
//! ones refused before (unknown, wrong arity, not authenticated, ...), nor
//! administrative ones (`admin` or `skip_monitor` in Redis's command table:
//! CONFIG, DEBUG, CLIENT KILL, ...), nor commands replayed from the log.
//! AUTH's and HELLO's credentials are shown as `(redacted)`.
//!
//! Cost while nobody monitors: one relaxed load per command.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, OnceLock};

use parking_lot::RwLock;

use crate::client::Origin;
use crate::commands::{meta, table, Ctx};
use crate::pubsub::Subscriber;

/// The server's monitoring connections.
#[derive(Debug, Default)]
pub struct Monitors {
    count: AtomicUsize,
    queues: RwLock<Vec<Arc<Subscriber>>>,
}

impl Monitors {
    /// Whether any connection monitors (one relaxed load).
    #[inline]
    pub fn active(&self) -> bool {
        self.count.load(Ordering::Relaxed) > 0
    }

    /// Starts feeding `queue`.
    pub fn add(&self, queue: Arc<Subscriber>) {
        let mut queues = self.queues.write();
        queues.push(queue);
        self.count.store(queues.len(), Ordering::Relaxed);
    }

    /// Stops feeding the queue of client `id` (its connection ended).
    pub fn remove(&self, id: u64) {
        let mut queues = self.queues.write();
        queues.retain(|q| q.handle.id != id);
        self.count.store(queues.len(), Ordering::Relaxed);
    }

    fn send(&self, line: &[u8]) {
        for queue in self.queues.read().iter() {
            queue.deliver(line);
        }
    }
}

/// Shows command `index` (arguments `args`) to the monitors, if it is one
/// Redis shows. Call only when [`Monitors::active`].
pub fn feed(ctx: &Ctx<'_>, index: usize, args: &[&[u8]]) {
    // Scripts are `skip_monitor` in Redis's table, but EVAL and its kin
    // show themselves before the commands they run.
    let script = table::spec(index).runs_script();
    let slot = ctx.client.handle.last_subcommand.load(std::sync::atomic::Ordering::Relaxed);
    if ctx.client.origin == Origin::Internal || !(script || shown(index, slot)) {
        return;
    }
    let source = match ctx.client.origin {
        Origin::Script => "lua".to_string(),
        _ => ctx.client.handle.addr.to_string(),
    };
    let line = format_line(cairn_engine::clock::now_us(), ctx.client.db, &source, args);
    ctx.server.monitors.send(&line);
}

/// One monitor line: `+secs.micros [db source] "arg" ...\r\n`, credentials redacted.
pub fn format_line(now_us: u64, db: usize, source: &str, args: &[&[u8]]) -> Vec<u8> {
    let mut line = format!("+{}.{:06} [{} {}]", now_us / 1_000_000, now_us % 1_000_000, db, source).into_bytes();
    for (i, arg) in args.iter().enumerate() {
        line.push(b' ');
        if crate::redact::is_secret(args, i) {
            quote_into(&mut line, b"(redacted)");
        } else {
            quote_into(&mut line, arg);
        }
    }
    line.extend_from_slice(b"\r\n");
    line
}

/// Appends `bytes` quoted as Redis's `sdscatrepr` does.
fn quote_into(out: &mut Vec<u8>, bytes: &[u8]) {
    out.push(b'"');
    for &b in bytes {
        match b {
            b'\\' => out.extend_from_slice(b"\\\\"),
            b'"' => out.extend_from_slice(b"\\\""),
            b'\n' => out.extend_from_slice(b"\\n"),
            b'\r' => out.extend_from_slice(b"\\r"),
            b'\t' => out.extend_from_slice(b"\\t"),
            0x07 => out.extend_from_slice(b"\\a"),
            0x08 => out.extend_from_slice(b"\\b"),
            0x20..=0x7e => out.push(b),
            _ => out.extend_from_slice(format!("\\x{b:02x}").as_bytes()),
        }
    }
    out.push(b'"');
}

/// Whether Redis shows command `index` (for a container, its subcommand
/// `slot`, as the dispatcher recorded it: see `table::subcommand_slot`).
fn shown(index: usize, slot: u8) -> bool {
    if table::spec(index).flags & table::SUBCOMMANDS != 0 && slot != 0 {
        return !hidden(table::full_name(index, slot));
    }
    static HIDDEN: OnceLock<Vec<bool>> = OnceLock::new();
    !HIDDEN.get_or_init(|| table::all().iter().map(|spec| hidden(spec.name)).collect())[index]
}

/// Whether Redis's command table keeps `name` out of MONITOR.
fn hidden(name: &str) -> bool {
    meta::has_flag(name, "admin") || meta::has_flag(name, "skip_monitor")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_are_formatted_and_quoted_as_redis_does() {
        let line = format_line(1_733_400_000_000_042, 3, "127.0.0.1:5000", &[b"set", b"k\"\\", b"a\r\n\x01 b"]);
        assert_eq!(
            String::from_utf8(line).expect("ascii"),
            "+1733400000.000042 [3 127.0.0.1:5000] \"set\" \"k\\\"\\\\\" \"a\\r\\n\\x01 b\"\r\n"
        );
    }

    #[test]
    fn credentials_are_redacted() {
        let auth = format_line(0, 0, "lua", &[b"AUTH", b"user", b"pass"]);
        assert!(String::from_utf8_lossy(&auth).ends_with("\"AUTH\" \"(redacted)\" \"(redacted)\"\r\n"));
        let hello = format_line(0, 0, "lua", &[b"hello", b"2", b"auth", b"u", b"p", b"setname", b"x"]);
        assert!(String::from_utf8_lossy(&hello)
            .ends_with("\"hello\" \"2\" \"auth\" \"(redacted)\" \"(redacted)\" \"setname\" \"x\"\r\n"));
    }
}

//! Commands run by a caller that already knows which command it runs and
//! writes the reply in its own format: the native protocol's typed
//! operations (`native/typed.rs`). They skip what only a RESP request needs
//! (an argv, the name lookup, a RESP reply to translate) but keep everything
//! the dispatcher records, so INFO, CLIENT LIST and the metrics cannot tell
//! the two paths apart.
//!
//! The shortcut is taken only for a client in the plain state
//! ([`shortcut_allowed`]): where [`super::dispatch`] would do more than check
//! arity, run the handler and count (authentication pending, an ACL user to
//! check, `min-replicas-to-write` set, MULTI, CLIENT
//! REPLY OFF/SKIP, RESP2 pub/sub, loading, a script pending), the caller takes
//! the generic path instead.

use std::sync::atomic::Ordering;
use std::sync::OnceLock;

use crate::client::{Client, ReplyMode};
use crate::server::Server;
use crate::stats::WorkerStats;

use super::table;
use super::timing::CommandClock;

/// Whether a command from `client` may take the shortcut now.
pub fn shortcut_allowed(server: &Server, client: &Client) -> bool {
    client.authenticated
        && client.user.is_unrestricted()
        && !server.runtime.lacks_good_replicas()
        && client.multi.is_none()
        && client.reply_mode == ReplyMode::On
        && (client.pubsub.is_none() || client.protocol != cairn_protocol::ProtocolVersion::Resp2)
        && !server.persistence.is_loading()
        && !server.scripting.script_pending()
}

/// The table index of GET, resolved once.
pub fn get_index() -> usize {
    static INDEX: OnceLock<usize> = OnceLock::new();
    *INDEX.get_or_init(|| table::lookup(b"get").expect("GET is in the command table"))
}

/// Records one run of command `index` exactly as the dispatcher does: the
/// client's last command, the command's calls and run time, the worker's
/// command count, and the error reply it gave (`error`: the reply's first
/// word, `WRONGTYPE`, ...), if any.
pub fn record_run(
    client: &Client,
    stats: &WorkerStats,
    clock: &mut CommandClock,
    index: usize,
    started: quanta::Instant,
    error: Option<&str>,
) {
    client.handle.last_command.store(index as u16, Ordering::Relaxed);
    let counters = &stats.per_command[index];
    counters.record_usec(clock.finish(started));
    counters.calls.add(1);
    stats.commands.add(1);
    if let Some(code) = error {
        stats.record_error(code);
        counters.failed.add(1);
    }
}

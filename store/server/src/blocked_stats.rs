//! What a command that blocks (BLPOP, BLMOVE, BZPOPMIN, XREAD BLOCK, ...)
//! counts in the statistics, and when, as Redis 7.0 keeps it (`call()` in
//! server.c, `updateStatsOnUnblock` in blocked.c):
//!
//! - when it blocks, the dispatcher counts a call and its µs (INFO
//!   commandstats, `total_commands_processed`) and, at or over
//!   `latency-monitor-threshold`, a `command` latency event, as for any
//!   command; not its latency histogram (INFO latencystats, LATENCY
//!   HISTOGRAM), not SLOWLOG ([`on_call`]);
//! - when it is served, or ended by CLIENT UNBLOCK, [`on_unblock`] adds its
//!   execution time, the µs it took when it blocked plus the µs serving it
//!   took (never the time it waited), to its µs (so Redis counts the
//!   block-time µs twice), its latency histogram and SLOWLOG; a failed call
//!   if it was served an error or unblocked (Redis 7.0 counts CLIENT UNBLOCK
//!   TIMEOUT as failed too); and a `command-unblocking` latency event when
//!   serving it took at least `latency-monitor-threshold`;
//! - when it times out, or its client goes away, nothing more.
//!
//! Redis 7.2 moved the call itself to the unblocking, and counts a timeout
//! there too; 7.0, the version Cairn follows, does not.

use crate::client::ClientHandle;
use crate::server::Server;
use crate::slowlog::Logged;
use crate::stats::{CommandCounters, WorkerStats};

/// The latency monitor's event for the time serving a blocked client took.
pub const UNBLOCKING_EVENT: &str = "command-unblocking";

/// Records a command that ran for `duration_us`: its µs, and its latency
/// histogram unless it `blocked` (then [`on_unblock`] records that).
#[inline]
pub fn on_call(counters: &CommandCounters, duration_us: u64, blocked: bool) {
    if blocked {
        counters.usec.add(duration_us);
    } else {
        counters.record_usec(duration_us);
    }
}

/// A blocked command that ended, served or by CLIENT UNBLOCK.
pub struct Unblocked<'a> {
    /// The client that ran it.
    pub client: &'a ClientHandle,
    /// Its arguments, its name first.
    pub args: &'a [Vec<u8>],
    /// µs it took when it blocked.
    pub call_us: u64,
    /// µs serving it took (0: CLIENT UNBLOCK).
    pub serve_us: u64,
    /// Whether it ended with an error reply (or by CLIENT UNBLOCK).
    pub failed: bool,
}

/// Redis's `updateStatsOnUnblock`, on the thread that ended the command
/// (`stats` is that thread's).
pub fn on_unblock(server: &Server, stats: &WorkerStats, ended: &Unblocked<'_>) {
    let Some(index) = ended.args.first().and_then(|name| crate::commands::table::lookup(name)) else { return };
    let total_us = ended.call_us.saturating_add(ended.serve_us);
    let counters = &stats.per_command[index];
    counters.record_usec(total_us);
    if ended.failed {
        counters.failed.add(1);
    }
    let slowlog = &server.runtime.slowlog;
    if slowlog.wants(index, total_us) {
        let args: Vec<&[u8]> = ended.args.iter().map(Vec::as_slice).collect();
        slowlog.record(Logged::by(ended.client, &args, total_us));
    }
    server.runtime.latency.observe(UNBLOCKING_EVENT, ended.serve_us);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_blocked_call_counts_its_usec_but_not_its_histogram() {
        let counters = CommandCounters::default();
        on_call(&counters, 5, true);
        assert_eq!(counters.usec.get(), 5);
        assert_eq!(counters.latency.iter().map(|b| b.get()).sum::<u64>(), 0);
        on_call(&counters, 5, false);
        assert_eq!(counters.usec.get(), 10);
        assert_eq!(counters.latency.iter().map(|b| b.get()).sum::<u64>(), 1);
    }
}

//! The sweep that lets idle connections give their buffers back.
//!
//! A connection's buffers belong to its task, which only runs when woken.
//! Rather than arm a timer on every wait for a request (a timer-wheel
//! registration, with its lock, per batch on the hot path), this sweep runs
//! every [`TUNE_EVERY_MS`] on the admin thread, off the workers: it reads the
//! sizes each connection published and wakes, through the connection's own
//! wake-up (the one CLIENT KILL uses, already polled at no cost), only those
//! with something to give back.
//!
//! Cost per tick: one lock of the sweep's list and a few relaxed loads per
//! member, nothing copied unless a connection is woken. The members are the
//! connections that have not given everything back ([`super::sweep_list`]):
//! the busy ones, the idle ones for their first seconds (the input buffer
//! goes after 2 s, the reply buffer once its peak reset, 5 s by default),
//! blocked ones and ones holding part of a request. A connection that gave
//! everything back has left the list, so 10,000 idle clients cost nothing
//! per tick; one that is woken but cannot tune yet (blocked) is not woken
//! twice.

use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;

use super::policy::ReplyBufferPolicy;
use super::sweep_list::SweepList;
use super::tuner::idle_needs_tune;
use super::TUNE_EVERY_MS;
use crate::client::ClientHandle;
use crate::server::Server;

/// Sweeps the clients every [`TUNE_EVERY_MS`] until the server stops.
pub async fn run(server: Arc<Server>) {
    crate::periodic::every(&server, Duration::from_millis(TUNE_EVERY_MS), || sweep(&server)).await;
}

/// Wakes each idle connection whose buffers can shrink.
pub fn sweep(server: &Server) {
    let now_ms = cairn_engine::clock::now_ms();
    for client in due(&server.clients.buffer_sweep, now_ms, &server.runtime.reply_buffer) {
        client.nudge();
    }
}

/// The members of `list` to wake at `now_ms`: idle, with something to give
/// back, and not already asked (each is marked as asked).
fn due(list: &SweepList, now_ms: u64, policy: &ReplyBufferPolicy) -> Vec<Arc<ClientHandle>> {
    list.picked(|client| {
        let idle_ms = now_ms.saturating_sub(client.last_interaction_ms.load(Ordering::Relaxed));
        !client.buffers.tidy_requested()
            && idle_needs_tune(&client.buffers.read(), idle_ms, now_ms, policy)
            && client.buffers.request_tidy()
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::client_buffers::{BufferTuner, ReplyGrowth, Tuning};
    use crate::stats::WorkerStats;

    fn handle(id: u64) -> Arc<ClientHandle> {
        let addr = std::net::SocketAddr::from(([127, 0, 0, 1], 6379));
        Arc::new(ClientHandle::new(id, addr, addr, -1, 0, 0))
    }

    fn ids(handles: &[Arc<ClientHandle>]) -> Vec<u64> {
        handles.iter().map(|h| h.id).collect()
    }

    /// A connection's buffers, tuned as its task would tune them.
    struct Connection {
        handle: Arc<ClientHandle>,
        tuner: BufferTuner,
        input: Vec<u8>,
        output: Vec<u8>,
    }

    impl Connection {
        fn start(id: u64, list: &SweepList, policy: &ReplyBufferPolicy, stats: &WorkerStats) -> Connection {
            let handle = handle(id);
            let t = Tuning { handle: &handle, sweep: list, policy, stats };
            let (tuner, input, output) = BufferTuner::start(0, ReplyGrowth::PerBatch, &t);
            Connection { handle, tuner, input, output }
        }

        /// What the task does when the sweep woke it.
        fn woken(&mut self, now_ms: u64, list: &SweepList, policy: &ReplyBufferPolicy, stats: &WorkerStats) {
            let t = Tuning { handle: &self.handle, sweep: list, policy, stats };
            let idle_ms = now_ms.saturating_sub(self.handle.last_interaction_ms.load(Ordering::Relaxed));
            self.tuner.tune_idle(now_ms, idle_ms, &mut self.input, &mut self.output, &t);
        }
    }

    #[test]
    fn idle_connections_are_woken_until_they_gave_everything_back_then_never_looked_at() {
        let list = SweepList::default();
        let policy = ReplyBufferPolicy::default();
        let stats = WorkerStats::new(0);
        let mut conns: Vec<Connection> = (1..=3).map(|id| Connection::start(id, &list, &policy, &stats)).collect();
        assert_eq!(list.len(), 3);
        // Busy (a command within the last 100 ms): nobody is woken.
        assert!(due(&list, 50, &policy).is_empty());
        let mut now = 0;
        let mut wakes = 0;
        while !list.is_empty() {
            now += TUNE_EVERY_MS;
            assert!(now <= 6_000, "still listed at {now} ms: {:?}", ids(&list.picked(|_| true)));
            let woken = due(&list, now, &policy);
            wakes += woken.len();
            for conn in conns.iter_mut().filter(|c| woken.iter().any(|w| w.id == c.handle.id)) {
                conn.woken(now, &list, &policy, &stats);
            }
        }
        for conn in &conns {
            assert_eq!((conn.input.capacity(), conn.output.capacity()), (0, crate::client_buffers::REPLY_MIN));
        }
        // Per connection: the peak's reset, the reply shrink, the input release.
        assert_eq!(wakes, 9);
        assert_eq!(stats.reply_buffer_shrinks.get(), 3);
        assert!(now >= 2_000, "the input buffers went after 2 s, not at {now} ms");
        // Nothing is looked at any more, however long they stay idle.
        assert!(due(&list, now + 60_000, &policy).is_empty());
    }

    #[test]
    fn a_connection_asked_and_not_yet_tuned_is_not_asked_again() {
        let list = SweepList::default();
        let policy = ReplyBufferPolicy::default();
        let stats = WorkerStats::new(0);
        let _blocked = Connection::start(1, &list, &policy, &stats);
        assert!(due(&list, 100, &policy).is_empty(), "nothing to give back yet");
        assert_eq!(ids(&due(&list, 2_000, &policy)), vec![1]);
        assert!(due(&list, 2_100, &policy).is_empty());
        assert!(due(&list, 9_000, &policy).is_empty());
        assert_eq!(list.len(), 1, "it stays listed: it still has buffers to give back");
    }

    #[test]
    fn a_closed_connection_leaves_the_list() {
        let registry = crate::client::ClientRegistry::default();
        let policy = ReplyBufferPolicy::default();
        let stats = WorkerStats::new(0);
        let conn = Connection::start(1, &registry.buffer_sweep, &policy, &stats);
        registry.register(conn.handle.clone());
        assert_eq!(registry.buffer_sweep.len(), 1);
        registry.unregister(1);
        assert!(registry.buffer_sweep.is_empty());
    }
}

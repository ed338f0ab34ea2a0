//! Group commit for threads that wait for their own records (the embedded
//! database's callers, [`Wal::sync_through`](super::Wal::sync_through)).
//!
//! At most one caller leads at a time: it runs a round (write everything
//! buffered, one fdatasync, publish the durable LSN) while the others park.
//! A caller that arrives while a round is in flight parks until a round
//! covers its record. When a round ends, its leader wakes every parked
//! caller the new durable LSN covers and hands the lead to one caller it
//! does not cover, which starts the next round at once; that round takes
//! everything buffered by then, so it covers every caller that parked
//! during the previous one (one fdatasync per round, not per caller).
//!
//! Every round that publishes a durable LSN, the background syncer's
//! included, wakes the parked callers it covers ([`Committers::wake`]).

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::thread::Thread;

use parking_lot::Mutex;

use super::record::Lsn;

/// A caller parked until its record is durable (or it is handed the lead).
#[derive(Debug)]
struct Parked {
    id: u64,
    lsn: Lsn,
    thread: Thread,
}

/// The leader flag and the parked callers.
#[derive(Debug, Default)]
pub(super) struct Committers {
    leading: AtomicBool,
    parked: Mutex<Vec<Parked>>,
    next_id: AtomicU64,
}

impl Committers {
    /// Becomes the leader unless a round is already led.
    pub(super) fn try_lead(&self) -> bool {
        self.leading.compare_exchange(false, true, Ordering::AcqRel, Ordering::Acquire).is_ok()
    }

    /// The leader's round is over: wakes the callers `durable` covers and
    /// one it does not cover, which will lead the next round.
    pub(super) fn end_lead(&self, durable: Lsn) {
        self.leading.store(false, Ordering::Release);
        self.wake(durable, true);
    }

    /// Whether a leader's round is in flight.
    pub(super) fn is_led(&self) -> bool {
        self.leading.load(Ordering::Acquire)
    }

    /// Wakes the parked callers whose records `durable` covers and, with
    /// `hand_over`, the first one it does not cover (lowest LSN). Wakes every
    /// one with `Lsn::MAX` (the log failed).
    pub(super) fn wake(&self, durable: Lsn, hand_over: bool) {
        let woken = self.take_woken(durable, hand_over);
        for parked in woken {
            parked.thread.unpark();
        }
    }

    fn take_woken(&self, durable: Lsn, hand_over: bool) -> Vec<Parked> {
        let mut parked = self.parked.lock();
        if parked.is_empty() {
            return Vec::new();
        }
        let next_leader = if hand_over {
            parked.iter().enumerate().filter(|(_, p)| p.lsn > durable).min_by_key(|(_, p)| p.lsn).map(|(i, _)| i)
        } else {
            None
        };
        let mut woken = Vec::new();
        // The next leader first: it starts the next round while the others wake.
        if let Some(i) = next_leader {
            woken.push(parked.swap_remove(i));
        }
        let mut i = 0;
        while i < parked.len() {
            if parked[i].lsn <= durable {
                woken.push(parked.swap_remove(i));
            } else {
                i += 1;
            }
        }
        woken
    }

    /// Registers this thread as waiting for `lsn`; returns its ticket for
    /// [`Committers::unregister`]. Register first, then check whether to
    /// park: a wake-up after the registration is never lost.
    pub(super) fn register(&self, lsn: Lsn) -> u64 {
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        self.parked.lock().push(Parked { id, lsn, thread: std::thread::current() });
        id
    }

    /// Forgets a registration (a no-op once a wake-up took it).
    pub(super) fn unregister(&self, id: u64) {
        let mut parked = self.parked.lock();
        if let Some(i) = parked.iter().position(|p| p.id == id) {
            parked.swap_remove(i);
        }
    }
}

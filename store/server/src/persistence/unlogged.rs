//! Writes in flight without the log, on a server that has never opened one
//! (started with `--durability none`).
//!
//! Such a write decides not to log before it takes its shards (there is no
//! log to decide with under them). When logging starts at runtime, the log
//! is installed and then every write that decided before is waited for, so
//! none of them can land after the cut of the snapshot that logging
//! continues from. The handshake is Dekker's, with sequentially consistent
//! fences on both sides:
//!
//! - a write counts itself in ([`UnloggedWrites::enter`]), then looks for
//!   the log; if it finds one it counts itself out and takes the logged path;
//! - logging installs the log, then waits until it has seen each stripe of
//!   the count at zero ([`UnloggedWrites::wait_for_none`]).
//!
//! Either the write sees the log, or logging sees the write and waits for
//! it. The count is striped by thread so workers do not share a cache line.

use std::sync::atomic::{fence, AtomicUsize, Ordering};
use std::time::Duration;

const STRIPES: usize = 16;

#[derive(Debug, Default)]
#[repr(align(128))]
struct Stripe(AtomicUsize);

/// The count of unlogged writes in flight (see the module docs).
#[derive(Debug, Default)]
pub struct UnloggedWrites {
    stripes: [Stripe; STRIPES],
}

/// One write counted in until dropped.
#[must_use]
pub struct InFlight<'a>(&'a AtomicUsize);

impl Drop for InFlight<'_> {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::SeqCst);
    }
}

thread_local! {
    static STRIPE: usize = {
        let mut hasher = std::hash::DefaultHasher::new();
        std::hash::Hash::hash(&std::thread::current().id(), &mut hasher);
        std::hash::Hasher::finish(&hasher) as usize % STRIPES
    };
}

impl UnloggedWrites {
    /// Counts a write in; the caller then looks for the log.
    pub fn enter(&self) -> InFlight<'_> {
        let stripe = &self.stripes[STRIPE.with(|s| *s)].0;
        stripe.fetch_add(1, Ordering::SeqCst);
        fence(Ordering::SeqCst);
        InFlight(stripe)
    }

    /// After the log is installed: waits until every write counted in before
    /// has finished.
    pub fn wait_for_none(&self) {
        fence(Ordering::SeqCst);
        for stripe in &self.stripes {
            while stripe.0.load(Ordering::SeqCst) != 0 {
                std::thread::sleep(Duration::from_micros(50));
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn waits_for_a_write_in_flight() {
        let writes = std::sync::Arc::new(UnloggedWrites::default());
        let done = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
        let (w, d) = (writes.clone(), done.clone());
        let (entered_tx, entered_rx) = std::sync::mpsc::channel();
        let writer = std::thread::spawn(move || {
            let _in = w.enter();
            entered_tx.send(()).ok();
            std::thread::sleep(Duration::from_millis(30));
            d.store(true, Ordering::SeqCst);
        });
        entered_rx.recv().ok();
        writes.wait_for_none();
        assert!(done.load(Ordering::SeqCst), "returned only after the write finished");
        writer.join().ok();
    }
}

//! Keeping worker threads off the shard locks a script holds.
//!
//! A script holds every shard for as long as it runs. A worker thread that
//! blocked on one of those locks would stall all its connections until the
//! script ends, SCRIPT KILL included (with one worker: forever). So a worker
//! never starts a command while a script is *pending*, and a script takes the
//! shard locks only once no worker is inside a batch of commands. The
//! handshake, with sequentially consistent operations on both sides:
//!
//! - a worker marks itself executing ([`Quiesce::enter`]) before it runs a
//!   batch of commands and checks [`Quiesce::script_pending`] before each
//!   command; while a script is pending it runs only commands that touch no
//!   data, waits for the script outside the batch, or answers -BUSY;
//! - a script announces itself ([`Quiesce::announce`]), then waits until it
//!   has seen every worker outside a batch ([`Quiesce::wait_for_workers`]),
//!   then takes the shard locks.
//!
//! Either the worker's check sees the announcement, or the script sees the
//! worker executing and waits for its batch to end. A script that runs on a
//! worker (`scripting::on_worker`) waits for the other workers, not its own;
//! only one worker at a time does so, else two would wait for each other.

use std::cell::Cell;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::Duration;

thread_local! {
    /// The flag this thread set for its batch in progress, if any.
    static MARKED: Cell<*const AtomicBool> = const { Cell::new(std::ptr::null()) };
}

/// One worker's "executing a batch" flag, on its own cache line: each worker
/// writes only its own.
#[derive(Debug, Default)]
#[repr(align(128))]
struct Slot(AtomicBool);

/// Scripts pending and the workers executing (see the module docs).
#[derive(Debug)]
pub struct Quiesce {
    pending: AtomicUsize,
    executing: Box<[Slot]>,
}

/// A worker inside a batch; it leaves when this is dropped.
#[must_use]
pub struct Executing<'a>(Option<&'a AtomicBool>);

impl Drop for Executing<'_> {
    fn drop(&mut self) {
        if let Some(flag) = self.0 {
            flag.store(false, Ordering::SeqCst);
            MARKED.set(std::ptr::null());
        }
    }
}

/// A script counted as pending until this is dropped.
#[must_use]
pub struct Announced<'a>(&'a Quiesce);

impl Drop for Announced<'_> {
    fn drop(&mut self) {
        self.0.pending.fetch_sub(1, Ordering::SeqCst);
    }
}

impl Quiesce {
    pub fn new(workers: usize) -> Quiesce {
        Quiesce { pending: AtomicUsize::new(0), executing: (0..workers).map(|_| Slot::default()).collect() }
    }

    /// Worker `worker` starts a batch (an index outside the workers, e.g. the
    /// embedded database's caller threads, marks nothing: those threads may
    /// block).
    pub fn enter(&self, worker: usize) -> Executing<'_> {
        let flag = self.executing.get(worker).map(|slot| &slot.0);
        if let Some(flag) = flag {
            flag.store(true, Ordering::SeqCst);
            MARKED.set(flag);
        }
        Executing(flag)
    }

    /// Whether a script is announced or running: checked before every command.
    #[inline]
    pub fn script_pending(&self) -> bool {
        self.pending.load(Ordering::SeqCst) != 0
    }

    /// A script is about to start.
    pub fn announce(&self) -> Announced<'_> {
        self.pending.fetch_add(1, Ordering::SeqCst);
        Announced(self)
    }

    /// Waits until each worker (but this thread's own) has been seen outside
    /// a batch since the announcement. Batches are short (a worker stops at
    /// its next command), so this spins briefly, then yields, then naps.
    pub fn wait_for_workers(&self) {
        for slot in self.executing.iter() {
            if std::ptr::eq(&slot.0, MARKED.get()) {
                // A short script running inside this worker's own batch
                // (scripting::on_worker): waiting for ourselves would never end.
                continue;
            }
            let mut tries = 0u32;
            while slot.0.load(Ordering::SeqCst) {
                tries += 1;
                match tries {
                    0..=64 => std::hint::spin_loop(),
                    65..=128 => std::thread::yield_now(),
                    _ => std::thread::sleep(Duration::from_micros(50)),
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;

    #[test]
    fn a_script_on_a_worker_thread_does_not_wait_for_itself() {
        let quiesce = Quiesce::new(1);
        let _batch = quiesce.enter(0);
        let _announced = quiesce.announce();
        quiesce.wait_for_workers();
    }

    #[test]
    fn a_worker_outside_its_slots_marks_nothing() {
        let quiesce = Quiesce::new(2);
        let outside = quiesce.enter(7);
        quiesce.wait_for_workers();
        drop(outside);
    }

    #[test]
    fn announcements_count_until_dropped() {
        let quiesce = Quiesce::new(1);
        assert!(!quiesce.script_pending());
        let first = quiesce.announce();
        let second = quiesce.announce();
        drop(first);
        assert!(quiesce.script_pending());
        drop(second);
        assert!(!quiesce.script_pending());
    }

    #[test]
    fn a_script_waits_for_a_batch_in_progress() {
        let quiesce = Arc::new(Quiesce::new(2));
        let batch = quiesce.enter(1);
        let _announced = quiesce.announce();
        let waiter = {
            let quiesce = quiesce.clone();
            std::thread::spawn(move || {
                quiesce.wait_for_workers();
                std::time::Instant::now()
            })
        };
        std::thread::sleep(Duration::from_millis(50));
        let batch_ended = std::time::Instant::now();
        drop(batch);
        let workers_quiet = waiter.join().expect("waiter");
        assert!(workers_quiet >= batch_ended, "the script went on while a batch ran");
    }
}

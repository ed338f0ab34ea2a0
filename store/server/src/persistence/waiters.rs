//! Connections waiting for their writes to become durable, by LSN. After
//! each sync the syncer wakes exactly the waiters its durable LSN covers
//! (waking every waiter on every sync costs the workers more than the sync
//! saves when many clients write at once).

use std::cell::Cell;
use std::collections::BTreeMap;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll, Wake, Waker};
use std::time::Instant;

use cairn_engine::durability::{Lsn, WalError};
use parking_lot::Mutex;

use super::Persistence;

#[derive(Debug, Default)]
struct Inner {
    next_id: u64,
    by_lsn: BTreeMap<(Lsn, u64), Waker>,
}

thread_local! {
    /// How many [`DurableWait`]s of this thread are registered and pending.
    static PENDING_HERE: Cell<u32> = const { Cell::new(0) };
}

/// How many writes this thread's connections are waiting on to become
/// durable (a worker about to sleep spins instead while this is non-zero:
/// see `busy_poll`).
pub fn pending_on_this_thread() -> u32 {
    PENDING_HERE.with(Cell::get)
}

/// Counts one pending wait on this thread while it lives (create and drop
/// it on the same thread).
#[derive(Debug)]
pub struct PendingHere(());

impl PendingHere {
    pub fn enter() -> PendingHere {
        PENDING_HERE.with(|n| n.set(n.get() + 1));
        PendingHere(())
    }
}

impl Drop for PendingHere {
    fn drop(&mut self) {
        PENDING_HERE.with(|n| n.set(n.get().saturating_sub(1)));
    }
}

/// The registry of waiters.
#[derive(Debug, Default)]
pub struct DurableWaiters {
    inner: Mutex<Inner>,
}

impl DurableWaiters {
    /// Wakes every waiter whose LSN is at most `durable`.
    pub fn wake_through(&self, durable: Lsn) {
        let woken = {
            let mut inner = self.inner.lock();
            let later = inner.by_lsn.split_off(&(durable.saturating_add(1), 0));
            std::mem::replace(&mut inner.by_lsn, later)
        };
        for waker in woken.into_values() {
            waker.wake();
        }
    }

    /// Wakes everyone (the log failed: they must see it).
    pub fn wake_all(&self) {
        let all = std::mem::take(&mut self.inner.lock().by_lsn);
        for waker in all.into_values() {
            waker.wake();
        }
    }

    fn register(&self, lsn: Lsn, old: Option<u64>, waker: &Waker) -> u64 {
        let mut inner = self.inner.lock();
        if let Some(id) = old {
            inner.by_lsn.remove(&(lsn, id));
        }
        inner.next_id += 1;
        let id = inner.next_id;
        inner.by_lsn.insert((lsn, id), waker.clone());
        id
    }

    fn cancel(&self, lsn: Lsn, id: u64) {
        self.inner.lock().by_lsn.remove(&(lsn, id));
    }
}

/// Resolves once `lsn` is durable, or with the log's failure.
pub struct DurableWait<'a> {
    persistence: &'a Persistence,
    lsn: Lsn,
    registered: Option<u64>,
    /// Set once the wait is registered: this thread has a client waiting.
    pending: Option<PendingHere>,
}

impl<'a> DurableWait<'a> {
    pub fn new(persistence: &'a Persistence, lsn: Lsn) -> Self {
        DurableWait { persistence, lsn, registered: None, pending: None }
    }

    fn settled(&self) -> Option<Result<(), WalError>> {
        let wal = self.persistence.wal_opened()?;
        if wal.durable_lsn() >= self.lsn {
            return Some(Ok(()));
        }
        match wal.check_writable() {
            Err(e @ WalError::Failed(_)) => Some(Err(e)),
            _ => None,
        }
    }
}

impl Future for DurableWait<'_> {
    type Output = Result<(), WalError>;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        if self.persistence.wal_opened().is_none() {
            return Poll::Ready(Ok(()));
        }
        if let Some(done) = self.settled() {
            return Poll::Ready(done);
        }
        let id = self.persistence.waiters.register(self.lsn, self.registered, cx.waker());
        if self.pending.is_none() {
            self.pending = Some(PendingHere::enter());
        }
        self.registered = Some(id);
        // The sync may have finished between the check and the registration.
        match self.settled() {
            Some(done) => Poll::Ready(done),
            None => Poll::Pending,
        }
    }
}

impl Drop for DurableWait<'_> {
    fn drop(&mut self) {
        if let Some(id) = self.registered {
            self.persistence.waiters.cancel(self.lsn, id);
        }
    }
}

/// Wakes a thread parked in [`wait_blocking`].
struct ThreadWaker(std::thread::Thread);

impl Wake for ThreadWaker {
    fn wake(self: Arc<Self>) {
        self.0.unpark();
    }

    fn wake_by_ref(self: &Arc<Self>) {
        self.0.unpark();
    }
}

/// Blocks this thread until `lsn` is durable (`Ok(true)`), `deadline` passes
/// (`Ok(false)`), or the log fails: [`DurableWait`] polled from a plain
/// thread (the embedded database's callers), parking between polls.
pub fn wait_blocking(persistence: &Persistence, lsn: Lsn, deadline: Option<Instant>) -> Result<bool, WalError> {
    let waker = Waker::from(Arc::new(ThreadWaker(std::thread::current())));
    let mut cx = Context::from_waker(&waker);
    let mut wait = std::pin::pin!(DurableWait::new(persistence, lsn));
    loop {
        if let Poll::Ready(done) = wait.as_mut().poll(&mut cx) {
            return done.map(|()| true);
        }
        match deadline {
            None => std::thread::park(),
            Some(deadline) => {
                let now = Instant::now();
                if now >= deadline {
                    return Ok(false);
                }
                std::thread::park_timeout(deadline - now);
            }
        }
    }
}

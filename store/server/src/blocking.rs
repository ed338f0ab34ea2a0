//! Blocking commands (BLPOP, BRPOP, BLMOVE, BRPOPLPUSH, BLMPOP; BZPOPMIN and
//! friends can reuse it): the registry of blocked clients and how they are
//! served, on any worker.
//!
//! # How it works
//!
//! 1. A blocking command that finds nothing to pop calls [`Blocking::block`]
//!    while it still holds its keys' shard locks, so no push can slip in
//!    between its check and its registration. A [`Waiter`] (the command's
//!    arguments, database and protocol) joins the FIFO queue of each key; the
//!    client's [`BlockState`] becomes `Blocked` and the connection stops its
//!    pipeline and awaits [`Waiter::outcome`].
//! 2. A command that may make a key poppable (LPUSH, LMOVE's destination,
//!    RENAME, ...) calls [`Blocking::signal`]. When nobody is blocked that is
//!    one atomic load; otherwise a key with waiters joins this thread's ready
//!    list.
//! 3. After each top-level command the connection calls
//!    [`Blocking::serve_ready`] on the same thread: for each ready key, its
//!    waiters, first blocked first, re-run their command here in
//!    `Retrying` mode, where "block" means "not served yet". A served waiter
//!    gets its reply bytes and is woken wherever its connection lives, and
//!    its command's statistics are recorded on this thread
//!    ([`crate::blocked_stats`]). So the pushing client's next command
//!    already sees the pops (as in Redis), and a chain of BLMOVEs is served
//!    in one go.
//! 4. A waiter whose deadline passes, whose client is unblocked (CLIENT
//!    UNBLOCK), killed or gone leaves every queue.
//!
//! WAIT blocks on no key ([`Blocking::block_without_keys`]): only its
//! deadline, CLIENT UNBLOCK or its client's end release it.
//!
//! Lock order: a waiter's state, then shard locks, then the registry; the
//! registry lock is innermost and never held while running a command.

use std::cell::RefCell;
use std::collections::{HashMap, VecDeque};
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use cairn_protocol::{ProtocolVersion, ReplyWriter};
use parking_lot::Mutex;
use tokio::sync::Notify;

use crate::blocked_stats::{self, Unblocked};
use crate::client::{Client, ClientHandle};
use crate::commands::{table, CmdError, Ctx};
use crate::server::Server;
use crate::stats::WorkerStats;

/// The reply of a client ended by CLIENT UNBLOCK ... ERROR.
const UNBLOCKED_ERROR: &[u8] = b"-UNBLOCKED client unblocked via CLIENT UNBLOCK\r\n";

/// A blocking command's timeout argument (seconds, fractional) as an
/// absolute deadline in Unix milliseconds; 0 means forever.
pub fn deadline(arg: &[u8], now_ms: u64) -> Result<u64, CmdError> {
    let secs = cairn_engine::number::parse_f64(arg)
        .filter(|s| !s.is_nan())
        .ok_or(CmdError::Static("ERR timeout is not a float or out of range"))?;
    let ms = (secs * 1000.0).ceil();
    if ms < 0.0 {
        return Err(CmdError::Static("ERR timeout is negative"));
    }
    if ms == 0.0 {
        return Ok(0);
    }
    Ok(now_ms.saturating_add(ms.min(u64::MAX as f64 / 2.0) as u64))
}

/// What a blocking command may do, and what it did, on this client.
#[derive(Debug, Default)]
pub enum BlockState {
    /// Blocking commands may block.
    #[default]
    Allowed,
    /// Blocking commands act as their non-blocking forms, replying with a
    /// null when there is nothing (inside MULTI/EXEC, scripts).
    Denied,
    /// The command re-runs for a registered waiter; blocking means "not
    /// served yet" ([`BlockState::NotServed`]).
    Retrying,
    /// A `Retrying` command found nothing.
    NotServed,
    /// The command blocked: the connection must await this waiter.
    Blocked(Arc<Waiter>),
}

impl BlockState {
    /// Whether the command runs for a registered waiter (then a key of the
    /// wrong type means "not ready" rather than an error, as in Redis).
    pub fn is_retrying(&self) -> bool {
        matches!(self, BlockState::Retrying | BlockState::NotServed)
    }
}

/// How a waiter ended.
#[derive(Debug)]
enum Outcome {
    Waiting,
    /// Served, timed out or unblocked: the reply to send, and the LSN of
    /// the write that served it (0: none).
    Done(Vec<u8>, u64),
}

/// A blocked client.
#[derive(Debug)]
pub struct Waiter {
    client: Arc<ClientHandle>,
    db: usize,
    protocol: ProtocolVersion,
    args: Vec<Vec<u8>>,
    keys: Vec<Vec<u8>>,
    /// Unix milliseconds; 0: forever.
    deadline_ms: u64,
    /// µs the command took when it blocked (Redis's `c->duration`): part of
    /// the time its statistics count once it is served.
    call_us: AtomicU64,
    state: Mutex<Outcome>,
    notify: Notify,
}

impl Waiter {
    /// The reply when the wait ends without being served (timeout, CLIENT
    /// UNBLOCK): a null array in this client's protocol for every blocking
    /// pop, 0 (replicas that acknowledged) for WAIT, which waits on no key.
    fn timeout_reply(&self) -> Vec<u8> {
        let mut buf = Vec::with_capacity(4);
        let mut out = ReplyWriter::new(&mut buf, self.protocol);
        if self.keys.is_empty() {
            out.int(0);
        } else {
            out.null_array();
        }
        buf
    }

    /// Notes how long the command took when it blocked (the dispatcher,
    /// which leaves the rest of its statistics to [`Waiter::record_unblock`]).
    pub fn note_call_us(&self, us: u64) {
        self.call_us.store(us, Ordering::Relaxed);
    }

    /// Records the command's statistics once it is served (serving it took
    /// `serve_us`) or unblocked by CLIENT UNBLOCK (see [`crate::blocked_stats`]).
    fn record_unblock(&self, server: &Server, stats: &WorkerStats, serve_us: u64, failed: bool) {
        let ended = Unblocked {
            client: &self.client,
            args: &self.args,
            call_us: self.call_us.load(Ordering::Relaxed),
            serve_us,
            failed,
        };
        blocked_stats::on_unblock(server, stats, &ended);
    }

    /// The reply once this waiter is served, unblocked or timed out.
    /// With it, the LSN of the write that served it (0: none).
    pub async fn outcome(self: &Arc<Self>, blocking: &Blocking) -> (Vec<u8>, u64) {
        loop {
            let notified = self.notify.notified();
            if let Outcome::Done(reply, lsn) = &mut *self.state.lock() {
                return (std::mem::take(reply), *lsn);
            }
            if self.deadline_ms == 0 {
                notified.await;
                continue;
            }
            let now = cairn_engine::clock::now_ms();
            if now >= self.deadline_ms {
                blocking.finish(self, self.timeout_reply());
                continue;
            }
            tokio::select! {
                _ = notified => {}
                _ = tokio::time::sleep(Duration::from_millis(self.deadline_ms - now)) => {}
            }
        }
    }
}

/// One database's waiters by key, in blocking order.
type DbQueues = HashMap<Box<[u8]>, VecDeque<Arc<Waiter>>>;

/// Waiters by database and key.
#[derive(Debug, Default)]
struct Registry {
    queues: HashMap<usize, DbQueues>,
    by_client: HashMap<u64, Arc<Waiter>>,
}

thread_local! {
    /// Keys signalled on this thread and not served yet.
    static READY: RefCell<Vec<(usize, Box<[u8]>)>> = const { RefCell::new(Vec::new()) };
}

/// The server-wide registry of blocked clients.
#[derive(Debug, Default)]
pub struct Blocking {
    registry: Mutex<Registry>,
    /// Number of blocked clients (read without the lock by [`Blocking::signal`]).
    waiting: AtomicUsize,
}

impl Blocking {
    /// Number of blocked clients (INFO blocked_clients).
    pub fn blocked_clients(&self) -> usize {
        self.waiting.load(Ordering::Relaxed)
    }

    /// Number of keys with blocked clients (INFO blocked_keys).
    pub fn blocked_keys(&self) -> usize {
        self.registry.lock().queues.values().map(HashMap::len).sum()
    }

    /// Whether client `id` is blocked (CLIENT LIST flag `b`).
    pub fn is_blocked(&self, id: u64) -> bool {
        self.blocked_clients() > 0 && self.registry.lock().by_client.contains_key(&id)
    }

    /// Called by a blocking command that found nothing, while it holds the
    /// shard locks of `keys`. Returns false when the client may not block:
    /// the command then replies as its non-blocking form would.
    pub fn block(&self, client: &mut Client, args: &[&[u8]], keys: &[&[u8]], deadline_ms: u64) -> bool {
        match client.block {
            BlockState::Denied => return false,
            BlockState::Retrying | BlockState::NotServed => {
                client.block = BlockState::NotServed;
                return true;
            }
            BlockState::Allowed | BlockState::Blocked(_) => {}
        }
        let mut unique: Vec<Vec<u8>> = Vec::with_capacity(keys.len());
        for key in keys {
            if !unique.iter().any(|k| k == key) {
                unique.push(key.to_vec());
            }
        }
        let waiter = Arc::new(Waiter {
            client: client.handle.clone(),
            db: client.db,
            protocol: client.protocol,
            args: args.iter().map(|a| a.to_vec()).collect(),
            keys: unique,
            deadline_ms,
            call_us: AtomicU64::new(0),
            state: Mutex::new(Outcome::Waiting),
            notify: Notify::new(),
        });
        let mut reg = self.registry.lock();
        let queues = reg.queues.entry(waiter.db).or_default();
        for key in &waiter.keys {
            queues.entry(key.as_slice().into()).or_default().push_back(waiter.clone());
        }
        reg.by_client.insert(waiter.client.id, waiter.clone());
        self.waiting.fetch_add(1, Ordering::SeqCst);
        drop(reg);
        client.block = BlockState::Blocked(waiter);
        true
    }

    /// Blocks a client on no key until `deadline_ms` (0: forever), CLIENT
    /// UNBLOCK or its disconnection, which all end it with 0 (WAIT). False
    /// when the client may not block.
    pub fn block_without_keys(&self, client: &mut Client, args: &[&[u8]], deadline_ms: u64) -> bool {
        match client.block {
            BlockState::Allowed => self.block(client, args, &[], deadline_ms),
            _ => false,
        }
    }

    /// Notes that `key` in `db` may now serve blocked clients.
    pub fn signal(&self, db: usize, key: &[u8]) {
        if self.waiting.load(Ordering::SeqCst) == 0 {
            return;
        }
        let waited = self.registry.lock().queues.get(&db).is_some_and(|q| q.contains_key(key));
        if waited {
            READY.with(|r| {
                let mut r = r.borrow_mut();
                if !r.iter().any(|(d, k)| *d == db && &**k == key) {
                    r.push((db, key.into()));
                }
            });
        }
    }

    /// Notes that every waited key of `db` may now serve (SWAPDB, MOVE of
    /// many keys).
    pub fn signal_db(&self, db: usize) {
        if self.waiting.load(Ordering::SeqCst) == 0 {
            return;
        }
        let keys: Vec<Box<[u8]>> =
            self.registry.lock().queues.get(&db).map(|q| q.keys().cloned().collect()).unwrap_or_default();
        for key in keys {
            self.signal(db, &key);
        }
    }

    /// Serves the clients blocked on the keys signalled on this thread.
    /// Called by the connection after each top-level command, holding no lock.
    pub fn serve_ready(&self, server: &Server, stats: &WorkerStats) {
        while let Some((db, key)) = READY.with(|r| {
            let mut r = r.borrow_mut();
            (!r.is_empty()).then(|| r.remove(0))
        }) {
            self.serve_key(server, stats, db, &key);
        }
    }

    /// Serves the waiters of one key in blocking order, while the key exists.
    fn serve_key(&self, server: &Server, stats: &WorkerStats, db: usize, key: &[u8]) {
        let waiters: Vec<Arc<Waiter>> = match self.registry.lock().queues.get(&db).and_then(|q| q.get(key)) {
            Some(queue) => queue.iter().cloned().collect(),
            None => return,
        };
        for waiter in waiters {
            if !self.serve(server, stats, &waiter) {
                let now = cairn_engine::clock::now_ms();
                if server.keyspace.lock_key(key).db(db).peek(key, now).is_none() {
                    break;
                }
            }
        }
    }

    /// Re-runs a waiter's command; true if that served it.
    fn serve(&self, server: &Server, stats: &WorkerStats, waiter: &Arc<Waiter>) -> bool {
        let mut state = waiter.state.lock();
        if !matches!(*state, Outcome::Waiting) {
            return false;
        }
        let started = quanta::Instant::now();
        let Some(served) = rerun(server, stats, waiter) else { return false };
        let serve_us = started.elapsed().as_micros() as u64;
        *state = Outcome::Done(served.reply, served.lsn);
        drop(state);
        self.unregister(waiter);
        waiter.record_unblock(server, stats, serve_us, served.failed);
        waiter.notify.notify_one();
        true
    }

    /// Ends a waiter that is still waiting with `reply`; false if it had
    /// already ended.
    fn finish(&self, waiter: &Arc<Waiter>, reply: Vec<u8>) -> bool {
        let mut state = waiter.state.lock();
        if !matches!(*state, Outcome::Waiting) {
            return false;
        }
        *state = Outcome::Done(reply, 0);
        drop(state);
        self.unregister(waiter);
        waiter.notify.notify_one();
        true
    }

    /// Forgets a waiter whose connection is going away.
    pub fn cancel(&self, waiter: &Arc<Waiter>) {
        self.finish(waiter, Vec::new());
    }

    /// CLIENT UNBLOCK: ends client `id`'s wait with a timeout reply or an
    /// UNBLOCKED error, and records its command's statistics on the calling
    /// thread (`stats`), as Redis 7.0 does: a failed call either way; false
    /// if it is not blocked.
    pub fn unblock(&self, id: u64, error: bool, server: &Server, stats: &WorkerStats) -> bool {
        let Some(waiter) = self.registry.lock().by_client.get(&id).cloned() else { return false };
        let reply = if error { UNBLOCKED_ERROR.to_vec() } else { waiter.timeout_reply() };
        let ended = self.finish(&waiter, reply);
        if ended {
            if error {
                stats.record_error("UNBLOCKED");
            }
            waiter.record_unblock(server, stats, 0, true);
        }
        ended
    }

    fn unregister(&self, waiter: &Arc<Waiter>) {
        let mut reg = self.registry.lock();
        if let Some(queues) = reg.queues.get_mut(&waiter.db) {
            for key in &waiter.keys {
                if let Some(queue) = queues.get_mut(key.as_slice()) {
                    queue.retain(|w| !Arc::ptr_eq(w, waiter));
                    if queue.is_empty() {
                        queues.remove(key.as_slice());
                    }
                }
            }
            if queues.is_empty() {
                reg.queues.remove(&waiter.db);
            }
        }
        if reg.by_client.get(&waiter.client.id).is_some_and(|w| Arc::ptr_eq(w, waiter)) {
            reg.by_client.remove(&waiter.client.id);
            self.waiting.fetch_sub(1, Ordering::SeqCst);
        }
    }
}

/// A waiter's command that served it.
struct Served {
    reply: Vec<u8>,
    /// The LSN of its logged write (0: none).
    lsn: u64,
    /// Whether its reply is an error.
    failed: bool,
}

/// Runs a waiter's command again on this thread; what it did if that served it.
fn rerun(server: &Server, stats: &WorkerStats, waiter: &Waiter) -> Option<Served> {
    let index = table::lookup(&waiter.args[0])?;
    let spec = table::spec(index);
    let _running = server.tracking.is_active().then(|| crate::tracking::current::enter(waiter.client.id));
    // Admitted when it blocked: its command runs again unchecked.
    let mut client = Client::new(waiter.client.clone(), false, crate::acl::internal_user());
    client.db = waiter.db;
    client.protocol = waiter.protocol;
    client.block = BlockState::Retrying;
    let args: Vec<&[u8]> = waiter.args.iter().map(Vec::as_slice).collect();
    let mut reply = Vec::new();
    let now_ms = cairn_engine::clock::now_ms();
    let mut ctx = Ctx::new(server, &mut client, ReplyWriter::new(&mut reply, waiter.protocol), stats, now_ms);
    let result = crate::persistence::logging::run(&mut ctx, spec, &args);
    if matches!(ctx.client.block, BlockState::NotServed) {
        return None;
    }
    let lsn = ctx.client.last_lsn;
    if let Err(e) = result {
        ctx.out.error(&e.message(spec.name));
    }
    // Counted in errorstats now; a failed call once its statistics are recorded.
    let failed = ctx.out.take_error_code().map(|code| stats.record_error(code.as_str())).is_some();
    // What dispatch does after a write: WATCHers and tracking clients of the touched keys see it.
    let touched = spec.key_positions(args.len()).into_iter().map(|p| args[p]);
    for key in touched.chain(waiter.keys.iter().map(Vec::as_slice)) {
        crate::modified::key(server, waiter.db, key);
    }
    Some(Served { reply, lsn, failed })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn timeouts() {
        assert_eq!(deadline(b"0", 1000), Ok(0));
        assert_eq!(deadline(b"0.001", 1000), Ok(1001));
        assert_eq!(deadline(b"1.5", 1000), Ok(2500));
        assert!(deadline(b"-1", 0).is_err());
        assert!(deadline(b"abc", 0).is_err());
    }
}

//! Client-side caching (CLIENT TRACKING), with Redis 7.0's semantics.
//!
//! - [`Tracking`] (one per server): the clients with tracking on
//!   ([`tracker::Tracker`], by id), the default mode's key table
//!   ([`keys::KeyTable`]: key name → client ids) and the BCAST prefix table
//!   ([`prefixes::PrefixTable`]).
//! - A read command of a tracking client remembers its keys *before* it
//!   runs ([`hooks::before_read`]): a write on another worker either comes
//!   after the registration (and invalidates) or before the read (which
//!   then returns the new value), so no stale value goes uninvalidated.
//! - Every modification of a key ([`crate::modified`]: the dispatcher's
//!   written keys, handlers' extra keys, lazy and active expiry through the
//!   engine's expiry hook, maxmemory eviction) calls [`Tracking::invalidate`]:
//!   the key's entry leaves the table and each client in it gets an
//!   invalidation ([`message`]) in its connection's inbox
//!   ([`inbox::Inbox`], on its `ClientHandle`) or its redirection client's,
//!   which wakes that connection on whatever worker it lives. FLUSHDB,
//!   FLUSHALL and SWAPDB tell every tracking client "all keys" (a null).
//! - A connection writes its inbox after its current command's reply (so a
//!   client that writes a key it read gets its own invalidation right after
//!   that reply, before its next one; inside EXEC after EXEC's reply) or at
//!   once when idle. BCAST changes are collected per prefix and sent after
//!   each top-level command, after a batch and after active expiry.
//! - Cost while no client tracks: [`Tracking::is_active`], one relaxed load
//!   per command in the dispatcher; nothing else runs.

pub mod current;
pub mod hooks;
pub mod inbox;
pub mod keys;
pub mod message;
pub mod prefixes;
pub mod tracker;

use std::collections::HashMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use cairn_engine::events::KeyEvents;
use parking_lot::RwLock;

use crate::client::{ClientHandle, ClientRegistry};
use tracker::{Options, Tracker, TrackerState};

/// Why a key is invalidated.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Change {
    /// A command wrote it (BCAST remembers who, for NOLOOP).
    Write,
    /// The server removed it: it expired (lazily or actively) or was
    /// evicted for maxmemory (no client wrote it).
    Removed,
    /// The tracking table passed `tracking-table-max-keys`: the key did not
    /// change, its clients are told they no longer track it (NOLOOP does
    /// not apply; BCAST clients are not concerned).
    TableFull,
}

/// The server's client-side caching state.
#[derive(Debug)]
pub struct Tracking {
    /// Clients with tracking on (INFO `tracking_clients`); 0: inactive.
    active: AtomicUsize,
    trackers: RwLock<HashMap<u64, Arc<Tracker>>>,
    pub keys: keys::KeyTable,
    pub prefixes: prefixes::PrefixTable,
    clients: Arc<ClientRegistry>,
    events: Arc<KeyEvents>,
}

impl Tracking {
    /// Tracking over the server's client registry; installs the expiry hook.
    pub fn new(clients: Arc<ClientRegistry>, events: Arc<KeyEvents>) -> Arc<Tracking> {
        let tracking = Arc::new(Tracking {
            active: AtomicUsize::new(0),
            trackers: RwLock::new(HashMap::new()),
            keys: keys::KeyTable::default(),
            prefixes: prefixes::PrefixTable::default(),
            clients,
            events: events.clone(),
        });
        let weak = Arc::downgrade(&tracking);
        events.set_expiry_hook(Box::new(move |_db, key| {
            if let Some(tracking) = weak.upgrade() {
                tracking.invalidate(key, Change::Removed);
            }
        }));
        tracking
    }

    /// Whether some client tracks (one relaxed load).
    #[inline]
    pub fn is_active(&self) -> bool {
        self.active.load(Ordering::Relaxed) > 0
    }

    /// Clients with tracking on (INFO `tracking_clients`).
    pub fn client_count(&self) -> usize {
        self.active.load(Ordering::Relaxed)
    }

    /// Client `id`'s tracking state, if tracking is on for it.
    pub fn tracker(&self, id: u64) -> Option<Arc<Tracker>> {
        if !self.is_active() {
            return None;
        }
        self.trackers.read().get(&id).cloned()
    }

    /// CLIENT TRACKING ON: turns tracking on (or changes its options) for
    /// `handle`; BCAST `prefixes` are added to those it has.
    pub fn enable(&self, handle: &Arc<ClientHandle>, options: Options, prefixes: &[&[u8]]) -> Arc<Tracker> {
        let id = handle.id;
        let mut trackers = self.trackers.write();
        let tracker = trackers
            .entry(id)
            .or_insert_with(|| {
                self.active.fetch_add(1, Ordering::Relaxed);
                self.events.watch_expirations(true);
                Arc::new(Tracker::new(handle.clone()))
            })
            .clone();
        drop(trackers);
        let mut state = tracker.state.lock();
        let bcast = options.bcast;
        state.options = options;
        state.broken_redirect = false;
        if bcast {
            let wanted: &[&[u8]] = if prefixes.is_empty() { &[b""] } else { prefixes };
            for prefix in wanted {
                if !state.prefixes.iter().any(|p| p == prefix) {
                    state.prefixes.push(prefix.to_vec());
                    self.prefixes.add(prefix, id);
                }
            }
            state.prefixes.sort();
        }
        drop(state);
        tracker
    }

    /// CLIENT TRACKING OFF, RESET or a disconnect: forgets client `id`'s
    /// prefixes and its entries in the key table.
    pub fn disable(&self, id: u64) {
        if !self.is_active() {
            return;
        }
        let mut trackers = self.trackers.write();
        let Some(tracker) = trackers.remove(&id) else { return };
        if self.active.fetch_sub(1, Ordering::Relaxed) == 1 {
            self.events.watch_expirations(false);
        }
        drop(trackers);
        let state = tracker.state.lock();
        for prefix in &state.prefixes {
            self.prefixes.remove(prefix, id);
        }
        drop(state);
        if tracker.items.load(Ordering::Relaxed) > 0 {
            self.keys.forget(id);
        }
    }

    /// Remembers that `tracker` read `keys` (unless OPTIN/OPTOUT say
    /// otherwise), then keeps the table within `max_keys` (0: no limit).
    pub fn remember<'a>(&self, tracker: &Tracker, keys: impl Iterator<Item = &'a [u8]>, max_keys: usize) {
        {
            let state = tracker.state.lock();
            if state.options.bcast || !state.caches_this_command() {
                return;
            }
        }
        let id = tracker.id();
        for key in keys {
            if self.keys.remember(key, id) {
                tracker.items.fetch_add(1, Ordering::Relaxed);
            }
        }
        self.enforce_limit(max_keys);
    }

    /// Evicts keys from the table while it holds more than `max_keys` (0:
    /// no limit), telling their clients as if the keys had changed.
    pub fn enforce_limit(&self, max_keys: usize) {
        let len = self.keys.len();
        if max_keys == 0 || len <= max_keys {
            return;
        }
        for (key, ids) in self.keys.evict(len - max_keys) {
            let payload = message::key_array(std::iter::once(&key[..]));
            self.tell(&ids, &payload, Change::TableFull);
        }
    }

    /// `key` was modified (or expired): records it for BCAST clients and
    /// sends an invalidation to every client that read it.
    pub fn invalidate(&self, key: &[u8], change: Change) {
        if !self.is_active() {
            return;
        }
        match change {
            Change::Write => self.prefixes.record(key, current::client()),
            Change::Removed => self.prefixes.record(key, 0),
            Change::TableFull => {}
        }
        let Some(ids) = self.keys.take(key) else { return };
        let payload = message::key_array(std::iter::once(key));
        self.tell(&ids, &payload, change);
    }

    /// Sends `payload` to the default-mode clients among `ids`.
    fn tell(&self, ids: &[u64], payload: &[u8], change: Change) {
        let running = current::client();
        for &id in ids {
            let Some(tracker) = self.tracker(id) else { continue };
            tracker.entry_removed();
            let mut state = tracker.state.lock();
            let own_change = state.options.noloop && id == running && change != Change::TableFull;
            if state.options.bcast || own_change {
                continue;
            }
            self.send(&tracker, &mut state, payload);
        }
    }

    /// A flush (FLUSHDB, FLUSHALL, SWAPDB): every tracking client is told
    /// that all its keys are invalid, and the key table is emptied.
    pub fn invalidate_all(&self) {
        if !self.is_active() {
            return;
        }
        let trackers: Vec<Arc<Tracker>> = self.trackers.read().values().cloned().collect();
        for tracker in trackers {
            let mut state = tracker.state.lock();
            self.send(&tracker, &mut state, message::all_keys(tracker.resp3()));
            tracker.items.store(0, Ordering::Relaxed);
        }
        self.keys.clear();
    }

    /// Sends the BCAST changes recorded so far, one message per prefix and
    /// client (NOLOOP clients do not get the keys they changed themselves).
    pub fn broadcast(&self) {
        for change in self.prefixes.take_changes() {
            let everything = message::key_array(change.keys.iter().map(|(k, _)| &k[..]));
            for &id in &change.clients {
                let Some(tracker) = self.tracker(id) else { continue };
                let mut state = tracker.state.lock();
                if !state.options.noloop {
                    self.send(&tracker, &mut state, &everything);
                    continue;
                }
                let others: Vec<&[u8]> = change.keys.iter().filter(|(_, by)| *by != id).map(|(k, _)| &k[..]).collect();
                if !others.is_empty() {
                    self.send(&tracker, &mut state, &message::key_array(others.into_iter()));
                }
            }
        }
    }

    /// Delivers an invalidation to `tracker`'s connection, or to its
    /// redirection client (RESP3: a push; RESP2 in subscribed mode: a
    /// message on `__redis__:invalidate`; otherwise nothing, as in Redis).
    fn send(&self, tracker: &Tracker, state: &mut TrackerState, payload: &[u8]) {
        let redirect = state.options.redirect;
        if redirect == 0 {
            if tracker.resp3() && tracker.handle.accepts_pushes.load(Ordering::Relaxed) {
                tracker.handle.push(&message::invalidation(true, payload));
            }
            return;
        }
        let Some(target) = self.clients.get(redirect) else {
            state.broken_redirect = true;
            if tracker.resp3() {
                tracker.handle.push(&message::redirect_broken(redirect));
            }
            return;
        };
        if !target.accepts_pushes.load(Ordering::Relaxed) {
            return;
        }
        if target.resp.load(Ordering::Relaxed) == 3 {
            target.push(&message::invalidation(true, payload));
        } else if target.is_subscriber() {
            target.push(&message::invalidation(false, payload));
        }
    }
}

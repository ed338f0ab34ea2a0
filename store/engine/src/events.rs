//! Keyspace events (Redis's keyspace notifications): the classes, the
//! enabled set, and the sink that delivers them.
//!
//! The engine raises the events only it can see — a key created (`new`), a
//! key expired lazily or actively (`expired`) — and the server raises the
//! per-command ones through the same [`KeyEvents::emit`]. Delivery (pub/sub)
//! belongs to the server, which installs a sink once at startup.
//!
//! Cost when notifications are off (the default): one relaxed load of
//! [`KeyEvents::flags`] and a branch per event site; the sink is never called.
//!
//! Expirations are also counted, lazy and active alike, whether or not they
//! are delivered ([`KeyEvents::expired`], INFO's `expired_keys`).

use std::fmt;
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, Ordering};
use std::sync::OnceLock;

/// `K`: publish on `__keyspace@<db>__:<key>`.
pub const KEYSPACE: u32 = 1 << 0;
/// `E`: publish on `__keyevent@<db>__:<event>`.
pub const KEYEVENT: u32 = 1 << 1;
/// `g`: generic commands (DEL, EXPIRE, RENAME, ...).
pub const GENERIC: u32 = 1 << 2;
/// `$`: string commands.
pub const STRING: u32 = 1 << 3;
/// `l`: list commands.
pub const LIST: u32 = 1 << 4;
/// `s`: set commands.
pub const SET: u32 = 1 << 5;
/// `h`: hash commands.
pub const HASH: u32 = 1 << 6;
/// `z`: sorted set commands.
pub const ZSET: u32 = 1 << 7;
/// `x`: a key expired.
pub const EXPIRED: u32 = 1 << 8;
/// `e`: a key was evicted for maxmemory.
pub const EVICTED: u32 = 1 << 9;
/// `t`: stream commands.
pub const STREAM: u32 = 1 << 10;
/// `m`: a lookup missed (not part of `A`).
pub const KEY_MISS: u32 = 1 << 11;
/// `d`: module events (accepted, never raised).
pub const MODULE: u32 = 1 << 13;
/// `n`: a key was created (not part of `A`).
pub const NEW: u32 = 1 << 14;
/// `A`: `g$lshzxetd`.
pub const ALL: u32 = GENERIC | STRING | LIST | SET | HASH | ZSET | EXPIRED | EVICTED | STREAM | MODULE;

/// Parses `notify-keyspace-events` (Redis's `keyspaceEventsStringToFlags`);
/// `None` for a character that names no class.
pub fn parse_flags(classes: &str) -> Option<u32> {
    classes.chars().try_fold(0u32, |flags, c| {
        let class = match c {
            'A' => ALL,
            'g' => GENERIC,
            '$' => STRING,
            'l' => LIST,
            's' => SET,
            'h' => HASH,
            'z' => ZSET,
            'x' => EXPIRED,
            'e' => EVICTED,
            'K' => KEYSPACE,
            'E' => KEYEVENT,
            't' => STREAM,
            'm' => KEY_MISS,
            'd' => MODULE,
            'n' => NEW,
            _ => return None,
        };
        Some(flags | class)
    })
}

/// The canonical text of a set of classes (Redis's `keyspaceEventsFlagsToString`).
pub fn format_flags(flags: u32) -> String {
    let mut out = String::new();
    if flags & ALL == ALL {
        out.push('A');
    } else {
        let classes =
            [(GENERIC, 'g'), (STRING, '$'), (LIST, 'l'), (SET, 's'), (HASH, 'h'), (ZSET, 'z'), (EXPIRED, 'x')];
        let more = [(EVICTED, 'e'), (STREAM, 't'), (MODULE, 'd'), (NEW, 'n')];
        out.extend(classes.iter().chain(more.iter()).filter(|(f, _)| flags & f != 0).map(|(_, c)| c));
    }
    out.extend(
        [(KEYSPACE, 'K'), (KEYEVENT, 'E'), (KEY_MISS, 'm')].iter().filter(|(f, _)| flags & f != 0).map(|(_, c)| c),
    );
    out
}

/// Delivers one event: `(enabled flags, event name, db, key)`.
pub type Sink = Box<dyn Fn(u32, &str, usize, &[u8]) + Send + Sync>;

/// Told of every expired key `(db, key)` while [`KeyEvents::watch_expirations`] is on
/// (the server's client-side caching invalidates it).
pub type ExpiryHook = Box<dyn Fn(usize, &[u8]) + Send + Sync>;

/// The enabled classes and the sink, shared by the keyspace's tables and the server.
#[derive(Default)]
pub struct KeyEvents {
    flags: AtomicU32,
    sink: OnceLock<Sink>,
    /// Keys deleted because their time to live passed, since start.
    expired: AtomicU64,
    /// Wall-clock ms until which expired keys are not deleted (CLIENT PAUSE).
    expiry_paused_until: AtomicU64,
    /// Whether [`KeyEvents::expiry_hook`] is called (one relaxed load per expiration).
    expiry_watched: AtomicBool,
    expiry_hook: OnceLock<ExpiryHook>,
}

impl fmt::Debug for KeyEvents {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("KeyEvents").field("flags", &format_flags(self.flags())).finish()
    }
}

impl KeyEvents {
    /// The enabled classes (0: notifications off).
    #[inline]
    pub fn flags(&self) -> u32 {
        self.flags.load(Ordering::Relaxed)
    }

    pub fn set_flags(&self, flags: u32) {
        self.flags.store(flags, Ordering::Relaxed);
    }

    /// Installs the delivery function; only the first call has an effect.
    pub fn set_sink(&self, sink: Sink) {
        let _ = self.sink.set(sink);
    }

    /// Raises event `event` of class `class` on `key` in database `db`, if
    /// that class is enabled.
    #[inline]
    pub fn emit(&self, class: u32, event: &str, db: usize, key: &[u8]) {
        let flags = self.flags();
        if flags & class != 0 {
            self.deliver(flags, event, db, key);
        }
    }

    /// A key of database `db` expired (found due on access or by active
    /// expiry): counts it and raises its `expired` event.
    #[inline]
    pub fn key_expired(&self, db: usize, key: &[u8]) {
        self.expired.fetch_add(1, Ordering::Relaxed);
        self.emit(EXPIRED, "expired", db, key);
        if self.expiry_watched.load(Ordering::Relaxed) {
            self.call_expiry_hook(db, key);
        }
    }

    /// Installs the function told of expirations; only the first call has an effect.
    pub fn set_expiry_hook(&self, hook: ExpiryHook) {
        let _ = self.expiry_hook.set(hook);
    }

    /// Turns the calls of the expiry hook on or off.
    pub fn watch_expirations(&self, on: bool) {
        self.expiry_watched.store(on, Ordering::Relaxed);
    }

    #[cold]
    fn call_expiry_hook(&self, db: usize, key: &[u8]) {
        if let Some(hook) = self.expiry_hook.get() {
            hook(db, key);
        }
    }

    /// Until `until_ms` (wall clock; 0: no more), keys found expired read
    /// as absent but are neither deleted nor counted (CLIENT PAUSE stops
    /// every write, expiry's included).
    pub fn pause_expiry_until(&self, until_ms: u64) {
        self.expiry_paused_until.store(until_ms, Ordering::Release);
    }

    /// Whether expired keys must stay at `now_ms` (see [`KeyEvents::pause_expiry_until`]).
    #[inline]
    pub fn expiry_paused(&self, now_ms: u64) -> bool {
        now_ms < self.expiry_paused_until.load(Ordering::Acquire)
    }

    /// Keys expired since start, lazily and actively (INFO `expired_keys`).
    pub fn expired(&self) -> u64 {
        self.expired.load(Ordering::Relaxed)
    }

    #[cold]
    fn deliver(&self, flags: u32, event: &str, db: usize, key: &[u8]) {
        if let Some(sink) = self.sink.get() {
            sink(flags, event, db, key);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn flags_round_trip_as_redis_prints_them() {
        let canonical = |s: &str| parse_flags(s).map(format_flags);
        assert_eq!(canonical("gKE").as_deref(), Some("gKE"));
        assert_eq!(canonical("$lshzxeKE").as_deref(), Some("$lshzxeKE"));
        assert_eq!(canonical("KA").as_deref(), Some("AK"));
        assert_eq!(canonical("EA").as_deref(), Some("AE"));
        assert_eq!(canonical("").as_deref(), Some(""));
        assert_eq!(canonical("An").as_deref(), Some("A"));
        assert_eq!(canonical("Kn").as_deref(), Some("nK"));
        assert_eq!(parse_flags("Kq"), None);
    }

    #[test]
    fn emit_calls_the_sink_only_for_enabled_classes() {
        let seen = std::sync::Arc::new(parking_lot::Mutex::new(Vec::new()));
        let events = KeyEvents::default();
        let log = seen.clone();
        events.set_sink(Box::new(move |_, event, db, key| log.lock().push((event.to_string(), db, key.to_vec()))));
        events.emit(STRING, "set", 0, b"a");
        events.set_flags(KEYSPACE | STRING);
        events.emit(STRING, "set", 3, b"b");
        events.emit(LIST, "lpush", 3, b"c");
        assert_eq!(*seen.lock(), vec![("set".to_string(), 3, b"b".to_vec())]);
    }

    #[test]
    fn the_expiry_hook_is_called_only_while_watched() {
        let seen = std::sync::Arc::new(parking_lot::Mutex::new(Vec::new()));
        let events = KeyEvents::default();
        let log = seen.clone();
        events.set_expiry_hook(Box::new(move |db, key| log.lock().push((db, key.to_vec()))));
        events.key_expired(0, b"a");
        events.watch_expirations(true);
        events.key_expired(1, b"b");
        events.watch_expirations(false);
        events.key_expired(2, b"c");
        assert_eq!(*seen.lock(), vec![(1, b"b".to_vec())]);
    }

    #[test]
    fn expirations_are_counted_whether_or_not_they_are_delivered() {
        let seen = std::sync::Arc::new(parking_lot::Mutex::new(Vec::new()));
        let events = KeyEvents::default();
        let log = seen.clone();
        events.set_sink(Box::new(move |_, event, db, key| log.lock().push((event.to_string(), db, key.to_vec()))));
        events.key_expired(0, b"a");
        events.set_flags(KEYEVENT | EXPIRED);
        events.key_expired(2, b"b");
        assert_eq!(events.expired(), 2);
        assert_eq!(*seen.lock(), vec![("expired".to_string(), 2, b"b".to_vec())]);
    }
}

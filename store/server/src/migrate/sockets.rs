//! MIGRATE's cached connections to target instances, as Redis's
//! `migrate_cached_sockets`: at most [`MAX_SOCKETS`], keyed by the
//! `host:port` text as given, each remembering the database it last
//! selected; one idle for longer than the configured time (Redis: 10 s) is
//! closed by [`SocketCache::close_idle`], which the admin thread runs every
//! second. INFO counts them as `migrate_cached_sockets`.
//!
//! A MIGRATE checks its connection out for the transfer and back in after
//! it; while out, the entry stays (and counts) but another MIGRATE to the
//! same target opens a connection of its own, used once (Redis runs one
//! MIGRATE at a time; Cairn's run in parallel on blocking threads).

use std::collections::HashMap;
use std::io::BufReader;
use std::net::TcpStream;
use std::time::{Duration, Instant};

use parking_lot::Mutex;

/// Most cached connections (Redis's `MIGRATE_SOCKET_CACHE_ITEMS`).
pub const MAX_SOCKETS: usize = 64;
/// How long a cached connection may stay idle (Redis's `MIGRATE_SOCKET_CACHE_TTL`).
pub const DEFAULT_IDLE: Duration = Duration::from_secs(10);
/// How often idle connections are looked for (Redis: once a second).
pub const CHECK_EVERY: Duration = Duration::from_secs(1);

/// A connection to a target: reads are buffered (replies are lines).
pub type Conn = BufReader<TcpStream>;

/// A connection checked out of the cache for one transfer.
#[derive(Debug)]
pub struct Checkout {
    pub conn: Conn,
    /// The database the connection selected last (None: unknown, SELECT first).
    pub last_db: Option<i64>,
    /// Whether it returns to the cache ([`SocketCache::check_in`]); false
    /// for a second connection to a target whose cached one is in use.
    pub cached: bool,
}

#[derive(Debug)]
struct Slot {
    /// None while a MIGRATE uses it.
    conn: Option<Conn>,
    last_db: Option<i64>,
    last_use: Instant,
}

/// The cache of connections by `host:port`.
#[derive(Debug)]
pub struct SocketCache {
    slots: Mutex<HashMap<Vec<u8>, Slot>>,
    idle: Duration,
}

impl SocketCache {
    /// A cache whose connections close after `idle` without use.
    pub fn new(idle: Duration) -> SocketCache {
        SocketCache { slots: Mutex::new(HashMap::new()), idle }
    }

    /// How many connections are cached (INFO `migrate_cached_sockets`).
    pub fn len(&self) -> usize {
        self.slots.lock().len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The idle time after which a connection closes.
    pub fn idle(&self) -> Duration {
        self.idle
    }

    /// The cached connection to `name`, checked out, if one is there and free.
    /// `None` with `in_use` true when one is there but another MIGRATE has it.
    pub fn check_out(&self, name: &[u8]) -> (Option<Checkout>, bool) {
        let mut slots = self.slots.lock();
        let Some(slot) = slots.get_mut(name) else {
            return (None, false);
        };
        slot.last_use = Instant::now();
        match slot.conn.take() {
            Some(conn) => (Some(Checkout { conn, last_db: slot.last_db, cached: true }), false),
            None => (None, true),
        }
    }

    /// Caches a new connection to `name` as checked out, making room first
    /// (as Redis, dropping one when full: here the least recently used).
    pub fn add_checked_out(&self, name: &[u8]) {
        let mut slots = self.slots.lock();
        if slots.len() >= MAX_SOCKETS {
            let oldest = slots.iter().min_by_key(|(_, slot)| slot.last_use).map(|(key, _)| key.clone());
            if let Some(oldest) = oldest {
                slots.remove(&oldest);
            }
        }
        slots.insert(name.to_vec(), Slot { conn: None, last_db: None, last_use: Instant::now() });
    }

    /// Puts a connection back after a transfer, remembering the database it
    /// selected (None after an error, so the next one selects again).
    pub fn check_in(&self, name: &[u8], checkout: Checkout) {
        if !checkout.cached {
            return;
        }
        if let Some(slot) = self.slots.lock().get_mut(name) {
            slot.conn = Some(checkout.conn);
            slot.last_db = checkout.last_db;
            slot.last_use = Instant::now();
        }
    }

    /// Forgets the cached connection to `name` (after an I/O error; the
    /// caller drops the connection it holds, which closes it).
    pub fn close(&self, name: &[u8]) {
        self.slots.lock().remove(name);
    }

    /// Closes the free connections idle for longer than the idle time.
    pub fn close_idle(&self) {
        let idle = self.idle;
        self.slots.lock().retain(|_, slot| slot.conn.is_none() || slot.last_use.elapsed() <= idle);
    }

    /// How often [`SocketCache::close_idle`] should run: every second, or
    /// more often for an idle time under a second (tests).
    pub fn check_every(&self) -> Duration {
        CHECK_EVERY.min(self.idle.max(Duration::from_millis(10)))
    }
}

impl Default for SocketCache {
    fn default() -> Self {
        SocketCache::new(DEFAULT_IDLE)
    }
}

/// Closes idle connections periodically until the server stops (on the
/// admin thread's event loop, off the workers).
pub async fn run_closer(server: std::sync::Arc<crate::server::Server>) {
    let every = server.migrate_sockets.check_every();
    crate::periodic::every(&server, every, || server.migrate_sockets.close_idle()).await;
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::net::TcpListener;

    fn conn(listener: &TcpListener) -> Conn {
        BufReader::new(TcpStream::connect(listener.local_addr().unwrap()).unwrap())
    }

    #[test]
    fn checked_out_connections_stay_counted_and_idle_ones_close() {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let cache = SocketCache::new(Duration::from_millis(20));
        assert_eq!(cache.check_out(b"a:1").0.map(|c| c.cached), None);
        cache.add_checked_out(b"a:1");
        assert_eq!(cache.len(), 1);
        assert!(cache.check_out(b"a:1").1, "in use");
        cache.close_idle();
        assert_eq!(cache.len(), 1, "a connection in use is never closed as idle");
        cache.check_in(b"a:1", Checkout { conn: conn(&listener), last_db: Some(3), cached: true });
        let (out, _) = cache.check_out(b"a:1");
        let out = out.unwrap();
        assert_eq!(out.last_db, Some(3));
        cache.check_in(b"a:1", out);
        std::thread::sleep(Duration::from_millis(40));
        cache.close_idle();
        assert!(cache.is_empty());
    }

    #[test]
    fn a_full_cache_drops_its_least_recently_used() {
        let cache = SocketCache::default();
        for i in 0..MAX_SOCKETS + 1 {
            cache.add_checked_out(format!("h:{i}").as_bytes());
        }
        assert_eq!(cache.len(), MAX_SOCKETS);
    }
}

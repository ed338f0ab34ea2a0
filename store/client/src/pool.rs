//! A bounded pool: at most `size` connections, opened on first use and
//! handed out round-robin. Connections are multiplexed (many requests in
//! flight on each), so a caller gets a shared handle rather than exclusive
//! use; a connection found closed is replaced.
//!
//! ```no_run
//! # async fn demo() -> Result<(), cairn_client::Error> {
//! use cairn_client::{ConnectOptions, Pool};
//! let pool = Pool::new(ConnectOptions::new("127.0.0.1:7379"), 8);
//! let conn = pool.get().await?;
//! conn.set("k", "v").await?;
//! # Ok(())
//! # }
//! ```

use std::sync::atomic::{AtomicUsize, Ordering};

use tokio::sync::Mutex;

use crate::connection::Connection;
use crate::error::Error;
use crate::options::ConnectOptions;

/// A bounded, lazily filled set of connections.
#[derive(Debug)]
pub struct Pool {
    options: ConnectOptions,
    slots: Vec<Mutex<Option<Connection>>>,
    next: AtomicUsize,
}

impl Pool {
    /// A pool of at most `size` connections (at least one).
    pub fn new(options: ConnectOptions, size: usize) -> Pool {
        let slots = (0..size.max(1)).map(|_| Mutex::new(None)).collect();
        Pool { options, slots, next: AtomicUsize::new(0) }
    }

    /// How many connections the pool may hold.
    pub fn size(&self) -> usize {
        self.slots.len()
    }

    /// A connection: the next slot's, opened (or reopened) if needed.
    pub async fn get(&self) -> Result<Connection, Error> {
        let index = self.next.fetch_add(1, Ordering::Relaxed) % self.slots.len();
        let mut slot = self.slots[index].lock().await;
        if let Some(conn) = slot.as_ref().filter(|c| !c.is_closed()) {
            return Ok(conn.clone());
        }
        let conn = Connection::connect(self.options.clone()).await?;
        *slot = Some(conn.clone());
        Ok(conn)
    }
}

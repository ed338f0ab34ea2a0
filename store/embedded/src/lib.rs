//! Cairn in-process: open a data directory and read and write it without a
//! socket. Same engine, same command code, same on-disk format and the same
//! durability tiers as the `cairn` server, which can open the directory
//! afterwards (and the reverse); a lock file keeps both from opening it at
//! once. See `docs/embedded.md`.
//!
//! ```no_run
//! use cairn_embedded::{Db, DbOptions};
//! # fn main() -> Result<(), cairn_embedded::Error> {
//! let db = Db::open("./data", DbOptions::default())?; // `sync`: a returned write is on disk
//! db.set("greeting", "hello")?;
//! assert_eq!(db.get("greeting")?.as_deref(), Some(&b"hello"[..]));
//! assert_eq!(db.incr("visits")?, 1);
//! db.close()?;
//! # Ok(())
//! # }
//! ```
//!
//! # Layout
//!
//! - [`db`]: [`Db`]: open (lock, recover, background threads), close,
//!   handles on other databases ([`Db::select`]), and [`Db::command`], the
//!   generic call everything else goes through.
//! - [`ops`]: the typed calls (get, set, incr, del, exists, expire, ttl, ...).
//! - [`batch`]: [`Batch`], several commands as one transaction (MULTI/EXEC).
//! - [`options`]: [`DbOptions`] (tier, databases, snapshots) and [`SetOptions`].
//! - [`session`]: pooled in-process clients that run commands through the
//!   server's dispatcher and wait for durability in the `sync` tier.
//! - [`reply`]: [`Reply`], the decoded reply of a command.
//! - [`background`]: active expiry and the snapshot scheduler threads.
//! - [`error`]: [`Error`], what every call may return.

mod background;
pub mod batch;
pub mod db;
pub mod error;
pub mod ops;
pub mod options;
pub mod reply;
mod session;

pub use batch::Batch;
pub use db::Db;
pub use error::{Error, Result};
pub use ops::Ttl;
pub use options::{DbOptions, SetCondition, SetOptions, Tier};
pub use reply::Reply;

/// The name of the lock file inside a data directory.
pub use cairn_server::persistence::lock::LOCK_FILE;

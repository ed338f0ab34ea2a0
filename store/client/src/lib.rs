//! An async client for Cairn's native binary protocol
//! (`docs/native-protocol.md`).
//!
//! # Layout
//!
//! - [`options`]: where to connect and how ([`ConnectOptions`]).
//! - [`connection`]: [`Connection`], a cheap-to-clone handle on one TCP
//!   connection. Many requests may be in flight at once (pipelining): a
//!   writer task sends whatever callers queued in one write, a reader task
//!   matches replies to requests by id.
//! - [`commands`]: the typed calls (`get`, `set`, `set_with`, `del`, `exists`,
//!   `incr_by`, `expire`, `mget`, `mset`, `command`).
//! - [`batch`]: [`Batch`], many operations in one frame and one reply.
//! - [`pool`]: [`Pool`], a bounded set of connections handed out round-robin.
//! - [`value`]: owned reply values; [`error`]: [`Error`], every failure as a
//!   typed value.
//!
//! # Example
//!
//! ```no_run
//! use std::time::Duration;
//! use cairn_client::{ConnectOptions, Connection, SetOptions};
//!
//! # async fn demo() -> Result<(), cairn_client::Error> {
//! let conn = Connection::connect(ConnectOptions::new("127.0.0.1:7379")).await?;
//! conn.set("greeting", "hello").await?;
//! assert_eq!(conn.get("greeting").await?.as_deref(), Some(&b"hello"[..]));
//! // Acknowledged only once the write is on disk, whatever the server's tier:
//! conn.durable().set_with("session", "s1", SetOptions::ttl(Duration::from_secs(60))).await?;
//! assert_eq!(conn.incr_by("visits", 1).await?, 1);
//! # Ok(())
//! # }
//! ```

pub mod batch;
pub mod commands;
pub mod connection;
pub mod error;
pub mod options;
pub mod pool;
pub mod value;

pub use batch::Batch;
pub use cairn_native::{SetCondition, Status};
pub use commands::SetOptions;
pub use connection::Connection;
pub use error::Error;
pub use options::ConnectOptions;
pub use pool::Pool;
pub use value::Value;

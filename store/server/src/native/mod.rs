//! The native binary protocol (`docs/native-protocol.md`, codec in the
//! `cairn-native` crate) on `--native-port`.
//!
//! Native connections are accepted on the same worker event loops as RESP
//! connections and run every request through the same dispatcher
//! ([`crate::commands::dispatch`]) with the same per-client state, so
//! authentication, databases, the WAL, statistics, keyspace notifications
//! and WATCH behave exactly as over RESP.
//!
//! - [`serve`](serve()): one connection: handshake, then read a batch of frames,
//!   execute them, wait for durability if asked, one write.
//! - [`session`]: per-connection buffers reused by every request.
//! - [`handshake`]: version check and the HELLO options (auth, user, name, db).
//! - [`execute`]: one frame's operations through the dispatcher.
//! - [`argv`]: a typed operation as the argv of the equivalent command.
//! - [`translate`]: the dispatcher's RESP3 reply as a native outcome.
//! - [`refused`]: commands that cannot run over this protocol.
//! - [`scripts`]: which frames call a script (they run off the worker).

pub mod argv;
pub mod execute;
pub mod handshake;
pub mod refused;
pub mod scripts;
pub mod serve;
pub mod session;
pub mod translate;
pub mod typed;

pub use serve::serve;

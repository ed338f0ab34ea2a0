//! Cairn's storage engine: the sharded keyspace, value types and expiry.
//! It has no sockets and no async runtime, so it can be embedded in-process.
//!
//! # Layout
//!
//! - [`keyspace`]: [`Keyspace`], a power-of-two number of shards, each behind
//!   its own lock; keys map to shards by a fixed hash. Multi-shard operations
//!   lock in ascending shard order, so they cannot deadlock.
//! - [`table`]: [`Table`], one database's keys inside one shard, with its
//!   expiry index. Every mutation of stored data goes through its methods
//!   (the hook the write-ahead log attaches to).
//! - [`value`]: [`Value`] and [`StrValue`], the stored value types, and how
//!   they report Redis's `OBJECT ENCODING`.
//! - [`types`]: the collection types (list, hash, set, sorted set, stream),
//!   one file each, and the encoding limits.
//! - [`events`]: keyspace events (notification classes, the enabled set,
//!   the sink the server installs); tables raise `new` and `expired`.
//! - [`entry`]: [`Entry`], a value with its absolute expiry and access clock.
//! - [`access`]: what a lookup records for the eviction policies (the access
//!   clock, and the logarithmic counter under an LFU policy).
//! - [`key`]: [`Key`], a stored key (short keys inline in the table slot).
//! - [`clock`]: wall-clock milliseconds and the coarse access clock.
//! - [`number`]: strict integer and float parsing/formatting with Redis's rules.
//! - [`glob`]: Redis's glob matcher (KEYS, SCAN MATCH, CONFIG GET).
//! - [`thread_priority`]: nice values for background threads (the `async`
//!   syncer, snapshots), so request processing goes first;
//!   [`thread_affinity`]: a thread's CPU mask, for syncers started at runtime.
//! - [`rdb`]: Redis's DUMP payload format (RDB value encoding), read and
//!   written for DUMP and RESTORE.
//! - [`durability`]: the write-ahead log with group commit, snapshots,
//!   recovery, and the storage trait crash tests plug a simulated disk into.

pub mod access;
pub mod clock;
pub mod durability;
pub mod entry;
pub mod events;
pub mod glob;
pub mod key;
pub mod keyspace;
pub mod number;
pub mod rdb;
pub mod table;
pub mod thread_affinity;
pub mod thread_priority;
pub mod types;
pub mod value;

pub use entry::Entry;
pub use key::Key;
pub use keyspace::{Keyspace, ShardGuard};
pub use table::Table;
pub use value::{StrValue, Value};

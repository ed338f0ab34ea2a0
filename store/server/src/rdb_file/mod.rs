//! Whole RDB files between Redis and Cairn, over the engine's
//! `rdb::FileReader` and `rdb::FileWriter`:
//!
//! - [`import`]: `--import-rdb PATH` loads a Redis `dump.rdb` at start,
//!   into an empty data directory, during the loading phase, then takes a
//!   snapshot so the import is durable before the server serves.
//! - [`replconf`], [`sync`], [`image`], [`frozen`], [`chunks`]: `redis-cli
//!   --rdb FILE` (`REPLCONF rdb-only 1`, then `SYNC`): a point-in-time RDB
//!   image of every database, streamed in Redis's diskless form (`$EOF:`
//!   and a mark) as the shards are read, in bounded memory, then the
//!   connection closes. Cairn has no replication: a replica's SYNC is
//!   refused.

pub mod chunks;
pub mod frozen;
pub mod image;
pub mod import;
pub mod replconf;
pub mod sync;

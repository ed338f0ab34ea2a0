//! A point-in-time RDB image of the whole dataset, for SYNC, written as
//! Redis 7.0.15 writes `dump.rdb` to any [`Write`] while the shards are
//! read: no more of it is in memory than one key's record and what the
//! writer buffers (see [`super::chunks`]). The image is taken as a snapshot
//! takes its own (every shard marked copy-on-write at one instant, so a
//! writer waits for at most one shard copy; [`super::frozen`]), one shard
//! at a time, so each database is selected once per shard that holds its
//! keys: SELECTDB, then RESIZEDB with that shard's counts (only a size
//! hint; Redis's `rdbLoad` and Cairn's reader accept a database selected
//! again). Runs on a blocking thread, never on a worker.

use std::io::Write;

use cairn_engine::keyspace::Shard;
use cairn_engine::rdb::{key_record, FileInfo, FileWriter};

use super::frozen::FrozenShards;
use crate::server::Server;

/// What goes in the image (`REPLCONF rdb-filter-only`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Contents {
    pub keys: bool,
    pub functions: bool,
}

/// Writes the RDB file of the dataset as of now to `out` (flushed at the
/// end). An error from `out` stops it, and the shards not read yet are
/// thawed.
pub fn write<W: Write>(server: &Server, contents: Contents, out: W) -> std::io::Result<()> {
    let p = &server.persistence;
    let keyspace = &server.keyspace;
    let library_code = || p.libraries.read().libraries.values().map(|l| l.code.to_vec()).collect::<Vec<_>>();
    let (shards, libraries) = if contents.keys {
        let (shards, libraries) = FrozenShards::freeze(keyspace, &p.snapshot_lock, library_code);
        (Some(shards), libraries)
    } else {
        (None, library_code())
    };
    let now = cairn_engine::clock::now_ms();
    let info = FileInfo { ctime_secs: now / 1000, used_mem: crate::used_memory::used_memory() };
    let mut writer = FileWriter::new(out, info)?;
    if contents.functions {
        for code in &libraries {
            writer.function(code)?;
        }
    }
    drop(libraries);
    let mut record = Vec::new();
    for shard in shards.into_iter().flatten() {
        write_shard(&mut writer, &shard, keyspace.num_dbs(), now, &mut record)?;
    }
    writer.finish()?;
    Ok(())
}

/// One shard's live keys, database by database; a database with none is
/// not selected. `record` is a reused buffer.
fn write_shard<W: Write>(
    writer: &mut FileWriter<W>,
    shard: &Shard,
    num_dbs: usize,
    now: u64,
    record: &mut Vec<u8>,
) -> std::io::Result<()> {
    for db in 0..num_dbs {
        let table = shard.db_ref(db);
        let mut selected = false;
        for (key, entry) in table.iter(now) {
            if !selected {
                writer.select_db(db as u64, table.len() as u64, table.expires_len() as u64)?;
                selected = true;
            }
            record.clear();
            key_record(record, key.as_bytes(), &entry.value, entry.expire_at());
            writer.records(record)?;
        }
    }
    Ok(())
}

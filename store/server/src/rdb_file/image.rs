//! A point-in-time RDB image of the whole dataset, for SYNC: taken as a
//! snapshot takes its image (every shard marked copy-on-write at one
//! instant, so writers wait for at most one shard copy), then written as
//! Redis 7.0.15 writes `dump.rdb`. Runs on a blocking thread, never on a
//! worker. The image is built in memory (one database's records at a time
//! join it, so RESIZEDB can give each database's key count).

use cairn_engine::rdb::{key_record, FileInfo, FileWriter};

use crate::server::Server;

/// What goes in the image (`REPLCONF rdb-filter-only`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Contents {
    pub keys: bool,
    pub functions: bool,
}

/// One database's records while the shards are read.
#[derive(Default)]
struct DbRecords {
    keys: u64,
    expires: u64,
    bytes: Vec<u8>,
}

/// The RDB file of the dataset as of now.
pub fn build(server: &Server, contents: Contents) -> std::io::Result<Vec<u8>> {
    let p = &server.persistence;
    let keyspace = &server.keyspace;
    let now = cairn_engine::clock::now_ms();
    // One copy-on-write image at a time: a snapshot waits for this one.
    let _one = p.snapshot_lock.lock();
    let libraries: Vec<Vec<u8>> =
        keyspace.begin_freeze(|| p.libraries.read().libraries.values().map(|l| l.code.to_vec()).collect());
    let mut dbs: Vec<DbRecords> = (0..keyspace.num_dbs()).map(|_| DbRecords::default()).collect();
    for index in 0..keyspace.num_shards() {
        let shard = keyspace.take_frozen(index);
        if !contents.keys {
            continue;
        }
        for (db, records) in dbs.iter_mut().enumerate() {
            for (key, entry) in shard.db_ref(db).iter(now) {
                let expire = entry.expire_at();
                key_record(&mut records.bytes, key.as_bytes(), &entry.value, expire);
                records.keys += 1;
                records.expires += u64::from(expire.is_some());
            }
        }
    }
    let info = FileInfo { ctime_secs: now / 1000, used_mem: crate::used_memory::used_memory() };
    let mut writer = FileWriter::new(Vec::new(), info)?;
    if contents.functions {
        for code in &libraries {
            writer.function(code)?;
        }
    }
    for (db, records) in dbs.into_iter().enumerate().filter(|(_, r)| r.keys > 0) {
        writer.select_db(db as u64, records.keys, records.expires)?;
        writer.records(&records.bytes)?;
    }
    let (image, _) = writer.finish()?;
    Ok(image)
}

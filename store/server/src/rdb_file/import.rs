//! `--import-rdb PATH`: loading a Redis or Valkey RDB file at start
//! (`REDIS0001` to `REDIS0012`, Valkey 9's `VALKEY080`; what the engine's
//! `rdb::FileReader` reads).
//!
//! Runs after recovery, while the server still answers `-LOADING` and
//! `/readyz` is not ready. It is refused unless the data directory holds no
//! Cairn data (no snapshot, no logged record), so two datasets never mix.
//! The file is streamed key by key; each value is decoded by the payload
//! decoder RESTORE uses and inserted as RESTORE inserts it (so encodings
//! follow the current limits); keys already expired are skipped, as Redis
//! skips them on load. Function libraries (FUNCTION2) are loaded as
//! `FUNCTION LOAD` loads them. Nothing is logged per key: a snapshot taken at the
//! end makes the whole import durable at once, before the first client is
//! served. A failed import leaves the data directory as empty as it was: a
//! file holding what Cairn cannot keep (a hash with field TTLs, module data)
//! is refused whole, never loaded without it.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Instant;

use cairn_engine::durability::snapshot;
use cairn_engine::entry::NO_EXPIRY;
use cairn_engine::rdb::{FileItem, FileReader, RdbFileError};

use crate::persistence::recover::Recovered;
use crate::server::Server;

/// Bytes read from the file at a time.
const READ_BUFFER: usize = 1 << 20;

/// Why an import refused to run or stopped.
#[derive(Debug, thiserror::Error)]
pub enum ImportError {
    #[error(
        "--import-rdb {path}: the data directory {dir} already holds Cairn data (a snapshot or logged writes); \
         import into an empty data directory, or start without --import-rdb to keep the data it holds"
    )]
    NotEmpty { path: PathBuf, dir: PathBuf },
    #[error("--import-rdb {path}: cannot open the file: {source}")]
    Open { path: PathBuf, source: std::io::Error },
    #[error("--import-rdb {path}: {source}")]
    File { path: PathBuf, source: RdbFileError },
    #[error("--import-rdb {path}: the file has keys in database {db}, but the server has {databases} (--databases)")]
    Database { path: PathBuf, db: u64, databases: usize },
    #[error("--import-rdb {path}: key '{key}' appears twice in database {db}")]
    Duplicate { path: PathBuf, db: u64, key: String },
    #[error("--import-rdb {path}: function library {index} of the file does not load (the log says why)")]
    Function { path: PathBuf, index: usize },
    #[error("--import-rdb {path}: cannot check the data directory: {reason}")]
    Check { path: PathBuf, reason: String },
    #[error("--import-rdb {path}: the snapshot that makes the import durable failed: {reason}")]
    Snapshot { path: PathBuf, reason: String },
}

/// What an import loaded.
#[derive(Debug, Default, Clone)]
pub struct Imported {
    /// The file's header (`REDIS0011`, `VALKEY080`).
    pub header: String,
    pub keys_per_db: BTreeMap<u64, u64>,
    pub expired_skipped: u64,
    pub empty_skipped: u64,
    pub functions: usize,
    pub seconds: f64,
}

impl Imported {
    /// `db0=12 db3=4`, for the log line.
    pub fn per_db(&self) -> String {
        let parts: Vec<String> = self.keys_per_db.iter().map(|(db, n)| format!("db{db}={n}")).collect();
        parts.join(" ")
    }
}

/// Imports `path` into the (empty) server, then snapshots it.
pub fn run(server: &Server, path: &Path, recovered: &Recovered) -> Result<Imported, ImportError> {
    let started = Instant::now();
    ensure_empty(server, path, recovered)?;
    let file = std::fs::File::open(path).map_err(|source| ImportError::Open { path: path.into(), source })?;
    let reader = FileReader::new(std::io::BufReader::with_capacity(READ_BUFFER, file))
        .map_err(|source| ImportError::File { path: path.into(), source })?;
    let mut imported = load(server, path, reader)?;
    crate::persistence::snapshot::take(&server.persistence, &server.keyspace)
        .map_err(|reason| ImportError::Snapshot { path: path.into(), reason })?;
    imported.seconds = started.elapsed().as_secs_f64();
    Ok(imported)
}

/// Refused when recovery found a snapshot or replayed any record.
fn ensure_empty(server: &Server, path: &Path, recovered: &Recovered) -> Result<(), ImportError> {
    let p = &server.persistence;
    let snapshot = snapshot::newest(p.storage.as_ref(), &p.dir)
        .map_err(|e| ImportError::Check { path: path.into(), reason: e.to_string() })?;
    if snapshot.is_some() || recovered.log.records_replayed > 0 || recovered.snapshot_records > 0 {
        return Err(ImportError::NotEmpty { path: path.into(), dir: p.dir.clone() });
    }
    Ok(())
}

/// Inserts every key of the file.
fn load<R: std::io::Read>(server: &Server, path: &Path, mut reader: FileReader<R>) -> Result<Imported, ImportError> {
    let mut imported = Imported { header: reader.format().header(), ..Imported::default() };
    let databases = server.keyspace.num_dbs();
    while let Some(item) = reader.next_item().map_err(|source| ImportError::File { path: path.into(), source })? {
        let db = usize::try_from(item.db).ok().filter(|&db| db < databases);
        let Some(db) = db else {
            return Err(ImportError::Database { path: path.into(), db: item.db, databases });
        };
        let now = cairn_engine::clock::now_ms();
        if item.expire_at_ms.is_some_and(|at| at <= now) {
            imported.expired_skipped += 1;
            continue;
        }
        insert(server, path, db, item, now)?;
        *imported.keys_per_db.entry(db as u64).or_default() += 1;
    }
    imported.empty_skipped = reader.empty_skipped();
    imported.functions = load_functions(server, path, reader.take_functions())?;
    Ok(imported)
}

/// Loads the file's function libraries as recovery loads a snapshot's
/// (through the command table), without REPLACE: one library twice is an error.
fn load_functions(server: &Server, path: &Path, libraries: Vec<Vec<u8>>) -> Result<usize, ImportError> {
    let mut replayer = crate::persistence::replay::Replayer::new(server);
    let now = cairn_engine::clock::now_ms();
    for (index, code) in libraries.iter().enumerate() {
        let loaded = replayer.apply(now, 0, &[b"FUNCTION", b"LOAD", code]);
        if loaded.is_err() || replayer.errors > 0 {
            return Err(ImportError::Function { path: path.into(), index });
        }
    }
    Ok(libraries.len())
}

/// Inserts one key as RESTORE does; a key already there is a duplicate
/// in the file (Redis stops loading on one too).
fn insert(server: &Server, path: &Path, db: usize, item: FileItem, now: u64) -> Result<(), ImportError> {
    let FileItem { key, value, expire_at_ms, .. } = item;
    let mut shard = server.keyspace.lock_key(&key);
    let table = shard.db(db);
    if table.get(&key, now).is_some() {
        let key = String::from_utf8_lossy(&key).into_owned();
        return Err(ImportError::Duplicate { path: path.into(), db: db as u64, key });
    }
    table.insert(&key, value, expire_at_ms.unwrap_or(NO_EXPIRY), now);
    Ok(())
}

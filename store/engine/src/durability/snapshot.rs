//! Snapshot files: a point-in-time image of the whole keyspace, as the
//! commands that rebuild it (see [`super::rebuild`]), in the WAL's record
//! format, with the LSN of the last log record it includes.
//!
//! ```text
//! snapshot-<lsn, 20 digits>.snap
//! header (64 bytes): magic "CAIRNSNP", version u32, reserved u32, lsn u64,
//!                    created_ms u64, reserved, crc32c of bytes 0..60 at 60
//! records:           as in the WAL (kind 1, one command each; the LSN field
//!                    counts records from 1; durable hint 0)
//! trailer (32 bytes): magic "CAIRNEND", record count u64, record bytes u64,
//!                    crc32c of bytes 0..24 at 24, 4 reserved bytes
//! ```
//!
//! Written as `snapshot-<lsn>.tmp`, fsynced, renamed, and the directory
//! fsynced; only then are older snapshots and the WAL segments it covers
//! removed. A snapshot without a valid trailer is incomplete and never used.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use thiserror::Error;

use super::record::{self, Header, Kind, Lsn};
use super::storage::{read_all, Storage, StorageFile};

pub const MAGIC: &[u8; 8] = b"CAIRNSNP";
pub const END_MAGIC: &[u8; 8] = b"CAIRNEND";
pub const VERSION: u32 = 1;
const HEADER_LEN: usize = 64;
const TRAILER_LEN: usize = 32;
const FLUSH_AT: usize = 1 << 20;

/// File name of the snapshot at `lsn`.
pub fn name(lsn: Lsn) -> String {
    format!("snapshot-{lsn:020}.snap")
}

pub fn parse_name(name: &str) -> Option<Lsn> {
    name.strip_prefix("snapshot-")?.strip_suffix(".snap")?.parse().ok()
}

fn temp_name(lsn: Lsn) -> String {
    format!("snapshot-{lsn:020}.tmp")
}

/// Why a snapshot could not be written or read.
#[derive(Debug, Error)]
pub enum SnapshotError {
    #[error("snapshot i/o on {path}: {source}")]
    Io { path: String, source: std::io::Error },
    #[error("snapshot {file} is damaged: {reason}")]
    Corrupt { file: String, reason: String },
    #[error("replaying snapshot {file}: {reason}")]
    Apply { file: String, reason: String },
}

/// Writes one snapshot.
#[derive(Debug)]
pub struct SnapshotWriter {
    storage: Arc<dyn Storage>,
    dir: PathBuf,
    lsn: Lsn,
    time_ms: u64,
    file: Box<dyn StorageFile>,
    buf: Vec<u8>,
    offset: u64,
    records: u64,
    record_bytes: u64,
}

impl SnapshotWriter {
    /// Starts `snapshot-<lsn>.tmp` in `dir`.
    pub fn create(storage: Arc<dyn Storage>, dir: &Path, lsn: Lsn, time_ms: u64) -> Result<Self, SnapshotError> {
        let path = dir.join(temp_name(lsn));
        let file = storage.create(&path).map_err(|source| io_error(&path, source))?;
        let mut header = [0u8; HEADER_LEN];
        header[0..8].copy_from_slice(MAGIC);
        header[8..12].copy_from_slice(&VERSION.to_le_bytes());
        header[16..24].copy_from_slice(&lsn.to_le_bytes());
        header[24..32].copy_from_slice(&time_ms.to_le_bytes());
        let crc = super::checksum::crc32c(&header[..60]);
        header[60..64].copy_from_slice(&crc.to_le_bytes());
        Ok(SnapshotWriter {
            storage,
            dir: dir.to_path_buf(),
            lsn,
            time_ms,
            file,
            buf: header.to_vec(),
            offset: 0,
            records: 0,
            record_bytes: 0,
        })
    }

    /// Adds one command.
    pub fn add(&mut self, db: u32, args: &[&[u8]]) -> Result<(), SnapshotError> {
        self.records += 1;
        let header = Header { lsn: self.records, time_ms: self.time_ms, durable_hint: 0, kind: Kind::Command };
        let len = record::encode(&mut self.buf, header, 1, |out| record::put_command(out, db, args));
        self.record_bytes += len as u64;
        if self.buf.len() >= FLUSH_AT {
            self.flush()?;
        }
        Ok(())
    }

    fn flush(&mut self) -> Result<(), SnapshotError> {
        let path = self.dir.join(temp_name(self.lsn));
        self.file.write_at(self.offset, &self.buf).map_err(|source| io_error(&path, source))?;
        self.offset += self.buf.len() as u64;
        self.buf.clear();
        Ok(())
    }

    /// Writes the trailer, fsyncs, renames into place and fsyncs the
    /// directory. Returns the final file name and its size.
    pub fn finish(mut self) -> Result<(String, u64), SnapshotError> {
        let mut trailer = [0u8; TRAILER_LEN];
        trailer[0..8].copy_from_slice(END_MAGIC);
        trailer[8..16].copy_from_slice(&self.records.to_le_bytes());
        trailer[16..24].copy_from_slice(&self.record_bytes.to_le_bytes());
        let crc = super::checksum::crc32c(&trailer[..24]);
        trailer[24..28].copy_from_slice(&crc.to_le_bytes());
        self.buf.extend_from_slice(&trailer);
        self.flush()?;
        let temp = self.dir.join(temp_name(self.lsn));
        self.file.sync_all().map_err(|source| io_error(&temp, source))?;
        let final_name = name(self.lsn);
        let final_path = self.dir.join(&final_name);
        self.storage.rename(&temp, &final_path).map_err(|source| io_error(&final_path, source))?;
        self.storage.sync_dir(&self.dir).map_err(|source| io_error(&self.dir, source))?;
        Ok((final_name, self.offset))
    }

    /// Abandons the snapshot, removing its temporary file.
    pub fn abandon(self) {
        let _ = self.storage.remove(&self.dir.join(temp_name(self.lsn)));
    }
}

fn io_error(path: &Path, source: std::io::Error) -> SnapshotError {
    SnapshotError::Io { path: path.display().to_string(), source }
}

/// A snapshot found on disk.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SnapshotInfo {
    pub name: String,
    pub lsn: Lsn,
    pub created_ms: u64,
    pub records: u64,
}

/// The newest snapshot's name and LSN, if any.
pub fn newest(storage: &dyn Storage, dir: &Path) -> Result<Option<(Lsn, String)>, SnapshotError> {
    let names = storage.list(dir).map_err(|source| io_error(dir, source))?;
    Ok(names.into_iter().filter_map(|n| parse_name(&n).map(|l| (l, n))).max())
}

/// Reads and checks a snapshot, calling `apply(time_ms, db, args)` for each command
/// (nothing is applied unless the whole file checks out).
pub fn load(
    storage: &dyn Storage,
    dir: &Path,
    file_name: &str,
    mut apply: impl FnMut(u64, u32, &[&[u8]]) -> Result<(), String>,
) -> Result<SnapshotInfo, SnapshotError> {
    let path = dir.join(file_name);
    let file = storage.open(&path).map_err(|source| io_error(&path, source))?;
    let bytes = read_all(file.as_ref()).map_err(|source| io_error(&path, source))?;
    let corrupt = |reason: String| SnapshotError::Corrupt { file: file_name.to_string(), reason };
    let (lsn, created_ms, records) = check(&bytes).map_err(corrupt)?;
    let body = &bytes[HEADER_LEN..bytes.len() - TRAILER_LEN];
    let mut pos = 0;
    let mut scratch = Vec::new();
    while pos < body.len() {
        let (rec, len) = record::decode_ref(&body[pos..])
            .map_err(|e| corrupt(format!("record at offset {}: {e}", HEADER_LEN + pos)))?;
        rec.for_each_command(&mut scratch, |db, args| apply(rec.time_ms, db, args))
            .map_err(|reason| SnapshotError::Apply { file: file_name.to_string(), reason })?;
        pos += len;
    }
    Ok(SnapshotInfo { name: file_name.to_string(), lsn, created_ms, records })
}

/// Checks header, trailer and every record's checksum; returns (lsn,
/// created_ms, records).
pub fn check(bytes: &[u8]) -> Result<(Lsn, u64, u64), String> {
    if bytes.len() < HEADER_LEN + TRAILER_LEN {
        return Err(format!("too short ({} bytes)", bytes.len()));
    }
    let header = &bytes[..HEADER_LEN];
    if &header[0..8] != MAGIC {
        return Err("bad magic".into());
    }
    if super::checksum::crc32c(&header[..60]) != u32::from_le_bytes([header[60], header[61], header[62], header[63]]) {
        return Err("header checksum mismatch".into());
    }
    let version = u32::from_le_bytes([header[8], header[9], header[10], header[11]]);
    if version != VERSION {
        return Err(format!("unsupported version {version}"));
    }
    let lsn = u64::from_le_bytes(header[16..24].try_into().map_err(|_| "header")?);
    let created_ms = u64::from_le_bytes(header[24..32].try_into().map_err(|_| "header")?);
    let trailer = &bytes[bytes.len() - TRAILER_LEN..];
    if &trailer[0..8] != END_MAGIC
        || super::checksum::crc32c(&trailer[..24])
            != u32::from_le_bytes([trailer[24], trailer[25], trailer[26], trailer[27]])
    {
        return Err("missing or damaged trailer (incomplete snapshot)".into());
    }
    let records = u64::from_le_bytes(trailer[8..16].try_into().map_err(|_| "trailer")?);
    let record_bytes = u64::from_le_bytes(trailer[16..24].try_into().map_err(|_| "trailer")?);
    let body = &bytes[HEADER_LEN..bytes.len() - TRAILER_LEN];
    if record_bytes != body.len() as u64 {
        return Err(format!("trailer says {record_bytes} record bytes, file has {}", body.len()));
    }
    let mut pos = 0;
    let mut count = 0;
    while pos < body.len() {
        let len =
            record::check_frame(&body[pos..]).map_err(|e| format!("record at offset {}: {e}", HEADER_LEN + pos))?;
        pos += len;
        count += 1;
    }
    if count != records {
        return Err(format!("trailer says {records} records, file has {count}"));
    }
    Ok((lsn, created_ms, records))
}

/// Removes snapshots older than `keep` and leftover temporary files.
pub fn remove_older(storage: &dyn Storage, dir: &Path, keep: Lsn) -> Result<usize, SnapshotError> {
    let names = storage.list(dir).map_err(|source| io_error(dir, source))?;
    let mut removed = 0;
    for n in names {
        let old = parse_name(&n).is_some_and(|l| l < keep);
        let temp = n.starts_with("snapshot-") && n.ends_with(".tmp");
        if old || temp {
            storage.remove(&dir.join(&n)).map_err(|source| io_error(&dir.join(&n), source))?;
            removed += 1;
        }
    }
    if removed > 0 {
        storage.sync_dir(dir).map_err(|source| io_error(dir, source))?;
    }
    Ok(removed)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::durability::sim::SimStorage;

    #[test]
    fn write_then_load() {
        let disk: Arc<dyn Storage> = Arc::new(SimStorage::new());
        let dir = Path::new("/data");
        let mut w = SnapshotWriter::create(disk.clone(), dir, 42, 1000).unwrap();
        w.add(0, &[b"SET", b"a", b"1"]).unwrap();
        w.add(3, &[b"RPUSH", b"l", b"x", b"y"]).unwrap();
        let (name, _) = w.finish().unwrap();
        assert_eq!(newest(disk.as_ref(), dir).unwrap(), Some((42, name.clone())));
        let mut seen = Vec::new();
        let info = load(disk.as_ref(), dir, &name, |_, db, args| {
            seen.push((db, args.iter().map(|a| a.to_vec()).collect::<Vec<_>>()));
            Ok(())
        })
        .unwrap();
        assert_eq!(info.lsn, 42);
        assert_eq!(info.records, 2);
        assert_eq!(seen[1].0, 3);
    }

    #[test]
    fn damage_anywhere_is_detected() {
        let disk = SimStorage::new();
        let shared: Arc<dyn Storage> = Arc::new(disk.clone());
        let dir = Path::new("/data");
        let mut w = SnapshotWriter::create(shared.clone(), dir, 7, 0).unwrap();
        w.add(0, &[b"SET", b"key", b"value"]).unwrap();
        let (name, _) = w.finish().unwrap();
        let path = dir.join(&name);
        let good = disk.contents(&path).unwrap();
        for i in 0..good.len() {
            if i >= good.len() - 4 {
                continue; // the trailer's reserved bytes
            }
            let mut bad = good.clone();
            bad[i] ^= 0x40;
            assert!(check(&bad).is_err(), "flip at {i} unnoticed");
        }
        assert!(check(&good[..good.len() - 1]).is_err());
    }
}

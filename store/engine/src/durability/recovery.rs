//! Reading the log back at startup: segments in LSN order, records after the
//! snapshot's LSN handed to the caller (who applies them through the same
//! code as live traffic), a torn tail truncated and reported, and corruption
//! (a damaged record that something durable follows, a gap, an overlap)
//! refused with the file and offset.

use std::path::Path;
use std::sync::Arc;

use thiserror::Error;

use super::record::{Lsn, RecordRef};
use super::segment::{self, ScanEnd, SegmentHeader};
use super::storage::{read_all, Storage};
use super::wal::LogTail;

/// Bytes zeroed after a torn tail, so a later crash cannot mistake the old
/// bytes for records.
const TAIL_WIPE: u64 = 64 * 1024;

/// Why recovery stopped.
#[derive(Debug, Error)]
pub enum RecoveryError {
    #[error("cannot read {path}: {source}")]
    Io { path: String, source: std::io::Error },
    #[error("WAL corruption in {file} at offset {offset}: {reason} (run `cairn check` for a report; `cairn check --repair --yes-truncate` truncates the log here)")]
    Corrupt { file: String, offset: u64, reason: String },
    #[error("replaying LSN {lsn} failed: {reason}")]
    Apply { lsn: Lsn, reason: String },
}

/// What recovery found.
#[derive(Debug, Default, Clone)]
pub struct RecoveryReport {
    pub segments: usize,
    pub records_replayed: u64,
    pub records_skipped: u64,
    /// A torn tail that was cut off: file, offset, why.
    pub torn_tail: Option<(String, u64, String)>,
    /// LSN of the last record read.
    pub last_lsn: Lsn,
}

/// Options for [`recover_log`].
#[derive(Debug, Clone, Copy, Default)]
pub struct RecoverOptions {
    /// Only read and report; change nothing on disk.
    pub read_only: bool,
    /// Truncate at the first corruption instead of refusing (`--repair`).
    pub repair: bool,
}

/// Replays every record after `after_lsn` (the snapshot's LSN) in order:
/// `apply(record, scratch)` gets a reusable vector for the record's
/// argument slices (see [`RecordRef::for_each_command`]).
pub fn recover_log(
    storage: &Arc<dyn Storage>,
    dir: &Path,
    after_lsn: Lsn,
    options: RecoverOptions,
    mut apply: impl for<'a> FnMut(RecordRef<'a>, &mut Vec<&'a [u8]>) -> Result<(), String>,
) -> Result<(LogTail, RecoveryReport), RecoveryError> {
    let io_err = |path: &Path| {
        let path = path.display().to_string();
        move |source| RecoveryError::Io { path, source }
    };
    let names = storage.list(dir).map_err(io_err(dir))?;
    let mut segments: Vec<(Lsn, String)> =
        names.iter().filter_map(|n| segment::parse_name(n).map(|b| (b, n.clone()))).collect();
    segments.sort();
    let mut tail = LogTail {
        next_lsn: after_lsn + 1,
        spares: names.iter().filter(|n| segment::is_spare_name(n)).cloned().collect(),
        ..LogTail::default()
    };
    let mut report = RecoveryReport { segments: segments.len(), last_lsn: after_lsn, ..RecoveryReport::default() };
    if segments.is_empty() {
        return Ok((tail, report));
    }
    let start = segments.iter().rposition(|(base, _)| *base <= after_lsn + 1).unwrap_or(0);
    if segments[start].0 > after_lsn + 1 {
        return Err(RecoveryError::Corrupt {
            file: segments[start].1.clone(),
            offset: 0,
            reason: format!(
                "the log starts at LSN {} but the snapshot only covers up to {after_lsn}",
                segments[start].0
            ),
        });
    }
    let mut next = segments[start].0;
    let mut kept: Vec<(Lsn, String)> = segments[..start].to_vec();
    let mut end_offset = 0;
    let last_index = segments.len() - 1;
    for (index, (base, name)) in segments.iter().enumerate().skip(start) {
        let path = dir.join(name);
        let file = storage.open(&path).map_err(io_err(&path))?;
        let bytes = read_all(file.as_ref()).map_err(io_err(&path))?;
        let header = SegmentHeader::decode(&bytes);
        if header.map(|h| h.base_lsn) != Some(*base) {
            if index == last_index {
                // A rotation cut short before its header was durable: the
                // file is a spare again.
                let spare = segment::spare_name(u64::MAX - index as u64);
                if !options.read_only {
                    storage.rename(&path, &dir.join(&spare)).map_err(io_err(&path))?;
                    tail.spares.push(spare);
                }
                break;
            }
            corrupt_or_repair(name, 0, "bad segment header".into(), &options)?;
            remove_later(storage, dir, &segments[index..], &options).map_err(io_err(dir))?;
            break;
        }
        if *base != next && index > start {
            let reason = format!("segment starts at LSN {base} but the previous one ends before LSN {next}");
            corrupt_or_repair(name, 0, reason, &options)?;
            remove_later(storage, dir, &segments[index..], &options).map_err(io_err(dir))?;
            break;
        }
        // Argument slices of each record's commands, reused record to record.
        let mut scratch = Vec::new();
        let scan = segment::scan(&bytes, *base, |rec| {
            report.last_lsn = rec.lsn;
            if rec.lsn <= after_lsn {
                report.records_skipped += 1;
                return Ok(());
            }
            let lsn = rec.lsn;
            apply(rec, &mut scratch).map_err(|reason| RecoveryError::Apply { lsn, reason })?;
            report.records_replayed += 1;
            Ok(())
        })?;
        next = scan.next_lsn;
        end_offset = scan.end_offset as u64;
        kept.push((*base, name.clone()));
        let later_segment = index < last_index;
        match scan.end {
            ScanEnd::Corrupt { reason } => {
                corrupt_or_repair(name, scan.end_offset as u64, reason, &options)?;
                truncate_here(storage, dir, name, end_offset, bytes.len() as u64, &options).map_err(io_err(&path))?;
                remove_later(storage, dir, &segments[index + 1..], &options).map_err(io_err(dir))?;
                break;
            }
            ScanEnd::Torn { reason } if later_segment => {
                corrupt_or_repair(
                    name,
                    scan.end_offset as u64,
                    format!("{reason}, and later segments exist"),
                    &options,
                )?;
                truncate_here(storage, dir, name, end_offset, bytes.len() as u64, &options).map_err(io_err(&path))?;
                remove_later(storage, dir, &segments[index + 1..], &options).map_err(io_err(dir))?;
                break;
            }
            ScanEnd::Torn { reason } => {
                tracing::warn!(file = %name, offset = scan.end_offset, %reason, "torn WAL tail truncated");
                truncate_here(storage, dir, name, end_offset, bytes.len() as u64, &options).map_err(io_err(&path))?;
                report.torn_tail = Some((name.clone(), end_offset, reason));
            }
            ScanEnd::Clean => {}
        }
    }
    tail.resume = next > after_lsn;
    tail.next_lsn = next.max(after_lsn + 1);
    tail.segments = kept;
    tail.end_offset = end_offset;
    Ok((tail, report))
}

fn corrupt_or_repair(file: &str, offset: u64, reason: String, options: &RecoverOptions) -> Result<(), RecoveryError> {
    if options.repair {
        tracing::warn!(%file, offset, %reason, "repair: truncating the WAL at the first corruption");
        return Ok(());
    }
    Err(RecoveryError::Corrupt { file: file.to_string(), offset, reason })
}

/// Zeroes the bytes after the last valid record, so they cannot be taken for
/// records later, and syncs them.
fn truncate_here(
    storage: &Arc<dyn Storage>,
    dir: &Path,
    name: &str,
    offset: u64,
    len: u64,
    options: &RecoverOptions,
) -> std::io::Result<()> {
    if options.read_only {
        return Ok(());
    }
    let wipe = TAIL_WIPE.min(len.saturating_sub(offset));
    if wipe == 0 {
        return Ok(());
    }
    let mut file = storage.open(&dir.join(name))?;
    file.write_at(offset, &vec![0u8; wipe as usize])?;
    file.sync_data()
}

/// Removes segments after a repaired corruption.
fn remove_later(
    storage: &Arc<dyn Storage>,
    dir: &Path,
    later: &[(Lsn, String)],
    options: &RecoverOptions,
) -> std::io::Result<()> {
    if options.read_only || later.is_empty() {
        return Ok(());
    }
    for (_, name) in later {
        storage.remove(&dir.join(name))?;
    }
    storage.sync_dir(dir)
}

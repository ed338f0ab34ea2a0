//! `cairn check DATA_DIR [--repair --yes-truncate]`: verifies the snapshot
//! and the write-ahead log without starting a server, and prints a report.
//! With `--repair` (and the confirmation flag) it truncates the log at the
//! first corruption, losing what follows it, and only while it holds the
//! data directory's lock (no server or embedded database has it open). The
//! lock file itself is not part of the format and is ignored.

use std::fmt::Write as _;
use std::path::Path;
use std::sync::Arc;

use cairn_engine::durability::{recover_log, snapshot, storage::read_all, OsStorage, RecoverOptions, Storage};

/// The outcome of a check.
#[derive(Debug)]
pub struct CheckReport {
    pub text: String,
    pub healthy: bool,
}

/// Checks `dir`; repairs only when `repair` is set.
pub fn check(dir: &Path, repair: bool) -> CheckReport {
    let storage: Arc<dyn Storage> = Arc::new(OsStorage);
    let mut text = String::new();
    let mut healthy = true;
    let _ = writeln!(text, "data directory: {}", dir.display());
    // Repairing truncates the log: never under a running server or Db.
    let _lock = if repair {
        match super::lock::DirLock::acquire(dir) {
            Ok(lock) => Some(lock),
            Err(e) => {
                let _ = writeln!(text, "repair refused: {e}");
                let _ = writeln!(text, "result: PROBLEMS FOUND");
                return CheckReport { text, healthy: false };
            }
        }
    } else {
        None
    };
    let mut after = 0;
    match snapshot::newest(storage.as_ref(), dir) {
        Ok(None) => {
            let _ = writeln!(text, "snapshot: none");
        }
        Ok(Some((lsn, name))) => {
            let checked = storage.open(&dir.join(&name)).and_then(|f| read_all(f.as_ref()));
            match checked.map(|bytes| snapshot::check(&bytes)) {
                Ok(Ok((_, created, records))) => {
                    let _ = writeln!(
                        text,
                        "snapshot: {name} ok (covers LSN {lsn}, {records} records, created {created} ms)"
                    );
                    after = lsn;
                }
                Ok(Err(reason)) => {
                    healthy = false;
                    let _ = writeln!(text, "snapshot: {name} DAMAGED: {reason}");
                }
                Err(e) => {
                    healthy = false;
                    let _ = writeln!(text, "snapshot: {name} unreadable: {e}");
                }
            }
        }
        Err(e) => {
            healthy = false;
            let _ = writeln!(text, "snapshot: cannot list: {e}");
        }
    }
    let options = RecoverOptions { read_only: !repair, repair };
    let mut commands = 0u64;
    match recover_log(&storage, dir, after, options, |rec, _| {
        commands += rec.len() as u64;
        Ok(())
    }) {
        Ok((tail, report)) => {
            let _ = writeln!(
                text,
                "wal: {} segment(s), {} record(s) after the snapshot ({commands} command(s)), {} covered by it; next LSN {}",
                report.segments, report.records_replayed, report.records_skipped, tail.next_lsn
            );
            if let Some((file, offset, reason)) = report.torn_tail {
                let action = if repair { "truncated" } else { "would be truncated at startup" };
                let _ = writeln!(text, "wal: torn tail in {file} at offset {offset} ({reason}): {action}");
            }
            if repair {
                let _ = writeln!(text, "repair: done");
            }
        }
        Err(e) => {
            healthy = false;
            let _ = writeln!(text, "wal: {e}");
        }
    }
    let _ = writeln!(text, "result: {}", if healthy { "OK" } else { "PROBLEMS FOUND" });
    CheckReport { text, healthy }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn repair_needs_the_lock_and_check_ignores_the_lock_file() {
        let dir = std::env::temp_dir().join(format!("cairn-check-lock-{}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("dir");
        let held = super::super::lock::DirLock::acquire(&dir).expect("lock");
        let refused = check(&dir, true);
        assert!(!refused.healthy);
        assert!(refused.text.contains("repair refused"), "{}", refused.text);
        let read_only = check(&dir, false);
        assert!(read_only.healthy, "{}", read_only.text);
        drop(held);
        assert!(check(&dir, true).healthy);
        let _ = std::fs::remove_dir_all(&dir);
    }
}

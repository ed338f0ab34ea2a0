//! The Cairn side: an embedded `Db` in the `sync` tier, SET per append.

use std::path::Path;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use anyhow::Context;
use cairn_embedded::{Db, DbOptions, Tier};

use crate::run::{key, measure, Measured, Target};
use crate::Args;

struct Cairn(Db);

impl Target for Cairn {
    fn append(&self, writer: usize, n: usize, value: &[u8]) -> anyhow::Result<()> {
        Ok(self.0.set(key(writer, n), value)?)
    }
}

pub fn run(args: &Args, dir: &Path, writers: usize) -> anyhow::Result<Measured> {
    let db =
        Db::open(dir, DbOptions::with_durability(Tier::Sync)).with_context(|| format!("open {}", dir.display()))?;
    wait_for_spare(&db);
    let cairn = Cairn(db);
    let measured = measure(args, writers, &cairn)?;
    if let Some(wal) = cairn.0.server().persistence.wal() {
        let stats = wal.stats();
        let fsyncs = stats.fsyncs.load(Ordering::Relaxed).max(1);
        eprintln!(
            "  cairn log: {fsyncs} fdatasyncs, mean {:.0} us, mean group {:.1} records",
            stats.fsync_micros_total.load(Ordering::Relaxed) as f64 / fsyncs as f64,
            stats.group_records_total.load(Ordering::Relaxed) as f64 / fsyncs as f64
        );
    }
    cairn.0.close()?;
    Ok(measured)
}

/// A fresh log prepares its next (zero-filled) segment in the background
/// right after opening; the timed part starts once that is done, as SQLite's
/// starts after its setup.
fn wait_for_spare(db: &Db) {
    let Some(wal) = db.server().persistence.wal() else { return };
    let deadline = Instant::now() + Duration::from_secs(60);
    while wal.spare_count() == 0 && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(5));
    }
}

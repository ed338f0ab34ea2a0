//! Group commit on the callers' threads (`Wal::sync_through`, the embedded
//! database's `sync` tier): concurrent callers share fdatasyncs, every
//! record a call returned for survives a power cut, a failed fdatasync is
//! reported to every waiting caller, and a full disk makes them wait, not fail.

#![allow(clippy::expect_used, clippy::unwrap_used)]

use std::io;
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

mod common;

use cairn_engine::durability::sim::SimStorage;
use cairn_engine::durability::{LogTail, Storage, StorageFile, Tier, Wal, WalOptions};
use rand::rngs::StdRng;
use rand::SeedableRng;

const WRITERS: u64 = 8;
const RECORDS_PER_WRITER: u64 = 60;

/// The simulated disk with slow fdatasyncs (as a real disk's, against the
/// callers' CPU time), so callers pile up while one is in flight.
#[derive(Debug, Clone)]
struct SlowSync(SimStorage);

#[derive(Debug)]
struct SlowFile(Box<dyn StorageFile>);

const SYNC_TIME: Duration = Duration::from_millis(2);

impl StorageFile for SlowFile {
    fn write_at(&mut self, offset: u64, data: &[u8]) -> io::Result<()> {
        self.0.write_at(offset, data)
    }
    fn read_at(&self, offset: u64, buf: &mut [u8]) -> io::Result<usize> {
        self.0.read_at(offset, buf)
    }
    fn len(&self) -> io::Result<u64> {
        self.0.len()
    }
    fn sync_data(&mut self) -> io::Result<()> {
        std::thread::sleep(SYNC_TIME);
        self.0.sync_data()
    }
    fn sync_all(&mut self) -> io::Result<()> {
        self.0.sync_all()
    }
    fn set_len(&mut self, len: u64) -> io::Result<()> {
        self.0.set_len(len)
    }
}

impl Storage for SlowSync {
    fn create(&self, path: &Path) -> io::Result<Box<dyn StorageFile>> {
        Ok(Box::new(SlowFile(self.0.create(path)?)))
    }
    fn open(&self, path: &Path) -> io::Result<Box<dyn StorageFile>> {
        Ok(Box::new(SlowFile(self.0.open(path)?)))
    }
    fn rename(&self, from: &Path, to: &Path) -> io::Result<()> {
        self.0.rename(from, to)
    }
    fn remove(&self, path: &Path) -> io::Result<()> {
        self.0.remove(path)
    }
    fn list(&self, dir: &Path) -> io::Result<Vec<String>> {
        self.0.list(dir)
    }
    fn sync_dir(&self, dir: &Path) -> io::Result<()> {
        self.0.sync_dir(dir)
    }
    fn create_dir_all(&self, dir: &Path) -> io::Result<()> {
        self.0.create_dir_all(dir)
    }
}

fn open(storage: Arc<dyn Storage>) -> Arc<Wal> {
    storage.create_dir_all(Path::new("/data")).unwrap();
    let options = WalOptions { segment_size: 64 << 10, caller_rounds: true, ..WalOptions::new(Tier::Sync) };
    let tail = LogTail { next_lsn: 1, ..LogTail::default() };
    Arc::new(Wal::open(storage, Path::new("/data"), options, tail, Box::new(|_| {})).expect("open the log"))
}

/// WRITERS threads each append and wait for RECORDS_PER_WRITER records;
/// returns the largest LSN a `sync_through` returned Ok for.
fn write_and_wait(wal: &Arc<Wal>) -> u64 {
    let acked = Arc::new(AtomicU64::new(0));
    let threads: Vec<_> = (0..WRITERS)
        .map(|w| {
            let (wal, acked) = (wal.clone(), acked.clone());
            std::thread::spawn(move || {
                for i in 0..RECORDS_PER_WRITER {
                    let key = format!("w{w}:{i}");
                    let lsn = wal.append_command(0, 0, &[b"SET", key.as_bytes(), b"v"]).unwrap();
                    wal.sync_through(lsn).expect("durable");
                    assert!(wal.durable_lsn() >= lsn, "returned before its record was durable");
                    acked.fetch_max(lsn, Ordering::SeqCst);
                }
            })
        })
        .collect();
    for t in threads {
        t.join().unwrap();
    }
    acked.load(Ordering::SeqCst)
}

#[test]
fn concurrent_callers_share_fdatasyncs_and_survive_a_power_cut() {
    let disk = SimStorage::new();
    let wal = open(Arc::new(SlowSync(disk.clone())));
    let acked = write_and_wait(&wal);
    let records = WRITERS * RECORDS_PER_WRITER;
    assert_eq!(acked, records);
    let fsyncs = wal.stats().fsyncs.load(Ordering::Relaxed);
    // One fdatasync per record would be `records`; callers that park while
    // one is in flight share the next.
    assert!(fsyncs * 2 <= records, "{fsyncs} fdatasyncs for {records} records: callers did not share them");
    disk.crash(true, &mut StdRng::seed_from_u64(7));
    let lsns = common::recovered_lsns(&disk);
    assert!(lsns.windows(2).all(|w| w[1] == w[0] + 1), "records in LSN order without gaps");
    assert!(lsns.last().copied().unwrap_or(0) >= acked, "an acknowledged record was lost");
}

#[test]
fn a_failed_fdatasync_is_reported_to_every_waiting_caller() {
    let disk = SimStorage::new();
    let wal = open(Arc::new(SlowSync(disk.clone())));
    disk.set_fail_sync(true);
    let threads: Vec<_> = (0..WRITERS)
        .map(|w| {
            let wal = wal.clone();
            std::thread::spawn(move || {
                let key = format!("w{w}");
                match wal.append_command(0, 0, &[b"SET", key.as_bytes(), b"v"]) {
                    Ok(lsn) => wal.sync_through(lsn).is_err(),
                    Err(_) => true,
                }
            })
        })
        .collect();
    for t in threads {
        assert!(t.join().unwrap(), "a write was acknowledged after a failed fdatasync");
    }
    assert_eq!(wal.durable_lsn(), 0);
}

#[test]
fn a_full_disk_makes_callers_wait_until_space_returns() {
    let disk = SimStorage::new();
    // Tiny segments: the callers' records need new segments, which the full
    // disk refuses.
    disk.create_dir_all(Path::new("/data")).unwrap();
    let storage: Arc<dyn Storage> = Arc::new(disk.clone());
    let options = WalOptions { segment_size: 4 << 10, caller_rounds: true, ..WalOptions::new(Tier::Sync) };
    let tail = LogTail { next_lsn: 1, ..LogTail::default() };
    let wal = Arc::new(Wal::open(storage, Path::new("/data"), options, tail, Box::new(|_| {})).expect("open"));
    // Let the spare preparer finish, then fill the disk.
    while wal.spare_count() == 0 {
        std::thread::sleep(Duration::from_millis(1));
    }
    disk.set_disk_full(true);
    let big = vec![b'x'; 3 << 10];
    let waiter = {
        let wal = wal.clone();
        std::thread::spawn(move || {
            let mut last = 0;
            for i in 0..4u8 {
                last = wal.append_command(0, 0, &[b"SET", &[i], &big]).unwrap();
            }
            wal.sync_through(last)
        })
    };
    std::thread::sleep(Duration::from_millis(300));
    assert!(!waiter.is_finished(), "a caller returned while its record could not be written");
    disk.set_disk_full(false);
    assert!(waiter.join().unwrap().is_ok(), "the write failed instead of waiting for space");
}

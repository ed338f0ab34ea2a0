//! Pipelined syncs (several syncer threads, fdatasyncs in flight at once):
//! every record at or below the published durable LSN survives a power cut
//! of the simulated disk, however the syncers interleave.

#![allow(clippy::expect_used, clippy::unwrap_used)]

use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

mod common;

use cairn_engine::durability::sim::SimStorage;
use cairn_engine::durability::{LogTail, Storage, Tier, Wal, WalOptions};
use rand::rngs::StdRng;
use rand::SeedableRng;

const WRITERS: u64 = 6;
const RECORDS_PER_WRITER: u64 = 400;

fn open(disk: &SimStorage, syncers: usize, on_durable: Arc<AtomicU64>) -> Wal {
    let storage: Arc<dyn Storage> = Arc::new(disk.clone());
    let options = WalOptions { segment_size: 64 << 10, syncers, ..WalOptions::new(Tier::Sync) };
    let tail = LogTail { next_lsn: 1, ..LogTail::default() };
    Wal::open(
        storage,
        Path::new("/data"),
        options,
        tail,
        Box::new(move |lsn| {
            if lsn != u64::MAX {
                on_durable.fetch_max(lsn, Ordering::SeqCst);
            }
        }),
    )
    .expect("open the log")
}

fn wait_durable(wal: &Wal, lsn: u64) {
    let deadline = Instant::now() + Duration::from_secs(20);
    while wal.durable_lsn() < lsn {
        assert!(Instant::now() < deadline, "lsn {lsn} never became durable");
        std::thread::yield_now();
    }
}

#[test]
fn acknowledged_records_survive_a_power_cut_with_pipelined_syncers() {
    for syncers in [1, 2, 4] {
        let disk = SimStorage::new();
        disk.create_dir_all(Path::new("/data")).unwrap();
        let published = Arc::new(AtomicU64::new(0));
        let wal = Arc::new(open(&disk, syncers, published.clone()));
        let acked = Arc::new(AtomicU64::new(0));
        let threads: Vec<_> = (0..WRITERS)
            .map(|w| {
                let (wal, acked) = (wal.clone(), acked.clone());
                std::thread::spawn(move || {
                    for i in 0..RECORDS_PER_WRITER {
                        let key = format!("w{w}:{i}");
                        let lsn = wal.append_command(0, 0, &[b"SET", key.as_bytes(), b"v"]).unwrap();
                        wait_durable(&wal, lsn);
                        acked.fetch_max(lsn, Ordering::SeqCst);
                    }
                })
            })
            .collect();
        for t in threads {
            t.join().unwrap();
        }
        let durable = wal.durable_lsn();
        assert_eq!(durable, WRITERS * RECORDS_PER_WRITER, "{syncers} syncers");
        assert_eq!(published.load(Ordering::SeqCst), durable, "the callback saw the last durable LSN");
        // Power cut with the syncers still running: nothing unsynced survives.
        disk.crash(false, &mut StdRng::seed_from_u64(syncers as u64));
        let lsns = common::recovered_lsns(&disk);
        assert!(lsns.windows(2).all(|w| w[1] == w[0] + 1), "records in LSN order without gaps");
        assert_eq!(lsns.first(), Some(&1));
        assert!(
            *lsns.last().unwrap() >= acked.load(Ordering::SeqCst),
            "{syncers} syncers: an acknowledged record was lost"
        );
        drop(wal);
    }
}

#[test]
fn torn_writes_never_lose_a_durable_record() {
    for seed in 0..20u64 {
        let disk = SimStorage::new();
        disk.create_dir_all(Path::new("/data")).unwrap();
        let wal = Arc::new(open(&disk, 3, Arc::new(AtomicU64::new(0))));
        let writers: Vec<_> = (0..4u64)
            .map(|w| {
                let wal = wal.clone();
                std::thread::spawn(move || {
                    for i in 0..100u64 {
                        let key = format!("k{w}:{i}");
                        let _ = wal.append_command(0, 0, &[b"SET", key.as_bytes(), b"v"]);
                    }
                })
            })
            .collect();
        for t in writers {
            t.join().unwrap();
        }
        // Cut power at some moment while syncs may be in flight.
        std::thread::sleep(Duration::from_micros(50 * seed));
        let durable = wal.durable_lsn();
        disk.crash(true, &mut StdRng::seed_from_u64(seed));
        let lsns = common::recovered_lsns(&disk);
        let last = lsns.last().copied().unwrap_or(0);
        assert!(last >= durable, "seed {seed}: durable {durable} but recovered only through {last}");
        drop(wal);
    }
}

//! The log measures how long acknowledged records wait for the fdatasync
//! that makes them durable (the loss window actually run outside `sync`):
//! per sync, the age of the oldest record it covered.

#![allow(clippy::expect_used, clippy::unwrap_used)]

use std::path::Path;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::{Duration, Instant};

use cairn_engine::durability::sim::SimStorage;
use cairn_engine::durability::stats::{bucket, WalStats};
use cairn_engine::durability::{LogTail, Storage, Tier, Wal, WalOptions};

fn manual_log(tier: Tier) -> Wal {
    let storage: Arc<dyn Storage> = Arc::new(SimStorage::new());
    storage.create_dir_all(Path::new("/data")).unwrap();
    let options = WalOptions { segment_size: 64 << 10, background: false, ..WalOptions::new(tier) };
    let tail = LogTail { next_lsn: 1, ..LogTail::default() };
    Wal::open(storage, Path::new("/data"), options, tail, Box::new(|_| {})).expect("open")
}

fn set(wal: &Wal, key: &str) {
    wal.append_command(0, 0, &[b"SET", key.as_bytes(), b"v"]).expect("append");
}

#[test]
fn a_sync_records_the_age_of_the_oldest_record_it_covers() {
    let wal = manual_log(Tier::Async);
    let stats = wal.stats();
    let started = Instant::now();
    set(&wal, "first");
    std::thread::sleep(Duration::from_millis(30));
    set(&wal, "second");
    wal.sync_round(true);
    let elapsed = started.elapsed().as_micros() as u64;
    let age = stats.unsynced_age_last_micros.load(Ordering::Relaxed);
    assert!((30_000..=elapsed).contains(&age), "oldest record's age {age} µs, within 30 ms ..= {elapsed} µs");
    assert_eq!(stats.unsynced_age_max_micros.load(Ordering::Relaxed), age);
    assert_eq!(WalStats::read(&stats.unsynced_age_micros_buckets)[bucket(age)], 1);

    // The next sync covers only the record appended after it: a young one.
    set(&wal, "third");
    wal.sync_round(true);
    let young = stats.unsynced_age_last_micros.load(Ordering::Relaxed);
    assert!(young < 30_000, "a record synced at once is young: {young} µs");
    assert_eq!(stats.unsynced_age_max_micros.load(Ordering::Relaxed), age, "the largest age is kept");
    let counted: u64 = WalStats::read(&stats.unsynced_age_micros_buckets).iter().sum();
    assert_eq!(counted, 2, "one age per sync that made records durable");

    // A round with nothing new records nothing.
    wal.sync_round(true);
    let counted: u64 = WalStats::read(&stats.unsynced_age_micros_buckets).iter().sum();
    assert_eq!(counted, 2);
    wal.close();
}

#[test]
fn records_written_without_a_sync_keep_aging_until_one_covers_them() {
    // `everysec` writes each round but syncs only when due: the records a
    // write-only round took still count from their append.
    let wal = manual_log(Tier::Everysec);
    let stats = wal.stats();
    set(&wal, "a");
    wal.sync_round(false);
    assert_eq!(stats.unsynced_age_last_micros.load(Ordering::Relaxed), 0, "written, not synced: no age yet");
    std::thread::sleep(Duration::from_millis(20));
    set(&wal, "b");
    wal.sync_round(true);
    let age = stats.unsynced_age_last_micros.load(Ordering::Relaxed);
    assert!(age >= 20_000, "the sync covered the record written 20 ms before: {age} µs");
    wal.close();
}

#[test]
fn a_syncer_kept_from_its_round_is_reported_starved() {
    use cairn_engine::durability::wal::{ASYNC_STARVED_AFTER_MS, EVERYSEC_STARVED_AFTER_MS};
    let wal = manual_log(Tier::Async);
    assert!(!wal.syncer_starved(), "nothing buffered");
    set(&wal, "k");
    assert!(!wal.syncer_starved(), "just buffered");
    std::thread::sleep(Duration::from_millis(ASYNC_STARVED_AFTER_MS + 5));
    assert!(wal.syncer_starved(), "buffered longer than the async pace allows, no round");
    wal.hold(true);
    assert!(!wal.syncer_starved(), "a held log waits on purpose");
    wal.hold(false);
    wal.sync_round(true);
    assert!(!wal.syncer_starved(), "a round took the buffer");

    wal.set_tier(Tier::Everysec).expect("everysec");
    set(&wal, "k");
    std::thread::sleep(Duration::from_millis(ASYNC_STARVED_AFTER_MS + 5));
    assert!(!wal.syncer_starved(), "everysec's pace is slower");
    std::thread::sleep(Duration::from_millis(EVERYSEC_STARVED_AFTER_MS));
    assert!(wal.syncer_starved());

    wal.set_tier(Tier::Sync).expect("sync");
    assert!(!wal.syncer_starved(), "the sync tier's syncer runs at normal priority, and replies wait for it");
    wal.close();
}

//! Changing a log's tier at runtime (`Wal::set_tier`) and holding its writes
//! (`Wal::hold`) while logging restarts from a snapshot.

#![allow(clippy::expect_used, clippy::unwrap_used)]

use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

use cairn_engine::durability::sim::SimStorage;
use cairn_engine::durability::{LogTail, Storage, Tier, Wal, WalOptions};

/// The tests count syncer threads by name: one log at a time.
static ONE_AT_A_TIME: std::sync::Mutex<()> = std::sync::Mutex::new(());

fn open(tier: Tier) -> Wal {
    let storage: Arc<dyn Storage> = Arc::new(SimStorage::new());
    storage.create_dir_all(Path::new("/data")).unwrap();
    let options = WalOptions { segment_size: 64 << 10, ..WalOptions::new(tier) };
    let tail = LogTail { next_lsn: 1, ..LogTail::default() };
    Wal::open(storage, Path::new("/data"), options, tail, Box::new(|_| {})).expect("open")
}

/// Waits up to 5 s for `lsn` to be durable.
fn durable_soon(wal: &Wal, lsn: u64) -> bool {
    let deadline = Instant::now() + Duration::from_secs(5);
    while wal.durable_lsn() < lsn {
        if Instant::now() >= deadline {
            return false;
        }
        std::thread::sleep(Duration::from_millis(1));
    }
    true
}

fn syncer_threads() -> usize {
    std::fs::read_dir("/proc/self/task")
        .unwrap()
        .filter_map(Result::ok)
        .filter(|t| std::fs::read_to_string(t.path().join("comm")).unwrap_or_default().trim() == "cairn-wal-sync0")
        .count()
}

#[test]
fn every_tier_change_is_followed_by_the_syncer() {
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let wal = open(Tier::Everysec);
    let first = wal.append_command(1, 0, &[b"SET", b"a", b"1"]).unwrap();
    assert_eq!(wal.set_tier(Tier::Sync).unwrap(), Tier::Everysec);
    assert_eq!(wal.tier(), Tier::Sync);
    // In `sync` every round fdatasyncs: no request needed.
    let second = wal.append_command(2, 0, &[b"SET", b"b", b"2"]).unwrap();
    assert!(durable_soon(&wal, second), "a record appended in sync became durable");
    assert!(first < second);
    // The old (lowered) syncer exits; one syncer remains. Waited for as exactly one: a new
    // thread names itself once it runs, so on a loaded machine the count may pass through 0.
    let deadline = Instant::now() + Duration::from_secs(5);
    while syncer_threads() != 1 && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(5));
    }
    assert_eq!(syncer_threads(), 1, "the everysec syncer gave way to the sync one");
    assert_eq!(wal.set_tier(Tier::None).unwrap(), Tier::Sync);
    assert!(!wal.logs());
    let third = wal.append_command(3, 0, &[b"SET", b"c", b"3"]).unwrap();
    assert!(durable_soon(&wal, third), "none drains what was appended");
    wal.close();
}

#[test]
fn held_writes_reach_the_disk_only_when_released() {
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let wal = open(Tier::Sync);
    wal.hold(true);
    let lsn = wal.append_command(1, 0, &[b"SET", b"a", b"1"]).unwrap();
    wal.request_sync(lsn);
    std::thread::sleep(Duration::from_millis(50));
    assert_eq!(wal.written_lsn(), 0, "nothing written while held");
    assert_eq!(wal.durable_lsn(), 0);
    wal.hold(false);
    assert!(durable_soon(&wal, lsn), "released writes become durable");
    wal.close();
}

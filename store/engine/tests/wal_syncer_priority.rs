//! The syncer runs at a lower priority where no reply waits for it (`async`,
//! `everysec`) and at normal priority in `sync`.

#![allow(clippy::expect_used, clippy::unwrap_used)]

use std::path::Path;
use std::sync::Arc;

use cairn_engine::durability::sim::SimStorage;
use cairn_engine::durability::wal::BACKGROUND_SYNCER_NICE;
use cairn_engine::durability::{LogTail, Storage, Tier, Wal, WalOptions};

/// The nice value in a `/proc/.../stat` text (field 19).
fn nice_in_stat(stat: &str) -> i32 {
    // Fields after the parenthesised command name start with the state (field 3).
    let after_comm = &stat[stat.rfind(')').expect("stat has a comm") + 2..];
    after_comm.split_whitespace().nth(16).expect("nice field").parse().expect("a number")
}

/// The nice values of this process's threads named `name`.
fn nice_of_threads(name: &str) -> Vec<i32> {
    let mut found = Vec::new();
    for task in std::fs::read_dir("/proc/self/task").unwrap().filter_map(Result::ok) {
        let comm = std::fs::read_to_string(task.path().join("comm")).unwrap_or_default();
        if comm.trim() == name {
            found.push(nice_in_stat(&std::fs::read_to_string(task.path().join("stat")).unwrap_or_default()));
        }
    }
    found
}

/// This thread's nice value, which the threads it spawns inherit.
fn own_nice() -> i32 {
    nice_in_stat(&std::fs::read_to_string("/proc/thread-self/stat").expect("own stat"))
}

fn syncer_nice(tier: Tier) -> i32 {
    let storage: Arc<dyn Storage> = Arc::new(SimStorage::new());
    storage.create_dir_all(Path::new("/data")).unwrap();
    let options = WalOptions { segment_size: 64 << 10, ..WalOptions::new(tier) };
    let tail = LogTail { next_lsn: 1, ..LogTail::default() };
    let wal = Wal::open(storage, Path::new("/data"), options, tail, Box::new(|_| {})).expect("open");
    // The syncer sets its priority as it starts; give it a moment.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    let expected = if tier == Tier::Sync { own_nice() } else { own_nice().max(BACKGROUND_SYNCER_NICE) };
    let mut nices = nice_of_threads("cairn-wal-sync0");
    while nices != [expected] && std::time::Instant::now() < deadline {
        std::thread::sleep(std::time::Duration::from_millis(5));
        nices = nice_of_threads("cairn-wal-sync0");
    }
    wal.close();
    drop(wal);
    assert_eq!(nices.len(), 1, "one syncer thread");
    nices[0]
}

#[test]
fn background_tiers_lower_the_syncers_priority_and_sync_does_not() {
    // Run under `nice -n 19`, the syncer keeps 19: it never raises a priority.
    let background = own_nice().max(BACKGROUND_SYNCER_NICE);
    assert_eq!(syncer_nice(Tier::Async), background);
    assert_eq!(syncer_nice(Tier::Everysec), background);
    assert_eq!(syncer_nice(Tier::Sync), own_nice());
    assert_eq!(nice_of_threads("cairn-wal-sync0"), Vec::<i32>::new(), "closed logs leave no syncer behind");
}

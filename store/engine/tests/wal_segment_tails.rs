//! Segments the writer left a few bytes short of full: when the next record
//! does not fit, it rotates and the old segment keeps a zero-filled tail,
//! which can be shorter than a record's length prefix. Recovery must read
//! that as the segment's clean end, not as a torn record before later
//! segments (a CI kill -9 run failed to restart on a 2-byte tail).

use std::path::Path;
use std::sync::Arc;

mod common;

use cairn_engine::durability::sim::SimStorage;
use cairn_engine::durability::{LogTail, Storage, Tier, Wal, WalOptions};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

#[test]
fn segments_ending_a_few_bytes_short_of_full_recover_whole() {
    let disk = SimStorage::new();
    let storage: Arc<dyn Storage> = Arc::new(disk.clone());
    storage.create_dir_all(Path::new("/data")).expect("dir");
    let options = WalOptions { segment_size: 4 << 10, ..WalOptions::new(Tier::Sync) };
    let tail = LogTail { next_lsn: 1, ..LogTail::default() };
    let wal = Wal::open(storage, Path::new("/data"), options, tail, Box::new(|_| {})).expect("open the log");
    // Records of every size from small to ~130 bytes: over hundreds of
    // rotations the tails left behind take every length below a prefix.
    let mut rng = StdRng::seed_from_u64(11);
    let mut last = 0;
    for i in 0..20_000u64 {
        let value = "v".repeat(rng.gen_range(1..100));
        last = wal.append_command(0, 0, &[b"SET", i.to_string().as_bytes(), value.as_bytes()]).expect("append");
    }
    wal.sync_through(last).expect("durable");
    assert!(wal.segment_count() > 100, "{} segments: too few rotations", wal.segment_count());
    drop(wal);
    let lsns = common::recovered_lsns(&disk);
    assert_eq!(lsns.len() as u64, last, "every record recovered");
    assert!(lsns.windows(2).all(|w| w[1] == w[0] + 1), "in LSN order without gaps");
}

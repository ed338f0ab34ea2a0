//! Bytes a small string key costs in a [`Table`], counted by a global
//! allocator that sums what is allocated and not freed (the `cairn`
//! binary's `used_memory` counts the same way). A test binary of its own,
//! because the allocator is process-wide.
//!
//! Keys and values as in docs/benchmarks.md ("Bytes per key"): 16-byte keys,
//! 100-byte values, stored the way SET stores them (`Table::insert` with
//! `StrBytes`). Run with `--nocapture` to see the figures.

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;

use cairn_engine::table::StrBytes;
use cairn_engine::Table;

struct Counting;

thread_local! {
    /// Bytes this thread allocated and not freed (per thread, so the test
    /// harness's own threads do not count).
    static LIVE: Cell<i64> = const { Cell::new(0) };
}

fn count(delta: i64) {
    let _ = LIVE.try_with(|live| live.set(live.get() + delta));
}

fn live() -> i64 {
    LIVE.with(Cell::get)
}

// SAFETY: forwards to `System` unchanged and only adds to a const-initialised
// thread-local without a destructor (no allocation, no panic).
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        count(layout.size() as i64);
        unsafe { System.alloc(layout) }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        count(-(layout.size() as i64));
        unsafe { System.dealloc(ptr, layout) }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        count(new_size as i64 - layout.size() as i64);
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

#[global_allocator]
static GLOBAL: Counting = Counting;

const VALUE: [u8; 100] = [b'v'; 100];

fn key(i: usize) -> Vec<u8> {
    format!("key:{i:012}").into_bytes()
}

/// Bytes allocated per key after inserting keys `0..n` into an empty table
/// (the keys themselves built before counting starts).
fn bytes_per_key(n: usize) -> (f64, usize) {
    let keys: Vec<Vec<u8>> = (0..n).map(key).collect();
    let mut table = Table::default();
    let before = live();
    for k in &keys {
        table.insert(k, StrBytes(&VALUE), 0, 1);
    }
    let used = live() - before;
    let buckets = table.buckets();
    drop(table);
    (used as f64 / n as f64, buckets)
}

#[test]
fn a_small_string_key_costs_its_value_its_entry_and_a_pointer_slot() {
    // 114,688 keys fill 131,072 buckets to 7/8 (the densest a table gets);
    // one more key doubles the table (the sparsest: under half full).
    for (n, worst) in [(114_688, 183.0), (114_689, 193.0)] {
        let (per_key, buckets) = bytes_per_key(n);
        println!("{n} keys: {per_key:.1} bytes per key, {buckets} buckets");
        // Value 100 + boxed (key, entry) 72 + 9 bytes of slot per bucket
        // (with the pair in the slot itself: 183.4 measured, and
        // 100 + 73 * 262,144 / 114,689 = 266.9).
        assert!(per_key <= worst, "{n} keys: {per_key:.1} bytes per key (at most {worst})");
    }
}

#[test]
fn removing_keys_frees_their_entries_and_values() {
    let keys: Vec<Vec<u8>> = (0..10_000).map(key).collect();
    let mut table = Table::default();
    for k in &keys {
        table.insert(k, StrBytes(&VALUE), 0, 1);
    }
    let full = live();
    for k in &keys {
        assert!(table.remove(k).is_some());
    }
    let freed = full - live();
    // Everything but the (not shrunk) slot array goes back.
    assert!(freed >= 10_000 * (100 + 72), "freed {freed} bytes");
}

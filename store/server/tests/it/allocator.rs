//! The `cairn` binary's allocator (jemalloc under the counting allocator)
//! as INFO and MEMORY report it. Servers started in-process run on the test
//! harness's allocator, so these run the real binary.

use redis_protocol::resp3::types::OwnedFrame;

use crate::common::simple;
use crate::eviction::Process;

fn text(frame: &OwnedFrame) -> String {
    match frame {
        OwnedFrame::BlobString { data, .. } | OwnedFrame::VerbatimString { data, .. } => {
            String::from_utf8_lossy(data).into_owned()
        }
        other => panic!("expected text, got {other:?}"),
    }
}

#[test]
fn info_and_memory_report_jemalloc() {
    let server = Process::start();
    let mut c = server.client();
    assert_eq!(c.info_field("memory", "mem_allocator"), "jemalloc-5.3.0");
    let report = text(&c.cmd(&["MEMORY", "MALLOC-STATS"]));
    assert!(report.starts_with("___ Begin jemalloc statistics ___"), "{}", &report[..report.len().min(200)]);
    assert!(report.trim_end().ends_with("--- End jemalloc statistics ---"));
    assert_eq!(c.cmd(&["MEMORY", "PURGE"]), simple("OK"));

    let allocated = c.info_number("memory", "allocator_allocated");
    let active = c.info_number("memory", "allocator_active");
    let resident = c.info_number("memory", "allocator_resident");
    assert!(allocated > 0 && allocated <= active && active <= resident, "{allocated} {active} {resident}");
    // Redis's derivations, from the same kind of snapshot.
    let ratio: f64 = c.info_field("memory", "allocator_frag_ratio").parse().expect("ratio");
    assert!((1.0..2.0).contains(&ratio), "allocator_frag_ratio {ratio}");
    assert!(c.info_number("memory", "total_system_memory") > 0);
}

#[test]
fn used_memory_counts_size_classes_and_falls_after_a_flush() {
    let server = Process::start();
    let mut c = server.client();
    // The log's buffer (`mem_not_counted_for_evict`) grows with the writes
    // and is kept for the next ones, as `maxmemory` leaves it out.
    let counted = |c: &mut crate::common::Client| {
        c.info_number("memory", "used_memory") - c.info_number("memory", "mem_not_counted_for_evict")
    };
    let before = counted(&mut c);
    // 100,000 keys with 100-byte values: each key holds at least its value's
    // 112-byte class and its 80-byte entry class.
    assert_eq!(c.cmd(&["DEBUG", "POPULATE", "100000", "key", "100"]), simple("OK"));
    let full = counted(&mut c);
    let per_key = (full - before) / 100_000;
    assert!((192..320).contains(&per_key), "used memory grew by {per_key} bytes per key");
    // jemalloc's own count agrees with ours within its metadata and caches.
    let allocated = c.info_number("memory", "allocator_allocated");
    let used = c.info_number("memory", "used_memory");
    assert!(allocated >= used * 9 / 10, "allocator_allocated {allocated} used_memory {used}");
    let dataset = c.info_number("memory", "used_memory_dataset");
    // The values alone: 100,000 in 112-byte classes.
    assert!(dataset > 100_000 * 112, "used_memory_dataset {dataset}");
    assert_eq!(c.cmd(&["FLUSHALL", "SYNC"]), simple("OK"));
    let flushed = counted(&mut c);
    assert!(flushed < before + (full - before) / 10, "used memory {flushed} after FLUSHALL (was {before})");
    let dataset = c.info_number("memory", "used_memory_dataset");
    assert!(dataset < 1_000_000, "used_memory_dataset {dataset} after FLUSHALL");
}

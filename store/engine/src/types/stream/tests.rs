//! Unit tests of the stream as a whole (scenarios from Redis's test suite).

use super::*;

const SMALL: NodeLimits = NodeLimits { max_bytes: 4096, max_entries: 100 };

fn id(ms: u64, seq: u64) -> StreamId {
    StreamId::new(ms, seq)
}

fn add(s: &mut Stream, ms: u64, seq: u64) -> StreamId {
    s.append_with(NewId::Explicit(id(ms, seq)), &[b"f", b"v"], SMALL).expect("append")
}

fn ids(range: Range<'_>) -> Vec<StreamId> {
    range.map(|e| e.id).collect()
}

#[test]
fn append_generates_increasing_ids() {
    let mut s = Stream::new();
    let a = s.append_with(NewId::Auto { now_ms: 100 }, &[b"a", b"1"], SMALL).expect("test value");
    let b = s.append_with(NewId::Auto { now_ms: 100 }, &[b"a", b"2"], SMALL).expect("test value");
    let c = s.append_with(NewId::Auto { now_ms: 50 }, &[b"a", b"3"], SMALL).expect("test value");
    assert_eq!((a, b, c), (id(100, 0), id(100, 1), id(100, 2)));
    assert_eq!(s.append_with(NewId::AutoSeq { ms: 100 }, &[b"x", b"y"], SMALL), Ok(id(100, 3)));
    assert_eq!(s.append_with(NewId::AutoSeq { ms: 200 }, &[b"x", b"y"], SMALL), Ok(id(200, 0)));
    assert_eq!(s.append_with(NewId::AutoSeq { ms: 42 }, &[b"x", b"y"], SMALL), Err(AppendError::IdTooSmall));
    assert_eq!(s.append_with(NewId::Explicit(id(200, 0)), &[b"x", b"y"], SMALL), Err(AppendError::IdTooSmall));
    assert_eq!(s.len(), 5);
    assert_eq!(s.meta().entries_added, 5);
    let mut t = Stream::new();
    add(&mut t, 1, u64::MAX);
    assert_eq!(t.append_with(NewId::AutoSeq { ms: 1 }, &[b"x", b"y"], SMALL), Err(AppendError::SeqExhausted));
}

#[test]
fn ranges_forward_backward_and_across_nodes() {
    let mut s = Stream::new();
    for ms in 1..=250 {
        add(&mut s, ms, 0);
    }
    assert_eq!(s.radix_tree_keys(), 3);
    assert_eq!(ids(s.range(id(99, 0), id(102, 0), false)), vec![id(99, 0), id(100, 0), id(101, 0), id(102, 0)]);
    assert_eq!(ids(s.range(id(99, 0), id(102, 0), true)), vec![id(102, 0), id(101, 0), id(100, 0), id(99, 0)]);
    assert_eq!(ids(s.range(id(250, 1), StreamId::MAX, false)), vec![]);
    assert_eq!(ids(s.range(id(5, 0), id(4, 0), false)), vec![]);
    assert_eq!(s.range(StreamId::MIN, StreamId::MAX, true).count(), 250);
    let entry = s.get(id(7, 0)).expect("test value");
    assert_eq!(entry.fields().collect::<Vec<_>>(), vec![(&b"f"[..], &b"v"[..])]);
}

#[test]
fn delete_keeps_first_id_and_tombstone_counters() {
    let mut s = Stream::new();
    for ms in 1..=5 {
        add(&mut s, ms, 0);
    }
    assert_eq!(s.delete_entries(&[id(2, 0)]), 1);
    assert_eq!(s.meta().first_id, id(1, 0));
    assert_eq!(s.delete_entries(&[id(1, 0), id(1, 0), id(9, 0)]), 1);
    assert_eq!(s.meta().first_id, id(3, 0));
    assert_eq!(s.meta().max_deleted_entry_id, id(2, 0));
    assert_eq!(ids(s.range_with_tombstones(StreamId::MIN, StreamId::MAX, false)).len(), 5);
    assert_eq!(s.delete_entries(&[id(3, 0), id(4, 0), id(5, 0)]), 3);
    assert_eq!(s.radix_tree_keys(), 0);
    assert_eq!(s.meta().first_id, StreamId::MIN);
    assert_eq!(s.last_id(), id(5, 0));
}

fn trim_spec(strategy: TrimStrategy, approx: bool, limit: u64) -> TrimSpec {
    TrimSpec { strategy, approx, limit }
}

#[test]
fn approximate_trimming_removes_whole_nodes_only() {
    let mut s = Stream::new();
    for ms in 1..=1000 {
        add(&mut s, ms, 0);
    }
    assert_eq!(s.trim(&trim_spec(TrimStrategy::MaxLen(666), false, 0)), 334);
    assert_eq!(s.len(), 666);
    assert_eq!(s.trim(&trim_spec(TrimStrategy::MaxLen(444), true, 10_000)), 166);
    assert_eq!(s.len(), 500);
    assert_eq!(s.meta().first_id, id(501, 0));
    assert_eq!(s.trim(&trim_spec(TrimStrategy::MinId(id(650, 0)), false, 0)), 149);
    assert_eq!(s.meta().first_id, id(650, 0));
}

#[test]
fn trimming_limit_counts_whole_nodes() {
    let limits = NodeLimits { max_bytes: 4096, max_entries: 10 };
    let mut s = Stream::new();
    for ms in 1..=100 {
        s.append_with(NewId::Explicit(id(ms, 0)), &[b"x", b"v"], limits).expect("test value");
    }
    s.append_with(NewId::Explicit(id(101, 0)), &[b"x", b"v"], limits).expect("test value");
    assert_eq!(s.trim(&trim_spec(TrimStrategy::MaxLen(55), true, 30)), 30);
    assert_eq!(s.len(), 71);
}

#[test]
fn node_splits_on_bytes() {
    let limits = NodeLimits { max_bytes: 100, max_entries: 0 };
    let mut s = Stream::new();
    for ms in 1..=10 {
        s.append_with(NewId::Explicit(id(ms, 0)), &[b"field", &[b'x'; 40]], limits).expect("test value");
    }
    assert_eq!(s.radix_tree_keys(), 10);
}

#[test]
fn set_id_checks() {
    let mut s = Stream::new();
    add(&mut s, 5, 0);
    assert_eq!(s.set_id(id(4, 0), None, StreamId::MIN), Err(SetIdError::BelowTopItem));
    assert_eq!(s.set_id(id(6, 0), Some(0), StreamId::MIN), Err(SetIdError::EntriesAddedBelowLength));
    assert_eq!(s.set_id(id(6, 0), Some(7), id(3, 0)), Ok(()));
    assert_eq!((s.last_id(), s.meta().entries_added, s.meta().max_deleted_entry_id), (id(6, 0), 7, id(3, 0)));
}

#[test]
fn group_reads_advance_counters_and_pels() {
    let mut s = Stream::new();
    for ms in 1..=5 {
        add(&mut s, ms, 0);
    }
    assert!(s.create_group(b"g", StreamId::MIN, ENTRIES_READ_INVALID));
    assert!(!s.create_group(b"g", StreamId::MIN, 0));
    assert_eq!(s.meta().group_lag(s.group(b"g").expect("test value")), Some(5));
    s.group_mut(b"g").expect("test value").create_consumer(b"c", 0);
    assert_eq!(s.read_group_new(b"g", b"c", 1, false, 10), vec![id(1, 0)]);
    assert_eq!(s.group(b"g").expect("test value").entries_read, 1);
    assert_eq!(s.read_group_new(b"g", b"c", 0, false, 10).len(), 4);
    assert_eq!(s.group(b"g").expect("test value").entries_read, 5);
    s.delete_entries(&[id(2, 0)]);
    let history = s.read_group_history(b"g", b"c", StreamId::MIN, 2, 20);
    assert_eq!(history, vec![(id(1, 0), true), (id(2, 0), false)]);
    assert_eq!(s.group(b"g").expect("test value").pel()[&id(1, 0)].delivery_count, 2);
}

#[test]
fn claims_and_autoclaims() {
    let mut s = Stream::new();
    for ms in 1..=3 {
        add(&mut s, ms, 0);
    }
    s.create_group(b"g", StreamId::MIN, 0);
    s.group_mut(b"g").expect("test value").create_consumer(b"alice", 0);
    s.read_group_new(b"g", b"alice", 0, false, 0);
    s.delete_entries(&[id(2, 0)]);
    let opts = ClaimOptions {
        min_idle_ms: 0,
        delivery_time: 100,
        retry_count: None,
        force: false,
        justid: false,
        last_id: StreamId::MIN,
    };
    assert_eq!(s.claim(b"g", b"bob", &[id(1, 0), id(2, 0)], &opts, 100), vec![id(1, 0)]);
    assert_eq!(s.group(b"g").expect("test value").pel().len(), 2);
    s.delete_entries(&[id(1, 0)]);
    let out = s.autoclaim(b"g", b"carol", 0, StreamId::MIN, 1, false, 200);
    assert_eq!((out.claimed, out.deleted, out.next), (vec![], vec![id(1, 0)], id(3, 0)));
    let out = s.autoclaim(b"g", b"carol", 0, id(3, 0), 1, false, 200);
    assert_eq!((out.claimed, out.deleted, out.next), (vec![id(3, 0)], vec![], StreamId::MIN));
}

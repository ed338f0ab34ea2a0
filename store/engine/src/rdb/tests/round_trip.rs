//! Values built in Cairn, in every encoding, survive DUMP then RESTORE
//! unchanged (contents, encoding, stream nodes, tombstones, groups, PEL,
//! consumers and counters).

use crate::rdb::{dump_payload, restore_payload};
use crate::types::stream::{NewId, Stream, StreamId};
use crate::types::zset::AddFlags;
use crate::types::{Hash, List, Set, ZSet};
use crate::value::Value;

fn round_trip(value: Value) {
    let payload = dump_payload(&value);
    let back = restore_payload(&payload, false).unwrap_or_else(|e| panic!("{}: {e}", value.encoding()));
    assert_eq!(back.encoding(), value.encoding());
    assert_eq!(back, value);
}

#[test]
fn strings() {
    for s in [&b""[..], b"0", b"-1", b"127", b"-129", b"40000", b"2147483648", b"-9223372036854775808", b"007", b"text"]
    {
        round_trip(Value::from_bytes(s));
    }
    round_trip(Value::from_bytes(&vec![b'z'; 100_000]));
}

#[test]
fn lists_small_and_multi_node() {
    let mut small = List::new();
    ["a", "1", "-70000", "9223372036854775807"].iter().for_each(|e| small.push_back(e.as_bytes()));
    round_trip(Value::List(Box::new(small)));
    let mut big = List::new();
    (0..5000).for_each(|i| big.push_back(format!("element-{i}").as_bytes()));
    big.push_back(&vec![b'q'; 20_000]);
    assert!(big.node_count() > 1);
    round_trip(Value::List(Box::new(big)));
}

#[test]
fn sets_intset_and_hashtable() {
    let mut ints = Set::new();
    [1i64, -5, 1 << 40, 300].iter().for_each(|v| {
        ints.add(v.to_string().as_bytes());
    });
    assert_eq!(ints.encoding(), "intset");
    round_trip(Value::Set(ints));
    let mut strings = Set::new();
    (0..1000).for_each(|i| {
        strings.add(format!("member{i}").as_bytes());
    });
    round_trip(Value::Set(strings));
}

#[test]
fn zsets_listpack_and_skiplist() {
    let mut small = ZSet::new();
    for (s, m) in
        [(1.0, "a"), (2.5, "b"), (f64::INFINITY, "c"), (f64::NEG_INFINITY, "d"), (0.1, "e"), (1e20, "f"), (-0.0, "g")]
    {
        small.add(s, m.as_bytes(), AddFlags::default());
    }
    assert_eq!(small.encoding(), "listpack");
    let payload = dump_payload(&Value::ZSet(Box::new(small.clone())));
    let back = restore_payload(&payload, false).unwrap();
    // -0 is stored as the integer 0, as Redis does.
    let Value::ZSet(back) = back else { panic!("not a zset") };
    assert_eq!(
        back.iter().map(|(m, s)| (m.to_vec(), s)).collect::<Vec<_>>(),
        small.iter().map(|(m, s)| (m.to_vec(), if s == 0.0 { 0.0 } else { s })).collect::<Vec<_>>()
    );
    let mut big = ZSet::new();
    (0..500).for_each(|i| {
        big.add(i as f64 / 3.0, format!("m{i}").as_bytes(), AddFlags::default());
    });
    assert_eq!(big.encoding(), "skiplist");
    round_trip(Value::ZSet(Box::new(big)));
}

#[test]
fn hashes_listpack_and_hashtable() {
    let mut small = Hash::new();
    small.set(b"f", b"1");
    small.set(b"g", b"text");
    assert!(small.is_listpack());
    round_trip(Value::Hash(small));
    let mut big = Hash::new();
    (0..300).for_each(|i| {
        big.set(format!("f{i}").as_bytes(), format!("v{i}").as_bytes());
    });
    round_trip(Value::Hash(big));
}

#[test]
fn streams_with_tombstones_groups_and_pel() {
    let mut s = Stream::new();
    for i in 1..=350u64 {
        let value = format!("v{i}");
        let pairs: Vec<&[u8]> =
            if i % 7 == 0 { vec![b"other", value.as_bytes()] } else { vec![b"f", value.as_bytes()] };
        s.append(NewId::Explicit(StreamId::new(i, 0)), &pairs).unwrap();
    }
    s.delete_entries(&[StreamId::new(3, 0), StreamId::new(150, 0)]);
    s.set_id(StreamId::new(1000, 7), Some(400), StreamId::new(3, 0)).unwrap();
    s.create_group(b"g1", StreamId::new(10, 0), 10);
    s.create_group(b"g2", StreamId::new(0, 0), -1);
    let g = s.group_mut(b"g1").unwrap();
    g.create_consumer(b"alice", 1234);
    g.create_consumer(b"idle", 99);
    for id in [2, 3, 4] {
        g.insert_unowned(StreamId::new(id, 0), b"alice", 500 + id as i64);
    }
    round_trip(Value::Stream(Box::new(s)));
    let mut empty = Stream::new();
    empty.append(NewId::Explicit(StreamId::new(5, 5)), &[b"a", b"b"]).unwrap();
    empty.delete_entries(&[StreamId::new(5, 5)]);
    round_trip(Value::Stream(Box::new(empty)));
}

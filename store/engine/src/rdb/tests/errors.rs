//! Every decode error path: framing errors are `Framing` (Redis's
//! "payload version or checksum are wrong"), everything inside the frame is
//! `BadData` ("Bad data format").

use crate::rdb::listpack::Writer as Listpack;
use crate::rdb::payload::seal;
use crate::rdb::types as t;
use crate::rdb::writer::Writer;
use crate::rdb::{restore_payload, RdbError};

fn restore(body: Vec<u8>) -> Result<crate::value::Value, RdbError> {
    restore_payload(&seal(body), false)
}

fn is_bad_data(body: Vec<u8>) -> bool {
    matches!(restore(body), Err(RdbError::BadData(_)))
}

fn body(rdb_type: u8, build: impl FnOnce(&mut Writer)) -> Vec<u8> {
    let mut w = Writer::new();
    w.u8(rdb_type);
    build(&mut w);
    w.out
}

fn listpack(items: &[&[u8]]) -> Vec<u8> {
    let mut lp = Listpack::new();
    items.iter().for_each(|i| lp.push_str(i));
    lp.finish()
}

fn with_listpack(rdb_type: u8, items: &[&[u8]]) -> Vec<u8> {
    body(rdb_type, |w| w.string(&listpack(items)))
}

#[test]
fn framing_errors() {
    assert_eq!(restore_payload(b"short", false).err(), Some(RdbError::Framing));
    let mut payload = seal(b"\x00\x01a".to_vec());
    let n = payload.len();
    payload[n - 1] ^= 1;
    assert_eq!(restore_payload(&payload, false).err(), Some(RdbError::Framing));
    let mut newer = b"\x00\x01a".to_vec();
    newer.extend_from_slice(&13u16.to_le_bytes());
    let crc = crate::rdb::crc64(0, &newer);
    newer.extend_from_slice(&crc.to_le_bytes());
    assert_eq!(restore_payload(&newer, false).err(), Some(RdbError::Framing));
    // RDB versions 11 and 12 (Redis 7.2+, Valkey 8) are read.
    for version in [9u16, 11, 12] {
        let mut p = b"\x00\x01a".to_vec();
        p.extend_from_slice(&version.to_le_bytes());
        let crc = crate::rdb::crc64(0, &p);
        p.extend_from_slice(&crc.to_le_bytes());
        assert!(restore_payload(&p, false).is_ok(), "version {version}");
    }
}

#[test]
fn redis_invalid_payload_size_test_is_refused() {
    // `RESTORE fail with invalid payload size` (tests/unit/dump.tcl): a
    // string claiming 2^64-9 bytes, RDB version 12, a zero CRC.
    let payload = b"\x00\x81\xFF\xFF\xFF\xFF\xFF\xFF\xFF\xF7\x0c\x00\x00\x00\x00\x00\x00\x00\x00\x00";
    assert_eq!(restore_payload(payload, false).err(), Some(RdbError::Framing));
    assert!(matches!(restore_payload(payload, true), Err(RdbError::BadData(_))));
}

#[test]
fn unknown_and_module_types() {
    for rdb_type in [t::MODULE, t::MODULE_2, 8, 22, 99, 255] {
        assert!(is_bad_data(body(rdb_type, |w| w.string(b"x"))), "type {rdb_type}");
    }
    assert!(is_bad_data(vec![]));
}

#[test]
fn truncated_strings_and_huge_lengths() {
    assert!(is_bad_data(b"\x00\x05ab".to_vec()));
    assert!(is_bad_data(body(t::LIST, |w| w.len(u64::MAX))));
    assert!(is_bad_data(body(t::SET, |w| w.len(1 << 40))));
    assert!(is_bad_data(body(t::HASH, |w| w.len(1 << 33))));
    assert!(is_bad_data(body(t::ZSET_2, |w| w.len(1 << 20))));
    assert!(is_bad_data(body(t::LIST_QUICKLIST_2, |w| w.len(1 << 30))));
    assert!(is_bad_data(body(t::STREAM_LISTPACKS_2, |w| w.len(1 << 30))));
}

#[test]
fn empty_collections() {
    for rdb_type in [t::LIST, t::SET, t::ZSET, t::ZSET_2, t::HASH, t::LIST_QUICKLIST, t::LIST_QUICKLIST_2] {
        assert!(is_bad_data(body(rdb_type, |w| w.len(0))), "type {rdb_type}");
    }
    for rdb_type in [t::HASH_LISTPACK, t::ZSET_LISTPACK, t::SET_LISTPACK] {
        assert!(is_bad_data(with_listpack(rdb_type, &[])), "type {rdb_type}");
    }
    // A quicklist whose only node is an empty listpack.
    let empty_nodes = body(t::LIST_QUICKLIST_2, |w| {
        w.len(1);
        w.len(t::QUICKLIST_NODE_PACKED);
        w.string(&listpack(&[]));
    });
    assert!(is_bad_data(empty_nodes));
}

#[test]
fn duplicates() {
    assert!(is_bad_data(body(t::SET, |w| {
        w.len(2);
        w.string(b"a");
        w.string(b"a");
    })));
    assert!(is_bad_data(body(t::HASH, |w| {
        w.len(2);
        for _ in 0..2 {
            w.string(b"f");
            w.string(b"v");
        }
    })));
    assert!(is_bad_data(body(t::ZSET_2, |w| {
        w.len(2);
        w.string(b"m");
        w.binary_double(1.0);
        w.string(b"m");
        w.binary_double(2.0);
    })));
    assert!(is_bad_data(with_listpack(t::HASH_LISTPACK, &[b"f", b"1", b"f", b"2"])));
    assert!(is_bad_data(with_listpack(t::ZSET_LISTPACK, &[b"m", b"1", b"m", b"2"])));
    assert!(is_bad_data(with_listpack(t::SET_LISTPACK, &[b"a", b"a"])));
}

#[test]
fn bad_scores_and_odd_pairs() {
    assert!(is_bad_data(body(t::ZSET, |w| {
        w.len(1);
        w.string(b"m");
        w.u8(253); // NaN in the text form
    })));
    assert!(is_bad_data(body(t::ZSET_2, |w| {
        w.len(1);
        w.string(b"m");
        w.binary_double(f64::NAN);
    })));
    assert!(is_bad_data(with_listpack(t::ZSET_LISTPACK, &[b"m", b"nan"])));
    assert!(is_bad_data(with_listpack(t::ZSET_LISTPACK, &[b"m", b"abc"])));
    assert!(is_bad_data(with_listpack(t::ZSET_LISTPACK, &[b"m"])));
    assert!(is_bad_data(with_listpack(t::HASH_LISTPACK, &[b"f", b"v", b"g"])));
    assert!(is_bad_data(body(t::ZSET, |w| {
        w.len(1);
        w.string(b"m");
        w.u8(3);
        w.raw(b"1x5");
    })));
}

#[test]
fn lying_compact_encodings() {
    let mut lp = listpack(&[b"f", b"v"]);
    lp[4] = 3; // count
    assert!(is_bad_data(body(t::HASH_LISTPACK, |w| w.string(&lp))));
    assert!(is_bad_data(body(t::LIST_ZIPLIST, |w| w.string(b"\x0b\x00\x00\x00\x0a\x00\x00\x00\x00\x00\xff\x00"))));
    assert!(is_bad_data(body(t::SET_INTSET, |w| w.string(b"\x02\x00\x00\x00\x02\x00\x00\x00\x02\x00\x01\x00"))));
    assert!(is_bad_data(body(t::HASH_ZIPMAP, |w| w.string(b"\x02\x01a\x01\x001\xff"))));
    assert!(is_bad_data(body(t::LIST_QUICKLIST_2, |w| {
        w.len(1);
        w.len(3); // neither plain nor packed
        w.string(&listpack(&[b"a"]));
    })));
    assert!(is_bad_data(body(t::LIST_QUICKLIST, |w| {
        w.len(1);
        w.string(b"not a ziplist");
    })));
}

/// A stream node's listpack: master fields `["f"]`, entries of
/// (ms delta, seq delta, flags, fields) where `None` fields mean SAMEFIELDS
/// with value `v`.
/// (ms delta, seq delta, flags, fields or `None` for SAMEFIELDS).
type TestEntry<'a> = (i64, i64, i64, Option<&'a [&'a [u8]]>);

fn node(live: i64, deleted: i64, entries: &[TestEntry<'_>], lp_count_fix: i64) -> Vec<u8> {
    let mut lp = Listpack::new();
    lp.push_int(live);
    lp.push_int(deleted);
    lp.push_int(1);
    lp.push_str(b"f");
    lp.push_int(0);
    for &(ms, seq, flags, fields) in entries {
        lp.push_int(flags);
        lp.push_int(ms);
        lp.push_int(seq);
        match fields {
            None => {
                lp.push_str(b"v");
                lp.push_int(4 + lp_count_fix);
            }
            Some(pairs) => {
                lp.push_int(pairs.len() as i64 / 2);
                pairs.iter().for_each(|p| lp.push_str(p));
                lp.push_int(pairs.len() as i64 + 4 + lp_count_fix);
            }
        }
    }
    lp.finish()
}

fn raw_id(ms: u64, seq: u64) -> Vec<u8> {
    let mut out = ms.to_be_bytes().to_vec();
    out.extend_from_slice(&seq.to_be_bytes());
    out
}

/// A type-19 stream: one node keyed `1-0`, `length`, last ID, then `groups`.
fn stream(node_lp: &[u8], length: u64, last: (u64, u64), groups: impl FnOnce(&mut Writer)) -> Vec<u8> {
    body(t::STREAM_LISTPACKS_2, |w| {
        w.len(1);
        w.string(&raw_id(1, 0));
        w.string(node_lp);
        w.len(length);
        w.len(last.0);
        w.len(last.1);
        w.len(1); // first ID 1-0
        w.len(0);
        w.len(0); // max deleted 0-0
        w.len(0);
        w.len(length.max(2)); // entries added
        groups(w);
    })
}

const SAME: i64 = 2;

fn good_node() -> Vec<u8> {
    node(2, 0, &[(0, 0, SAME, None), (1, 0, SAME, None)], 0)
}

#[test]
fn a_well_formed_stream_decodes() {
    assert!(restore(stream(&good_node(), 2, (1, 0), |w| w.len(0))).is_err()); // last ID below 2-0
    assert!(restore(stream(&good_node(), 2, (2, 0), |w| w.len(0))).is_ok());
}

#[test]
fn stream_node_errors() {
    let no_groups = |w: &mut Writer| w.len(0);
    // IDs out of order inside a node.
    let backwards = node(2, 0, &[(1, 0, SAME, None), (0, 0, SAME, None)], 0);
    assert!(is_bad_data(stream(&backwards, 2, (2, 0), no_groups)));
    // lp-count wrong.
    assert!(is_bad_data(stream(&node(1, 0, &[(0, 0, SAME, None)], 1), 1, (2, 0), no_groups)));
    // Fewer entries than the master entry counts.
    assert!(is_bad_data(stream(&node(3, 0, &[(0, 0, SAME, None)], 0), 1, (2, 0), no_groups)));
    // Length that does not match the live entries.
    assert!(is_bad_data(stream(&good_node(), 5, (2, 0), no_groups)));
    // A node key that is not 16 bytes.
    let short_key = body(t::STREAM_LISTPACKS_2, |w| {
        w.len(1);
        w.string(b"0123456789");
        w.string(&good_node());
    });
    assert!(is_bad_data(short_key));
    // An empty listpack inside the stream.
    let empty = body(t::STREAM_LISTPACKS_2, |w| {
        w.len(1);
        w.string(&raw_id(1, 0));
        w.string(&listpack(&[]));
    });
    assert!(is_bad_data(empty));
    // Nodes out of order: the second node's IDs precede the first's.
    let two_nodes = body(t::STREAM_LISTPACKS_2, |w| {
        w.len(2);
        w.string(&raw_id(5, 0));
        w.string(&node(1, 0, &[(0, 0, SAME, None)], 0));
        w.string(&raw_id(1, 0));
        w.string(&node(1, 0, &[(0, 0, SAME, None)], 0));
    });
    assert!(is_bad_data(two_nodes));
    // A master terminator that is not zero.
    let mut lp = Listpack::new();
    for v in [1, 0, 1] {
        lp.push_int(v);
    }
    lp.push_str(b"f");
    lp.push_int(7);
    assert!(is_bad_data(stream(&lp.finish(), 1, (2, 0), no_groups)));
}

/// A consumer's name and the IDs it owns.
type TestConsumer<'a> = (&'a [u8], &'a [(u64, u64)]);

fn group(w: &mut Writer, name: &[u8], pel: &[(u64, u64)], consumers: &[TestConsumer<'_>]) {
    w.string(name);
    w.len(2);
    w.len(0); // last ID 2-0
    w.len(2); // entries read
    w.len(pel.len() as u64);
    for &(ms, seq) in pel {
        w.raw(&raw_id(ms, seq));
        w.millis(1000);
        w.len(1);
    }
    w.len(consumers.len() as u64);
    for (name, owned) in consumers {
        w.string(name);
        w.millis(2000);
        w.len(owned.len() as u64);
        owned.iter().for_each(|&(ms, seq)| w.raw(&raw_id(ms, seq)));
    }
}

#[test]
fn stream_group_errors() {
    let ok = stream(&good_node(), 2, (2, 0), |w| {
        w.len(1);
        group(w, b"g", &[(1, 0)], &[(b"c", &[(1, 0)])]);
    });
    assert!(restore(ok).is_ok());
    type Case = (&'static str, Box<dyn Fn(&mut Writer)>);
    let cases: Vec<Case> = vec![
        (
            "duplicate group",
            Box::new(|w| {
                w.len(2);
                group(w, b"g", &[], &[]);
                group(w, b"g", &[], &[]);
            }),
        ),
        (
            "PEL entry without consumer",
            Box::new(|w| {
                w.len(1);
                group(w, b"g", &[(1, 0)], &[(b"c", &[])]);
            }),
        ),
        (
            "consumer entry not in the PEL",
            Box::new(|w| {
                w.len(1);
                group(w, b"g", &[], &[(b"c", &[(1, 0)])]);
            }),
        ),
        (
            "duplicate consumer",
            Box::new(|w| {
                w.len(1);
                group(w, b"g", &[], &[(b"c", &[]), (b"c", &[])]);
            }),
        ),
        (
            "duplicate global PEL entry",
            Box::new(|w| {
                w.len(1);
                group(w, b"g", &[(1, 0), (1, 0)], &[(b"c", &[(1, 0)])]);
            }),
        ),
        (
            "duplicate consumer PEL entry",
            Box::new(|w| {
                w.len(1);
                group(w, b"g", &[(1, 0)], &[(b"c", &[(1, 0)]), (b"d", &[(1, 0)])]);
            }),
        ),
        ("truncated groups", Box::new(|w| w.len(1))),
    ];
    for (name, build) in cases {
        assert!(is_bad_data(stream(&good_node(), 2, (2, 0), build)), "{name}");
    }
}

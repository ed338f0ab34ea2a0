//! Whole RDB files: the writer's output read back, every opcode, checksum
//! and header errors, truncation at every byte, and the RDB files of
//! Redis's own test suite (`tests/assets/`, copied into `files/`) read with
//! the contents redis-server 7.0.15 loads from them.

use super::canonical::canonical;
use super::value_len;
use crate::rdb::{crc64, FileInfo, FileItem, FileReader, FileWriter, RdbFileError};
use crate::types::stream::{NewId, Stream, StreamId};
use crate::types::zset::AddFlags;
use crate::types::{Hash, List, Set, ZSet};
use crate::value::Value;

const INFO: FileInfo = FileInfo { ctime_secs: 1_700_000_000, used_mem: 1 << 20 };

fn read_all(bytes: &[u8]) -> Result<Vec<FileItem>, RdbFileError> {
    FileReader::new(bytes)?.collect()
}

fn sample_values() -> Vec<(&'static str, Value)> {
    let mut list = List::new();
    ["a", "1", "-70000"].iter().for_each(|e| list.push_back(e.as_bytes()));
    let mut set = Set::new();
    (0..5).for_each(|i| {
        set.add(format!("m{i}").as_bytes());
    });
    let mut ints = Set::new();
    [1i64, -5, 1 << 40].iter().for_each(|v| {
        ints.add(v.to_string().as_bytes());
    });
    let mut zset = ZSet::new();
    zset.add(1.5, b"a", AddFlags::default());
    zset.add(-2.0, b"b", AddFlags::default());
    let mut hash = Hash::new();
    hash.set(b"f", b"v");
    hash.set(b"n", b"12");
    let mut stream = Stream::new();
    stream.append(NewId::Explicit(StreamId::new(5, 1)), &[b"k", b"v"]).unwrap();
    stream.create_group(b"g", StreamId::new(0, 0), 0);
    vec![
        ("str", Value::from_bytes(b"hello")),
        ("int", Value::from_bytes(b"-42")),
        ("long", Value::from_bytes(&vec![b'x'; 5000])),
        ("list", Value::List(Box::new(list))),
        ("set", Value::Set(set)),
        ("ints", Value::Set(ints)),
        ("zset", Value::ZSet(Box::new(zset))),
        ("hash", Value::Hash(hash)),
        ("stream", Value::Stream(Box::new(stream))),
    ]
}

/// A file of the sample values over dbs 0 and 3, some with TTLs.
fn sample_file() -> Vec<u8> {
    let values = sample_values();
    let mut w = FileWriter::new(Vec::new(), INFO).unwrap();
    for db in [0u64, 3] {
        w.select_db(db, values.len() as u64, 2).unwrap();
        for (i, (key, value)) in values.iter().enumerate() {
            let expire = (i < 2).then_some(4_000_000_000_000 + i as u64);
            w.key(key.as_bytes(), value, expire).unwrap();
        }
    }
    let (bytes, size) = w.finish().unwrap();
    assert_eq!(size, bytes.len() as u64);
    bytes
}

#[test]
fn written_files_read_back_the_same() {
    let bytes = sample_file();
    assert_eq!(&bytes[..9], b"REDIS0010");
    let items = read_all(&bytes).unwrap();
    let values = sample_values();
    assert_eq!(items.len(), 2 * values.len());
    for (n, item) in items.iter().enumerate() {
        let (key, value) = &values[n % values.len()];
        assert_eq!(item.db, if n < values.len() { 0 } else { 3 });
        assert_eq!(item.key, key.as_bytes());
        assert_eq!(canonical(&item.value), canonical(value), "{key}");
        let i = n % values.len();
        assert_eq!(item.expire_at_ms, (i < 2).then_some(4_000_000_000_000 + i as u64));
    }
    let mut reader = FileReader::new(&bytes[..]).unwrap();
    while reader.next_item().unwrap().is_some() {}
    let aux: Vec<(String, String)> = reader
        .aux()
        .iter()
        .map(|(k, v)| (String::from_utf8_lossy(k).into(), String::from_utf8_lossy(v).into()))
        .collect();
    let names: Vec<&str> = aux.iter().map(|(k, _)| k.as_str()).collect();
    assert_eq!(names, ["redis-ver", "redis-bits", "ctime", "used-mem", "aof-base"]);
    assert_eq!(aux[2].1, "1700000000");
    assert_eq!(aux[4].1, "0");
}

/// `REDIS` + `version` + `body` + EOF + its CRC-64 (or `crc` when given).
fn framed(version: &str, body: &[u8], crc: Option<u64>) -> Vec<u8> {
    with_header(&format!("REDIS{version}"), body, crc)
}

/// `header` + `body` + EOF + its CRC-64 (or `crc` when given).
fn with_header(header: &str, body: &[u8], crc: Option<u64>) -> Vec<u8> {
    let mut out = header.as_bytes().to_vec();
    out.extend_from_slice(body);
    out.push(0xff);
    let sum = crc.unwrap_or_else(|| crc64(0, &out));
    out.extend_from_slice(&sum.to_le_bytes());
    out
}

#[test]
fn every_opcode() {
    let mut body = Vec::new();
    body.extend_from_slice(b"\xfa\x03abc\x03xyz"); // AUX abc=xyz
    body.extend_from_slice(b"\xfe\x02\xfb\x03\x01"); // SELECTDB 2, RESIZEDB 3 1
    body.extend_from_slice(b"\xfd\x00\x5e\xd0\xb2"); // EXPIRETIME 3000000000 s (as i32: negative)
    body.extend_from_slice(b"\x00\x01a\x01A");
    body.extend_from_slice(b"\xfd\x00\xe1\xf5\x05"); // EXPIRETIME 100000000 s
    body.extend_from_slice(b"\x00\x01b\x01B");
    body.extend_from_slice(b"\xfc\x00\x10\xa5\xd4\xe8\x00\x00\x00"); // EXPIRETIME_MS 1e12
    body.extend_from_slice(b"\xf8\x40\x80\xf9\x07"); // IDLE 128, FREQ 7
    body.extend_from_slice(b"\x00\x01c\xc0\x05");
    body.extend_from_slice(b"\x00\x01d\x01D"); // no expiry: the last one does not carry over
    let items = read_all(&framed("0010", &body, None)).unwrap();
    let summary: Vec<(u64, Vec<u8>, Option<u64>)> =
        items.iter().map(|i| (i.db, i.key.clone(), i.expire_at_ms)).collect();
    assert_eq!(
        summary,
        [
            (2, b"a".to_vec(), Some(0)),
            (2, b"b".to_vec(), Some(100_000_000_000)),
            (2, b"c".to_vec(), Some(1_000_000_000_000)),
            (2, b"d".to_vec(), None)
        ]
    );
    assert_eq!(canonical(&items[2].value), "type=string enc=int value=5");
}

#[test]
fn function_libraries_are_collected() {
    let code = b"#!lua name=lib\nredis.register_function('f', function() return 1 end)";
    let mut w = FileWriter::new(Vec::new(), INFO).unwrap();
    w.function(code).unwrap();
    w.select_db(0, 1, 0).unwrap();
    w.key(b"k", &Value::from_bytes(b"v"), None).unwrap();
    let (bytes, _) = w.finish().unwrap();
    let mut reader = FileReader::new(&bytes[..]).unwrap();
    assert_eq!(reader.next_item().unwrap().map(|i| i.key), Some(b"k".to_vec()));
    assert_eq!(reader.take_functions(), [code.to_vec()]);
    assert!(reader.next_item().unwrap().is_none());
    assert!(reader.take_functions().is_empty());
}

#[test]
fn old_functions_modules_and_unknown_opcodes_are_refused_by_name() {
    let err = |body: &[u8]| read_all(&framed("0010", body, None)).unwrap_err();
    let function = err(b"\x00\x01a\x01A\xf6\x05hello");
    assert!(matches!(function, RdbFileError::Functions { offset: 14 }), "{function}");
    assert!(function.to_string().contains("FUNCTION"));
    assert!(matches!(err(b"\xf7\x01"), RdbFileError::ModuleAux { offset: 9 }));
    assert!(err(b"\xf7\x01").to_string().contains("MODULE_AUX"));
    assert!(matches!(err(b"\x07\x01k"), RdbFileError::BadData { .. }));
    assert!(matches!(err(b"\x08"), RdbFileError::UnknownType { byte: 8, offset: 9 }));
    assert!(matches!(err(b"\xf0"), RdbFileError::UnknownType { byte: 0xf0, .. }));
    let bad_value = err(b"\x0b\x01k\x02zz");
    assert!(matches!(&bad_value, RdbFileError::BadValue { key, .. } if key == "k"), "{bad_value}");
}

#[test]
fn checksums_are_checked_unless_zero() {
    let body = b"\x00\x01a\x01A";
    assert_eq!(read_all(&framed("0010", body, Some(0))).unwrap().len(), 1);
    let good = framed("0010", body, None);
    let mut damaged = good.clone();
    damaged[13] = b'B';
    assert!(matches!(read_all(&damaged), Err(RdbFileError::Checksum { .. })));
    let mut wrong_sum = good.clone();
    let last = wrong_sum.len() - 1;
    wrong_sum[last] ^= 1;
    assert!(matches!(read_all(&wrong_sum), Err(RdbFileError::Checksum { .. })));
    // Before version 5 there is no checksum at all.
    let mut old = b"REDIS0004\x00\x01a\x01A\xff".to_vec();
    assert_eq!(read_all(&old).unwrap().len(), 1);
    old.pop();
    assert!(matches!(read_all(&old), Err(RdbFileError::Truncated { offset: 14, .. })));
}

#[test]
fn headers_and_versions() {
    assert!(matches!(read_all(b"RDB"), Err(RdbFileError::NotRdb)));
    assert!(matches!(read_all(b"REDIX0010\xff"), Err(RdbFileError::NotRdb)));
    assert!(matches!(read_all(b"REDIS00a0\xff"), Err(RdbFileError::NotRdb)));
    // Valkey's rule: 80 and up only under VALKEY, 79 and below only under REDIS.
    for header in ["REDIS0000", "REDIS0013", "REDIS0079", "REDIS0080", "REDIS0081", "VALKEY011", "VALKEY081"] {
        let err = read_all(&with_header(header, b"", None)).unwrap_err();
        assert!(matches!(err, RdbFileError::Version { .. }), "{header}: {err}");
        assert!(err.to_string().contains(header) && err.to_string().contains("VALKEY080"), "{err}");
    }
    for header in ["REDIS0001", "REDIS0009", "REDIS0011", "REDIS0012", "VALKEY080"] {
        assert!(read_all(&with_header(header, b"", None)).unwrap().is_empty(), "{header}");
    }
    assert!(matches!(read_all(b"VALKEY08"), Err(RdbFileError::NotRdb)));
}

/// SLOT_INFO (Redis 7.4, read by Valkey too) is a hint: skipped. Valkey's
/// SLOT_IMPORT (keys of slots still being imported) is refused; in a Redis
/// file that byte is no opcode at all.
#[test]
fn slot_opcodes() {
    let body = b"\xfe\x00\xf4\x41\x00\x01\x00\x00\x01k\x01v"; // SELECTDB 0, SLOT_INFO 256 1 0
    for header in ["REDIS0012", "VALKEY080"] {
        let items = read_all(&with_header(header, body, None)).unwrap();
        assert_eq!(items.iter().map(|i| i.key.clone()).collect::<Vec<_>>(), [b"k".to_vec()], "{header}");
    }
    let import = b"\x00\x01k\x01v\xf3\x01\x02";
    let err = read_all(&with_header("VALKEY080", import, None)).unwrap_err();
    assert!(matches!(err, RdbFileError::SlotImport { offset: 14 }), "{err}");
    assert!(err.to_string().contains("SLOT_IMPORT") && err.to_string().contains("byte 14"), "{err}");
    let err = read_all(&with_header("REDIS0011", import, None)).unwrap_err();
    assert!(matches!(err, RdbFileError::UnknownType { byte: 0xf3, offset: 14 }), "{err}");
}

/// Hashes with field TTLs, in either family's type numbers, are refused
/// with their key named; the same bytes are unknown types elsewhere.
#[test]
fn hashes_with_field_ttls_are_refused_with_their_key() {
    let hash_with = |rdb_type: u8| [&b"\xfe\x03"[..], &[rdb_type], b"\x02hf\x00"].concat();
    for (header, rdb_type, family) in
        [("VALKEY080", 22, "HASH_2"), ("REDIS0012", 22, "Redis 7.4"), ("REDIS0012", 25, "Redis 7.4")]
    {
        let err = read_all(&with_header(header, &hash_with(rdb_type), None)).unwrap_err();
        let ok = matches!(&err, RdbFileError::FieldTtlHash { offset: 11, db: 3, key, rdb_type: t, .. } if key == "hf" && *t == rdb_type);
        assert!(ok && err.to_string().contains(family), "{header} {rdb_type}: {err}");
    }
    let err = read_all(&with_header("VALKEY080", &hash_with(23), None)).unwrap_err();
    assert!(matches!(err, RdbFileError::UnknownType { byte: 23, offset: 11 }), "{err}");
    // The key itself cut short: a truncation, not a panic.
    let err = read_all(b"VALKEY080\x16\x05ab").unwrap_err();
    assert!(matches!(err, RdbFileError::Truncated { .. }), "{err}");
}

#[test]
fn truncation_at_every_byte_is_a_clear_error() {
    let mut files = vec![sample_file()];
    files.push(include_bytes!("files/encodings.rdb").to_vec());
    for bytes in files {
        for cut in 0..bytes.len() {
            match read_all(&bytes[..cut]) {
                Ok(items) => panic!("a file cut at {cut} of {} read as {} keys", bytes.len(), items.len()),
                Err(e) => assert!(!e.to_string().is_empty()),
            }
        }
    }
}

#[test]
fn claimed_lengths_larger_than_the_file_fail_without_allocating_them() {
    // A string claiming 2^60 bytes, a list claiming 2^60 elements.
    let huge_string = framed("0010", b"\x00\x01k\x81\x10\x00\x00\x00\x00\x00\x00\x00abc", None);
    assert!(matches!(read_all(&huge_string), Err(RdbFileError::Truncated { .. })));
    let huge_list = framed("0010", b"\x01\x01k\x81\x10\x00\x00\x00\x00\x00\x00\x00\x01a", None);
    assert!(read_all(&huge_list).is_err());
    let huge_lzf = framed("0010", b"\x00\x01k\xc3\x02\x81\x10\x00\x00\x00\x00\x00\x00\x00\x01a", None);
    assert!(read_all(&huge_lzf).is_err());
}

/// `db:key:type` of each item, sorted.
fn listing(items: &[FileItem]) -> Vec<String> {
    let mut out: Vec<String> =
        items.iter().map(|i| format!("{}:{}:{}", i.db, String::from_utf8_lossy(&i.key), i.value.type_name())).collect();
    out.sort();
    out
}

fn find<'a>(items: &'a [FileItem], key: &str) -> &'a Value {
    &items.iter().find(|i| i.key == key.as_bytes()).unwrap_or_else(|| panic!("no key {key}")).value
}

/// What redis-server 7.0.15 holds after loading each file (KEYS, TYPE,
/// GET, STRLEN, the cardinalities and some contents).
#[test]
fn redis_test_suite_files() {
    let items = read_all(include_bytes!("files/encodings.rdb")).unwrap();
    assert_eq!(
        listing(&items),
        [
            "0:compressible:string",
            "0:hash:hash",
            "0:hash_zipped:hash",
            "0:list:list",
            "0:list_zipped:list",
            "0:number:string",
            "0:set:set",
            "0:set_zipped_1:set",
            "0:set_zipped_2:set",
            "0:set_zipped_3:set",
            "0:string:string",
            "0:zset:zset",
            "0:zset_zipped:zset"
        ]
    );
    assert!(items.iter().all(|i| i.expire_at_ms.is_none()));
    assert_eq!(canonical(find(&items, "number")), "type=string enc=int value=10");
    assert!(canonical(find(&items, "string")).ends_with("value=Hello\\x20World"));
    let lens = |key| value_len(find(&items, key));
    assert_eq!([lens("compressible"), lens("hash"), lens("list"), lens("set"), lens("zset")], [137, 11, 24, 8, 12]);
    assert_eq!(canonical(find(&items, "zset_zipped")), "type=zset enc=listpack members=a=1,b=2,c=3");
    assert_eq!(canonical(find(&items, "set_zipped_1")), "type=set enc=intset members=1,2,3,4");

    for (file, expected) in [
        (&include_bytes!("files/hash-zipmap.rdb")[..], &["0:hash:hash"][..]),
        (include_bytes!("files/hash-ziplist.rdb"), &["0:hash:hash"]),
        (include_bytes!("files/zset-ziplist.rdb"), &["0:zset:zset"]),
        (include_bytes!("files/list-quicklist.rdb"), &["0:list:list", "0:x:string"]),
    ] {
        assert_eq!(listing(&read_all(file).unwrap()), expected);
    }
    let quicklist = read_all(include_bytes!("files/list-quicklist.rdb")).unwrap();
    assert_eq!(canonical(find(&quicklist, "list")), "type=list enc=quicklist items=7");
    assert_eq!(canonical(find(&quicklist, "x")), "type=string enc=int value=7");
}

/// Redis 7.0 ignores the `lua` AUX field of older files (scripts were kept
/// for replicas): the file loads with no keys.
#[test]
fn aux_fields_of_older_servers_are_skipped() {
    let bytes = include_bytes!("files/scriptbackup.rdb");
    let mut reader = FileReader::new(&bytes[..]).unwrap();
    assert_eq!(reader.version(), 10);
    assert!(reader.next_item().unwrap().is_none());
    assert!(reader.aux().iter().any(|(k, v)| k == b"lua" && v.starts_with(b"return redis.call")));
}

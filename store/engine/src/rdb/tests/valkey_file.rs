//! The RDB files valkey-server 9.1.2 saved (`files/valkey9-*.rdb`, made by
//! `files/make-valkey-fixtures.sh`), read with what Valkey itself holds
//! after loading them (KEYS per database, PEXPIRETIME, the contents,
//! `XINFO STREAM stream FULL`, FCALL), and its hash with field TTLs refused.

use super::canonical::canonical;
use super::value_len;
use crate::rdb::{FileItem, FileReader, Format, Magic, RdbFileError};

const TYPES: &[u8] = include_bytes!("files/valkey9-types.rdb");
const FIELD_TTL: &[u8] = include_bytes!("files/valkey9-hash-field-ttl.rdb");
/// The absolute expiry the generator gave (2100-01-01).
const FAR: u64 = 4_102_444_800_000;

fn item<'a>(items: &'a [FileItem], db: u64, key: &str) -> &'a FileItem {
    items.iter().find(|i| i.db == db && i.key == key.as_bytes()).unwrap_or_else(|| panic!("no key {key} in db {db}"))
}

fn text(items: &[FileItem], db: u64, key: &str) -> String {
    canonical(&item(items, db, key).value)
}

#[test]
fn a_valkey_9_save_reads_as_valkey_loads_it() {
    let mut reader = FileReader::new(TYPES).unwrap();
    assert_eq!(reader.format(), Format { magic: Magic::Valkey, version: 80 });
    let items: Vec<FileItem> = reader.by_ref().collect::<Result<_, _>>().unwrap();
    assert!(reader.aux().iter().any(|(k, v)| k == b"valkey-ver" && v == b"9.1.2"));
    let functions = reader.take_functions();
    assert_eq!(functions.len(), 1);
    assert!(functions[0].starts_with(b"#!lua name=vklib\n") && functions[0].ends_with(b"'from valkey' end)"));

    let mut listing: Vec<String> =
        items.iter().map(|i| format!("{}:{}", i.db, String::from_utf8_lossy(&i.key))).collect();
    listing.sort();
    // Valkey's KEYS after loading, plus `gone`: saved expired, skipped on load.
    let db0 = "bighash biglist bigset bigzset embstr gone hash int intset list lpset lzf raw stream ttl zset";
    let mut expected: Vec<String> = db0.split(' ').map(|k| format!("0:{k}")).collect();
    expected.extend(["1:h1", "1:one", "2:z2"].map(String::from));
    expected.sort();
    assert_eq!(listing, expected);

    let with_ttl: Vec<String> = items
        .iter()
        .filter(|i| i.expire_at_ms == Some(FAR))
        .map(|i| format!("{}:{}", i.db, String::from_utf8_lossy(&i.key)))
        .collect();
    assert_eq!(with_ttl.len(), 5, "{with_ttl:?}");
    for key in ["0:ttl", "0:list", "0:bighash", "0:stream", "1:h1"] {
        assert!(with_ttl.contains(&key.to_string()), "{key}");
    }
    assert!(item(&items, 0, "gone").expire_at_ms.is_some_and(|at| at < FAR));
    assert!(items.iter().filter(|i| i.expire_at_ms.is_none()).count() == items.len() - 6);

    assert_eq!(text(&items, 0, "int"), "type=string enc=int value=12345");
    assert_eq!(text(&items, 0, "embstr"), "type=string enc=embstr value=hello");
    assert_eq!(text(&items, 0, "raw"), format!("type=string enc=raw value={}x", "r".repeat(60)));
    assert_eq!(text(&items, 0, "lzf"), format!("type=string enc=raw value={}", "abcdefgh".repeat(40)));
    assert_eq!(text(&items, 0, "list"), "type=list enc=quicklist items=a,b,1,-70000");
    assert_eq!(text(&items, 0, "hash"), "type=hash enc=listpack fields=f=1,g=two");
    assert_eq!(text(&items, 0, "intset"), "type=set enc=intset members=-5,1,1099511627776");
    assert_eq!(text(&items, 0, "lpset"), "type=set enc=hashtable members=a,b,c");
    assert_eq!(text(&items, 0, "zset"), "type=zset enc=listpack members=b=-2,a=1.5,c=3");
    assert_eq!(text(&items, 1, "one"), "type=string enc=int value=1");
    assert_eq!(text(&items, 1, "h1"), "type=hash enc=listpack fields=a=b");
    assert_eq!(text(&items, 2, "z2"), "type=zset enc=listpack members=only=0");

    let sizes: Vec<usize> =
        ["biglist", "bighash", "bigset", "bigzset"].iter().map(|k| value_len(&item(&items, 0, k).value)).collect();
    assert_eq!(sizes, [400, 21, 130, 130]);
    let biglist = text(&items, 0, "biglist");
    assert!(biglist.starts_with("type=list enc=quicklist items=element-0001-of-the-big-list,"));
    assert!(biglist.ends_with(",element-0400-of-the-big-list"));
    assert!(text(&items, 0, "bighash").ends_with(&format!(",long={}", "v".repeat(80))));
    assert!(text(&items, 0, "bigset").starts_with("type=set enc=hashtable members=member1,member10,member100,"));
    let bigzset = text(&items, 0, "bigzset");
    assert!(bigzset.starts_with("type=zset enc=skiplist members=m1=0.25,m2=0.5,") && bigzset.ends_with(",m130=32.5"));

    // `XINFO STREAM stream FULL` in Valkey: the XDEL'd entry, a group with
    // alice's pending entry (entries-read and lag nil), an idle group.
    let stream = "type=stream enc=stream length=2 | last=3-1 | maxdel=2-1 | added=3 | first=1-1 | \
                  entries=1-1{f=v},3-1{h=x} | group=grp last=1-1 read=nil lag=nil \
                  pel=[1-1:alice:1796670983813:1] consumers=[alice:1796670983813:[1-1]] | \
                  group=idle last=3-1 read=nil lag=0 pel=[] consumers=[]";
    assert_eq!(text(&items, 0, "stream"), stream);
}

/// Valkey writes a hash with a field TTL as its type 22 (HASH_2): Cairn
/// has no field TTLs, so the file is refused with the key named, never
/// loaded without them.
#[test]
fn a_valkey_hash_with_field_ttls_is_refused_by_name() {
    let mut reader = FileReader::new(FIELD_TTL).unwrap();
    let plain = reader.next_item().unwrap().map(|i| i.key);
    assert_eq!(plain, Some(b"plain".to_vec()));
    let err = reader.next_item().unwrap_err();
    match &err {
        RdbFileError::FieldTtlHash { offset, db, key, rdb_type, .. } => {
            assert_eq!((*offset, *db, key.as_str(), *rdb_type), (94, 0, "fieldttl", 22));
        }
        other => panic!("{other}"),
    }
    let message = err.to_string();
    assert!(message.contains("key 'fieldttl' (db 0) at byte 94") && message.contains("HASH_2"), "{message}");
    assert!(message.contains("field expiration times") && message.contains("HPERSIST"), "{message}");
    assert_eq!(FIELD_TTL[94], 22, "the offset is the type byte's");
}

#[test]
fn a_valkey_file_cut_at_any_byte_is_a_clear_error() {
    for cut in 0..TYPES.len() {
        match FileReader::new(&TYPES[..cut]).and_then(|r| r.collect::<Result<Vec<_>, _>>()) {
            Ok(items) => panic!("a file cut at {cut} of {} read as {} keys", TYPES.len(), items.len()),
            Err(e) => assert!(!e.to_string().is_empty()),
        }
    }
}

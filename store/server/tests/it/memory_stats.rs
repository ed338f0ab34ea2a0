//! MEMORY STATS against the real server: Redis 7.0's fields in Redis's order,
//! figures that follow the dataset, and RESP3's map.

use redis_protocol::resp3::types::OwnedFrame;

use crate::common::*;

/// The reply's names and values in order (RESP2: a flat array).
fn pairs(reply: OwnedFrame) -> Vec<(String, OwnedFrame)> {
    let OwnedFrame::Array { data, .. } = reply else { panic!("MEMORY STATS replies with an array: {reply:?}") };
    assert_eq!(data.len() % 2, 0);
    data.chunks(2).map(|p| (text(&p[0]), p[1].clone())).collect()
}

fn text(frame: &OwnedFrame) -> String {
    match frame {
        OwnedFrame::BlobString { data, .. } => String::from_utf8_lossy(data).into_owned(),
        other => panic!("a field name is a bulk string: {other:?}"),
    }
}

fn number(pairs: &[(String, OwnedFrame)], name: &str) -> i64 {
    match pairs.iter().find(|(n, _)| n == name).map(|(_, v)| v) {
        Some(OwnedFrame::Number { data, .. }) => *data,
        other => panic!("{name}: {other:?}"),
    }
}

const REDIS_FIELDS_BEFORE_DBS: [&str; 10] = [
    "peak.allocated",
    "total.allocated",
    "startup.allocated",
    "replication.backlog",
    "clients.slaves",
    "clients.normal",
    "cluster.links",
    "aof.buffer",
    "lua.caches",
    "functions.caches",
];

const REDIS_FIELDS_AFTER_DBS: [&str; 17] = [
    "overhead.total",
    "keys.count",
    "keys.bytes-per-key",
    "dataset.bytes",
    "dataset.percentage",
    "peak.percentage",
    "allocator.allocated",
    "allocator.active",
    "allocator.resident",
    "allocator-fragmentation.ratio",
    "allocator-fragmentation.bytes",
    "allocator-rss.ratio",
    "allocator-rss.bytes",
    "rss-overhead.ratio",
    "rss-overhead.bytes",
    "fragmentation",
    "fragmentation.bytes",
];

#[test]
fn memory_stats_has_redis_fields_in_order_and_follows_the_dataset() {
    let server = TestServer::start();
    let mut c = server.client();
    let empty = pairs(c.cmd(&["MEMORY", "STATS"]));
    let names: Vec<&str> = empty.iter().map(|(n, _)| n.as_str()).collect();
    let mut expected: Vec<&str> = REDIS_FIELDS_BEFORE_DBS.to_vec();
    expected.extend(REDIS_FIELDS_AFTER_DBS);
    assert_eq!(names, expected, "no database holds keys yet");
    assert_eq!(number(&empty, "keys.count"), 0);
    assert_eq!(number(&empty, "keys.bytes-per-key"), 0);
    assert!(number(&empty, "startup.allocated") > 0);
    assert!(number(&empty, "clients.normal") > 0, "one client is connected");

    assert_eq!(c.cmd(&["DEBUG", "POPULATE", "20000"]), simple("OK"));
    c.cmd(&["SELECT", "5"]);
    c.cmd(&["SET", "k", "v", "EX", "100"]);
    let full = pairs(c.cmd(&["MEMORY", "STATS"]));
    let names: Vec<&str> = full.iter().map(|(n, _)| n.as_str()).collect();
    assert_eq!(&names[10..12], ["db.0", "db.5"]);
    assert_eq!(number(&full, "keys.count"), 20001);
    let OwnedFrame::Array { data: db5, .. } = &full[11].1 else { panic!("db.5 is a nested reply") };
    assert_eq!(
        db5[..].iter().step_by(2).map(text).collect::<Vec<_>>(),
        ["overhead.hashtable.main", "overhead.hashtable.expires", "overhead.hashtable.slot-to-keys"]
    );
    assert!(matches!(db5[3], OwnedFrame::Number { data, .. } if data > 0), "db.5 holds a key with a TTL: {db5:?}");
    // Used memory is the process's (tests run servers side by side in one
    // process), so only relations that hold whatever the others do.
    let total = number(&full, "total.allocated");
    assert!(number(&full, "peak.allocated") >= total);
    assert_eq!(number(&full, "dataset.bytes"), (total - number(&full, "overhead.total")).max(0));
    let net = (total - number(&full, "startup.allocated")).max(1);
    assert_eq!(number(&full, "keys.bytes-per-key"), net / 20001, "memory used since startup per key");
    assert_eq!(c.cmd(&["MEMORY", "STATS", "x"]), err("ERR wrong number of arguments for 'memory|stats' command"));
}

#[test]
fn memory_stats_is_a_map_in_resp3() {
    let server = TestServer::start();
    let mut c = server.client();
    c.cmd(&["SET", "a", "b"]);
    c.resp3 = true;
    c.cmd(&["HELLO", "3"]);
    let reply = c.cmd(&["MEMORY", "STATS"]);
    let OwnedFrame::Map { data, .. } = reply else { panic!("RESP3 MEMORY STATS is a map: {reply:?}") };
    assert_eq!(data.len(), REDIS_FIELDS_BEFORE_DBS.len() + REDIS_FIELDS_AFTER_DBS.len() + 1);
}

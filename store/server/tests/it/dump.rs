//! DUMP and RESTORE against the real server: every type round-trips, with
//! TTL, REPLACE and Redis's errors.

use crate::common::*;
use redis_protocol::resp3::types::OwnedFrame;

fn payload(c: &mut Client, key: &str) -> Vec<u8> {
    match c.cmd(&["DUMP", key]) {
        OwnedFrame::BlobString { data, .. } => data.to_vec(),
        other => panic!("DUMP reply {other:?}"),
    }
}

fn restore(c: &mut Client, key: &str, ttl: &str, payload: &[u8], extra: &[&str]) -> OwnedFrame {
    let mut args: Vec<&[u8]> = vec![b"RESTORE", key.as_bytes(), ttl.as_bytes(), payload];
    args.extend(extra.iter().map(|a| a.as_bytes()));
    c.send_raw(&Client::encode(&args));
    c.read()
}

#[test]
fn every_type_round_trips() {
    let server = TestServer::start();
    let mut c = server.client();
    c.cmd(&["SET", "s", "text"]);
    c.cmd(&["RPUSH", "l", "a", "b", "c"]);
    c.cmd(&["HSET", "h", "f", "1", "g", "2"]);
    c.cmd(&["SADD", "st", "x", "y"]);
    c.cmd(&["ZADD", "z", "1.5", "m", "2", "n"]);
    c.cmd(&["XADD", "x", "1-1", "k", "v"]);
    for (key, read) in [
        ("s", vec!["GET"]),
        ("l", vec!["LRANGE", "0", "-1"]),
        ("h", vec!["HGETALL"]),
        ("st", vec!["SMEMBERS"]),
        ("z", vec!["ZRANGE", "0", "-1", "WITHSCORES"]),
        ("x", vec!["XRANGE", "-", "+"]),
    ] {
        let dump = payload(&mut c, key);
        let copy = format!("{key}-copy");
        assert_eq!(restore(&mut c, &copy, "0", &dump, &[]), simple("OK"), "{key}");
        let mut original = vec![read[0], key];
        original.extend(&read[1..]);
        let mut restored = vec![read[0], copy.as_str()];
        restored.extend(&read[1..]);
        assert_eq!(c.cmd(&original), c.cmd(&restored), "{key}");
    }
    assert_eq!(c.cmd(&["DUMP", "missing"]), null_bulk_resp2());
}

#[test]
fn ttl_replace_and_errors() {
    let server = TestServer::start();
    let mut c = server.client();
    c.cmd(&["SET", "k", "v"]);
    let dump = payload(&mut c, "k");
    assert_eq!(restore(&mut c, "k", "0", &dump, &[]), err("BUSYKEY Target key name already exists."));
    assert_eq!(restore(&mut c, "k", "100000", &dump, &["REPLACE"]), simple("OK"));
    assert!(matches!(c.cmd(&["PTTL", "k"]), OwnedFrame::Number { data, .. } if data > 90_000));
    assert_eq!(restore(&mut c, "n", "-1", &dump, &[]), err("ERR Invalid TTL value, must be >= 0"));
    assert_eq!(restore(&mut c, "n", "0", b"garbage", &[]), err("ERR DUMP payload version or checksum are wrong"));
    let mut damaged = dump.clone();
    damaged[12] ^= 0xff;
    assert_eq!(restore(&mut c, "n", "0", &damaged, &[]), err("ERR DUMP payload version or checksum are wrong"));
    assert_eq!(c.cmd(&["EXISTS", "n"]), int(0));
}

#[test]
fn busykey_is_checked_before_the_ttl_and_the_payload() {
    let server = TestServer::start();
    let mut c = server.client();
    c.cmd(&["SET", "k", "v"]);
    let busy = err("BUSYKEY Target key name already exists.");
    assert_eq!(restore(&mut c, "k", "0", b"...", &[]), busy);
    assert_eq!(restore(&mut c, "k", "-1", b"...", &[]), busy);
    assert_eq!(restore(&mut c, "k", "x", b"...", &[]), busy);
    // Options come first; REPLACE skips the check and reaches the payload.
    assert_eq!(restore(&mut c, "k", "0", b"...", &["bogus"]), err("ERR syntax error"));
    assert_eq!(restore(&mut c, "k", "0", b"...", &["REPLACE"]), err("ERR DUMP payload version or checksum are wrong"));
    assert_eq!(c.cmd(&["GET", "k"]), bulk("v"));
}

/// A Cairn payload (see `commands/dump.rs`) with a right version and CRC-32C
/// around `body`, whatever that body holds.
fn sealed(body: &[u8]) -> Vec<u8> {
    let mut payload = b"CAIRNDUMP\x01".to_vec();
    payload.extend_from_slice(body);
    let crc = crc32c::crc32c(&payload);
    payload.extend_from_slice(&crc.to_le_bytes());
    payload
}

#[test]
fn sound_checksum_over_bad_content_is_bad_data_format() {
    let server = TestServer::start();
    let mut c = server.client();
    let bad_data = err("ERR Bad data format");
    // Claims one command of one argument, then ends.
    let truncated = sealed(&[1, 0, 0, 0, 1, 0, 0, 0]);
    assert_eq!(restore(&mut c, "k", "0", &truncated, &[]), bad_data);
    // One command naming no known command: ["NOSUCH", key].
    let unknown = sealed(&[1, 0, 0, 0, 2, 0, 0, 0, 1, 6, 0, 0, 0, b'N', b'O', b'S', b'U', b'C', b'H', 0]);
    assert_eq!(restore(&mut c, "k", "0", &unknown, &[]), bad_data);
    // A wrong version or checksum keeps Redis's checksum error.
    let mut damaged = truncated.clone();
    damaged[9] = 2;
    assert_eq!(restore(&mut c, "k", "0", &damaged, &[]), err("ERR DUMP payload version or checksum are wrong"));
    // The existing key survives a REPLACE whose payload does not parse.
    c.cmd(&["SET", "k", "v"]);
    assert_eq!(restore(&mut c, "k", "0", &truncated, &["REPLACE"]), bad_data);
    assert_eq!(c.cmd(&["GET", "k"]), bulk("v"));
}

fn integer(frame: OwnedFrame) -> i64 {
    match frame {
        OwnedFrame::Number { data, .. } => data,
        other => panic!("not an integer: {other:?}"),
    }
}

#[test]
fn idletime_sets_the_access_time_under_an_lru_policy() {
    let server = TestServer::start();
    let mut c = server.client();
    c.cmd(&["SET", "k", "v"]);
    let dump = payload(&mut c, "k");
    assert_eq!(c.cmd(&["CONFIG", "SET", "maxmemory-policy", "allkeys-lru"]), simple("OK"));
    assert_eq!(restore(&mut c, "idle", "0", &dump, &["IDLETIME", "1000"]), simple("OK"));
    let idle = integer(c.cmd(&["OBJECT", "IDLETIME", "idle"]));
    assert!((1000..=1002).contains(&idle), "idle {idle}");
    assert_eq!(c.cmd(&["GET", "idle"]), bulk("v"));
    // FREQ means nothing without an LFU policy.
    assert_eq!(restore(&mut c, "freq", "0", &dump, &["FREQ", "100"]), simple("OK"));
    assert_eq!(c.cmd(&["CONFIG", "SET", "maxmemory-policy", "allkeys-lfu"]), simple("OK"));
    assert_eq!(c.cmd(&["OBJECT", "FREQ", "freq"]), int(0));
}

#[test]
fn freq_sets_the_lfu_counter_under_an_lfu_policy() {
    let server = TestServer::start();
    let mut c = server.client();
    c.cmd(&["SET", "k", "v"]);
    let dump = payload(&mut c, "k");
    assert_eq!(c.cmd(&["CONFIG", "SET", "maxmemory-policy", "allkeys-lfu"]), simple("OK"));
    assert_eq!(restore(&mut c, "freq", "0", &dump, &["FREQ", "100"]), simple("OK"));
    assert_eq!(c.cmd(&["OBJECT", "FREQ", "freq"]), int(100));
    assert_eq!(c.cmd(&["GET", "freq"]), bulk("v"));
    // IDLETIME means nothing under an LFU policy.
    assert_eq!(restore(&mut c, "idle", "0", &dump, &["IDLETIME", "1000"]), simple("OK"));
    assert_eq!(c.cmd(&["CONFIG", "SET", "maxmemory-policy", "noeviction"]), simple("OK"));
    assert!(integer(c.cmd(&["OBJECT", "IDLETIME", "idle"])) < 10);
}

#[test]
fn idletime_and_freq_exclude_each_other() {
    let server = TestServer::start();
    let mut c = server.client();
    c.cmd(&["SET", "k", "v"]);
    let dump = payload(&mut c, "k");
    let syntax = err("ERR syntax error");
    assert_eq!(restore(&mut c, "n", "0", &dump, &["IDLETIME", "5", "FREQ", "5"]), syntax);
    assert_eq!(restore(&mut c, "n", "0", &dump, &["FREQ", "5", "IDLETIME", "5"]), syntax);
    assert_eq!(
        restore(&mut c, "n", "0", &dump, &["FREQ", "256"]),
        err("ERR Invalid FREQ value, must be >= 0 and <= 255")
    );
    assert_eq!(restore(&mut c, "n", "0", &dump, &["IDLETIME", "-1"]), err("ERR Invalid IDLETIME value, must be >= 0"));
    assert_eq!(c.cmd(&["EXISTS", "n"]), int(0));
}

//! HyperLogLog commands against the real server over RESP: replies, errors,
//! Redis's exact bytes (in and out), notifications, what the log records,
//! and counts after a restart.

use crate::common::*;
use redis_protocol::resp3::types::OwnedFrame;

/// An empty sketch as Redis 7.0.15 stores it after `PFADD k`.
const REDIS_EMPTY: &str = "48594c4c0100000000000000000000807fff";
/// `PFADD k a b c d e` in Redis 7.0.15, before and after PFCOUNT.
const REDIS_ABCDE: &str = "48594c4c0100000000000000000000805c7b8044768050b184498c80426d80425a";
const REDIS_ABCDE_COUNTED: &str = "48594c4c0100000005000000000000005c7b8044768050b184498c80426d80425a";

fn hex(text: &str) -> Vec<u8> {
    (0..text.len()).step_by(2).map(|i| u8::from_str_radix(&text[i..i + 2], 16).expect("hex")).collect()
}

fn blob(data: Vec<u8>) -> OwnedFrame {
    OwnedFrame::BlobString { data, attributes: None }
}

/// Sends a command with binary arguments.
fn raw_cmd(c: &mut Client, args: &[&[u8]]) -> OwnedFrame {
    c.send_raw(&Client::encode(args));
    c.read()
}

fn number(frame: &OwnedFrame) -> i64 {
    match frame {
        OwnedFrame::Number { data, .. } => *data,
        other => panic!("not an integer: {other:?}"),
    }
}

const NOT_HLL: &str = "WRONGTYPE Key is not a valid HyperLogLog string value.";
const CORRUPT: &str = "INVALIDOBJ Corrupted HLL object detected";

#[test]
fn sketches_are_redis_strings_byte_for_byte() {
    let server = TestServer::start();
    let mut c = server.client();
    assert_eq!(c.cmd(&["PFADD", "empty"]), int(1));
    assert_eq!(c.cmd(&["GET", "empty"]), blob(hex(REDIS_EMPTY)));
    assert_eq!(c.cmd(&["PFADD", "k", "a", "b", "c", "d", "e"]), int(1));
    assert_eq!(c.cmd(&["GET", "k"]), blob(hex(REDIS_ABCDE)));
    assert_eq!(c.cmd(&["PFCOUNT", "k"]), int(5));
    assert_eq!(c.cmd(&["GET", "k"]), blob(hex(REDIS_ABCDE_COUNTED)));
    assert_eq!(c.cmd(&["TYPE", "k"]), simple("string"));
    assert_eq!(c.cmd(&["OBJECT", "ENCODING", "k"]), bulk("raw"));

    // Bytes Redis produced work here, as a sketch and as PFMERGE input.
    assert_eq!(raw_cmd(&mut c, &[b"SET", b"fromredis", &hex(REDIS_ABCDE)]), simple("OK"));
    assert_eq!(c.cmd(&["PFCOUNT", "fromredis"]), int(5));
    assert_eq!(c.cmd(&["GET", "fromredis"]), blob(hex(REDIS_ABCDE_COUNTED)));
    assert_eq!(
        c.cmd(&["PFDEBUG", "DECODE", "fromredis"]),
        bulk("Z:7292 v:1,1 Z:1143 v:1,1 Z:4274 v:2,1 Z:2445 v:1,1 Z:622 v:1,1 Z:603")
    );
    assert_eq!(c.cmd(&["PFADD", "fromredis", "a", "e"]), int(0));
    assert_eq!(c.cmd(&["PFMERGE", "merged", "fromredis", "k", "missing"]), simple("OK"));
    assert_eq!(c.cmd(&["PFCOUNT", "merged"]), int(5));
}

#[test]
fn counts_merges_and_the_cache() {
    let server = TestServer::start();
    let mut c = server.client();
    assert_eq!(c.cmd(&["PFCOUNT", "nothing"]), int(0));
    assert_eq!(c.cmd(&["PFADD", "a", "1", "2", "3"]), int(1));
    assert_eq!(c.cmd(&["PFADD", "b", "3", "4", "5"]), int(1));
    assert_eq!(c.cmd(&["PFCOUNT", "a"]), int(3));
    assert_eq!(c.cmd(&["GETRANGE", "a", "15", "15"]), bulk("\0"));
    assert_eq!(c.cmd(&["PFADD", "a", "1"]), int(0));
    assert_eq!(c.cmd(&["GETRANGE", "a", "15", "15"]), bulk("\0"), "no change, cache kept");
    assert_eq!(c.cmd(&["PFADD", "a", "6"]), int(1));
    assert_eq!(c.cmd(&["GETRANGE", "a", "15", "15"]), blob(vec![0x80]), "cache marked stale");
    assert_eq!(c.cmd(&["PFCOUNT", "a", "b", "nothing"]), int(6));
    assert_eq!(c.cmd(&["GETRANGE", "b", "15", "15"]), blob(vec![0x80]), "a union count writes nothing");
    assert_eq!(c.cmd(&["PFMERGE", "ab", "a", "b"]), simple("OK"));
    assert_eq!(c.cmd(&["PFCOUNT", "ab"]), int(6));
    assert_eq!(c.cmd(&["PFMERGE", "ab"]), simple("OK"));
    assert_eq!(c.cmd(&["PFMERGE", "new"]), simple("OK"));
    assert_eq!(c.cmd(&["PFCOUNT", "new"]), int(0));
}

#[test]
fn sparse_sketches_turn_dense_at_the_configured_size() {
    let server = TestServer::start();
    let mut c = server.client();
    let limit = c.cmd(&["CONFIG", "GET", "hll-sparse-max-bytes"]);
    assert_eq!(limit, OwnedFrame::Array { data: vec![bulk("hll-sparse-max-bytes"), bulk("3000")], attributes: None });
    let elements: Vec<String> = (0..200).map(|i| format!("e{i}")).collect();
    let mut pfadd: Vec<&str> = vec!["PFADD", "h"];
    pfadd.extend(elements.iter().map(String::as_str));
    c.cmd(&pfadd);
    assert_eq!(c.cmd(&["PFDEBUG", "ENCODING", "h"]), simple("sparse"));
    assert_eq!(c.cmd(&["CONFIG", "SET", "hll-sparse-max-bytes", "100"]), simple("OK"));
    assert_eq!(c.cmd(&["PFADD", "h", "one more", "and another", "and a third"]), int(1));
    assert_eq!(c.cmd(&["PFDEBUG", "ENCODING", "h"]), simple("dense"));
    assert_eq!(c.cmd(&["STRLEN", "h"]), int(12304));
    assert_eq!(c.cmd(&["CONFIG", "SET", "hll-sparse-max-bytes", "3000"]), simple("OK"));

    // A dense source makes PFMERGE's destination dense.
    c.cmd(&["PFADD", "small", "x"]);
    assert_eq!(c.cmd(&["PFMERGE", "small", "h"]), simple("OK"));
    assert_eq!(c.cmd(&["PFDEBUG", "ENCODING", "small"]), simple("dense"));

    c.cmd(&["PFADD", "s", "x", "y"]);
    assert_eq!(c.cmd(&["PFDEBUG", "TODENSE", "s"]), int(1));
    assert_eq!(c.cmd(&["PFDEBUG", "TODENSE", "s"]), int(0));
    assert_eq!(c.cmd(&["PFCOUNT", "s"]), int(2));
    match c.cmd(&["PFDEBUG", "GETREG", "s"]) {
        OwnedFrame::Array { data, .. } => {
            assert_eq!(data.len(), 16384);
            assert_eq!(data.iter().filter(|v| number(v) != 0).count(), 2);
        }
        other => panic!("GETREG: {other:?}"),
    }
}

#[test]
fn errors_are_redis_texts() {
    let server = TestServer::start();
    let mut c = server.client();
    let wrongtype = err("WRONGTYPE Operation against a key holding the wrong kind of value");
    c.cmd(&["RPUSH", "list", "a"]);
    c.cmd(&["SET", "str", "not a sketch at all"]);
    c.cmd(&["SET", "int", "12345678901234567"]);
    c.cmd(&["PFADD", "h", "a"]);
    assert_eq!(c.cmd(&["PFADD", "list", "a"]), wrongtype);
    assert_eq!(c.cmd(&["PFCOUNT", "list"]), wrongtype);
    for key in ["str", "int"] {
        assert_eq!(c.cmd(&["PFADD", key, "a"]), err(NOT_HLL));
        assert_eq!(c.cmd(&["PFCOUNT", key]), err(NOT_HLL));
        assert_eq!(c.cmd(&["PFCOUNT", "h", key]), err(NOT_HLL));
        assert_eq!(c.cmd(&["PFMERGE", "h", key]), err(NOT_HLL));
        assert_eq!(c.cmd(&["PFMERGE", key, "h"]), err(NOT_HLL));
        assert_eq!(c.cmd(&["PFDEBUG", "ENCODING", key]), err(NOT_HLL));
    }
    assert_eq!(c.cmd(&["PFDEBUG", "ENCODING", "nokey"]), err("ERR The specified key does not exist"));
    assert_eq!(c.cmd(&["PFDEBUG", "FOO", "h"]), err("ERR Unknown PFDEBUG subcommand 'FOO'"));
    assert_eq!(c.cmd(&["PFDEBUG", "GETREG", "h", "x"]), err("ERR wrong number of arguments for 'pfdebug' command"));
    assert_eq!(c.cmd(&["PFADD"]), err("ERR wrong number of arguments for 'pfadd' command"));
    c.cmd(&["PFDEBUG", "TODENSE", "h"]);
    assert_eq!(c.cmd(&["PFDEBUG", "DECODE", "h"]), err("ERR HLL encoding is not sparse"));

    // Corruption the way the Redis test suite makes it.
    c.cmd(&["PFADD", "tail", "a", "b", "c"]);
    c.cmd(&["APPEND", "tail", "hello"]);
    assert_eq!(c.cmd(&["PFCOUNT", "tail"]), err(CORRUPT));
    assert_eq!(c.cmd(&["PFCOUNT", "tail", "h"]), err(CORRUPT));
    assert_eq!(c.cmd(&["PFMERGE", "dest", "tail"]), err(CORRUPT));
    assert_eq!(c.cmd(&["EXISTS", "dest"]), int(0));
    assert_eq!(c.cmd(&["PFDEBUG", "GETREG", "tail"]), err(CORRUPT));
    c.cmd(&["PFADD", "magic", "a"]);
    c.cmd(&["SETRANGE", "magic", "0", "0123"]);
    assert_eq!(c.cmd(&["PFCOUNT", "magic"]), err(NOT_HLL));
    c.cmd(&["PFADD", "dense", "a"]);
    c.cmd(&["SETRANGE", "dense", "4", "\0"]);
    assert_eq!(c.cmd(&["PFCOUNT", "dense"]), err(NOT_HLL), "a dense header on a sparse length");
    assert_eq!(error_text(&c.cmd(&["PFSELFTEST", "x"])), "ERR wrong number of arguments for 'pfselftest' command");
    assert_eq!(c.cmd(&["PFSELFTEST"]), simple("OK"));
}

#[test]
fn pfadd_and_pfmerge_raise_pfadd_events() {
    let server = TestServer::start();
    let mut c = server.client();
    assert_eq!(c.cmd(&["CONFIG", "SET", "notify-keyspace-events", "E$"]), simple("OK"));
    let mut sub = server.client();
    sub.cmd(&["SUBSCRIBE", "__keyevent@0__:pfadd"]);
    c.cmd(&["PFADD", "h", "a"]);
    c.cmd(&["PFADD", "h", "a"]);
    c.cmd(&["PFMERGE", "m", "h"]);
    c.cmd(&["PFCOUNT", "h"]);
    c.cmd(&["PFADD", "last", "z"]);
    let message = |key: &str| OwnedFrame::Array {
        data: vec![bulk("message"), bulk("__keyevent@0__:pfadd"), bulk(key)],
        attributes: None,
    };
    assert_eq!(sub.read(), message("h"));
    assert_eq!(sub.read(), message("m"), "no event for a PFADD that changed nothing");
    assert_eq!(sub.read(), message("last"), "none for PFCOUNT");
}

#[test]
fn only_changes_are_logged() {
    let server = TestServer::start();
    let mut c = server.client();
    let start = c.info_number("persistence", "cairn_last_lsn");
    c.cmd(&["PFADD", "h", "a", "b"]);
    assert_eq!(c.info_number("persistence", "cairn_last_lsn"), start + 1);
    assert_eq!(c.cmd(&["PFADD", "h", "a", "b"]), int(0));
    assert_eq!(c.cmd(&["PFCOUNT", "h"]), int(2));
    assert_eq!(c.cmd(&["PFCOUNT", "h", "other"]), int(2));
    assert_eq!(c.cmd(&["PFDEBUG", "ENCODING", "h"]), simple("sparse"));
    assert!(matches!(c.cmd(&["PFDEBUG", "DECODE", "h"]), OwnedFrame::BlobString { .. }));
    assert_eq!(
        c.info_number("persistence", "cairn_last_lsn"),
        start + 1,
        "no-ops, reads and the cache refresh are not logged"
    );
    assert_eq!(c.cmd(&["PFDEBUG", "TODENSE", "h"]), int(1));
    assert_eq!(c.info_number("persistence", "cairn_last_lsn"), start + 2);
    assert!(matches!(c.cmd(&["PFDEBUG", "GETREG", "h"]), OwnedFrame::Array { .. }));
    assert_eq!(c.info_number("persistence", "cairn_last_lsn"), start + 2, "GETREG of a dense sketch changes nothing");
    c.cmd(&["PFMERGE", "m", "h"]);
    assert_eq!(c.info_number("persistence", "cairn_last_lsn"), start + 3);
}

#[test]
fn counts_survive_a_restart() {
    let mut first = TestServer::start();
    let mut expected = Vec::new();
    {
        let mut c = first.client();
        for (key, n) in [("small", 50), ("large", 5000)] {
            let elements: Vec<String> = (0..n).map(|i| format!("{key}-{i}")).collect();
            for chunk in elements.chunks(500) {
                let mut args: Vec<&str> = vec!["PFADD", key];
                args.extend(chunk.iter().map(String::as_str));
                c.cmd(&args);
            }
        }
        c.cmd(&["PFMERGE", "both", "small", "large"]);
        c.cmd(&["PFADD", "todense", "x", "y", "z"]);
        c.cmd(&["PFDEBUG", "TODENSE", "todense"]);
        for key in ["small", "large", "both", "todense"] {
            let count = c.cmd(&["PFCOUNT", key]);
            let encoding = c.cmd(&["PFDEBUG", "ENCODING", key]);
            expected.push((key, count, encoding));
        }
        // A stale cache at the crash: recomputed the same after replay.
        c.cmd(&["PFADD", "small", "one more"]);
        expected[0].1 = c.cmd(&["PFCOUNT", "small"]);
        expected.push(("union", c.cmd(&["PFCOUNT", "small", "large", "todense"]), simple("-")));
    }
    let dir = first.dir.clone();
    first.running.take().expect("running").stop();
    let second =
        cairn_server::start(cairn_server::Config::for_tests(&dir), cairn_server::Shutdown::new()).expect("restart");
    let mut c = Client::connect(second.addr);
    for (key, count, encoding) in &expected {
        if *key == "union" {
            assert_eq!(&c.cmd(&["PFCOUNT", "small", "large", "todense"]), count, "union");
            continue;
        }
        assert_eq!(&c.cmd(&["PFCOUNT", key]), count, "{key}");
        assert_eq!(&c.cmd(&["PFDEBUG", "ENCODING", key]), encoding, "{key}");
    }
    second.stop();
    let _ = std::fs::remove_dir_all(&dir);
}

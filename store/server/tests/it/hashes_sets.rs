//! Integration tests for the hash and set commands: the real server on an
//! ephemeral loopback port, spoken to over real RESP.

use std::collections::BTreeSet;

use crate::common::*;
use redis_protocol::resp3::types::OwnedFrame;

fn bulks(items: &[&str]) -> OwnedFrame {
    array(items.iter().map(|s| bulk(s)).collect())
}

/// The items of an array (or RESP3 set) reply, as strings.
fn strings(frame: OwnedFrame) -> Vec<String> {
    let items = match frame {
        OwnedFrame::Array { data, .. } => data,
        OwnedFrame::Set { data, .. } => data.into_iter().collect(),
        other => panic!("not an array: {other:?}"),
    };
    items
        .into_iter()
        .map(|f| match f {
            OwnedFrame::BlobString { data, .. } => String::from_utf8(data).expect("utf8"),
            other => panic!("not a bulk: {other:?}"),
        })
        .collect()
}

fn sorted(frame: OwnedFrame) -> Vec<String> {
    let mut v = strings(frame);
    v.sort();
    v
}

/// Runs a whole SCAN-family iteration, returning every item seen.
fn scan_all(c: &mut Client, command: &str, key: &str, count: &str) -> Vec<String> {
    let mut cursor = "0".to_string();
    let mut seen = Vec::new();
    loop {
        let reply = c.cmd(&[command, key, &cursor, "COUNT", count]);
        let OwnedFrame::Array { mut data, .. } = reply else { panic!("scan reply: {reply:?}") };
        let items = data.pop().expect("items");
        let next = strings(array(data)).pop().expect("cursor");
        seen.extend(strings(items));
        cursor = next;
        if cursor == "0" {
            return seen;
        }
    }
}

#[test]
fn hash_basics_and_errors() {
    let server = TestServer::start();
    let mut c = server.client();
    assert_eq!(c.cmd(&["HSET", "h", "a", "1", "b", "2"]), int(2));
    assert_eq!(c.cmd(&["HSET", "h", "a", "10", "c", "3"]), int(1));
    assert_eq!(c.cmd(&["HMSET", "h", "d", "4"]), simple("OK"));
    assert_eq!(c.cmd(&["HGET", "h", "a"]), bulk("10"));
    assert_eq!(c.cmd(&["HGET", "h", "zz"]), OwnedFrame::Null);
    assert_eq!(c.cmd(&["HMGET", "h", "a", "zz"]), array(vec![bulk("10"), OwnedFrame::Null]));
    assert_eq!(c.cmd(&["HLEN", "h"]), int(4));
    assert_eq!(c.cmd(&["HSTRLEN", "h", "a"]), int(2));
    assert_eq!(c.cmd(&["HEXISTS", "h", "b"]), int(1));
    assert_eq!(c.cmd(&["HSETNX", "h", "b", "x"]), int(0));
    assert_eq!(c.cmd(&["HSETNX", "h", "e", "5"]), int(1));
    assert_eq!(sorted(c.cmd(&["HKEYS", "h"])), ["a", "b", "c", "d", "e"]);
    assert_eq!(sorted(c.cmd(&["HVALS", "h"])), ["10", "2", "3", "4", "5"]);
    assert_eq!(c.cmd(&["HGETALL", "nokey"]), array(vec![]));
    assert_eq!(c.cmd(&["HSET", "h", "a"]), err("ERR wrong number of arguments for 'hset' command"));
    assert_eq!(c.cmd(&["HMSET", "h", "a", "1", "b"]), err("ERR wrong number of arguments for 'hmset' command"));
    assert_eq!(c.cmd(&["SET", "s", "x"]), simple("OK"));
    assert_eq!(c.cmd(&["HGET", "s", "a"]), err("WRONGTYPE Operation against a key holding the wrong kind of value"));
    assert_eq!(c.cmd(&["HMGET", "s", "a"]), err("WRONGTYPE Operation against a key holding the wrong kind of value"));
    // Deleting every field deletes the key.
    assert_eq!(c.cmd(&["HDEL", "h", "a", "b", "c", "d", "e", "f"]), int(5));
    assert_eq!(c.cmd(&["EXISTS", "h"]), int(0));
}

#[test]
fn hash_increments() {
    let server = TestServer::start();
    let mut c = server.client();
    assert_eq!(c.cmd(&["HINCRBY", "h", "n", "5"]), int(5));
    assert_eq!(c.cmd(&["HINCRBY", "h", "n", "-7"]), int(-2));
    assert_eq!(c.cmd(&["HSET", "h", "s", " 11"]), int(1));
    assert_eq!(c.cmd(&["HINCRBY", "h", "s", "1"]), err("ERR hash value is not an integer"));
    assert_eq!(c.cmd(&["HINCRBY", "h", "n", "x"]), err("ERR value is not an integer or out of range"));
    assert_eq!(c.cmd(&["HSET", "h", "big", "9223372036854775807"]), int(1));
    assert_eq!(c.cmd(&["HINCRBY", "h", "big", "1"]), err("ERR increment or decrement would overflow"));
    assert_eq!(c.cmd(&["HINCRBYFLOAT", "h", "f", "1.23"]), bulk("1.23"));
    assert_eq!(c.cmd(&["HINCRBYFLOAT", "h", "f", "0.77"]), bulk("2"));
    assert_eq!(c.cmd(&["HINCRBYFLOAT", "h", "s", "1"]), err("ERR hash value is not a float"));
    assert_eq!(c.cmd(&["HINCRBYFLOAT", "h2", "f", "+inf"]), err("ERR value is NaN or Infinity"));
    assert_eq!(c.cmd(&["EXISTS", "h2"]), int(0));
}

#[test]
fn hash_encoding_follows_the_limits() {
    let server = TestServer::start();
    let mut c = server.client();
    assert_eq!(c.cmd(&["HSET", "small", "a", "1"]), int(1));
    assert_eq!(c.cmd(&["OBJECT", "ENCODING", "small"]), bulk("listpack"));
    assert_eq!(c.cmd(&["HSET", "small", "b", &"x".repeat(65)]), int(1));
    assert_eq!(c.cmd(&["OBJECT", "ENCODING", "small"]), bulk("hashtable"));
    assert_eq!(c.cmd(&["CONFIG", "SET", "hash-max-ziplist-entries", "2"]), simple("OK"));
    assert_eq!(c.cmd(&["HSET", "h", "a", "1", "b", "2"]), int(2));
    assert_eq!(c.cmd(&["OBJECT", "ENCODING", "h"]), bulk("listpack"));
    assert_eq!(c.cmd(&["HSET", "h", "c", "3"]), int(1));
    assert_eq!(c.cmd(&["OBJECT", "ENCODING", "h"]), bulk("hashtable"));
    assert_eq!(c.cmd(&["CONFIG", "SET", "hash-max-ziplist-entries", "128"]), simple("OK"));
}

#[test]
fn hrandfield_shapes() {
    let server = TestServer::start();
    let mut c = server.client();
    assert_eq!(c.cmd(&["HRANDFIELD", "nokey"]), OwnedFrame::Null);
    assert_eq!(c.cmd(&["HRANDFIELD", "nokey", "3"]), array(vec![]));
    assert_eq!(c.cmd(&["HSET", "h", "a", "1", "b", "2", "c", "3"]), int(3));
    assert_eq!(strings(c.cmd(&["HRANDFIELD", "h", "-5"])).len(), 5);
    assert_eq!(strings(c.cmd(&["HRANDFIELD", "h", "-5", "WITHVALUES"])).len(), 10);
    assert_eq!(sorted(c.cmd(&["HRANDFIELD", "h", "10"])), ["a", "b", "c"]);
    let two = sorted(c.cmd(&["HRANDFIELD", "h", "2"]));
    assert_eq!(two.len(), 2);
    assert_ne!(two[0], two[1]);
    assert_eq!(c.cmd(&["HRANDFIELD", "h", "0"]), array(vec![]));
    assert_eq!(c.cmd(&["HRANDFIELD", "h", "1", "x"]), err("ERR syntax error"));
    assert_eq!(c.cmd(&["HRANDFIELD", "h", "-9223372036854770000", "WITHVALUES"]), err("ERR value is out of range"));
    assert!(matches!(c.cmd(&["HRANDFIELD", "h", "-9223372036854775808"]), OwnedFrame::SimpleError { .. }));
    // RESP3: pairs are nested arrays.
    c.resp3 = true;
    c.cmd(&["HELLO", "3"]);
    let OwnedFrame::Array { data, .. } = c.cmd(&["HRANDFIELD", "h", "3", "WITHVALUES"]) else { panic!("array") };
    assert_eq!(data.len(), 3);
    assert!(data.iter().all(|pair| matches!(pair, OwnedFrame::Array { data, .. } if data.len() == 2)));
}

#[test]
fn hscan_returns_every_field_despite_writes() {
    let server = TestServer::start();
    let mut c = server.client();
    // Past hash-max-listpack-entries (512): a hash table, scanned in steps.
    for i in 0..600 {
        c.cmd(&["HSET", "h", &format!("f{i}"), "v"]);
    }
    assert_eq!(c.cmd(&["OBJECT", "ENCODING", "h"]), bulk("hashtable"));
    let mut cursor = "0".to_string();
    let mut seen = BTreeSet::new();
    let mut round = 0;
    loop {
        let OwnedFrame::Array { mut data, .. } = c.cmd(&["HSCAN", "h", &cursor, "COUNT", "20"]) else { panic!() };
        let items = strings(data.pop().expect("items"));
        for pair in items.chunks(2) {
            seen.insert(pair[0].clone());
        }
        cursor = strings(array(data)).pop().expect("cursor");
        // Churn: delete fields 200.. and add new ones while scanning.
        c.cmd(&["HDEL", "h", &format!("f{}", 200 + round)]);
        c.cmd(&["HSET", "h", &format!("new{round}"), "v"]);
        round += 1;
        if cursor == "0" {
            break;
        }
    }
    for i in 0..200 {
        assert!(seen.contains(&format!("f{i}")), "f{i} missed");
    }
    // Small hashes come back in one call; MATCH filters fields.
    c.cmd(&["HSET", "small", "foo", "1", "bar", "2", "foobar", "3"]);
    assert_eq!(
        c.cmd(&["HSCAN", "small", "0", "MATCH", "foo*"]),
        array(vec![bulk("0"), bulks(&["foo", "1", "foobar", "3"])])
    );
    assert_eq!(c.cmd(&["HSCAN", "nokey", "0"]), array(vec![bulk("0"), array(vec![])]));
    assert_eq!(c.cmd(&["HSCAN", "small", "x"]), err("ERR invalid cursor"));
    assert_eq!(c.cmd(&["HSCAN", "small", "0", "TYPE", "hash"]), err("ERR syntax error"));
}

#[test]
fn set_basics_and_encodings() {
    let server = TestServer::start();
    let mut c = server.client();
    assert_eq!(c.cmd(&["SADD", "s", "3", "1", "2", "2"]), int(3));
    assert_eq!(c.cmd(&["OBJECT", "ENCODING", "s"]), bulk("intset"));
    assert_eq!(c.cmd(&["SMEMBERS", "s"]), bulks(&["1", "2", "3"]));
    assert_eq!(c.cmd(&["SISMEMBER", "s", "2"]), int(1));
    assert_eq!(c.cmd(&["SMISMEMBER", "s", "2", "9"]), array(vec![int(1), int(0)]));
    assert_eq!(c.cmd(&["SMISMEMBER", "nokey", "2"]), array(vec![int(0)]));
    assert_eq!(c.cmd(&["SADD", "s", "a"]), int(1));
    assert_eq!(c.cmd(&["OBJECT", "ENCODING", "s"]), bulk("hashtable"));
    assert_eq!(c.cmd(&["SCARD", "s"]), int(4));
    assert_eq!(c.cmd(&["SREM", "s", "1", "2", "3", "a", "b"]), int(4));
    assert_eq!(c.cmd(&["EXISTS", "s"]), int(0));
    assert_eq!(c.cmd(&["SADD", "big", "213244124402402314402033402"]), int(1));
    assert_eq!(c.cmd(&["OBJECT", "ENCODING", "big"]), bulk("hashtable"));
    assert_eq!(c.cmd(&["SET", "str", "x"]), simple("OK"));
    assert_eq!(c.cmd(&["SADD", "str", "x"]), err("WRONGTYPE Operation against a key holding the wrong kind of value"));
}

#[test]
fn spop_and_srandmember() {
    let server = TestServer::start();
    let mut c = server.client();
    assert_eq!(c.cmd(&["SRANDMEMBER", "nokey"]), OwnedFrame::Null);
    assert_eq!(c.cmd(&["SRANDMEMBER", "nokey", "5"]), array(vec![]));
    assert_eq!(c.cmd(&["SPOP", "nokey"]), OwnedFrame::Null);
    assert_eq!(c.cmd(&["SPOP", "nokey", "5"]), array(vec![]));
    c.cmd(&["SADD", "s", "a", "b", "c", "d", "e"]);
    assert_eq!(strings(c.cmd(&["SRANDMEMBER", "s", "-20"])).len(), 20);
    assert_eq!(sorted(c.cmd(&["SRANDMEMBER", "s", "9"])), ["a", "b", "c", "d", "e"]);
    let three = sorted(c.cmd(&["SRANDMEMBER", "s", "3"]));
    assert_eq!(three.iter().collect::<BTreeSet<_>>().len(), 3);
    assert_eq!(c.cmd(&["SPOP", "s", "-1"]), err("ERR value is out of range, must be positive"));
    assert!(matches!(c.cmd(&["SRANDMEMBER", "s", "-9223372036854775808"]), OwnedFrame::SimpleError { .. }));
    let popped = strings(c.cmd(&["SPOP", "s", "2"]));
    assert_eq!(popped.len(), 2);
    assert_eq!(c.cmd(&["SCARD", "s"]), int(3));
    let rest = strings(c.cmd(&["SPOP", "s", "10"]));
    assert_eq!(rest.len(), 3);
    assert_eq!(c.cmd(&["EXISTS", "s"]), int(0));
    c.cmd(&["SADD", "one", "7"]);
    assert_eq!(c.cmd(&["SPOP", "one"]), bulk("7"));
    assert_eq!(c.cmd(&["EXISTS", "one"]), int(0));
}

#[test]
fn smove_semantics() {
    let server = TestServer::start();
    let mut c = server.client();
    c.cmd(&["SADD", "src", "1", "a", "b"]);
    c.cmd(&["SADD", "dst", "2", "3"]);
    assert_eq!(c.cmd(&["SMOVE", "src", "dst", "1"]), int(1));
    assert_eq!(c.cmd(&["OBJECT", "ENCODING", "dst"]), bulk("intset"));
    assert_eq!(c.cmd(&["SMOVE", "src", "dst", "a"]), int(1));
    assert_eq!(c.cmd(&["OBJECT", "ENCODING", "dst"]), bulk("hashtable"));
    assert_eq!(c.cmd(&["SMOVE", "src", "dst", "zz"]), int(0));
    assert_eq!(c.cmd(&["SMOVE", "nokey", "dst", "a"]), int(0));
    assert_eq!(c.cmd(&["SMOVE", "src", "src", "b"]), int(1));
    assert_eq!(c.cmd(&["SMOVE", "src", "new", "b"]), int(1));
    assert_eq!(c.cmd(&["EXISTS", "src"]), int(0));
    assert_eq!(c.cmd(&["SMEMBERS", "new"]), bulks(&["b"]));
    c.cmd(&["SET", "str", "x"]);
    assert_eq!(
        c.cmd(&["SMOVE", "new", "str", "b"]),
        err("WRONGTYPE Operation against a key holding the wrong kind of value")
    );
    assert_eq!(c.cmd(&["SMOVE", "nokey", "str", "b"]), int(0));
}

#[test]
fn set_algebra() {
    let server = TestServer::start();
    let mut c = server.client();
    c.cmd(&["SADD", "a", "1", "2", "3", "4"]);
    c.cmd(&["SADD", "b", "3", "4", "5", "x"]);
    assert_eq!(sorted(c.cmd(&["SINTER", "a", "b"])), ["3", "4"]);
    assert_eq!(c.cmd(&["SINTER", "a", "nokey"]), array(vec![]));
    assert_eq!(sorted(c.cmd(&["SUNION", "a", "b", "nokey"])), ["1", "2", "3", "4", "5", "x"]);
    assert_eq!(sorted(c.cmd(&["SDIFF", "a", "b"])), ["1", "2"]);
    assert_eq!(c.cmd(&["SDIFF", "a", "a"]), array(vec![]));
    assert_eq!(c.cmd(&["SINTERCARD", "2", "a", "b"]), int(2));
    assert_eq!(c.cmd(&["SINTERCARD", "2", "a", "b", "LIMIT", "1"]), int(1));
    assert_eq!(c.cmd(&["SINTERCARD", "0", "a"]), err("ERR numkeys should be greater than 0"));
    assert_eq!(c.cmd(&["SINTERCARD", "3", "a", "b"]), err("ERR Number of keys can't be greater than number of args"));
    assert_eq!(c.cmd(&["SINTERCARD", "1", "a", "b"]), err("ERR syntax error"));
    assert_eq!(c.cmd(&["SINTERCARD", "1", "a", "LIMIT", "-1"]), err("ERR LIMIT can't be negative"));
    assert_eq!(c.cmd(&["SINTERSTORE", "i", "a", "b"]), int(2));
    assert_eq!(c.cmd(&["OBJECT", "ENCODING", "i"]), bulk("intset"));
    assert_eq!(c.cmd(&["SUNIONSTORE", "u", "a", "b"]), int(6));
    assert_eq!(c.cmd(&["OBJECT", "ENCODING", "u"]), bulk("hashtable"));
    assert_eq!(c.cmd(&["SDIFFSTORE", "d", "b", "a"]), int(2));
    assert_eq!(sorted(c.cmd(&["SMEMBERS", "d"])), ["5", "x"]);
    // An empty result deletes the destination, whatever it held.
    c.cmd(&["SET", "dst", "x"]);
    assert_eq!(c.cmd(&["SINTERSTORE", "dst", "a", "nokey"]), int(0));
    assert_eq!(c.cmd(&["EXISTS", "dst"]), int(0));
    c.cmd(&["SET", "str", "x"]);
    let wrongtype = err("WRONGTYPE Operation against a key holding the wrong kind of value");
    assert_eq!(c.cmd(&["SINTER", "nokey", "str"]), wrongtype);
    assert_eq!(c.cmd(&["SUNIONSTORE", "d", "a", "str"]), wrongtype);
    assert_eq!(sorted(c.cmd(&["SMEMBERS", "d"])), ["5", "x"]);
}

#[test]
fn sscan_covers_intset_and_hashtable() {
    let server = TestServer::start();
    let mut c = server.client();
    let ints: Vec<String> = (0..100).map(|i| i.to_string()).collect();
    let mut args = vec!["SADD", "ints"];
    args.extend(ints.iter().map(String::as_str));
    c.cmd(&args);
    let reply = c.cmd(&["SSCAN", "ints", "0", "MATCH", "1*"]);
    let OwnedFrame::Array { data, .. } = reply else { panic!() };
    assert_eq!(data[0], bulk("0"));
    assert_eq!(strings(data[1].clone()).len(), 11);
    for i in 0..1000 {
        c.cmd(&["SADD", "big", &format!("m{i}")]);
    }
    let seen: BTreeSet<String> = scan_all(&mut c, "SSCAN", "big", "37").into_iter().collect();
    assert_eq!(seen.len(), 1000);
}

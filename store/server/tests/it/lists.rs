//! Integration tests of the list commands and of blocking pops, against the
//! real server (two workers, so blocked and pushing clients may live on
//! different threads) over real RESP.

use std::time::{Duration, Instant};

use crate::common::*;
use redis_protocol::resp3::types::OwnedFrame;

fn bulks(items: &[&str]) -> OwnedFrame {
    array(items.iter().map(|s| bulk(s)).collect())
}

fn two_workers() -> TestServer {
    TestServer::start_with(|c| c.threads = Some(2))
}

#[test]
fn push_pop_range_and_errors() {
    let server = TestServer::start();
    let mut c = server.client();
    assert_eq!(c.cmd(&["RPUSH", "l", "a", "b", "c"]), int(3));
    assert_eq!(c.cmd(&["LPUSH", "l", "z"]), int(4));
    assert_eq!(c.cmd(&["LRANGE", "l", "0", "-1"]), bulks(&["z", "a", "b", "c"]));
    assert_eq!(c.cmd(&["LINDEX", "l", "-1"]), bulk("c"));
    assert_eq!(c.cmd(&["LINSERT", "l", "AFTER", "a", "x"]), int(5));
    assert_eq!(c.cmd(&["LPOS", "l", "x"]), int(2));
    assert_eq!(c.cmd(&["LSET", "l", "0", "y"]), simple("OK"));
    assert_eq!(c.cmd(&["LSET", "l", "9", "y"]), err("ERR index out of range"));
    assert_eq!(c.cmd(&["RPOP", "l", "2"]), bulks(&["c", "b"]));
    assert_eq!(c.cmd(&["LPOP", "l", "-1"]), err("ERR value is out of range, must be positive"));
    assert_eq!(
        c.cmd(&["LMPOP", "2", "nope", "l", "LEFT", "COUNT", "9"]),
        array(vec![bulk("l"), bulks(&["y", "a", "x"])])
    );
    assert_eq!(c.cmd(&["EXISTS", "l"]), int(0), "an emptied list is deleted");
    assert_eq!(c.cmd(&["SET", "s", "v"]), simple("OK"));
    assert_eq!(c.cmd(&["LPUSH", "s", "a"]), err("WRONGTYPE Operation against a key holding the wrong kind of value"));
    assert_eq!(c.cmd(&["OBJECT", "ENCODING", "s"]), bulk("embstr"));
    c.cmd(&["RPUSH", "q", "1"]);
    assert_eq!(c.cmd(&["OBJECT", "ENCODING", "q"]), bulk("quicklist"));
    assert_eq!(c.cmd(&["LMOVE", "q", "q2", "LEFT", "RIGHT"]), bulk("1"));
    assert_eq!(c.cmd(&["BLPOP", "q2", "-1"]), err("ERR timeout is negative"));
}

#[test]
fn blocked_client_is_served_before_the_pusher_continues() {
    let server = two_workers();
    let mut pusher = server.client();
    let mut blocked: Vec<Client> = (0..4).map(|_| server.client()).collect();
    for (i, c) in blocked.iter_mut().enumerate() {
        c.send_raw(&Client::encode(&[b"BLPOP", b"k", b"0"]));
        pusher.wait_blocked(i as u64 + 1);
    }
    // One push serves exactly the first blocked client, and the pusher's
    // very next command already sees the pop.
    assert_eq!(pusher.cmd(&["RPUSH", "k", "a"]), int(1));
    assert_eq!(pusher.cmd(&["LLEN", "k"]), int(0));
    assert_eq!(blocked[0].read(), bulks(&["k", "a"]));
    assert_eq!(pusher.cmd(&["RPUSH", "k", "b", "c", "d", "e"]), int(4));
    assert_eq!(pusher.cmd(&["LRANGE", "k", "0", "-1"]), bulks(&["e"]));
    for (c, v) in blocked[1..].iter_mut().zip(["b", "c", "d"]) {
        assert_eq!(c.read(), bulks(&["k", v]), "first blocked, first served");
    }
    pusher.wait_blocked(0);
}

#[test]
fn chained_moves_and_pipelines_after_a_block() {
    let server = two_workers();
    let mut c = server.client();
    let mut first = server.client();
    let mut second = server.client();
    first.send_raw(&Client::encode(&[b"BLMOVE", b"l1", b"l2", b"RIGHT", b"LEFT", b"0"]));
    c.wait_blocked(1);
    let mut batch = Client::encode(&[b"BLMOVE", b"l2", b"l3", b"LEFT", b"RIGHT", b"0"]);
    batch.extend(Client::encode(&[b"PING"]));
    second.send_raw(&batch);
    c.wait_blocked(2);
    assert_eq!(c.cmd(&["RPUSH", "l1", "foo"]), int(1));
    assert_eq!(c.cmd(&["LRANGE", "l3", "0", "-1"]), bulks(&["foo"]));
    assert_eq!(c.cmd(&["EXISTS", "l1", "l2"]), int(0));
    assert_eq!(first.read(), bulk("foo"));
    assert_eq!(second.read(), bulk("foo"));
    assert_eq!(second.read(), simple("PONG"), "the pipeline resumes after the block");
}

#[test]
fn timeouts_unblock_and_disconnects() {
    let server = two_workers();
    let mut c = server.client();
    let mut b = server.client();
    let start = Instant::now();
    assert_eq!(b.cmd(&["BRPOP", "none", "0.2"]), OwnedFrame::Null);
    assert!(start.elapsed() >= Duration::from_millis(190));

    let id = match b.cmd(&["CLIENT", "ID"]) {
        OwnedFrame::Number { data, .. } => data.to_string(),
        other => panic!("CLIENT ID: {other:?}"),
    };
    b.send_raw(&Client::encode(&[b"BLMPOP", b"0", b"1", b"none", b"LEFT"]));
    c.wait_blocked(1);
    assert_eq!(c.cmd(&["CLIENT", "UNBLOCK", &id, "ERROR"]), int(1));
    assert_eq!(b.read(), err("UNBLOCKED client unblocked via CLIENT UNBLOCK"));
    assert_eq!(c.cmd(&["CLIENT", "UNBLOCK", &id]), int(0));

    b.send_raw(&Client::encode(&[b"BLPOP", b"none", b"0"]));
    c.wait_blocked(1);
    drop(b);
    c.wait_blocked(0);
    assert_eq!(c.cmd(&["RPUSH", "none", "x"]), int(1));
    assert_eq!(c.cmd(&["LLEN", "none"]), int(1), "nobody left to serve");
}

#[test]
fn wrong_types_while_blocked() {
    let server = two_workers();
    let mut c = server.client();
    let mut b = server.client();
    c.cmd(&["SET", "dst", "string"]);
    b.send_raw(&Client::encode(&[b"BRPOPLPUSH", b"src", b"dst", b"0"]));
    c.wait_blocked(1);
    c.cmd(&["RPUSH", "src", "a"]);
    assert_eq!(b.read(), err("WRONGTYPE Operation against a key holding the wrong kind of value"));
    assert_eq!(c.cmd(&["LRANGE", "src", "0", "-1"]), bulks(&["a"]));

    // A key that turns into another type does not wake the client.
    b.send_raw(&Client::encode(&[b"BLPOP", b"k", b"0"]));
    c.wait_blocked(1);
    c.cmd(&["SET", "k", "v"]);
    c.cmd(&["RENAME", "k", "k2"]);
    c.cmd(&["RPUSH", "tmp", "x"]);
    c.cmd(&["RENAME", "tmp", "k"]);
    assert_eq!(b.read(), bulks(&["k", "x"]), "RENAME onto the key serves it");
}

//! SORT against the real server: its keys as COMMAND GETKEYS reports them,
//! and BY nosort keeping a list's or sorted set's own order (reversed by DESC).

use crate::common::*;
use redis_protocol::resp3::types::OwnedFrame;

fn bulks(items: &[&str]) -> OwnedFrame {
    OwnedFrame::Array { data: items.iter().map(|s| bulk(s)).collect(), attributes: None }
}

/// The sorted set of Redis's "SORT sorted set BY nosort" tests: zset order a c e b d.
fn add_zset(c: &mut Client) {
    c.cmd(&["ZADD", "zset", "1", "a", "5", "b", "2", "c", "10", "d", "3", "e"]);
}

#[test]
fn getkeys_reports_the_last_store_destination() {
    let server = TestServer::start();
    let mut c = server.client();
    assert_eq!(c.cmd(&["COMMAND", "GETKEYS", "sort", "abc", "store", "def"]), bulks(&["abc", "def"]));
    assert_eq!(
        c.cmd(&["COMMAND", "GETKEYS", "sort", "abc", "store", "invalid", "store", "stillbad", "store", "def"]),
        bulks(&["abc", "def"])
    );
    // LIMIT, GET and BY consume their arguments, even when they read "store".
    assert_eq!(c.cmd(&["COMMAND", "GETKEYS", "sort", "abc", "limit", "store", "x", "store"]), bulks(&["abc"]));
    assert_eq!(c.cmd(&["COMMAND", "GETKEYS", "sort", "abc", "get", "store", "by", "x"]), bulks(&["abc"]));
    assert_eq!(c.cmd(&["COMMAND", "GETKEYS", "sort_ro", "abc"]), bulks(&["abc"]));
}

#[test]
fn nosort_walks_a_sorted_set_backwards_with_desc() {
    let server = TestServer::start();
    let mut c = server.client();
    add_zset(&mut c);
    assert_eq!(c.cmd(&["SORT", "zset", "BY", "nosort", "ASC"]), bulks(&["a", "c", "e", "b", "d"]));
    assert_eq!(c.cmd(&["SORT", "zset", "BY", "nosort", "DESC"]), bulks(&["d", "b", "e", "c", "a"]));
    assert_eq!(
        c.cmd(&["EVAL", "return redis.call('sort', KEYS[1], 'by', 'nosort', 'desc')", "1", "zset"]),
        bulks(&["d", "b", "e", "c", "a"])
    );
}

#[test]
fn nosort_limit_counts_from_the_walked_end() {
    let server = TestServer::start();
    let mut c = server.client();
    add_zset(&mut c);
    let sort = |c: &mut Client, order: &str, offset: &str, count: &str| {
        c.cmd(&["SORT", "zset", "BY", "nosort", order, "LIMIT", offset, count])
    };
    assert_eq!(sort(&mut c, "ASC", "0", "2"), bulks(&["a", "c"]));
    assert_eq!(sort(&mut c, "DESC", "0", "2"), bulks(&["d", "b"]));
    assert_eq!(sort(&mut c, "DESC", "1", "2"), bulks(&["b", "e"]));
    assert_eq!(sort(&mut c, "ASC", "5", "10"), bulks(&[]));
    assert_eq!(sort(&mut c, "ASC", "-10", "100"), bulks(&["a", "c", "e", "b", "d"]));
}

#[test]
fn nosort_walks_a_list_backwards_with_desc() {
    let server = TestServer::start();
    let mut c = server.client();
    c.cmd(&["RPUSH", "l", "1", "2", "3", "4", "5"]);
    assert_eq!(c.cmd(&["SORT", "l", "BY", "nosort", "DESC"]), bulks(&["5", "4", "3", "2", "1"]));
    assert_eq!(c.cmd(&["SORT", "l", "BY", "nosort", "DESC", "LIMIT", "1", "2"]), bulks(&["4", "3"]));
    assert_eq!(c.cmd(&["SORT", "l", "BY", "nosort", "LIMIT", "1", "2"]), bulks(&["2", "3"]));
    assert_eq!(c.cmd(&["SORT", "l", "BY", "nosort", "DESC", "STORE", "dst"]), int(5));
    assert_eq!(c.cmd(&["LRANGE", "dst", "0", "-1"]), bulks(&["5", "4", "3", "2", "1"]));
}

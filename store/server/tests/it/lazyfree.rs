//! Integration tests of lazy freeing (UNLINK, FLUSHDB/FLUSHALL ASYNC and
//! the `lazyfree-lazy-user-*` parameters) against the real server.

use std::time::{Duration, Instant};

use crate::common::*;

fn wait_freed(c: &mut Client, n: u64) {
    let deadline = Instant::now() + Duration::from_secs(5);
    while c.info_number("memory", "lazyfreed_objects") != n {
        assert!(Instant::now() < deadline, "lazyfreed_objects never reached {n}");
        std::thread::sleep(Duration::from_millis(10));
    }
    assert_eq!(c.info_number("memory", "lazyfree_pending_objects"), 0);
}

fn big_set(c: &mut Client, key: &str) {
    let members: Vec<String> = (0..200).map(|i| format!("m{i}")).collect();
    let mut args = vec!["SADD", key];
    args.extend(members.iter().map(String::as_str));
    assert_eq!(c.cmd(&args), int(200));
}

#[test]
fn unlink_frees_big_values_in_the_background_and_small_ones_in_place() {
    let server = TestServer::start();
    let mut c = server.client();
    big_set(&mut c, "big");
    c.cmd(&["SET", "small", "v"]);
    assert_eq!(c.cmd(&["UNLINK", "big", "small", "missing"]), int(2));
    assert_eq!(c.cmd(&["EXISTS", "big", "small"]), int(0));
    wait_freed(&mut c, 1);
    // DEL frees in place unless lazyfree-lazy-user-del says otherwise.
    big_set(&mut c, "big");
    assert_eq!(c.cmd(&["DEL", "big"]), int(1));
    assert_eq!(c.info_number("memory", "lazyfreed_objects"), 1);
    c.cmd(&["CONFIG", "SET", "lazyfree-lazy-user-del", "yes"]);
    big_set(&mut c, "big");
    assert_eq!(c.cmd(&["DEL", "big"]), int(1));
    wait_freed(&mut c, 2);
    assert_eq!(c.cmd(&["CONFIG", "RESETSTAT"]), simple("OK"));
    assert_eq!(c.info_number("memory", "lazyfreed_objects"), 0);
}

#[test]
fn async_flushes_empty_at_once_and_free_in_the_background() {
    let server = TestServer::start();
    let mut c = server.client();
    for i in 0..50 {
        c.cmd(&["SET", &format!("k{i}"), "v"]);
    }
    assert_eq!(c.cmd(&["FLUSHDB", "ASYNC"]), simple("OK"));
    assert_eq!(c.cmd(&["DBSIZE"]), int(0));
    wait_freed(&mut c, 1);
    c.cmd(&["SET", "k", "v"]);
    c.cmd(&["CONFIG", "SET", "lazyfree-lazy-user-flush", "yes"]);
    assert_eq!(c.cmd(&["FLUSHALL"]), simple("OK"));
    assert_eq!(c.cmd(&["DBSIZE"]), int(0));
    wait_freed(&mut c, 2);
    // SYNC, and an empty keyspace, free nothing in the background.
    c.cmd(&["SET", "k", "v"]);
    assert_eq!(c.cmd(&["FLUSHALL", "SYNC"]), simple("OK"));
    assert_eq!(c.cmd(&["FLUSHALL", "ASYNC"]), simple("OK"));
    assert_eq!(c.info_number("memory", "lazyfreed_objects"), 2);
    assert_eq!(c.cmd(&["FLUSHDB", "LATER"]), err("ERR syntax error"));
}

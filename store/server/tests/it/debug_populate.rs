//! DEBUG POPULATE, each expected reply as Debian's redis-server 7.0.15
//! gave it, and its keys in the WAL (Redis does not log them; Cairn does).

use crate::common::*;
use redis_protocol::resp3::types::OwnedFrame;

fn blob(bytes: &[u8]) -> OwnedFrame {
    OwnedFrame::BlobString { data: bytes.to_vec(), attributes: None }
}

#[test]
fn populate_creates_redis_s_keys_and_skips_existing_ones() {
    let server = TestServer::start();
    let mut c = server.client();
    assert_eq!(c.cmd(&["SET", "key:3", "keep"]), simple("OK"));
    assert_eq!(c.cmd(&["DEBUG", "POPULATE", "10"]), simple("OK"));
    assert_eq!(c.cmd(&["DBSIZE"]), int(10));
    assert_eq!(c.cmd(&["GET", "key:3"]), bulk("keep"));
    assert_eq!(c.cmd(&["GET", "key:9"]), bulk("value:9"));
    assert_eq!(c.cmd(&["DEBUG", "POPULATE", "5", "p", "3"]), simple("OK"));
    assert_eq!(c.cmd(&["GET", "p:2"]), bulk("val"));
    assert_eq!(c.cmd(&["DEBUG", "POPULATE", "2", "z", "12"]), simple("OK"));
    assert_eq!(c.cmd(&["GET", "z:1"]), blob(b"value:1\0\0\0\0\0"));
    assert_eq!(c.cmd(&["DEBUG", "POPULATE", "3", ""]), simple("OK"));
    assert_eq!(c.cmd(&["GET", ":2"]), bulk("value:2"));
    assert_eq!(c.cmd(&["DBSIZE"]), int(20));
}

#[test]
fn populate_refuses_bad_arguments_as_redis_does() {
    let server = TestServer::start();
    let mut c = server.client();
    let positive = err("ERR value is out of range, must be positive");
    assert_eq!(c.cmd(&["DEBUG", "POPULATE", "-1"]), positive);
    assert_eq!(c.cmd(&["DEBUG", "POPULATE", "x"]), positive);
    assert_eq!(c.cmd(&["DEBUG", "POPULATE", "2", "p", "-5"]), positive);
    assert_eq!(
        c.cmd(&["DEBUG", "POPULATE", "1", "a", "1", "b"]),
        err("ERR unknown subcommand or wrong number of arguments for 'POPULATE'. Try DEBUG HELP.")
    );
    // Redis 7.0.15 starts on this and grows until the machine runs out of
    // memory; Cairn refuses it up front.
    let refused = error_text(&c.cmd(&["DEBUG", "POPULATE", "10000000000000"]));
    assert!(refused.starts_with("ERR DEBUG POPULATE would need about"), "{refused}");
    assert_eq!(c.cmd(&["DBSIZE"]), int(0));
}

#[test]
fn populated_keys_survive_a_restart_and_touch_watchers() {
    let mut server = TestServer::start_with(|config| config.durability = "sync".parse().expect("tier"));
    let mut c = server.client();
    let mut watcher = server.client();
    assert_eq!(watcher.cmd(&["WATCH", "key:1500"]), simple("OK"));
    // More than one chunk (1,024 keys each), in database 2, around a key
    // that exists (logged as what was created, it stays as it was).
    assert_eq!(c.cmd(&["SELECT", "2"]), simple("OK"));
    assert_eq!(c.cmd(&["SET", "key:7", "mine"]), simple("OK"));
    assert_eq!(c.cmd(&["DEBUG", "POPULATE", "3000"]), simple("OK"));
    assert_eq!(watcher.cmd(&["MULTI"]), simple("OK"));
    assert_eq!(watcher.cmd(&["PING"]), simple("QUEUED"));
    // The watch was on database 0, where nothing changed.
    assert_eq!(watcher.cmd(&["EXEC"]), OwnedFrame::Array { data: vec![simple("PONG")], attributes: None });
    assert_eq!(watcher.cmd(&["SELECT", "2"]), simple("OK"));
    assert_eq!(watcher.cmd(&["WATCH", "key:3100"]), simple("OK"));
    assert_eq!(c.cmd(&["DEBUG", "POPULATE", "3200"]), simple("OK"));
    assert_eq!(watcher.cmd(&["MULTI"]), simple("OK"));
    assert_eq!(watcher.cmd(&["PING"]), simple("QUEUED"));
    assert_eq!(watcher.cmd(&["EXEC"]), OwnedFrame::Null);
    drop((c, watcher));
    server.restart_with(|config| config.durability = "sync".parse().expect("tier"));
    let mut c = server.client();
    assert_eq!(c.cmd(&["DBSIZE"]), int(0));
    assert_eq!(c.cmd(&["SELECT", "2"]), simple("OK"));
    assert_eq!(c.cmd(&["GET", "key:7"]), bulk("mine"));
    assert_eq!(c.cmd(&["DBSIZE"]), int(3200));
    assert_eq!(c.cmd(&["GET", "key:3199"]), bulk("value:3199"));
}

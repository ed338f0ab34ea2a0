//! WAIT on a server without replicas, each reply as Redis 7.0.15 (Debian's
//! redis-server, no replicas) gave it: 0 at once when no replica is asked
//! for, otherwise 0 once the timeout passes or CLIENT UNBLOCK ends the wait.

use std::time::{Duration, Instant};

use crate::common::*;

#[test]
fn no_replica_asked_for_replies_at_once() {
    let server = TestServer::start();
    let mut c = server.client();
    assert_eq!(c.cmd(&["WAIT", "0", "0"]), int(0));
    assert_eq!(c.cmd(&["WAIT", "-1", "100"]), int(0));
}

#[test]
fn bad_arguments_get_redis_errors() {
    let server = TestServer::start();
    let mut c = server.client();
    assert_eq!(c.cmd(&["WAIT", "1", "abc"]), err("ERR timeout is not an integer or out of range"));
    assert_eq!(c.cmd(&["WAIT", "1", "1.5"]), err("ERR timeout is not an integer or out of range"));
    assert_eq!(c.cmd(&["WAIT", "1", "-1"]), err("ERR timeout is negative"));
    assert_eq!(c.cmd(&["WAIT", "x", "0"]), err("ERR value is not an integer or out of range"));
    assert_eq!(c.cmd(&["WAIT", "1"]), err("ERR wrong number of arguments for 'wait' command"));
    let script = c.cmd(&["EVAL", "return redis.call('wait',1,0)", "0"]);
    assert!(error_text(&script).starts_with("ERR This Redis command is not allowed from script"), "{script:?}");
}

#[test]
fn a_replica_asked_for_waits_out_the_timeout() {
    let server = TestServer::start();
    let mut c = server.client();
    let started = Instant::now();
    assert_eq!(c.cmd(&["WAIT", "1", "150"]), int(0));
    let waited = started.elapsed();
    assert!(waited >= Duration::from_millis(145), "replied after {waited:?}");
    // The connection goes on after the wait.
    assert_eq!(c.cmd(&["PING"]), simple("PONG"));
}

#[test]
fn inside_multi_it_does_not_block() {
    let server = TestServer::start();
    let mut c = server.client();
    assert_eq!(c.cmd(&["MULTI"]), simple("OK"));
    assert_eq!(c.cmd(&["WAIT", "1", "0"]), simple("QUEUED"));
    assert_eq!(c.cmd(&["EXEC"]), array(vec![int(0)]));
}

#[test]
fn a_wait_forever_is_a_blocked_client_until_unblocked() {
    let server = TestServer::start();
    let mut waiting = server.client();
    let id = match waiting.cmd(&["CLIENT", "ID"]) {
        redis_protocol::resp3::types::OwnedFrame::Number { data, .. } => data.to_string(),
        other => panic!("CLIENT ID: {other:?}"),
    };
    let mut admin = server.client();
    for (unblock, reply) in [
        (vec!["CLIENT", "UNBLOCK", &id], int(0)),
        (vec!["CLIENT", "UNBLOCK", &id, "ERROR"], err("UNBLOCKED client unblocked via CLIENT UNBLOCK")),
    ] {
        waiting.send_raw(&Client::encode(&[b"WAIT", b"1", b"0"]));
        admin.wait_blocked(1);
        let redis_protocol::resp3::types::OwnedFrame::BlobString { data, .. } = admin.cmd(&["CLIENT", "LIST"]) else {
            panic!("CLIENT LIST")
        };
        let list = String::from_utf8_lossy(&data).into_owned();
        let line = list.lines().find(|l| l.starts_with(&format!("id={id} "))).unwrap_or_default().to_string();
        assert!(line.contains(" flags=b ") && line.contains(" cmd=wait "), "{line}");
        assert_eq!(admin.cmd(&unblock), int(1));
        assert_eq!(waiting.read(), reply);
        admin.wait_blocked(0);
    }
}

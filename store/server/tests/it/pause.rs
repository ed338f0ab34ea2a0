//! Integration tests of CLIENT PAUSE / UNPAUSE against the real server over
//! RESP: what a pause holds, what it lets through, and when it ends.

use std::time::{Duration, Instant};

use crate::common::*;
use redis_protocol::resp3::types::OwnedFrame;

fn send(c: &mut Client, words: &[&str]) {
    let args: Vec<&[u8]> = words.iter().map(|w| w.as_bytes()).collect();
    c.send_raw(&Client::encode(&args));
}

#[test]
fn a_write_pause_holds_writes_until_unpause_and_lets_reads_through() {
    let server = TestServer::start();
    let mut admin = server.client();
    assert_eq!(admin.cmd(&["SET", "k", "before"]), simple("OK"));
    assert_eq!(admin.cmd(&["CLIENT", "PAUSE", "100000", "WRITE"]), simple("OK"));
    let mut writer = server.client();
    send(&mut writer, &["SET", "k", "after"]);
    let mut script = server.client();
    send(&mut script, &["EVAL", "return 5", "0"]);
    admin.wait_blocked(2);
    // Reads, malformed commands and no-writes scripts are answered at once.
    let mut reader = server.client();
    assert_eq!(reader.cmd(&["GET", "k"]), bulk("before"));
    assert_eq!(reader.cmd(&["SET", "k"]), err("ERR wrong number of arguments for 'set' command"));
    assert_eq!(reader.cmd(&["EVAL", "#!lua flags=no-writes\nreturn 7", "0"]), int(7));
    assert_eq!(admin.cmd(&["CLIENT", "UNPAUSE"]), simple("OK"));
    assert_eq!(writer.read(), simple("OK"));
    assert_eq!(script.read(), int(5));
    assert_eq!(reader.cmd(&["GET", "k"]), bulk("after"));
    assert_eq!(admin.info_number("clients", "blocked_clients"), 0);
}

#[test]
fn transactions_are_held_at_exec_by_what_they_queued() {
    let server = TestServer::start();
    let mut admin = server.client();
    let mut tx = server.client();
    tx.cmd(&["MULTI"]);
    assert_eq!(tx.cmd(&["GET", "k"]), simple("QUEUED"));
    admin.cmd(&["CLIENT", "PAUSE", "100000", "WRITE"]);
    // Read-only: runs.
    assert!(matches!(tx.cmd(&["EXEC"]), OwnedFrame::Array { .. }));
    tx.cmd(&["MULTI"]);
    assert_eq!(tx.cmd(&["SET", "k", "v"]), simple("QUEUED"), "queuing is not held");
    send(&mut tx, &["EXEC"]);
    admin.wait_blocked(1);
    admin.cmd(&["CLIENT", "UNPAUSE"]);
    let OwnedFrame::Array { data, .. } = tx.read() else { panic!("EXEC's array") };
    assert_eq!(data, vec![simple("OK")]);
}

#[test]
fn a_pause_all_holds_reads_and_ends_by_its_timeout() {
    let server = TestServer::start();
    let mut admin = server.client();
    admin.cmd(&["SET", "k", "v"]);
    let started = Instant::now();
    assert_eq!(admin.cmd(&["CLIENT", "PAUSE", "300"]), simple("OK"));
    let mut reader = server.client();
    assert_eq!(reader.cmd(&["GET", "k"]), bulk("v"));
    assert!(started.elapsed() >= Duration::from_millis(250), "held until the pause ended");
}

#[test]
fn expiry_stops_during_a_pause() {
    let server = TestServer::start();
    let mut c = server.client();
    let expired_before = c.info_number("stats", "expired_keys");
    c.cmd(&["MULTI"]);
    c.cmd(&["SET", "a", "1", "PX", "10"]);
    c.cmd(&["CLIENT", "PAUSE", "100000", "WRITE"]);
    c.cmd(&["EXEC"]);
    std::thread::sleep(Duration::from_millis(150));
    // Logically expired, but neither deleted nor counted.
    assert_eq!(c.cmd(&["GET", "a"]), null_bulk_resp2());
    assert_eq!(c.cmd(&["DBSIZE"]), int(1));
    assert_eq!(c.info_number("stats", "expired_keys"), expired_before);
    c.cmd(&["CLIENT", "UNPAUSE"]);
    assert_eq!(c.cmd(&["GET", "a"]), null_bulk_resp2());
    assert_eq!(c.info_number("stats", "expired_keys"), expired_before + 1);
}

#[test]
fn bad_arguments_get_redis_errors() {
    let server = TestServer::start();
    let mut c = server.client();
    assert_eq!(c.cmd(&["CLIENT", "PAUSE", "10", "READS"]), err("ERR CLIENT PAUSE mode must be WRITE or ALL"));
    assert_eq!(c.cmd(&["CLIENT", "PAUSE", "x"]), err("ERR timeout is not an integer or out of range"));
    assert_eq!(c.cmd(&["CLIENT", "PAUSE", "-1"]), err("ERR timeout is negative"));
    assert_eq!(c.cmd(&["CLIENT", "UNPAUSE", "x"]), err("ERR wrong number of arguments for 'client|unpause' command"));
}

#[test]
fn read_only_scripts_refuse_may_replicate_commands() {
    let server = TestServer::start();
    let mut c = server.client();
    for script in [
        &["EVAL_RO", "return redis.call('publish','ch','m')", "0"][..],
        &["EVAL", "#!lua flags=no-writes\nreturn redis.call('publish','ch','m')", "0"],
    ] {
        let OwnedFrame::SimpleError { data, .. } = c.cmd(script) else { panic!("an error for {script:?}") };
        assert!(data.starts_with("ERR Write commands are not allowed from read-only scripts."), "{data}");
    }
    assert_eq!(c.cmd(&["EVAL", "return redis.call('publish','ch','m')", "0"]), int(0));
    assert_eq!(c.cmd(&["EVAL", "#!python\nreturn 1", "0"]), err("ERR Unexpected engine in script shebang: #!python"));
}

//! Integration tests of SLOWLOG against the real server over RESP, with
//! Redis 7.0's replies.

use crate::common::*;
use redis_protocol::resp3::types::OwnedFrame;

fn entries(c: &mut Client, count: &str) -> Vec<Vec<OwnedFrame>> {
    let OwnedFrame::Array { data, .. } = c.cmd(&["SLOWLOG", "GET", count]) else { panic!("an array") };
    data.into_iter()
        .map(|e| match e {
            OwnedFrame::Array { data, .. } => data,
            other => panic!("an entry is an array: {other:?}"),
        })
        .collect()
}

fn words(frame: &OwnedFrame) -> Vec<String> {
    let OwnedFrame::Array { data, .. } = frame else { panic!("arguments are an array") };
    data.iter()
        .map(|a| match a {
            OwnedFrame::BlobString { data, .. } => String::from_utf8_lossy(data).into_owned(),
            other => panic!("an argument is a bulk string: {other:?}"),
        })
        .collect()
}

#[test]
fn slow_commands_are_logged_newest_first_with_their_client() {
    let server = TestServer::start();
    let mut c = server.client();
    assert_eq!(c.cmd(&["SLOWLOG", "LEN"]), int(0));
    c.cmd(&["CLIENT", "SETNAME", "reporter"]);
    // Below the default threshold (10 ms): not logged.
    c.cmd(&["PING"]);
    assert_eq!(c.cmd(&["SLOWLOG", "LEN"]), int(0));
    c.cmd(&["DEBUG", "SLEEP", "0.02"]);
    let logged = entries(&mut c, "-1");
    assert_eq!(logged.len(), 1);
    let entry = &logged[0];
    assert_eq!(entry.len(), 6);
    assert_eq!(words(&entry[3]), ["DEBUG", "SLEEP", "0.02"]);
    let OwnedFrame::Number { data: duration, .. } = entry[2] else { panic!("duration") };
    assert!(duration >= 20_000, "{duration} µs");
    assert_eq!(entry[5], bulk("reporter"));
    // Everything, once the threshold is 0; the oldest go past slowlog-max-len.
    c.cmd(&["CONFIG", "SET", "slowlog-log-slower-than", "0"]);
    c.cmd(&["CONFIG", "SET", "slowlog-max-len", "3"]);
    c.cmd(&["SET", "k", "v"]);
    c.cmd(&["AUTH", "not-a-password"]);
    let logged = entries(&mut c, "-1");
    assert_eq!(logged.len(), 3);
    assert_eq!(words(&logged[0][3]), ["AUTH", "(redacted)"]);
    assert_eq!(words(&logged[1][3]), ["SET", "k", "v"]);
    assert_eq!(entries(&mut c, "1").len(), 1);
    assert_eq!(c.cmd(&["SLOWLOG", "RESET"]), simple("OK"));
    // RESET itself is logged after it empties the log, as in Redis.
    assert_eq!(c.cmd(&["SLOWLOG", "LEN"]), int(1));
    c.cmd(&["CONFIG", "SET", "slowlog-log-slower-than", "-1"]);
    c.cmd(&["SLOWLOG", "RESET"]);
    c.cmd(&["DEBUG", "SLEEP", "0.02"]);
    assert_eq!(c.cmd(&["SLOWLOG", "LEN"]), int(0));
}

#[test]
fn exec_is_not_logged_its_commands_are() {
    let server = TestServer::start();
    let mut c = server.client();
    c.cmd(&["CONFIG", "SET", "slowlog-log-slower-than", "15000"]);
    c.cmd(&["MULTI"]);
    c.cmd(&["DEBUG", "SLEEP", "0.02"]);
    c.cmd(&["EXEC"]);
    let logged = entries(&mut c, "10");
    assert_eq!(logged.len(), 1);
    assert_eq!(words(&logged[0][3]), ["DEBUG", "SLEEP", "0.02"]);
}

#[test]
fn bad_arguments_get_redis_errors() {
    let server = TestServer::start();
    let mut c = server.client();
    let bad_count = err("ERR count should be greater than or equal to -1");
    assert_eq!(c.cmd(&["SLOWLOG", "GET", "-2"]), bad_count);
    assert_eq!(c.cmd(&["SLOWLOG", "GET", "x"]), bad_count);
    assert_eq!(c.cmd(&["SLOWLOG", "NOPE"]), err("ERR unknown subcommand 'NOPE'. Try SLOWLOG HELP."));
    assert_eq!(
        c.cmd(&["SLOWLOG", "LEN", "1"]),
        err("ERR unknown subcommand or wrong number of arguments for 'LEN'. Try SLOWLOG HELP.")
    );
    assert!(matches!(c.cmd(&["CONFIG", "SET", "slowlog-log-slower-than", "-2"]), OwnedFrame::SimpleError { .. }));
}

#[test]
fn a_blocked_command_is_logged_when_it_is_served_not_when_it_blocks() {
    let server = TestServer::start();
    let mut c = server.client();
    c.cmd(&["CONFIG", "SET", "slowlog-log-slower-than", "0"]);
    let mut blocked = server.client();
    blocked.cmd(&["CLIENT", "SETNAME", "waiter"]);
    blocked.send_raw(&Client::encode(&[b"BLPOP", b"l", b"0"]));
    c.wait_blocked(1);
    let logged = entries(&mut c, "-1");
    assert!(!logged.iter().any(|e| words(&e[3])[0] == "BLPOP"), "logged while blocked");
    c.cmd(&["MULTI"]);
    c.cmd(&["LPUSH", "l", "foo"]);
    c.cmd(&["SLOWLOG", "RESET"]);
    c.cmd(&["EXEC"]);
    assert_eq!(blocked.read(), array(vec![bulk("l"), bulk("foo")]));
    let logged = entries(&mut c, "-1");
    assert_eq!(words(&logged[0][3]), ["BLPOP", "l", "0"]);
    assert_eq!(logged[0][5], bulk("waiter"));
    assert_eq!(words(&logged[1][3]), ["SLOWLOG", "RESET"]);
    // CLIENT UNBLOCK logs it too; a timeout does not (Redis's updateStatsOnUnblock).
    let OwnedFrame::Number { data: id, .. } = blocked.cmd(&["CLIENT", "ID"]) else { panic!("an id") };
    blocked.send_raw(&Client::encode(&[b"BLPOP", b"none", b"0"]));
    c.wait_blocked(1);
    c.cmd(&["SLOWLOG", "RESET"]);
    assert_eq!(c.cmd(&["CLIENT", "UNBLOCK", &id.to_string()]), int(1));
    blocked.read();
    let logged = entries(&mut c, "-1");
    assert_eq!(words(&logged[0][3]), ["CLIENT", "UNBLOCK", &id.to_string()]);
    assert_eq!(words(&logged[1][3]), ["BLPOP", "none", "0"]);
    c.cmd(&["SLOWLOG", "RESET"]);
    blocked.cmd(&["BLPOP", "none", "0.01"]);
    let logged = entries(&mut c, "-1");
    assert!(!logged.iter().any(|e| words(&e[3])[0] == "BLPOP"), "a timeout is logged: {logged:?}");
}

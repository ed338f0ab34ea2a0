//! Integration tests of MONITOR and of CLIENT LIST's per-command fields,
//! against the real server over RESP, with Redis 7.0's formats.

use crate::common::*;
use redis_protocol::resp3::types::OwnedFrame;

/// The next MONITOR line, without its timestamp: `[db source] "arg" ...`.
fn next_line(monitor: &mut Client) -> String {
    let OwnedFrame::SimpleString { data, .. } = monitor.read() else { panic!("a MONITOR line is a status reply") };
    let line = String::from_utf8(data).expect("ascii");
    let (stamp, rest) = line.split_once(' ').expect("a timestamp, then the rest");
    let (secs, micros) = stamp.split_once('.').expect("secs.micros");
    assert!(secs.parse::<u64>().is_ok() && micros.len() == 6, "timestamp {stamp}");
    rest.to_string()
}

fn monitoring(server: &TestServer) -> Client {
    let mut monitor = server.client();
    assert_eq!(monitor.cmd(&["MONITOR"]), simple("OK"));
    monitor
}

#[test]
fn monitor_shows_executed_commands_quoted_with_their_source() {
    let server = TestServer::start();
    let mut c = server.client();
    let me = format!("[0 {}]", local_addr(&mut c));
    let mut monitor = monitoring(&server);
    assert_eq!(c.cmd(&["SET", "foo", "a \"b\"\n"]), simple("OK"));
    assert_eq!(c.cmd(&["SELECT", "3"]), simple("OK"));
    c.cmd(&["GET", "foo"]);
    assert_eq!(next_line(&mut monitor), format!("{me} \"SET\" \"foo\" \"a \\\"b\\\"\\n\""));
    // The database is the one after the command ran (Redis feeds MONITOR after `call`).
    let db3 = format!("[3 {}]", local_addr_only(&me));
    assert_eq!(next_line(&mut monitor), format!("{db3} \"SELECT\" \"3\""));
    assert_eq!(next_line(&mut monitor), format!("{db3} \"GET\" \"foo\""));
}

#[test]
fn monitor_hides_refused_and_administrative_commands_and_redacts_credentials() {
    let server = TestServer::start();
    let mut monitor = monitoring(&server);
    let mut c = server.client();
    c.cmd(&["NOSUCHCOMMAND"]);
    c.cmd(&["GET"]);
    c.cmd(&["CONFIG", "GET", "maxmemory"]);
    c.cmd(&["CLIENT", "LIST"]);
    c.cmd(&["AUTH", "someone", "secret"]);
    c.cmd(&["HELLO", "2", "AUTH", "someone", "secret", "SETNAME", "x"]);
    c.cmd(&["PING"]);
    assert!(next_line(&mut monitor).ends_with("\"AUTH\" \"(redacted)\" \"(redacted)\""));
    assert!(
        next_line(&mut monitor).ends_with("\"HELLO\" \"2\" \"AUTH\" \"(redacted)\" \"(redacted)\" \"SETNAME\" \"x\"")
    );
    assert!(next_line(&mut monitor).ends_with("\"PING\""));
}

#[test]
fn monitor_orders_transactions_and_scripts_as_redis_does() {
    let server = TestServer::start();
    let mut monitor = monitoring(&server);
    let mut c = server.client();
    c.cmd(&["MULTI"]);
    c.cmd(&["SET", "foo", "bar"]);
    c.cmd(&["EXEC"]);
    for expected in ["\"MULTI\"", "\"SET\" \"foo\" \"bar\"", "\"EXEC\""] {
        assert!(next_line(&mut monitor).ends_with(expected), "{expected}");
    }
    // A queued command that was refused aborts the transaction: MULTI, then EXEC only.
    c.cmd(&["MULTI"]);
    c.cmd(&["NOSUCH", "error"]);
    c.cmd(&["EXEC"]);
    assert!(next_line(&mut monitor).ends_with("\"MULTI\""));
    assert!(next_line(&mut monitor).ends_with("\"EXEC\""));
    // A script's line comes first, then its commands, shown as `lua`.
    c.cmd(&["EVAL", "redis.call('set', KEYS[1], ARGV[1])", "1", "foo", "bar"]);
    assert!(next_line(&mut monitor).contains("\"EVAL\""));
    assert_eq!(next_line(&mut monitor), "[0 lua] \"set\" \"foo\" \"bar\"");
}

#[test]
fn reset_and_disconnect_end_monitoring() {
    let server = TestServer::start();
    let mut monitor = monitoring(&server);
    assert_eq!(monitor.cmd(&["RESET"]), simple("RESET"));
    let mut c = server.client();
    c.cmd(&["SET", "k", "v"]);
    // The former monitor gets its own reply, no feed line before it.
    assert_eq!(monitor.cmd(&["PING"]), simple("PONG"));
    let gone = monitoring(&server);
    drop(gone);
    let mut other = monitoring(&server);
    c.cmd(&["SET", "k", "w"]);
    assert!(next_line(&mut other).ends_with("\"SET\" \"k\" \"w\""));
}

#[test]
fn monitor_is_refused_inside_a_transaction() {
    let server = TestServer::start();
    let mut c = server.client();
    c.cmd(&["MULTI"]);
    assert_eq!(c.cmd(&["MONITOR"]), simple("QUEUED"));
    let OwnedFrame::Array { data, .. } = c.cmd(&["EXEC"]) else { panic!("EXEC replies with an array") };
    assert_eq!(data, vec![err("ERR MONITOR isn't allowed for DENY BLOCKING client")]);
}

#[test]
fn client_list_names_the_subcommand_and_the_query_buffer() {
    let server = TestServer::start();
    let mut c = server.client();
    let info = text(c.cmd(&["CLIENT", "INFO"]));
    // `*2\r\n$6\r\nCLIENT\r\n$4\r\nINFO\r\n` is still being run: 26 bytes.
    assert!(info.contains(" qbuf=26 ") && info.contains(" cmd=client|info "), "{info}");
    let list = text(c.cmd(&["CLIENT", "LIST"]));
    assert!(list.contains(" cmd=client|list "), "{list}");
    c.cmd(&["CONFIG", "GET", "maxmemory"]);
    let mut other = server.client();
    let list = text(other.cmd(&["CLIENT", "LIST"]));
    assert!(list.contains(" cmd=config|get "), "{list}");
    assert_eq!(c.cmd(&["CLIENT", "KILL", "USER", "nobody"]), err("ERR No such user 'nobody'"));
}

fn text(frame: OwnedFrame) -> String {
    match frame {
        OwnedFrame::BlobString { data, .. } | OwnedFrame::VerbatimString { data, .. } => {
            String::from_utf8(data).expect("utf-8")
        }
        other => panic!("not a string: {other:?}"),
    }
}

/// The client's own address as the server sees it (`addr=` of CLIENT INFO).
fn local_addr(c: &mut Client) -> String {
    let info = text(c.cmd(&["CLIENT", "INFO"]));
    info.split(' ').find_map(|f| f.strip_prefix("addr=")).expect("addr field").to_string()
}

/// `127.0.0.1:port` out of `[0 127.0.0.1:port]`.
fn local_addr_only(tag: &str) -> &str {
    tag.trim_start_matches("[0 ").trim_end_matches(']')
}

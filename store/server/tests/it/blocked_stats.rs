//! Integration tests of what a blocking command (BLPOP, BLMPOP, ...) counts
//! in INFO commandstats, INFO latencystats, errorstats and the latency
//! monitor, and when, as Redis 7.0.15 does (`call()` and
//! `updateStatsOnUnblock`): the call when it blocks, its latency histogram,
//! extra µs and `command-unblocking` event when it is served or CLIENT
//! UNBLOCKed, nothing more on a timeout.

use std::io::Read;

use crate::common::*;
use redis_protocol::resp3::types::OwnedFrame;

fn info_text(c: &mut Client, section: &str) -> String {
    match c.cmd(&["INFO", section]) {
        OwnedFrame::BlobString { data, .. } => String::from_utf8_lossy(&data).into_owned(),
        other => panic!("INFO reply: {other:?}"),
    }
}

/// `cmdstat_<name>`'s fields (calls, usec, failed_calls, ...), empty when absent.
fn cmdstat(c: &mut Client, name: &str) -> Vec<(String, u64)> {
    let prefix = format!("cmdstat_{name}:");
    let text = info_text(c, "commandstats");
    let Some(line) = text.lines().find_map(|l| l.strip_prefix(prefix.as_str())) else { return Vec::new() };
    line.split(',')
        .filter_map(|field| field.split_once('='))
        .filter_map(|(k, v)| v.parse::<u64>().ok().map(|v| (k.to_string(), v)))
        .collect()
}

fn field(stat: &[(String, u64)], name: &str) -> u64 {
    stat.iter().find(|(k, _)| k == name).map(|(_, v)| *v).unwrap_or_else(|| panic!("no {name} in {stat:?}"))
}

/// Whether INFO latencystats has a histogram line for `name`.
fn in_latencystats(c: &mut Client, name: &str) -> bool {
    let prefix = format!("latency_percentiles_usec_{name}:");
    info_text(c, "latencystats").lines().any(|l| l.starts_with(&prefix))
}

/// A client blocked in `args`, once the server reports it blocked.
fn blocked_in(server: &TestServer, c: &mut Client, args: &[&[u8]]) -> Client {
    let mut blocked = server.client();
    blocked.send_raw(&Client::encode(args));
    c.wait_blocked(1);
    blocked
}

fn client_id(c: &mut Client) -> String {
    match c.cmd(&["CLIENT", "ID"]) {
        OwnedFrame::Number { data, .. } => data.to_string(),
        other => panic!("an id: {other:?}"),
    }
}

#[test]
fn a_blocked_command_counts_its_call_at_once_and_its_latency_once_served() {
    let server = TestServer::start();
    let mut c = server.client();
    c.cmd(&["CONFIG", "SET", "latency-tracking", "yes"]);
    c.cmd(&["CONFIG", "RESETSTAT"]);
    let mut blocked = blocked_in(&server, &mut c, &[b"BLPOP", b"k", b"0"]);
    let while_blocked = cmdstat(&mut c, "blpop");
    assert_eq!(field(&while_blocked, "calls"), 1, "{while_blocked:?}");
    assert!(!in_latencystats(&mut c, "blpop"), "a histogram sample while blocked");
    assert_eq!(c.cmd(&["LATENCY", "HISTOGRAM", "blpop"]), array(vec![]));

    c.cmd(&["LPUSH", "k", "a"]);
    assert_eq!(blocked.read(), array(vec![bulk("k"), bulk("a")]));
    let served = cmdstat(&mut c, "blpop");
    assert_eq!(field(&served, "calls"), 1, "{served:?}");
    assert_eq!(field(&served, "failed_calls"), 0, "{served:?}");
    // Redis adds the time it took when it blocked again, with the serving time.
    assert!(field(&served, "usec") >= 2 * field(&while_blocked, "usec"), "{while_blocked:?} then {served:?}");
    assert!(in_latencystats(&mut c, "blpop"), "no histogram sample once served");
}

#[test]
fn a_timed_out_command_counts_its_call_and_nothing_more() {
    let server = TestServer::start();
    let mut c = server.client();
    c.cmd(&["CONFIG", "SET", "latency-tracking", "yes"]);
    c.cmd(&["CONFIG", "SET", "slowlog-log-slower-than", "0"]);
    c.cmd(&["CONFIG", "RESETSTAT"]);
    c.cmd(&["SLOWLOG", "RESET"]);
    let mut waiter = server.client();
    assert_eq!(waiter.cmd(&["BLPOP", "none", "0.01"]), OwnedFrame::Null);
    let stat = cmdstat(&mut c, "blpop");
    assert_eq!(field(&stat, "calls"), 1, "{stat:?}");
    assert_eq!(field(&stat, "failed_calls"), 0, "{stat:?}");
    assert!(!in_latencystats(&mut c, "blpop"), "a timeout has a histogram sample");
}

#[test]
fn client_unblock_counts_a_failed_call_either_way_and_an_error_only_for_error() {
    let server = TestServer::start();
    let mut c = server.client();
    c.cmd(&["CONFIG", "SET", "latency-tracking", "yes"]);
    for (mode, error_replies) in [("TIMEOUT", 0), ("ERROR", 1)] {
        c.cmd(&["CONFIG", "RESETSTAT"]);
        let mut waiter = server.client();
        let id = client_id(&mut waiter);
        waiter.send_raw(&Client::encode(&[b"BLPOP", b"none", b"0"]));
        c.wait_blocked(1);
        assert_eq!(c.cmd(&["CLIENT", "UNBLOCK", &id, mode]), int(1));
        let reply = waiter.read();
        let stat = cmdstat(&mut c, "blpop");
        assert_eq!(field(&stat, "calls"), 1, "{mode}: {stat:?}");
        // Redis 7.0 counts CLIENT UNBLOCK TIMEOUT as a failed call too.
        assert_eq!(field(&stat, "failed_calls"), 1, "{mode}: {stat:?}");
        assert!(in_latencystats(&mut c, "blpop"), "{mode}: no histogram sample");
        assert_eq!(c.info_number("stats", "total_error_replies"), error_replies, "{mode}");
        let errorstats = info_text(&mut c, "errorstats");
        if error_replies == 1 {
            assert_eq!(reply, err("UNBLOCKED client unblocked via CLIENT UNBLOCK"));
            assert!(errorstats.contains("errorstat_UNBLOCKED:count=1"), "{errorstats}");
        } else {
            assert_eq!(reply, OwnedFrame::Null);
            assert!(!errorstats.contains("UNBLOCKED"), "{errorstats}");
        }
    }
}

/// Elements pushed into the list that serves the blocked client: popping
/// and replying with a million of them takes well over a millisecond.
const ELEMENTS: usize = 1_000_000;

/// The exact length of BLMPOP's reply of `ELEMENTS` one-byte elements of key `k`.
fn blmpop_reply_len() -> usize {
    let header = format!("*2\r\n$1\r\nk\r\n*{ELEMENTS}\r\n").len();
    header + ELEMENTS * "$1\r\nv\r\n".len()
}

/// Reads and drops `len` bytes (a reply too big to decode quickly).
fn drain(client: &mut Client, mut len: usize) {
    let mut chunk = vec![0u8; 1 << 20];
    while len > 0 {
        let n = client.stream.read(&mut chunk[..len.min(1 << 20)]).expect("read");
        assert!(n > 0, "server closed the connection");
        len -= n;
    }
}

#[test]
fn serving_a_blocked_client_slowly_is_a_command_unblocking_event() {
    let server = TestServer::start();
    let mut c = server.client();
    c.cmd(&["CONFIG", "SET", "latency-monitor-threshold", "1"]);
    c.cmd(&["CONFIG", "SET", "slowlog-log-slower-than", "1000"]);
    let chunk: Vec<&str> = std::iter::once("RPUSH").chain(["src"]).chain(std::iter::repeat_n("v", 10_000)).collect();
    for _ in 0..ELEMENTS / 10_000 {
        c.cmd(&chunk);
    }
    c.cmd(&["LATENCY", "RESET"]);
    c.cmd(&["SLOWLOG", "RESET"]);
    let count = ELEMENTS.to_string();
    let mut blocked = blocked_in(&server, &mut c, &[b"BLMPOP", b"0", b"1", b"k", b"LEFT", b"COUNT", count.as_bytes()]);
    assert_eq!(c.cmd(&["RENAME", "src", "k"]), simple("OK"));
    drain(&mut blocked, blmpop_reply_len());
    assert_eq!(blocked.cmd(&["PING"]), simple("PONG"));

    let OwnedFrame::Array { data: events, .. } = c.cmd(&["LATENCY", "LATEST"]) else { panic!("an array") };
    let unblocking = events.iter().find_map(|e| match e {
        OwnedFrame::Array { data, .. } if data.first() == Some(&bulk("command-unblocking")) => Some(data.clone()),
        _ => None,
    });
    let unblocking = unblocking.unwrap_or_else(|| panic!("no command-unblocking event in {events:?}"));
    let OwnedFrame::Number { data: latest_ms, .. } = unblocking[2] else { panic!("{unblocking:?}") };
    assert!(latest_ms >= 1, "{unblocking:?}");
    // SLOWLOG has it with the serving time included.
    let OwnedFrame::Array { data: logged, .. } = c.cmd(&["SLOWLOG", "GET", "-1"]) else { panic!("an array") };
    let blmpop = logged.iter().find_map(|e| match e {
        OwnedFrame::Array { data, .. } if matches!(&data[3], OwnedFrame::Array { data: a, .. } if a[0] == bulk("BLMPOP")) => {
            Some(data.clone())
        }
        _ => None,
    });
    let blmpop = blmpop.unwrap_or_else(|| panic!("BLMPOP not in SLOWLOG: {logged:?}"));
    let OwnedFrame::Number { data: duration_us, .. } = blmpop[2] else { panic!("{blmpop:?}") };
    assert!(duration_us >= latest_ms * 1000, "{blmpop:?} {unblocking:?}");
}

//! Integration tests of a connection's buffer accounting and release: the
//! `qbuf`, `qbuf-free`, `rbs` and `rbp` fields CLIENT LIST shows for any
//! client, the release of an idle client's buffers, the busy resizing of
//! Redis 7.0's `unit/querybuf` and `unit/replybufsize`, and DEBUG
//! REPLYBUFFER. Expected values are redis-server 7.0.15's (its buffer
//! capacities are allocator sizes, so only their bounds are compared).

use std::time::{Duration, Instant};

use crate::common::*;
use redis_protocol::resp3::types::OwnedFrame;

/// The buffer fields of the client named `name` in CLIENT LIST.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Buffers {
    qbuf: u64,
    qbuf_free: u64,
    rbs: u64,
    rbp: u64,
}

impl Buffers {
    fn query_total(&self) -> u64 {
        self.qbuf + self.qbuf_free
    }
}

fn field(line: &str, name: &str) -> u64 {
    let prefix = format!("{name}=");
    let value = line.split(' ').find_map(|f| f.strip_prefix(prefix.as_str()));
    value.unwrap_or_else(|| panic!("no {name} in {line}")).parse().expect("a number")
}

fn buffers_of(observer: &mut Client, name: &str) -> Buffers {
    let OwnedFrame::BlobString { data, .. } = observer.cmd(&["CLIENT", "LIST"]) else { panic!("a bulk string") };
    let text = String::from_utf8_lossy(&data).into_owned();
    let needle = format!(" name={name} ");
    let line = text.lines().find(|l| l.contains(&needle)).unwrap_or_else(|| panic!("no client {name} in {text}"));
    Buffers {
        qbuf: field(line, "qbuf"),
        qbuf_free: field(line, "qbuf-free"),
        rbs: field(line, "rbs"),
        rbp: field(line, "rbp"),
    }
}

/// Polls `name`'s buffers every 20 ms until `done` holds, for at most `limit`.
fn wait_for(observer: &mut Client, name: &str, limit: Duration, done: impl Fn(&Buffers) -> bool) -> Buffers {
    let deadline = Instant::now() + limit;
    loop {
        let seen = buffers_of(observer, name);
        if done(&seen) {
            return seen;
        }
        assert!(Instant::now() < deadline, "{name}'s buffers stayed {seen:?}");
        std::thread::sleep(Duration::from_millis(20));
    }
}

fn named(server: &TestServer, name: &str) -> Client {
    let mut c = server.client();
    assert_eq!(c.cmd(&["CLIENT", "SETNAME", name]), simple("OK"));
    c
}

#[test]
fn client_list_shows_another_clients_unconsumed_input() {
    let server = TestServer::start();
    let mut observer = server.client();
    let mut watched = named(&server, "watched");
    let fresh = buffers_of(&mut observer, "watched");
    assert_eq!(fresh.qbuf, 0);
    // unit/querybuf: at least one read chunk (16 KiB), below the 32 KiB threshold.
    assert!((16_384..32_768).contains(&fresh.query_total()), "{fresh:?}");
    assert!(fresh.rbs >= 1024 && fresh.rbp <= fresh.rbs, "{fresh:?}");
    // An inline command without its newline waits in the buffer (Redis: qbuf=6).
    watched.send_raw(b"GET ke");
    let waiting = wait_for(&mut observer, "watched", Duration::from_secs(2), |b| b.qbuf == 6);
    assert!(waiting.qbuf_free > 0, "{waiting:?}");
    watched.send_raw(b"y\r\n");
    assert_eq!(watched.read(), null_bulk_resp2());
    wait_for(&mut observer, "watched", Duration::from_secs(2), |b| b.qbuf == 0);
}

#[test]
fn client_info_counts_the_running_command_as_unconsumed() {
    let server = TestServer::start();
    let mut c = server.client();
    let OwnedFrame::BlobString { data, .. } = c.cmd(&["CLIENT", "INFO"]) else { panic!("a bulk string") };
    let line = String::from_utf8_lossy(&data).into_owned();
    // `*2\r\n$6\r\nCLIENT\r\n$4\r\nINFO\r\n`, as Redis shows it.
    assert_eq!(field(&line, "qbuf"), 26);
    assert!(field(&line, "qbuf-free") > 0, "{line}");
    assert!(field(&line, "rbs") >= 1024, "{line}");
}

#[test]
fn an_idle_client_gives_its_buffers_back() {
    let server = TestServer::start();
    let mut observer = server.client();
    let mut idle = named(&server, "idle");
    let started = Instant::now();
    // The reply buffer first (its peak resets at the first look), then,
    // after 2 s without a command, the whole input buffer.
    let released = wait_for(&mut observer, "idle", Duration::from_secs(4), |b| b.query_total() == 0 && b.rbs == 1024);
    assert!(started.elapsed() >= Duration::from_millis(1_900), "released after {:?}", started.elapsed());
    assert_eq!(released.rbp, 0);
    // The next command gets a buffer again.
    assert_eq!(idle.cmd(&["PING"]), simple("PONG"));
    let back = buffers_of(&mut observer, "idle");
    assert!(back.query_total() >= 16_384, "{back:?}");
}

#[test]
fn a_busy_clients_big_input_buffer_shrinks_toward_its_peak() {
    let server = TestServer::start();
    let mut observer = server.client();
    let mut busy = named(&server, "busy");
    let big = "A".repeat(400_000);
    assert_eq!(busy.cmd(&["SET", "x", &big]), simple("OK"));
    let grown = buffers_of(&mut observer, "busy").query_total();
    assert!(grown > 32_768, "{grown}");
    // unit/querybuf: small commands every 10 ms; within a second the buffer
    // is smaller, though not released (the connection is not idle).
    let deadline = Instant::now() + Duration::from_secs(2);
    let shrunk = loop {
        assert_eq!(busy.cmd(&["SET", "x", "small"]), simple("OK"));
        let now = buffers_of(&mut observer, "busy").query_total();
        if now < grown {
            break now;
        }
        assert!(Instant::now() < deadline, "the input buffer stayed at {now}");
        std::thread::sleep(Duration::from_millis(10));
    };
    assert!(shrunk > 0, "a busy connection keeps a buffer");
}

#[test]
fn reply_buffer_shrinks_when_idle_and_grows_for_big_replies() {
    let server = TestServer::start();
    let mut admin = server.client();
    assert_eq!(admin.cmd(&["DEBUG", "REPLYBUFFER", "PEAK-RESET-TIME", "100"]), simple("OK"));
    let mut reader = named(&server, "reader");
    // unit/replybufsize: an idle client's reply buffer is 1 KiB to 2 KiB within a second.
    wait_for(&mut admin, "reader", Duration::from_secs(1), |b| (1024..2046).contains(&b.rbs));
    assert_eq!(admin.cmd(&["SET", "bigval", &"x".repeat(32_768)]), simple("OK"));
    assert_eq!(admin.cmd(&["DEBUG", "REPLYBUFFER", "PEAK-RESET-TIME", "never"]), simple("OK"));
    // A client fetching 32 KiB values: the buffer doubles to 16 KiB, no more.
    let deadline = Instant::now() + Duration::from_secs(3);
    loop {
        let OwnedFrame::BlobString { data, .. } = reader.cmd(&["GET", "bigval"]) else { panic!("the value") };
        assert_eq!(data.len(), 32_768);
        let seen = buffers_of(&mut admin, "reader");
        if seen.rbs >= 16_384 {
            assert!(seen.rbs < 32_768, "{seen:?}");
            break;
        }
        assert!(Instant::now() < deadline, "the reply buffer stayed at {seen:?}");
        std::thread::sleep(Duration::from_millis(110));
    }
    assert_eq!(admin.cmd(&["DEBUG", "REPLYBUFFER", "PEAK-RESET-TIME", "reset"]), simple("OK"));
}

#[test]
fn reply_buffers_keep_their_size_when_resizing_is_off() {
    let server = TestServer::start();
    let mut admin = server.client();
    assert_eq!(admin.cmd(&["DEBUG", "REPLYBUFFER", "RESIZING", "0"]), simple("OK"));
    let _kept = named(&server, "kept");
    std::thread::sleep(Duration::from_millis(500));
    let seen = buffers_of(&mut admin, "kept");
    assert_eq!((seen.rbs, seen.rbp), (16_384, 16_384));
    assert_eq!(admin.cmd(&["DEBUG", "REPLYBUFFER", "RESIZING", "1"]), simple("OK"));
    wait_for(&mut admin, "kept", Duration::from_secs(2), |b| b.rbs == 1024);
}

#[test]
fn debug_replybuffer_arguments() {
    let server = TestServer::start();
    let mut c = server.client();
    let wrong = "ERR unknown subcommand or wrong number of arguments for 'replybuffer'. Try DEBUG HELP.";
    assert_eq!(c.cmd(&["DEBUG", "replybuffer"]), err(wrong));
    assert_eq!(c.cmd(&["DEBUG", "replybuffer", "peak-reset-time"]), err(wrong));
    assert_eq!(c.cmd(&["DEBUG", "replybuffer", "resizing", "1", "2"]), err(wrong));
    assert_eq!(c.cmd(&["DEBUG", "replybuffer", "foo", "1"]), err(wrong));
    let not_integer = "ERR value is not an integer or out of range";
    assert_eq!(c.cmd(&["DEBUG", "replybuffer", "peak-reset-time", "abc"]), err(not_integer));
    assert_eq!(c.cmd(&["DEBUG", "replybuffer", "peak-reset-time", "99999999999999999999"]), err(not_integer));
    // As Redis: any integer (a negative one never resets), NEVER, RESET;
    // RESIZING reads its value as C's atoi.
    for value in ["-5", "0", "NEVER", "reset"] {
        assert_eq!(c.cmd(&["DEBUG", "REPLYBUFFER", "PEAK-RESET-TIME", value]), simple("OK"));
    }
    for value in ["abc", "1"] {
        assert_eq!(c.cmd(&["DEBUG", "REPLYBUFFER", "RESIZING", value]), simple("OK"));
    }
}

//! Integration tests of a connection's buffer accounting and release: the
//! `qbuf`, `qbuf-free`, `rbs` and `rbp` fields CLIENT LIST shows for any
//! client, the release of an idle client's buffers, the busy resizing of
//! Redis 7.0's `unit/querybuf` and `unit/replybufsize`, DEBUG
//! REPLYBUFFER, INFO stats `reply_buffer_shrinks`/`reply_buffer_expands`,
//! and the same accounting for native-protocol connections. Expected values
//! are redis-server 7.0.15's (its buffer capacities are allocator sizes, so
//! only their bounds are compared).

use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::{Duration, Instant};

use crate::common::*;
use cairn_native::{decode_frame, encode, Body, Decoded, Limits, OpRef, Outcome, Value};
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

/// The CLIENT LIST line of the client named `name`.
fn line_of(observer: &mut Client, name: &str) -> String {
    let OwnedFrame::BlobString { data, .. } = observer.cmd(&["CLIENT", "LIST"]) else { panic!("a bulk string") };
    let text = String::from_utf8_lossy(&data).into_owned();
    let needle = format!(" name={name} ");
    let line = text.lines().find(|l| l.contains(&needle)).unwrap_or_else(|| panic!("no client {name} in {text}"));
    line.to_string()
}

fn buffers_of(observer: &mut Client, name: &str) -> Buffers {
    buffers_in(&line_of(observer, name))
}

/// The buffer fields of one CLIENT LIST line.
fn buffers_in(line: &str) -> Buffers {
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

/// INFO stats (reply_buffer_shrinks, reply_buffer_expands).
fn resizes(c: &mut Client) -> (u64, u64) {
    (c.info_number("stats", "reply_buffer_shrinks"), c.info_number("stats", "reply_buffer_expands"))
}

#[test]
fn info_stats_count_reply_buffer_resizes_and_resetstat_clears_them() {
    let server = TestServer::start();
    let mut admin = server.client();
    let OwnedFrame::BlobString { data, .. } = admin.cmd(&["INFO", "stats"]) else { panic!("INFO reply") };
    let text = String::from_utf8_lossy(&data).into_owned();
    let names: Vec<&str> = text.lines().filter_map(|l| l.split_once(':').map(|(name, _)| name)).collect();
    // Where Redis 7.0.15 puts them: after total_reads_processed (and the
    // I/O-thread fields Cairn does not have), shrinks first.
    let at = |field: &str| names.iter().position(|n| *n == field).unwrap_or_else(|| panic!("no {field} in {text}"));
    assert!(at("total_reads_processed") < at("reply_buffer_shrinks"));
    assert_eq!(at("reply_buffer_shrinks") + 1, at("reply_buffer_expands"));
    // A new idle client's reply buffer goes from 16 KiB to 1 KiB: one
    // shrink (redis-server 7.0.15 counts exactly one per such client).
    let (shrinks_before, _) = resizes(&mut admin);
    let _idle = named(&server, "idle");
    wait_for(&mut admin, "idle", Duration::from_secs(2), |b| b.rbs == 1024);
    let (shrinks, _) = resizes(&mut admin);
    assert!(shrinks > shrinks_before, "{shrinks} after {shrinks_before}");
    // A client fetching 32 KiB values from a 1 KiB buffer: four expands
    // (1 to 2, 4, 8 and 16 KiB), as redis-server 7.0.15 counts them.
    assert_eq!(admin.cmd(&["SET", "bigval", &"x".repeat(32_768)]), simple("OK"));
    let mut reader = named(&server, "reader");
    wait_for(&mut admin, "reader", Duration::from_secs(2), |b| b.rbs == 1024);
    assert_eq!(admin.cmd(&["DEBUG", "REPLYBUFFER", "PEAK-RESET-TIME", "never"]), simple("OK"));
    let (_, expands_before) = resizes(&mut admin);
    let deadline = Instant::now() + Duration::from_secs(3);
    while buffers_of(&mut admin, "reader").rbs < 16_384 {
        assert!(Instant::now() < deadline, "the reply buffer never reached 16 KiB");
        let OwnedFrame::BlobString { data, .. } = reader.cmd(&["GET", "bigval"]) else { panic!("the value") };
        assert_eq!(data.len(), 32_768);
        std::thread::sleep(Duration::from_millis(110));
    }
    let (_, expands) = resizes(&mut admin);
    assert!(expands >= expands_before + 4, "{expands} after {expands_before}");
    // With resizing off nothing moves, so the reset counts stay at zero.
    assert_eq!(admin.cmd(&["DEBUG", "REPLYBUFFER", "RESIZING", "0"]), simple("OK"));
    assert_eq!(admin.cmd(&["CONFIG", "RESETSTAT"]), simple("OK"));
    assert_eq!(resizes(&mut admin), (0, 0));
    std::thread::sleep(Duration::from_millis(300));
    assert_eq!(resizes(&mut admin), (0, 0));
    assert_eq!(admin.cmd(&["DEBUG", "REPLYBUFFER", "RESIZING", "1"]), simple("OK"));
    assert_eq!(admin.cmd(&["DEBUG", "REPLYBUFFER", "PEAK-RESET-TIME", "reset"]), simple("OK"));
}

/// A native-protocol connection past its handshake.
struct Native {
    stream: TcpStream,
    input: Vec<u8>,
}

impl Native {
    /// Connects and says HELLO with the client name `name`.
    fn connect(server: &TestServer, name: &str) -> Native {
        let addr = server.running.as_ref().expect("running").native_addr.expect("a native port");
        let stream = TcpStream::connect(addr).expect("connect");
        stream.set_read_timeout(Some(Duration::from_secs(5))).expect("timeout");
        let mut native = Native { stream, input: Vec::new() };
        let mut hello = Vec::new();
        encode::hello(&mut hello, 1, 1, &[(cairn_native::hello::option::NAME, name.as_bytes())]);
        native.stream.write_all(&hello).expect("write");
        assert!(matches!(native.read_body(), Reply::HelloOk), "HELLO answered");
        native
    }

    /// GET `key`: the value's length (`None`: no value).
    fn get_len(&mut self, key: &str) -> Option<usize> {
        let mut frame = Vec::new();
        encode::request(&mut frame, 2, 0, &OpRef::Get { key: key.as_bytes() });
        self.stream.write_all(&frame).expect("write");
        match self.read_body() {
            Reply::Value(len) => len,
            other => panic!("GET answered {other:?}"),
        }
    }

    fn read_body(&mut self) -> Reply {
        let mut chunk = [0u8; 16_384];
        loop {
            if let Ok(Decoded::Complete { frame, consumed }) = decode_frame(&self.input, &Limits::default()) {
                let reply = match frame.body {
                    Body::HelloOk(_) => Reply::HelloOk,
                    Body::Reply(Outcome::Ok(Value::Bytes(bytes))) => Reply::Value(Some(bytes.len())),
                    Body::Reply(Outcome::Ok(_)) => Reply::Value(None),
                    _ => Reply::Other,
                };
                self.input.drain(..consumed);
                return reply;
            }
            let n = self.stream.read(&mut chunk).expect("a native reply before the timeout");
            assert!(n > 0, "the server closed the native connection");
            self.input.extend_from_slice(&chunk[..n]);
        }
    }
}

#[derive(Debug)]
enum Reply {
    HelloOk,
    /// A value: its length if it is a string.
    Value(Option<usize>),
    Other,
}

#[test]
fn a_native_connection_shows_its_buffers_and_gives_them_back_when_idle() {
    let server = TestServer::start();
    let mut observer = server.client();
    let started = Instant::now();
    let mut native = Native::connect(&server, "native");
    let line = line_of(&mut observer, "native");
    let fresh = buffers_in(&line);
    assert_eq!(fresh.qbuf, 0);
    assert!((16_384..32_768).contains(&fresh.query_total()), "{line}");
    assert!(fresh.rbs >= 1024 && fresh.rbp <= fresh.rbs, "{line}");
    assert!(field(&line, "tot-mem") >= fresh.query_total() + fresh.rbs, "{line}");
    assert_eq!(field(&line, "resp"), 3, "{line}");
    // Idle: the reply buffer shrinks to 1 KiB, and after 2 s the input buffer goes.
    let released = wait_for(&mut observer, "native", Duration::from_secs(4), |b| b.query_total() == 0 && b.rbs == 1024);
    assert!(started.elapsed() >= Duration::from_millis(1_900), "released after {:?}", started.elapsed());
    assert_eq!(released.rbp, 0);
    let fresh_total = field(&line, "tot-mem");
    let released_line = line_of(&mut observer, "native");
    let released_total = field(&released_line, "tot-mem");
    assert!(released_total + fresh.query_total() <= fresh_total, "tot-mem kept the buffers: {released_line}");
    // The next request gets an input buffer again; a 40 KB reply grows the
    // reply buffer, which keeps that size (no allocation per batch).
    assert_eq!(observer.cmd(&["SET", "big", &"v".repeat(40_000)]), simple("OK"));
    assert_eq!(native.get_len("big"), Some(40_000));
    let back = buffers_of(&mut observer, "native");
    assert!(back.query_total() >= 16_384, "{back:?}");
    assert!(back.rbs >= 40_000, "{back:?}");
    assert_eq!(native.get_len("big"), Some(40_000));
    assert_eq!(buffers_of(&mut observer, "native").rbs, back.rbs);
}

//! A busy script never stalls a worker: commands that arrive on any worker
//! while a script starts or runs wait for it without holding the worker's
//! thread (or get -BUSY past `busy-reply-threshold`), over RESP and over the
//! native protocol, so SCRIPT KILL can always reach the server.

#![allow(clippy::expect_used, clippy::unwrap_used)]

use crate::common;

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::common::{bulk, simple, Client, TestServer};
use cairn_native::{decode_frame, encode, Body, Decoded, Limits, OpRef, Outcome};
use redis_protocol::resp3::types::OwnedFrame;

/// A script that runs until SCRIPT KILL (it writes nothing, so it can be killed).
const FOREVER: &[u8] = b"while true do end";

fn is_busy(frame: &OwnedFrame) -> bool {
    matches!(frame, OwnedFrame::SimpleError { data, .. } if data.starts_with("BUSY"))
}

fn kill_script(control: &mut Client, runner: &mut Client) {
    assert_eq!(control.cmd(&["SCRIPT", "KILL"]), simple("OK"));
    match runner.read() {
        OwnedFrame::SimpleError { data, .. } => assert!(data.contains("Script killed by user"), "{data}"),
        other => panic!("the killed script answered {other:?}"),
    }
}

/// A native connection past its handshake.
struct Native {
    stream: TcpStream,
    input: Vec<u8>,
}

impl Native {
    fn connect(addr: SocketAddr) -> Native {
        let stream = TcpStream::connect(addr).expect("connect");
        stream.set_read_timeout(Some(Duration::from_secs(10))).expect("timeout");
        let mut native = Native { stream, input: Vec::new() };
        let mut hello = Vec::new();
        encode::hello(&mut hello, 1, 1, &[]);
        native.stream.write_all(&hello).expect("write");
        assert!(matches!(native.read_frame(), FrameSummary::HelloOk));
        native
    }

    fn get(&mut self, key: &[u8]) -> FrameSummary {
        self.request(&OpRef::Get { key })
    }

    /// Any command, as a generic COMMAND operation.
    fn command(&mut self, args: &[&[u8]]) -> FrameSummary {
        self.request(&OpRef::Command { args })
    }

    fn request(&mut self, op: &OpRef<'_>) -> FrameSummary {
        let mut frame = Vec::new();
        encode::request(&mut frame, 2, 0, op);
        self.stream.write_all(&frame).expect("write");
        self.read_frame()
    }

    fn read_frame(&mut self) -> FrameSummary {
        let mut chunk = [0u8; 4096];
        loop {
            if let Ok(Decoded::Complete { frame, consumed }) = decode_frame(&self.input, &Limits::default()) {
                let summary = FrameSummary::of(&frame.body);
                self.input.drain(..consumed);
                return summary;
            }
            let n = self.stream.read(&mut chunk).expect("a native reply before the timeout");
            assert!(n > 0, "server closed the native connection");
            self.input.extend_from_slice(&chunk[..n]);
        }
    }
}

#[derive(Debug)]
enum FrameSummary {
    HelloOk,
    Value,
    Error(String),
    Other,
}

impl FrameSummary {
    fn of(body: &Body<'_>) -> FrameSummary {
        match body {
            Body::HelloOk(_) => FrameSummary::HelloOk,
            Body::Reply(Outcome::Ok(_)) => FrameSummary::Value,
            Body::Reply(Outcome::Error { message, .. }) | Body::Error { message, .. } => {
                FrameSummary::Error(String::from_utf8_lossy(message).into_owned())
            }
            _ => FrameSummary::Other,
        }
    }
}

#[test]
fn a_native_request_during_a_busy_script_gets_busy_and_the_script_can_still_be_killed() {
    // One worker: a request that held its thread would stall SCRIPT KILL too.
    let server = TestServer::start_with(|c| c.threads = Some(1));
    let native_addr = server.running.as_ref().expect("running").native_addr.expect("native port");
    let mut control = server.client();
    assert_eq!(control.cmd(&["CONFIG", "SET", "busy-reply-threshold", "50"]), simple("OK"));
    control.cmd(&["SET", "k", "v"]);
    let mut native = Native::connect(native_addr);
    assert!(matches!(native.get(b"k"), FrameSummary::Value));

    let mut runner = server.client();
    runner.send_raw(&Client::encode(&[b"EVAL", FOREVER, b"0"]));
    std::thread::sleep(Duration::from_millis(300));
    match native.get(b"k") {
        FrameSummary::Error(message) => assert!(message.starts_with("BUSY"), "{message}"),
        other => panic!("a native GET during a busy script answered {other:?}"),
    }
    kill_script(&mut control, &mut runner);
    assert!(matches!(native.get(b"k"), FrameSummary::Value));
}

#[test]
fn a_native_request_before_the_threshold_waits_for_the_script() {
    let server = TestServer::start_with(|c| c.threads = Some(1));
    let native_addr = server.running.as_ref().expect("running").native_addr.expect("native port");
    let mut control = server.client();
    control.cmd(&["SET", "k", "v"]);
    let mut native = Native::connect(native_addr);
    let mut runner = server.client();
    // Busy for about 600 ms, then done (default threshold: 5 s).
    let script = "local t = redis.call('time'); local start = t[1] * 1000000 + t[2]; \
                  repeat t = redis.call('time') until t[1] * 1000000 + t[2] - start > 600000; return 'done'";
    runner.send_raw(&Client::encode(&[b"EVAL", script.as_bytes(), b"0"]));
    std::thread::sleep(Duration::from_millis(200));
    let asked = Instant::now();
    assert!(matches!(native.get(b"k"), FrameSummary::Value));
    assert!(asked.elapsed() >= Duration::from_millis(100), "the GET did not wait: {:?}", asked.elapsed());
    assert_eq!(runner.read(), bulk("done"));
}

/// Each hammer sends GETs in a loop and stamps when its last reply came.
struct Hammers {
    stop: Arc<AtomicBool>,
    last_reply_ms: Vec<Arc<AtomicU64>>,
    threads: Vec<std::thread::JoinHandle<()>>,
    epoch: Instant,
}

impl Hammers {
    fn start(addr: SocketAddr, count: usize) -> Hammers {
        let stop = Arc::new(AtomicBool::new(false));
        let epoch = Instant::now();
        let mut last_reply_ms = Vec::new();
        let mut threads = Vec::new();
        for i in 0..count {
            let stamp = Arc::new(AtomicU64::new(0));
            last_reply_ms.push(stamp.clone());
            let stop = stop.clone();
            threads.push(std::thread::spawn(move || {
                let mut c = Client::connect(addr);
                c.stream.set_read_timeout(Some(Duration::from_secs(30))).expect("timeout");
                let key = format!("key:{i}");
                while !stop.load(Ordering::Relaxed) {
                    let reply = c.cmd(&["GET", &key]);
                    assert!(matches!(reply, OwnedFrame::Null) || is_busy(&reply), "GET answered {reply:?}");
                    stamp.store(epoch.elapsed().as_millis() as u64, Ordering::Relaxed);
                }
            }));
        }
        Hammers { stop, last_reply_ms, threads, epoch }
    }

    /// The hammers whose last reply is older than `age`.
    fn stalled(&self, age: Duration) -> Vec<usize> {
        let now = self.epoch.elapsed().as_millis() as u64;
        (0..self.last_reply_ms.len())
            .filter(|&i| now.saturating_sub(self.last_reply_ms[i].load(Ordering::Relaxed)) > age.as_millis() as u64)
            .collect()
    }

    fn stop(self) {
        self.stop.store(true, Ordering::Relaxed);
        for t in self.threads {
            t.join().expect("hammer thread");
        }
    }
}

#[test]
fn commands_racing_a_script_start_never_stall_their_worker() {
    let server = TestServer::start_with(|c| c.threads = Some(2));
    let addr = server.addr();
    let mut control = server.client();
    assert_eq!(control.cmd(&["CONFIG", "SET", "busy-reply-threshold", "30"]), simple("OK"));
    let hammers = Hammers::start(addr, 8);
    std::thread::sleep(Duration::from_millis(100));
    for round in 0..12 {
        let mut runner = server.client();
        runner.send_raw(&Client::encode(&[b"EVAL", FOREVER, b"0"]));
        // Past the threshold every hammer gets BUSY at once, on either worker.
        std::thread::sleep(Duration::from_millis(500));
        let stalled = hammers.stalled(Duration::from_millis(250));
        assert!(stalled.is_empty(), "round {round}: hammers {stalled:?} got no reply for 250 ms: a worker is stalled");
        kill_script(&mut control, &mut runner);
    }
    hammers.stop();
}

#[test]
fn eval_over_the_native_protocol_runs_the_script() {
    let server = TestServer::start_with(|c| c.threads = Some(1));
    let native_addr = server.running.as_ref().expect("running").native_addr.expect("native port");
    let mut native = Native::connect(native_addr);
    let summary = native.command(&[b"EVAL", b"return redis.call('incr', KEYS[1])", b"1", b"n"]);
    assert!(matches!(summary, FrameSummary::Value), "{summary:?}");
    let mut control = server.client();
    assert_eq!(control.cmd(&["GET", "n"]), bulk("1"));
}

#[test]
fn a_script_inside_exec_runs_off_the_worker() {
    let server = TestServer::start_with(|c| c.threads = Some(1));
    let mut control = server.client();
    assert_eq!(control.cmd(&["CONFIG", "SET", "busy-reply-threshold", "50"]), simple("OK"));
    let mut runner = server.client();
    assert_eq!(runner.cmd(&["MULTI"]), simple("OK"));
    assert_eq!(runner.cmd(&["SET", "before", "1"]), simple("QUEUED"));
    assert_eq!(runner.cmd(&["EVAL", "while true do end", "0"]), simple("QUEUED"));
    runner.send_raw(&Client::encode(&[b"EXEC"]));
    std::thread::sleep(Duration::from_millis(300));
    // The one worker still answers while the transaction's script runs.
    assert!(is_busy(&control.cmd(&["GET", "before"])));
    assert_eq!(control.cmd(&["SCRIPT", "KILL"]), simple("OK"));
    match runner.read() {
        OwnedFrame::Array { data, .. } => {
            assert_eq!(data[0], simple("OK"));
            assert!(matches!(&data[1], OwnedFrame::SimpleError { data, .. } if data.contains("Script killed")));
        }
        other => panic!("EXEC answered {other:?}"),
    }
    assert_eq!(control.cmd(&["GET", "before"]), bulk("1"));
}

#[test]
fn exec_of_a_queued_script_over_the_native_protocol_runs_it() {
    let server = TestServer::start_with(|c| c.threads = Some(1));
    let native_addr = server.running.as_ref().expect("running").native_addr.expect("native port");
    let mut native = Native::connect(native_addr);
    assert!(matches!(native.command(&[b"MULTI"]), FrameSummary::Value));
    let eval: &[&[u8]] = &[b"EVAL", b"return redis.call('incr', KEYS[1])", b"1", b"n"];
    assert!(matches!(native.command(eval), FrameSummary::Value));
    assert!(matches!(native.command(&[b"EXEC"]), FrameSummary::Value));
    let mut control = server.client();
    assert_eq!(control.cmd(&["GET", "n"]), bulk("1"));
}

#[test]
fn a_pipeline_goes_on_after_an_offloaded_exec() {
    let server = TestServer::start_with(|c| c.threads = Some(1));
    let mut c = server.client();
    let mut pipeline = Vec::new();
    for command in [
        &[&b"MULTI"[..]][..],
        &[b"SET", b"a", b"1"],
        &[b"EVAL", b"return redis.call('incr', KEYS[1])", b"1", b"a"],
        &[b"EXEC"],
        &[b"GET", b"a"],
    ] {
        pipeline.extend_from_slice(&Client::encode(command));
    }
    c.send_raw(&pipeline);
    assert_eq!(c.read(), simple("OK"));
    assert_eq!(c.read(), simple("QUEUED"));
    assert_eq!(c.read(), simple("QUEUED"));
    assert_eq!(c.read(), OwnedFrame::Array { data: vec![simple("OK"), common::int(2)], attributes: None });
    assert_eq!(c.read(), bulk("2"));
}

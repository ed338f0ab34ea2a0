//! Short scripts run on the worker that received them (`scripting::on_worker`);
//! the first run of each, and long ones, on the script thread. Replies keep
//! their pipeline order either way, and a script that turns out long before
//! it writes is abandoned on the worker and runs again on the script thread,
//! where SCRIPT KILL reaches it.

#![allow(clippy::expect_used)]

use std::time::Duration;

use crate::common::{bulk, error_text, int, simple, Client, TestServer};
use redis_protocol::resp3::types::OwnedFrame;

const INCR: &str = "return redis.call('incr', KEYS[1])";

/// A budget no short script misses on a loaded machine.
const BUDGET_US: u64 = 50_000;

/// (on the worker, on the script thread, abandoned on the worker) so far.
fn where_ran(c: &mut Client) -> (u64, u64, u64) {
    (
        c.info_number("stats", "cairn_scripts_on_worker"),
        c.info_number("stats", "cairn_scripts_on_script_thread"),
        c.info_number("stats", "cairn_scripts_abandoned_on_worker"),
    )
}

fn pipeline(c: &mut Client, commands: &[&[&str]]) -> Vec<OwnedFrame> {
    let mut bytes = Vec::new();
    for words in commands {
        let args: Vec<&[u8]> = words.iter().map(|w| w.as_bytes()).collect();
        bytes.extend(Client::encode(&args));
    }
    c.send_raw(&bytes);
    commands.iter().map(|_| c.read()).collect()
}

#[test]
fn a_script_runs_on_the_worker_once_a_run_was_short() {
    let server = TestServer::start_with(|config| config.script_inline_us = BUDGET_US);
    let mut c = server.client();
    assert_eq!(c.cmd(&["EVAL", INCR, "1", "n"]), int(1));
    assert_eq!(where_ran(&mut c), (0, 1, 0), "a first run goes to the script thread");
    for expected in 2..=6 {
        assert_eq!(c.cmd(&["EVAL", INCR, "1", "n"]), int(expected));
    }
    let (on_worker, on_thread, abandoned) = where_ran(&mut c);
    assert_eq!((on_worker, on_thread, abandoned), (5, 1, 0));
}

#[test]
fn no_script_runs_on_a_worker_with_a_budget_of_zero() {
    let server = TestServer::start_with(|config| config.script_inline_us = 0);
    let mut c = server.client();
    for expected in 1..=3 {
        assert_eq!(c.cmd(&["EVAL", INCR, "1", "n"]), int(expected));
    }
    assert_eq!(where_ran(&mut c), (0, 3, 0));
}

#[test]
fn replies_keep_their_pipeline_order_wherever_scripts_run() {
    let server = TestServer::start_with(|config| config.script_inline_us = BUDGET_US);
    let mut c = server.client();
    let commands: &[&[&str]] = &[
        &["EVAL", INCR, "1", "k"],
        &["EVAL", INCR, "1", "k"],
        &["EVALSHA", "0000000000000000000000000000000000000000", "0"],
        &["EVAL", INCR, "1", "k"],
        &["GET", "k"],
        &["EVAL", INCR, "1", "k"],
        &["SET", "k", "100"],
        &["EVAL", INCR, "1", "k"],
        &["GET", "k"],
    ];
    // First on the script thread (a new script), then on the worker.
    for round in 0..2 {
        let base = round * 105;
        let replies = pipeline(&mut c, commands);
        assert_eq!(replies[0], int(base + 1));
        assert_eq!(replies[1], int(base + 2));
        assert!(error_text(&replies[2]).starts_with("NOSCRIPT"), "{:?}", replies[2]);
        assert_eq!(replies[3], int(base + 3));
        assert_eq!(replies[4], bulk(&(base + 3).to_string()));
        assert_eq!(replies[5], int(base + 4));
        assert_eq!(replies[6], simple("OK"));
        assert_eq!(replies[7], int(101));
        assert_eq!(replies[8], bulk("101"));
        if round == 0 {
            c.cmd(&["SET", "k", "105"]);
        }
    }
    let (on_worker, on_thread, _) = where_ran(&mut c);
    assert!(on_thread >= 1 && on_worker >= 5, "on the worker {on_worker}, on the thread {on_thread}");
}

#[test]
fn a_script_past_its_deadline_before_writing_moves_to_the_script_thread() {
    let server = TestServer::start_with(|config| config.script_inline_us = 20_000);
    let spin = "if ARGV[1] == 'spin' then while true do end end return 'quick'";
    let mut c = server.client();
    for _ in 0..3 {
        assert_eq!(c.cmd(&["EVAL", spin, "0", "quick"]), bulk("quick"));
    }
    assert!(where_ran(&mut c).0 >= 1, "the quick runs ran on the worker");
    // With one worker, SCRIPT KILL is read only if the worker is not the
    // one running the script.
    let mut runner = server.client();
    runner.send_raw(&Client::encode(&[b"EVAL", spin.as_bytes(), b"0", b"spin"]));
    std::thread::sleep(Duration::from_millis(300));
    assert_eq!(c.cmd(&["SCRIPT", "KILL"]), simple("OK"));
    let killed = error_text(&runner.read());
    assert!(killed.contains("Script killed by user"), "{killed}");
    let (_, on_thread, abandoned) = where_ran(&mut c);
    assert_eq!(abandoned, 1);
    // From now on the script is long: its runs go to the script thread.
    assert_eq!(c.cmd(&["EVAL", spin, "0", "quick"]), bulk("quick"));
    assert_eq!(where_ran(&mut c).1, on_thread + 1);
}

#[test]
fn a_script_that_wrote_finishes_on_the_worker_past_its_deadline() {
    let server = TestServer::start_with(|config| config.script_inline_us = 1_000);
    let script = "redis.call('set', KEYS[1], ARGV[1]) \
                  if ARGV[2] == 'spin' then local n = 0 for i = 1, 20000000 do n = n + i end end \
                  return redis.call('get', KEYS[1])";
    let mut c = server.client();
    for _ in 0..3 {
        assert_eq!(c.cmd(&["EVAL", script, "1", "k", "a", "quick"]), bulk("a"));
    }
    let (before, ..) = where_ran(&mut c);
    assert!(before >= 1, "the quick runs ran on the worker");
    assert_eq!(c.cmd(&["EVAL", script, "1", "k", "b", "spin"]), bulk("b"));
    let (after, _, abandoned) = where_ran(&mut c);
    assert_eq!((after, abandoned), (before + 1, 0), "a script that wrote is not abandoned");
    assert_eq!(c.cmd(&["GET", "k"]), bulk("b"));
}

//! Scripts that keep to their declared keys run on their worker holding
//! only those keys' shards (`scripting::key_scope`): several workers run
//! them at once, each still atomic; a run that reaches outside its keys
//! before writing starts again holding every shard; one that does so after
//! writing takes the extra shard and finishes.

#![allow(clippy::expect_used)]

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::common::{bulk, int, Client, TestServer};
use redis_protocol::resp3::types::OwnedFrame;

/// A budget no short script misses on a loaded machine.
const BUDGET_US: u64 = 50_000;

/// Moves one unit from KEYS[1] to KEYS[2]: the sum over all keys stays 0.
const TRANSFER: &str = "local a = tonumber(redis.call('get', KEYS[1]) or '0') \
                        local b = tonumber(redis.call('get', KEYS[2]) or '0') \
                        redis.call('set', KEYS[1], a - 1) \
                        redis.call('set', KEYS[2], b + 1) \
                        return a - 1";

/// The sum of the values of KEYS.
const SUM: &str = "local s = 0 for _, k in ipairs(KEYS) do s = s + tonumber(redis.call('get', k) or '0') end return s";

fn keyed_runs(c: &mut Client) -> (u64, u64) {
    (
        c.info_number("stats", "cairn_scripts_keyed_on_worker"),
        c.info_number("stats", "cairn_scripts_left_keys_on_worker"),
    )
}

#[test]
fn a_script_on_its_declared_keys_runs_keyed_after_its_first_run() {
    let server = TestServer::start_with(|config| config.script_inline_us = BUDGET_US);
    let mut c = server.client();
    for expected in 1..=5 {
        assert_eq!(c.cmd(&["EVAL", "return redis.call('incr', KEYS[1])", "1", "n"]), int(expected));
    }
    let (keyed, left) = keyed_runs(&mut c);
    // The first run (script thread) and the second (the first on the worker,
    // which holds everything while the script is not yet known to be keyed)
    // taught that it keeps to its keys.
    assert!(keyed >= 3, "keyed runs {keyed}");
    assert_eq!(left, 0);
}

#[test]
fn a_script_that_reads_an_undeclared_key_before_writing_runs_again_with_every_shard() {
    let server = TestServer::start_with(|config| config.script_inline_us = BUDGET_US);
    let mut c = server.client();
    let script = "if ARGV[1] == 'peek' then redis.call('get', ARGV[2]) end return redis.call('incr', KEYS[1])";
    for expected in 1..=3 {
        assert_eq!(c.cmd(&["EVAL", script, "1", "n", "no"]), int(expected));
    }
    assert!(keyed_runs(&mut c).0 >= 1);
    // Undeclared keys land in another shard almost always; try a few.
    let mut expected = 3;
    let mut left_before = keyed_runs(&mut c).1;
    for i in 0..20 {
        expected += 1;
        let other = format!("undeclared:{i}");
        assert_eq!(c.cmd(&["EVAL", script, "1", "n", "peek", &other]), int(expected), "a run is never lost");
        let (_, left) = keyed_runs(&mut c);
        if left > left_before {
            left_before = left;
            break;
        }
    }
    assert!(left_before >= 1, "one of 20 undeclared keys should be in another shard");
    let (keyed_before, _) = keyed_runs(&mut c);
    expected += 1;
    assert_eq!(c.cmd(&["EVAL", script, "1", "n", "no"]), int(expected));
    assert_eq!(keyed_runs(&mut c).0, keyed_before, "once it left its keys, the script is not keyed any more");
    assert_eq!(c.cmd(&["GET", "n"]), bulk(&expected.to_string()));
}

#[test]
fn a_script_that_writes_an_undeclared_key_after_writing_finishes_and_both_writes_stay() {
    let server = TestServer::start_with(|config| config.script_inline_us = BUDGET_US);
    let mut c = server.client();
    let script = "redis.call('set', KEYS[1], ARGV[1]) \
                  if ARGV[2] ~= '' then redis.call('set', ARGV[2], ARGV[1]) end \
                  return redis.call('get', KEYS[1])";
    for _ in 0..3 {
        assert_eq!(c.cmd(&["EVAL", script, "1", "k", "a", ""]), bulk("a"));
    }
    let (keyed_before, _) = keyed_runs(&mut c);
    assert!(keyed_before >= 1);
    // Most of these land outside k's shard: the run takes their shard too.
    for i in 0..10 {
        let other = format!("undeclared:{i}");
        let value = format!("v{i}");
        assert_eq!(c.cmd(&["EVAL", script, "1", "k", &value, &other]), bulk(&value));
        assert_eq!(c.cmd(&["GET", "k"]), bulk(&value));
        assert_eq!(c.cmd(&["GET", &other]), bulk(&value));
    }
    let (keyed_after, left) = keyed_runs(&mut c);
    assert_eq!(left, 0, "a run that wrote is never abandoned");
    // The first run that reached another shard ran keyed and took it; from
    // then on the script runs holding every shard.
    assert!(keyed_after > keyed_before && keyed_after < keyed_before + 10, "{keyed_before} -> {keyed_after}");
}

#[test]
fn keyed_scripts_on_two_workers_stay_atomic() {
    let server = TestServer::start_with(|config| {
        config.threads = Some(2);
        config.script_inline_us = BUDGET_US;
    });
    let keys: Vec<String> = (0..6).map(|i| format!("acct:{i}")).collect();
    let stop = Arc::new(AtomicBool::new(false));
    let transfers = Arc::new(AtomicU64::new(0));
    let mut movers = Vec::new();
    for t in 0..6usize {
        let mut c = server.client();
        let keys = keys.clone();
        let stop = stop.clone();
        let transfers = transfers.clone();
        movers.push(std::thread::spawn(move || {
            let mut i = t;
            while !stop.load(Ordering::Relaxed) {
                let from = &keys[i % keys.len()];
                let to = &keys[(i * 7 + 1) % keys.len()];
                if from != to {
                    match c.cmd(&["EVAL", TRANSFER, "2", from, to]) {
                        OwnedFrame::Number { .. } => {
                            transfers.fetch_add(1, Ordering::Relaxed);
                        }
                        other => panic!("transfer failed: {other:?}"),
                    }
                }
                i += 1;
            }
        }));
    }
    let mut auditor = server.client();
    let mut args: Vec<&str> = vec!["EVAL", SUM, "6"];
    args.extend(keys.iter().map(String::as_str));
    let until = Instant::now() + Duration::from_millis(1500);
    let mut audits = 0;
    while Instant::now() < until {
        assert_eq!(auditor.cmd(&args), int(0), "a script saw another one half done");
        audits += 1;
    }
    stop.store(true, Ordering::Relaxed);
    for mover in movers {
        mover.join().expect("mover");
    }
    assert_eq!(auditor.cmd(&args), int(0));
    let (keyed, _) = keyed_runs(&mut auditor);
    assert!(transfers.load(Ordering::Relaxed) > 100, "transfers {}", transfers.load(Ordering::Relaxed));
    assert!(keyed > 100, "keyed runs {keyed}");
    assert!(audits > 10, "audits {audits}");
}

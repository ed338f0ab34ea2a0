//! `used_memory_lua` after SCRIPT FLUSH and FUNCTION FLUSH: every thread
//! drops what became stale in its interpreter without waiting for a script
//! to run there (`scripting::stale`), so the figure goes back down.

#![allow(clippy::expect_used)]

use std::time::{Duration, Instant};

use crate::common::{int, simple, Client, TestServer};

const INCR: &str = "return redis.call('incr', KEYS[1])";

/// A library whose function keeps a large table alive in each interpreter
/// that loaded it (about 20,000 array slots: hundreds of KB).
const BIG_LIBRARY: &str = "#!lua name=big\nlocal big = {}\nfor i = 1, 20000 do big[i] = i end\n\
                           redis.register_function('size', function() return #big end)";

fn lua_memory(c: &mut Client) -> u64 {
    c.info_number("memory", "used_memory_lua")
}

/// Waits (at most 5 s) until `used_memory_lua` satisfies `done`; its last value.
fn wait_lua_memory(c: &mut Client, done: impl Fn(u64) -> bool) -> u64 {
    let deadline = Instant::now() + Duration::from_secs(5);
    loop {
        let bytes = lua_memory(c);
        if done(bytes) || Instant::now() > deadline {
            return bytes;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Clients on both workers run a script on the script thread (first run)
/// and on their worker (later runs): several interpreters.
fn run_everywhere(
    server: &TestServer,
    command: &[&str],
    reply: impl Fn(usize) -> redis_protocol::resp3::types::OwnedFrame,
) {
    let mut clients: Vec<Client> = (0..4).map(|_| server.client()).collect();
    let mut runs = 0;
    for _ in 0..3 {
        for c in &mut clients {
            runs += 1;
            assert_eq!(c.cmd(command), reply(runs));
        }
    }
}

#[test]
fn script_flush_releases_every_threads_interpreter() {
    let server = TestServer::start_with(|config| {
        config.threads = Some(2);
        config.script_inline_us = 50_000;
    });
    run_everywhere(&server, &["EVAL", INCR, "1", "n"], |runs| int(runs as i64));
    let mut c = server.client();
    let before = lua_memory(&mut c);
    assert!(before > 0, "interpreters were built");
    assert_eq!(c.cmd(&["SCRIPT", "FLUSH"]), simple("OK"));
    let after = wait_lua_memory(&mut c, |bytes| bytes == 0);
    assert_eq!(after, 0, "every interpreter dropped (was {before} bytes)");
    // Scripts run as before, in new interpreters.
    assert_eq!(c.cmd(&["EVAL", INCR, "1", "n"]), int(13));
    assert!(lua_memory(&mut c) > 0);
}

#[test]
fn function_flush_releases_the_libraries_interpreters_loaded() {
    let server = TestServer::start_with(|config| {
        config.threads = Some(2);
        config.script_inline_us = 50_000;
    });
    let mut c = server.client();
    assert!(matches!(
        c.cmd(&["FUNCTION", "LOAD", BIG_LIBRARY]),
        redis_protocol::resp3::types::OwnedFrame::BlobString { .. }
    ));
    run_everywhere(&server, &["FCALL", "size", "0"], |_| int(20_000));
    let loaded = lua_memory(&mut c);
    assert_eq!(c.cmd(&["FUNCTION", "FLUSH"]), simple("OK"));
    // Each interpreter that loaded the library (at least the script
    // thread's and one worker's) frees its table of 20,000 slots.
    let after = wait_lua_memory(&mut c, |bytes| bytes + 400_000 < loaded);
    assert!(after + 400_000 < loaded, "libraries released: {loaded} -> {after} bytes");
    assert!(after > 0, "the interpreters themselves are kept");
}

//! Lua scripting: EVAL and friends, SCRIPT, conversions, errors, atomicity,
//! busy scripts and SCRIPT KILL, durability of a script's writes, MULTI.

#![allow(clippy::expect_used)]

use std::time::{Duration, Instant};

use crate::common::{array, bulk, error_text, int, simple, Client, TestServer};
use redis_protocol::resp3::types::OwnedFrame;

#[test]
fn lua_to_reply_conversions() {
    let server = TestServer::start();
    let mut c = server.client();
    assert_eq!(c.cmd(&["EVAL", "return 42", "0"]), int(42));
    assert_eq!(c.cmd(&["EVAL", "return 3.99", "0"]), int(3));
    assert_eq!(c.cmd(&["EVAL", "return 'ciao'", "0"]), bulk("ciao"));
    assert_eq!(c.cmd(&["EVAL", "return true", "0"]), int(1));
    assert_eq!(c.cmd(&["EVAL", "return false", "0"]), OwnedFrame::Null);
    assert_eq!(c.cmd(&["EVAL", "return nil", "0"]), OwnedFrame::Null);
    assert_eq!(c.cmd(&["EVAL", "return {ok='fine'}", "0"]), simple("fine"));
    assert_eq!(error_text(&c.cmd(&["EVAL", "return {err='MY error'}", "0"])), "MY error");
    assert_eq!(error_text(&c.cmd(&["EVAL", "return redis.error_reply('oops')", "0"])), "ERR oops");
    assert_eq!(c.cmd(&["EVAL", "return redis.status_reply('PONG')", "0"]), simple("PONG"));
    // Arrays stop at the first nil.
    assert_eq!(c.cmd(&["EVAL", "return {1,2,nil,4}", "0"]), array(vec![int(1), int(2)]));
    assert_eq!(
        c.cmd(&["EVAL", "return {1,'a',{2,'b'}}", "0"]),
        array(vec![int(1), bulk("a"), array(vec![int(2), bulk("b")])])
    );
    assert_eq!(
        c.cmd(&["EVAL", "return {KEYS[1], KEYS[2], ARGV[1]}", "2", "k1", "k2", "a1"]),
        array(vec![bulk("k1"), bulk("k2"), bulk("a1")])
    );
    assert_eq!(c.cmd(&["EVAL", "return redis.sha1hex('')", "0"]), bulk("da39a3ee5e6b4b0d3255bfef95601890afd80709"));
}

#[test]
fn reply_to_lua_conversions() {
    let server = TestServer::start();
    let mut c = server.client();
    c.cmd(&["SET", "s", "v"]);
    c.cmd(&["RPUSH", "l", "a", "b"]);
    assert_eq!(c.cmd(&["EVAL", "return type(redis.call('get','nokey'))", "0"]), bulk("boolean"));
    assert_eq!(c.cmd(&["EVAL", "return redis.call('incr','n') + 1", "0"]), int(2));
    assert_eq!(c.cmd(&["EVAL", "return redis.call('set','x','y').ok", "0"]), bulk("OK"));
    assert_eq!(c.cmd(&["EVAL", "return redis.call('lrange','l',0,-1)", "0"]), array(vec![bulk("a"), bulk("b")]));
    assert_eq!(
        c.cmd(&["EVAL", "return redis.pcall('lpush','s','x').err", "0"]),
        bulk("WRONGTYPE Operation against a key holding the wrong kind of value")
    );
    // RESP3 inside the script: a null is nil, a map is {map=...}.
    assert_eq!(c.cmd(&["EVAL", "redis.setresp(3); return type(redis.call('get','nokey'))", "0"]), bulk("nil"));
    c.cmd(&["HSET", "h", "f", "v"]);
    assert_eq!(c.cmd(&["EVAL", "redis.setresp(3); return redis.call('hgetall','h').map.f", "0"]), bulk("v"));
}

#[test]
fn script_errors_read_as_in_redis() {
    let server = TestServer::start();
    let mut c = server.client();
    c.cmd(&["SET", "s", "v"]);
    let e = error_text(&c.cmd(&["EVAL", "return redis.call('incr','s')", "0"]));
    assert!(e.starts_with("ERR value is not an integer or out of range script: "), "{e}");
    assert!(e.ends_with("on @user_script:1."), "{e}");
    let e = error_text(&c.cmd(&["EVAL", "return redis.call('lpush','s','x')", "0"]));
    assert!(e.starts_with("WRONGTYPE"), "{e}");
    assert!(error_text(&c.cmd(&["EVAL", "return redis.pcall('lpush','s','x')", "0"])).starts_with("WRONGTYPE"));
    let e = error_text(&c.cmd(&["EVAL", "redis.call('nosuchcommand')", "0"]));
    assert!(e.contains("Unknown Redis command called from script"), "{e}");
    let e = error_text(&c.cmd(&["EVAL", "redis.call('set','x')", "0"]));
    assert!(e.starts_with("ERR Wrong number of args calling Redis command from script"), "{e}");
    let e = error_text(&c.cmd(&["EVAL", "return a", "0"]));
    assert!(e.contains("Script attempted to access nonexistent global variable 'a'"), "{e}");
    let e = error_text(&c.cmd(&["EVAL", "a = 10", "0"]));
    assert!(e.contains("Attempt to modify a readonly table"), "{e}");
    let e = error_text(&c.cmd(&["EVAL", "redis.call = function() end", "0"]));
    assert!(e.contains("Attempt to modify a readonly table"), "{e}");
    for global in ["os", "io", "loadfile", "dofile", "print"] {
        let e = error_text(&c.cmd(&["EVAL", &format!("return {global}"), "0"]));
        assert!(e.contains("nonexistent global variable"), "{global}: {e}");
    }
    let e = error_text(&c.cmd(&["EVAL", "return x x", "0"]));
    assert!(e.starts_with("ERR Error compiling script (new function): user_script:1:"), "{e}");
    let e = error_text(&c.cmd(&["EVAL", "return redis.call('eval','return 1','0')", "0"]));
    assert!(e.contains("This Redis command is not allowed from script"), "{e}");
    assert_eq!(error_text(&c.cmd(&["EVAL", "return 1", "-1"])), "ERR Number of keys can't be negative");
    assert_eq!(
        error_text(&c.cmd(&["EVAL", "return 1", "2", "a"])),
        "ERR Number of keys can't be greater than number of args"
    );
    let e = error_text(&c.cmd(&["EVAL_RO", "return redis.call('set','x','1')", "0"]));
    assert!(e.contains("Write commands are not allowed from read-only scripts"), "{e}");
    // A runaway recursion or allocation is an error, not a crash.
    let e = error_text(&c.cmd(&["EVAL", "local function f() return f() + 1 end return f()", "0"]));
    assert!(e.contains("stack overflow"), "{e}");
    assert_eq!(c.cmd(&["PING"]), simple("PONG"));
}

#[test]
fn evalsha_and_the_script_cache() {
    let server = TestServer::start();
    let mut c = server.client();
    let sha = "e0e1f9fabfc9d4800c877a703b823ac0578ff8db"; // sha1("return 1")
    assert_eq!(error_text(&c.cmd(&["EVALSHA", sha, "0"])), "NOSCRIPT No matching script. Please use EVAL.");
    assert_eq!(c.cmd(&["SCRIPT", "LOAD", "return 1"]), bulk(sha));
    assert_eq!(c.cmd(&["EVALSHA", sha, "0"]), int(1));
    assert_eq!(c.cmd(&["EVALSHA", &sha.to_uppercase(), "0"]), int(1));
    assert_eq!(c.cmd(&["EVALSHA_RO", sha, "0"]), int(1));
    assert_eq!(
        c.cmd(&["SCRIPT", "EXISTS", sha, "ffffffffffffffffffffffffffffffffffffffff"]),
        array(vec![int(1), int(0)])
    );
    assert_eq!(c.cmd(&["SCRIPT", "FLUSH", "ASYNC"]), simple("OK"));
    assert_eq!(c.cmd(&["SCRIPT", "EXISTS", sha]), array(vec![int(0)]));
    // EVAL caches what it runs.
    c.cmd(&["EVAL", "return 1", "0"]);
    assert_eq!(c.cmd(&["SCRIPT", "EXISTS", sha]), array(vec![int(1)]));
    assert_eq!(error_text(&c.cmd(&["SCRIPT", "KILL"])), "NOTBUSY No scripts in execution right now.");
    assert_eq!(
        c.cmd(&["COMMAND", "GETKEYS", "EVAL", "return 1", "2", "k1", "k2", "a1"]),
        array(vec![bulk("k1"), bulk("k2")])
    );
    let info = match c.cmd(&["INFO", "memory"]) {
        OwnedFrame::BlobString { data, .. } => String::from_utf8(data).expect("utf8"),
        other => panic!("{other:?}"),
    };
    assert!(info.contains("number_of_cached_scripts:1"), "{info}");
    assert!(info.contains("used_memory_lua:"), "{info}");
}

/// A read-modify-write in a script is atomic against other clients on
/// other workers.
#[test]
fn scripts_are_atomic_across_workers() {
    let server = TestServer::start_with(|c| c.threads = Some(2));
    let addr = server.addr();
    const CLIENTS: usize = 4;
    const ROUNDS: usize = 200;
    let threads: Vec<_> = (0..CLIENTS)
        .map(|i| {
            std::thread::spawn(move || {
                let mut c = Client::connect(addr);
                for _ in 0..ROUNDS {
                    if i % 2 == 0 {
                        let script = "local v = tonumber(redis.call('get', KEYS[1]) or '0'); \
                                      redis.call('set', KEYS[1], v + 1); return v + 1";
                        assert!(matches!(c.cmd(&["EVAL", script, "1", "counter"]), OwnedFrame::Number { .. }));
                    } else {
                        assert!(matches!(c.cmd(&["INCR", "counter"]), OwnedFrame::Number { .. }));
                    }
                }
            })
        })
        .collect();
    for t in threads {
        t.join().expect("client thread");
    }
    let mut c = server.client();
    assert_eq!(c.cmd(&["GET", "counter"]), bulk(&(CLIENTS * ROUNDS).to_string()));
}

#[test]
fn busy_script_and_script_kill() {
    let server = TestServer::start();
    let mut c = server.client();
    assert_eq!(c.cmd(&["CONFIG", "SET", "lua-time-limit", "50"]), simple("OK"));
    assert_eq!(
        c.cmd(&["CONFIG", "GET", "busy-reply-threshold"]),
        array(vec![bulk("busy-reply-threshold"), bulk("50")])
    );
    let mut runner = server.client();
    runner.send_raw(&Client::encode(&[b"EVAL", b"while true do end", b"0"]));
    std::thread::sleep(Duration::from_millis(150));
    // The one worker still answers: other clients get BUSY.
    let e = error_text(&c.cmd(&["GET", "x"]));
    assert!(e.starts_with("BUSY Redis is busy running a script"), "{e}");
    assert_eq!(c.cmd(&["SCRIPT", "KILL"]), simple("OK"));
    let e = error_text(&runner.read());
    assert!(e.contains("Script killed by user with SCRIPT KILL"), "{e}");
    assert_eq!(c.cmd(&["PING"]), simple("PONG"));
    assert_eq!(runner.cmd(&["PING"]), simple("PONG"));

    // A script that wrote cannot be killed; a command sent before the
    // threshold waits for the script instead of failing.
    c.cmd(&["CONFIG", "SET", "busy-reply-threshold", "100"]);
    let script = "redis.call('set','w','1'); local t = redis.call('time'); \
                  local start = tonumber(t[1]) * 1000 + tonumber(t[2]) / 1000; local n = 0; \
                  while n < 3000000 do n = n + 1 end return 'done'";
    runner.send_raw(&Client::encode(&[b"EVAL", script.as_bytes(), b"0"]));
    std::thread::sleep(Duration::from_millis(20));
    let started = Instant::now();
    let reply = c.cmd(&["GET", "w"]);
    if let OwnedFrame::SimpleError { data, .. } = &reply {
        assert!(data.starts_with("BUSY"), "{data}");
        let e = error_text(&c.cmd(&["SCRIPT", "KILL"]));
        assert!(e.starts_with("UNKILLABLE") || e.starts_with("NOTBUSY"), "{e}");
    } else {
        assert_eq!(reply, bulk("1"), "waited {:?}", started.elapsed());
    }
    assert_eq!(runner.read(), bulk("done"));
}

#[test]
fn script_writes_survive_a_restart() {
    let mut first = TestServer::start();
    {
        let mut c = first.client();
        let script = "redis.call('set', KEYS[1], ARGV[1]); redis.call('rpush', KEYS[2], 'a', 'b'); \
                      redis.call('incrby', KEYS[3], 5); redis.call('expire', KEYS[1], 1000); return 1";
        assert_eq!(c.cmd(&["EVAL", script, "3", "k", "l", "n", "v"]), int(1));
        // A script that fails midway keeps (and logs) the writes before its error.
        let e = error_text(&c.cmd(&["EVAL", "redis.call('set','half','1'); redis.call('incr','k')", "0"]));
        assert!(e.contains("not an integer"), "{e}");
    }
    let dir = first.dir.clone();
    first.running.take().expect("running").stop();
    let second =
        cairn_server::start(cairn_server::Config::for_tests(&dir), cairn_server::Shutdown::new()).expect("restart");
    let mut c = Client::connect(second.addr);
    assert_eq!(c.cmd(&["GET", "k"]), bulk("v"));
    assert_eq!(c.cmd(&["LRANGE", "l", "0", "-1"]), array(vec![bulk("a"), bulk("b")]));
    assert_eq!(c.cmd(&["GET", "n"]), bulk("5"));
    assert_eq!(c.cmd(&["GET", "half"]), bulk("1"));
    assert!(matches!(c.cmd(&["TTL", "k"]), OwnedFrame::Number { data, .. } if data > 900));
    second.stop();
}

#[test]
fn eval_inside_multi() {
    let server = TestServer::start();
    let mut c = server.client();
    assert_eq!(c.cmd(&["MULTI"]), simple("OK"));
    assert_eq!(c.cmd(&["SET", "a", "1"]), simple("QUEUED"));
    assert_eq!(c.cmd(&["EVAL", "return redis.call('incr', KEYS[1])", "1", "a"]), simple("QUEUED"));
    assert_eq!(c.cmd(&["INCR", "a"]), simple("QUEUED"));
    assert_eq!(c.cmd(&["EXEC"]), array(vec![simple("OK"), int(2), int(3)]));
    // Commands flagged no-multi are refused inside MULTI.
    c.cmd(&["MULTI"]);
    let e = error_text(&c.cmd(&["SAVE"]));
    assert_eq!(e, "ERR Command not allowed inside a transaction");
    assert!(error_text(&c.cmd(&["EXEC"])).starts_with("EXECABORT"));
}

#[test]
fn shebang_scripts_that_may_write_are_refused_above_maxmemory() {
    let server = TestServer::start();
    let mut c = server.client();
    c.cmd(&["SET", "x", "123"]);
    c.cmd(&["FUNCTION", "LOAD", "#!lua name=lib\nredis.register_function('f', function() return 1 end)"]);
    c.cmd(&["CONFIG", "SET", "maxmemory", "1"]);
    // As Redis 7.0.15: refused before they start, with the denyoom error.
    let oom = "OOM command not allowed when used memory > 'maxmemory'.";
    assert_eq!(error_text(&c.cmd(&["EVAL", "#!lua\nreturn 1", "0"])), oom);
    assert_eq!(error_text(&c.cmd(&["FCALL", "f", "0"])), oom);
    // Flagged no-writes or allow-oom, or without a shebang, they run.
    assert_eq!(c.cmd(&["EVAL", "#!lua flags=no-writes\nreturn 1", "0"]), int(1));
    assert_eq!(c.cmd(&["EVAL", "#!lua flags=allow-oom\nreturn 1", "0"]), int(1));
    assert_eq!(c.cmd(&["EVAL", "return redis.call('get', 'x')", "0"]), bulk("123"));
    c.cmd(&["CONFIG", "SET", "maxmemory", "0"]);
    assert_eq!(c.cmd(&["EVAL", "#!lua\nreturn 1", "0"]), int(1));
}

/// Scripts cannot change the globals later scripts see: not by assigning
/// one that exists, not through `_G`, `rawset` or code they compile; byte
/// code is refused (Redis 7's read-only globals).
#[test]
fn scripts_cannot_replace_globals() {
    let server = TestServer::start();
    let mut c = server.client();
    for script in [
        "redis = function() return 1 end",
        "_G = {}",
        "_G.redis = 1",
        "rawset(_G, 'redis', 1)",
        "loadstring('redis = 1')()",
        "load(function() return nil end)",
        "cjson.encode = function() return 1 end",
    ] {
        let reply = c.cmd(&["EVAL", script, "0"]);
        if script.starts_with("load(") {
            continue; // an empty chunk: nothing to check but that it ran
        }
        let text = error_text(&reply);
        assert!(text.contains("Attempt to modify a readonly table"), "{script}: {text}");
    }
    let dumped = error_text(&c.cmd(&["EVAL", "return loadstring(string.dump(function() return 1 end))()", "0"]));
    assert!(dumped.contains("attempt to call a nil value"), "{dumped}");
    assert_eq!(c.cmd(&["EVAL", "return loadstring('return 40 + 2')()", "0"]), int(42));
    assert_eq!(c.cmd(&["EVAL", "return redis.call('ping')", "0"]), simple("PONG"));
}

#[test]
fn cluster_answers_as_a_standalone_redis_and_its_noscript_subcommands_are_refused_in_scripts() {
    let server = TestServer::start();
    let mut c = server.client();
    assert_eq!(error_text(&c.cmd(&["CLUSTER", "INFO"])), "ERR This instance has cluster support disabled");
    assert_eq!(error_text(&c.cmd(&["cluster", "keyslot", "k"])), "ERR This instance has cluster support disabled");
    assert_eq!(error_text(&c.cmd(&["CLUSTER", "nosuch"])), "ERR unknown subcommand 'nosuch'. Try CLUSTER HELP.");
    assert_eq!(
        error_text(&c.cmd(&["CLUSTER", "Info", "x"])),
        "ERR wrong number of arguments for 'cluster|info' command"
    );
    let reset = error_text(&c.cmd(&["EVAL", "return redis.call('cluster', 'reset', 'hard')", "0"]));
    assert!(reset.contains("This Redis command is not allowed from script"), "{reset}");
    let config = error_text(&c.cmd(&["EVAL", "return redis.call('config', 'set', 'maxmemory', '0')", "0"]));
    assert!(config.contains("This Redis command is not allowed from script"), "{config}");
    let info = error_text(&c.cmd(&["EVAL", "return redis.call('cluster', 'info')", "0"]));
    assert!(info.contains("cluster support disabled"), "{info}");
}

#[test]
fn sort_of_a_set_without_sorting_is_sorted_alphabetically_inside_a_script() {
    let server = TestServer::start();
    let mut c = server.client();
    let members = ["z", "b", "aa", "a", "c", "azz"];
    let mut args = vec!["SADD", "s"];
    args.extend(members);
    c.cmd(&args);
    let sorted = c.cmd(&["EVAL", "return redis.call('sort', KEYS[1], 'by', 'nosort')", "1", "s"]);
    assert_eq!(sorted, array(["a", "aa", "azz", "b", "c", "z"].iter().map(|m| bulk(m)).collect()));
}

#[test]
fn script_errors_count_once_in_errorstats_and_as_a_failed_eval() {
    let server = TestServer::start();
    let mut c = server.client();
    // Each error on the worker's path and on the script thread's (first runs).
    for round in 0..2 {
        c.cmd(&["CONFIG", "RESETSTAT"]);
        let raised = error_text(&c.cmd(&["EVAL", "return redis.call('select', 99)", "0"]));
        assert!(raised.starts_with("ERR DB index is out of range"), "{raised}");
        let custom = error_text(&c.cmd(&["EVAL", "return redis.error_reply('MY_CODE custom')", "0"]));
        assert_eq!(custom, "MY_CODE custom");
        let caught = c.cmd(&["EVAL", "local t = redis.pcall('select', 99) return t['err'] and 1 or 0", "0"]);
        assert_eq!(caught, int(1));
        let errorstats = c.cmd(&["INFO", "errorstats"]);
        let OwnedFrame::BlobString { data, .. } = errorstats else { panic!("INFO reply") };
        let text = String::from_utf8_lossy(&data).to_string();
        // SELECT failed twice (counted where it failed), MY_CODE once (the script's own reply).
        assert!(text.contains("errorstat_ERR:count=2"), "round {round}: {text}");
        assert!(text.contains("errorstat_MY_CODE:count=1"), "round {round}: {text}");
        let commandstats = c.cmd(&["INFO", "commandstats"]);
        let OwnedFrame::BlobString { data, .. } = commandstats else { panic!("INFO reply") };
        let text = String::from_utf8_lossy(&data).to_string();
        let eval = text.lines().find(|l| l.starts_with("cmdstat_eval:")).expect("eval stats");
        assert!(eval.contains("calls=3") && eval.contains("failed_calls=2"), "round {round}: {eval}");
    }
}

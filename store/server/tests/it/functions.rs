//! Redis 7 functions: FUNCTION LOAD / DELETE / FLUSH / LIST / DUMP /
//! RESTORE / STATS / KILL, FCALL and FCALL_RO, the load-time sandbox, busy
//! functions, and libraries surviving restarts (log replay and snapshots).

#![allow(clippy::expect_used)]

use std::time::Duration;

use crate::common::{array, bulk, error_text, int, simple, Client, TestServer};
use redis_protocol::resp3::types::OwnedFrame;

/// A library `lib` with one function `name` whose body is `body`.
fn library(lib: &str, name: &str, body: &str) -> String {
    format!("#!lua name={lib}\nredis.register_function('{name}', function(keys, args)\n {body} \nend)")
}

const READER: &str = "#!lua name=ro\nredis.register_function{function_name='reader', \
                      callback=function(keys, args) return redis.call('get', keys[1]) end, \
                      flags={'no-writes'}, description='reads a key'}";

#[test]
fn load_and_call() {
    let server = TestServer::start();
    let mut c = server.client();
    let code = library("mylib", "setget", "redis.call('set', keys[1], args[1]) return redis.call('get', keys[1])");
    assert_eq!(c.cmd(&["FUNCTION", "LOAD", &code]), bulk("mylib"));
    assert_eq!(c.cmd(&["FCALL", "setget", "1", "k", "v"]), bulk("v"));
    assert_eq!(c.cmd(&["FCALL", "SETGET", "1", "k", "w"]), bulk("w"));
    assert_eq!(c.cmd(&["GET", "k"]), bulk("w"));
    // Redis 7.0's errors, byte for byte.
    assert_eq!(error_text(&c.cmd(&["FUNCTION", "LOAD", &code])), "ERR Library 'mylib' already exists");
    assert_eq!(error_text(&c.cmd(&["FUNCTION", "LOAD", "foo", &code])), "ERR Unknown option given: foo");
    assert_eq!(c.cmd(&["FUNCTION", "LOAD", "REPLACE", &code]), bulk("mylib"));
    let other_engine = library("x", "f", "return 1").replace("#!lua", "#!js");
    assert_eq!(error_text(&c.cmd(&["FUNCTION", "LOAD", &other_engine])), "ERR Engine 'js' not found");
    assert_eq!(error_text(&c.cmd(&["FUNCTION", "LOAD", "return 1"])), "ERR Missing library metadata");
    assert_eq!(error_text(&c.cmd(&["FUNCTION", "LOAD", "#!lua name=x\nreturn 1"])), "ERR No functions registered");
    let clash = library("other", "SetGet", "return 1");
    assert_eq!(error_text(&c.cmd(&["FUNCTION", "LOAD", &clash])), "ERR Function SetGet already exists");
    let e = error_text(&c.cmd(&["FUNCTION", "LOAD", "#!lua name=x\nbad code"]));
    assert!(e.starts_with("ERR Error compiling function: user_function:2:"), "{e}");
    assert_eq!(error_text(&c.cmd(&["FCALL", "nosuch", "0"])), "ERR Function not found");
    assert_eq!(error_text(&c.cmd(&["FCALL", "setget", "x"])), "ERR Bad number of keys provided");
    assert_eq!(
        error_text(&c.cmd(&["FCALL", "setget", "3", "a"])),
        "ERR Number of keys can't be greater than number of args"
    );
    // A runtime error names the function and the line.
    c.cmd(&["FUNCTION", "LOAD", &library("bad", "boom", "local a = nil return a.b")]);
    let e = error_text(&c.cmd(&["FCALL", "boom", "0"]));
    assert_eq!(e, "ERR user_function:3: attempt to index local 'a' (a nil value) script: boom, on @user_function:3.");
    assert_eq!(c.cmd(&["FUNCTION", "DELETE", "bad"]), simple("OK"));
    assert_eq!(error_text(&c.cmd(&["FUNCTION", "DELETE", "bad"])), "ERR Library not found");
    assert_eq!(error_text(&c.cmd(&["FCALL", "boom", "0"])), "ERR Function not found");
}

#[test]
fn the_load_runs_in_a_sandbox_where_only_registration_is_allowed() {
    let server = TestServer::start();
    let mut c = server.client();
    let cases = [
        ("return math.random()", "ERR Error registering functions: ERR user_function:2: Script attempted to access nonexistent global variable 'math'"),
        ("return redis.call('ping')", "ERR Error registering functions: ERR user_function:2: Script attempted to access nonexistent global variable 'call'"),
        ("a = 1", "ERR Error registering functions: ERR user_function:2: Attempt to modify a readonly table"),
        ("redis.register_function(nil, function() end)", "ERR Error registering functions: ERR first argument to redis.register_function must be a string"),
        ("redis.register_function('a-b', function() end)", "ERR Error registering functions: ERR Library names can only contain letters, numbers, or underscores(_) and must be at least one character long"),
        ("redis.register_function{function_name='f', callback=function() end, flags={'fast'}}", "ERR Error registering functions: ERR unknown flag given"),
    ];
    for (body, expected) in cases {
        let code = format!("#!lua name=lib\n{body}");
        assert_eq!(error_text(&c.cmd(&["FUNCTION", "LOAD", &code])), expected, "{body}");
    }
    let e = error_text(&c.cmd(&["FUNCTION", "LOAD", "#!lua name=lib\nlocal a = 1 while true do a = a + 1 end"]));
    assert!(e.contains("FUNCTION LOAD timeout"), "{e}");
    // At run time register_function is gone, and globals stay read-only.
    let code = library("lib", "f", "redis.register_function('g', function() end)");
    c.cmd(&["FUNCTION", "LOAD", &code]);
    let e = error_text(&c.cmd(&["FCALL", "f", "0"]));
    assert!(e.contains("attempt to call field 'register_function' (a nil value)"), "{e}");
    // Functions get their keys and arguments as parameters, not KEYS/ARGV.
    let code = library("lib", "f", "return {keys[1], args[1], bit.tohex(255, 2)}");
    c.cmd(&["FUNCTION", "LOAD", "REPLACE", &code]);
    assert_eq!(c.cmd(&["FCALL", "f", "1", "k", "a"]), array(vec![bulk("k"), bulk("a"), bulk("ff")]));
    c.cmd(&["FUNCTION", "LOAD", "REPLACE", &library("lib", "f", "return KEYS[1]")]);
    assert!(error_text(&c.cmd(&["FCALL", "f", "1", "k"])).contains("nonexistent global variable 'KEYS'"));
    // unpack over an overflowing range is an error, not a crash.
    let e = error_text(&c.cmd(&["EVAL", "return {unpack({1,2,3}, -2, 2147483647)}", "0"]));
    assert!(e.contains("too many results to unpack"), "{e}");
}

#[test]
fn no_writes_functions_and_fcall_ro() {
    let server = TestServer::start();
    let mut c = server.client();
    c.cmd(&["FUNCTION", "LOAD", READER]);
    c.cmd(&["FUNCTION", "LOAD", &library("rw", "writer", "return redis.call('set', keys[1], 'x')")]);
    c.cmd(&["SET", "k", "v"]);
    assert_eq!(c.cmd(&["FCALL_RO", "reader", "1", "k"]), bulk("v"));
    assert_eq!(
        error_text(&c.cmd(&["FCALL_RO", "writer", "1", "k"])),
        "ERR Can not execute a script with write flag using *_ro command."
    );
    let code = "#!lua name=ro2\nredis.register_function{function_name='sneaky', \
                callback=function(keys) return redis.call('set', keys[1], 'x') end, flags={'no-writes'}}";
    c.cmd(&["FUNCTION", "LOAD", code]);
    let e = error_text(&c.cmd(&["FCALL", "sneaky", "1", "k"]));
    assert!(e.starts_with("ERR Write commands are not allowed from read-only scripts."), "{e}");
    assert_eq!(c.cmd(&["GET", "k"]), bulk("v"));
}

#[test]
fn list_dump_and_restore() {
    let server = TestServer::start();
    let mut c = server.client();
    c.cmd(&["FUNCTION", "LOAD", READER]);
    let expected = array(vec![array(vec![
        bulk("library_name"),
        bulk("ro"),
        bulk("engine"),
        bulk("LUA"),
        bulk("functions"),
        array(vec![array(vec![
            bulk("name"),
            bulk("reader"),
            bulk("description"),
            bulk("reads a key"),
            bulk("flags"),
            array(vec![simple("no-writes")]),
        ])]),
    ])]);
    assert_eq!(c.cmd(&["FUNCTION", "LIST"]), expected);
    assert_eq!(c.cmd(&["FUNCTION", "LIST", "LIBRARYNAME", "r*"]), expected);
    assert_eq!(c.cmd(&["FUNCTION", "LIST", "LIBRARYNAME", "x*"]), array(vec![]));
    assert_eq!(error_text(&c.cmd(&["FUNCTION", "LIST", "bad"])), "ERR Unknown argument bad");
    let OwnedFrame::Array { data, .. } = c.cmd(&["FUNCTION", "LIST", "WITHCODE"]) else { panic!("an array") };
    let OwnedFrame::Array { data: fields, .. } = &data[0] else { panic!("a library") };
    assert_eq!(fields[6..], [bulk("library_code"), bulk(READER)]);

    let OwnedFrame::BlobString { data: payload, .. } = c.cmd(&["FUNCTION", "DUMP"]) else { panic!("a payload") };
    c.cmd(&["FUNCTION", "LOAD", &library("second", "f2", "return 2")]);
    let restore = |c: &mut Client, policy: &[u8]| {
        let mut args: Vec<&[u8]> = vec![b"FUNCTION", b"RESTORE", &payload];
        if !policy.is_empty() {
            args.push(policy);
        }
        c.send_raw(&Client::encode(&args));
        c.read()
    };
    assert_eq!(error_text(&restore(&mut c, b"")), "ERR Library ro already exists");
    assert_eq!(restore(&mut c, b"REPLACE"), simple("OK"));
    assert_eq!(c.cmd(&["FCALL", "f2", "0"]), int(2));
    assert_eq!(restore(&mut c, b"FLUSH"), simple("OK"));
    assert_eq!(error_text(&c.cmd(&["FCALL", "f2", "0"])), "ERR Function not found");
    assert_eq!(c.cmd(&["FCALL", "reader", "1", "nokey"]), OwnedFrame::Null);
    assert_eq!(
        error_text(&c.cmd(&["FUNCTION", "RESTORE", "bad_payload"])),
        "ERR DUMP payload version or checksum are wrong"
    );
    assert_eq!(c.cmd(&["FUNCTION", "FLUSH", "ASYNC"]), simple("OK"));
    assert_eq!(c.cmd(&["FUNCTION", "LIST"]), array(vec![]));
}

#[test]
fn flushall_keeps_functions_and_stats_count_them() {
    let server = TestServer::start();
    let mut c = server.client();
    let code = "#!lua name=two\nredis.register_function('a', function() return 1 end)\n\
                redis.register_function('b', function() return 2 end)";
    c.cmd(&["FUNCTION", "LOAD", code]);
    c.cmd(&["FLUSHALL"]);
    assert_eq!(c.cmd(&["FCALL", "b", "0"]), int(2));
    let stats = array(vec![
        bulk("running_script"),
        OwnedFrame::Null,
        bulk("engines"),
        array(vec![bulk("LUA"), array(vec![bulk("libraries_count"), int(1), bulk("functions_count"), int(2)])]),
    ]);
    assert_eq!(c.cmd(&["FUNCTION", "STATS"]), stats);
    assert_eq!(c.info_number("memory", "number_of_functions"), 2);
    assert_eq!(c.info_number("memory", "number_of_libraries"), 1);
    assert_eq!(c.info_number("memory", "used_memory_functions"), (code.len() + "two".len()) as u64);
    assert_eq!(error_text(&c.cmd(&["FUNCTION", "KILL"])), "NOTBUSY No scripts in execution right now.");
}

#[test]
fn function_kill_stops_a_busy_function_and_script_kill_does_not() {
    let server = TestServer::start();
    let mut c = server.client();
    c.cmd(&["CONFIG", "SET", "busy-reply-threshold", "10"]);
    c.cmd(&["FUNCTION", "LOAD", &library("spin", "spin", "local a = 1 while true do a = a + 1 end")]);
    let mut runner = server.client();
    runner.send_raw(&Client::encode(&[b"FCALL", b"spin", b"0"]));
    std::thread::sleep(Duration::from_millis(150));
    assert_eq!(
        error_text(&c.cmd(&["GET", "x"])),
        "BUSY Redis is busy running a script. You can only call FUNCTION KILL or SHUTDOWN NOSAVE."
    );
    let OwnedFrame::Array { data, .. } = c.cmd(&["FUNCTION", "STATS"]) else { panic!("stats") };
    assert_eq!(data[1].clone(), {
        let OwnedFrame::Array { data: running, .. } = &data[1] else { panic!("a running function: {data:?}") };
        assert_eq!(
            running[..4],
            [bulk("name"), bulk("spin"), bulk("command"), array(vec![bulk("FCALL"), bulk("spin"), bulk("0")])]
        );
        data[1].clone()
    });
    assert!(error_text(&c.cmd(&["SCRIPT", "KILL"])).starts_with("BUSY"));
    assert_eq!(c.cmd(&["FUNCTION", "KILL"]), simple("OK"));
    let e = error_text(&runner.read());
    assert!(e.contains("Script killed by user"), "{e}");
    assert_eq!(c.cmd(&["PING"]), simple("PONG"));
}

#[test]
fn functions_survive_restarts_through_the_log_and_snapshots() {
    let mut first = TestServer::start();
    {
        let mut c = first.client();
        c.cmd(&["FUNCTION", "LOAD", READER]);
        c.cmd(&["FUNCTION", "LOAD", &library("gone", "gone", "return 1")]);
        c.cmd(&["FUNCTION", "LOAD", &library("w", "incr_by", "return redis.call('incrby', keys[1], args[1])")]);
        assert_eq!(c.cmd(&["FUNCTION", "DELETE", "gone"]), simple("OK"));
        assert_eq!(c.cmd(&["FCALL", "incr_by", "1", "n", "5"]), int(5));
        // Inside MULTI the load joins the transaction's record.
        c.cmd(&["MULTI"]);
        c.cmd(&["FUNCTION", "LOAD", &library("tx", "tx", "return 'tx'")]);
        assert_eq!(c.cmd(&["EXEC"]), array(vec![bulk("tx")]));
    }
    let restart = |server: &mut TestServer| {
        server.running.take().expect("running").stop();
        let config = cairn_server::Config::for_tests(&server.dir);
        server.running = Some(cairn_server::start(config, cairn_server::Shutdown::new()).expect("restart"));
    };
    // The log alone: replayed.
    restart(&mut first);
    {
        let mut c = first.client();
        assert_eq!(c.cmd(&["FCALL", "incr_by", "1", "n", "1"]), int(6));
        assert_eq!(c.cmd(&["FCALL_RO", "reader", "1", "n"]), bulk("6"));
        assert_eq!(c.cmd(&["FCALL", "tx", "0"]), bulk("tx"));
        assert_eq!(error_text(&c.cmd(&["FCALL", "gone", "0"])), "ERR Function not found");
        // A snapshot covers the log, which is recycled: the libraries are in it.
        assert_eq!(c.cmd(&["SAVE"]), simple("OK"));
        assert_eq!(c.cmd(&["FUNCTION", "DELETE", "tx"]), simple("OK"));
    }
    restart(&mut first);
    let mut c = first.client();
    assert_eq!(c.cmd(&["FCALL", "incr_by", "1", "n", "1"]), int(7));
    assert_eq!(error_text(&c.cmd(&["FCALL", "tx", "0"])), "ERR Function not found");
    // DEBUG RELOAD (snapshot, then load it) keeps them too.
    assert_eq!(c.cmd(&["DEBUG", "RELOAD"]), simple("OK"));
    assert_eq!(c.cmd(&["FCALL_RO", "reader", "1", "n"]), bulk("7"));
    let OwnedFrame::Array { data, .. } = c.cmd(&["FUNCTION", "LIST"]) else { panic!("a list") };
    assert_eq!(data.len(), 2);
}

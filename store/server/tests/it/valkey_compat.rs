//! What users moving from Valkey bring with them, run on Cairn: scripts and
//! function libraries written against Valkey 8+'s `server` global (the same
//! table as `redis`), and the DUMP payloads valkey-server 9.1.2 writes (RDB
//! version 80), one per type and encoding Cairn holds, restored and read
//! back; the one type Cairn cannot hold (a hash with field TTLs) refused by
//! name, leaving no key behind.
//!
//! The payloads are `../fixtures/valkey_dumps/payloads.txt`, made by
//! `make-payloads.sh` beside it. Expected replies are what valkey-server 9.1.2
//! and redis-server 7.0.15 gave for the same commands; where the two differ
//! in an error's wording (Valkey says `server.setresp()` where Redis says
//! `redis.setresp()`), Cairn keeps Redis 7.0's.

use crate::common::*;
use crate::dump_redis::text;
use redis_protocol::resp3::types::OwnedFrame;

fn eval(c: &mut Client, script: &str) -> OwnedFrame {
    c.cmd(&["EVAL", script, "0"])
}

/// An error reply's text without the `script: ...` suffix.
fn error_head(frame: &OwnedFrame) -> String {
    let text = error_text(frame);
    text.split(" script: ").next().unwrap_or_default().to_string()
}

// --- scripts -------------------------------------------------------------

#[test]
fn server_is_the_redis_table_in_eval() {
    let server = TestServer::start();
    let mut c = server.client();
    assert_eq!(eval(&mut c, "return server.call('ping')"), simple("PONG"));
    assert_eq!(eval(&mut c, "return rawequal(server, redis)"), int(1));
    assert_eq!(eval(&mut c, "return server == redis"), int(1));
    // Every name of the API, under both names, is the same value.
    let names = "call pcall error_reply status_reply sha1hex log setresp set_repl replicate_commands breakpoint \
                 debug acl_check_cmd LOG_DEBUG LOG_VERBOSE LOG_NOTICE LOG_WARNING REPL_NONE REPL_AOF REPL_SLAVE \
                 REPL_REPLICA REPL_ALL REDIS_VERSION REDIS_VERSION_NUM";
    let script = format!(
        "local n = 0 for name in string.gmatch('{names}', '%S+') do \
         if server[name] == nil or server[name] ~= redis[name] then return name end n = n + 1 end return n"
    );
    assert_eq!(eval(&mut c, &script), int(names.split_whitespace().count() as i64));
}

#[test]
fn the_server_api_answers_as_valkey_does() {
    let server = TestServer::start();
    let mut c = server.client();
    assert_eq!(c.cmd(&["EVAL", "return server.call('set', KEYS[1], ARGV[1])", "1", "k", "v"]), simple("OK"));
    assert_eq!(c.cmd(&["EVAL", "return server.pcall('get', KEYS[1])", "1", "k"]), bulk("v"));
    assert_eq!(
        error_head(&eval(&mut c, "return server.pcall('nosuch')")),
        "ERR Unknown Redis command called from script"
    );
    assert_eq!(error_head(&eval(&mut c, "return server.error_reply('My Error')")), "My Error");
    assert_eq!(eval(&mut c, "return server.status_reply('fine')"), simple("fine"));
    assert_eq!(eval(&mut c, "return server.sha1hex('')"), bulk("da39a3ee5e6b4b0d3255bfef95601890afd80709"));
    assert_eq!(eval(&mut c, "return server.acl_check_cmd('set', 'k', 'v')"), int(1));
    assert_eq!(eval(&mut c, "return server.REDIS_VERSION"), bulk("7.0.15"));
    assert_eq!(eval(&mut c, "return server.REDIS_VERSION_NUM"), int(0x0007000f));
    let constants = "return {server.LOG_DEBUG, server.LOG_VERBOSE, server.LOG_NOTICE, server.LOG_WARNING, \
                     server.REPL_NONE, server.REPL_AOF, server.REPL_SLAVE, server.REPL_REPLICA, server.REPL_ALL}";
    let expected = array([0, 1, 2, 3, 0, 1, 2, 2, 3].into_iter().map(int).collect());
    assert_eq!(eval(&mut c, constants), expected);
    let calls = "server.set_repl(server.REPL_ALL) server.replicate_commands() server.debug('x') \
                 server.log(server.LOG_NOTICE, 'from a Valkey script') \
                 if server.breakpoint() then return 'stopped' end \
                 server.setresp(3) return server.call('hgetall', 'nohash')";
    assert_eq!(eval(&mut c, calls), array(vec![]));
    // Errors keep Redis 7.0's wording (Valkey's says `server.setresp()`).
    assert_eq!(error_head(&eval(&mut c, "server.setresp()")), "ERR redis.setresp() requires one argument.");
    assert_eq!(error_head(&eval(&mut c, "server.log()")), "ERR redis.log() requires two arguments or more.");
}

#[test]
fn evalsha_and_eval_ro_see_server_too() {
    let server = TestServer::start();
    let mut c = server.client();
    c.cmd(&["SET", "k", "v"]);
    assert_eq!(c.cmd(&["EVAL_RO", "return server.call('get', KEYS[1])", "1", "k"]), bulk("v"));
    let refused = c.cmd(&["EVAL_RO", "return server.call('set', KEYS[1], 'w')", "1", "k"]);
    assert_eq!(error_head(&refused), "ERR Write commands are not allowed from read-only scripts.");
    let OwnedFrame::BlobString { data: sha, .. } = c.cmd(&["SCRIPT", "LOAD", "return server.call('get', KEYS[1])"])
    else {
        panic!("SCRIPT LOAD")
    };
    let sha = String::from_utf8(sha).expect("hex");
    assert_eq!(c.cmd(&["EVALSHA", &sha, "1", "k"]), bulk("v"));
    assert_eq!(c.cmd(&["EVALSHA_RO", &sha, "1", "k"]), bulk("v"));
}

#[test]
fn server_is_protected_as_redis_is() {
    let server = TestServer::start();
    let mut c = server.client();
    for script in ["server = 1", "redis = 1", "server.x = 1", "redis.call = nil"] {
        let reply = eval(&mut c, script);
        assert_eq!(error_head(&reply), "ERR user_script:1: Attempt to modify a readonly table", "{script}");
    }
    for script in ["return rawset(server, 'x', 1)", "return setmetatable(server, {})", "rawset(_G, 'server', 1)"] {
        assert!(error_text(&eval(&mut c, script)).contains("Attempt to modify a readonly table"), "{script}");
    }
    // Still the same table, unchanged.
    assert_eq!(eval(&mut c, "return rawequal(server, redis) and server.x == nil"), int(1));
}

// --- function libraries ---------------------------------------------------

fn function_load(c: &mut Client, code: &str) -> OwnedFrame {
    c.cmd(&["FUNCTION", "LOAD", code])
}

#[test]
fn libraries_register_and_call_through_server() {
    let server = TestServer::start();
    let mut c = server.client();
    let positional = "#!lua name=vk1\n server.register_function('vk_get', \
                      function(keys) return server.call('get', keys[1]) end)";
    assert_eq!(function_load(&mut c, positional), bulk("vk1"));
    let named = "#!lua name=vk2\n server.log(server.LOG_NOTICE, 'loading', server.REDIS_VERSION)\n \
                 server.register_function{function_name = 'vk_same', flags = {'no-writes'}, \
                 callback = function() return rawequal(server, redis) end}";
    assert_eq!(function_load(&mut c, named), bulk("vk2"));
    c.cmd(&["SET", "k", "v"]);
    assert_eq!(c.cmd(&["FCALL", "vk_get", "1", "k"]), bulk("v"));
    assert_eq!(c.cmd(&["FCALL_RO", "vk_same", "0"]), int(1));
}

#[test]
fn library_load_errors_match_valkey() {
    let server = TestServer::start();
    let mut c = server.client();
    let cases = [
        // While loading, only register_function, log and the constants exist.
        (
            "#!lua name=e1\n return server.call('ping')",
            "ERR Error registering functions: ERR user_function:2: \
             Script attempted to access nonexistent global variable 'call'",
        ),
        (
            "#!lua name=e2\n server.register_function('f', function() return 1 end)\n server.x = 1",
            "ERR Error registering functions: ERR user_function:3: Attempt to modify a readonly table",
        ),
        (
            "#!lua name=e3\n server = 1",
            "ERR Error registering functions: ERR user_function:2: Attempt to modify a readonly table",
        ),
        (
            "#!lua name=e4\n server.register_function{function_name = 'f', callback = function() end, flags = {'bad'}}",
            "ERR Error registering functions: ERR unknown flag given",
        ),
    ];
    for (code, expected) in cases {
        assert_eq!(error_text(&function_load(&mut c, code)), expected, "{code}");
    }
    // At run time register_function is gone, under either name.
    let late = "#!lua name=late\n server.register_function('late', \
                function() return server.register_function('x', function() end) end)";
    assert_eq!(function_load(&mut c, late), bulk("late"));
    let reply = c.cmd(&["FCALL", "late", "0"]);
    assert_eq!(error_head(&reply), "ERR user_function:2: attempt to call field 'register_function' (a nil value)");
    assert_eq!(c.cmd(&["FUNCTION", "LIST", "LIBRARYNAME", "e"]), array(vec![]));
}

// --- DUMP payloads ---------------------------------------------------------

/// One line of payloads.txt: the key, Valkey's OBJECT ENCODING, the payload.
struct Payload {
    key: &'static str,
    bytes: Vec<u8>,
}

fn payloads() -> Vec<Payload> {
    include_str!("../fixtures/valkey_dumps/payloads.txt")
        .lines()
        .filter(|line| !line.trim().is_empty())
        .map(|line| {
            let fields: Vec<&str> = line.split(' ').collect();
            assert_eq!(fields.len(), 3, "{line}");
            Payload { key: fields[0], bytes: unhex(fields[2]) }
        })
        .collect()
}

fn payload(key: &str) -> Vec<u8> {
    payloads().into_iter().find(|p| p.key == key).map(|p| p.bytes).unwrap_or_else(|| panic!("no payload {key}"))
}

fn unhex(hex: &str) -> Vec<u8> {
    (0..hex.len() / 2).map(|i| u8::from_str_radix(&hex[2 * i..2 * i + 2], 16).expect("hex")).collect()
}

fn restore(c: &mut Client, key: &str, ttl: &str, payload: &[u8], extra: &[&str]) -> OwnedFrame {
    let mut args: Vec<&[u8]> = vec![b"RESTORE", key.as_bytes(), ttl.as_bytes(), payload];
    args.extend(extra.iter().map(|a| a.as_bytes()));
    c.send_raw(&Client::encode(&args));
    c.read()
}

/// A reply as one line of text.
fn line(c: &mut Client, args: &[&str]) -> String {
    text(&c.cmd(args))
}

fn sorted_members(c: &mut Client, key: &str) -> String {
    let OwnedFrame::Array { data, .. } = c.cmd(&["SMEMBERS", key]) else { panic!("SMEMBERS {key}") };
    let mut members: Vec<String> = data.iter().map(text).collect();
    members.sort();
    members.join(" ")
}

/// What each key holds once restored: (key, readback command, expected
/// reply as text, OBJECT ENCODING as redis-server 7.0.15 gives for the same
/// commands). The long values are built as make-payloads.sh builds them.
fn expectations(c: &mut Client) -> Vec<(&'static str, String, String, &'static str)> {
    let raw = text(&eval(
        c,
        "local t = {} for i = 0, 24 do t[#t + 1] = string.sub(server.sha1hex(tostring(i)), 1, 8) end \
         return table.concat(t)",
    ));
    let big_list: Vec<String> = (1..=400).map(|i| format!("element-{i:04}-of-the-big-list")).collect();
    let mut big_set: Vec<String> = (1..=130).map(|i| format!("member{i}")).collect();
    big_set.sort();
    let big_zset: Vec<String> = (1..=130).flat_map(|i| [format!("m{i}"), format!("{}", i as f64 / 4.0)]).collect();
    vec![
        ("str_int", "GET".into(), "12345".into(), "int"),
        ("str_embstr", "GET".into(), "hello".into(), "embstr"),
        ("str_raw", "GET".into(), raw, "raw"),
        ("str_lzf", "GET".into(), "abcdefgh".repeat(40), "raw"),
        ("list_small", "LRANGE".into(), "[a b 1 -70000]".into(), "quicklist"),
        ("list_big", "LRANGE".into(), format!("[{}]", big_list.join(" ")), "quicklist"),
        ("set_intset", "SMEMBERS".into(), "-5 1 1099511627776".into(), "intset"),
        ("set_listpack", "SMEMBERS".into(), "a b c".into(), "hashtable"),
        ("set_hashtable", "SMEMBERS".into(), big_set.join(" "), "hashtable"),
        ("zset_listpack", "ZRANGE".into(), "[b -2 a 1.5 c 3]".into(), "listpack"),
        ("zset_skiplist", "ZRANGE".into(), format!("[{}]", big_zset.join(" ")), "skiplist"),
        ("hash_listpack", "HGETALL".into(), "[f 1 g two]".into(), "listpack"),
        ("hash_hashtable", "HGETALL".into(), format!("[f 1 long {}]", "v".repeat(80)), "hashtable"),
    ]
}

fn readback(c: &mut Client, key: &str, command: &str) -> String {
    match command {
        "SMEMBERS" => sorted_members(c, key),
        "LRANGE" => line(c, &["LRANGE", key, "0", "-1"]),
        "ZRANGE" => line(c, &["ZRANGE", key, "0", "-1", "WITHSCORES"]),
        "HGETALL" => {
            // Field order is the hash's: compare sorted pairs.
            let OwnedFrame::Array { data, .. } = c.cmd(&["HGETALL", key]) else { panic!("HGETALL {key}") };
            let mut pairs: Vec<String> = data.chunks(2).map(|p| format!("{} {}", text(&p[0]), text(&p[1]))).collect();
            pairs.sort();
            format!("[{}]", pairs.join(" "))
        }
        other => line(c, &[other, key]),
    }
}

#[test]
fn valkey_payloads_of_every_type_restore() {
    let server = TestServer::start();
    let mut c = server.client();
    let expected = expectations(&mut c);
    for (key, command, contents, encoding) in expected {
        let reply = restore(&mut c, key, "0", &payload(key), &[]);
        assert_eq!(reply, simple("OK"), "RESTORE {key}");
        assert_eq!(readback(&mut c, key, &command), contents, "{key}");
        assert_eq!(line(&mut c, &["OBJECT", "ENCODING", key]), encoding, "{key}");
        assert_eq!(c.cmd(&["PTTL", key]), int(-1), "{key}");
    }
    // A TTL given to RESTORE applies to a Valkey payload as to any.
    assert_eq!(restore(&mut c, "with_ttl", "100000", &payload("hash_listpack"), &[]), simple("OK"));
    let OwnedFrame::Number { data: pttl, .. } = c.cmd(&["PTTL", "with_ttl"]) else { panic!("PTTL") };
    assert!((1..=100_000).contains(&pttl), "{pttl}");
}

#[test]
fn a_valkey_stream_payload_keeps_its_groups() {
    let server = TestServer::start();
    let mut c = server.client();
    assert_eq!(restore(&mut c, "stream", "0", &payload("stream"), &[]), simple("OK"));
    assert_eq!(line(&mut c, &["XRANGE", "stream", "-", "+"]), "[[1-1 [f v]] [3-1 [h x]]]");
    // As XINFO answers in valkey-server 9.1.2 and redis-server 7.0.15 alike
    // after the generator's commands (an XDEL'd entry leaves the group that
    // read past it without an entries-read count).
    let groups = "[[name grp consumers 1 pending 1 last-delivered-id 1-1 entries-read nil lag nil] \
                  [name idle consumers 0 pending 0 last-delivered-id 3-1 entries-read nil lag 0]]";
    assert_eq!(line(&mut c, &["XINFO", "GROUPS", "stream"]), groups);
    let info = line(&mut c, &["XINFO", "STREAM", "stream"]);
    for part in [
        "length 2",
        "last-generated-id 3-1",
        "max-deleted-entry-id 2-1",
        "entries-added 3",
        "recorded-first-entry-id 1-1",
        "groups 2",
    ] {
        assert!(info.contains(part), "{part} in {info}");
    }
    let pending = line(&mut c, &["XPENDING", "stream", "grp"]);
    assert_eq!(pending, "[1 1-1 1-1 [[alice 1]]]");
    assert_eq!(line(&mut c, &["XINFO", "CONSUMERS", "stream", "grp"]).split(' ').nth(1), Some("alice"));
}

#[test]
fn a_valkey_hash_with_field_ttls_is_refused_by_name_leaving_no_key() {
    let server = TestServer::start();
    let mut c = server.client();
    let field_ttl = payload("fieldttl");
    let refusal = "ERR Bad data format: the payload holds Valkey's hash with field expiration times \
                   (RDB type 22), which Cairn does not support";
    assert_eq!(error_text(&restore(&mut c, "fieldttl", "0", &field_ttl, &[])), refusal);
    assert_eq!(c.cmd(&["EXISTS", "fieldttl"]), int(0));
    // REPLACE does not delete what it would have replaced.
    c.cmd(&["SET", "fieldttl", "kept"]);
    assert_eq!(error_text(&restore(&mut c, "fieldttl", "0", &field_ttl, &["REPLACE"])), refusal);
    assert_eq!(c.cmd(&["GET", "fieldttl"]), bulk("kept"));
    // The same bytes with a damaged checksum: Redis's framing error first.
    let mut damaged = field_ttl.clone();
    let last = damaged.len() - 1;
    damaged[last] ^= 1;
    let reply = restore(&mut c, "other", "0", &damaged, &[]);
    assert_eq!(error_text(&reply), "ERR DUMP payload version or checksum are wrong");
    // A Valkey payload of a supported type cut short (its footer sound) is
    // bad data, not a panic.
    let hash = payload("hash_listpack");
    let mut cut = hash[..hash.len() - 14].to_vec();
    cut.extend_from_slice(&80u16.to_le_bytes());
    let crc = cairn_engine::rdb::crc64(0, &cut);
    cut.extend_from_slice(&crc.to_le_bytes());
    assert_eq!(error_text(&restore(&mut c, "cut", "0", &cut, &[])), "ERR Bad data format");
    assert_eq!(c.cmd(&["DBSIZE"]), int(1));
    assert_eq!(c.cmd(&["PING"]), simple("PONG"));
}

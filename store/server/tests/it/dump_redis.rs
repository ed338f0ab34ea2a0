//! DUMP and RESTORE against a real redis-server 7.0 (Debian's, found on
//! PATH; skipped with a message when missing, unless `CI` is set): values of
//! every type and encoding, small and large, are built on both servers by the
//! same commands, then moved both ways (Redis DUMP -> Cairn RESTORE, Cairn
//! DUMP -> Redis RESTORE) and compared by a canonical readback (type, OBJECT
//! ENCODING, sorted contents, TTL presence, `XINFO STREAM key FULL COUNT 0`).
//! Where Redis writes no LZF string (`rdbcompression no`) and the order is
//! not a hash table's, Cairn's DUMP equals Redis's byte for byte.

use std::net::{SocketAddr, TcpListener};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use crate::common::*;
use redis_protocol::resp3::types::OwnedFrame;

/// A redis-server child process on a free loopback port, stopped on drop.
pub(crate) struct RedisServer {
    child: Child,
    pub(crate) addr: SocketAddr,
}

impl Drop for RedisServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

pub(crate) fn redis_server_path() -> Option<std::path::PathBuf> {
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path).map(|dir| dir.join("redis-server")).find(|p| p.is_file())
}

/// Starts redis-server, or explains why not: None skips the test, unless
/// `CI` is set (then a missing server fails it).
fn start_redis(cairn: &mut Client) -> Option<RedisServer> {
    start_redis_with(cairn, &[])
}

/// [`start_redis`] with more arguments (`--dir`, `--dbfilename`, ...).
pub(crate) fn start_redis_with(cairn: &mut Client, extra: &[&str]) -> Option<RedisServer> {
    let Some(binary) = redis_server_path() else {
        assert!(std::env::var_os("CI").is_none(), "redis-server is not on PATH (required when CI is set)");
        eprintln!("skipping: redis-server is not on PATH");
        return None;
    };
    let port = TcpListener::bind("127.0.0.1:0").ok()?.local_addr().ok()?.port();
    let mut args: Vec<String> =
        ["--port", &port.to_string(), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no"]
            .iter()
            .map(|s| s.to_string())
            .collect();
    args.extend(["--enable-debug-command".into(), "yes".into()]);
    args.extend(extra.iter().map(|a| a.to_string()));
    // Cairn's encoding limits, in case a test changed them (the defaults
    // are Redis 7.0's).
    for param in [
        "hash-max-listpack-entries",
        "hash-max-listpack-value",
        "set-max-intset-entries",
        "zset-max-listpack-entries",
        "zset-max-listpack-value",
        "list-max-listpack-size",
    ] {
        args.push(format!("--{param}"));
        args.push(config_value(cairn, param));
    }
    let child = Command::new(binary).args(&args).stdout(Stdio::null()).stderr(Stdio::null()).spawn().ok()?;
    let server = RedisServer { child, addr: SocketAddr::from(([127, 0, 0, 1], port)) };
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        if let Ok(stream) = std::net::TcpStream::connect(server.addr) {
            drop(stream);
            let mut c = Client::connect(server.addr);
            if c.cmd(&["PING"]) == simple("PONG") {
                return Some(server);
            }
        }
        assert!(Instant::now() < deadline, "redis-server did not start");
        std::thread::sleep(Duration::from_millis(20));
    }
}

fn config_value(c: &mut Client, param: &str) -> String {
    match c.cmd(&["CONFIG", "GET", param]) {
        OwnedFrame::Array { data, .. } if data.len() == 2 => text(&data[1]),
        other => panic!("CONFIG GET {param}: {other:?}"),
    }
}

pub(crate) fn text(frame: &OwnedFrame) -> String {
    match frame {
        OwnedFrame::BlobString { data, .. } | OwnedFrame::SimpleString { data, .. } => {
            String::from_utf8_lossy(data).into_owned()
        }
        OwnedFrame::Number { data, .. } => data.to_string(),
        OwnedFrame::Null => "nil".into(),
        OwnedFrame::Array { data, .. } => format!("[{}]", data.iter().map(text).collect::<Vec<_>>().join(" ")),
        OwnedFrame::SimpleError { data, .. } => format!("ERROR {data}"),
        other => format!("{other:?}"),
    }
}

fn words(c: &mut Client, args: &[&str]) -> Vec<String> {
    match c.cmd(args) {
        OwnedFrame::Array { data, .. } => data.iter().map(text).collect(),
        other => panic!("{args:?}: {other:?}"),
    }
}

/// What a key holds, as text both servers should agree on.
pub(crate) fn canonical(c: &mut Client, key: &str) -> String {
    let kind = text(&c.cmd(&["TYPE", key]));
    let encoding = text(&c.cmd(&["OBJECT", "ENCODING", key]));
    let ttl = matches!(c.cmd(&["PTTL", key]), OwnedFrame::Number { data, .. } if data > 0);
    let contents = match kind.as_str() {
        "string" => text(&c.cmd(&["GET", key])),
        "list" => words(c, &["LRANGE", key, "0", "-1"]).join(","),
        "set" => sorted(words(c, &["SMEMBERS", key])),
        "hash" => sorted(pairs(words(c, &["HGETALL", key]))),
        "zset" => words(c, &["ZRANGE", key, "0", "-1", "WITHSCORES"]).join(","),
        "stream" => text(&c.cmd(&["XINFO", "STREAM", key, "FULL", "COUNT", "0"])),
        other => panic!("type {other}"),
    };
    format!("{kind} {encoding} ttl={ttl} {contents}")
}

/// A canonical readback without its OBJECT ENCODING word.
fn without_encoding(canonical: &str) -> String {
    let mut words: Vec<&str> = canonical.splitn(3, ' ').collect();
    words.remove(1);
    words.join(" ")
}

fn sorted(mut items: Vec<String>) -> String {
    items.sort();
    items.join(",")
}

fn pairs(items: Vec<String>) -> Vec<String> {
    items.chunks(2).map(|p| p.join("=")).collect()
}

fn dump(c: &mut Client, key: &str) -> Vec<u8> {
    match c.cmd(&["DUMP", key]) {
        OwnedFrame::BlobString { data, .. } => data.to_vec(),
        other => panic!("DUMP {key}: {other:?}"),
    }
}

fn restore(c: &mut Client, key: &str, ttl: &str, payload: &[u8]) -> OwnedFrame {
    c.send_raw(&Client::encode(&[b"RESTORE", key.as_bytes(), ttl.as_bytes(), payload, b"REPLACE"]));
    c.read()
}

/// One value, built by `commands` (on key `k`), and whether Cairn's DUMP
/// must equal Redis's byte for byte (with `rdbcompression no`).
pub(crate) struct Case {
    pub(crate) name: &'static str,
    pub(crate) commands: Vec<Vec<String>>,
    byte_identical: bool,
}

fn case(name: &'static str, byte_identical: bool, commands: &[&[&str]]) -> Case {
    let commands = commands.iter().map(|c| c.iter().map(|w| w.to_string()).collect()).collect();
    Case { name, commands, byte_identical }
}

fn bulk_case(name: &'static str, byte_identical: bool, head: &[&str], items: Vec<String>) -> Case {
    let mut command: Vec<String> = head.iter().map(|w| w.to_string()).collect();
    command.extend(items);
    Case { name, commands: vec![command], byte_identical }
}

pub(crate) fn cases() -> Vec<Case> {
    let long = "x".repeat(300);
    let random: String = (0..200u32).map(|i| char::from(b'!' + ((i * 7919 + 13) % 90) as u8)).collect();
    let mut all = vec![
        case("embstr", true, &[&["SET", "k", "hello"]]),
        case("int", true, &[&["SET", "k", "-123456"]]),
        case("int64", true, &[&["SET", "k", "1099511627776"]]),
        case("raw", true, &[&["SET", "k", &long]]),
        case("raw_varied", true, &[&["SET", "k", &random]]),
        case("appended", true, &[&["SET", "k", "12"], &["APPEND", "k", "3"]]),
        case("list_small", true, &[&["RPUSH", "k", "a", "1", "-300", "70000", "b"]]),
        case("set_intset", true, &[&["SADD", "k", "5", "-1", "70000", "1099511627776"]]),
        case("set_hashtable", false, &[&["SADD", "k", "a", "b", "c"]]),
        case(
            "zset_listpack",
            true,
            &[&["ZADD", "k", "1", "a", "2.5", "b", "0.1", "c", "inf", "d", "-inf", "e", "1e20", "f"]],
        ),
        case("hash_listpack", true, &[&["HSET", "k", "f", "1", "g", "text", "n", "-5"]]),
        case("hash_long_value", false, &[&["HSET", "k", "f", &long]]),
        case(
            "stream_simple",
            true,
            &[
                &["XADD", "k", "1-1", "a", "1", "b", "2"],
                &["XADD", "k", "1-2", "a", "3", "b", "4"],
                &["XADD", "k", "2-0", "c", "5"],
            ],
        ),
        case(
            "stream_deleted_and_setid",
            true,
            &[
                &["XADD", "k", "1-1", "a", "1"],
                &["XADD", "k", "2-1", "a", "2"],
                &["XADD", "k", "3-1", "a", "3"],
                &["XDEL", "k", "2-1"],
                &["XSETID", "k", "9-9"],
            ],
        ),
        case(
            "stream_groups",
            false,
            &[
                &["XADD", "k", "1-1", "a", "1"],
                &["XADD", "k", "1-2", "a", "2"],
                &["XADD", "k", "2-0", "b", "x"],
                &["XADD", "k", "3-0", "a", "4"],
                &["XGROUP", "CREATE", "k", "g1", "0"],
                &["XGROUP", "CREATE", "k", "g2", "$"],
                &["XREADGROUP", "GROUP", "g1", "alice", "COUNT", "2", "STREAMS", "k", ">"],
                &["XREADGROUP", "GROUP", "g1", "bob", "COUNT", "1", "STREAMS", "k", ">"],
                &["XCLAIM", "k", "g1", "bob", "0", "1-1", "RETRYCOUNT", "7"],
                &["XGROUP", "CREATECONSUMER", "k", "g2", "carol"],
                &["XDEL", "k", "1-2"],
                &["XSETID", "k", "100-5"],
            ],
        ),
        case("stream_empty", true, &[&["XADD", "k", "5-5", "a", "b"], &["XDEL", "k", "5-5"]]),
    ];
    all.push(bulk_case("list_large", true, &["RPUSH", "k"], (0..3000).map(|i| format!("element-{i}")).collect()));
    all.push(bulk_case("set_large_ints", false, &["SADD", "k"], (0..1000).map(|i| i.to_string()).collect()));
    all.push(bulk_case(
        "zset_skiplist",
        true,
        &["ZADD", "k"],
        (0..300).flat_map(|i| [format!("{}", i as f64 / 4.0), format!("m{i}")]).collect(),
    ));
    all.push(bulk_case(
        "hash_hashtable",
        false,
        &["HSET", "k"],
        (0..300).flat_map(|i| [format!("f{i}"), format!("v{i}")]).collect(),
    ));
    let mut stream_big: Vec<Vec<String>> = (1..=450)
        .map(|i| vec!["XADD".into(), "k".into(), format!("{i}-0"), "field".into(), format!("value-{i}")])
        .collect();
    stream_big.push(vec!["XDEL".into(), "k".into(), "7-0".into(), "300-0".into()]);
    all.push(Case { name: "stream_many_nodes", commands: stream_big, byte_identical: true });
    all
}

fn run(c: &mut Client, commands: &[Vec<String>]) {
    c.cmd(&["DEL", "k"]);
    for command in commands {
        let words: Vec<&str> = command.iter().map(String::as_str).collect();
        let reply = c.cmd(&words);
        assert!(!matches!(reply, OwnedFrame::SimpleError { .. }), "{words:?}: {reply:?}");
    }
}

#[test]
fn payloads_move_both_ways_and_match_redis_bytes() {
    let server = TestServer::start();
    let mut cairn = server.client();
    let Some(redis_server) = start_redis(&mut cairn) else { return };
    let mut redis = Client::connect(redis_server.addr);
    assert_eq!(redis.cmd(&["CONFIG", "SET", "rdbcompression", "no"]), simple("OK"));
    let mut identical = 0;
    for case in cases() {
        run(&mut redis, &case.commands);
        run(&mut cairn, &case.commands);
        // Redis -> Cairn, with a TTL: Cairn holds what Redis holds after
        // the same RESTORE (encodings included).
        let from_redis = dump(&mut redis, "k");
        for c in [&mut redis, &mut cairn] {
            assert_eq!(restore(c, "r", "100000", &from_redis), simple("OK"), "{}", case.name);
        }
        assert_eq!(canonical(&mut cairn, "r"), canonical(&mut redis, "r"), "Redis -> Cairn: {}", case.name);
        // Cairn -> Redis: both restore the same thing, and it is what Cairn
        // had (a string's encoding aside: RESTORE makes "123" an `int`).
        let from_cairn = dump(&mut cairn, "k");
        for c in [&mut redis, &mut cairn] {
            assert_eq!(restore(c, "c", "0", &from_cairn), simple("OK"), "{}", case.name);
        }
        let restored = canonical(&mut redis, "c");
        assert_eq!(restored, canonical(&mut cairn, "c"), "Cairn -> Redis: {}", case.name);
        assert_eq!(without_encoding(&restored), without_encoding(&canonical(&mut cairn, "k")), "{}", case.name);
        if case.byte_identical {
            assert_eq!(from_cairn, from_redis, "DUMP bytes: {}", case.name);
            identical += 1;
        }
    }
    assert!(identical >= 14);
}

#[test]
fn redis_restores_with_compression_and_errors_match() {
    let server = TestServer::start();
    let mut cairn = server.client();
    let Some(redis_server) = start_redis(&mut cairn) else { return };
    let mut redis = Client::connect(redis_server.addr);
    // LZF-compressed strings and list nodes from Redis restore in Cairn.
    run(&mut redis, &[vec!["SET".into(), "k".into(), "abc".repeat(100)]]);
    let compressed = dump(&mut redis, "k");
    assert!(compressed.len() < 100);
    assert_eq!(restore(&mut cairn, "s", "0", &compressed), simple("OK"));
    assert_eq!(cairn.cmd(&["GET", "s"]), bulk(&"abc".repeat(100)));
    // Damaged payloads get the same errors from both.
    let mut damaged = compressed.clone();
    damaged[3] ^= 0xff;
    for c in [&mut redis, &mut cairn] {
        assert_eq!(restore(c, "x", "0", &damaged), err("ERR DUMP payload version or checksum are wrong"));
        assert_eq!(c.cmd(&["DEBUG", "SET-SKIP-CHECKSUM-VALIDATION", "1"]), simple("OK"));
        assert_eq!(restore(c, "x", "0", &damaged), err("ERR Bad data format"));
        assert_eq!(c.cmd(&["DEBUG", "SET-SKIP-CHECKSUM-VALIDATION", "0"]), simple("OK"));
    }
}

/// The `stream_groups` fixture of the engine's codec tests (redis-server
/// 7.0.15): a pending entry whose stream entry was deleted, consumers with
/// seen times, a raised last ID.
const STREAM_PAYLOAD_HEX: &str = include_str!("dump_redis_stream.hex");

fn unhex(hex: &str) -> Vec<u8> {
    let hex = hex.trim();
    (0..hex.len() / 2).map(|i| u8::from_str_radix(&hex[2 * i..2 * i + 2], 16).expect("hex")).collect()
}

#[test]
fn a_restored_key_survives_a_restart() {
    let mut server = TestServer::start();
    let mut c = server.client();
    let payload = unhex(STREAM_PAYLOAD_HEX);
    assert_eq!(restore(&mut c, "x", "0", &payload), simple("OK"));
    c.cmd(&["SET", "s", "v"]);
    let s_payload = dump(&mut c, "s");
    assert_eq!(restore(&mut c, "t", "1000000", &s_payload), simple("OK"));
    let before = (canonical(&mut c, "x"), canonical(&mut c, "t"));
    assert!(before.0.contains("1-2"), "{}", before.0);
    drop(c);
    server.restart_with(|_| {});
    let mut c = server.client();
    assert_eq!((canonical(&mut c, "x"), canonical(&mut c, "t")), before);
}

/// MIGRATE between Cairn and redis-server in both directions: keys of every
/// type leave the source and arrive whole, with their TTLs.
#[test]
fn migrate_moves_keys_between_cairn_and_redis() {
    let server = TestServer::start();
    let mut cairn = server.client();
    let Some(redis_server) = start_redis(&mut cairn) else { return };
    let mut redis = Client::connect(redis_server.addr);
    let fill = |c: &mut Client, prefix: &str| {
        let key = |name: &str| format!("{prefix}{name}");
        c.cmd(&["SET", &key("s"), "hello", "PX", "100000"]);
        c.cmd(&["RPUSH", &key("l"), "a", "b", "300"]);
        c.cmd(&["HSET", &key("h"), "f", "1", "g", "two"]);
        c.cmd(&["SADD", &key("set"), "1", "2", "x"]);
        c.cmd(&["ZADD", &key("z"), "1.5", "m", "-2", "n"]);
        c.cmd(&["XADD", &key("x"), "1-1", "f", "v"]);
        c.cmd(&["XGROUP", "CREATE", &key("x"), "g", "0"]);
        ["s", "l", "h", "set", "z", "x"].map(key)
    };
    // Cairn -> Redis.
    let keys = fill(&mut cairn, "c_");
    let expected: Vec<String> = keys.iter().map(|k| without_encoding(&canonical(&mut cairn, k))).collect();
    let port = redis_server.addr.port().to_string();
    let mut migrate: Vec<&str> = vec!["MIGRATE", "127.0.0.1", &port, "", "0", "5000", "KEYS"];
    migrate.extend(keys.iter().map(String::as_str));
    assert_eq!(cairn.cmd(&migrate), simple("OK"));
    for (key, want) in keys.iter().zip(&expected) {
        assert_eq!(cairn.cmd(&["EXISTS", key]), int(0), "{key} left Cairn");
        assert_eq!(&without_encoding(&canonical(&mut redis, key)), want, "{key} in Redis");
    }
    // Redis -> Cairn (Redis sends RESTORE with its own payloads).
    let keys = fill(&mut redis, "r_");
    let expected: Vec<String> = keys.iter().map(|k| without_encoding(&canonical(&mut redis, k))).collect();
    let port = server.addr().port().to_string();
    let mut migrate: Vec<&str> = vec!["MIGRATE", "127.0.0.1", &port, "", "0", "5000", "KEYS"];
    migrate.extend(keys.iter().map(String::as_str));
    assert_eq!(redis.cmd(&migrate), simple("OK"));
    for (key, want) in keys.iter().zip(&expected) {
        assert_eq!(redis.cmd(&["EXISTS", key]), int(0), "{key} left Redis");
        assert_eq!(&without_encoding(&canonical(&mut cairn, key)), want, "{key} in Cairn");
    }
}

//! Whole RDB files between Cairn and a real redis-server 7.0.15 (found on
//! PATH; skipped with a message when missing, unless `CI` is set):
//! redis-server `SAVE` -> Cairn `--import-rdb` (every type and encoding of
//! the DUMP cases, TTLs, several databases, an expired key, a function
//! library), a restart without the flag, the refusal with it; Cairn ->
//! `redis-cli --rdb` -> `redis-check-rdb` -> redis-server started on the
//! file; and REPLCONF / SYNC / PSYNC themselves.

use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use crate::common::*;
use crate::dump_redis::{canonical, cases, redis_server_path, start_redis_with, text};
use redis_protocol::resp3::types::OwnedFrame;

const DATABASES: usize = 3;
const LIBRARY: &str = "#!lua name=movelib\nredis.register_function('movefn', function() return 'moved' end)";

/// A tool beside redis-server (redis-cli, redis-check-rdb), or None: the
/// step is skipped with a message, unless `CI` is set.
pub fn redis_tool(name: &str) -> Option<PathBuf> {
    let path = redis_server_path()?.with_file_name(name);
    if path.is_file() {
        return Some(path);
    }
    assert!(std::env::var_os("CI").is_none(), "{name} is not installed (required when CI is set)");
    eprintln!("skipping a step: {name} is not installed");
    None
}

/// Builds every DUMP case on `c`, case `i` under its own name in db
/// `i % DATABASES`, every third one with a TTL; plus a function library.
/// Returns (db, key) of each.
fn fill(c: &mut Client) -> Vec<(usize, String)> {
    let mut keys = Vec::new();
    for (i, case) in cases().iter().enumerate() {
        let db = i % DATABASES;
        c.cmd(&["SELECT", &db.to_string()]);
        for command in &case.commands {
            let words: Vec<&str> = command.iter().map(|w| if w == "k" { case.name } else { w.as_str() }).collect();
            let reply = c.cmd(&words);
            assert!(!matches!(reply, OwnedFrame::SimpleError { .. }), "{words:?}: {reply:?}");
        }
        if i % 3 == 0 {
            assert_eq!(c.cmd(&["PEXPIRE", case.name, "100000000"]), int(1));
        }
        keys.push((db, case.name.to_string()));
    }
    c.cmd(&["SELECT", "0"]);
    assert_eq!(c.cmd(&["FUNCTION", "LOAD", LIBRARY]), bulk("movelib"));
    keys
}

/// The canonical readback of every key, and each database's size.
fn readback(c: &mut Client, keys: &[(usize, String)]) -> Vec<String> {
    let mut out: Vec<String> = keys
        .iter()
        .map(|(db, key)| {
            c.cmd(&["SELECT", &db.to_string()]);
            format!("db{db} {key}: {}", canonical(c, key))
        })
        .collect();
    for db in 0..DATABASES {
        c.cmd(&["SELECT", &db.to_string()]);
        out.push(format!("db{db} size {}", text(&c.cmd(&["DBSIZE"]))));
    }
    c.cmd(&["SELECT", "0"]);
    out.push(format!("fcall {}", text(&c.cmd(&["FCALL", "movefn", "0"]))));
    out
}

/// A readback line of a raw string holding an integer, as Redis reads it
/// back from a file: `int` encoded.
fn loaded_as_int(line: &str) -> String {
    let words: Vec<&str> = line.split(' ').collect();
    match words.as_slice() {
        [db, key, "string", "raw", ttl, value] if value.parse::<i64>().is_ok() => {
            format!("{db} {key} string int {ttl} {value}")
        }
        _ => line.to_string(),
    }
}

/// Equal readbacks; otherwise names the first line that differs (shortened).
fn assert_same(actual: &[String], expected: &[String], what: &str) {
    let short = |s: &str| s.chars().take(400).collect::<String>();
    for (a, e) in actual.iter().zip(expected) {
        assert!(a == e, "{what}:\n  got      {}\n  expected {}", short(a), short(e));
    }
    assert_eq!(actual.len(), expected.len(), "{what}");
}

pub fn temp_dir(tag: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("cairn-rdbfile-{tag}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("temp dir");
    dir
}

#[test]
fn a_redis_save_imports_into_cairn_and_survives_a_restart() {
    let cairn = TestServer::start();
    let dir = temp_dir("import");
    let dir_arg = dir.to_string_lossy().into_owned();
    let Some(redis) = start_redis_with(&mut cairn.client(), &["--dir", &dir_arg, "--dbfilename", "dump.rdb"]) else {
        return;
    };
    let mut r = Client::connect(redis.addr);
    let keys = fill(&mut r);
    // A key already expired in the file: skipped on import, as Redis does.
    r.cmd(&["DEBUG", "SET-ACTIVE-EXPIRE", "0"]);
    r.cmd(&["SET", "gone", "x", "PX", "1"]);
    std::thread::sleep(Duration::from_millis(5));
    assert_eq!(r.cmd(&["SAVE"]), simple("OK"));
    // What Redis itself holds after loading the file is what Cairn must hold.
    assert_eq!(r.cmd(&["DEBUG", "RELOAD", "NOSAVE"]), simple("OK"));
    let expected = readback(&mut r, &keys);
    assert!(expected.contains(&"db0 size 7".to_string()), "the expired key is skipped by Redis too");
    let file = dir.join("dump.rdb");

    let import = |config: &mut cairn_server::Config| {
        config.databases = DATABASES;
        config.import_rdb = Some(file.clone());
    };
    let mut imported = cairn.start_beside(import);
    let mut c = imported.client();
    assert_same(&readback(&mut c, &keys), &expected, "after the import");
    assert_eq!(c.cmd(&["EXISTS", "gone"]), int(0));
    assert!(imported
        .dir
        .read_dir()
        .expect("data dir")
        .flatten()
        .any(|e| e.file_name().to_string_lossy().ends_with(".snap")));

    // Restarted without the flag: the data is there, from the data directory.
    imported.restart_with(|config| config.databases = DATABASES);
    assert_same(&readback(&mut imported.client(), &keys), &expected, "after a restart");

    // With the flag again on a data directory that holds data: refused.
    if let Some(running) = imported.running.take() {
        running.stop();
    }
    let mut again = cairn_server::Config::for_tests(&imported.dir);
    import(&mut again);
    let refused = cairn_server::start(again, cairn_server::Shutdown::new()).map(|_| ()).unwrap_err().to_string();
    assert!(refused.contains("already holds Cairn data"), "{refused}");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn imports_are_refused_for_missing_databases_and_damaged_files() {
    let dir = temp_dir("refused");
    let server = TestServer::start();
    let mut c = server.client();
    c.cmd(&["SELECT", "2"]);
    c.cmd(&["SET", "k", "v"]);
    let file = dir.join("three.rdb");
    fetch_rdb(server.addr(), &file);
    let start = |tweak: &dyn Fn(&mut cairn_server::Config)| {
        let data = dir.join(format!("data-{}", rand_suffix()));
        let mut config = cairn_server::Config::for_tests(&data);
        config.import_rdb = Some(file.clone());
        tweak(&mut config);
        cairn_server::start(config, cairn_server::Shutdown::new()).map(|r| r.stop()).map_err(|e| e.to_string())
    };
    let too_few = start(&|c| c.databases = 2).unwrap_err();
    assert!(too_few.contains("database 2") && too_few.contains("--databases"), "{too_few}");
    let mut bytes = std::fs::read(&file).expect("read");
    let last = bytes.len() - 1;
    bytes[last] ^= 0xff;
    std::fs::write(&file, &bytes).expect("write");
    let damaged = start(&|_| {}).unwrap_err();
    assert!(damaged.contains("wrong RDB checksum"), "{damaged}");
    std::fs::write(&file, &bytes[..bytes.len() / 2]).expect("write");
    let truncated = start(&|_| {}).unwrap_err();
    assert!(truncated.contains("truncated") && truncated.contains("byte"), "{truncated}");
    let missing = dir.join("missing.rdb");
    let mut config = cairn_server::Config::for_tests(&dir.join("data-missing"));
    config.import_rdb = Some(missing);
    let error = cairn_server::start(config, cairn_server::Shutdown::new()).map(|r| r.stop()).unwrap_err().to_string();
    assert!(error.contains("cannot open the file"), "{error}");
    let _ = std::fs::remove_dir_all(&dir);
}

fn rand_suffix() -> u128 {
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).expect("clock").as_nanos()
}

/// The raw reply stream of `REPLCONF rdb-only 1` + `command`, read to the
/// connection's end.
pub fn raw_sync(addr: std::net::SocketAddr, command: &[&str]) -> Vec<u8> {
    let mut c = Client::connect(addr);
    assert_eq!(c.cmd(&["REPLCONF", "rdb-only", "1"]), simple("OK"));
    let args: Vec<&[u8]> = command.iter().map(|w| w.as_bytes()).collect();
    c.send_raw(&Client::encode(&args));
    let mut out = Vec::new();
    c.stream.read_to_end(&mut out).expect("read to the end");
    out
}

/// The RDB in Redis's diskless form (after any keepalive newlines):
/// `$EOF:<40-character mark>\r\n`, the bytes, the same mark, then the end
/// of the connection.
pub fn rdb_payload(reply: &[u8]) -> &[u8] {
    const MARK: usize = 40;
    let start = reply.iter().position(|&b| b != b'\n').expect("a reply");
    let reply = &reply[start..];
    let head = String::from_utf8_lossy(&reply[..reply.len().min(80)]).into_owned();
    assert!(reply.starts_with(b"$EOF:") && reply[5 + MARK..].starts_with(b"\r\n"), "{head:?}");
    let mark = &reply[5..5 + MARK];
    let payload = &reply[5 + MARK + 2..];
    assert!(payload.len() >= MARK && payload.ends_with(mark), "the connection ends right after the mark");
    &payload[..payload.len() - MARK]
}

/// The image over a raw SYNC, written to `file`.
pub fn fetch_rdb(addr: std::net::SocketAddr, file: &Path) {
    let reply = raw_sync(addr, &["SYNC"]);
    std::fs::write(file, rdb_payload(&reply)).expect("write the image");
}

#[test]
fn sync_sends_an_rdb_image_then_closes() {
    let server = TestServer::start();
    let mut c = server.client();
    c.cmd(&["SET", "a", "1"]);
    c.cmd(&["SELECT", "5"]);
    c.cmd(&["RPUSH", "l", "x", "y"]);
    c.cmd(&["PEXPIRE", "l", "100000"]);
    let reply = raw_sync(server.addr(), &["SYNC"]);
    let image = rdb_payload(&reply);
    assert_eq!(&image[..9], b"REDIS0010");
    let items: Vec<_> =
        cairn_engine::rdb::FileReader::new(image).expect("header").collect::<Result<_, _>>().expect("items");
    // Written shard by shard: the databases' keys come in the shards' order.
    let mut keys: Vec<(u64, &[u8], bool)> =
        items.iter().map(|i| (i.db, &i.key[..], i.expire_at_ms.is_some())).collect();
    keys.sort();
    assert_eq!(keys, [(0, &b"a"[..], false), (5, &b"l"[..], true)]);

    // PSYNC: +FULLRESYNC <replid> 0 first.
    let reply = raw_sync(server.addr(), &["PSYNC", "?", "-1"]);
    let line_end = reply.windows(2).position(|w| w == b"\r\n").expect("line");
    let line = String::from_utf8_lossy(&reply[..line_end]).into_owned();
    assert!(line.starts_with("+FULLRESYNC ") && line.ends_with(" 0") && line.len() == 12 + 40 + 2, "{line}");
    let again: Vec<_> = cairn_engine::rdb::FileReader::new(rdb_payload(&reply[line_end + 2..]))
        .expect("header")
        .collect::<Result<_, _>>()
        .expect("items");
    let mut again: Vec<(u64, Vec<u8>)> = again.into_iter().map(|i| (i.db, i.key)).collect();
    again.sort();
    assert_eq!(again, [(0, b"a".to_vec()), (5, b"l".to_vec())]);

    // Only functions (redis-cli --functions-rdb), or nothing.
    let mut f = Client::connect(server.addr());
    assert_eq!(f.cmd(&["REPLCONF", "rdb-filter-only", "functions"]), simple("OK"));
    assert_eq!(f.cmd(&["REPLCONF", "rdb-filter-only", "keys"]), err("ERR Unsupported rdb-filter-only option: keys"));
    assert_eq!(f.cmd(&["REPLCONF", "rdb-only", "1"]), simple("OK"));
    f.send_raw(b"SYNC\r\n");
    let mut out = Vec::new();
    f.stream.read_to_end(&mut out).expect("read");
    let only_functions = cairn_engine::rdb::FileReader::new(rdb_payload(&out)).expect("header");
    assert_eq!(only_functions.count(), 0);
}

#[test]
fn sync_without_rdb_only_inside_multi_or_without_auth_is_refused() {
    let server = TestServer::start_with(|c| c.requirepass = Some("pw".into()));
    let mut c = server.client();
    assert_eq!(error_text(&c.cmd(&["SYNC"])), "NOAUTH Authentication required.");
    assert_eq!(c.cmd(&["AUTH", "pw"]), simple("OK"));
    let refused = error_text(&c.cmd(&["SYNC"]));
    assert!(refused.starts_with("ERR Cairn has no replication"), "{refused}");
    assert!(error_text(&c.cmd(&["PSYNC", "?", "-1"])).starts_with("ERR Cairn has no replication"));
    assert_eq!(c.cmd(&["REPLCONF", "rdb-only", "1"]), simple("OK"));
    assert_eq!(c.cmd(&["MULTI"]), simple("OK"));
    assert_eq!(error_text(&c.cmd(&["SYNC"])), "ERR Command not allowed inside a transaction");
    assert_eq!(c.cmd(&["DISCARD"]), simple("OK"));
    assert_eq!(c.cmd(&["PING"]), simple("PONG"));
}

/// REPLCONF's replies, as redis-server 7.0.15 gives them.
#[test]
fn replconf_answers_as_redis() {
    let cairn = TestServer::start();
    let Some(redis) = start_redis_with(&mut cairn.client(), &[]) else { return };
    let mut r = Client::connect(redis.addr);
    let mut c = cairn.client();
    for command in [
        &["REPLCONF"][..],
        &["REPLCONF", "capa"],
        &["REPLCONF", "capa", "eof", "capa", "psync2"],
        &["REPLCONF", "listening-port", "6380"],
        &["REPLCONF", "listening-port", "x"],
        &["REPLCONF", "ip-address", "10.0.0.1"],
        &["REPLCONF", "rdb-only", "0"],
        &["REPLCONF", "rdb-only", "2"],
        &["REPLCONF", "rdb-only", "z"],
        &["REPLCONF", "rdb-filter-only", ""],
        &["REPLCONF", "rdb-filter-only", "functions"],
        &["REPLCONF", "rdb-filter-only", "nope"],
        &["REPLCONF", "nope", "1"],
    ] {
        assert_eq!(c.cmd(command), r.cmd(command), "{command:?}");
    }
}

#[test]
fn redis_cli_rdb_exports_a_file_redis_server_loads() {
    let cairn = TestServer::start_with(|config| config.databases = DATABASES);
    let mut c = cairn.client();
    let keys = fill(&mut c);
    let expected = readback(&mut c, &keys);
    let Some(cli) = redis_tool("redis-cli") else { return };
    let dir = temp_dir("export");
    let file = dir.join("export.rdb");
    let port = cairn.addr().port().to_string();
    let output =
        Command::new(cli).args(["-h", "127.0.0.1", "-p", &port, "--rdb"]).arg(&file).output().expect("redis-cli runs");
    assert!(output.status.success(), "redis-cli --rdb: {}", String::from_utf8_lossy(&output.stderr));
    assert!(String::from_utf8_lossy(&output.stderr).contains("Transfer finished with success"));
    if let Some(check) = redis_tool("redis-check-rdb") {
        let checked = Command::new(check).arg(&file).output().expect("redis-check-rdb runs");
        let report = String::from_utf8_lossy(&checked.stdout);
        assert!(checked.status.success() && report.contains("RDB looks OK"), "{report}");
    }
    let dir_arg = dir.to_string_lossy().into_owned();
    let args = ["--dir", &dir_arg, "--dbfilename", "export.rdb", "--databases", "3"];
    let Some(redis) = start_redis_with(&mut c, &args) else { return };
    let mut r = Client::connect(redis.addr);
    // Redis loads a string saved in integer form as an int (RDB_LOAD_ENC),
    // so an integer APPEND made raw in Cairn reads back int-encoded there.
    let expected: Vec<String> = expected.iter().map(|line| loaded_as_int(line)).collect();
    assert_same(&readback(&mut r, &keys), &expected, "redis-server on the exported file");
    drop(redis);
    let _ = std::fs::remove_dir_all(&dir);
}

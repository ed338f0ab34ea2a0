//! Reopening recovers data in every tier; the lock file; the same format as
//! the server, both ways.

mod common;

use std::io::{BufRead, BufReader, Write};
use std::net::TcpStream;
use std::time::Duration;

use cairn_embedded::{Batch, Db, DbOptions, Error, SetOptions, Tier, LOCK_FILE};
use common::TempDir;

const TIERS: [Tier; 4] = [Tier::None, Tier::Async, Tier::Everysec, Tier::Sync];

fn write_some(db: &Db) {
    db.set("plain", "v").expect("set");
    db.incr_by("n", 5).expect("incr");
    db.set_with("ttl", "t", SetOptions::ttl(Duration::from_secs(600))).expect("set ttl");
    db.set("deleted", "x").expect("set");
    db.del("deleted").expect("del");
    let mut batch = Batch::new();
    batch.set("b1", "1").set("b2", "2").incr("n");
    db.batch(&batch).expect("batch");
}

fn check_some(db: &Db) {
    assert_eq!(db.get("plain").expect("get").as_deref(), Some(&b"v"[..]));
    assert_eq!(db.get("n").expect("get").as_deref(), Some(&b"6"[..]));
    assert!(matches!(db.ttl("ttl").expect("ttl"), cairn_embedded::Ttl::Expires(_)));
    assert_eq!(db.get("deleted").expect("get"), None);
    assert_eq!(db.get("b2").expect("get").as_deref(), Some(&b"2"[..]));
}

#[test]
fn reopen_after_close_recovers_every_tier() {
    for tier in TIERS {
        let dir = TempDir::new(&format!("reopen-{tier}"));
        let db = Db::open(dir.path(), DbOptions::with_durability(tier)).expect("open");
        write_some(&db);
        db.close().expect("close");
        let db = Db::open(dir.path(), DbOptions::with_durability(tier)).expect("reopen");
        check_some(&db);
        drop(db);
        // And in another tier: the format is the same whatever the tier.
        let other = if tier == Tier::Sync { Tier::Async } else { Tier::Sync };
        let db = Db::open(dir.path(), DbOptions::with_durability(other)).expect("reopen in another tier");
        check_some(&db);
    }
}

#[test]
fn sync_tier_keeps_acked_writes_without_close() {
    let dir = TempDir::new("forget");
    let db = Db::open(dir.path(), DbOptions::default()).expect("open");
    for i in 0..100 {
        db.set(format!("k{i}"), format!("{i}")).expect("set");
    }
    // Nothing runs at close: no final sync, no snapshot. What the calls
    // acknowledged must already be on disk. The lock would be held by the
    // leaked descriptor, so the log is read by a fresh Db only after it is
    // released: the leaked Db keeps running its threads, reading is fine.
    let path = dir.path().to_path_buf();
    let copy = TempDir::new("forget-copy");
    std::fs::create_dir_all(copy.path()).expect("mkdir");
    for entry in std::fs::read_dir(&path).expect("read dir") {
        let entry = entry.expect("entry");
        if entry.file_name() != LOCK_FILE {
            std::fs::copy(entry.path(), copy.path().join(entry.file_name())).expect("copy");
        }
    }
    std::mem::forget(db);
    let db = Db::open(copy.path(), DbOptions::default()).expect("open the copy");
    for i in 0..100 {
        assert_eq!(db.get(format!("k{i}")).expect("get"), Some(format!("{i}").into_bytes()), "k{i}");
    }
}

#[test]
fn a_second_open_is_refused_until_close() {
    let dir = TempDir::new("lock");
    let db = Db::open(dir.path(), DbOptions::default()).expect("open");
    assert!(dir.path().join(LOCK_FILE).exists());
    match Db::open(dir.path(), DbOptions::default()) {
        Err(Error::Locked { path, holder }) => {
            assert_eq!(path, dir.path().join(LOCK_FILE));
            assert!(holder.contains(&std::process::id().to_string()), "{holder}");
        }
        other => panic!("expected Locked, got {other:?}"),
    }
    db.close().expect("close");
    let db = Db::open(dir.path(), DbOptions::default()).expect("open after close");
    drop(db);
    Db::open(dir.path(), DbOptions::default()).expect("open after drop");
}

/// A minimal RESP client for the server side of the tests.
struct Resp {
    stream: BufReader<TcpStream>,
}

impl Resp {
    fn connect(addr: std::net::SocketAddr) -> Resp {
        let stream = TcpStream::connect(addr).expect("connect");
        Resp { stream: BufReader::new(stream) }
    }

    /// Sends a command; returns the first line of the reply and, for a bulk
    /// string, its body.
    fn cmd(&mut self, args: &[&str]) -> String {
        let mut out = format!("*{}\r\n", args.len());
        for a in args {
            out.push_str(&format!("${}\r\n{a}\r\n", a.len()));
        }
        self.stream.get_mut().write_all(out.as_bytes()).expect("write");
        let mut line = String::new();
        self.stream.read_line(&mut line).expect("read");
        if line.starts_with('$') && line != "$-1\r\n" {
            let mut body = String::new();
            self.stream.read_line(&mut body).expect("read body");
            return body.trim_end().to_string();
        }
        line.trim_end().to_string()
    }
}

fn server_config(dir: &TempDir) -> cairn_server::Config {
    cairn_server::Config { durability: Tier::Sync, ..cairn_server::Config::for_tests(dir.path()) }
}

#[test]
fn server_and_db_exclude_each_other_and_share_the_format() {
    let dir = TempDir::new("server");
    // The server writes; an embedded Db cannot open the directory meanwhile.
    let running = cairn_server::start(server_config(&dir), cairn_server::Shutdown::new()).expect("server starts");
    let mut client = Resp::connect(running.addr);
    assert_eq!(client.cmd(&["SET", "from-server", "s"]), "+OK");
    assert_eq!(client.cmd(&["INCRBY", "n", "7"]), ":7");
    assert_eq!(client.cmd(&["SELECT", "2"]), "+OK");
    assert_eq!(client.cmd(&["SET", "in-db-2", "x"]), "+OK");
    assert!(matches!(Db::open(dir.path(), DbOptions::default()), Err(Error::Locked { .. })));
    drop(client);
    running.stop();
    // The embedded Db reads what the server wrote, and writes.
    let db = Db::open(dir.path(), DbOptions::default()).expect("open after the server stopped");
    assert_eq!(db.get("from-server").expect("get").as_deref(), Some(&b"s"[..]));
    assert_eq!(db.incr("n").expect("incr"), 8);
    db.set("from-db", "d").expect("set");
    // The server cannot start on the directory while the Db holds it.
    match cairn_server::start(server_config(&dir), cairn_server::Shutdown::new()) {
        Err(cairn_server::StartError::Locked(e)) => {
            assert!(e.to_string().contains(&dir.path().join(LOCK_FILE).display().to_string()), "{e}")
        }
        Err(e) => panic!("expected Locked, got {e}"),
        Ok(_) => panic!("the server started on a locked directory"),
    }
    db.close().expect("close");
    // The server reads what the Db wrote.
    let running = cairn_server::start(server_config(&dir), cairn_server::Shutdown::new()).expect("server restarts");
    let mut client = Resp::connect(running.addr);
    assert_eq!(client.cmd(&["GET", "from-db"]), "d");
    assert_eq!(client.cmd(&["GET", "n"]), "8");
    assert_eq!(client.cmd(&["SELECT", "2"]), "+OK");
    assert_eq!(client.cmd(&["GET", "in-db-2"]), "x");
    drop(client);
    running.stop();
}

/// Writers racing to run the log's round themselves, against the syncer
/// thread: every call returns (no deadlock) and every write is there after
/// a reopen.
#[test]
fn sync_tier_writers_share_rounds_and_all_finish() {
    let dir = TempDir::new("race");
    let db = std::sync::Arc::new(Db::open(dir.path(), DbOptions::default()).expect("open"));
    let (done_tx, done_rx) = std::sync::mpsc::channel();
    let writers = 16;
    let per_writer = 300;
    for w in 0..writers {
        let db = db.clone();
        let done = done_tx.clone();
        std::thread::spawn(move || {
            for n in 0..per_writer {
                db.set(format!("w{w}:{n}"), [b'x'; 256]).expect("set");
            }
            drop(db);
            let _ = done.send(w);
        });
    }
    for _ in 0..writers {
        done_rx.recv_timeout(Duration::from_secs(120)).expect("a writer is stuck (deadlock in the durable wait?)");
    }
    let db = std::sync::Arc::try_unwrap(db).expect("writers are done");
    db.close().expect("close");
    let db = Db::open(dir.path(), DbOptions::default()).expect("reopen");
    let keys = db.command(&[b"DBSIZE"]).expect("dbsize");
    assert_eq!(keys, cairn_embedded::Reply::Int(writers * per_writer));
}

//! Every typed call, errors, TTL expiry, batches and the generic command call.

mod common;

use std::time::{Duration, Instant};

use cairn_embedded::{Batch, Db, DbOptions, Error, Reply, SetOptions, Tier, Ttl};
use common::TempDir;

fn open(dir: &TempDir) -> Db {
    Db::open(dir.path(), DbOptions::default()).expect("open")
}

#[test]
fn get_set_del_exists() {
    let dir = TempDir::new("basic");
    let db = open(&dir);
    assert_eq!(db.durability(), Tier::Sync);
    assert_eq!(db.get("k").expect("get"), None);
    assert!(!db.exists("k").expect("exists"));
    db.set("k", b"v\x00\xff").expect("set");
    assert_eq!(db.get("k").expect("get").as_deref(), Some(&b"v\x00\xff"[..]));
    assert!(db.exists("k").expect("exists"));
    assert!(db.del("k").expect("del"));
    assert!(!db.del("k").expect("del again"));
    db.set("a", "1").expect("set a");
    db.set("b", "2").expect("set b");
    assert_eq!(db.del_many(&["a", "b", "c"]).expect("del many"), 2);
    db.close().expect("close");
}

#[test]
fn set_conditions_and_ttl() {
    let dir = TempDir::new("setopts");
    let db = open(&dir);
    assert!(!db.set_with("k", "x", SetOptions::if_present()).expect("xx on missing"));
    assert!(db.set_with("k", "1", SetOptions::if_absent()).expect("nx on missing"));
    assert!(!db.set_with("k", "2", SetOptions::if_absent()).expect("nx on present"));
    assert_eq!(db.get("k").expect("get").as_deref(), Some(&b"1"[..]));
    assert!(db.set_with("k", "3", SetOptions::if_present()).expect("xx on present"));
    assert_eq!(db.ttl("k").expect("ttl"), Ttl::Persistent);
    assert_eq!(db.ttl("missing").expect("ttl"), Ttl::Missing);
    db.set_with("t", "v", SetOptions::ttl(Duration::from_secs(100))).expect("set px");
    match db.ttl("t").expect("ttl") {
        Ttl::Expires(left) => assert!(left > Duration::from_secs(90) && left <= Duration::from_secs(100)),
        other => panic!("expected a TTL, got {other:?}"),
    }
    let keep = SetOptions { keep_ttl: true, ..SetOptions::default() };
    db.set_with("t", "w", keep).expect("keepttl");
    assert!(matches!(db.ttl("t").expect("ttl"), Ttl::Expires(_)));
    assert!(db.persist("t").expect("persist"));
    assert_eq!(db.ttl("t").expect("ttl"), Ttl::Persistent);
    assert!(matches!(db.set_with("z", "v", SetOptions::ttl(Duration::ZERO)), Err(Error::Server(_))));
}

#[test]
fn incr_and_type_errors() {
    let dir = TempDir::new("incr");
    let db = open(&dir);
    assert_eq!(db.incr("n").expect("incr"), 1);
    assert_eq!(db.incr_by("n", 41).expect("incrby"), 42);
    assert_eq!(db.incr_by("n", -50).expect("decr"), -8);
    db.set("s", "abc").expect("set");
    assert!(matches!(db.incr("s"), Err(Error::NotInteger)));
    db.set("max", i64::MAX.to_string()).expect("set max");
    assert!(matches!(db.incr("max"), Err(Error::NotInteger)));
    db.command(&[b"LPUSH", b"list", b"x"]).expect("lpush");
    assert!(matches!(db.get("list"), Err(Error::WrongType)));
    assert!(matches!(db.incr("list"), Err(Error::WrongType)));
    assert!(matches!(db.command(&[b"NOSUCHCOMMAND"]), Err(Error::Server(m)) if m.contains("unknown command")));
    assert!(matches!(db.command(&[]), Err(Error::Server(_))));
}

#[test]
fn expiry_is_active_and_lazy() {
    let dir = TempDir::new("expiry");
    let db = open(&dir);
    db.set_with("lazy", "v", SetOptions::ttl(Duration::from_millis(30))).expect("set");
    db.set("active", "v").expect("set");
    assert!(db.expire("active", Duration::from_millis(30)).expect("expire"));
    assert!(!db.expire("missing", Duration::from_millis(30)).expect("expire missing"));
    std::thread::sleep(Duration::from_millis(60));
    assert_eq!(db.get("lazy").expect("get"), None);
    // The background pass deletes `active` without anyone reading it.
    let deadline = Instant::now() + Duration::from_secs(5);
    loop {
        let keys = db.command(&[b"DBSIZE"]).expect("dbsize");
        if keys == Reply::Int(0) {
            break;
        }
        assert!(Instant::now() < deadline, "active expiry did not run: {keys:?}");
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[test]
fn batch_runs_atomically_in_order() {
    let dir = TempDir::new("batch");
    let db = open(&dir);
    assert_eq!(db.batch(&Batch::new()).expect("empty batch"), vec![]);
    let mut batch = Batch::new();
    batch.set("a", "1").incr("a").incr_by("a", 10).command(&[b"LPUSH", b"l", b"x"]).incr("l").del("gone");
    batch.expire("a", Duration::from_secs(100));
    let replies = db.batch(&batch).expect("batch");
    assert_eq!(replies.len(), 7);
    assert_eq!(replies[0], Reply::Status("OK".into()));
    assert_eq!(replies[1], Reply::Int(2));
    assert_eq!(replies[2], Reply::Int(12));
    assert_eq!(replies[3], Reply::Int(1));
    assert!(matches!(&replies[4], Reply::Error(m) if m.starts_with("WRONGTYPE")));
    assert_eq!(replies[5], Reply::Int(0));
    assert_eq!(replies[6], Reply::Int(1));
    // A command refused while queueing aborts everything.
    let mut bad = Batch::new();
    bad.set("b", "1").command(&[b"GET"]);
    assert!(matches!(db.batch(&bad), Err(Error::Server(m)) if m.contains("wrong number of arguments")));
    assert_eq!(db.get("b").expect("get"), None);
    // The session used by the aborted batch does not leak MULTI into later calls.
    assert_eq!(db.incr("a").expect("incr"), 13);
}

#[test]
fn connection_state_does_not_leak_between_calls() {
    let dir = TempDir::new("state");
    let db = open(&dir);
    assert_eq!(db.command(&[b"SELECT", b"3"]).expect("select"), Reply::Status("OK".into()));
    db.set("k", "v").expect("set");
    assert_eq!(db.command(&[b"MULTI"]).expect("multi"), Reply::Status("OK".into()));
    assert_eq!(db.get("k").expect("get").as_deref(), Some(&b"v"[..]));
    assert_eq!(db.command(&[b"BLPOP", b"empty", b"0"]).expect("blpop"), Reply::Nil);
    assert_eq!(
        db.command(&[b"WAITAOF", b"1", b"0", b"0"]).expect("waitaof"),
        Reply::Array(vec![Reply::Int(1), Reply::Int(0)])
    );
}

#[test]
fn many_threads_share_one_db() {
    let dir = TempDir::new("threads");
    let db = open(&dir);
    let threads = 8;
    let per_thread = 200;
    std::thread::scope(|s| {
        for t in 0..threads {
            let db = &db;
            s.spawn(move || {
                for i in 0..per_thread {
                    db.set(format!("t{t}:{i}"), format!("{i}")).expect("set");
                    db.incr("counter").expect("incr");
                }
            });
        }
    });
    assert_eq!(db.get("counter").expect("get").as_deref(), Some(format!("{}", threads * per_thread).as_bytes()));
    assert_eq!(db.command(&[b"DBSIZE"]).expect("dbsize"), Reply::Int(threads as i64 * per_thread as i64 + 1));
    db.close().expect("close");
    let db = open(&dir);
    assert_eq!(db.get("counter").expect("get").as_deref(), Some(format!("{}", threads * per_thread).as_bytes()));
    assert_eq!(db.get("t7:199").expect("get").as_deref(), Some(&b"199"[..]));
}

#[test]
fn db_is_send_and_sync() {
    fn assert_send_sync<T: Send + Sync>() {}
    assert_send_sync::<Db>();
    assert_send_sync::<std::sync::Arc<Db>>();
}

#[test]
fn a_batch_may_select_another_database() {
    let dir = TempDir::new("select");
    let db = open(&dir);
    let mut batch = Batch::new();
    batch.command(&[b"SELECT", b"2"]).set("k", "in 2").command(&[b"GET", b"k"]);
    let replies = db.batch(&batch).expect("batch");
    assert_eq!(replies[2], Reply::Bulk(b"in 2".to_vec()));
    assert_eq!(db.get("k").expect("get in 0"), None);
    db.close().expect("close");
    let db = open(&dir);
    let mut batch = Batch::new();
    batch.command(&[b"SELECT", b"2"]).command(&[b"GET", b"k"]);
    assert_eq!(db.batch(&batch).expect("batch")[1], Reply::Bulk(b"in 2".to_vec()));
}

#[test]
fn scripts_run_in_process_alone_and_in_a_batch() {
    let dir = TempDir::new("scripts");
    let db = open(&dir);
    let incr: &[&[u8]] = &[b"EVAL", b"return redis.call('incr', KEYS[1])", b"1", b"n"];
    assert_eq!(db.command(incr).expect("eval"), Reply::Int(1));
    let mut batch = Batch::new();
    batch.command(incr).incr("n").command(incr);
    assert_eq!(db.batch(&batch).expect("batch"), vec![Reply::Int(2), Reply::Int(3), Reply::Int(4)]);
    db.close().expect("close");
    // The scripts' writes were logged: they survive a reopen.
    let db = open(&dir);
    assert_eq!(db.get("n").expect("get").as_deref(), Some(&b"4"[..]));
}

#[test]
fn select_gives_a_handle_on_another_database() {
    let dir = TempDir::new("select");
    let db = open(&dir);
    let two = db.select(2).expect("select 2");
    assert_eq!(two.index(), 2);
    two.set("k", "in 2").expect("set in 2");
    assert_eq!(two.incr("n").expect("incr in 2"), 1);
    let mut batch = Batch::new();
    batch.incr("n").command(&[b"GET", b"k"]);
    assert_eq!(two.batch(&batch).expect("batch in 2"), vec![Reply::Int(2), Reply::Bulk(b"in 2".to_vec())]);
    assert_eq!(db.get("k").expect("get in 0"), None);
    assert_eq!(db.command(&[b"DBSIZE"]).expect("dbsize 0"), Reply::Int(0));
    assert_eq!(two.command(&[b"DBSIZE"]).expect("dbsize 2"), Reply::Int(2));
    assert!(matches!(db.select(16), Err(Error::Server(m)) if m == "ERR DB index is out of range"));

    // Closing one handle while another is open closes nothing.
    assert!(matches!(db.close(), Err(Error::InUse(1))));
    assert_eq!(two.get("k").expect("still open").as_deref(), Some(&b"in 2"[..]));
    two.close().expect("the last handle closes the directory");
    let db = open(&dir);
    assert_eq!(db.select(2).expect("select 2").get("k").expect("get").as_deref(), Some(&b"in 2"[..]));
}

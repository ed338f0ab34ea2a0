//! Snapshots keep every bit of a stream's consumer groups: pending entries
//! whose stream entry was deleted or trimmed, consumers' seen times,
//! delivery times and counts, read counters. After DEBUG RELOAD, SAVE and a
//! restart, and an automatic snapshot and a restart, XINFO STREAM FULL,
//! XPENDING and XINFO CONSUMERS answer as before (idle times grown by the
//! time that passed only), as redis-server 7.0.15 does after its DEBUG
//! RELOAD (compared by hand). Snapshots written before `CAIRN.XCONSUMER`
//! existed still load.

use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

use cairn_engine::durability::snapshot::SnapshotWriter;
use cairn_engine::durability::{OsStorage, Storage, Tier};
use redis_protocol::resp3::types::OwnedFrame;

use crate::common::*;

const KEYS: &[&str] = &["s1", "empty", "big", "gone"];
const GROUPS: &[&str] = &["g", "g2", "g3"];
/// Entries in `big`: its PEL needs several chunks of the snapshot's
/// consumer command (128 entries each).
const BIG: usize = 300;

fn pause() {
    std::thread::sleep(Duration::from_millis(15));
}

/// Groups and consumers in every shape the snapshot must keep.
fn build(c: &mut Client) {
    for i in 1..=5 {
        c.cmd(&["XADD", "s1", &format!("{i}-0"), "f", &i.to_string()]);
    }
    c.cmd(&["XGROUP", "CREATE", "s1", "g", "0"]);
    c.cmd(&["XREADGROUP", "GROUP", "g", "alice", "COUNT", "3", "STREAMS", "s1", ">"]);
    pause();
    // alice's 1-0, 2-0 and 3-0 lose their entries; Redis keeps them pending.
    c.cmd(&["XDEL", "s1", "1-0"]);
    c.cmd(&["XTRIM", "s1", "MAXLEN", "2"]);
    c.cmd(&["XGROUP", "CREATECONSUMER", "s1", "g", "idle"]);
    pause();
    c.cmd(&["XREADGROUP", "GROUP", "g", "bob", "STREAMS", "s1", ">"]);
    c.cmd(&["XCLAIM", "s1", "g", "bob", "0", "4-0", "TIME", "12345", "RETRYCOUNT", "7", "JUSTID"]);
    pause();
    c.cmd(&["XREADGROUP", "GROUP", "g", "carol", "STREAMS", "s1", "0"]); // no pending: only seen
    c.cmd(&["XGROUP", "CREATE", "s1", "g2", "2-0", "ENTRIESREAD", "1"]);
    c.cmd(&["XGROUP", "CREATE", "s1", "g3", "$"]);
    c.cmd(&["XGROUP", "CREATE", "empty", "g", "$", "MKSTREAM"]);
    c.cmd(&["XGROUP", "CREATECONSUMER", "empty", "g", "lonely"]);
    for i in 1..=BIG {
        c.cmd(&["XADD", "big", &format!("{i}-1"), "f", "v"]);
    }
    c.cmd(&["XGROUP", "CREATE", "big", "g", "0"]);
    c.cmd(&["XREADGROUP", "GROUP", "g", "a", "COUNT", "200", "STREAMS", "big", ">"]);
    pause();
    c.cmd(&["XREADGROUP", "GROUP", "g", "b", "STREAMS", "big", ">"]);
    c.cmd(&["XTRIM", "big", "MINID", "150"]);
    // Delivered again: 150-1, 151-1, 152-1 now have a delivery count of 2.
    c.cmd(&["XREADGROUP", "GROUP", "g", "a", "COUNT", "3", "STREAMS", "big", "149-9"]);
    c.cmd(&["XADD", "gone", "1-1", "a", "b"]);
    c.cmd(&["XGROUP", "CREATE", "gone", "g", "0"]);
    c.cmd(&["XREADGROUP", "GROUP", "g", "c", "STREAMS", "gone", ">"]);
    c.cmd(&["XDEL", "gone", "1-1"]);
    pause();
}

/// Idle times in replies, taken out so the rest compares exactly.
#[derive(Default, Debug)]
struct Idles(Vec<i64>);

/// `frame` with the integer after each `idle` (XINFO CONSUMERS) replaced by
/// -1, the integers collected into `idles`.
fn without_idle(frame: OwnedFrame, idles: &mut Idles) -> OwnedFrame {
    let OwnedFrame::Array { data, attributes } = frame else { return frame };
    let mut out = Vec::with_capacity(data.len());
    let mut after_idle = false;
    for item in data {
        match item {
            OwnedFrame::Number { data: n, .. } if after_idle => {
                idles.0.push(n);
                out.push(int(-1));
            }
            other => {
                after_idle = other == bulk("idle");
                out.push(without_idle(other, idles));
                continue;
            }
        }
        after_idle = false;
    }
    OwnedFrame::Array { data: out, attributes }
}

/// XPENDING's extended form with each row's idle time (third) taken out.
fn pending_rows_without_idle(frame: OwnedFrame, idles: &mut Idles) -> OwnedFrame {
    let OwnedFrame::Array { data, attributes } = frame else { return frame };
    let rows = data
        .into_iter()
        .map(|row| match row {
            OwnedFrame::Array { mut data, attributes } if data.len() == 4 => {
                if let OwnedFrame::Number { data: n, .. } = data[2] {
                    idles.0.push(n);
                }
                data[2] = int(-1);
                OwnedFrame::Array { data, attributes }
            }
            other => other,
        })
        .collect();
    OwnedFrame::Array { data: rows, attributes }
}

/// Everything the groups answer, idle times apart.
fn read_back(c: &mut Client) -> (Vec<(String, OwnedFrame)>, Idles) {
    let mut out = Vec::new();
    let mut idles = Idles::default();
    for key in KEYS {
        out.push((format!("{key} FULL"), c.cmd(&["XINFO", "STREAM", key, "FULL", "COUNT", "0"])));
        out.push((format!("{key} GROUPS"), c.cmd(&["XINFO", "GROUPS", key])));
        for group in GROUPS {
            out.push((format!("{key} {group} XPENDING"), c.cmd(&["XPENDING", key, group])));
            let rows = c.cmd(&["XPENDING", key, group, "-", "+", "1000"]);
            out.push((format!("{key} {group} XPENDING range"), pending_rows_without_idle(rows, &mut idles)));
            for consumer in ["alice", "bob", "a"] {
                let rows = c.cmd(&["XPENDING", key, group, "-", "+", "1000", consumer]);
                out.push((format!("{key} {group} XPENDING {consumer}"), pending_rows_without_idle(rows, &mut idles)));
            }
            let consumers = c.cmd(&["XINFO", "CONSUMERS", key, group]);
            out.push((format!("{key} {group} CONSUMERS"), without_idle(consumers, &mut idles)));
        }
    }
    (out, idles)
}

/// The wall-clock span around two readbacks: it opens before the first
/// starts and closes after the second ends, so every idle time the second
/// reads grew by at most its length over the first's. Measured on the clock
/// the server computes idle times with (Unix milliseconds), whole
/// milliseconds on both sides, so the bound needs no slack. (The span once
/// opened after the first readback and allowed 2 ms: on a loaded machine the
/// first readback's tail outlasted the second's by more, and an idle time
/// read early in the first grew past it.)
struct Span {
    opened_ms: u64,
}

impl Span {
    fn open() -> Span {
        Span { opened_ms: unix_ms() }
    }

    /// The span's length in milliseconds, closing it now.
    fn close(self) -> i64 {
        unix_ms().saturating_sub(self.opened_ms) as i64
    }
}

/// The state after the reload answers as before, and every idle time grew
/// by at most the span (see [`Span`]) around the two readbacks.
fn assert_same(before: &(Vec<(String, OwnedFrame)>, Idles), after: &(Vec<(String, OwnedFrame)>, Idles), span_ms: i64) {
    for ((what, was), (_, now)) in before.0.iter().zip(&after.0) {
        assert_eq!(now, was, "{what}");
    }
    assert_eq!(before.0.len(), after.0.len());
    assert_eq!(before.1 .0.len(), after.1 .0.len(), "as many idle times");
    for (was, now) in before.1 .0.iter().zip(&after.1 .0) {
        assert!(*now >= *was && *now - *was <= span_ms, "idle {was} became {now} in a span of {span_ms} ms");
    }
}

/// Checks a few facts of the built state directly, so a readback that lost
/// them on both sides would not pass unnoticed.
fn assert_built_state(c: &mut Client) {
    let summary = c.cmd(&["XPENDING", "s1", "g"]);
    let by_consumer = array(vec![array(vec![bulk("alice"), bulk("3")]), array(vec![bulk("bob"), bulk("2")])]);
    assert_eq!(summary, array(vec![int(5), bulk("1-0"), bulk("5-0"), by_consumer]));
    let row = c.cmd(&["XPENDING", "s1", "g", "4-0", "4-0", "1"]);
    let OwnedFrame::Array { data, .. } = row else { panic!("rows") };
    let OwnedFrame::Array { data: fields, .. } = &data[0] else { panic!("row") };
    assert_eq!(fields[3], int(7), "the delivery count");
    let big = c.cmd(&["XPENDING", "big", "g"]);
    let by_consumer = array(vec![array(vec![bulk("a"), bulk("200")]), array(vec![bulk("b"), bulk("100")])]);
    assert_eq!(big, array(vec![int(BIG as i64), bulk("1-1"), bulk(&format!("{BIG}-1")), by_consumer]));
    let row = c.cmd(&["XPENDING", "big", "g", "150-1", "150-1", "1"]);
    let OwnedFrame::Array { data, .. } = row else { panic!("rows") };
    let OwnedFrame::Array { data: fields, .. } = &data[0] else { panic!("row") };
    assert_eq!(fields[3], int(2), "delivered again");
    let gone = c.cmd(&["XPENDING", "gone", "g"]);
    let by_consumer = array(vec![array(vec![bulk("c"), bulk("1")])]);
    assert_eq!(gone, array(vec![int(1), bulk("1-1"), bulk("1-1"), by_consumer]));
}

#[test]
fn debug_reload_keeps_pending_entries_seen_times_and_counters() {
    let server = TestServer::start();
    let mut c = server.client();
    build(&mut c);
    assert_built_state(&mut c);
    let span = Span::open();
    let before = read_back(&mut c);
    assert_eq!(c.cmd(&["DEBUG", "RELOAD"]), simple("OK"));
    let after = read_back(&mut c);
    assert_same(&before, &after, span.close());
    assert_built_state(&mut c);
}

#[test]
fn save_and_restart_keep_them_without_a_log() {
    let mut server = TestServer::start_with(|c| c.durability = Tier::None);
    let mut c = server.client();
    build(&mut c);
    let span = Span::open();
    let before = read_back(&mut c);
    assert_eq!(c.cmd(&["SAVE"]), simple("OK"));
    server.restart_with(|c| c.durability = Tier::None);
    let mut c = server.client();
    let after = read_back(&mut c);
    assert_same(&before, &after, span.close());
    assert_built_state(&mut c);
}

#[test]
fn an_automatic_snapshot_and_a_restart_keep_them() {
    let tweak = |c: &mut cairn_server::Config| c.snapshot_wal_bytes = 1;
    let mut server = TestServer::start_with(tweak);
    let mut c = server.client();
    build(&mut c);
    let span = Span::open();
    let before = read_back(&mut c);
    let last = c.info_number("persistence", "cairn_last_lsn");
    let deadline = Instant::now() + Duration::from_secs(20);
    while c.info_number("persistence", "cairn_snapshot_lsn") < last {
        assert!(Instant::now() < deadline, "no snapshot covered the writes");
        std::thread::sleep(Duration::from_millis(20));
    }
    server.restart_with(tweak);
    let mut c = server.client();
    assert_eq!(c.info_number("persistence", "cairn_snapshot_lsn"), last, "loaded from the snapshot");
    let after = read_back(&mut c);
    assert_same(&before, &after, span.close());
}

#[test]
fn clients_cannot_call_the_rebuild_only_command() {
    let server = TestServer::start();
    let mut c = server.client();
    c.cmd(&["XGROUP", "CREATE", "s", "g", "$", "MKSTREAM"]);
    let reply = c.cmd(&["CAIRN.XCONSUMER", "s", "g", "c", "0", "9-9", "1", "1"]);
    assert_eq!(
        reply,
        err("ERR unknown command 'CAIRN.XCONSUMER', with args beginning with: 's' 'g' 'c' '0' '9-9' '1' '1' ")
    );
    assert_eq!(c.cmd(&["XINFO", "CONSUMERS", "s", "g"]), array(vec![]));
    let OwnedFrame::Array { data, .. } = c.cmd(&["COMMAND", "INFO", "cairn.xconsumer"]) else { panic!("COMMAND INFO") };
    assert_eq!(data, vec![OwnedFrame::Null]);
}

/// Unix milliseconds now.
fn unix_ms() -> u64 {
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).expect("clock").as_millis() as u64
}

/// Writes a snapshot taken now holding `commands` (db 0) into `dir`, at LSN 1.
fn write_snapshot(dir: &Path, commands: &[&[&str]]) {
    let storage: Arc<dyn Storage> = Arc::new(OsStorage);
    storage.create_dir_all(dir).expect("data dir");
    let mut writer = SnapshotWriter::create(storage, dir, 1, unix_ms()).expect("snapshot");
    for command in commands {
        let args: Vec<&[u8]> = command.iter().map(|a| a.as_bytes()).collect();
        writer.add(0, &args).expect("record");
    }
    writer.finish().expect("finished");
}

/// A snapshot as Cairn wrote it before `CAIRN.XCONSUMER`: pending entries
/// by `XCLAIM ... FORCE JUSTID`, idle consumers by `XGROUP CREATECONSUMER`.
#[test]
fn a_snapshot_from_before_the_consumer_command_still_loads() {
    let mut server = TestServer::start();
    let dir = server.dir.clone();
    server.running.take().expect("running").stop();
    for entry in std::fs::read_dir(&dir).expect("data dir").flatten() {
        std::fs::remove_file(entry.path()).expect("emptied");
    }
    let (first, second) = ((unix_ms() - 60_000).to_string(), (unix_ms() - 50_000).to_string());
    write_snapshot(
        &dir,
        &[
            &["XADD", "s", "1-0", "f", "1"],
            &["XADD", "s", "2-0", "f", "2"],
            &["XSETID", "s", "3-0", "ENTRIESADDED", "3", "MAXDELETEDID", "3-0"],
            &["XGROUP", "CREATE", "s", "g", "3-0", "ENTRIESREAD", "3"],
            &["XCLAIM", "s", "g", "alice", "0", "1-0", "TIME", &first, "RETRYCOUNT", "4", "FORCE", "JUSTID"],
            &["XCLAIM", "s", "g", "alice", "0", "2-0", "TIME", &second, "RETRYCOUNT", "1", "FORCE", "JUSTID"],
            &["XGROUP", "CREATECONSUMER", "s", "g", "idle"],
        ],
    );
    server.restart_with(|_| {});
    let mut c = server.client();
    assert_eq!(
        c.cmd(&["XPENDING", "s", "g"]),
        array(vec![int(2), bulk("1-0"), bulk("2-0"), array(vec![array(vec![bulk("alice"), bulk("2")])])])
    );
    let OwnedFrame::Array { data: rows, .. } = c.cmd(&["XPENDING", "s", "g", "-", "+", "10"]) else { panic!("rows") };
    let fields: Vec<(i64, i64)> = rows
        .iter()
        .map(|row| match row {
            OwnedFrame::Array { data, .. } => match (&data[2], &data[3]) {
                (OwnedFrame::Number { data: idle, .. }, OwnedFrame::Number { data: count, .. }) => (*idle, *count),
                other => panic!("row {other:?}"),
            },
            other => panic!("row {other:?}"),
        })
        .collect();
    assert!((60_000..70_000).contains(&fields[0].0) && fields[0].1 == 4, "{fields:?}");
    assert!((50_000..60_000).contains(&fields[1].0) && fields[1].1 == 1, "{fields:?}");
    let OwnedFrame::Array { data: consumers, .. } = c.cmd(&["XINFO", "CONSUMERS", "s", "g"]) else {
        panic!("consumers")
    };
    assert_eq!(consumers.len(), 2, "alice and idle");
}

/// `CAIRN.XCONSUMER` with bad arguments (a log or snapshot written by
/// something else) fails as a replayed command does: reported, the rest
/// loads, nothing half applied.
#[test]
fn a_damaged_consumer_command_is_refused_whole() {
    let mut server = TestServer::start();
    let dir = server.dir.clone();
    server.running.take().expect("running").stop();
    for entry in std::fs::read_dir(&dir).expect("data dir").flatten() {
        std::fs::remove_file(entry.path()).expect("emptied");
    }
    write_snapshot(
        &dir,
        &[
            &["XADD", "s", "1-0", "f", "1"],
            &["XGROUP", "CREATE", "s", "g", "1-0", "ENTRIESREAD", "1"],
            &["CAIRN.XCONSUMER", "s", "g", "a", "100", "1-0", "100"],
            &["CAIRN.XCONSUMER", "s", "g", "b", "100", "1-0", "100", "1", "x-1", "1", "1"],
            &["CAIRN.XCONSUMER", "s", "nogroup", "c", "100"],
            &["CAIRN.XCONSUMER", "nokey", "g", "c", "100"],
            &["CAIRN.XCONSUMER", "s", "g", "d", "notatime"],
            &["CAIRN.XCONSUMER", "s", "g", "e", "100", "1-0", "100", "-1"],
            &["CAIRN.XCONSUMER", "s", "g", "ok", "100", "9-0", "200", "3"],
            &["SET", "after", "1"],
        ],
    );
    server.restart_with(|_| {});
    let mut c = server.client();
    assert_eq!(c.cmd(&["GET", "after"]), bulk("1"));
    assert_eq!(c.cmd(&["EXISTS", "nokey"]), int(0));
    assert_eq!(
        c.cmd(&["XPENDING", "s", "g"]),
        array(vec![int(1), bulk("9-0"), bulk("9-0"), array(vec![array(vec![bulk("ok"), bulk("1")])])])
    );
    let OwnedFrame::Array { data: consumers, .. } = c.cmd(&["XINFO", "CONSUMERS", "s", "g"]) else {
        panic!("consumers")
    };
    assert_eq!(consumers.len(), 1, "only the sound command created a consumer: {consumers:?}");
}

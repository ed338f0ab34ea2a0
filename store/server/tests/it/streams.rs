//! Integration tests of the stream commands over real RESP: replies and
//! errors as Redis 7.0.15 gives them (compared by hand against redis-server).

use crate::common::*;
use redis_protocol::resp3::types::OwnedFrame;

/// `[id, [field, value, ...]]`.
fn entry(id: &str, fields: &[&str]) -> OwnedFrame {
    array(vec![bulk(id), array(fields.iter().map(|f| bulk(f)).collect())])
}

fn null_array() -> OwnedFrame {
    OwnedFrame::Null
}

#[test]
fn add_range_delete_trim() {
    let server = TestServer::start();
    let mut c = server.client();
    assert_eq!(c.cmd(&["XADD", "s", "1-1", "a", "1"]), bulk("1-1"));
    assert_eq!(c.cmd(&["XADD", "s", "1-*", "b", "2"]), bulk("1-2"));
    assert_eq!(c.cmd(&["XADD", "s", "2", "c", "3"]), bulk("2-0"));
    assert_eq!(
        c.cmd(&["XADD", "s", "1-5", "x", "y"]),
        err("ERR The ID specified in XADD is equal or smaller than the target stream top item")
    );
    assert_eq!(c.cmd(&["XADD", "t", "0-0", "x", "y"]), err("ERR The ID specified in XADD must be greater than 0-0"));
    assert_eq!(c.cmd(&["EXISTS", "t"]), int(0));
    assert_eq!(c.cmd(&["XADD", "s", "*", "a"]), err("ERR wrong number of arguments for 'xadd' command"));
    assert_eq!(
        c.cmd(&["XADD", "s", "x-1", "a", "b"]),
        err("ERR Invalid stream ID specified as stream command argument")
    );
    assert_eq!(c.cmd(&["XADD", "u", "NOMKSTREAM", "*", "a", "b"]), null_bulk_resp2());
    assert_eq!(c.cmd(&["XLEN", "s"]), int(3));
    assert_eq!(c.cmd(&["XRANGE", "s", "(1-1", "+", "COUNT", "1"]), array(vec![entry("1-2", &["b", "2"])]));
    assert_eq!(c.cmd(&["XREVRANGE", "s", "+", "-", "COUNT", "1"]), array(vec![entry("2-0", &["c", "3"])]));
    assert_eq!(c.cmd(&["XRANGE", "s", "-", "+", "COUNT", "0"]), null_array());
    assert_eq!(c.cmd(&["XRANGE", "s", "(-", "+"]), err("ERR Invalid stream ID specified as stream command argument"));
    assert_eq!(c.cmd(&["XDEL", "s", "1-2", "9-9"]), int(1));
    assert_eq!(c.cmd(&["XTRIM", "s", "MAXLEN", "1"]), int(1));
    assert_eq!(c.cmd(&["XRANGE", "s", "-", "+"]), array(vec![entry("2-0", &["c", "3"])]));
    assert_eq!(
        c.cmd(&["XTRIM", "s", "MAXLEN", "1", "LIMIT", "3"]),
        err("ERR syntax error, LIMIT cannot be used without the special ~ option")
    );
    c.cmd(&["SET", "str", "v"]);
    assert_eq!(
        c.cmd(&["XADD", "str", "*", "a", "b"]),
        err("WRONGTYPE Operation against a key holding the wrong kind of value")
    );
    assert_eq!(c.cmd(&["TYPE", "s"]), simple("stream"));
    assert_eq!(c.cmd(&["OBJECT", "ENCODING", "s"]), bulk("stream"));
}

/// Nodes hold `stream-node-max-entries` (100) entries; `~` removes whole
/// nodes only, and LIMIT caps the entries removed. (The node limits are
/// process-wide, so this test keeps the defaults: tests run in parallel.)
#[test]
fn approximate_trimming_follows_node_boundaries() {
    let server = TestServer::start();
    let mut c = server.client();
    for i in 1..=300 {
        c.cmd(&["XADD", "s", &i.to_string(), "x", "v"]);
    }
    assert_eq!(c.cmd(&["XTRIM", "s", "MAXLEN", "~", "150", "LIMIT", "99"]), int(0));
    assert_eq!(c.cmd(&["XTRIM", "s", "MAXLEN", "~", "150"]), int(100));
    assert_eq!(c.cmd(&["XTRIM", "s", "MAXLEN", "~", "150"]), int(0));
    assert_eq!(c.cmd(&["XTRIM", "s", "MAXLEN", "150"]), int(50));
    assert_eq!(c.cmd(&["XRANGE", "s", "-", "+", "COUNT", "1"]), array(vec![entry("151-0", &["x", "v"])]));
}

#[test]
fn consumer_groups() {
    let server = TestServer::start();
    let mut c = server.client();
    for id in ["1", "2", "3"] {
        c.cmd(&["XADD", "s", id, "f", "v"]);
    }
    assert_eq!(c.cmd(&["XGROUP", "CREATE", "s", "g", "0"]), simple("OK"));
    assert_eq!(c.cmd(&["XGROUP", "CREATE", "s", "g", "$"]), err("BUSYGROUP Consumer Group name already exists"));
    assert_eq!(
        c.cmd(&["XREADGROUP", "GROUP", "g", "alice", "COUNT", "2", "STREAMS", "s", ">"]),
        array(vec![array(vec![bulk("s"), array(vec![entry("1-0", &["f", "v"]), entry("2-0", &["f", "v"])])])])
    );
    assert_eq!(c.cmd(&["XDEL", "s", "1-0"]), int(1));
    assert_eq!(
        c.cmd(&["XREADGROUP", "GROUP", "g", "alice", "STREAMS", "s", "0"]),
        array(vec![array(vec![
            bulk("s"),
            array(vec![array(vec![bulk("1-0"), null_array()]), entry("2-0", &["f", "v"])])
        ])])
    );
    let summary = c.cmd(&["XPENDING", "s", "g"]);
    assert_eq!(
        summary,
        array(vec![int(2), bulk("1-0"), bulk("2-0"), array(vec![array(vec![bulk("alice"), bulk("2")])])])
    );
    assert_eq!(c.cmd(&["XCLAIM", "s", "g", "bob", "0", "1-0", "2-0"]), array(vec![entry("2-0", &["f", "v"])]));
    assert_eq!(c.cmd(&["XACK", "s", "g", "2-0", "1-0"]), int(1));
    assert_eq!(c.cmd(&["XAUTOCLAIM", "s", "g", "bob", "0", "0", "COUNT", "0"]), err("ERR COUNT must be > 0"));
    assert_eq!(
        c.cmd(&["XREADGROUP", "GROUP", "nope", "alice", "STREAMS", "s", ">"]),
        err("NOGROUP No such key 's' or consumer group 'nope' in XREADGROUP with GROUP option")
    );
    assert_eq!(
        c.cmd(&["XGROUP", "CREATECONSUMER", "s", "nope", "x"]),
        err("NOGROUP No such consumer group 'nope' for key name 's'")
    );
    assert_eq!(c.cmd(&["XGROUP", "CREATECONSUMER", "s", "g", "carol"]), int(1));
    assert_eq!(c.cmd(&["XGROUP", "DELCONSUMER", "s", "g", "bob"]), int(0));
    assert_eq!(c.cmd(&["XGROUP", "DESTROY", "s", "g"]), int(1));
    assert_eq!(c.cmd(&["XGROUP", "HELP", "x"]), err("ERR wrong number of arguments for 'xgroup|help' command"));
    assert_eq!(c.cmd(&["XGROUP", "FOO"]), err("ERR unknown subcommand 'FOO'. Try XGROUP HELP."));
}

#[test]
fn xinfo_reports_redis_7_counters() {
    let server = TestServer::start();
    let mut c = server.client();
    for id in ["1", "2", "3", "4", "5"] {
        c.cmd(&["XADD", "x", id, "data", "a"]);
    }
    c.cmd(&["XDEL", "x", "3-0"]);
    c.cmd(&["XGROUP", "CREATE", "x", "g1", "0"]);
    let groups = c.cmd(&["XINFO", "GROUPS", "x"]);
    let fields = vec![
        bulk("name"),
        bulk("g1"),
        bulk("consumers"),
        int(0),
        bulk("pending"),
        int(0),
        bulk("last-delivered-id"),
        bulk("0-0"),
        bulk("entries-read"),
        OwnedFrame::Null,
        bulk("lag"),
        OwnedFrame::Null,
    ];
    assert_eq!(groups, array(vec![array(fields)]));
    let info = c.cmd(&["XINFO", "STREAM", "x"]);
    let OwnedFrame::Array { data, .. } = info else { panic!("XINFO STREAM is an array in RESP2") };
    assert_eq!(data.len(), 20);
    assert_eq!(&data[..4], &[bulk("length"), int(4), bulk("radix-tree-keys"), int(1)]);
    assert_eq!(
        &data[8..14],
        &[
            bulk("max-deleted-entry-id"),
            bulk("3-0"),
            bulk("entries-added"),
            int(5),
            bulk("recorded-first-entry-id"),
            bulk("1-0")
        ]
    );
    assert_eq!(c.cmd(&["XINFO", "STREAM", "nokey"]), err("ERR no such key"));
}

#[test]
fn xread_shapes() {
    let server = TestServer::start();
    let mut c = server.client();
    c.cmd(&["XADD", "a", "1", "f", "v"]);
    assert_eq!(
        c.cmd(&["XREAD", "STREAMS", "a", "b", "0", "0"]),
        array(vec![array(vec![bulk("a"), array(vec![entry("1-0", &["f", "v"])])])])
    );
    assert_eq!(c.cmd(&["XREAD", "STREAMS", "a", "$"]), null_array());
    // With data available BLOCK does not block.
    assert_eq!(
        c.cmd(&["XREAD", "BLOCK", "0", "STREAMS", "a", "0"]),
        array(vec![array(vec![bulk("a"), array(vec![entry("1-0", &["f", "v"])])])])
    );
    c.resp3 = true;
    c.cmd(&["HELLO", "3"]);
    let reply = c.cmd(&["XREAD", "STREAMS", "a", "0"]);
    assert!(matches!(reply, OwnedFrame::Map { ref data, .. } if data.len() == 1), "RESP3 XREAD is a map: {reply:?}");
}

/// Waits until INFO reports one blocked client.
fn wait_for_blocked(c: &mut Client) {
    for _ in 0..500 {
        let info = match c.cmd(&["INFO", "clients"]) {
            OwnedFrame::BlobString { data, .. } | OwnedFrame::VerbatimString { data, .. } => data,
            other => panic!("INFO reply: {other:?}"),
        };
        if String::from_utf8_lossy(&info).contains("blocked_clients:1") {
            return;
        }
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
    panic!("no client blocked");
}

#[test]
fn blocking_reads_wake_on_xadd_and_time_out() {
    let server = TestServer::start();
    let mut c = server.client();
    let mut waiter = server.client();
    c.cmd(&["XADD", "s", "1", "old", "x"]);
    assert_eq!(c.cmd(&["XREAD", "BLOCK", "30", "STREAMS", "s", "$"]), null_array());
    // `$` means the last ID at the time of blocking, not of serving.
    waiter.send_raw(&Client::encode(&[b"XREAD", b"BLOCK", b"0", b"STREAMS", b"s", b"$"]));
    wait_for_blocked(&mut c);
    c.cmd(&["XADD", "s", "2", "new", "y"]);
    assert_eq!(waiter.read(), array(vec![array(vec![bulk("s"), array(vec![entry("2-0", &["new", "y"])])])]));
    // A destroyed group unblocks its readers with an error.
    c.cmd(&["XGROUP", "CREATE", "s", "g", "$"]);
    waiter.send_raw(&Client::encode(&[b"XREADGROUP", b"GROUP", b"g", b"c", b"BLOCK", b"0", b"STREAMS", b"s", b">"]));
    wait_for_blocked(&mut c);
    c.cmd(&["XGROUP", "DESTROY", "s", "g"]);
    assert_eq!(waiter.read(), err("NOGROUP the consumer group this client was blocked on no longer exists"));
    // Inside a transaction BLOCK acts as a timeout.
    c.cmd(&["MULTI"]);
    c.cmd(&["XREAD", "BLOCK", "0", "STREAMS", "s", "$"]);
    assert_eq!(c.cmd(&["EXEC"]), array(vec![null_array()]));
}

/// The `cmdstat_<name>` line of INFO commandstats, if the command ran.
fn cmdstat(c: &mut Client, name: &str) -> Option<String> {
    let info = match c.cmd(&["INFO", "commandstats"]) {
        OwnedFrame::BlobString { data, .. } | OwnedFrame::VerbatimString { data, .. } => data,
        other => panic!("INFO reply: {other:?}"),
    };
    let prefix = format!("cmdstat_{name}:");
    String::from_utf8_lossy(&info).lines().find_map(|l| l.strip_prefix(prefix.as_str()).map(str::to_string))
}

#[test]
fn a_reader_unblocked_with_nogroup_counts_as_a_failed_call() {
    let server = TestServer::start();
    let mut c = server.client();
    let mut waiter = server.client();
    c.cmd(&["XGROUP", "CREATE", "s", "g", "$", "MKSTREAM"]);
    c.cmd(&["CONFIG", "RESETSTAT"]);
    waiter.send_raw(&Client::encode(&[b"XREADGROUP", b"GROUP", b"g", b"c", b"BLOCK", b"0", b"STREAMS", b"s", b">"]));
    wait_for_blocked(&mut c);
    c.cmd(&["XGROUP", "DESTROY", "s", "g"]);
    assert_eq!(waiter.read(), err("NOGROUP the consumer group this client was blocked on no longer exists"));
    let stats = cmdstat(&mut c, "xreadgroup").expect("xreadgroup ran");
    assert!(stats.starts_with("calls=1,"), "{stats}");
    assert!(stats.ends_with(",rejected_calls=0,failed_calls=1"), "{stats}");
}

/// Puts the process-wide `stream-node-max-entries` back to its default when
/// dropped (declared after the server, so before the next test's starts).
struct DefaultNodeEntries;

impl Drop for DefaultNodeEntries {
    fn drop(&mut self) {
        cairn_engine::types::encoding::LIMITS.stream_node_max_entries.set(100);
    }
}

/// What `~` removes depends on the node sizes, so XADD and XTRIM log the
/// exact trim they did (Redis's stream.tcl "... can propagate correctly"):
/// replayed with nodes of one entry, the streams come back as they were.
#[test]
fn an_approximate_trim_replays_as_the_trim_it_did() {
    let server = TestServer::start();
    let _restore = DefaultNodeEntries;
    let mut c = server.client();
    c.cmd(&["CONFIG", "SET", "stream-node-max-entries", "10"]);
    for i in 1..=100 {
        for key in ["maxlen", "minid", "xtrim", "untrimmed"] {
            c.cmd(&["XADD", key, &i.to_string(), "x", "v"]);
        }
    }
    // Whole nodes of 10 only, while at least the threshold is left.
    assert_eq!(c.cmd(&["XADD", "maxlen", "MAXLEN", "~", "85", "LIMIT", "50", "101", "x", "v"]), bulk("101-0"));
    assert_eq!(c.cmd(&["XLEN", "maxlen"]), int(91));
    assert_eq!(c.cmd(&["XADD", "minid", "MINID", "~", "15", "101", "x", "v"]), bulk("101-0"));
    assert_eq!(c.cmd(&["XLEN", "minid"]), int(91));
    assert_eq!(c.cmd(&["XTRIM", "xtrim", "MAXLEN", "~", "85"]), int(10));
    assert_eq!(c.cmd(&["XTRIM", "untrimmed", "MAXLEN", "~", "95"]), int(0));

    c.cmd(&["CONFIG", "SET", "stream-node-max-entries", "1"]);
    assert_eq!(c.cmd(&["DEBUG", "LOADAOF"]), simple("OK"));
    assert_eq!(c.cmd(&["XLEN", "maxlen"]), int(91));
    assert_eq!(c.cmd(&["XLEN", "minid"]), int(91));
    assert_eq!(c.cmd(&["XRANGE", "minid", "-", "+", "COUNT", "1"]), array(vec![entry("11-0", &["x", "v"])]));
    assert_eq!(c.cmd(&["XLEN", "xtrim"]), int(90));
    assert_eq!(c.cmd(&["XLEN", "untrimmed"]), int(100));
}

//! Integration tests of keyspace notifications (`notify-keyspace-events`)
//! against the real server over RESP: the classes, both channel kinds,
//! per-command events, expiry (lazy and active, and INFO's count of it),
//! `new`, and eviction.

use std::time::Duration;

use crate::common::*;
use redis_protocol::resp3::types::OwnedFrame;

fn pmessage(pattern: &str, channel: &str, payload: &str) -> OwnedFrame {
    array(vec![bulk("pmessage"), bulk(pattern), bulk(channel), bulk(payload)])
}

/// A client subscribed to every channel with PSUBSCRIBE `*`.
fn watcher(server: &TestServer) -> Client {
    let mut sub = server.client();
    assert_eq!(sub.cmd(&["PSUBSCRIBE", "*"]), array(vec![bulk("psubscribe"), bulk("*"), int(1)]));
    sub
}

/// Reads the next notification as `(channel, payload)`.
fn next(sub: &mut Client) -> (String, String) {
    match sub.read() {
        OwnedFrame::Array { data, .. } if data.len() == 4 => {
            let text = |f: &OwnedFrame| match f {
                OwnedFrame::BlobString { data, .. } => String::from_utf8_lossy(data).into_owned(),
                other => panic!("not a bulk string: {other:?}"),
            };
            (text(&data[2]), text(&data[3]))
        }
        other => panic!("not a pmessage: {other:?}"),
    }
}

fn set_events(c: &mut Client, flags: &str) {
    assert_eq!(c.cmd(&["CONFIG", "SET", "notify-keyspace-events", flags]), simple("OK"));
}

#[test]
fn config_normalizes_flags_and_rejects_unknown_classes() {
    let server = TestServer::start();
    let mut c = server.client();
    let get = |c: &mut Client| c.cmd(&["CONFIG", "GET", "notify-keyspace-events"]);
    assert_eq!(get(&mut c), array(vec![bulk("notify-keyspace-events"), bulk("")]));
    set_events(&mut c, "KA");
    assert_eq!(get(&mut c), array(vec![bulk("notify-keyspace-events"), bulk("AK")]));
    set_events(&mut c, "$lshzxeKE");
    assert_eq!(get(&mut c), array(vec![bulk("notify-keyspace-events"), bulk("$lshzxeKE")]));
    assert_eq!(
        c.cmd(&["CONFIG", "SET", "notify-keyspace-events", "KQ"]),
        err("ERR CONFIG SET failed (possibly related to argument 'notify-keyspace-events') - Invalid event class character. Use 'Ag$lshzxeKEtmdn'.")
    );
}

#[test]
fn keyspace_then_keyevent_for_each_event() {
    let server = TestServer::start();
    let mut c = server.client();
    set_events(&mut c, "KEA");
    let mut sub = watcher(&server);
    c.cmd(&["SET", "foo", "bar"]);
    assert_eq!(sub.read(), pmessage("*", "__keyspace@0__:foo", "set"));
    assert_eq!(sub.read(), pmessage("*", "__keyevent@0__:set", "foo"));
    c.cmd(&["SELECT", "3"]);
    c.cmd(&["RENAME", "nokey", "x"]);
    c.cmd(&["LPUSH", "l", "a"]);
    assert_eq!(next(&mut sub), ("__keyspace@3__:l".into(), "lpush".into()));
    assert_eq!(next(&mut sub), ("__keyevent@3__:lpush".into(), "l".into()));
}

#[test]
fn classes_mask_events_and_commands_raise_redis_event_names() {
    let server = TestServer::start();
    let mut c = server.client();
    set_events(&mut c, "Kg$lshz");
    let mut sub = watcher(&server);
    let script: &[(&[&str], &[&str])] = &[
        (&["SET", "s", "1"], &["set"]),
        (&["INCRBY", "s", "2"], &["incrby"]),
        (&["EXPIRE", "s", "100"], &["expire"]),
        (&["RENAME", "s", "t"], &["rename_from", "rename_to"]),
        (&["DEL", "t", "missing"], &["del"]),
        (&["RPUSH", "l", "a", "b"], &["rpush"]),
        (&["LPOP", "l"], &["lpop"]),
        (&["RPOP", "l"], &["rpop", "del"]),
        (&["HSET", "h", "f", "1"], &["hset"]),
        (&["HINCRBY", "h", "f", "1"], &["hincrby"]),
        (&["HDEL", "h", "f"], &["hdel", "del"]),
        (&["SADD", "st", "a"], &["sadd"]),
        (&["SREM", "st", "x"], &[]),
        (&["SREM", "st", "a"], &["srem", "del"]),
        (&["ZADD", "z", "1", "a"], &["zadd"]),
        (&["ZINCRBY", "z", "1", "a"], &["zincr"]),
        (&["ZREM", "z", "a"], &["zrem", "del"]),
        (&["PING"], &[]),
    ];
    let keys = ["s", "s", "s", "s", "t", "l", "l", "l", "h", "h", "h", "st", "st", "st", "z", "z", "z", ""];
    for ((command, events), key) in script.iter().zip(keys) {
        c.cmd(command);
        for event in *events {
            let (channel, payload) = next(&mut sub);
            assert_eq!(payload, *event, "{command:?}");
            let expected_key = if *event == "rename_to" { "t" } else { key };
            assert_eq!(channel, format!("__keyspace@0__:{expected_key}"), "{command:?}");
        }
    }
    // Nothing else was published: the next message is this marker.
    c.cmd(&["PUBLISH", "marker", "end"]);
    assert_eq!(sub.read(), pmessage("*", "marker", "end"));
}

#[test]
fn expired_keys_notify_lazily_and_actively() {
    let server = TestServer::start();
    let mut c = server.client();
    set_events(&mut c, "Ex");
    let mut sub = watcher(&server);
    // Active expiry: nobody reads the key.
    c.cmd(&["PSETEX", "active", "50", "v"]);
    assert_eq!(next(&mut sub), ("__keyevent@0__:expired".into(), "active".into()));
    // Lazy expiry: the read finds it expired before the active cycle does.
    c.cmd(&["DEBUG", "SET-ACTIVE-EXPIRE", "0"]);
    c.cmd(&["PSETEX", "lazy", "20", "v"]);
    std::thread::sleep(Duration::from_millis(50));
    assert_eq!(c.cmd(&["GET", "lazy"]), null_bulk_resp2());
    assert_eq!(next(&mut sub), ("__keyevent@0__:expired".into(), "lazy".into()));
}

#[test]
fn info_counts_lazy_and_active_expirations_as_redis_does() {
    let server = TestServer::start();
    let mut c = server.client();
    assert_eq!(c.info_number("stats", "expired_keys"), 0);
    // Active expiry: nobody reads the key.
    c.cmd(&["PSETEX", "active", "20", "v"]);
    let deadline = std::time::Instant::now() + Duration::from_secs(5);
    while c.info_number("stats", "expired_keys") < 1 && std::time::Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(20));
    }
    assert_eq!(c.info_number("stats", "expired_keys"), 1, "active expiry counted");
    // Lazy expiry, by a read, a write over the key, and a DEL.
    c.cmd(&["DEBUG", "SET-ACTIVE-EXPIRE", "0"]);
    for key in ["read", "overwritten", "deleted"] {
        c.cmd(&["PSETEX", key, "10", "v"]);
    }
    std::thread::sleep(Duration::from_millis(30));
    assert_eq!(c.cmd(&["GET", "read"]), null_bulk_resp2());
    assert_eq!(c.cmd(&["SET", "overwritten", "w"]), simple("OK"));
    assert_eq!(c.cmd(&["DEL", "deleted"]), int(0));
    assert_eq!(c.info_number("stats", "expired_keys"), 4, "lazy expiry counted");
    // A key deleted before its time is not an expiration; RESETSTAT zeroes the count.
    c.cmd(&["PSETEX", "early", "100000", "v"]);
    assert_eq!(c.cmd(&["DEL", "early"]), int(1));
    assert_eq!(c.info_number("stats", "expired_keys"), 4);
    assert_eq!(c.cmd(&["CONFIG", "RESETSTAT"]), simple("OK"));
    assert_eq!(c.info_number("stats", "expired_keys"), 0);
}

#[test]
fn new_keys_notify_once() {
    let server = TestServer::start();
    let mut c = server.client();
    set_events(&mut c, "En");
    let mut sub = watcher(&server);
    c.cmd(&["SET", "foo", "bar"]);
    c.cmd(&["SET", "foo", "baz"]);
    c.cmd(&["HSET", "bar", "f", "v"]);
    assert_eq!(next(&mut sub), ("__keyevent@0__:new".into(), "foo".into()));
    assert_eq!(next(&mut sub), ("__keyevent@0__:new".into(), "bar".into()));
}

#[test]
fn eviction_notifies_evicted() {
    let server = TestServer::start();
    let mut c = server.client();
    set_events(&mut c, "Ee");
    assert_eq!(c.cmd(&["CONFIG", "SET", "maxmemory-policy", "allkeys-lru"]), simple("OK"));
    c.cmd(&["SET", "foo", "bar"]);
    let mut sub = watcher(&server);
    assert_eq!(c.cmd(&["CONFIG", "SET", "maxmemory", "1"]), simple("OK"));
    assert_eq!(next(&mut sub), ("__keyevent@0__:evicted".into(), "foo".into()));
    assert_eq!(c.cmd(&["CONFIG", "SET", "maxmemory", "0"]), simple("OK"));
}

#[test]
fn oom_refuses_denyoom_commands_and_aborts_transactions() {
    let server = TestServer::start();
    let mut c = server.client();
    c.cmd(&["SET", "x", "1"]);
    assert_eq!(c.cmd(&["CONFIG", "SET", "maxmemory", "1"]), simple("OK"));
    let oom = "OOM command not allowed when used memory > 'maxmemory'.";
    assert_eq!(c.cmd(&["SET", "y", "1"]), err(oom));
    assert_eq!(c.cmd(&["GET", "x"]), bulk("1"));
    assert_eq!(c.cmd(&["DEL", "x"]), int(1));
    assert_eq!(c.cmd(&["MULTI"]), simple("OK"));
    assert_eq!(c.cmd(&["LPUSH", "l", "a"]), err(oom));
    assert_eq!(c.cmd(&["EXEC"]), err("EXECABORT Transaction discarded because of previous errors."));
    assert_eq!(c.cmd(&["CONFIG", "SET", "maxmemory", "0"]), simple("OK"));
    assert_eq!(c.cmd(&["SET", "y", "1"]), simple("OK"));
}

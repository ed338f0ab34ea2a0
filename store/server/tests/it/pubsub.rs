//! Integration tests of pub/sub against the real server (two workers, so
//! publisher and subscribers may live on different threads) over real RESP.

use std::time::{Duration, Instant};

use crate::common::*;
use redis_protocol::resp3::types::OwnedFrame;

fn push(items: Vec<OwnedFrame>) -> OwnedFrame {
    OwnedFrame::Push { data: items, attributes: None }
}

/// `[kind, name, count]` as a RESP2 array.
fn confirm(kind: &str, name: &str, count: i64) -> OwnedFrame {
    array(vec![bulk(kind), bulk(name), int(count)])
}

fn message(channel: &str, payload: &str) -> OwnedFrame {
    array(vec![bulk("message"), bulk(channel), bulk(payload)])
}

fn pmessage(pattern: &str, channel: &str, payload: &str) -> OwnedFrame {
    array(vec![bulk("pmessage"), bulk(pattern), bulk(channel), bulk(payload)])
}

fn two_workers() -> TestServer {
    TestServer::start_with(|c| c.threads = Some(2))
}

/// Opens `n` connections, so that with two workers some land on each.
fn clients(server: &TestServer, n: usize) -> Vec<Client> {
    (0..n).map(|_| server.client()).collect()
}

#[test]
fn publish_reaches_subscribers_on_every_worker() {
    let server = two_workers();
    let mut subscribers = clients(&server, 4);
    for s in &mut subscribers {
        assert_eq!(s.cmd(&["SUBSCRIBE", "news"]), confirm("subscribe", "news", 1));
    }
    let mut publisher = server.client();
    assert_eq!(publisher.cmd(&["PUBLISH", "news", "hello"]), int(4));
    assert_eq!(publisher.cmd(&["PUBLISH", "other", "x"]), int(0));
    for s in &mut subscribers {
        assert_eq!(s.read(), message("news", "hello"));
    }
    // Messages keep their order per subscriber.
    for i in 0..50 {
        assert_eq!(publisher.cmd(&["PUBLISH", "news", &i.to_string()]), int(4));
    }
    for s in &mut subscribers {
        for i in 0..50 {
            assert_eq!(s.read(), message("news", &i.to_string()));
        }
    }
}

#[test]
fn patterns_and_channels_both_deliver() {
    let server = two_workers();
    let mut sub = server.client();
    let mut publisher = server.client();
    sub.send_raw(&Client::encode(&[b"SUBSCRIBE", b"foo.bar"]));
    assert_eq!(sub.read(), confirm("subscribe", "foo.bar", 1));
    assert_eq!(sub.cmd(&["PSUBSCRIBE", "foo.*", "b[ae]r"]), confirm("psubscribe", "foo.*", 2));
    assert_eq!(sub.read(), confirm("psubscribe", "b[ae]r", 3));
    assert_eq!(publisher.cmd(&["PUBLISH", "foo.bar", "m1"]), int(2));
    assert_eq!(sub.read(), message("foo.bar", "m1"));
    assert_eq!(sub.read(), pmessage("foo.*", "foo.bar", "m1"));
    assert_eq!(publisher.cmd(&["PUBLISH", "ber", "m2"]), int(1));
    assert_eq!(publisher.cmd(&["PUBLISH", "bir", "m3"]), int(0));
    assert_eq!(sub.read(), pmessage("b[ae]r", "ber", "m2"));
    assert_eq!(sub.cmd(&["PUNSUBSCRIBE", "foo.*"]), confirm("punsubscribe", "foo.*", 2));
    assert_eq!(publisher.cmd(&["PUBLISH", "foo.x", "m4"]), int(0));
    // Subscribing twice counts once.
    assert_eq!(sub.cmd(&["PSUBSCRIBE", "b[ae]r"]), confirm("psubscribe", "b[ae]r", 2));
}

#[test]
fn unsubscribe_all_replies_once_per_channel_or_once_with_null() {
    let server = TestServer::start();
    let mut c = server.client();
    // Nothing subscribed: one frame, null name, count 0.
    assert_eq!(c.cmd(&["UNSUBSCRIBE"]), array(vec![bulk("unsubscribe"), OwnedFrame::Null, int(0)]));
    assert_eq!(c.cmd(&["PUNSUBSCRIBE"]), array(vec![bulk("punsubscribe"), OwnedFrame::Null, int(0)]));
    assert_eq!(c.cmd(&["UNSUBSCRIBE", "a", "b"]), confirm("unsubscribe", "a", 0));
    assert_eq!(c.read(), confirm("unsubscribe", "b", 0));
    // Not in subscribed mode after that: ordinary commands run.
    assert_eq!(c.cmd(&["PING"]), simple("PONG"));

    c.send_raw(&Client::encode(&[b"SUBSCRIBE", b"a", b"b", b"c"]));
    for (i, ch) in ["a", "b", "c"].iter().enumerate() {
        assert_eq!(c.read(), confirm("subscribe", ch, i as i64 + 1));
    }
    assert_eq!(c.cmd(&["PSUBSCRIBE", "p*"]), confirm("psubscribe", "p*", 4));
    c.send_raw(&Client::encode(&[b"UNSUBSCRIBE"]));
    let mut names = Vec::new();
    let mut counts = Vec::new();
    for _ in 0..3 {
        let OwnedFrame::Array { data, .. } = c.read() else { panic!("array") };
        assert_eq!(data[0], bulk("unsubscribe"));
        names.push(data[1].clone());
        counts.push(data[2].clone());
    }
    names.sort_by_key(|f| format!("{f:?}"));
    assert_eq!(names, vec![bulk("a"), bulk("b"), bulk("c")]);
    assert_eq!(counts, vec![int(3), int(2), int(1)]);
    // The pattern keeps the connection in subscribed mode.
    assert!(matches!(c.cmd(&["GET", "k"]), OwnedFrame::SimpleError { .. }));
    // No channels left: one frame, null name, the patterns still counted.
    assert_eq!(c.cmd(&["UNSUBSCRIBE"]), array(vec![bulk("unsubscribe"), OwnedFrame::Null, int(1)]));
    assert_eq!(c.cmd(&["PUNSUBSCRIBE"]), confirm("punsubscribe", "p*", 0));
    assert_eq!(c.cmd(&["GET", "k"]), OwnedFrame::Null);
}

#[test]
fn subscribed_resp2_mode_restricts_commands() {
    let server = TestServer::start();
    let mut c = server.client();
    assert_eq!(c.cmd(&["SUBSCRIBE", "ch"]), confirm("subscribe", "ch", 1));
    assert_eq!(
        c.cmd(&["GET", "k"]),
        err("ERR Can't execute 'get': only (P|S)SUBSCRIBE / (P|S)UNSUBSCRIBE / PING / QUIT / RESET are allowed \
             in this context")
    );
    assert_eq!(
        c.cmd(&["CLIENT", "LIST"]),
        err("ERR Can't execute 'client|list': only (P|S)SUBSCRIBE / (P|S)UNSUBSCRIBE / PING / QUIT / RESET are \
             allowed in this context")
    );
    assert_eq!(c.cmd(&["PING"]), array(vec![bulk("pong"), bulk("")]));
    assert_eq!(c.cmd(&["PING", "hi"]), array(vec![bulk("pong"), bulk("hi")]));
    // Arity is still checked first.
    assert_eq!(c.cmd(&["PUBLISH", "x"]), err("ERR wrong number of arguments for 'publish' command"));
    // RESET leaves subscribed mode and drops the subscription.
    assert_eq!(c.cmd(&["RESET"]), simple("RESET"));
    assert_eq!(c.cmd(&["PING"]), simple("PONG"));
    let mut other = server.client();
    assert_eq!(other.cmd(&["PUBLISH", "ch", "x"]), int(0));
    assert_eq!(other.cmd(&["PUBSUB", "NUMSUB", "ch"]), array(vec![bulk("ch"), int(0)]));
}

#[test]
fn resp3_gets_push_frames_and_keeps_every_command() {
    let server = two_workers();
    let mut c = server.client();
    c.resp3 = true;
    c.cmd(&["HELLO", "3"]);
    assert_eq!(c.cmd(&["SUBSCRIBE", "ch"]), push(vec![bulk("subscribe"), bulk("ch"), int(1)]));
    assert_eq!(c.cmd(&["PSUBSCRIBE", "c*"]), push(vec![bulk("psubscribe"), bulk("c*"), int(2)]));
    // No restrictions in RESP3, and PING is the ordinary PING.
    assert_eq!(c.cmd(&["SET", "k", "v"]), simple("OK"));
    assert_eq!(c.cmd(&["PING"]), simple("PONG"));
    let mut publisher = server.client();
    assert_eq!(publisher.cmd(&["PUBLISH", "ch", "hi"]), int(2));
    assert_eq!(c.read(), push(vec![bulk("message"), bulk("ch"), bulk("hi")]));
    assert_eq!(c.read(), push(vec![bulk("pmessage"), bulk("c*"), bulk("ch"), bulk("hi")]));
    // Publishing to itself: the messages come before the PUBLISH reply, as in Redis.
    c.send_raw(&Client::encode(&[b"PUBLISH", b"ch", b"self"]));
    assert_eq!(c.read(), push(vec![bulk("message"), bulk("ch"), bulk("self")]));
    assert_eq!(c.read(), push(vec![bulk("pmessage"), bulk("c*"), bulk("ch"), bulk("self")]));
    assert_eq!(c.read(), int(2));
    // Confirmations are written even with CLIENT REPLY OFF.
    c.send_raw(&Client::encode(&[b"CLIENT", b"REPLY", b"OFF"]));
    assert_eq!(c.cmd(&["UNSUBSCRIBE", "ch"]), push(vec![bulk("unsubscribe"), bulk("ch"), int(1)]));
    assert_eq!(c.cmd(&["PUNSUBSCRIBE"]), push(vec![bulk("punsubscribe"), bulk("c*"), int(0)]));
    assert_eq!(c.cmd(&["UNSUBSCRIBE"]), push(vec![bulk("unsubscribe"), OwnedFrame::Null, int(0)]));
}

#[test]
fn pubsub_introspection_and_stats() {
    let server = two_workers();
    let mut a = server.client();
    let mut b = server.client();
    let mut admin = server.client();
    a.send_raw(&Client::encode(&[b"SUBSCRIBE", b"news.1", b"news.2"]));
    a.read();
    a.read();
    assert_eq!(b.cmd(&["SUBSCRIBE", "news.1"]), confirm("subscribe", "news.1", 1));
    assert_eq!(a.cmd(&["PSUBSCRIBE", "n*"]), confirm("psubscribe", "n*", 3));
    assert_eq!(b.cmd(&["PSUBSCRIBE", "n*"]), confirm("psubscribe", "n*", 2));
    assert_eq!(b.cmd(&["PSUBSCRIBE", "x*"]), confirm("psubscribe", "x*", 3));

    let OwnedFrame::Array { data: mut channels, .. } = admin.cmd(&["PUBSUB", "CHANNELS"]) else { panic!("array") };
    channels.sort_by_key(|f| format!("{f:?}"));
    assert_eq!(channels, vec![bulk("news.1"), bulk("news.2")]);
    assert_eq!(admin.cmd(&["PUBSUB", "CHANNELS", "*2"]), array(vec![bulk("news.2")]));
    assert_eq!(
        admin.cmd(&["PUBSUB", "NUMSUB", "news.1", "news.2", "none"]),
        array(vec![bulk("news.1"), int(2), bulk("news.2"), int(1), bulk("none"), int(0)])
    );
    assert_eq!(admin.cmd(&["PUBSUB", "NUMSUB"]), array(vec![]));
    assert_eq!(admin.cmd(&["PUBSUB", "NUMPAT"]), int(2));
    assert_eq!(admin.cmd(&["PUBSUB", "SHARDCHANNELS"]), array(vec![]));
    assert_eq!(admin.cmd(&["PUBSUB", "SHARDNUMSUB", "x"]), array(vec![bulk("x"), int(0)]));
    assert_eq!(admin.cmd(&["PUBSUB", "NUMPAT", "x"]), err("ERR wrong number of arguments for 'pubsub|numpat' command"));
    assert_eq!(admin.cmd(&["PUBSUB", "NOPE"]), err("ERR unknown subcommand 'NOPE'. Try PUBSUB HELP."));
    assert_eq!(admin.info_field("stats", "pubsub_channels"), "2");
    assert_eq!(admin.info_field("stats", "pubsub_patterns"), "2");
    // Each subscription that matches counts as one receiver.
    assert_eq!(admin.cmd(&["PUBLISH", "news.1", "m"]), int(4));

    let OwnedFrame::BlobString { data, .. } = admin.cmd(&["CLIENT", "LIST", "TYPE", "pubsub"]) else { panic!("bulk") };
    let list = String::from_utf8_lossy(&data).into_owned();
    assert_eq!(list.lines().count(), 2, "{list}");
    assert!(list.contains("flags=P db=0 sub=2 psub=1 "), "{list}");
    assert!(list.contains("flags=P db=0 sub=1 psub=2 "), "{list}");
}

#[test]
fn disconnect_cleans_the_registry() {
    let server = two_workers();
    let mut admin = server.client();
    {
        let mut subs = clients(&server, 3);
        for s in &mut subs {
            assert_eq!(s.cmd(&["SUBSCRIBE", "gone"]), confirm("subscribe", "gone", 1));
            assert_eq!(s.cmd(&["PSUBSCRIBE", "g*"]), confirm("psubscribe", "g*", 2));
        }
        assert_eq!(admin.cmd(&["PUBLISH", "gone", "x"]), int(6));
    }
    let start = Instant::now();
    while admin.cmd(&["PUBSUB", "NUMSUB", "gone"]) != array(vec![bulk("gone"), int(0)]) {
        assert!(start.elapsed() < Duration::from_secs(5), "subscribers never removed");
        std::thread::sleep(Duration::from_millis(10));
    }
    assert_eq!(admin.cmd(&["PUBSUB", "NUMPAT"]), int(0));
    assert_eq!(admin.cmd(&["PUBLISH", "gone", "x"]), int(0));
    assert_eq!(admin.cmd(&["PUBSUB", "CHANNELS"]), array(vec![]));
}

#[test]
fn subscribe_inside_multi_confirms_in_the_exec_reply() {
    let server = TestServer::start();
    let mut c = server.client();
    assert_eq!(c.cmd(&["MULTI"]), simple("OK"));
    assert_eq!(c.cmd(&["SUBSCRIBE", "t"]), simple("QUEUED"));
    assert_eq!(c.cmd(&["EXEC"]), array(vec![confirm("subscribe", "t", 1)]));
    let mut publisher = server.client();
    assert_eq!(publisher.cmd(&["PUBLISH", "t", "after-exec"]), int(1));
    assert_eq!(c.read(), message("t", "after-exec"));
}

#[test]
fn client_kill_type_pubsub_closes_subscribers_only() {
    let server = two_workers();
    let mut admin = server.client();
    let mut plain = server.client();
    let mut sub = server.client();
    assert_eq!(sub.cmd(&["SUBSCRIBE", "k"]), confirm("subscribe", "k", 1));
    assert_eq!(admin.cmd(&["CLIENT", "KILL", "TYPE", "pubsub"]), int(1));
    assert!(sub.is_closed());
    assert_eq!(plain.cmd(&["PING"]), simple("PONG"));
    let start = Instant::now();
    while admin.cmd(&["PUBSUB", "NUMSUB", "k"]) != array(vec![bulk("k"), int(0)]) {
        assert!(start.elapsed() < Duration::from_secs(5), "killed subscriber never removed");
        std::thread::sleep(Duration::from_millis(10));
    }
}

#[test]
fn a_subscriber_that_stops_reading_is_closed_at_the_output_limit() {
    let server = two_workers();
    let mut sub = server.client();
    assert_eq!(sub.cmd(&["SUBSCRIBE", "flood"]), confirm("subscribe", "flood", 1));
    let mut publisher = server.client();
    let payload = "x".repeat(1024 * 1024);
    // 80 MB: more than the 32 MB queue limit plus what the socket buffers hold.
    for _ in 0..80 {
        publisher.cmd(&["PUBLISH", "flood", &payload]);
    }
    let start = Instant::now();
    while publisher.cmd(&["PUBSUB", "NUMSUB", "flood"]) != array(vec![bulk("flood"), int(0)]) {
        assert!(start.elapsed() < Duration::from_secs(10), "slow subscriber never closed");
        std::thread::sleep(Duration::from_millis(20));
    }
    assert_eq!(publisher.cmd(&["PUBLISH", "flood", "x"]), int(0));
}

fn smessage(channel: &str, payload: &str) -> OwnedFrame {
    array(vec![bulk("smessage"), bulk(channel), bulk(payload)])
}

/// Sharded pub/sub (Redis 7.0) without a cluster: its own namespace and
/// counts, every reply as Debian's redis-server 7.0.15 gave it for the same
/// sequence.
#[test]
fn shard_channels_are_a_namespace_of_their_own() {
    let server = two_workers();
    let mut subscriber = server.client();
    let mut publisher = server.client();
    subscriber.send_raw(&Client::encode(&[b"SSUBSCRIBE", b"a", b"b"]));
    assert_eq!(subscriber.read(), confirm("ssubscribe", "a", 1));
    assert_eq!(subscriber.read(), confirm("ssubscribe", "b", 2));
    // Subscribe and ssubscribe counts are kept apart.
    assert_eq!(subscriber.cmd(&["SUBSCRIBE", "c"]), confirm("subscribe", "c", 1));
    assert!(matches!(subscriber.cmd(&["GET", "x"]), OwnedFrame::SimpleError { .. }));

    assert_eq!(publisher.cmd(&["SPUBLISH", "a", "hi"]), int(1));
    assert_eq!(subscriber.read(), smessage("a", "hi"));
    // PUBLISH does not reach shard channels, nor SPUBLISH plain ones.
    assert_eq!(publisher.cmd(&["PUBLISH", "a", "no"]), int(0));
    assert_eq!(publisher.cmd(&["SPUBLISH", "c", "no"]), int(0));

    let OwnedFrame::Array { data: mut shard_channels, .. } = publisher.cmd(&["PUBSUB", "SHARDCHANNELS"]) else {
        panic!("array")
    };
    shard_channels.sort_by_key(|f| format!("{f:?}"));
    assert_eq!(shard_channels, vec![bulk("a"), bulk("b")]);
    assert_eq!(publisher.cmd(&["PUBSUB", "SHARDCHANNELS", "a*"]), array(vec![bulk("a")]));
    assert_eq!(
        publisher.cmd(&["PUBSUB", "SHARDNUMSUB", "a", "b", "z"]),
        array(vec![bulk("a"), int(1), bulk("b"), int(1), bulk("z"), int(0)])
    );
    assert_eq!(publisher.cmd(&["PUBSUB", "CHANNELS"]), array(vec![bulk("c")]));
    assert_eq!(publisher.info_number("stats", "pubsubshard_channels"), 2);
    let OwnedFrame::BlobString { data, .. } = publisher.cmd(&["CLIENT", "LIST"]) else { panic!("CLIENT LIST") };
    let list = String::from_utf8_lossy(&data).into_owned();
    assert!(list.lines().any(|l| l.contains(" flags=P ") && l.contains(" sub=1 psub=0 ssub=2 ")), "{list}");

    subscriber.send_raw(&Client::encode(&[b"SUNSUBSCRIBE", b"a", b"zz"]));
    assert_eq!(subscriber.read(), confirm("sunsubscribe", "a", 1));
    assert_eq!(subscriber.read(), confirm("sunsubscribe", "zz", 1));
    // The shard channel left keeps the connection in subscribed mode.
    assert_eq!(subscriber.cmd(&["UNSUBSCRIBE"]), confirm("unsubscribe", "c", 0));
    assert!(matches!(subscriber.cmd(&["GET", "x"]), OwnedFrame::SimpleError { .. }));
    assert_eq!(subscriber.cmd(&["SUNSUBSCRIBE"]), confirm("sunsubscribe", "b", 0));
    assert_eq!(subscriber.cmd(&["SUNSUBSCRIBE"]), array(vec![bulk("sunsubscribe"), OwnedFrame::Null, int(0)]));
    assert_eq!(subscriber.cmd(&["GET", "x"]), OwnedFrame::Null);
    assert_eq!(publisher.cmd(&["SPUBLISH", "b", "x"]), int(0));
    assert_eq!(publisher.info_number("stats", "pubsubshard_channels"), 0);
}

#[test]
fn ssubscribe_is_refused_where_a_client_cannot_block() {
    let server = TestServer::start();
    let mut c = server.client();
    assert_eq!(c.cmd(&["MULTI"]), simple("OK"));
    assert_eq!(c.cmd(&["SSUBSCRIBE", "q"]), simple("QUEUED"));
    assert_eq!(c.cmd(&["EXEC"]), array(vec![err("ERR SSUBSCRIBE isn't allowed for a DENY BLOCKING client")]));
    let refused = c.cmd(&["EVAL", "return redis.call('ssubscribe','b')", "0"]);
    assert!(error_text(&refused).starts_with("ERR This Redis command is not allowed from script"), "{refused:?}");
    // SPUBLISH is allowed in scripts.
    assert_eq!(c.cmd(&["EVAL", "return redis.call('spublish','b','m')", "0"]), int(0));
}

#[test]
fn resp3_shard_messages_are_push_frames() {
    let server = TestServer::start();
    let mut subscriber = server.client();
    subscriber.resp3 = true;
    subscriber.cmd(&["HELLO", "3"]);
    assert_eq!(subscriber.cmd(&["SSUBSCRIBE", "r"]), push(vec![bulk("ssubscribe"), bulk("r"), int(1)]));
    let mut publisher = server.client();
    assert_eq!(publisher.cmd(&["SPUBLISH", "r", "m3"]), int(1));
    assert_eq!(subscriber.read(), push(vec![bulk("smessage"), bulk("r"), bulk("m3")]));
    // Not in subscribed mode in RESP3: other commands run.
    assert_eq!(subscriber.cmd(&["GET", "x"]), OwnedFrame::Null);
    assert_eq!(subscriber.cmd(&["SUNSUBSCRIBE"]), push(vec![bulk("sunsubscribe"), bulk("r"), int(0)]));
}

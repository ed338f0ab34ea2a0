//! Integration tests of client-side caching (CLIENT TRACKING) over real
//! RESP, with two workers so that trackers and writers may live on
//! different threads.

use std::time::{Duration, Instant};

use crate::common::*;
use redis_protocol::resp3::types::OwnedFrame;

fn array(items: Vec<OwnedFrame>) -> OwnedFrame {
    OwnedFrame::Array { data: items, attributes: None }
}

fn push(items: Vec<OwnedFrame>) -> OwnedFrame {
    OwnedFrame::Push { data: items, attributes: None }
}

/// `>2 invalidate [keys]`.
fn invalidate(keys: &[&str]) -> OwnedFrame {
    push(vec![bulk("invalidate"), array(keys.iter().map(|k| bulk(k)).collect())])
}

fn two_workers() -> TestServer {
    TestServer::start_with(|c| c.threads = Some(2))
}

/// A RESP3 connection with tracking turned on with `options`.
fn tracker(server: &TestServer, options: &[&str]) -> Client {
    let mut c = server.client();
    c.resp3 = true;
    assert!(matches!(c.cmd(&["HELLO", "3"]), OwnedFrame::Map { .. }));
    let mut words = vec!["CLIENT", "TRACKING", "ON"];
    words.extend_from_slice(options);
    assert_eq!(c.cmd(&words), simple("OK"));
    c
}

/// Asserts that nothing is queued for `c`: its next frame is PING's reply.
fn assert_nothing_pending(c: &mut Client) {
    assert_eq!(c.cmd(&["PING"]), simple("PONG"));
}

fn client_id(c: &mut Client) -> String {
    match c.cmd(&["CLIENT", "ID"]) {
        OwnedFrame::Number { data, .. } => data.to_string(),
        other => panic!("CLIENT ID: {other:?}"),
    }
}

fn wait_for(mut condition: impl FnMut() -> bool, what: &str) {
    let deadline = Instant::now() + Duration::from_secs(5);
    while !condition() {
        assert!(Instant::now() < deadline, "never: {what}");
        std::thread::sleep(Duration::from_millis(5));
    }
}

#[test]
fn a_write_on_any_worker_invalidates_every_reader_once() {
    let server = two_workers();
    let mut writer = server.client();
    writer.cmd(&["SET", "k", "1"]);
    let mut readers: Vec<Client> = (0..4).map(|_| tracker(&server, &[])).collect();
    for r in &mut readers {
        assert_eq!(r.cmd(&["GET", "k"]), bulk("1"));
    }
    assert_eq!(writer.cmd(&["SET", "k", "2"]), simple("OK"));
    for r in &mut readers {
        // Idle readers are woken and sent the push without asking.
        assert_eq!(r.read(), invalidate(&["k"]));
    }
    // The entry is gone: a second write tells nobody until someone reads again.
    writer.cmd(&["SET", "k", "3"]);
    for r in &mut readers {
        assert_nothing_pending(r);
    }
    assert_eq!(writer.info_number("stats", "tracking_total_keys"), 0);
}

#[test]
fn own_write_is_invalidated_right_after_its_reply() {
    let server = two_workers();
    let mut c = tracker(&server, &[]);
    c.cmd(&["SET", "k", "1"]);
    assert_eq!(c.cmd(&["GET", "k"]), bulk("1"));
    // Pipelined: the invalidation comes after SET's reply, before GET's.
    c.send_raw(&[Client::encode(&[b"SET", b"k", b"2"]), Client::encode(&[b"GET", b"k"])].concat());
    assert_eq!(c.read(), simple("OK"));
    assert_eq!(c.read(), invalidate(&["k"]));
    assert_eq!(c.read(), bulk("2"));
    // Inside a transaction, after EXEC's reply.
    c.cmd(&["MULTI"]);
    c.cmd(&["INCR", "n"]);
    c.cmd(&["GET", "k"]);
    c.cmd(&["EXEC"]);
    c.cmd(&["MULTI"]);
    c.cmd(&["SET", "k", "3"]);
    assert_eq!(c.cmd(&["EXEC"]), array(vec![simple("OK")]));
    assert_eq!(c.read(), invalidate(&["k"]));
    assert_nothing_pending(&mut c);
}

#[test]
fn noloop_skips_own_changes_only() {
    let server = two_workers();
    let mut c = tracker(&server, &["NOLOOP"]);
    let mut other = server.client();
    c.cmd(&["MGET", "mine", "theirs"]);
    assert_eq!(c.cmd(&["SET", "mine", "1"]), simple("OK"));
    assert_nothing_pending(&mut c);
    other.cmd(&["SET", "theirs", "1"]);
    assert_eq!(c.read(), invalidate(&["theirs"]));
}

#[test]
fn redirection_to_a_resp2_subscriber_uses_the_invalidate_channel() {
    let server = two_workers();
    let mut target = server.client();
    let id = client_id(&mut target);
    target.cmd(&["SUBSCRIBE", "__redis__:invalidate"]);
    let mut c = server.client();
    assert_eq!(c.cmd(&["CLIENT", "TRACKING", "on", "REDIRECT", &id]), simple("OK"));
    assert_eq!(c.cmd(&["CLIENT", "GETREDIR"]), int(id.parse().expect("id")));
    c.cmd(&["GET", "a"]);
    let mut writer = server.client();
    writer.cmd(&["INCR", "a"]);
    let expected = array(vec![bulk("message"), bulk("__redis__:invalidate"), array(vec![bulk("a")])]);
    assert_eq!(target.read(), expected);
    let own_id = client_id(&mut c);
    let list = match c.cmd(&["CLIENT", "LIST", "ID", &own_id]) {
        OwnedFrame::BlobString { data, .. } => String::from_utf8_lossy(&data).into_owned(),
        other => panic!("CLIENT LIST: {other:?}"),
    };
    assert!(list.contains(" flags=t ") && list.contains(&format!(" redir={id} ")), "{list}");
    // The redirection client goes away: a RESP3 tracker is told, and its flags show it.
    drop(target);
    wait_for(|| writer.info_number("clients", "connected_clients") == 2, "redirection client gone");
    let mut c3 = tracker(&server, &["REDIRECT", &client_id(&mut writer)]);
    let writer_id = client_id(&mut writer);
    c3.cmd(&["GET", "b"]);
    drop(writer);
    let mut third = server.client();
    wait_for(|| third.info_number("clients", "connected_clients") == 3, "writer gone");
    third.cmd(&["SET", "b", "1"]);
    let broken = push(vec![bulk("tracking-redir-broken"), int(writer_id.parse().expect("id"))]);
    assert_eq!(c3.read(), broken);
    let info = c3.cmd(&["CLIENT", "TRACKINGINFO"]);
    let OwnedFrame::Map { data, .. } = info else { panic!("TRACKINGINFO: {info:?}") };
    let flags = data.get(&bulk("flags")).expect("flags");
    assert_eq!(flags, &OwnedFrame::Set { data: [bulk("on"), bulk("broken_redirect")].into(), attributes: None });
}

#[test]
fn bcast_sends_the_keys_under_each_prefix_per_command() {
    let server = two_workers();
    let mut c = tracker(&server, &["BCAST", "PREFIX", "a:", "PREFIX", "b:"]);
    let mut writer = server.client();
    writer.cmd(&["MSET", "a:1", "x", "a:2", "y", "c:1", "z"]);
    assert_eq!(c.read(), invalidate(&["a:1", "a:2"]));
    writer.cmd(&["SET", "b:9", "x"]);
    assert_eq!(c.read(), invalidate(&["b:9"]));
    assert_eq!(writer.info_number("stats", "tracking_total_prefixes"), 2);
    assert_eq!(
        c.cmd(&["CLIENT", "TRACKING", "on", "BCAST", "PREFIX", "a:x"]),
        err("ERR Prefix 'a:x' overlaps with an existing prefix 'a:'. Prefixes for a single client must not overlap.")
    );
}

#[test]
fn flushes_and_swapdb_invalidate_everything() {
    let server = two_workers();
    let mut c = tracker(&server, &[]);
    c.cmd(&["GET", "k"]);
    let mut other = server.client();
    other.cmd(&["FLUSHALL"]);
    assert_eq!(c.read(), push(vec![bulk("invalidate"), OwnedFrame::Null]));
    assert_eq!(other.info_number("stats", "tracking_total_keys"), 0);
    other.cmd(&["SWAPDB", "0", "1"]);
    assert_eq!(c.read(), push(vec![bulk("invalidate"), OwnedFrame::Null]));
}

#[test]
fn expired_keys_are_invalidated() {
    let server = two_workers();
    let mut other = server.client();
    other.cmd(&["SET", "k", "v", "PX", "30"]);
    let mut c = tracker(&server, &[]);
    assert_eq!(c.cmd(&["GET", "k"]), bulk("v"));
    // Active expiry (no command reads it again).
    assert_eq!(c.read(), invalidate(&["k"]));
}

#[test]
fn optin_tracks_only_after_caching_yes() {
    let server = two_workers();
    let mut c = tracker(&server, &["OPTIN"]);
    c.cmd(&["GET", "a"]);
    assert_eq!(c.cmd(&["CLIENT", "CACHING", "yes"]), simple("OK"));
    c.cmd(&["GET", "b"]);
    c.cmd(&["GET", "c"]);
    let mut writer = server.client();
    assert_eq!(writer.info_number("stats", "tracking_total_keys"), 1);
    writer.cmd(&["MSET", "a", "1", "b", "1", "c", "1"]);
    assert_eq!(c.read(), invalidate(&["b"]));
    assert_nothing_pending(&mut c);
    assert_eq!(
        c.cmd(&["CLIENT", "CACHING", "no"]),
        err("ERR CLIENT CACHING NO is only valid when tracking is enabled in OPTOUT mode.")
    );
}

#[test]
fn the_table_limit_evicts_and_tells_the_clients() {
    let server = two_workers();
    let mut c = tracker(&server, &[]);
    for i in 0..10 {
        c.cmd(&["GET", &format!("k{i}")]);
    }
    let mut admin = server.client();
    assert_eq!(admin.info_number("stats", "tracking_total_keys"), 10);
    assert_eq!(admin.cmd(&["CONFIG", "SET", "tracking-table-max-keys", "3"]), simple("OK"));
    assert_eq!(admin.info_number("stats", "tracking_total_keys"), 3);
    for _ in 0..7 {
        let frame = c.read();
        assert!(matches!(&frame, OwnedFrame::Push { data, .. } if data[0] == bulk("invalidate")), "{frame:?}");
    }
    assert_nothing_pending(&mut c);
    assert_eq!(
        admin.cmd(&["CONFIG", "GET", "tracking-table-max-keys"]),
        array(vec![bulk("tracking-table-max-keys"), bulk("3")])
    );
}

#[test]
fn off_and_disconnect_free_the_clients_entries() {
    let server = two_workers();
    let mut a = tracker(&server, &[]);
    let mut b = tracker(&server, &["BCAST"]);
    a.cmd(&["MGET", "x", "y"]);
    let mut admin = server.client();
    assert_eq!(admin.info_number("clients", "tracking_clients"), 2);
    assert_eq!(admin.info_number("stats", "tracking_total_items"), 2);
    assert_eq!(admin.info_number("stats", "tracking_total_prefixes"), 1);
    assert_eq!(a.cmd(&["CLIENT", "TRACKING", "off"]), simple("OK"));
    assert_eq!(admin.info_number("stats", "tracking_total_items"), 0);
    assert_eq!(admin.info_number("stats", "tracking_total_keys"), 0);
    drop(b.cmd(&["QUIT"]));
    wait_for(|| admin.info_number("clients", "tracking_clients") == 0, "tracking clients gone");
    assert_eq!(admin.info_number("stats", "tracking_total_prefixes"), 0);
    assert_eq!(a.cmd(&["CLIENT", "GETREDIR"]), int(-1));
}

#[test]
fn option_errors_are_redis_errors() {
    let server = two_workers();
    let mut c = server.client();
    let cases: [(&[&str], &str); 7] = [
        (&["CLIENT", "TRACKING", "on", "PREFIX", "a"], "ERR PREFIX option requires BCAST mode to be enabled"),
        (&["CLIENT", "TRACKING", "on", "BCAST", "OPTIN"], "ERR OPTIN and OPTOUT are not compatible with BCAST"),
        (&["CLIENT", "TRACKING", "on", "OPTIN", "OPTOUT"], "ERR You can't specify both OPTIN mode and OPTOUT mode"),
        (&["CLIENT", "TRACKING", "on", "REDIRECT", "999999"], "ERR The client ID you want redirect to does not exist"),
        (&["CLIENT", "TRACKING", "maybe"], "ERR syntax error"),
        (
            &["CLIENT", "TRACKING", "on", "BCAST", "PREFIX", "FOOBAR", "PREFIX", "FOO"],
            "ERR Prefix 'FOOBAR' overlaps with another provided prefix 'FOO'. Prefixes for a single client must not overlap.",
        ),
        (
            &["CLIENT", "CACHING", "yes"],
            "ERR CLIENT CACHING can be called only when the client is in tracking mode with OPTIN or OPTOUT mode enabled",
        ),
    ];
    for (words, expected) in cases {
        assert_eq!(c.cmd(words), err(expected), "{words:?}");
    }
    c.cmd(&["CLIENT", "TRACKING", "on"]);
    assert_eq!(
        c.cmd(&["CLIENT", "TRACKING", "on", "BCAST"]),
        err("ERR You can't switch BCAST mode on/off before disabling tracking for this client, and then re-enabling it with a different mode.")
    );
}

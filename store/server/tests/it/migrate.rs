//! MIGRATE between two in-process servers, and against fake targets on a
//! plain `TcpListener` (one that never answers, one that drops the first
//! connection, one that answers late while the source is written to).

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use crate::common::*;
use redis_protocol::resp3::types::OwnedFrame;

/// The pair every test uses: a source and a target beside it.
fn pair() -> (TestServer, TestServer) {
    let source = TestServer::start_with(|c| c.migrate_socket_idle = Duration::from_millis(300));
    let target = source.start_beside(|_| {});
    (source, target)
}

fn port_of(server: &TestServer) -> String {
    server.addr().port().to_string()
}

fn migrate(c: &mut Client, port: &str, key: &str, db: &str, timeout: &str, extra: &[&str]) -> OwnedFrame {
    let mut words = vec!["MIGRATE", "127.0.0.1", port, key, db, timeout];
    words.extend_from_slice(extra);
    c.cmd(&words)
}

fn pttl(c: &mut Client, key: &str) -> i64 {
    match c.cmd(&["PTTL", key]) {
        OwnedFrame::Number { data, .. } => data,
        other => panic!("PTTL reply {other:?}"),
    }
}

/// Each type's key and the command that reads its whole value.
fn typed_keys(c: &mut Client) -> Vec<(&'static str, Vec<&'static str>)> {
    c.cmd(&["SET", "s", "text"]);
    c.cmd(&["RPUSH", "l", "a", "b", "c"]);
    c.cmd(&["HSET", "h", "f", "1", "g", "2"]);
    c.cmd(&["SADD", "st", "x", "y"]);
    c.cmd(&["ZADD", "z", "1.5", "m", "2", "n"]);
    c.cmd(&["XADD", "x", "1-1", "k", "v"]);
    c.cmd(&["PFADD", "hll", "a", "b"]);
    vec![
        ("s", vec!["GET"]),
        ("l", vec!["LRANGE", "0", "-1"]),
        ("h", vec!["HGETALL"]),
        ("st", vec!["SMEMBERS"]),
        ("z", vec!["ZRANGE", "0", "-1", "WITHSCORES"]),
        ("x", vec!["XRANGE", "-", "+"]),
        ("hll", vec!["PFCOUNT"]),
    ]
}

/// Every text in a reply, depth first.
fn texts(frame: &OwnedFrame) -> Vec<String> {
    match frame {
        OwnedFrame::Array { data, .. } => data.iter().flat_map(texts).collect(),
        OwnedFrame::BlobString { data, .. } | OwnedFrame::SimpleString { data, .. } => {
            vec![String::from_utf8_lossy(data).into_owned()]
        }
        OwnedFrame::SimpleError { data, .. } => vec![data.clone()],
        _ => Vec::new(),
    }
}

fn read_value(c: &mut Client, key: &str, read: &[&str]) -> OwnedFrame {
    let mut words = vec![read[0], key];
    words.extend_from_slice(&read[1..]);
    let reply = c.cmd(&words);
    // Set members come in no particular order.
    match reply {
        OwnedFrame::Array { mut data, attributes } if read[0] == "SMEMBERS" => {
            data.sort_by_key(|f| format!("{f:?}"));
            OwnedFrame::Array { data, attributes }
        }
        other => other,
    }
}

#[test]
fn moves_every_type_with_its_ttl_and_logs_the_deletes() {
    let (mut source, target) = pair();
    let port = port_of(&target);
    let mut s = source.client();
    let mut t = target.client();
    let keys = typed_keys(&mut s);
    let expected: Vec<OwnedFrame> = keys.iter().map(|(k, read)| read_value(&mut s, k, read)).collect();
    s.cmd(&["PEXPIRE", "l", "100000"]);
    let mut events = source.client();
    events.cmd(&["CONFIG", "SET", "notify-keyspace-events", "Eg"]);
    events.cmd(&["SUBSCRIBE", "__keyevent@0__:del"]);
    for (key, _) in &keys {
        assert_eq!(migrate(&mut s, &port, key, "0", "5000", &[]), simple("OK"), "{key}");
        assert_eq!(s.cmd(&["EXISTS", key]), int(0), "{key} left the source");
        assert_eq!(events.read(), array(vec![bulk("message"), bulk("__keyevent@0__:del"), bulk(key)]));
    }
    for ((key, read), value) in keys.iter().zip(&expected) {
        assert_eq!(&read_value(&mut t, key, read), value, "{key} on the target");
    }
    let ttl = pttl(&mut t, "l");
    assert!(ttl > 90_000 && ttl <= 100_000, "the TTL travelled: {ttl}");
    assert_eq!(pttl(&mut t, "s"), -1);
    let stats = s.info_field("commandstats", "cmdstat_migrate");
    assert!(stats.starts_with(&format!("calls={},", keys.len())), "{stats}");
    // The deletes are in the WAL: a restart does not bring the keys back.
    drop((s, events));
    source.restart_with(|_| {});
    let mut s = source.client();
    assert_eq!(s.cmd(&["DBSIZE"]), int(0));
}

#[test]
fn copy_keeps_the_source_and_replace_overwrites() {
    let (source, target) = pair();
    let port = port_of(&target);
    let mut s = source.client();
    let mut t = target.client();
    s.cmd(&["RPUSH", "list", "a", "b"]);
    s.cmd(&["PEXPIRE", "list", "100000"]);
    assert_eq!(migrate(&mut s, &port, "list", "0", "5000", &["COPY"]), simple("OK"));
    assert_eq!(s.cmd(&["LLEN", "list"]), int(2));
    assert_eq!(t.cmd(&["LRANGE", "list", "0", "-1"]), array(vec![bulk("a"), bulk("b")]));
    assert!(pttl(&mut t, "list") > 90_000);
    assert_eq!(
        migrate(&mut s, &port, "list", "0", "5000", &["COPY"]),
        err("ERR Target instance replied with error: BUSYKEY Target key name already exists.")
    );
    s.cmd(&["RPUSH", "list", "c"]);
    assert_eq!(migrate(&mut s, &port, "list", "0", "5000", &["COPY", "REPLACE"]), simple("OK"));
    assert_eq!(t.cmd(&["LLEN", "list"]), int(3));
    assert_eq!(s.cmd(&["LLEN", "list"]), int(3));
    // Without COPY, a refused key stays on the source.
    t.cmd(&["SET", "k", "theirs"]);
    s.cmd(&["SET", "k", "ours"]);
    let refused = migrate(&mut s, &port, "k", "0", "5000", &[]);
    assert_eq!(error_text(&refused), "ERR Target instance replied with error: BUSYKEY Target key name already exists.");
    assert_eq!(s.cmd(&["GET", "k"]), bulk("ours"));
    assert_eq!(s.info_field("errorstats", "errorstat_ERR"), "count=2");
    assert!(s.info_field("commandstats", "cmdstat_migrate").contains("failed_calls=2"));
}

#[test]
fn keys_option_moves_the_existing_keys_only() {
    let (source, target) = pair();
    let port = port_of(&target);
    let mut s = source.client();
    let mut t = target.client();
    assert_eq!(migrate(&mut s, &port, "", "0", "5000", &["KEYS", "nokey-1", "nokey-2"]), simple("NOKEY"));
    assert_eq!(migrate(&mut s, &port, "missing", "0", "5000", &[]), simple("NOKEY"));
    s.cmd(&["MSET", "k1", "v1", "k2", "v2", "k3", "v3"]);
    let reply = migrate(&mut s, &port, "", "0", "5000", &["KEYS", "nokey-1", "k1", "nokey-2", "k2", "k3"]);
    assert_eq!(reply, simple("OK"));
    assert_eq!(s.cmd(&["DBSIZE"]), int(0));
    assert_eq!(t.cmd(&["MGET", "k1", "k2", "k3"]), array(vec![bulk("v1"), bulk("v2"), bulk("v3")]));
    // Only the keys the target took leave the source (Redis's "delete just ack keys").
    s.cmd(&["MSET", "a", "1", "b", "2", "c", "3"]);
    t.cmd(&["SET", "b", "taken"]);
    let reply = migrate(&mut s, &port, "", "0", "5000", &["KEYS", "a", "b", "c"]);
    assert_eq!(error_text(&reply), "ERR Target instance replied with error: BUSYKEY Target key name already exists.");
    assert_eq!(s.cmd(&["MGET", "a", "b", "c"]), array(vec![OwnedFrame::Null, bulk("2"), OwnedFrame::Null]));
    assert_eq!(t.cmd(&["MGET", "a", "b", "c"]), array(vec![bulk("1"), bulk("taken"), bulk("3")]));
}

#[test]
fn arguments_are_checked_as_redis_does() {
    let server = TestServer::start();
    let mut c = server.client();
    let e = |c: &mut Client, words: &[&str]| error_text(&c.cmd(words));
    assert_eq!(
        e(&mut c, &["MIGRATE", "127.0.0.1", "6379", "NotEmpty", "9", "5000", "keys", "a", "b", "c"]),
        "ERR When using MIGRATE KEYS option, the key argument must be set to the empty string"
    );
    assert_eq!(e(&mut c, &["MIGRATE", "127.0.0.1", "1", "k", "0", "5", "BOGUS"]), "ERR syntax error");
    assert_eq!(e(&mut c, &["MIGRATE", "127.0.0.1", "1", "k", "0", "5", "AUTH"]), "ERR syntax error");
    assert_eq!(e(&mut c, &["MIGRATE", "127.0.0.1", "1", "k", "0", "5", "AUTH2", "u"]), "ERR syntax error");
    assert_eq!(e(&mut c, &["MIGRATE", "127.0.0.1", "1", "k", "0", "x"]), "ERR value is not an integer or out of range");
    assert_eq!(e(&mut c, &["MIGRATE", "127.0.0.1", "1", "k", "x", "5"]), "ERR value is not an integer or out of range");
    assert_eq!(
        e(&mut c, &["MIGRATE", "127.0.0.1", "1", "k", "0"]),
        "ERR wrong number of arguments for 'migrate' command"
    );
    // Movable keys, as Redis's table says.
    assert_eq!(
        c.cmd(&["COMMAND", "GETKEYS", "MIGRATE", "h", "1", "", "0", "5", "AUTH", "p", "KEYS", "a", "b"]),
        array(vec![bulk("a"), bulk("b")])
    );
    assert_eq!(c.cmd(&["COMMAND", "GETKEYS", "MIGRATE", "h", "1", "k", "0", "5"]), array(vec![bulk("k")]));
    let info = texts(&c.cmd(&["COMMAND", "INFO", "migrate"]));
    assert!(info.iter().any(|t| t == "movablekeys"), "{info:?}");
    // RESTORE-ASKING is RESTORE's twin.
    c.cmd(&["SET", "orig", "v"]);
    let OwnedFrame::BlobString { data: payload, .. } = c.cmd(&["DUMP", "orig"]) else { panic!("DUMP") };
    c.send_raw(&Client::encode(&[b"RESTORE-ASKING", b"copy", b"0", &payload]));
    assert_eq!(c.read(), simple("OK"));
    assert_eq!(c.cmd(&["GET", "copy"]), bulk("v"));
}

#[test]
fn destination_db_and_select_only_when_it_changes() {
    let (source, target) = pair();
    let port = port_of(&target);
    let mut s = source.client();
    let mut t = target.client();
    s.cmd(&["MSET", "a", "1", "b", "2", "c", "3"]);
    assert_eq!(migrate(&mut s, &port, "a", "9", "5000", &[]), simple("OK"));
    assert_eq!(migrate(&mut s, &port, "b", "9", "5000", &[]), simple("OK"));
    assert_eq!(migrate(&mut s, &port, "c", "3", "5000", &[]), simple("OK"));
    assert_eq!(t.cmd(&["SELECT", "9"]), simple("OK"));
    assert_eq!(t.cmd(&["MGET", "a", "b"]), array(vec![bulk("1"), bulk("2")]));
    assert_eq!(t.cmd(&["SELECT", "3"]), simple("OK"));
    assert_eq!(t.cmd(&["GET", "c"]), bulk("3"));
    // SELECT 9 once, then SELECT 3 (and the test's own two).
    assert!(t.info_field("commandstats", "cmdstat_select").starts_with("calls=4,"));
    // A database the target does not have: its error is relayed.
    s.cmd(&["SET", "d", "4"]);
    let reply = migrate(&mut s, &port, "d", "99", "5000", &[]);
    assert_eq!(error_text(&reply), "ERR Target instance replied with error: ERR DB index is out of range");
    assert_eq!(s.cmd(&["GET", "d"]), bulk("4"));
}

#[test]
fn auth_and_auth2_reach_a_protected_target() {
    let source = TestServer::start();
    let target = source.start_beside(|c| c.requirepass = Some("s3cret".to_string()));
    let port = port_of(&target);
    let mut s = source.client();
    s.cmd(&["MSET", "a", "1", "b", "2", "c", "3"]);
    let reply = migrate(&mut s, &port, "a", "0", "5000", &[]);
    assert_eq!(error_text(&reply), "ERR Target instance replied with error: NOAUTH Authentication required.");
    let reply = migrate(&mut s, &port, "a", "0", "5000", &["AUTH", "wrong"]);
    assert_eq!(
        error_text(&reply),
        "ERR Target instance replied with error: WRONGPASS invalid username-password pair or user is disabled."
    );
    assert_eq!(s.cmd(&["EXISTS", "a"]), int(1));
    assert_eq!(migrate(&mut s, &port, "a", "0", "5000", &["AUTH", "s3cret"]), simple("OK"));
    assert_eq!(migrate(&mut s, &port, "b", "0", "5000", &["AUTH2", "default", "s3cret"]), simple("OK"));
    assert_eq!(s.cmd(&["DBSIZE"]), int(1));
    let mut t = target.client();
    t.cmd(&["AUTH", "s3cret"]);
    assert_eq!(t.cmd(&["MGET", "a", "b"]), array(vec![bulk("1"), bulk("2")]));
    // The password is not shown in SLOWLOG.
    s.cmd(&["CONFIG", "SET", "slowlog-log-slower-than", "0"]);
    migrate(&mut s, &port, "c", "0", "5000", &["AUTH", "s3cret"]);
    let log = texts(&s.cmd(&["SLOWLOG", "GET", "2"]));
    assert!(log.iter().any(|t| t == "(redacted)") && !log.iter().any(|t| t.contains("s3cret")), "{log:?}");
}

#[test]
fn a_target_that_is_down_or_silent_is_an_ioerr() {
    let source = TestServer::start();
    let mut s = source.client();
    s.cmd(&["SET", "k", "v"]);
    let closed = TcpListener::bind("127.0.0.1:0").expect("bind");
    let port = closed.local_addr().expect("addr").port().to_string();
    drop(closed);
    // Refused: Redis notices at its first write (and retries once).
    let started = Instant::now();
    let reply = migrate(&mut s, &port, "k", "0", "1000", &[]);
    assert_eq!(error_text(&reply), "IOERR error or timeout writing to target instance");
    assert!(started.elapsed() < Duration::from_secs(1));
    // No address at all.
    let reply = s.cmd(&["MIGRATE", "", "1", "k", "0", "100"]);
    assert_eq!(error_text(&reply), "IOERR error or timeout connecting to the client");
    let reply = s.cmd(&["MIGRATE", "127.0.0.1", "-5", "k", "0", "100"]);
    assert_eq!(error_text(&reply), "IOERR error or timeout connecting to the client");
    // Accepts, reads, never answers: a timeout, not retried.
    let silent = TcpListener::bind("127.0.0.1:0").expect("bind");
    let port = silent.local_addr().expect("addr").port().to_string();
    let started = Instant::now();
    let reply = migrate(&mut s, &port, "k", "0", "200", &[]);
    let took = started.elapsed();
    assert_eq!(error_text(&reply), "IOERR error or timeout reading to target instance");
    assert!(took >= Duration::from_millis(190) && took < Duration::from_secs(3), "{took:?}");
    let accepted = silent.accept().expect("the connection MIGRATE made");
    silent.set_nonblocking(true).expect("nonblocking");
    assert!(silent.accept().is_err(), "a timeout is not retried");
    drop(accepted);
    assert_eq!(s.cmd(&["GET", "k"]), bulk("v"));
    assert_eq!(s.info_number("stats", "migrate_cached_sockets"), 0, "the failed connection is not kept");
    assert_eq!(s.info_field("errorstats", "errorstat_IOERR"), "count=4");
}

#[test]
fn connections_are_cached_reused_and_released_when_idle() {
    let (source, target) = pair();
    let port = port_of(&target);
    let mut s = source.client();
    let mut t = target.client();
    s.cmd(&["MSET", "a", "1", "b", "2"]);
    assert_eq!(s.info_number("stats", "migrate_cached_sockets"), 0);
    assert_eq!(migrate(&mut s, &port, "a", "0", "5000", &[]), simple("OK"));
    assert_eq!(s.info_number("stats", "migrate_cached_sockets"), 1);
    let connections = t.info_number("stats", "total_connections_received");
    assert_eq!(migrate(&mut s, &port, "b", "0", "5000", &["COPY"]), simple("OK"));
    assert_eq!(t.info_number("stats", "total_connections_received"), connections, "the cached connection was reused");
    // Idle for 300 ms (this server's setting): closed.
    let deadline = Instant::now() + Duration::from_secs(5);
    while s.info_number("stats", "migrate_cached_sockets") != 0 {
        assert!(Instant::now() < deadline, "the idle connection was never closed");
        std::thread::sleep(Duration::from_millis(50));
    }
    assert_eq!(migrate(&mut s, &port, "b", "0", "5000", &["COPY", "REPLACE"]), simple("OK"));
    assert_eq!(t.info_number("stats", "total_connections_received"), connections + 1);
}

/// How many complete RESP commands `buf` holds.
fn complete_commands(buf: &[u8]) -> usize {
    let mut pos = 0;
    let mut count = 0;
    let line = |pos: usize| -> Option<(i64, usize)> {
        let end = buf.get(pos..)?.windows(2).position(|w| w == b"\r\n")? + pos;
        let n = std::str::from_utf8(&buf[pos + 1..end]).ok()?.parse().ok()?;
        Some((n, end + 2))
    };
    'commands: while let Some((args, mut at)) = line(pos) {
        for _ in 0..args {
            let Some((len, body)) = line(at) else { break 'commands };
            at = body + len as usize + 2;
            if at > buf.len() {
                break 'commands;
            }
        }
        pos = at;
        count += 1;
    }
    count
}

/// Reads from `stream` until it has sent `n` commands.
fn read_commands(stream: &mut TcpStream, n: usize) {
    let mut buf = Vec::new();
    let mut chunk = [0u8; 4096];
    while complete_commands(&buf) < n {
        let read = stream.read(&mut chunk).expect("read");
        assert!(read > 0, "MIGRATE closed the connection");
        buf.extend_from_slice(&chunk[..read]);
    }
}

#[test]
fn a_connection_that_drops_is_retried_once() {
    let source = TestServer::start();
    let mut s = source.client();
    s.cmd(&["SET", "k", "v"]);
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
    let port = listener.local_addr().expect("addr").port().to_string();
    let target = std::thread::spawn(move || {
        let (mut first, _) = listener.accept().expect("accept");
        first.set_read_timeout(Some(Duration::from_secs(5))).expect("timeout");
        read_commands(&mut first, 2);
        drop(first);
        let (mut second, _) = listener.accept().expect("accept again");
        second.set_read_timeout(Some(Duration::from_secs(5))).expect("timeout");
        read_commands(&mut second, 2);
        second.write_all(b"+OK\r\n+OK\r\n").expect("reply");
        second
    });
    assert_eq!(migrate(&mut s, &port, "k", "0", "2000", &[]), simple("OK"));
    assert_eq!(s.cmd(&["EXISTS", "k"]), int(0));
    drop(target.join().expect("fake target"));
}

#[test]
fn a_write_during_the_transfer_is_not_lost_and_the_worker_keeps_serving() {
    let source = TestServer::start();
    let mut s = source.client();
    let mut other = source.client();
    s.cmd(&["MSET", "written", "before", "untouched", "x"]);
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
    let port = listener.local_addr().expect("addr").port().to_string();
    let (received, on_received) = mpsc::channel();
    let (go, on_go) = mpsc::channel::<()>();
    let target = std::thread::spawn(move || {
        let (mut conn, _) = listener.accept().expect("accept");
        conn.set_read_timeout(Some(Duration::from_secs(5))).expect("timeout");
        read_commands(&mut conn, 3);
        received.send(()).expect("signal");
        on_go.recv_timeout(Duration::from_secs(10)).expect("go");
        conn.write_all(b"+OK\r\n+OK\r\n+OK\r\n").expect("reply");
        conn
    });
    let words: Vec<&[u8]> =
        vec![b"MIGRATE", b"127.0.0.1", port.as_bytes(), b"", b"0", b"5000", b"KEYS", b"written", b"untouched"];
    s.send_raw(&Client::encode(&words));
    on_received.recv_timeout(Duration::from_secs(5)).expect("the target got the keys");
    // The only worker serves another client while MIGRATE waits for the target.
    assert_eq!(other.cmd(&["PING"]), simple("PONG"));
    assert_eq!(other.cmd(&["SET", "written", "after"]), simple("OK"));
    go.send(()).expect("go");
    assert_eq!(s.read(), simple("OK"));
    assert_eq!(s.cmd(&["GET", "written"]), bulk("after"), "the concurrent write survives");
    assert_eq!(s.cmd(&["EXISTS", "untouched"]), int(0), "the unchanged key moved");
    drop(target.join().expect("fake target"));
}

#[test]
fn migrating_to_itself_never_loses_the_key() {
    let server = TestServer::start();
    let port = port_of(&server);
    let mut c = server.client();
    c.cmd(&["SET", "k", "v"]);
    let reply = migrate(&mut c, &port, "k", "0", "2000", &[]);
    assert_eq!(error_text(&reply), "ERR Target instance replied with error: BUSYKEY Target key name already exists.");
    // Its own RESTORE ... REPLACE rewrote the key with the same value: a
    // write all the same, so the key stays.
    assert_eq!(migrate(&mut c, &port, "k", "0", "2000", &["REPLACE"]), simple("OK"));
    assert_eq!(c.cmd(&["GET", "k"]), bulk("v"));
}

#[test]
fn transactions_and_scripts_refuse_it() {
    let (source, target) = pair();
    let port = port_of(&target);
    let mut s = source.client();
    s.cmd(&["SET", "k", "v"]);
    s.cmd(&["MULTI"]);
    assert_eq!(migrate(&mut s, &port, "k", "0", "1000", &[]), simple("QUEUED"));
    assert_eq!(s.cmd(&["EXEC"]), array(vec![err("ERR MIGRATE cannot run inside MULTI/EXEC or a script in Cairn")]));
    let script = format!("return redis.pcall('MIGRATE', '127.0.0.1', '{port}', 'k', '0', '1000')");
    let reply = s.cmd(&["EVAL", &script, "0"]);
    assert!(error_text(&reply).contains("MIGRATE cannot run inside MULTI/EXEC or a script"), "{reply:?}");
    // A missing key answers NOKEY anywhere, as in Redis.
    let script = format!("return redis.call('MIGRATE', '127.0.0.1', '{port}', 'nokey', '0', '1000')");
    assert_eq!(s.cmd(&["EVAL", &script, "0"]), simple("NOKEY"));
    assert_eq!(s.cmd(&["GET", "k"]), bulk("v"));
}

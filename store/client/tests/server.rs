//! The client against an in-process server: the handshake, every typed
//! operation, batches, the generic command, errors, the durable flag,
//! pipelining, the pool, CLIENT KILL, and the server's answers to bad
//! frames (checked on raw sockets).

#![allow(clippy::expect_used, clippy::unwrap_used)]

use std::path::PathBuf;
use std::sync::atomic::Ordering;
use std::time::Duration;

use cairn_client::{Batch, ConnectOptions, Connection, Error, Pool, SetOptions, Status, Value};
use cairn_engine::durability::Tier;
use cairn_native::{decode_frame, encode, Body, Decoded, Limits, OpRef};
use cairn_server::{Config, RunningServer, Shutdown};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

/// A server on ephemeral ports with its own data directory.
struct Server {
    running: Option<RunningServer>,
    dir: PathBuf,
}

impl Server {
    fn start(tweak: impl FnOnce(&mut Config)) -> Server {
        static NEXT: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);
        let dir = std::env::temp_dir().join(format!(
            "cairn-client-it-{}-{}",
            std::process::id(),
            NEXT.fetch_add(1, Ordering::Relaxed)
        ));
        let mut config = Config::for_tests(&dir);
        tweak(&mut config);
        let running = cairn_server::start(config, Shutdown::new()).expect("server starts");
        Server { running: Some(running), dir }
    }

    fn running(&self) -> &RunningServer {
        self.running.as_ref().expect("running")
    }

    fn native_addr(&self) -> String {
        self.running().native_addr.expect("native port enabled").to_string()
    }

    fn options(&self) -> ConnectOptions {
        ConnectOptions::new(self.native_addr())
    }

    async fn connect(&self) -> Connection {
        Connection::connect(self.options()).await.expect("connects")
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        if let Some(running) = self.running.take() {
            running.stop();
        }
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

#[tokio::test(flavor = "current_thread")]
async fn typed_operations() {
    let server = Server::start(|_| {});
    let conn = server.connect().await;
    assert_eq!(conn.get("missing").await.unwrap(), None);
    conn.set("k", "v1").await.unwrap();
    assert_eq!(conn.get("k").await.unwrap().as_deref(), Some(&b"v1"[..]));
    assert!(!conn.set_with("k", "v2", SetOptions::if_absent()).await.unwrap());
    assert!(conn.set_with("k", "v3", SetOptions::if_present()).await.unwrap());
    assert!(!conn.set_with("nope", "x", SetOptions::if_present()).await.unwrap());
    assert!(conn.set_with("ttl", "x", SetOptions::ttl(Duration::from_millis(50))).await.unwrap());
    let pttl = conn.command(&["PTTL", "ttl"]).await.unwrap();
    assert!(pttl.starts_with(b":") && pttl != b":-1\r\n", "{pttl:?}");
    tokio::time::sleep(Duration::from_millis(120)).await;
    assert_eq!(conn.get("ttl").await.unwrap(), None);
    assert_eq!(conn.incr_by("n", 5).await.unwrap(), 5);
    assert_eq!(conn.incr_by("n", -7).await.unwrap(), -2);
    assert_eq!(conn.exists(&["k", "n", "missing", "k"]).await.unwrap(), 3);
    assert!(conn.expire("n", Duration::from_secs(100)).await.unwrap());
    assert!(!conn.expire("missing", Duration::from_secs(100)).await.unwrap());
    conn.mset(&[("a", "1"), ("b", "2")]).await.unwrap();
    assert_eq!(conn.mget(&["a", "missing", "b"]).await.unwrap(), vec![Some(b"1".to_vec()), None, Some(b"2".to_vec())]);
    assert_eq!(conn.del(&["a", "b", "missing"]).await.unwrap(), 2);
    assert_eq!(conn.get("a").await.unwrap(), None);
    // Values are binary-safe.
    let binary: Vec<u8> = (0..=255).collect();
    conn.set(&binary, &binary).await.unwrap();
    assert_eq!(conn.get(&binary).await.unwrap(), Some(binary));
}

#[tokio::test(flavor = "current_thread")]
async fn generic_command_and_errors() {
    let server = Server::start(|_| {});
    let conn = server.connect().await;
    assert_eq!(conn.command(&["HSET", "h", "f1", "v1", "f2", "v2"]).await.unwrap(), b":2\r\n");
    let all = conn.command(&["HGETALL", "h"]).await.unwrap();
    assert!(all.starts_with(b"%2\r\n"), "RESP3 map: {:?}", String::from_utf8_lossy(&all));
    let wrongtype = conn.incr_by("h", 1).await.unwrap_err();
    assert_eq!(wrongtype.status(), Some(Status::WrongType), "{wrongtype}");
    let unknown = conn.command(&["NOSUCHCOMMAND", "x"]).await.unwrap_err();
    assert_eq!(unknown.status(), Some(Status::UnknownCommand), "{unknown}");
    let arity = conn.command(&["GET"]).await.unwrap_err();
    assert_eq!(arity.status(), Some(Status::Err), "{arity}");
    let refused = conn.command(&["SUBSCRIBE", "ch"]).await.unwrap_err();
    assert_eq!(refused.status(), Some(Status::Unsupported), "{refused}");
    // A blocking command does not block: it answers as if its timeout expired.
    assert_eq!(conn.command(&["BLPOP", "nolist", "0"]).await.unwrap(), b"_\r\n");
    // The connection still works after errors.
    assert_eq!(conn.command(&["PING"]).await.unwrap(), b"+PONG\r\n");
    // MULTI/EXEC through the generic command.
    conn.command(&["MULTI"]).await.unwrap();
    assert_eq!(conn.command(&["INCR", "m"]).await.unwrap(), b"+QUEUED\r\n");
    assert_eq!(conn.command(&["EXEC"]).await.unwrap(), b"*1\r\n:1\r\n");
    // A reply later than the timeout fails as a timeout; the late reply is dropped.
    let slow = conn.with_timeout(Duration::from_millis(50)).command(&["DEBUG", "SLEEP", "0.3"]).await;
    assert!(matches!(slow, Err(Error::Timeout(_))), "{slow:?}");
    assert_eq!(conn.command(&["ECHO", "after"]).await.unwrap(), b"$5\r\nafter\r\n");
}

/// A typed GET is served without the command dispatcher when the client is
/// in the plain state (server `native/typed.rs`). What the client gets and
/// what the server records must be exactly what GET sent as a command gives.
#[tokio::test(flavor = "current_thread")]
async fn typed_get_answers_and_counts_as_the_get_command() {
    let server = Server::start(|_| {});
    let conn = server.connect().await;
    let observer = server.connect().await;
    conn.set("s", "v").await.unwrap();
    conn.command(&["HSET", "h", "f", "v"]).await.unwrap();
    conn.set_with("short", "x", SetOptions::ttl(Duration::from_millis(1))).await.unwrap();
    tokio::time::sleep(Duration::from_millis(20)).await;
    conn.command(&["CONFIG", "RESETSTAT"]).await.unwrap();

    assert_eq!(conn.get("s").await.unwrap().as_deref(), Some(&b"v"[..]));
    let list = String::from_utf8(observer.command(&["CLIENT", "LIST"]).await.unwrap()).unwrap();
    let line = list.lines().find(|l| l.contains(&format!("id={} ", conn.client_id()))).expect("listed");
    assert!(line.contains(" cmd=get "), "the typed GET is the client's last command: {line}");
    assert_eq!(conn.command(&["GET", "s"]).await.unwrap(), b"$1\r\nv\r\n");
    assert_eq!(conn.get("missing").await.unwrap(), None);
    assert_eq!(conn.get("short").await.unwrap(), None, "expired on access");
    let typed = conn.get("h").await.unwrap_err();
    let generic = conn.command(&["GET", "h"]).await.unwrap_err();
    assert_eq!(typed.status(), Some(Status::WrongType), "{typed}");
    assert_eq!(typed.to_string(), generic.to_string());

    let info = String::from_utf8(observer.command(&["INFO", "all"]).await.unwrap()).unwrap();
    let field = |name: &str| {
        let line = info.lines().find(|l| l.starts_with(name)).unwrap_or_else(|| panic!("{name} in INFO"));
        line.trim_end().to_string()
    };
    // 4 typed GETs and 2 sent as commands; 2 WRONGTYPE replies; hits: s twice; misses: missing, short.
    assert!(field("cmdstat_get:").starts_with("cmdstat_get:calls=6,"), "{}", field("cmdstat_get:"));
    assert!(field("cmdstat_get:").ends_with("failed_calls=2"), "{}", field("cmdstat_get:"));
    assert_eq!(field("keyspace_hits:"), "keyspace_hits:2");
    assert_eq!(field("keyspace_misses:"), "keyspace_misses:2");
    assert!(field("errorstat_WRONGTYPE:").starts_with("errorstat_WRONGTYPE:count=2"));

    // Inside MULTI a typed GET is queued like any command, not run.
    assert_eq!(conn.command(&["MULTI"]).await.unwrap(), b"+OK\r\n");
    assert_eq!(conn.get("s").await.unwrap().as_deref(), Some(&b"QUEUED"[..]));
    assert_eq!(conn.command(&["EXEC"]).await.unwrap(), b"*1\r\n$1\r\nv\r\n");
}

#[tokio::test(flavor = "current_thread")]
async fn batches() {
    let server = Server::start(|_| {});
    let conn = server.connect().await;
    let mut batch = Batch::new();
    batch.set("a", "1").incr_by("a", 41).get("a").command(&["HSET", "a", "f", "v"]).exists("a").del("a").get("a");
    let results = conn.batch(&batch).await.unwrap();
    assert_eq!(results.len(), 7);
    assert_eq!(results[0].as_ref().unwrap(), &Value::Ok);
    assert_eq!(results[1].as_ref().unwrap(), &Value::Int(42));
    assert_eq!(results[2].as_ref().unwrap(), &Value::Bytes(b"42".to_vec()));
    assert_eq!(results[3].as_ref().unwrap_err().status(), Some(Status::WrongType));
    assert_eq!(results[4].as_ref().unwrap(), &Value::Int(1));
    assert_eq!(results[5].as_ref().unwrap(), &Value::Int(1));
    assert_eq!(results[6].as_ref().unwrap(), &Value::Nil);
}

#[tokio::test(flavor = "current_thread")]
async fn pipelining_many_requests_in_flight() {
    let server = Server::start(|_| {});
    let conn = server.connect().await;
    let calls = (0..500).map(|i| {
        let conn = conn.clone();
        async move {
            conn.set(format!("p{i}"), format!("{i}")).await.unwrap();
            conn.get(format!("p{i}")).await.unwrap()
        }
    });
    let values = futures_join_all(calls).await;
    for (i, value) in values.into_iter().enumerate() {
        assert_eq!(value, Some(i.to_string().into_bytes()));
    }
}

/// Runs futures concurrently on the current task (no extra dependency).
async fn futures_join_all<F>(futures: impl IntoIterator<Item = F>) -> Vec<F::Output>
where
    F: std::future::Future + 'static,
    F::Output: 'static,
{
    let local = tokio::task::LocalSet::new();
    let handles: Vec<_> = futures.into_iter().map(|f| local.spawn_local(f)).collect();
    local
        .run_until(async move {
            let mut out = Vec::new();
            for h in handles {
                out.push(h.await.expect("task"));
            }
            out
        })
        .await
}

#[tokio::test(flavor = "current_thread")]
async fn authentication() {
    let server = Server::start(|c| c.requirepass = Some("s3cret".into()));
    let wrong = Connection::connect(server.options().password("nope")).await.unwrap_err();
    assert_eq!(wrong.status(), Some(Status::AuthFailed), "{wrong}");
    let anonymous = server.connect().await;
    assert_eq!(anonymous.get("k").await.unwrap_err().status(), Some(Status::NoAuth));
    let conn = Connection::connect(server.options().password("s3cret").name("native-test").db(3)).await.unwrap();
    conn.set("k", "v").await.unwrap();
    let name = conn.command(&["CLIENT", "GETNAME"]).await.unwrap();
    assert_eq!(name, b"$11\r\nnative-test\r\n");
    assert_eq!(conn.command(&["SELECT", "0"]).await.unwrap(), b"+OK\r\n");
    assert_eq!(conn.get("k").await.unwrap(), None, "k was written in db 3");
}

/// An ACL user's typed operations are checked as its RESP commands are
/// (the typed shortcut is not taken for a restricted user).
#[tokio::test(flavor = "current_thread")]
async fn acl_users_are_checked_on_typed_operations() {
    let server = Server::start(|_| {});
    let admin = server.connect().await;
    admin.command(&["ACL", "SETUSER", "bob", "on", ">pw", "+get", "+set", "~b*"]).await.unwrap();
    let bob = Connection::connect(server.options().user("bob").password("pw")).await.unwrap();
    bob.set("b1", "v").await.unwrap();
    assert_eq!(bob.get("b1").await.unwrap().as_deref(), Some(&b"v"[..]));
    let denied = bob.get("other").await.unwrap_err();
    assert_eq!(denied.status(), Some(Status::Err), "{denied}");
    assert!(denied.to_string().contains("NOPERM"), "{denied}");
    let denied = bob.incr_by("b2", 1).await.unwrap_err();
    assert!(denied.to_string().contains("'incrby' command"), "{denied}");
    let wrong = Connection::connect(server.options().user("bob").password("nope")).await.unwrap_err();
    assert_eq!(wrong.status(), Some(Status::AuthFailed), "{wrong}");
}

#[tokio::test(flavor = "current_thread")]
async fn durable_flag_waits_for_the_log() {
    let server = Server::start(|c| c.durability = Tier::Async);
    let conn = server.connect().await;
    let wal = server.running().server.persistence.wal().expect("a log in the async tier");
    for i in 0..50 {
        conn.durable().set(format!("d{i}"), "v").await.unwrap();
        // Nobody else writes: the reply came after the log covered the write.
        assert!(wal.durable_lsn() >= wal.last_lsn(), "iteration {i}");
    }
    let mut batch = Batch::new();
    batch.incr_by("c", 1).incr_by("c", 1);
    conn.durable().batch(&batch).await.unwrap();
    assert!(wal.durable_lsn() >= wal.last_lsn());
}

#[tokio::test(flavor = "current_thread")]
async fn durable_flag_without_a_log_is_refused() {
    let server = Server::start(|c| c.durability = Tier::None);
    let conn = server.connect().await;
    let refused = conn.durable().set("k", "v").await.unwrap_err();
    assert_eq!(refused.status(), Some(Status::DurabilityUnavailable), "{refused}");
    assert_eq!(conn.get("k").await.unwrap(), None, "a refused durable write is not executed");
    conn.set("k", "v").await.unwrap();
}

#[tokio::test(flavor = "current_thread")]
async fn pool_and_client_kill() {
    let server = Server::start(|_| {});
    let pool = Pool::new(server.options(), 2);
    let first = pool.get().await.unwrap();
    let second = pool.get().await.unwrap();
    assert_ne!(first.client_id(), second.client_id());
    assert_eq!(pool.get().await.unwrap().client_id(), first.client_id(), "round-robin over 2 slots");
    let id = first.client_id().to_string();
    assert_eq!(second.command(&["CLIENT", "KILL", "ID", &id]).await.unwrap(), b":1\r\n");
    let failed = first.get("k").await;
    assert!(failed.is_err(), "a killed connection fails its requests: {failed:?}");
    assert!(first.is_closed());
    // The pool replaces the closed connection.
    let replaced = pool.get().await.unwrap();
    assert_ne!(replaced.client_id(), first.client_id());
    replaced.set("k", "v").await.unwrap();
}

/// Opens a raw socket and completes the handshake.
async fn raw_greeted(server: &Server) -> TcpStream {
    let mut stream = TcpStream::connect(server.native_addr()).await.unwrap();
    let mut out = Vec::new();
    encode::hello(&mut out, 1, 1, &[]);
    stream.write_all(&out).await.unwrap();
    let mut input = Vec::new();
    let frame_len = read_frame(&mut stream, &mut input).await;
    assert!(matches!(decode(&input[..frame_len]), Body::HelloOk(_)));
    stream
}

/// Reads until one whole frame is buffered; returns its length.
async fn read_frame(stream: &mut TcpStream, input: &mut Vec<u8>) -> usize {
    loop {
        if let Ok(Decoded::Complete { consumed, .. }) = decode_frame(input, &Limits::default()) {
            return consumed;
        }
        let n = tokio::time::timeout(Duration::from_secs(5), stream.read_buf(input)).await.unwrap().unwrap();
        assert!(n > 0, "closed before a whole frame");
    }
}

fn decode(bytes: &[u8]) -> Body<'_> {
    match decode_frame(bytes, &Limits::default()).unwrap() {
        Decoded::Complete { frame, .. } => frame.body,
        Decoded::Incomplete => panic!("incomplete"),
    }
}

/// Asserts the server sends an ERROR frame with `status`, then closes.
async fn expect_fatal(stream: &mut TcpStream, status: Status) {
    let mut input = Vec::new();
    let len = read_frame(stream, &mut input).await;
    match decode(&input[..len]) {
        Body::Error { status: got, message } => {
            assert_eq!(got, status, "{}", String::from_utf8_lossy(message));
        }
        other => panic!("expected an ERROR frame, got {other:?}"),
    }
    let mut rest = Vec::new();
    let read = tokio::time::timeout(Duration::from_secs(5), stream.read_to_end(&mut rest)).await.unwrap();
    assert!(read.is_err() || rest.is_empty(), "the server closes after a fatal error");
}

#[tokio::test(flavor = "current_thread")]
async fn malformed_frames_get_an_error_frame_and_close() {
    let server = Server::start(|_| {});
    // An unknown frame kind after the handshake.
    let mut stream = raw_greeted(&server).await;
    stream.write_all(&[8, 0, 0, 0, 0x42, 0, 0, 0, 1, 0, 0, 0]).await.unwrap();
    expect_fatal(&mut stream, Status::ProtocolError).await;
    // A request whose body is cut short inside its own length.
    let mut stream = raw_greeted(&server).await;
    stream.write_all(&[10, 0, 0, 0, 0x02, 0, 0, 0, 1, 0, 0, 0, 1, 9]).await.unwrap();
    expect_fatal(&mut stream, Status::ProtocolError).await;
    // A request before the handshake.
    let mut stream = TcpStream::connect(server.native_addr()).await.unwrap();
    let mut out = Vec::new();
    encode::request(&mut out, 1, 0, &OpRef::Get { key: b"k" });
    stream.write_all(&out).await.unwrap();
    expect_fatal(&mut stream, Status::ProtocolError).await;
    // RESP sent to the native port.
    let mut stream = TcpStream::connect(server.native_addr()).await.unwrap();
    stream.write_all(b"*1\r\n$4\r\nPING\r\n").await.unwrap();
    let mut input = Vec::new();
    let len = read_frame(&mut stream, &mut input).await;
    assert!(matches!(decode(&input[..len]), Body::Error { .. }));
}

#[tokio::test(flavor = "current_thread")]
async fn oversized_frames_and_unknown_versions_are_refused() {
    let server = Server::start(|_| {});
    let mut stream = raw_greeted(&server).await;
    // Header only: 100 MiB announced, refused before it is buffered.
    let mut header = Vec::new();
    header.extend_from_slice(&(100u32 << 20).to_le_bytes());
    header.extend_from_slice(&[0x02, 0, 0, 0, 1, 0, 0, 0]);
    stream.write_all(&header).await.unwrap();
    expect_fatal(&mut stream, Status::LimitExceeded).await;
    let mut stream = TcpStream::connect(server.native_addr()).await.unwrap();
    let mut out = Vec::new();
    encode::hello(&mut out, 7, 9, &[]);
    stream.write_all(&out).await.unwrap();
    expect_fatal(&mut stream, Status::UnsupportedVersion).await;
}

#[tokio::test(flavor = "current_thread")]
async fn disabled_native_port() {
    let server = Server::start(|c| c.native_port = None);
    assert_eq!(server.running().native_addr, None);
}

/// The number after `field:` in an INFO reply (a RESP3 bulk string).
fn info_field(info: &[u8], field: &str) -> u64 {
    let text = String::from_utf8_lossy(info);
    let prefix = format!("{field}:");
    text.lines()
        .find_map(|line| line.strip_prefix(&prefix))
        .and_then(|n| n.trim().parse().ok())
        .unwrap_or_else(|| panic!("no {field} in INFO:\n{text}"))
}

#[tokio::test(flavor = "current_thread")]
async fn native_connections_gather_on_one_worker_and_keep_their_state() {
    let server = Server::start(|c| {
        c.threads = Some(2);
        c.cpus = None;
        c.rebalance = true;
    });
    let mut conns = Vec::new();
    for i in 0..16 {
        let conn = server.connect().await;
        assert_eq!(conn.command(&["CLIENT", "SETNAME", &format!("n{i}")]).await.unwrap(), b"+OK\r\n");
        conns.push(conn);
    }
    // A transaction open across the move.
    assert_eq!(conns[3].command(&["MULTI"]).await.unwrap(), b"+OK\r\n");
    assert_eq!(conns[3].command(&["INCR", "in-multi"]).await.unwrap(), b"+QUEUED\r\n");
    // A light load (every reply checked) until connections have moved, at most 10 s.
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    let mut moved = 0;
    let mut round = 0u64;
    while moved == 0 && std::time::Instant::now() < deadline {
        for (i, conn) in conns.iter().enumerate().filter(|(i, _)| *i != 3) {
            let key = format!("k{i}");
            conn.set(&key, round.to_string()).await.unwrap();
            assert_eq!(conn.get(&key).await.unwrap(), Some(round.to_string().into_bytes()));
        }
        round += 1;
        if round % 10 == 0 {
            moved = info_field(&conns[0].command(&["INFO", "stats"]).await.unwrap(), "cairn_connections_moved");
        }
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    assert!(moved > 0, "a light load of native connections on two workers gathers them on one");
    // Everything still answers, and the moved connections kept their state.
    assert_eq!(conns[3].command(&["INCR", "in-multi"]).await.unwrap(), b"+QUEUED\r\n");
    assert_eq!(conns[3].command(&["EXEC"]).await.unwrap(), b"*2\r\n:1\r\n:2\r\n");
    for (i, conn) in conns.iter().enumerate() {
        let name = format!("n{i}");
        assert_eq!(
            conn.command(&["CLIENT", "GETNAME"]).await.unwrap(),
            format!("${}\r\n{name}\r\n", name.len()).into_bytes()
        );
        assert_eq!(conn.incr_by("counter", 1).await.unwrap(), i as i64 + 1);
    }
    let list = String::from_utf8(conns[0].command(&["CLIENT", "LIST"]).await.unwrap()).unwrap();
    for i in 0..16 {
        assert!(list.contains(&format!("name=n{i} ")), "n{i} still listed after moving:\n{list}");
    }
    // CLIENT KILL reaches a connection wherever it moved.
    let killed = conns[0].command(&["CLIENT", "KILL", "SKIPME", "yes", "USER", "default"]).await.unwrap();
    assert_eq!(killed, b":15\r\n");
    let after = conns[5].get("k5").await;
    assert!(after.is_err(), "a killed connection answers no more: {after:?}");
}

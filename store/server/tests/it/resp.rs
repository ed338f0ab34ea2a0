//! Integration tests: the real server on an ephemeral loopback port, spoken
//! to over real RESP.

use std::time::Duration;

use crate::common::*;
use redis_protocol::resp3::types::OwnedFrame;

#[test]
fn strings_roundtrip_and_errors() {
    let server = TestServer::start();
    let mut c = server.client();
    assert_eq!(c.cmd(&["SET", "k", "v"]), simple("OK"));
    assert_eq!(c.cmd(&["GET", "k"]), bulk("v"));
    assert_eq!(c.cmd(&["get", "missing"]), null_bulk_resp2());
    assert_eq!(c.cmd(&["INCR", "n"]), int(1));
    assert_eq!(c.cmd(&["INCRBY", "n", "41"]), int(42));
    assert_eq!(c.cmd(&["INCR", "k"]), err("ERR value is not an integer or out of range"));
    assert_eq!(c.cmd(&["GET"]), err("ERR wrong number of arguments for 'get' command"));
    assert_eq!(c.cmd(&["FOO", "a", "b"]), err("ERR unknown command 'FOO', with args beginning with: 'a' 'b' "));
    assert_eq!(c.cmd(&["SET", "k", "v", "NX", "XX"]), err("ERR syntax error"));
    assert_eq!(c.cmd(&["APPEND", "k", "w"]), int(2));
    assert_eq!(c.cmd(&["GETRANGE", "k", "0", "-1"]), bulk("vw"));
    assert_eq!(c.cmd(&["MSET", "a", "1", "b", "2"]), simple("OK"));
    assert_eq!(
        c.cmd(&["MGET", "a", "b", "zz"]),
        OwnedFrame::Array { data: vec![bulk("1"), bulk("2"), OwnedFrame::Null], attributes: None }
    );
    assert_eq!(c.cmd(&["DEL", "a", "b", "zz"]), int(2));
    assert_eq!(c.cmd(&["EXISTS", "a", "k", "k"]), int(2));
}

#[test]
fn pipelined_batch_is_answered_in_order() {
    let server = TestServer::start();
    let mut c = server.client();
    let mut batch = Vec::new();
    for i in 0..500 {
        let key = format!("key:{i}");
        batch.extend(Client::encode(&[b"SET", key.as_bytes(), i.to_string().as_bytes()]));
        batch.extend(Client::encode(&[b"GET", key.as_bytes()]));
    }
    c.send_raw(&batch);
    for i in 0..500 {
        assert_eq!(c.read(), simple("OK"));
        assert_eq!(c.read(), bulk(&i.to_string()));
    }
    assert_eq!(c.cmd(&["DBSIZE"]), int(500));
}

#[test]
fn inline_commands_and_protocol_errors() {
    let server = TestServer::start();
    let mut c = server.client();
    c.send_raw(b"set greeting \"hello world\"\r\nget greeting\r\n");
    assert_eq!(c.read(), simple("OK"));
    assert_eq!(c.read(), bulk("hello world"));
    c.send_raw(b"*1\r\nfoo\r\n");
    assert_eq!(c.read(), err("ERR Protocol error: expected '$', got 'f'"));
    assert!(c.is_closed(), "a protocol error closes the connection");
}

#[test]
fn resp3_hello_and_null() {
    let server = TestServer::start();
    let mut c = server.client();
    c.resp3 = true;
    let hello = c.cmd(&["HELLO", "3"]);
    let OwnedFrame::Map { data, .. } = hello else { panic!("HELLO 3 replies with a map: {hello:?}") };
    assert_eq!(data.get(&bulk("proto")), Some(&int(3)));
    assert_eq!(c.cmd(&["GET", "nothing"]), OwnedFrame::Null);
    assert_eq!(c.cmd(&["HELLO", "4"]), err("NOPROTO unsupported protocol version"));
}

#[test]
fn requirepass_gates_commands() {
    let server = TestServer::start_with(|c| c.requirepass = Some("s3cret".into()));
    let mut c = server.client();
    assert_eq!(c.cmd(&["GET", "k"]), err("NOAUTH Authentication required."));
    assert_eq!(c.cmd(&["AUTH", "wrong"]), err("WRONGPASS invalid username-password pair or user is disabled."));
    assert_eq!(c.cmd(&["AUTH", "s3cret"]), simple("OK"));
    assert_eq!(c.cmd(&["SET", "k", "v"]), simple("OK"));
    let mut other = server.client();
    other.resp3 = true;
    let hello = other.cmd(&["HELLO", "3", "AUTH", "default", "s3cret", "SETNAME", "app"]);
    assert!(matches!(hello, OwnedFrame::Map { .. }), "{hello:?}");
    assert_eq!(other.cmd(&["CLIENT", "GETNAME"]), bulk("app"));
}

#[test]
fn keys_expire_lazily_and_actively() {
    let server = TestServer::start();
    let mut c = server.client();
    assert_eq!(c.cmd(&["SET", "lazy", "v", "PX", "50"]), simple("OK"));
    assert_eq!(c.cmd(&["DEBUG", "SET-ACTIVE-EXPIRE", "0"]), simple("OK"));
    std::thread::sleep(Duration::from_millis(120));
    assert_eq!(c.cmd(&["GET", "lazy"]), null_bulk_resp2());
    assert_eq!(c.cmd(&["DEBUG", "SET-ACTIVE-EXPIRE", "1"]), simple("OK"));
    for i in 0..50 {
        assert_eq!(c.cmd(&["SET", &format!("active:{i}"), "v", "PX", "100"]), simple("OK"));
    }
    assert_eq!(c.cmd(&["DBSIZE"]), int(50));
    let deadline = std::time::Instant::now() + Duration::from_secs(5);
    while c.cmd(&["DBSIZE"]) != int(0) {
        assert!(std::time::Instant::now() < deadline, "active expiry did not reclaim the keys");
        std::thread::sleep(Duration::from_millis(50));
    }
    assert_eq!(c.cmd(&["SET", "t", "v", "EX", "100"]), simple("OK"));
    let OwnedFrame::Number { data: ttl, .. } = c.cmd(&["TTL", "t"]) else { panic!("TTL is an integer") };
    assert!((99..=100).contains(&ttl));
    assert_eq!(c.cmd(&["PERSIST", "t"]), int(1));
    assert_eq!(c.cmd(&["TTL", "t"]), int(-1));
}

#[test]
fn concurrent_increments_across_workers_are_atomic() {
    let server = TestServer::start_with(|c| c.threads = Some(2));
    let addr = server.addr();
    let threads: Vec<_> = (0..8)
        .map(|_| {
            std::thread::spawn(move || {
                let mut c = Client::connect(addr);
                let mut batch = Vec::new();
                for _ in 0..1000 {
                    batch.extend(Client::encode(&[b"INCR", b"counter"]));
                }
                c.send_raw(&batch);
                for _ in 0..1000 {
                    assert!(matches!(c.read(), OwnedFrame::Number { .. }));
                }
            })
        })
        .collect();
    for t in threads {
        t.join().expect("client thread");
    }
    assert_eq!(server.client().cmd(&["GET", "counter"]), bulk("8000"));
}

#[test]
fn scan_visits_every_key() {
    let server = TestServer::start();
    let mut c = server.client();
    for i in 0..300 {
        c.cmd(&["SET", &format!("s:{i}"), "v"]);
    }
    let mut seen = std::collections::HashSet::new();
    let mut cursor = "0".to_string();
    loop {
        let OwnedFrame::Array { data, .. } = c.cmd(&["SCAN", &cursor, "COUNT", "20"]) else { panic!("SCAN array") };
        let OwnedFrame::BlobString { data: next, .. } = &data[0] else { panic!("cursor") };
        let OwnedFrame::Array { data: keys, .. } = &data[1] else { panic!("keys") };
        for k in keys {
            let OwnedFrame::BlobString { data, .. } = k else { panic!("key") };
            seen.insert(data.clone());
        }
        cursor = String::from_utf8(next.clone()).unwrap();
        if cursor == "0" {
            break;
        }
    }
    assert_eq!(seen.len(), 300);
}

#[test]
fn client_kill_closes_the_other_connection() {
    let server = TestServer::start();
    let mut victim = server.client();
    let OwnedFrame::Number { data: id, .. } = victim.cmd(&["CLIENT", "ID"]) else { panic!("id") };
    let mut killer = server.client();
    assert_eq!(killer.cmd(&["CLIENT", "KILL", "ID", &id.to_string()]), int(1));
    assert!(victim.is_closed());
}

#[test]
fn config_get_set_and_info() {
    let server = TestServer::start();
    let mut c = server.client();
    let OwnedFrame::Array { data, .. } = c.cmd(&["CONFIG", "GET", "maxmemory*"]) else { panic!("array") };
    assert!(data.contains(&bulk("maxmemory-policy")));
    assert_eq!(c.cmd(&["CONFIG", "SET", "maxmemory", "100mb"]), simple("OK"));
    assert_eq!(
        c.cmd(&["CONFIG", "GET", "maxmemory"]),
        OwnedFrame::Array { data: vec![bulk("maxmemory"), bulk("104857600")], attributes: None }
    );
    assert_eq!(
        c.cmd(&["CONFIG", "SET", "nosuch", "1"]),
        err("ERR Unknown option or number of arguments for CONFIG SET - 'nosuch'")
    );
    let OwnedFrame::BlobString { data, .. } = c.cmd(&["INFO", "server"]) else { panic!("INFO bulk") };
    let text = String::from_utf8(data).unwrap();
    assert!(text.starts_with("# Server\r\n") && text.contains("redis_version:"));
}

#[test]
fn reset_discards_the_transaction_and_the_watches() {
    let server = TestServer::start();
    let mut c = server.client();
    let mut other = server.client();
    assert_eq!(c.cmd(&["WATCH", "w"]), simple("OK"));
    assert_eq!(c.cmd(&["MULTI"]), simple("OK"));
    assert_eq!(c.cmd(&["SET", "key-a", "a"]), simple("QUEUED"));
    assert_eq!(c.cmd(&["RESET"]), simple("RESET"));
    assert_eq!(c.cmd(&["EXEC"]), err("ERR EXEC without MULTI"));
    assert_eq!(c.cmd(&["EXISTS", "key-a"]), int(0));
    // The WATCH went with it: a write to `w` no longer fails a transaction.
    other.cmd(&["SET", "w", "1"]);
    c.cmd(&["MULTI"]);
    c.cmd(&["SET", "key-b", "b"]);
    let OwnedFrame::Array { data, .. } = c.cmd(&["EXEC"]) else { panic!("EXEC ran") };
    assert_eq!(data, vec![simple("OK")]);
}

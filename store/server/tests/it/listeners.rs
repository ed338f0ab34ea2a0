//! CONFIG SET `port` and `bind` move the listeners at runtime, on every
//! worker, all or nothing: a port in use or a bad address refuses the whole
//! command and the server keeps listening where it did.

use std::net::{SocketAddr, TcpListener, TcpStream};
use std::time::{Duration, Instant};

use redis_protocol::resp3::types::OwnedFrame;

use crate::common::{bulk, error_text, simple, Client, TestServer};

/// A port nothing listens on right now.
fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0").and_then(|l| l.local_addr()).map(|a| a.port()).expect("an ephemeral port")
}

/// Waits until nothing accepts connections at `addr` (the workers close
/// their old sockets when their event loops take the new ones).
fn wait_closed(addr: SocketAddr) {
    let deadline = Instant::now() + Duration::from_secs(5);
    while TcpStream::connect_timeout(&addr, Duration::from_millis(200)).is_ok() {
        assert!(Instant::now() < deadline, "{addr} still accepts connections");
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Every one of `n` new connections to `addr` is served (connections are
/// spread over the workers by the kernel, so each worker's socket is used).
fn serves(addr: SocketAddr, n: usize) {
    for _ in 0..n {
        assert_eq!(Client::connect(addr).cmd(&["PING"]), simple("PONG"), "a new connection to {addr}");
    }
}

fn two_workers() -> TestServer {
    TestServer::start_with(|c| c.threads = Some(2))
}

#[test]
fn config_set_port_moves_every_worker_and_closes_the_old_port() {
    let server = two_workers();
    let old = server.addr();
    let mut c = server.client();
    let port = free_port();
    assert_eq!(c.cmd(&["CONFIG", "SET", "port", &port.to_string()]), simple("OK"));
    let moved: SocketAddr = ([127, 0, 0, 1], port).into();
    serves(moved, 16);
    wait_closed(old);
    // The connection that asked stays open, and reports the new port.
    assert_eq!(
        c.cmd(&["CONFIG", "GET", "port"]),
        OwnedFrame::Array { data: vec![bulk("port"), bulk(&port.to_string())], attributes: None }
    );
    assert_eq!(c.info_field("server", "tcp_port"), port.to_string());
    // Setting the current value changes nothing.
    assert_eq!(c.cmd(&["CONFIG", "SET", "port", &port.to_string(), "bind", "127.0.0.1"]), simple("OK"));
    serves(moved, 4);
}

#[test]
fn a_port_in_use_refuses_the_whole_command_and_keeps_the_old_port() {
    let server = two_workers();
    let mut c = server.client();
    let taken = TcpListener::bind("127.0.0.1:0").expect("a listener of another program");
    let port = taken.local_addr().expect("its address").port().to_string();
    let refused = error_text(&c.cmd(&["CONFIG", "SET", "maxmemory", "10000001", "port", &port]));
    assert!(
        refused
            .starts_with("ERR CONFIG SET failed (possibly related to argument 'port') - Unable to listen on this port"),
        "{refused}"
    );
    assert_eq!(
        c.cmd(&["CONFIG", "GET", "maxmemory"]),
        OwnedFrame::Array { data: vec![bulk("maxmemory"), bulk("0")], attributes: None }
    );
    serves(server.addr(), 8);
    // Closing the only RESP port is refused too (no TLS port here).
    let refused = error_text(&c.cmd(&["CONFIG", "SET", "port", "0"]));
    assert!(refused.contains("cannot both be 0"), "{refused}");
    let refused = error_text(&c.cmd(&["CONFIG", "SET", "port", "65536"]));
    assert!(refused.starts_with("ERR CONFIG SET failed (possibly related to argument 'port')"), "{refused}");
    serves(server.addr(), 2);
}

#[test]
fn config_set_bind_moves_every_door_to_the_new_address() {
    let server = two_workers();
    let old = server.addr();
    let native = server.running.as_ref().and_then(|r| r.native_addr).expect("a native port");
    let mut c = server.client();
    assert_eq!(c.cmd(&["CONFIG", "SET", "bind", "127.0.0.2"]), simple("OK"));
    let moved: SocketAddr = ([127, 0, 0, 2], old.port()).into();
    serves(moved, 16);
    wait_closed(old);
    // The native protocol's port moved with it, keeping its number.
    TcpStream::connect(SocketAddr::from(([127, 0, 0, 2], native.port()))).expect("the native port on the new address");
    wait_closed(native);
    let refused = error_text(&c.cmd(&["CONFIG", "SET", "bind", "999.999.999.999"]));
    assert!(refused.contains("Failed to bind to specified addresses."), "{refused}");
    assert_eq!(
        c.cmd(&["CONFIG", "GET", "bind"]),
        OwnedFrame::Array { data: vec![bulk("bind"), bulk("127.0.0.2")], attributes: None }
    );
    serves(moved, 4);
}

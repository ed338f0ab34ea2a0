//! Connections move between workers as the load needs (`--rebalance`): a
//! light load gathers on worker 0, and a moved connection carries on as if
//! nothing happened: its replies, its transaction, its name, CLIENT KILL.

#![allow(clippy::expect_used, clippy::unwrap_used)]

use std::time::{Duration, Instant};

use crate::common::{bulk, int, simple, Client, TestServer};

fn two_workers(rebalance: bool) -> TestServer {
    TestServer::start_with(|c| {
        c.threads = Some(2);
        c.cpus = None;
        c.rebalance = rebalance;
    })
}

/// Sends a light load on every client until `done` says so or 10 s pass;
/// checks every reply on the way.
fn light_load(clients: &mut [Client], mut done: impl FnMut(&mut Client) -> bool) -> bool {
    let deadline = Instant::now() + Duration::from_secs(10);
    let mut round = 0u64;
    while Instant::now() < deadline {
        for (i, client) in clients.iter_mut().enumerate() {
            let key = format!("k{i}");
            assert_eq!(client.cmd(&["SET", &key, &round.to_string()]), simple("OK"));
            assert_eq!(client.cmd(&["GET", &key]), bulk(&round.to_string()));
        }
        round += 1;
        if round % 10 == 0 && done(&mut clients[0]) {
            return true;
        }
        std::thread::sleep(Duration::from_millis(5));
    }
    false
}

#[test]
fn idle_connections_gather_on_one_worker_and_keep_their_state() {
    let server = two_workers(true);
    let mut clients: Vec<Client> = (0..16).map(|_| server.client()).collect();
    for (i, client) in clients.iter_mut().enumerate() {
        assert_eq!(client.cmd(&["CLIENT", "SETNAME", &format!("c{i}")]), simple("OK"));
    }
    // A transaction open across the move.
    assert_eq!(clients[3].cmd(&["MULTI"]), simple("OK"));
    assert_eq!(clients[3].cmd(&["INCR", "in-multi"]), simple("QUEUED"));
    let mut others = clients.split_off(4);
    let moved = light_load(&mut others, |c| c.info_number("stats", "cairn_connections_moved") > 0);
    assert!(moved, "a light load on two workers moves connections to one");
    // Everything still answers, and the moved clients kept their state.
    assert_eq!(clients[3].cmd(&["INCR", "in-multi"]), simple("QUEUED"));
    assert_eq!(clients[3].cmd(&["EXEC"]), crate::common::array(vec![int(1), int(2)]));
    for (i, client) in clients.iter_mut().chain(others.iter_mut()).enumerate() {
        assert_eq!(client.cmd(&["CLIENT", "GETNAME"]), bulk(&format!("c{i}")));
        assert_eq!(client.cmd(&["PING"]), simple("PONG"));
    }
    let mut control = server.client();
    let list = match control.cmd(&["CLIENT", "LIST"]) {
        redis_protocol::resp3::types::OwnedFrame::BlobString { data, .. } => String::from_utf8(data).unwrap(),
        other => panic!("CLIENT LIST answered {other:?}"),
    };
    for i in 0..16 {
        assert!(list.contains(&format!("name=c{i} ")), "c{i} still listed after moving:\n{list}");
    }
    // CLIENT KILL reaches a client wherever it moved.
    assert_eq!(control.cmd(&["CLIENT", "KILL", "SKIPME", "yes", "USER", "default"]), int(16));
    assert!(others[0].is_closed());
}

#[test]
fn off_keeps_connections_where_they_were_accepted() {
    let server = two_workers(false);
    let mut clients: Vec<Client> = (0..16).map(|_| server.client()).collect();
    let started = Instant::now();
    light_load(&mut clients, |_| started.elapsed() > Duration::from_secs(1));
    assert_eq!(clients[0].info_number("stats", "cairn_connections_moved"), 0);
}

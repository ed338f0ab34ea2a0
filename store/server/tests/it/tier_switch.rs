//! Changing the durability tier at runtime (CONFIG SET appendonly /
//! appendfsync / durability): under concurrent writers, across restarts,
//! across simulated power cuts at each phase of a restart of logging, and
//! what INFO, CONFIG GET and DEBUG LOADAOF report meanwhile.

#![allow(clippy::expect_used, clippy::unwrap_used)]

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use cairn_engine::durability::sim::SimStorage;
use cairn_engine::durability::Tier;
use rand::rngs::StdRng;
use rand::SeedableRng;

use crate::common::sim_node::SimNode;
use crate::common::{bulk, error_text, simple, Client, TestServer};

/// Waits (10 s at most) until INFO says the rewrite that `appendonly yes`
/// started has finished, as the Redis suite's `waitForBgrewriteaof` does.
fn wait_for_rewrite(c: &mut Client) {
    let deadline = Instant::now() + Duration::from_secs(10);
    while c.info_field("persistence", "aof_rewrite_in_progress") != "0" {
        assert!(Instant::now() < deadline, "the snapshot logging restarts from never finished");
        std::thread::sleep(Duration::from_millis(10));
    }
    assert_eq!(c.info_field("persistence", "aof_last_bgrewrite_status"), "ok");
}

fn config_get(c: &mut Client, name: &str) -> String {
    let reply = c.cmd(&["CONFIG", "GET", name]);
    let text = format!("{reply:?}");
    ["none", "async", "everysec", "sync", "always", "no", "yes"]
        .into_iter()
        .find(|v| text.contains(&format!("\"{v}\"")) || text.contains(&format!("{:?}", v.as_bytes())))
        .map(str::to_string)
        .unwrap_or(text)
}

/// Writers each SET their own keys in a loop until told to stop; returns
/// the last value each key was acknowledged with.
fn spawn_writers(
    addr: std::net::SocketAddr,
    stop: &Arc<AtomicBool>,
) -> Vec<std::thread::JoinHandle<HashMap<String, String>>> {
    (0..4)
        .map(|w| {
            let stop = stop.clone();
            std::thread::spawn(move || {
                let mut c = Client::connect(addr);
                let mut acked = HashMap::new();
                let mut seq = 0u64;
                while !stop.load(Ordering::Acquire) {
                    let (key, value) = (format!("w{w}:{}", seq % 64), seq.to_string());
                    assert_eq!(c.cmd(&["SET", &key, &value]), simple("OK"), "writer {w} write {seq}");
                    acked.insert(key, value);
                    seq += 1;
                }
                acked
            })
        })
        .collect()
}

#[test]
fn tier_changes_under_concurrent_writers_lose_no_acknowledged_write() {
    let mut server = TestServer::start_with(|c| c.durability = Tier::Async);
    let stop = Arc::new(AtomicBool::new(false));
    let writers = spawn_writers(server.addr(), &stop);
    let mut admin = server.client();
    let changes = [
        ("appendfsync", "always", "sync"),
        ("appendfsync", "everysec", "everysec"),
        ("appendonly", "no", "none"),
        ("appendfsync", "always", "none"),
        ("appendonly", "yes", "sync"),
        ("appendfsync", "no", "async"),
        ("durability", "none", "none"),
        ("durability", "everysec", "everysec"),
        ("appendonly", "no", "none"),
        ("durability", "sync", "sync"),
    ];
    for (name, value, tier) in changes {
        std::thread::sleep(Duration::from_millis(40));
        assert_eq!(admin.cmd(&["CONFIG", "SET", name, value]), simple("OK"), "{name} {value}");
        assert_eq!(admin.info_field("persistence", "cairn_durability"), tier, "after {name} {value}");
        wait_for_rewrite(&mut admin);
    }
    std::thread::sleep(Duration::from_millis(40));
    stop.store(true, Ordering::Release);
    let mut acked = HashMap::new();
    for writer in writers {
        acked.extend(writer.join().expect("writer"));
    }
    assert!(acked.len() >= 4, "the writers wrote");
    // A clean restart: every acknowledged write survives, whatever the tier
    // was when it was made; the start-up flag applies again.
    server.restart_with(|c| c.durability = Tier::Async);
    let mut c = server.client();
    for (key, value) in &acked {
        assert_eq!(c.cmd(&["GET", key]), bulk(value), "{key}");
    }
    assert_eq!(config_get(&mut c, "durability"), "async", "a restart uses the start-up flag");
}

#[test]
fn appendonly_yes_from_none_then_restart_recovers_the_keys_from_before() {
    let mut server = TestServer::start_with(|c| c.durability = Tier::None);
    let mut c = server.client();
    assert_eq!(config_get(&mut c, "appendonly"), "no");
    for i in 0..100 {
        assert_eq!(c.cmd(&["SET", &format!("before:{i}"), &i.to_string()]), simple("OK"));
    }
    assert_eq!(c.cmd(&["CONFIG", "SET", "appendonly", "yes"]), simple("OK"));
    assert_eq!(c.info_field("persistence", "aof_enabled"), "1");
    // As in Redis's suite: DEBUG LOADAOF right after, then the rewrite wait.
    assert_eq!(c.cmd(&["DEBUG", "LOADAOF"]), simple("OK"));
    assert_eq!(c.cmd(&["GET", "before:7"]), bulk("7"), "DEBUG LOADAOF rebuilt the keys from the snapshot");
    wait_for_rewrite(&mut c);
    assert_eq!(c.info_field("persistence", "cairn_durability"), "async", "appendfsync no is async");
    assert_eq!(c.cmd(&["SET", "after", "1"]), simple("OK"));
    drop(c);
    server.restart_with(|c| c.durability = Tier::Async);
    let mut c = server.client();
    assert_eq!(c.cmd(&["DBSIZE"]), crate::common::int(101));
    assert_eq!(c.cmd(&["GET", "before:99"]), bulk("99"));
    assert_eq!(c.cmd(&["GET", "after"]), bulk("1"));
    // BGREWRITEAOF's snapshot reports as a rewrite, scheduled then running.
    assert_eq!(c.cmd(&["BGREWRITEAOF"]), simple("Background append only file rewriting started"));
    let saves = c.info_number("persistence", "rdb_saves");
    wait_for_rewrite(&mut c);
    let deadline = Instant::now() + Duration::from_secs(10);
    while c.info_number("persistence", "rdb_saves") == saves {
        assert!(Instant::now() < deadline, "BGREWRITEAOF's snapshot never ran");
        std::thread::sleep(Duration::from_millis(10));
    }
    assert_eq!(c.info_field("persistence", "aof_rewrite_scheduled"), "0");
}

#[test]
fn bad_values_get_redis_errors_and_config_get_follows_the_tier() {
    let disk = SimStorage::new();
    let mut node = SimNode::new(&disk, Tier::Async);
    let error = |node: &mut SimNode, name: &str, value: &str| {
        String::from_utf8(node.run(&[b"CONFIG", b"SET", name.as_bytes(), value.as_bytes()])).unwrap()
    };
    assert_eq!(
        error(&mut node, "appendfsync", "sometimes"),
        "-ERR CONFIG SET failed (possibly related to argument 'appendfsync') - argument(s) must be one of the following: everysec, always, no\r\n"
    );
    assert_eq!(
        error(&mut node, "appendonly", "maybe"),
        "-ERR CONFIG SET failed (possibly related to argument 'appendonly') - argument must be 'yes' or 'no'\r\n"
    );
    assert_eq!(
        error(&mut node, "durability", "fast"),
        "-ERR CONFIG SET failed (possibly related to argument 'durability') - argument(s) must be one of the following: none, async, everysec, sync\r\n"
    );
    let get = |node: &mut SimNode| {
        let text = String::from_utf8(node.run(&[b"CONFIG", b"GET", b"append*"])).unwrap();
        let durability = String::from_utf8(node.run(&[b"CONFIG", b"GET", b"durability"])).unwrap();
        format!("{text}{durability}").replace("\r\n", " ")
    };
    assert!(get(&mut node).contains("appendfsync $2 no"), "async is appendfsync no: {}", get(&mut node));
    assert_eq!(error(&mut node, "appendfsync", "ALWAYS"), "+OK\r\n");
    assert!(get(&mut node).contains("durability $4 sync"), "{}", get(&mut node));
    assert_eq!(error(&mut node, "appendonly", "no"), "+OK\r\n");
    let now = get(&mut node);
    assert!(
        now.contains("appendonly $2 no") && now.contains("appendfsync $6 always") && now.contains("durability $4 none"),
        "{now}"
    );
    assert_eq!(error(&mut node, "appendonly", "yes"), "+OK\r\n");
    assert!(get(&mut node).contains("durability $4 sync"), "appendonly yes starts the tier appendfsync names");
    assert_eq!(error(&mut node, "durability", "everysec"), "+OK\r\n");
    assert!(get(&mut node).contains("appendfsync $8 everysec"));
}

#[test]
fn writes_made_in_sync_keep_waiting_for_durability_after_a_change_away() {
    let disk = SimStorage::new();
    let mut node = SimNode::new(&disk, Tier::Async);
    assert_eq!(node.run(&[b"CONFIG", b"SET", b"appendfsync", b"always"]), b"+OK\r\n");
    node.run(&[b"SET", b"a", b"1"]);
    let in_sync = node.client.last_lsn;
    let p = &node.server.persistence;
    assert!(p.acks_wait_for(in_sync));
    assert!(node.durable() < in_sync, "not synced yet");
    assert_eq!(node.run(&[b"CONFIG", b"SET", b"appendfsync", b"no"]), b"+OK\r\n");
    assert!(node.server.persistence.acks_wait_for(in_sync), "made in sync: its reply still waits");
    node.run(&[b"SET", b"b", b"2"]);
    let in_async = node.client.last_lsn;
    assert!(!node.server.persistence.acks_wait_for(in_async), "made in async: no wait");
}

/// `none` → writes → `appendonly yes` → writes held → power cut: nothing of
/// it is on disk, and in particular never the later writes without the
/// earlier ones.
#[test]
fn a_power_cut_before_the_snapshot_leaves_the_state_from_before_appendonly_yes() {
    let disk = SimStorage::new();
    let mut node = SimNode::new(&disk, Tier::None);
    node.run(&[b"SET", b"a", b"1"]);
    node.run(&[b"RPUSH", b"l", b"x"]);
    assert_eq!(node.run(&[b"CONFIG", b"SET", b"appendonly", b"yes"]), b"+OK\r\n");
    let info = String::from_utf8(node.run(&[b"INFO", b"persistence"])).unwrap();
    assert!(info.contains("aof_enabled:1") && info.contains("aof_rewrite_in_progress:1"), "{info}");
    node.run(&[b"RPUSH", b"l", b"y"]);
    node.sync_round(true);
    assert_eq!(node.durable(), 0, "held: nothing after the change reaches the disk before the snapshot");
    drop(node);
    disk.crash(true, &mut StdRng::seed_from_u64(1));
    let mut recovered = SimNode::new(&disk, Tier::Async);
    assert_eq!(recovered.run(&[b"DBSIZE"]), b":0\r\n");
}

/// `none` → writes → `appendonly yes` → snapshot → writes → power cut:
/// everything acknowledged as durable comes back.
#[test]
fn a_power_cut_after_the_snapshot_recovers_every_write() {
    let disk = SimStorage::new();
    let mut node = SimNode::new(&disk, Tier::None);
    node.run(&[b"SET", b"a", b"1"]);
    node.run(&[b"RPUSH", b"l", b"x"]);
    assert_eq!(node.run(&[b"CONFIG", b"SET", b"appendfsync", b"always"]), b"+OK\r\n");
    assert_eq!(node.run(&[b"CONFIG", b"SET", b"appendonly", b"yes"]), b"+OK\r\n");
    node.run(&[b"RPUSH", b"l", b"y"]);
    let p = &node.server.persistence;
    cairn_server::persistence::tier_switch::finish_enabling(p, &node.server.keyspace).expect("snapshot");
    let info = String::from_utf8(node.run(&[b"INFO", b"persistence"])).unwrap();
    assert!(info.contains("aof_rewrite_in_progress:0") && info.contains("aof_last_bgrewrite_status:ok"), "{info}");
    node.run(&[b"RPUSH", b"l", b"z"]);
    node.sync_round(true);
    assert!(node.durable() >= node.client.last_lsn);
    let expected = node.digest();
    drop(node);
    disk.crash(true, &mut StdRng::seed_from_u64(2));
    let mut recovered = SimNode::new(&disk, Tier::Async);
    assert_eq!(recovered.digest(), expected);
    assert_eq!(recovered.run(&[b"LRANGE", b"l", b"0", b"-1"]), b"*3\r\n$1\r\nx\r\n$1\r\ny\r\n$1\r\nz\r\n");
    let _ = error_text;
}

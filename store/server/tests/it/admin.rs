//! The HTTP admin API, over real HTTP against an in-process server: every
//! endpoint, the 401/403/400 paths, and what the durability layer's hooks
//! change.

use std::sync::Arc;

use crate::common::http::{get, request};
use crate::common::{bulk, simple, TestServer};
use cairn_server::admin::snapshot::{SnapshotError, SnapshotHook, SnapshotReport};
use cairn_server::metrics::durability::{DurabilitySnapshot, DurabilitySource};

const TOKEN: &str = "t0ken-for-tests";
const AUTH: (&str, &str) = ("Authorization", "Bearer t0ken-for-tests");

fn start() -> TestServer {
    TestServer::start_with(|c| c.admin_token = Some(TOKEN.into()))
}

/// The value of an unlabelled or exactly-labelled sample in text format.
fn sample(metrics: &str, series: &str) -> Option<f64> {
    metrics.lines().find_map(|l| l.strip_prefix(series)?.strip_prefix(' ')?.parse().ok())
}

#[test]
fn probes() {
    let server = start();
    let admin = server.admin_addr();
    let health = get(admin, "/healthz");
    assert_eq!((health.status, health.body.as_str()), (200, "ok\n"));
    let ready = get(admin, "/readyz");
    assert_eq!((ready.status, ready.body.as_str()), (200, "ready\n"));

    let s = &server.running.as_ref().expect("running").server;
    s.health.set_write_error(Some("fdatasync data/wal/0001: EIO".into()));
    let ready = get(admin, "/readyz");
    assert_eq!(ready.status, 503);
    assert!(ready.body.contains("EIO"), "{}", ready.body);
    assert_eq!(sample(&get(admin, "/metrics").body, "cairn_ready"), Some(0.0));
    s.health.set_write_error(None);
    s.health.set_recovering(true);
    let ready = get(admin, "/readyz");
    assert!(ready.status == 503 && ready.body.contains("recovering"), "{ready:?}");
    assert_eq!(sample(&get(admin, "/metrics").body, "cairn_recovering"), Some(1.0));
    s.health.set_recovering(false);
    assert_eq!(get(admin, "/readyz").status, 200);
}

#[test]
fn metrics_in_both_formats() {
    let server = start();
    let admin = server.admin_addr();
    let mut client = server.client();
    for _ in 0..5 {
        assert_eq!(client.cmd(&["SET", "k", "v"]), simple("OK"));
    }
    assert_eq!(client.cmd(&["GET", "k"]), bulk("v"));
    client.cmd(&["INCR", "k"]); // fails: not an integer
    client.cmd(&["GET"]); // rejected: arity

    let text = get(admin, "/metrics");
    assert_eq!(text.status, 200);
    assert!(text.header("content-type").is_some_and(|c| c.starts_with("text/plain; version=0.0.4")), "{text:?}");
    let m = &text.body;
    assert_eq!(sample(m, r#"cairn_commands_total{cmd="set",result="ok"}"#), Some(5.0));
    assert_eq!(sample(m, r#"cairn_commands_total{cmd="get",result="ok"}"#), Some(1.0));
    assert_eq!(sample(m, r#"cairn_commands_total{cmd="get",result="rejected"}"#), Some(1.0));
    assert_eq!(sample(m, r#"cairn_commands_total{cmd="incr",result="failed"}"#), Some(1.0));
    assert_eq!(sample(m, r#"cairn_command_duration_seconds_count{cmd="set"}"#), Some(5.0));
    assert_eq!(sample(m, r#"cairn_command_duration_seconds_bucket{le="+Inf",cmd="set"}"#), Some(5.0));
    assert_eq!(sample(m, r#"cairn_db_keys{db="db0"}"#), Some(1.0));
    assert!(sample(m, r#"cairn_errors_total{kind="ERR"}"#).is_some_and(|n| n >= 2.0), "{m}");
    assert_eq!(sample(m, "cairn_connected_clients"), Some(1.0));
    assert!(sample(m, "cairn_net_input_bytes_total").is_some_and(|n| n > 0.0));
    assert!(m.contains("# TYPE cairn_commands_total counter\n"));
    assert!(!m.contains("# EOF") && !m.contains("# UNIT"));

    let om = request(admin, "GET", "/metrics", &[("Accept", "application/openmetrics-text;version=1.0.0")], "");
    assert!(om.header("content-type").is_some_and(|c| c.starts_with("application/openmetrics-text")), "{om:?}");
    assert!(om.body.ends_with("# EOF\n"));
    assert!(om.body.contains("# TYPE cairn_commands counter\n"));
    assert!(om.body.contains("# TYPE cairn_build info\n"));
}

#[test]
fn info_as_json() {
    let server = start();
    let mut client = server.client();
    client.cmd(&["SET", "a", "1"]);
    client.cmd(&["SET", "b", "2", "EX", "100"]);
    let info = get(server.admin_addr(), "/v1/info?section=server,keyspace").json();
    assert_eq!(info["server"]["redis_version"], "7.0.15");
    assert_eq!(info["keyspace"]["db0"], "keys=2,expires=1,avg_ttl=0");
    assert!(info.get("memory").is_none(), "only the sections asked for");
    let default = get(server.admin_addr(), "/v1/info").json();
    assert!(default["clients"]["connected_clients"].as_u64() == Some(1), "{default}");
}

#[test]
fn config_get_and_put() {
    let server = start();
    let admin = server.admin_addr();
    let config = get(admin, "/v1/config?pattern=maxclients").json();
    assert_eq!(config, serde_json::json!({ "maxclients": "10000" }));

    let put = |headers: &[(&str, &str)], body: &str| request(admin, "PUT", "/v1/config", headers, body);
    assert_eq!(put(&[], r#"{"maxclients": 50}"#).status, 401);
    assert_eq!(put(&[("Authorization", "Bearer wrong")], r#"{"maxclients": 50}"#).status, 401);
    let bad = put(&[AUTH], r#"{"maxclients": 50"#);
    assert_eq!(bad.status, 400);
    assert!(bad.json()["error"].as_str().is_some_and(|e| e.contains("invalid JSON")), "{bad:?}");
    assert_eq!(put(&[AUTH], "[1, 2]").status, 400);
    let unknown = put(&[AUTH], r#"{"no-such-param": "1"}"#);
    assert_eq!(unknown.status, 400);
    assert!(unknown.body.contains("Unknown option"), "{unknown:?}");
    let immutable = put(&[AUTH], r#"{"databases": 3}"#);
    assert!(immutable.status == 400 && immutable.body.contains("can't set immutable config"), "{immutable:?}");
    let invalid = put(&[AUTH], r#"{"maxclients": 50, "hz": 100000}"#);
    assert!(invalid.status == 400 && invalid.body.contains("between 1 and 500"), "{invalid:?}");
    assert_eq!(get(admin, "/v1/config?pattern=maxclients").json()["maxclients"], "10000", "all or nothing");

    let ok = put(&[AUTH], r#"{"maxclients": 50, "lazyfree-lazy-user-del": true}"#);
    assert_eq!(ok.status, 200, "{ok:?}");
    assert_eq!(ok.json(), serde_json::json!({ "maxclients": "50", "lazyfree-lazy-user-del": "yes" }));
    let mut client = server.client();
    assert_eq!(
        client.cmd(&["CONFIG", "GET", "maxclients"]),
        redis_protocol::resp3::types::OwnedFrame::Array {
            data: vec![bulk("maxclients"), bulk("50")],
            attributes: None
        }
    );

    client.cmd(&["CONFIG", "SET", "requirepass", "secret"]);
    assert_eq!(get(admin, "/v1/config?pattern=requirepass").json()["requirepass"], "(set)");
}

#[test]
fn mutations_are_refused_without_a_configured_token() {
    let server = TestServer::start();
    let admin = server.admin_addr();
    let put = request(admin, "PUT", "/v1/config", &[AUTH], r#"{"maxclients": 50}"#);
    assert_eq!(put.status, 403);
    assert!(put.body.contains("--admin-token"), "{put:?}");
    assert_eq!(request(admin, "POST", "/v1/snapshot", &[AUTH], "").status, 403);
    assert_eq!(get(admin, "/metrics").status, 200, "reads need no token");
}

struct FakeWal;

impl DurabilitySource for FakeWal {
    fn snapshot(&self) -> DurabilitySnapshot {
        let mut s = DurabilitySnapshot::without_wal("sync");
        s.appended_lsn = 50;
        s.written_lsn = 50;
        s.durable_lsn = 42;
        s.fsyncs_total = 3;
        s.fsync_seconds.buckets[3].1 = 3;
        s.fsync_seconds.sum = 0.0006;
        s
    }
}

#[test]
fn durability_from_the_log_then_from_an_installed_source() {
    let server = start();
    let admin = server.admin_addr();
    let mut client = server.client();
    for i in 0..20 {
        client.cmd(&["SET", &format!("k{i}"), "v"]);
    }
    let d = get(admin, "/v1/durability").json();
    assert_eq!(d["tier"], "async", "the default tier");
    assert!(d["appended_lsn"].as_u64().is_some_and(|n| n >= 20), "{d}");
    // The syncer writes and fsyncs in the background.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    while get(admin, "/v1/durability").json()["durable_lsn"].as_u64() < Some(20) {
        assert!(std::time::Instant::now() < deadline, "the async tier's syncer never caught up");
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    let d = get(admin, "/v1/durability").json();
    assert!(d["fsyncs_total"].as_u64().is_some_and(|n| n >= 1), "{d}");
    assert_eq!(
        d["fsync_seconds"]["buckets"].as_array().and_then(|b| b.last()).map(|b| b["le"].clone()),
        Some("+Inf".into())
    );
    let m = get(admin, "/metrics").body;
    assert!(sample(&m, "cairn_wal_durable_lsn").is_some_and(|n| n >= 20.0), "{m}");
    assert!(sample(&m, "cairn_wal_written_bytes_total").is_some_and(|n| n > 0.0));
    assert!(sample(&m, "cairn_wal_segments").is_some_and(|n| n >= 1.0));
    assert_eq!(sample(&m, r#"cairn_durability_info{tier="async"}"#), Some(1.0));

    server.running.as_ref().expect("running").server.hooks.durability.set(Arc::new(FakeWal));
    let d = get(admin, "/v1/durability").json();
    assert_eq!(
        (d["tier"].as_str(), d["written_lsn"].as_u64(), d["unsynced_lsns"].as_u64()),
        (Some("sync"), Some(50), Some(8))
    );
    assert_eq!(d["fsync_seconds"]["count"], 3);
    let m = get(admin, "/metrics").body;
    assert_eq!(sample(&m, "cairn_wal_durable_lsn"), Some(42.0));
    assert_eq!(sample(&m, r#"cairn_durability_info{tier="sync"}"#), Some(1.0));
    assert_eq!(sample(&m, r#"cairn_fsync_duration_seconds_bucket{le="0.0001"}"#), Some(0.0));
    assert_eq!(sample(&m, r#"cairn_fsync_duration_seconds_bucket{le="0.0002"}"#), Some(3.0));
    assert_eq!(sample(&m, "cairn_fsync_duration_seconds_count"), Some(3.0));
    assert_eq!(sample(&m, "cairn_durable_acks_total"), Some(20.0), "sync tier: the successful writes");
}

#[test]
fn durable_acks_in_the_sync_tier() {
    let server = TestServer::start_with(|c| c.durability = cairn_engine::durability::Tier::Sync);
    let mut client = server.client();
    for i in 0..5 {
        client.cmd(&["SET", &format!("k{i}"), "v"]);
    }
    client.cmd(&["GET", "k1"]);
    let m = get(server.admin_addr(), "/metrics").body;
    assert_eq!(sample(&m, "cairn_durable_acks_total"), Some(5.0));
    assert!(sample(&m, "cairn_fsyncs_total").is_some_and(|n| n >= 1.0), "{m}");
    assert!(sample(&m, "cairn_fsync_duration_seconds_count").is_some_and(|n| n >= 1.0));
    assert!(sample(&m, "cairn_group_commit_batch_size_sum").is_some_and(|n| n >= 5.0));
}

struct FakeSnapshots;

impl SnapshotHook for FakeSnapshots {
    fn snapshot(&self) -> Result<SnapshotReport, SnapshotError> {
        Ok(SnapshotReport { lsn: 7, duration_seconds: 0.5, bytes: 1024 })
    }
}

#[test]
fn snapshot_now() {
    let server = start();
    let admin = server.admin_addr();
    server.client().cmd(&["SET", "k", "v"]);
    assert_eq!(request(admin, "POST", "/v1/snapshot", &[], "").status, 401);
    let taken = request(admin, "POST", "/v1/snapshot", &[AUTH], "");
    assert_eq!(taken.status, 200, "{taken:?}");
    assert!(taken.json()["bytes"].as_u64().is_some_and(|n| n > 0), "{taken:?}");
    let m = get(admin, "/metrics").body;
    assert!(sample(&m, "cairn_snapshot_last_success_timestamp_seconds").is_some_and(|t| t > 1.0e9), "{m}");

    server.running.as_ref().expect("running").server.hooks.snapshot.set(Arc::new(FakeSnapshots));
    let done = request(admin, "POST", "/v1/snapshot", &[AUTH], "");
    assert_eq!(done.status, 200);
    assert_eq!(done.json()["lsn"], 7);
}

#[test]
fn log_level() {
    let server = start();
    let admin = server.admin_addr();
    let put = |headers: &[(&str, &str)], body: &str| request(admin, "PUT", "/v1/log-level", headers, body);
    assert_eq!(put(&[], r#"{"level": "debug"}"#).status, 401);
    // Logging is process-wide: this test binary sets it up once, here.
    let config = cairn_server::Config { log_level: "warn".into(), ..Default::default() };
    let _ = cairn_server::logging::init(&config);
    assert_eq!(get(admin, "/v1/log-level").json()["level"], "warn");
    assert_eq!(put(&[AUTH], r#"{"level": "#).status, 400);
    assert_eq!(put(&[AUTH], r#"{"lvl": "debug"}"#).status, 400);
    let invalid = put(&[AUTH], r#"{"level": "cairn_server=loud"}"#);
    assert!(invalid.status == 400 && invalid.body.contains("invalid log filter"), "{invalid:?}");
    let ok = put(&[AUTH], r#"{"level": "cairn_server=debug,warn"}"#);
    assert_eq!(ok.status, 200, "{ok:?}");
    assert_eq!(ok.json()["previous"], "warn");
    assert_eq!(get(admin, "/v1/log-level").json()["level"], "cairn_server=debug,warn");
    assert_eq!(put(&[AUTH], r#"{"level": "warn"}"#).status, 200);
}

#[test]
fn unknown_paths_are_404() {
    let server = start();
    assert_eq!(get(server.admin_addr(), "/v2/nothing").status, 404);
    assert_eq!(request(server.admin_addr(), "DELETE", "/v1/config", &[AUTH], "").status, 405);
}

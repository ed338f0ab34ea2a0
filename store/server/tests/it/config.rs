//! CONFIG parameters that Redis 7.0 changes at runtime or hides: save
//! points (which take snapshots), the port and bind (only their current
//! value), immutable and hidden parameters, and aliases in patterns.

use std::time::{Duration, Instant};

use crate::common::{array, bulk, error_text, simple, TestServer};
use cairn_engine::durability::Tier;
use redis_protocol::resp3::types::OwnedFrame;

#[test]
fn a_reached_save_point_takes_a_snapshot_in_the_none_tier() {
    let server = TestServer::start_with(|c| c.durability = Tier::None);
    let mut c = server.client();
    assert_eq!(c.info_number("persistence", "rdb_changes_since_last_save"), 0);
    assert_eq!(c.cmd(&["CONFIG", "SET", "save", "1 2"]), simple("OK"));
    c.cmd(&["SET", "a", "1"]);
    std::thread::sleep(Duration::from_millis(1300));
    assert_eq!(c.info_number("persistence", "rdb_saves"), 0, "one change is below the save point");
    assert_eq!(c.info_number("persistence", "rdb_changes_since_last_save"), 1);
    c.cmd(&["MSET", "b", "2", "c", "3"]);
    let deadline = Instant::now() + Duration::from_secs(10);
    while c.info_number("persistence", "rdb_saves") == 0 {
        assert!(Instant::now() < deadline, "the save point did not take a snapshot");
        std::thread::sleep(Duration::from_millis(50));
    }
    assert_eq!(c.info_number("persistence", "rdb_changes_since_last_save"), 0);
    assert_eq!(c.cmd(&["CONFIG", "SET", "save", ""]), simple("OK"));
}

#[test]
fn save_points_are_validated_and_normalized_as_redis_does() {
    let server = TestServer::start();
    let mut c = server.client();
    for bad in ["3600", "3600 x", "0 1", "-5 1"] {
        assert_eq!(
            error_text(&c.cmd(&["CONFIG", "SET", "save", bad])),
            "ERR CONFIG SET failed (possibly related to argument 'save') - Invalid save parameters",
            "{bad:?}"
        );
    }
    assert_eq!(c.cmd(&["CONFIG", "SET", "save", " 3600  1 300 100 "]), simple("OK"));
    let got = c.cmd(&["CONFIG", "GET", "save"]);
    assert_eq!(got, array(vec![bulk("save"), bulk("3600 1 300 100")]));
}

#[test]
fn config_get_port_reports_the_port_bound() {
    let server = TestServer::start();
    let mut c = server.client();
    let OwnedFrame::Array { data, .. } = c.cmd(&["CONFIG", "GET", "port"]) else { panic!("an array") };
    let Some(OwnedFrame::BlobString { data: port, .. }) = data.get(1) else { panic!("a bulk string") };
    // The test server asked for port 0: the one reported is the one bound
    // (moving it is in listeners.rs).
    assert_eq!(String::from_utf8_lossy(port), server.addr().port().to_string());
}

#[test]
fn immutable_hidden_and_aliased_parameters_behave_as_in_redis() {
    let server = TestServer::start();
    let mut c = server.client();
    assert_eq!(
        error_text(&c.cmd(&["CONFIG", "SET", "daemonize", "yes"])),
        "ERR CONFIG SET failed (possibly related to argument 'daemonize') - can't set immutable config"
    );
    let OwnedFrame::Array { data: all, .. } = c.cmd(&["CONFIG", "GET", "*"]) else { panic!("an array") };
    assert!(all.len() > 100, "{} items", all.len());
    assert!(!all.contains(&bulk("key-load-delay")), "a pattern does not return a hidden parameter");
    let hidden = c.cmd(&["CONFIG", "GET", "key-load-delay"]);
    assert_eq!(array(vec![bulk("key-load-delay"), bulk("0")]), hidden);
    assert_eq!(
        c.cmd(&["CONFIG", "GET", "*of"]),
        array(vec![bulk("replicaof"), bulk(""), bulk("slaveof"), bulk("")]),
        "a pattern returns a parameter and its alias"
    );
    assert_eq!(
        error_text(&c.cmd(&["CONFIG", "SET", "maxmemory-clients", "200%"])),
        "ERR CONFIG SET failed (possibly related to argument 'maxmemory-clients') - percentage argument must be less or equal to 100"
    );
    assert_eq!(c.cmd(&["CONFIG", "SET", "maxmemory-clients", "5%", "repl-backlog-size", "2mb"]), simple("OK"));
}

#[test]
fn parameters_given_at_start_are_set_before_clients_come() {
    let server = TestServer::start_with(|c| {
        c.params = vec![
            ("maxmemory".to_string(), "1gb".to_string()),
            ("maxmemory-policy".to_string(), "allkeys-lru".to_string()),
            ("notify-keyspace-events".to_string(), "KEA".to_string()),
        ]
    });
    let mut c = server.client();
    assert_eq!(c.cmd(&["CONFIG", "GET", "maxmemory"]), array(vec![bulk("maxmemory"), bulk("1073741824")]));
    assert_eq!(
        c.cmd(&["CONFIG", "GET", "maxmemory-policy"]),
        array(vec![bulk("maxmemory-policy"), bulk("allkeys-lru")])
    );
    assert_eq!(c.info_field("memory", "maxmemory_policy"), "allkeys-lru");
    assert_eq!(
        c.cmd(&["CONFIG", "GET", "notify-keyspace-events"]),
        array(vec![bulk("notify-keyspace-events"), bulk("AKE")])
    );
}

#[test]
fn a_bad_parameter_at_start_stops_the_start_with_redis_message() {
    let base = std::env::temp_dir().join(format!("cairn-it-params-{}", std::process::id()));
    for (i, (params, expected)) in [
        (vec![("maxmemory", "lots")], "argument must be a memory value"),
        (vec![("no-such-thing", "1")], "Unknown option or number of arguments for CONFIG SET - 'no-such-thing'"),
        (vec![("daemonize", "yes")], "can't set immutable config"),
        (vec![("port", "6400")], "set it with --port"),
        (vec![("appendfsync", "always")], "set it with --durability"),
    ]
    .into_iter()
    .enumerate()
    {
        // A directory each: a failed start's threads may hold the previous one's lock a moment longer.
        let dir = base.join(i.to_string());
        let mut config = cairn_server::Config::for_tests(&dir);
        config.params = params.iter().map(|(n, v)| (n.to_string(), v.to_string())).collect();
        let error = cairn_server::start(config, cairn_server::Shutdown::new()).expect_err("a bad parameter");
        let text = error.to_string();
        assert!(text.starts_with("invalid parameter set at start: "), "{text}");
        assert!(text.contains(expected), "{text} should say {expected}");
    }
    let _ = std::fs::remove_dir_all(&base);
}

/// Runs the `cairn` binary with `args` and a termination message file; returns
/// its exit status and what it wrote there.
fn exit_message(args: &[&str], tag: &str) -> (std::process::ExitStatus, String) {
    let dir = std::env::temp_dir().join(format!("cairn-it-termination-{tag}-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    let message_file = dir.join("termination-log");
    let status = std::process::Command::new(env!("CARGO_BIN_EXE_cairn"))
        .args(args)
        .args(["--admin-port", "0", "--native-port", "0", "--data-dir"])
        .arg(dir.join("data"))
        .arg("--termination-message-path")
        .arg(&message_file)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .status()
        .expect("run cairn");
    let message = std::fs::read_to_string(&message_file).unwrap_or_default();
    let _ = std::fs::remove_dir_all(&dir);
    (status, message)
}

#[test]
fn a_fatal_error_is_written_as_the_termination_message() {
    let (status, message) = exit_message(&["--port", "0", "--durability", "sometimes"], "config");
    assert!(!status.success());
    assert!(message.starts_with("invalid configuration: "), "{message}");
    assert!(message.contains(r#"unknown durability tier "sometimes""#), "{message}");

    let taken = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    let port = taken.local_addr().expect("address").port().to_string();
    let (status, message) = exit_message(&["--port", &port], "listen");
    assert!(!status.success());
    assert!(message.starts_with("cannot start the server: cannot listen on 127.0.0.1:"), "{message}");
    // Each cause once, though the listen error also prints its source.
    assert_eq!(message.matches("Address already in use").count(), 1, "{message}");
}

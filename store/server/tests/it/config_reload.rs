//! The config file's `[params]` applied while the server runs: edits seen
//! by the watcher (`--config-reload-interval`) or applied on demand
//! (`RunningServer::reload_config`, what SIGHUP calls), invalid versions
//! changing nothing, `--param` winning, and `cairn_config_reloads_total`.
//!
//! The file is updated as the kubelet updates a mounted ConfigMap: the
//! path is a symbolic link through `..data`, which is swapped atomically to
//! a new directory, and the new file gets the old one's modification time
//! (the watcher compares contents).

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use cairn_server::config_reload::Outcome;
use cairn_server::{Args, Config};
use clap::Parser;

use crate::common::{self, simple, TestServer};

/// How long a test waits for the watcher before it fails.
const DEADLINE: Duration = Duration::from_secs(10);

/// A directory laid out as the kubelet lays out a ConfigMap volume:
/// `cairn.toml -> ..data/cairn.toml`, `..data -> ..vN`.
struct ConfigMapDir {
    dir: PathBuf,
    version: u32,
}

impl ConfigMapDir {
    fn new(text: &str) -> ConfigMapDir {
        let dir = std::env::temp_dir().join(format!(
            "cairn-it-configmap-{}-{}",
            std::process::id(),
            std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).expect("clock").as_nanos()
        ));
        std::fs::create_dir_all(&dir).expect("config dir");
        let mut map = ConfigMapDir { dir, version: 0 };
        map.update(text);
        std::os::unix::fs::symlink("..data/cairn.toml", map.path()).expect("cairn.toml link");
        map
    }

    /// The path the server is given.
    fn path(&self) -> PathBuf {
        self.dir.join("cairn.toml")
    }

    /// Writes `text` as a new version and swaps `..data` to it at once.
    fn update(&mut self, text: &str) {
        let previous = self.dir.join(format!("..v{}", self.version));
        self.version += 1;
        let next = self.dir.join(format!("..v{}", self.version));
        std::fs::create_dir_all(&next).expect("version dir");
        std::fs::write(next.join("cairn.toml"), text).expect("write the version");
        if let Ok(old) = std::fs::metadata(previous.join("cairn.toml")).and_then(|m| m.modified()) {
            let file = std::fs::File::options().write(true).open(next.join("cairn.toml")).expect("open");
            file.set_modified(old).expect("the old modification time");
        }
        let link = self.dir.join("..data_tmp");
        std::os::unix::fs::symlink(next.file_name().expect("name"), &link).expect("new link");
        std::fs::rename(&link, self.dir.join("..data")).expect("swap ..data");
        let _ = std::fs::remove_dir_all(previous);
    }
}

impl Drop for ConfigMapDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// A server started with `--config FILE` and `flags`, in the test's data
/// directory on ephemeral ports.
fn start(file: &Path, flags: &[&str]) -> TestServer {
    TestServer::start_with(|c| {
        let path = file.to_str().expect("UTF-8 path");
        let argv = [&["cairn", "--config", path], flags].concat();
        let resolved = Config::resolve(Args::parse_from(argv)).expect("a valid configuration");
        *c = Config {
            port: Some(0),
            native_port: Some(0),
            admin_port: 0,
            threads: Some(1),
            data_dir: c.data_dir.clone(),
            wal_segment_bytes: c.wal_segment_bytes,
            ..resolved
        };
    })
}

fn config_get(server: &TestServer, name: &str) -> String {
    let reply = server.client().cmd(&["CONFIG", "GET", name]);
    match reply {
        redis_protocol::resp3::types::OwnedFrame::Array { data, .. } if data.len() == 2 => match &data[1] {
            redis_protocol::resp3::types::OwnedFrame::BlobString { data, .. } => {
                String::from_utf8_lossy(data).into_owned()
            }
            other => panic!("CONFIG GET {name}: {other:?}"),
        },
        other => panic!("CONFIG GET {name}: {other:?}"),
    }
}

/// Waits until `CONFIG GET name` is `value`.
fn wait_for_value(server: &TestServer, name: &str, value: &str) {
    let deadline = Instant::now() + DEADLINE;
    loop {
        let now = config_get(server, name);
        if now == value {
            return;
        }
        assert!(Instant::now() < deadline, "{name} is still {now}, not {value}");
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// `cairn_config_reloads_total{result="..."}` from /metrics.
fn reloads(server: &TestServer, result: &str) -> u64 {
    let metrics = common::http::get(server.admin_addr(), "/metrics").body;
    let prefix = format!("cairn_config_reloads_total{{result=\"{result}\"}} ");
    let line = metrics.lines().find_map(|l| l.strip_prefix(prefix.as_str()));
    line.unwrap_or_else(|| panic!("no {prefix} in /metrics")).trim().parse().expect("a count")
}

/// Waits until `cairn_config_reloads_total{result}` is `n`.
fn wait_for_reloads(server: &TestServer, result: &str, n: u64) {
    let deadline = Instant::now() + DEADLINE;
    while reloads(server, result) != n {
        assert!(Instant::now() < deadline, "{result} reloads never reached {n} (at {})", reloads(server, result));
        std::thread::sleep(Duration::from_millis(10));
    }
}

fn reload(server: &TestServer) -> Outcome {
    server.running.as_ref().expect("running").reload_config()
}

#[test]
fn an_edited_maxmemory_applies_within_the_interval() {
    let mut file = ConfigMapDir::new("[params]\nmaxmemory = \"1mb\"\n");
    let server = start(&file.path(), &["--config-reload-interval", "100ms"]);
    assert_eq!(config_get(&server, "maxmemory"), "1048576");
    file.update("[params]\nmaxmemory = \"2mb\"\n");
    wait_for_value(&server, "maxmemory", "2097152");
    wait_for_reloads(&server, "applied", 1);
    file.update("# the same parameters\n[params]\nmaxmemory = \"2mb\"\n");
    wait_for_reloads(&server, "unchanged", 1);
    assert_eq!((reloads(&server, "applied"), reloads(&server, "failed")), (1, 0));
}

#[test]
fn invalid_versions_change_nothing_and_the_next_valid_one_applies() {
    let mut file = ConfigMapDir::new("[params]\nmaxmemory = \"1mb\"\nhz = 10\n");
    let server = start(&file.path(), &["--config-reload-interval", "100ms"]);
    let invalid = [
        "[params]\nmaxmemory = \"lots\"\n",
        "[params]\nno-such-parameter = 1\n",
        "[params\nmaxmemory = \"3mb\"\n",
        "prot = 7000\n[params]\nmaxmemory = \"3mb\"\n",
        "[params]\ndaemonize = \"yes\"\n",
        "[params]\nport = 7000\n",
        // All or nothing: the valid change is not applied either.
        "[params]\nmaxmemory = \"3mb\"\nhz = 20\nmaxmemory-samples = 999\n",
    ];
    for (failed, text) in (1..).zip(invalid) {
        file.update(text);
        wait_for_reloads(&server, "failed", failed);
        assert_eq!(config_get(&server, "maxmemory"), "1048576", "after {text:?}");
        assert_eq!(config_get(&server, "hz"), "10", "after {text:?}");
        assert_eq!(server.client().cmd(&["PING"]), simple("PONG"));
    }
    file.update("[params]\nmaxmemory = \"3mb\"\nhz = 20\n");
    wait_for_value(&server, "maxmemory", "3145728");
    assert_eq!(config_get(&server, "hz"), "20");
    assert_eq!(reloads(&server, "applied"), 1);
    assert_eq!(reloads(&server, "failed"), invalid.len() as u64, "each invalid version counted once");
}

#[test]
fn a_parameter_the_command_line_sets_is_left_alone() {
    let mut file = ConfigMapDir::new("[params]\nmaxmemory = \"1mb\"\n");
    let server = start(&file.path(), &["--config-reload-interval", "0", "--param", "MaxMemory=5mb"]);
    assert_eq!(config_get(&server, "maxmemory"), "5242880");
    file.update("[params]\nMAXMEMORY = \"2mb\"\nhz = 20\n");
    assert_eq!(reload(&server), Outcome::Applied(vec!["hz".to_string()]));
    assert_eq!(config_get(&server, "hz"), "20");
    assert_eq!(config_get(&server, "maxmemory"), "5242880", "--param wins");
    file.update("[params]\nmaxmemory = \"lots\"\nhz = 20\n");
    assert_eq!(reload(&server), Outcome::Unchanged, "a value --param overrides is not even checked, as at start");
}

#[test]
fn reload_config_applies_with_the_watcher_off() {
    let mut file = ConfigMapDir::new("maxclients = 100\n[params]\nmaxmemory = \"1mb\"\nhz = 15\n");
    let server = start(&file.path(), &["--config-reload-interval", "0"]);
    let running = server.running.as_ref().expect("running");
    assert_eq!(running.server.config_reload.watch_interval(), None, "no watcher");
    assert_eq!(reload(&server), Outcome::Unchanged, "the version the server started with");
    file.update("maxclients = 100\n[params]\nmaxmemory = \"4mb\"\nhz = 15\n");
    assert_eq!(config_get(&server, "maxmemory"), "1048576", "nothing rereads the file by itself");
    assert_eq!(reload(&server), Outcome::Applied(vec!["maxmemory".to_string()]));
    assert_eq!(config_get(&server, "maxmemory"), "4194304");
    // Removed: kept at the value in use. Outside [params]: at the next restart.
    file.update("maxclients = 50\n[params]\nhz = 15\n");
    assert_eq!(reload(&server), Outcome::Unchanged);
    assert_eq!(config_get(&server, "maxmemory"), "4194304");
    assert_eq!(config_get(&server, "maxclients"), "100");
    file.update("maxclients = 50\n[params]\nhz = \"often\"\n");
    assert!(matches!(reload(&server), Outcome::Failed(e) if e.contains("cairn.toml") && e.contains("'hz'")));
    assert_eq!(config_get(&server, "hz"), "15");
    assert_eq!((reloads(&server, "applied"), reloads(&server, "unchanged"), reloads(&server, "failed")), (1, 2, 1));
}

#[test]
fn without_a_config_file_there_is_nothing_to_reload() {
    let server = TestServer::start();
    assert_eq!(reload(&server), Outcome::NoFile);
    assert_eq!(reloads(&server, "applied") + reloads(&server, "unchanged") + reloads(&server, "failed"), 0);
}

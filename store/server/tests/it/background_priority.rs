//! Background threads nobody waits for run at a lower priority than the
//! workers: the snapshot thread, and the WAL syncer outside the `sync` tier.

#![allow(clippy::expect_used, clippy::unwrap_used)]

use crate::common::TestServer;
use cairn_engine::durability::wal::BACKGROUND_SYNCER_NICE;
use cairn_server::persistence::snapshot::SNAPSHOT_NICE;

/// The nice values of this process's threads named `name`.
fn nice_of_threads(name: &str) -> Vec<i32> {
    let mut found = Vec::new();
    for task in std::fs::read_dir("/proc/self/task").unwrap().filter_map(Result::ok) {
        let comm = std::fs::read_to_string(task.path().join("comm")).unwrap_or_default();
        if comm.trim() != name {
            continue;
        }
        let stat = std::fs::read_to_string(task.path().join("stat")).unwrap_or_default();
        let Some(close) = stat.rfind(')') else { continue };
        // Fields after the command name start with the state (field 3); nice is field 19.
        if let Some(nice) = stat[close + 2..].split_whitespace().nth(16).and_then(|n| n.parse().ok()) {
            found.push(nice);
        }
    }
    found
}

/// Waits until some thread named `name` reports nice `expected` (threads set
/// their priority as they start); returns what was seen last.
fn await_nice(name: &str, expected: i32) -> Vec<i32> {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    loop {
        let seen = nice_of_threads(name);
        if seen.contains(&expected) || std::time::Instant::now() > deadline {
            return seen;
        }
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
}

#[test]
fn snapshot_thread_and_async_syncer_run_below_the_workers() {
    let own = cairn_engine::thread_priority::this_threads_nice().expect("own nice");
    let server = TestServer::start();
    let mut client = server.client();
    client.cmd(&["SET", "k", "v"]);
    let snapshot = await_nice("cairn-snapshot", own.max(SNAPSHOT_NICE));
    assert!(snapshot.contains(&own.max(SNAPSHOT_NICE)), "snapshot thread nice values {snapshot:?}");
    let syncer = await_nice("cairn-wal-sync0", own.max(BACKGROUND_SYNCER_NICE));
    assert!(syncer.contains(&own.max(BACKGROUND_SYNCER_NICE)), "syncer nice values {syncer:?}");
    let workers = nice_of_threads("cairn-worker-0");
    assert!(workers.contains(&own), "workers keep the process's priority: {workers:?}");
}

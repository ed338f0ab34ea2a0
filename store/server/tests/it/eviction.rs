//! `maxmemory` eviction against the real `cairn` binary (it installs the
//! counting allocator, so `used_memory` drops as keys are freed; servers
//! started in-process share this test process's memory): the limit holds,
//! each policy picks the keys Redis's would, and `noeviction` refuses writes.

use std::io::{BufRead, BufReader};
use std::net::SocketAddr;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use redis_protocol::resp3::types::OwnedFrame;

use crate::common::{bulk, simple, Client};

/// A `cairn` process on an ephemeral port with its own data directory,
/// killed when dropped (also used by `allocator.rs`).
pub(crate) struct Process {
    child: Child,
    addr: SocketAddr,
    admin: SocketAddr,
    dir: std::path::PathBuf,
}

impl Process {
    pub(crate) fn start() -> Process {
        Process::start_with(&[])
    }

    /// Started with `extra` arguments too.
    fn start_with(extra: &[&str]) -> Process {
        let dir = std::env::temp_dir().join(format!(
            "cairn-evict-{}-{}",
            std::process::id(),
            std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).expect("clock").as_nanos()
        ));
        let mut child = Command::new(env!("CARGO_BIN_EXE_cairn"))
            .args(["--port", "0", "--native-port", "0", "--admin-port", "0", "--threads", "1"])
            .arg("--data-dir")
            .arg(&dir)
            .args(extra)
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .expect("start cairn");
        let stderr = child.stderr.take().expect("stderr");
        let mut lines = BufReader::new(stderr).lines();
        let field = |line: &str, name: &str| -> SocketAddr {
            let rest = line.split(name).nth(1).unwrap_or_else(|| panic!("no {name} in {line}"));
            rest.split_whitespace().next().expect("address").parse().expect("socket address")
        };
        let (addr, admin) = loop {
            let line = lines.next().expect("cairn exited before it was ready").expect("log line");
            if line.contains("Ready to accept connections addr=") {
                break (field(&line, "connections addr="), field(&line, "admin_addr="));
            }
        };
        // Keep draining the log so the server never blocks on a full pipe.
        std::thread::spawn(move || lines.for_each(drop));
        Process { child, addr, admin, dir }
    }

    pub(crate) fn client(&self) -> Client {
        Client::connect(self.addr)
    }
}

impl Drop for Process {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// How far above `maxmemory` memory may be after a write: eviction runs
/// before a command, so its own allocation lands on top (Redis's test
/// allows 4 KiB); plus buffers of the reply and the request.
const SLACK: u64 = 64 << 10;

/// Used memory as the eviction loop counts it.
fn counted(c: &mut Client) -> u64 {
    c.info_number("memory", "used_memory") - c.info_number("memory", "mem_not_counted_for_evict")
}

/// Counted memory once it has settled (start-up work on a loaded machine
/// may still be allocating or freeing): three readings 100 ms apart within
/// 32 KiB of each other.
fn settled(c: &mut Client) -> u64 {
    let mut last = counted(c);
    let mut steady = 0;
    for _ in 0..100 {
        std::thread::sleep(Duration::from_millis(100));
        let now = counted(c);
        steady = if now.abs_diff(last) < 32 << 10 { steady + 1 } else { 0 };
        last = now;
        if steady == 3 {
            break;
        }
    }
    last
}

/// Sets `maxmemory` to what is used now plus `headroom`, and the policy.
fn limit(c: &mut Client, headroom: u64, policy: &str) -> u64 {
    let max = settled(c) + headroom;
    assert_eq!(c.cmd(&["CONFIG", "SET", "maxmemory-policy", policy]), simple("OK"));
    assert_eq!(c.cmd(&["CONFIG", "SET", "maxmemory", &max.to_string()]), simple("OK"));
    max
}

fn value() -> String {
    "v".repeat(1000)
}

fn set_many(c: &mut Client, prefix: &str, n: usize, ttl: Option<u64>) {
    let v = value();
    for i in 0..n {
        let key = format!("{prefix}:{i}");
        let reply = match ttl {
            Some(secs) => c.cmd(&["SET", &key, &v, "EX", &(secs + i as u64).to_string()]),
            None => c.cmd(&["SET", &key, &v]),
        };
        if reply != simple("OK") {
            panic!("SET {key}: {reply:?}; {}", memory_report(c));
        }
    }
}

/// What a failed write's message needs to tell eviction trouble apart:
/// keys left, keys evicted, counted memory against the limit.
fn memory_report(c: &mut Client) -> String {
    let keys = c.cmd(&["DBSIZE"]);
    format!(
        "dbsize {keys:?}, evicted {}, used {}, not counted {}, maxmemory {}, lazyfree pending {}",
        c.info_number("stats", "evicted_keys"),
        c.info_number("memory", "used_memory"),
        c.info_number("memory", "mem_not_counted_for_evict"),
        c.info_number("memory", "maxmemory"),
        c.info_number("memory", "lazyfree_pending_objects"),
    )
}

fn present(c: &mut Client, prefix: &str, n: usize) -> Vec<usize> {
    (0..n)
        .filter(|i| c.cmd(&["EXISTS", &format!("{prefix}:{i}")]) == OwnedFrame::Number { data: 1, attributes: None })
        .collect()
}

#[test]
fn allkeys_lru_keeps_under_the_limit_and_spares_the_keys_read_recently() {
    let server = Process::start();
    let mut c = server.client();
    assert_eq!(c.cmd(&["CONFIG", "SET", "maxmemory-samples", "10"]), simple("OK"));
    // Room for the hot and cold keys (about 2.2 MB), not for the new ones too.
    let max = limit(&mut c, 2600 << 10, "allkeys-lru");
    set_many(&mut c, "hot", 500, None);
    set_many(&mut c, "cold", 1500, None);
    assert_eq!(
        c.info_number("stats", "evicted_keys"),
        0,
        "the hot and cold keys fit (counted {}, max {max})",
        counted(&mut c)
    );
    // The access clock counts seconds: let the cold keys age, then read the hot ones.
    std::thread::sleep(Duration::from_millis(2100));
    for i in 0..500 {
        assert_eq!(c.cmd(&["GET", &format!("hot:{i}")]), bulk(&value()));
    }
    set_many(&mut c, "new", 800, None);
    let used = counted(&mut c);
    assert!(used <= max + SLACK, "used memory {used} above maxmemory {max}");
    assert_eq!(present(&mut c, "hot", 500).len(), 500, "a recently read key was evicted");
    assert_eq!(present(&mut c, "new", 800).len(), 800, "a key just written was evicted");
    let cold = present(&mut c, "cold", 1500).len() as u64;
    // Read last: every command (reads too) may evict while memory is above
    // the limit, as in Redis.
    let evicted = c.info_number("stats", "evicted_keys");
    assert!(evicted > 0, "nothing was evicted");
    assert_eq!(cold + evicted, 1500, "only cold keys go ({evicted} evicted)");
}

#[test]
fn allkeys_lfu_spares_the_keys_read_often() {
    let server = Process::start();
    let mut c = server.client();
    assert_eq!(c.cmd(&["CONFIG", "SET", "maxmemory-samples", "10"]), simple("OK"));
    // Room for the hot and cold keys (about 2 MB), not for the new ones too.
    limit(&mut c, 2500 << 10, "allkeys-lfu");
    set_many(&mut c, "hot", 300, None);
    set_many(&mut c, "cold", 1500, None);
    for _ in 0..30 {
        for i in 0..300 {
            c.cmd(&["GET", &format!("hot:{i}")]);
        }
    }
    let freq = c.cmd(&["OBJECT", "FREQ", "hot:0"]);
    let OwnedFrame::Number { data: freq, .. } = freq else { panic!("OBJECT FREQ: {freq:?}") };
    assert!(freq > 5, "reads raise the LFU counter above its initial 5: {freq}");
    set_many(&mut c, "new", 1000, None);
    assert!(c.info_number("stats", "evicted_keys") > 0, "nothing was evicted");
    assert_eq!(present(&mut c, "hot", 300).len(), 300, "a frequently read key was evicted");
}

#[test]
fn volatile_policies_evict_only_keys_with_a_ttl_then_refuse_writes() {
    let server = Process::start();
    let mut c = server.client();
    let max = limit(&mut c, 2 << 20, "volatile-lru");
    set_many(&mut c, "persistent", 600, None);
    set_many(&mut c, "volatile", 1500, Some(10_000));
    assert!(c.info_number("stats", "evicted_keys") > 0, "nothing was evicted");
    assert_eq!(present(&mut c, "persistent", 600).len(), 600, "a key without a TTL was evicted");
    assert!(counted(&mut c) <= max + SLACK);
    // Once only persistent keys are left, writes are refused (reads are not).
    let v = value();
    let mut refused = None;
    for i in 0..5000 {
        if let OwnedFrame::SimpleError { data, .. } = c.cmd(&["SET", &format!("more:{i}"), &v]) {
            refused = Some(data);
            break;
        }
    }
    assert_eq!(refused.as_deref(), Some("OOM command not allowed when used memory > 'maxmemory'."));
    assert_eq!(c.cmd(&["GET", "persistent:0"]), bulk(&v));
    assert_eq!(present(&mut c, "persistent", 600).len(), 600);
}

#[test]
fn volatile_ttl_evicts_the_nearest_expiry_first() {
    let server = Process::start();
    let mut c = server.client();
    assert_eq!(c.cmd(&["CONFIG", "SET", "maxmemory-samples", "64"]), simple("OK"));
    limit(&mut c, 2 << 20, "volatile-ttl");
    // Key i expires in 10,000 + i seconds.
    set_many(&mut c, "k", 2500, Some(10_000));
    let kept = present(&mut c, "k", 2500);
    let evicted = 2500 - kept.len();
    assert!(evicted > 100, "only {evicted} evicted");
    // The survivors are (nearly) the latest-expiring keys.
    let early_survivors = kept.iter().filter(|&&i| i < evicted).count();
    assert!(early_survivors * 10 < evicted, "{early_survivors} of the {evicted} nearest-expiring keys survived");
}

#[test]
fn noeviction_refuses_writes_and_still_serves_reads_and_deletes() {
    let server = Process::start();
    let mut c = server.client();
    limit(&mut c, 1 << 20, "noeviction");
    let v = value();
    let mut written = 0;
    let refused = loop {
        match c.cmd(&["SET", &format!("k:{written}"), &v]) {
            OwnedFrame::SimpleError { data, .. } => break data,
            _ => written += 1,
        }
        assert!(written < 10_000, "never refused");
    };
    assert_eq!(refused, "OOM command not allowed when used memory > 'maxmemory'.");
    assert!(written > 100, "refused after {written} writes");
    assert_eq!(c.cmd(&["GET", "k:0"]), bulk(&v));
    assert_eq!(c.info_number("stats", "evicted_keys"), 0);
    // Deleting frees memory and writes are accepted again.
    for i in 0..200 {
        c.cmd(&["DEL", &format!("k:{i}")]);
    }
    assert_eq!(c.cmd(&["SET", "again", "x"]), simple("OK"));
}

#[test]
fn a_lower_maxmemory_from_the_config_file_evicts_at_once() {
    let file = std::env::temp_dir().join(format!("cairn-evict-reload-{}.toml", std::process::id()));
    std::fs::write(&file, "[params]\nmaxmemory-policy = \"allkeys-lru\"\n").expect("config");
    let file_arg = file.display().to_string();
    let server = Process::start_with(&["--config", &file_arg, "--config-reload-interval", "100ms"]);
    let mut c = server.client();
    set_many(&mut c, "k", 3000, None);
    let max = settled(&mut c) - (1 << 20);
    let evicted_before = c.info_number("stats", "evicted_keys");
    // As the kubelet refreshes a ConfigMap: a new file swapped in.
    let next = file.with_extension("new");
    std::fs::write(&next, format!("[params]\nmaxmemory-policy = \"allkeys-lru\"\nmaxmemory = {max}\n")).expect("new");
    std::fs::rename(&next, &file).expect("swap");
    // No command follows (each would evict first, as in Redis): the reload itself must evict, as
    // CONFIG SET does. Watched through /metrics, which runs no command.
    let metric = |name: &str| -> u64 {
        let body = crate::common::http::get(server.admin, "/metrics").body;
        let line = body.lines().find(|l| l.starts_with(name) && l[name.len()..].starts_with(' '));
        line.and_then(|l| l.rsplit(' ').next()).and_then(|v| v.parse::<f64>().ok()).map_or(0, |v| v as u64)
    };
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    while metric("cairn_memory_max_bytes") != max {
        assert!(std::time::Instant::now() < deadline, "maxmemory {max} never applied");
        std::thread::sleep(Duration::from_millis(50));
    }
    let evicted = metric("cairn_evicted_keys_total") - evicted_before;
    let used = metric("cairn_memory_used_bytes");
    assert!(evicted > 0, "nothing evicted when the limit came down to {max} (used {used})");
    assert!(used <= max + SLACK + (16 << 20), "used {used} against {max}");
    let _ = std::fs::remove_file(&file);
}

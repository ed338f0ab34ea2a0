//! End to end: the driver against a real Cairn server started in-process (it verifies, the
//! summary fits the termination message, the audit finds an injected loss), and against a
//! deliberately wrong server (verification fails, the binary exits 1).

#![allow(clippy::expect_used, clippy::unwrap_used)]

use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::Command;
use std::time::Duration;

use cairn_bench::ack_log;
use cairn_bench::audit::audit;
use cairn_bench::config::{RunConfig, Stop};
use cairn_bench::keys::KeyNamer;
use cairn_bench::resp::{parse_reply, Reply};
use cairn_bench::run::run;
use cairn_bench::stream::Io;
use cairn_bench::target::{Connection, RespTarget, Target};
use cairn_bench::workload::{KeyPattern, OpMix, Shape};
use cairn_server::{Config, RunningServer, Shutdown};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

struct Cairn {
    running: Option<RunningServer>,
    dir: PathBuf,
}

impl Cairn {
    fn start(name: &str) -> Cairn {
        let dir = std::env::temp_dir().join(format!("cairn-bench-it-{}-{name}", std::process::id()));
        let running = cairn_server::start(Config::for_tests(&dir), Shutdown::new()).expect("server starts");
        Cairn { running: Some(running), dir }
    }

    fn addr(&self) -> SocketAddr {
        self.running.as_ref().expect("running").addr
    }

    fn native_addr(&self) -> SocketAddr {
        self.running.as_ref().expect("running").native_addr.expect("native port")
    }
}

impl Drop for Cairn {
    fn drop(&mut self) {
        if let Some(r) = self.running.take() {
            r.stop();
        }
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

fn config(ops: &str, clients: u32, pipeline: u32, requests: u64) -> RunConfig {
    RunConfig {
        mix: OpMix::parse(ops).unwrap(),
        clients,
        pipeline,
        threads: 2,
        io: Io::Evented,
        stop: Stop::Requests(requests),
        warmup: Duration::from_millis(100),
        keyspace: 2_000,
        key_pattern: KeyPattern::Random,
        shape: Shape::ClosedLoop,
        think_time: Duration::ZERO,
        seed: 7,
        namer: KeyNamer { prefix: format!("it{}", std::process::id()), value_size: 48 },
        prefill: true,
        final_check: true,
        max_reported_mismatches: 10,
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn verifies_a_mixed_pipelined_run_and_audits_its_ack_log() {
    let server = Cairn::start("mix");
    let ack_path = std::env::temp_dir().join(format!("cairn-bench-it-{}.acks", std::process::id()));
    let target = RespTarget::new(server.addr().to_string(), None);
    let report = run(target.clone(), config("mix", 8, 4, 8_000), Some(&ack_path), false).await.unwrap();
    assert!(report.verified, "{}", report.human());
    assert_eq!(report.requests, 8_000);
    // Every measured reply's latency reached the shared histograms, split by operation.
    assert_eq!(report.latency.count, 8_000, "{}", report.human());
    assert_eq!(report.per_op.values().map(|l| l.count).sum::<u64>(), 8_000);
    assert!(report.final_state_keys_checked > 0);
    assert!(report.ops_per_sec > 0.0);
    assert_eq!(report.per_op.len(), 5);
    let summary = report.summary_json();
    assert!(summary.len() <= 4096);
    let value: serde_json::Value = serde_json::from_str(&summary).unwrap();
    assert_eq!(value["verified"], true);
    assert_eq!(value["errors"], 0);

    let log = ack_log::read(&ack_path).unwrap();
    assert_eq!(log.acks, report.acked_writes);
    let clean = audit(&target, &log).await.unwrap();
    assert!(clean.ok, "{}", clean.human());
    assert_eq!(clean.keys_checked as usize, log.keys.len());

    // Inject a lost write: delete one acknowledged string key behind the driver's back.
    let (family, conn, k) = *log.keys.keys().find(|(f, _, _)| *f == cairn_bench::keys::Family::Strings).unwrap();
    let mut key = Vec::new();
    KeyNamer { prefix: log.prefix.clone(), value_size: log.value_size }.key(&mut key, family, conn, k);
    let mut c = target.connect().await.unwrap();
    c.queue(&[b"DEL", &key]);
    c.flush().await.unwrap();
    assert_eq!(c.read_reply().await.unwrap(), Reply::Integer(1));
    let lossy = audit(&target, &log).await.unwrap();
    assert!(!lossy.ok);
    assert_eq!(lossy.keys_with_lost_writes, 1);
    assert!(lossy.lost_writes >= 1);
    assert!(lossy.examples[0].contains(&String::from_utf8_lossy(&key).into_owned()), "{:?}", lossy.examples);
    let _ = std::fs::remove_file(ack_path);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn verifies_mixed_runs_over_the_native_protocol() {
    use cairn_bench::native::{NativeMode, NativeTarget};
    let server = Cairn::start("native");
    for (mode, pipeline) in [(NativeMode::Batch, 16), (NativeMode::Pipeline, 4), (NativeMode::Batch, 1)] {
        let target = NativeTarget::new(server.native_addr().to_string(), None, mode);
        let mut cfg = config("mix", 4, pipeline, 4_000);
        cfg.namer.prefix = format!("native{}-{mode:?}-{pipeline}", std::process::id());
        let report = run(target, cfg, None, false).await.unwrap();
        assert!(report.verified, "{mode:?} P={pipeline}: {}", report.human());
        assert_eq!(report.requests, 4_000);
        assert!(report.final_state_keys_checked > 0);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn agent_shaped_load_sleeps_between_requests() {
    let server = Cairn::start("agent");
    let mut cfg = config("set,incr", 4, 1, 0);
    cfg.shape = Shape::AgentShaped;
    cfg.think_time = Duration::from_millis(10);
    cfg.stop = Stop::Duration(Duration::from_millis(500));
    let report = run(RespTarget::new(server.addr().to_string(), None), cfg, None, false).await.unwrap();
    assert!(report.verified, "{}", report.human());
    // 4 writers sleeping 10 ms on average cannot exceed ~400 requests/s.
    assert!(report.requests > 20 && report.requests < 400, "{}", report.human());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn blocking_sockets_verify_resp_native_and_agent_shaped_runs() {
    use cairn_bench::native::{NativeMode, NativeTarget};
    let server = Cairn::start("blocking");
    let blocking = |ops: &str, clients, pipeline, requests, tag: &str| {
        let mut cfg = config(ops, clients, pipeline, requests);
        cfg.io = Io::Blocking;
        cfg.namer.prefix = format!("blk{}-{tag}", std::process::id());
        cfg
    };
    let resp = RespTarget::new(server.addr().to_string(), None).with_io(Io::Blocking);
    let report = run(resp.clone(), blocking("mix", 3, 4, 3_000, "resp"), None, false).await.unwrap();
    assert!(report.verified, "{}", report.human());
    assert_eq!((report.requests, report.io.as_str()), (3_000, "blocking"));
    assert_eq!(report.latency.count, 3_000, "each connection thread hands over its samples");
    assert!(report.final_state_keys_checked > 0);

    let native = NativeTarget::new(server.native_addr().to_string(), None, NativeMode::Batch).with_io(Io::Blocking);
    let report = run(native, blocking("mix", 2, 16, 3_200, "native"), None, false).await.unwrap();
    assert!(report.verified, "{}", report.human());
    assert_eq!(report.requests, 3_200);

    // The think time sleeps on each connection thread's own runtime.
    let mut cfg = blocking("set,incr", 2, 1, 0, "agent");
    cfg.shape = Shape::AgentShaped;
    cfg.think_time = Duration::from_millis(10);
    cfg.stop = Stop::Duration(Duration::from_millis(500));
    let report = run(resp, cfg, None, false).await.unwrap();
    assert!(report.verified, "{}", report.human());
    assert!(report.requests > 10 && report.requests < 200, "{}", report.human());
}

/// A server that answers SET with +OK and every GET with a value nobody wrote.
async fn wrong_server() -> SocketAddr {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move {
        while let Ok((mut socket, _)) = listener.accept().await {
            tokio::spawn(async move {
                let mut buf = Vec::new();
                let mut chunk = [0u8; 4096];
                loop {
                    while let Ok(Some((request, used))) = parse_reply(&buf) {
                        buf.drain(..used);
                        let reply: &[u8] = match request {
                            Reply::Array(Some(args)) if args.first() == Some(&Reply::Bulk(Some(b"GET".to_vec()))) => {
                                b"$5\r\nwrong\r\n"
                            }
                            _ => b"+OK\r\n",
                        };
                        if socket.write_all(reply).await.is_err() {
                            return;
                        }
                    }
                    match socket.read(&mut chunk).await {
                        Ok(0) | Err(_) => return,
                        Ok(n) => buf.extend_from_slice(&chunk[..n]),
                    }
                }
            });
        }
    });
    addr
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_wrong_get_reply_fails_the_run() {
    let addr = wrong_server().await;
    for io in [Io::Evented, Io::Blocking] {
        let mut cfg = config("set,get", 2, 2, 200);
        cfg.io = io;
        let report = run(RespTarget::new(addr.to_string(), None).with_io(io), cfg, None, false).await.unwrap();
        assert!(!report.verified, "{io:?}");
        assert!(report.mismatches > 0, "{io:?}");
        assert!(report.first_errors[0].contains("got \"wrong\""), "{io:?}: {:?}", report.first_errors);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_binary_exits_1_on_a_wrong_server_and_0_on_cairn() {
    let addr = wrong_server().await;
    let bin = env!("CARGO_BIN_EXE_cairn-bench");
    let summary = std::env::temp_dir().join(format!("cairn-bench-it-{}.summary", std::process::id()));
    let summary1 = summary.clone();
    let args = move |target: String| {
        let mut c = Command::new(bin);
        c.args(["run", "--target", &target, "--ops", "set,get", "-c", "2", "-n", "500", "--warmup", "0s"])
            .args(["--keyspace", "100", "--summary-json"])
            .arg(&summary1)
            .env("CI", "true");
        c
    };
    let out = tokio::task::spawn_blocking(move || args(addr.to_string()).output()).await.unwrap().unwrap();
    assert_eq!(out.status.code(), Some(1), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(String::from_utf8_lossy(&out.stderr).contains("verification FAILED"));

    let server = Cairn::start("bin");
    let target = server.addr().to_string();
    let summary2 = summary.clone();
    let out = tokio::task::spawn_blocking(move || {
        let mut c = Command::new(bin);
        c.args(["run", "--target", &target, "--ops", "mix", "-c", "4", "-P", "8", "-n", "4000", "--warmup", "0s"])
            .arg("--summary-json")
            .arg(&summary2)
            .env("CI", "true");
        c.output()
    })
    .await
    .unwrap()
    .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stdout));
    let text = std::fs::read_to_string(&summary).unwrap();
    assert!(text.len() <= 4096);
    let value: serde_json::Value = serde_json::from_str(&text).unwrap();
    assert_eq!(value["verified"], true);
    let _ = std::fs::remove_file(summary);
}

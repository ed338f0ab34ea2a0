//! RESP over TLS end to end: a TLS-only Cairn server (no plaintext port, client certificates
//! required) started in-process, certificates made by rcgen at test time, and the driver's
//! library and binary running verified loads and audits over TLS; a wrong CA, a missing client
//! certificate, a missing file and the native protocol fail with clear errors.

#![allow(clippy::expect_used, clippy::unwrap_used)]

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::time::Duration;

use cairn_bench::ack_log;
use cairn_bench::audit::audit;
use cairn_bench::config::{RunConfig, Stop};
use cairn_bench::keys::KeyNamer;
use cairn_bench::resp::Reply;
use cairn_bench::run::run;
use cairn_bench::stream::Io;
use cairn_bench::target::{Connection, RespTarget, Target, TargetError};
use cairn_bench::tls::{ClientIdentity, TlsClient, TlsSettings};
use cairn_bench::workload::{KeyPattern, OpMix, Shape};
use cairn_server::{Args, Config, RunningServer, Shutdown};
use clap::Parser;
use rcgen::{BasicConstraints, CertificateParams, DnType, ExtendedKeyUsagePurpose, IsCa, KeyPair};

const BIN: &str = env!("CARGO_BIN_EXE_cairn-bench");

/// A CA, a server certificate for localhost/127.0.0.1 and a client certificate it signed, and
/// a second CA that signed neither: PEM files in a directory of their own.
struct Pki {
    dir: PathBuf,
}

impl Pki {
    fn new(name: &str) -> Pki {
        let dir = std::env::temp_dir().join(format!("cairn-bench-tls-{}-{name}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("pki dir");
        let (ca, ca_key) = certificate_authority("cairn bench test CA");
        let (other_ca, _) = certificate_authority("some other CA");
        let leaf = |names: Vec<String>, usage: ExtendedKeyUsagePurpose| {
            let key = KeyPair::generate().expect("leaf key");
            let mut params = CertificateParams::new(names).expect("leaf params");
            params.extended_key_usages = vec![usage];
            (params.signed_by(&key, &ca, &ca_key).expect("leaf certificate"), key)
        };
        let (server, server_key) =
            leaf(vec!["localhost".into(), "127.0.0.1".into()], ExtendedKeyUsagePurpose::ServerAuth);
        let (client, client_key) = leaf(vec!["cairn-bench".into()], ExtendedKeyUsagePurpose::ClientAuth);
        for (file, pem) in [
            ("ca.crt", ca.pem()),
            ("other-ca.crt", other_ca.pem()),
            ("tls.crt", server.pem()),
            ("tls.key", server_key.serialize_pem()),
            ("client.crt", client.pem()),
            ("client.key", client_key.serialize_pem()),
        ] {
            std::fs::write(dir.join(file), pem).expect("write PEM");
        }
        Pki { dir }
    }

    fn path(&self, file: &str) -> String {
        self.dir.join(file).display().to_string()
    }

    /// Client settings with `ca` as the trusted CA file and the client certificate if asked.
    fn client(&self, ca: &str, with_certificate: bool, server_name: &str) -> TlsClient {
        let identity = with_certificate
            .then(|| ClientIdentity { cert: self.path("client.crt").into(), key: self.path("client.key").into() });
        TlsClient::new(&TlsSettings { ca_cert: self.path(ca).into(), identity, server_name: server_name.into() })
            .expect("TLS client configuration")
    }
}

impl Drop for Pki {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

fn certificate_authority(name: &str) -> (rcgen::Certificate, KeyPair) {
    let key = KeyPair::generate().expect("CA key");
    let mut params = CertificateParams::new(Vec::<String>::new()).expect("CA params");
    params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    params.distinguished_name.push(DnType::CommonName, name);
    (params.self_signed(&key).expect("CA certificate"), key)
}

/// A Cairn server serving RESP over TLS only (`--port off --native-port off --tls-port 0`),
/// asking every client for a certificate (`--tls-auth-clients yes`).
struct TlsCairn {
    running: Option<RunningServer>,
    dir: PathBuf,
}

impl TlsCairn {
    fn start(name: &str, pki: &Pki) -> TlsCairn {
        let dir = std::env::temp_dir().join(format!("cairn-bench-tls-data-{}-{name}", std::process::id()));
        // The TLS settings as the server's own flags resolve them.
        let flags = Args::try_parse_from([
            "cairn",
            "--tls-port",
            "0",
            "--tls-cert-file",
            &pki.path("tls.crt"),
            "--tls-key-file",
            &pki.path("tls.key"),
            "--tls-ca-cert-file",
            &pki.path("ca.crt"),
            "--tls-auth-clients",
            "yes",
        ])
        .expect("server TLS flags");
        let mut config = Config::for_tests(&dir);
        config.tls = Config::resolve(flags).expect("server TLS settings").tls;
        assert!(config.tls.is_some(), "TLS on");
        config.port = None;
        config.native_port = None;
        let running = cairn_server::start(config, Shutdown::new()).expect("server starts");
        assert!(running.native_addr.is_none(), "TLS only");
        TlsCairn { running: Some(running), dir }
    }

    fn addr(&self) -> SocketAddr {
        self.running.as_ref().expect("running").tls_addr.expect("TLS port")
    }
}

impl Drop for TlsCairn {
    fn drop(&mut self) {
        if let Some(r) = self.running.take() {
            r.stop();
        }
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

fn set_get(prefix: &str) -> RunConfig {
    RunConfig {
        mix: OpMix::parse("set,get").unwrap(),
        clients: 4,
        pipeline: 4,
        threads: 2,
        io: Io::Evented,
        stop: Stop::Requests(2_000),
        warmup: Duration::from_millis(100),
        keyspace: 400,
        key_pattern: KeyPattern::Random,
        shape: Shape::ClosedLoop,
        think_time: Duration::ZERO,
        seed: 11,
        namer: KeyNamer { prefix: format!("{prefix}{}", std::process::id()), value_size: 48 },
        prefill: true,
        final_check: true,
        max_reported_mismatches: 10,
    }
}

fn cairn_bench(args: &[&str]) -> Output {
    Command::new(BIN).args(args).env("CI", "true").output().expect("cairn-bench runs")
}

fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_verified_set_get_run_and_its_audit_go_over_tls_with_a_client_certificate() {
    let pki = Pki::new("lib");
    let server = TlsCairn::start("lib", &pki);
    let ack_path = pki.dir.join("run.acks");
    // The default server name: the host of the target address, an IP address here.
    let target =
        RespTarget::new(server.addr().to_string(), None).with_tls(Some(pki.client("ca.crt", true, "127.0.0.1")));
    let report = run(target.clone(), set_get("tls"), Some(&ack_path), false).await.unwrap();
    assert!(report.verified, "{}", report.human());
    assert_eq!((report.requests, report.errors), (2_000, 0), "{}", report.human());
    assert_eq!(report.io, "evented");
    assert!(report.acked_writes > 0 && report.final_state_keys_checked > 0, "{}", report.human());
    assert!(report.per_op.values().all(|l| l.count > 0), "both SET and GET measured");

    let log = ack_log::read(&ack_path).unwrap();
    assert_eq!(log.acks, report.acked_writes);
    let audited = audit(&target, &log).await.unwrap();
    assert!(audited.ok, "{}", audited.human());
    assert_eq!(audited.lost_writes, 0);
    assert_eq!(audited.keys_checked as usize, log.keys.len());
    assert!(audited.keys_checked > 0);
}

#[test]
fn the_binary_runs_and_verifies_over_tls() {
    let pki = Pki::new("bin");
    let server = TlsCairn::start("bin", &pki);
    let target = server.addr().to_string();
    let (acks, summary) = (pki.path("bin.acks"), pki.path("summary.json"));
    let tls = [
        "--tls",
        "--tls-ca-cert",
        &pki.path("ca.crt"),
        "--tls-cert",
        &pki.path("client.crt"),
        "--tls-key",
        &pki.path("client.key"),
        "--tls-server-name",
        "localhost",
    ];
    let load = ["run", "--target", &target, "--ops", "set,get", "-c", "2", "-P", "8", "-n", "2000", "--warmup", "0s"];
    let out = cairn_bench(&[&load[..], &tls, &["--ack-log", &acks, "--summary-json", &summary]].concat());
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let value: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&summary).unwrap()).unwrap();
    assert_eq!((value["verified"].as_bool(), value["errors"].as_u64()), (Some(true), Some(0)), "{value}");
    assert_eq!(value["requests"], 2000, "{value}");

    let out = cairn_bench(&[&["verify", "--target", &target, "--ack-log", &acks, "--json"][..], &tls].concat());
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let audited: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!((audited["ok"].as_bool(), audited["lost_writes"].as_u64()), (Some(true), Some(0)), "{audited}");
    assert!(audited["keys_checked"].as_u64().unwrap_or(0) > 0, "{audited}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_wrong_ca_or_server_name_fails_the_handshake_with_a_clear_error() {
    let pki = Pki::new("wrong");
    let server = TlsCairn::start("wrong", &pki);
    let addr = server.addr().to_string();
    for (ca, name, why) in [
        ("other-ca.crt", "localhost", "UnknownIssuer"),
        ("ca.crt", "cairn.example", "not valid for name \"cairn.example\""),
    ] {
        let target = RespTarget::new(addr.clone(), None).with_tls(Some(pki.client(ca, true, name)));
        let error = target.connect().await.expect_err("the handshake fails");
        assert!(matches!(error, TargetError::Tls { .. }), "{error}");
        let message = error.to_string();
        assert!(message.contains(&format!("TLS handshake with {addr} failed")), "{message}");
        assert!(message.contains("invalid peer certificate") && message.contains(why), "{message}");
    }

    // The binary: every connection fails, so the run is not verified (exit 1) and says why.
    let out = tokio::task::spawn_blocking(move || {
        let ca = pki.path("other-ca.crt");
        cairn_bench(&["run", "--target", &addr, "-c", "1", "-n", "10", "--warmup", "0s", "--tls", "--tls-ca-cert", &ca])
    })
    .await
    .unwrap();
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    assert!(stderr(&out).contains("invalid peer certificate: UnknownIssuer"), "{}", stderr(&out));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_asking_for_a_client_certificate_refuses_a_client_without_one() {
    let pki = Pki::new("anon");
    let server = TlsCairn::start("anon", &pki);
    let target =
        RespTarget::new(server.addr().to_string(), None).with_tls(Some(pki.client("ca.crt", false, "localhost")));
    // With TLS 1.3 the refusal shows on the first read, not in the handshake.
    let refused = async {
        let mut conn = target.connect().await?;
        conn.queue(&[b"PING"]);
        conn.flush().await?;
        conn.read_reply().await
    };
    let result = tokio::time::timeout(Duration::from_secs(10), refused).await.expect("no hang");
    assert!(!matches!(result, Ok(Reply::Simple(_))), "served without a certificate: {result:?}");

    let with_certificate =
        RespTarget::new(server.addr().to_string(), None).with_tls(Some(pki.client("ca.crt", true, "localhost")));
    let mut conn = with_certificate.connect().await.unwrap();
    conn.queue(&[b"PING"]);
    conn.flush().await.unwrap();
    assert_eq!(conn.read_reply().await.unwrap(), Reply::Simple(b"PONG".to_vec().into()));
}

#[test]
fn tls_with_the_native_protocol_or_a_missing_file_is_refused_before_connecting() {
    let pki = Pki::new("refuse");
    // Nothing listens here: the refusals come before any connection.
    let tls = ["run", "--target", "127.0.0.1:1", "-n", "10", "--tls", "--tls-ca-cert"];
    let out = cairn_bench(&[&tls[..], &[&pki.path("ca.crt"), "--protocol", "native"]].concat());
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(stderr(&out).contains("native protocol has no TLS"), "{}", stderr(&out));

    let missing = pki.path("missing.crt");
    let out = cairn_bench(&[&tls[..], &[&missing]].concat());
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    let text = stderr(&out);
    assert!(text.contains(&format!("cannot read the CA certificates from {missing}")), "{text}");
    assert!(!text.contains("panicked"), "{text}");

    let out = cairn_bench(&["verify", "--ack-log", &missing, "--tls"]);
    assert_eq!(out.status.code(), Some(2), "--tls without --tls-ca-cert: {}", stderr(&out));
    assert!(stderr(&out).contains("--tls-ca-cert"), "{}", stderr(&out));
    assert!(Path::new(&pki.path("ca.crt")).exists());
}

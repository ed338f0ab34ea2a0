//! RESP over TLS (`--tls-port`): certificates made by rcgen at test time,
//! a blocking rustls client, and `redis-cli --tls` for interoperability.

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use cairn_server::config::{TlsAuthClients, TlsSettings};
use rcgen::{BasicConstraints, CertificateParams, DnType, ExtendedKeyUsagePurpose, IsCa, KeyPair};
use redis_protocol::resp2::types::OwnedFrame;
use rustls::pki_types::{CertificateDer, PrivateKeyDer, ServerName};
use rustls::{ClientConfig, ClientConnection, RootCertStore, StreamOwned};

use crate::common::http::get;
use crate::common::TestServer;

/// A CA, a server certificate for localhost/127.0.0.1 and a client
/// certificate it signed, as PEM files in a directory of their own.
struct Pki {
    dir: PathBuf,
    ca_der: CertificateDer<'static>,
    client_der: CertificateDer<'static>,
    client_key_der: Vec<u8>,
}

impl Pki {
    fn new(name: &str) -> Pki {
        let dir = std::env::temp_dir().join(format!("cairn-tls-{}-{name}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("pki dir");
        let ca_key = KeyPair::generate().expect("CA key");
        let mut ca_params = CertificateParams::new(Vec::<String>::new()).expect("CA params");
        ca_params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        ca_params.distinguished_name.push(DnType::CommonName, "cairn test CA");
        let ca = ca_params.self_signed(&ca_key).expect("CA certificate");
        let leaf = |names: Vec<String>, usage: ExtendedKeyUsagePurpose| {
            let key = KeyPair::generate().expect("leaf key");
            let mut params = CertificateParams::new(names).expect("leaf params");
            params.extended_key_usages = vec![usage];
            let cert = params.signed_by(&key, &ca, &ca_key).expect("leaf certificate");
            (cert, key)
        };
        let (server, server_key) = {
            let key = KeyPair::generate().expect("server key");
            let mut params = CertificateParams::new(vec!["localhost".into(), "127.0.0.1".into()]).expect("params");
            params.extended_key_usages = vec![ExtendedKeyUsagePurpose::ServerAuth];
            params.not_after = rcgen::date_time_ymd(2031, 5, 17);
            (params.signed_by(&key, &ca, &ca_key).expect("server certificate"), key)
        };
        let (client, client_key) = leaf(vec!["cairn-test-client".into()], ExtendedKeyUsagePurpose::ClientAuth);
        for (file, pem) in [
            ("ca.crt", ca.pem()),
            ("tls.crt", server.pem()),
            ("tls.key", server_key.serialize_pem()),
            ("client.crt", client.pem()),
            ("client.key", client_key.serialize_pem()),
        ] {
            std::fs::write(dir.join(file), pem).expect("write PEM");
        }
        Pki {
            dir,
            ca_der: ca.der().clone(),
            client_der: client.der().clone(),
            client_key_der: client_key.serialize_der(),
        }
    }

    fn path(&self, file: &str) -> PathBuf {
        self.dir.join(file)
    }

    /// Copies this PKI's CA, server certificate and key over `other`'s
    /// files: a renewal, as a Secret update or certbot would write it.
    fn install_over(&self, other: &Pki, files: &[&str]) {
        for file in files {
            std::fs::copy(self.path(file), other.path(file)).expect("copy PEM");
        }
    }

    fn settings(&self, auth_clients: TlsAuthClients) -> TlsSettings {
        TlsSettings {
            port: 0,
            cert_file: self.path("tls.crt"),
            key_file: self.path("tls.key"),
            ca_cert_file: Some(self.path("ca.crt")),
            auth_clients,
            reload_interval_secs: 0,
        }
    }
}

impl Drop for Pki {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// A blocking RESP client over TLS.
struct TlsClient {
    stream: StreamOwned<ClientConnection, TcpStream>,
    buf: Vec<u8>,
}

impl TlsClient {
    /// Connects and sends nothing yet: with TLS 1.3 a refused client
    /// certificate shows on the first read, not in the handshake.
    fn connect(addr: SocketAddr, pki: &Pki, with_certificate: bool) -> TlsClient {
        let mut roots = RootCertStore::empty();
        roots.add(pki.ca_der.clone()).expect("CA root");
        #[allow(deprecated)]
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let builder = ClientConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()
            .expect("protocol versions")
            .with_root_certificates(roots);
        let config = if with_certificate {
            let key = PrivateKeyDer::try_from(pki.client_key_der.clone()).expect("client key");
            builder.with_client_auth_cert(vec![pki.client_der.clone()], key).expect("client certificate")
        } else {
            builder.with_no_client_auth()
        };
        let name = ServerName::try_from("localhost").expect("server name");
        let connection = ClientConnection::new(Arc::new(config), name).expect("client connection");
        let tcp = TcpStream::connect(addr).expect("connect");
        tcp.set_read_timeout(Some(Duration::from_secs(10))).expect("timeout");
        TlsClient { stream: StreamOwned::new(connection, tcp), buf: Vec::new() }
    }

    fn send(&mut self, words: &[&[u8]]) -> std::io::Result<()> {
        let mut out = format!("*{}\r\n", words.len()).into_bytes();
        for word in words {
            out.extend_from_slice(format!("${}\r\n", word.len()).as_bytes());
            out.extend_from_slice(word);
            out.extend_from_slice(b"\r\n");
        }
        self.stream.write_all(&out)?;
        self.stream.flush()
    }

    /// One reply, or the error that ended the connection (EOF included).
    fn read(&mut self) -> std::io::Result<OwnedFrame> {
        loop {
            if let Ok(Some((frame, used))) = redis_protocol::resp2::decode::decode(&self.buf) {
                self.buf.drain(..used);
                return Ok(frame);
            }
            let mut chunk = [0u8; 65536];
            let n = self.stream.read(&mut chunk)?;
            if n == 0 {
                return Err(std::io::Error::new(std::io::ErrorKind::UnexpectedEof, "server closed the connection"));
            }
            self.buf.extend_from_slice(&chunk[..n]);
        }
    }

    fn cmd(&mut self, words: &[&str]) -> std::io::Result<OwnedFrame> {
        let words: Vec<&[u8]> = words.iter().map(|w| w.as_bytes()).collect();
        self.send(&words)?;
        self.read()
    }
}

fn simple(text: &str) -> OwnedFrame {
    OwnedFrame::SimpleString(text.as_bytes().to_vec())
}

fn bulk(bytes: &[u8]) -> OwnedFrame {
    OwnedFrame::BulkString(bytes.to_vec())
}

fn tls_addr(server: &TestServer) -> SocketAddr {
    server.running.as_ref().expect("running").tls_addr.expect("TLS port")
}

#[test]
fn a_tls_only_server_runs_commands_for_clients_with_a_certificate() {
    let pki = Pki::new("only");
    let server = TestServer::start_with(|c| {
        c.port = None;
        c.tls = Some(pki.settings(TlsAuthClients::Yes));
    });
    let addr = tls_addr(&server);
    assert_eq!(server.addr(), addr, "with plaintext off, the server's RESP address is the TLS one");
    let mut client = TlsClient::connect(addr, &pki, true);
    assert_eq!(client.cmd(&["PING"]).expect("PING"), simple("PONG"));
    assert_eq!(client.cmd(&["SET", "k", "over tls"]).expect("SET"), simple("OK"));
    assert_eq!(client.cmd(&["GET", "k"]).expect("GET"), bulk(b"over tls"));
    // A reply far larger than one TLS record (16 KiB) arrives whole.
    let big = "x".repeat(3 << 20);
    assert_eq!(client.cmd(&["SET", "big", &big]).expect("SET big"), simple("OK"));
    assert_eq!(client.cmd(&["GET", "big"]).expect("GET big"), bulk(big.as_bytes()));
    // A pipeline of 1,000 commands sent at once: one reply each, in order.
    let mut pipeline = Vec::new();
    for i in 0..1000 {
        let n = i.to_string();
        pipeline.extend_from_slice(format!("*2\r\n$4\r\nECHO\r\n${}\r\n{n}\r\n", n.len()).as_bytes());
    }
    client.stream.write_all(&pipeline).expect("pipeline");
    for i in 0..1000 {
        assert_eq!(client.read().expect("ECHO"), bulk(i.to_string().as_bytes()));
    }
    // CONFIG GET reports the plaintext port off (0), as Redis does.
    let config = client.cmd(&["CONFIG", "GET", "port"]).expect("CONFIG GET");
    assert_eq!(config, OwnedFrame::Array(vec![bulk(b"port"), bulk(b"0")]));
}

#[test]
fn a_client_without_a_certificate_is_refused_unless_certificates_are_optional() {
    let pki = Pki::new("auth");
    let server = TestServer::start_with(|c| c.tls = Some(pki.settings(TlsAuthClients::Yes)));
    let mut refused = TlsClient::connect(tls_addr(&server), &pki, false);
    let reply = refused.cmd(&["PING"]);
    assert!(reply.is_err(), "a client without a certificate got {reply:?}");
    drop(server);

    let server = TestServer::start_with(|c| c.tls = Some(pki.settings(TlsAuthClients::Optional)));
    let mut anonymous = TlsClient::connect(tls_addr(&server), &pki, false);
    assert_eq!(anonymous.cmd(&["PING"]).expect("PING without a certificate"), simple("PONG"));
    let mut identified = TlsClient::connect(tls_addr(&server), &pki, true);
    assert_eq!(identified.cmd(&["PING"]).expect("PING with a certificate"), simple("PONG"));
}

#[test]
fn plaintext_and_tls_ports_serve_one_keyspace_and_plaintext_gets_nothing_from_tls() {
    let pki = Pki::new("both");
    let server = TestServer::start_with(|c| c.tls = Some(pki.settings(TlsAuthClients::No)));
    let mut plain = server.client();
    plain.cmd(&["SET", "shared", "from plaintext"]);
    let mut secure = TlsClient::connect(tls_addr(&server), &pki, false);
    assert_eq!(secure.cmd(&["GET", "shared"]).expect("GET"), bulk(b"from plaintext"));
    // Both show in CLIENT LIST.
    let OwnedFrame::BulkString(list) = secure.cmd(&["CLIENT", "LIST"]).expect("CLIENT LIST") else {
        panic!("CLIENT LIST reply")
    };
    assert_eq!(String::from_utf8_lossy(&list).lines().count(), 2, "{}", String::from_utf8_lossy(&list));
    // A plaintext RESP request on the TLS port is not a handshake: no reply.
    let mut raw = TcpStream::connect(tls_addr(&server)).expect("connect");
    raw.set_read_timeout(Some(Duration::from_secs(5))).expect("timeout");
    raw.write_all(b"*1\r\n$4\r\nPING\r\n").expect("write");
    let mut answer = Vec::new();
    let _ = raw.read_to_end(&mut answer);
    assert!(!answer.windows(4).any(|w| w == b"PONG"), "plaintext PING on the TLS port answered: {answer:?}");
    // CLIENT KILL ends a TLS client like any other.
    let OwnedFrame::Integer(id) = secure.cmd(&["CLIENT", "ID"]).expect("CLIENT ID") else { panic!("CLIENT ID") };
    plain.cmd(&["CLIENT", "KILL", "ID", &id.to_string()]);
    assert!(secure.cmd(&["PING"]).is_err(), "a killed TLS client still answered");
}

#[test]
fn unreadable_or_mismatched_tls_files_stop_the_start_naming_them() {
    let pki = Pki::new("bad");
    let dir = std::env::temp_dir().join(format!("cairn-tls-bad-{}", std::process::id()));
    let start = |settings: TlsSettings| {
        let mut config = cairn_server::Config::for_tests(&dir);
        config.tls = Some(settings);
        cairn_server::start(config, cairn_server::Shutdown::new()).map(|running| running.stop())
    };
    let mut missing = pki.settings(TlsAuthClients::Yes);
    missing.cert_file = pki.path("absent.crt");
    let error = start(missing).expect_err("a missing certificate file").to_string();
    assert!(error.contains("absent.crt"), "{error}");
    let mut not_a_key = pki.settings(TlsAuthClients::Yes);
    not_a_key.key_file = pki.path("ca.crt");
    let error = start(not_a_key).expect_err("a certificate given as the key").to_string();
    assert!(error.contains("private key") && error.contains("ca.crt"), "{error}");
    let mut wrong_key = pki.settings(TlsAuthClients::Yes);
    wrong_key.key_file = pki.path("client.key");
    let error = start(wrong_key).expect_err("the client's key for the server's certificate").to_string();
    assert!(error.starts_with("TLS:"), "{error}");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn redis_cli_speaks_to_the_tls_port() {
    if std::process::Command::new("redis-cli").arg("--version").output().is_err() {
        eprintln!("redis-cli not installed: skipped (the test command installs it)");
        return;
    }
    let pki = Pki::new("cli");
    let server = TestServer::start_with(|c| {
        c.port = None;
        c.tls = Some(pki.settings(TlsAuthClients::Yes));
    });
    let cli = |extra: &[&str], command: &[&str]| {
        let port = tls_addr(&server).port().to_string();
        let ca = pki.path("ca.crt");
        let mut args: Vec<&str> = vec!["-h", "127.0.0.1", "-p", &port, "--tls", "--cacert", path(&ca)];
        args.extend_from_slice(extra);
        args.extend_from_slice(command);
        let out = std::process::Command::new("redis-cli").args(&args).output().expect("redis-cli runs");
        String::from_utf8_lossy(&out.stdout).trim().to_string() + &String::from_utf8_lossy(&out.stderr)
    };
    let (cert, key) = (pki.path("client.crt"), pki.path("client.key"));
    let with_cert = ["--cert", path(&cert), "--key", path(&key)];
    assert_eq!(cli(&with_cert, &["SET", "cli", "tls"]), "OK");
    assert_eq!(cli(&with_cert, &["GET", "cli"]), "tls");
    assert_ne!(cli(&[], &["GET", "cli"]), "tls", "redis-cli without a client certificate was served");
}

fn path(p: &Path) -> &str {
    p.to_str().expect("UTF-8 path")
}

/// The server's PEM files: what a renewal replaces.
const SERVER_FILES: [&str; 3] = ["ca.crt", "tls.crt", "tls.key"];

/// Whether a new connection trusting `pki`'s CA (with its client
/// certificate) is served.
fn served(server: &TestServer, pki: &Pki) -> bool {
    let mut client = TlsClient::connect(tls_addr(server), pki, true);
    matches!(client.cmd(&["PING"]), Ok(frame) if frame == simple("PONG"))
}

/// The value of one sample line of the text exposition.
fn metric(server: &TestServer, series: &str) -> Option<f64> {
    let body = get(server.admin_addr(), "/metrics").body;
    body.lines().find_map(|line| line.strip_prefix(series)?.strip_prefix(' ')?.parse().ok())
}

fn error_text(frame: std::io::Result<OwnedFrame>) -> String {
    match frame {
        Ok(OwnedFrame::Error(text)) => text,
        other => panic!("expected an error reply, got {other:?}"),
    }
}

#[test]
fn config_set_rereads_the_tls_files_and_keeps_open_sessions() {
    let (old, renewed) = (Pki::new("set-old"), Pki::new("set-new"));
    let server = TestServer::start_with(|c| c.tls = Some(old.settings(TlsAuthClients::Yes)));
    let mut open = TlsClient::connect(tls_addr(&server), &old, true);
    assert_eq!(open.cmd(&["SET", "k", "before"]).expect("SET"), simple("OK"));
    assert!(!served(&server, &renewed), "a client of the new CA was served before the renewal");

    renewed.install_over(&old, &SERVER_FILES);
    assert!(!served(&server, &renewed), "new files are not used before a reload (the watcher is off here)");
    let cert = old.path("tls.crt");
    assert_eq!(open.cmd(&["CONFIG", "SET", "tls-cert-file", path(&cert)]).expect("CONFIG SET"), simple("OK"));
    assert!(served(&server, &renewed), "a client of the new CA is served after CONFIG SET");
    assert!(!served(&server, &old), "the old CA's client is refused after the renewal");
    assert_eq!(open.cmd(&["GET", "k"]).expect("the open session"), bulk(b"before"));
    assert_eq!(metric(&server, r#"cairn_tls_reloads_total{result="ok"}"#), Some(1.0));
}

#[test]
fn a_tls_change_that_does_not_load_is_refused_and_changes_nothing() {
    let pki = Pki::new("set-bad");
    let server = TestServer::start_with(|c| c.tls = Some(pki.settings(TlsAuthClients::Yes)));
    let mut client = TlsClient::connect(tls_addr(&server), &pki, true);
    let absent = pki.path("absent.key");
    let error = error_text(client.cmd(&["CONFIG", "SET", "tls-key-file", path(&absent)]));
    assert!(
        error.starts_with("ERR CONFIG SET failed (possibly related to argument 'tls-key-file') - Unable to update TLS configuration: cannot read the private key from")
            && error.contains("absent.key"),
        "{error}"
    );
    let client_key = pki.path("client.key");
    let error = error_text(client.cmd(&["CONFIG", "SET", "maxmemory", "1mb", "tls-key-file", path(&client_key)]));
    assert!(error.contains("do not make a TLS configuration"), "{error}");
    assert_eq!(
        client.cmd(&["CONFIG", "GET", "maxmemory"]).expect("GET"),
        OwnedFrame::Array(vec![bulk(b"maxmemory"), bulk(b"0")])
    );
    let error = error_text(client.cmd(&["CONFIG", "SET", "tls-ca-cert-file", ""]));
    assert!(error.contains("tls-ca-cert-file is required unless tls-auth-clients is no"), "{error}");
    let key = pki.path("tls.key");
    let reply = client.cmd(&["CONFIG", "GET", "tls-key-file"]).expect("CONFIG GET");
    assert_eq!(reply, OwnedFrame::Array(vec![bulk(b"tls-key-file"), bulk(path(&key).as_bytes())]));
    assert!(served(&server, &pki), "the configuration in use still serves");
    assert_eq!(metric(&server, r#"cairn_tls_reloads_total{result="failed"}"#), Some(2.0));
    // Turning client certificates off applies at once, to new connections.
    assert_eq!(client.cmd(&["CONFIG", "SET", "tls-auth-clients", "no"]).expect("SET"), simple("OK"));
    let mut anonymous = TlsClient::connect(tls_addr(&server), &pki, false);
    assert_eq!(anonymous.cmd(&["PING"]).expect("PING without a certificate"), simple("PONG"));

    drop((anonymous, client, server));
    let plain = TestServer::start();
    let mut plain_client = plain.client();
    let reply = plain_client.cmd(&["CONFIG", "SET", "tls-cert-file", path(&key)]);
    assert!(format!("{reply:?}").contains("TLS is off"), "{reply:?}");
    // Setting a value to itself stays a no-op without TLS (Redis's CONFIG sanity test does it).
    let reply = plain_client.cmd(&["CONFIG", "SET", "tls-auth-clients", "yes", "tls-cert-file", ""]);
    assert!(
        matches!(&reply, redis_protocol::resp3::types::OwnedFrame::SimpleString { data, .. } if data == b"OK"),
        "{reply:?}"
    );
}

#[test]
fn the_watcher_loads_renewed_files_and_keeps_out_a_half_written_pair() {
    let (old, renewed, other) = (Pki::new("watch-old"), Pki::new("watch-new"), Pki::new("watch-other"));
    let server = TestServer::start_with(|c| {
        let mut settings = old.settings(TlsAuthClients::Yes);
        settings.reload_interval_secs = 1;
        c.tls = Some(settings);
    });
    assert!(served(&server, &old));
    // 2031-05-17T00:00:00Z, the server certificate's notAfter.
    assert_eq!(metric(&server, "cairn_tls_certificate_expiry_timestamp_seconds"), Some(1_936_742_400.0));
    // A certificate whose key has not been written yet: kept out.
    other.install_over(&old, &["tls.crt"]);
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    while metric(&server, r#"cairn_tls_reloads_total{result="failed"}"#) != Some(1.0) {
        assert!(std::time::Instant::now() < deadline, "the watcher did not report the mismatched pair");
        std::thread::sleep(Duration::from_millis(100));
    }
    assert!(served(&server, &old), "a half-written pair replaced the configuration in use");
    // The whole renewal lands: loaded at the next check.
    renewed.install_over(&old, &SERVER_FILES);
    while !served(&server, &renewed) {
        assert!(std::time::Instant::now() < deadline, "the watcher did not load the renewed files");
        std::thread::sleep(Duration::from_millis(100));
    }
    assert!(!served(&server, &old));
    assert_eq!(metric(&server, r#"cairn_tls_reloads_total{result="ok"}"#), Some(1.0));
    assert_eq!(metric(&server, r#"cairn_tls_reloads_total{result="failed"}"#), Some(1.0), "reported once");
    let ok = metric(&server, r#"cairn_tls_handshakes_total{result="ok"}"#).expect("handshakes counted");
    let failed = metric(&server, r#"cairn_tls_handshakes_total{result="failed"}"#).expect("failures counted");
    assert!(ok >= 3.0 && failed >= 1.0, "handshakes ok {ok}, failed {failed}");
}

#[test]
fn config_set_moves_the_tls_port_and_may_close_the_plaintext_one() {
    let pki = Pki::new("moving");
    let server = TestServer::start_with(|c| c.tls = Some(pki.settings(TlsAuthClients::No)));
    let mut plain = server.client();
    let port = TcpListener::bind("127.0.0.1:0").and_then(|l| l.local_addr()).expect("a free port").port();
    assert_eq!(plain.cmd(&["CONFIG", "SET", "tls-port", &port.to_string()]), crate::common::simple("OK"));
    let moved = SocketAddr::from(([127, 0, 0, 1], port));
    let mut secure = TlsClient::connect(moved, &pki, false);
    assert_eq!(secure.cmd(&["PING"]).expect("PING on the new TLS port"), simple("PONG"));
    // With TLS open, the plaintext port may close (Redis's `port 0`).
    assert_eq!(secure.cmd(&["CONFIG", "SET", "port", "0"]).expect("CONFIG SET"), simple("OK"));
    let deadline = std::time::Instant::now() + Duration::from_secs(5);
    while TcpStream::connect(server.addr()).is_ok() {
        assert!(std::time::Instant::now() < deadline, "the plaintext port still accepts connections");
        std::thread::sleep(Duration::from_millis(20));
    }
    // Now TLS is the only way in: closing it too is refused.
    let refused = error_text(secure.cmd(&["CONFIG", "SET", "tls-port", "0"]));
    assert!(refused.contains("cannot both be 0"), "{refused}");
    assert_eq!(secure.cmd(&["PING"]).expect("PING"), simple("PONG"));
}

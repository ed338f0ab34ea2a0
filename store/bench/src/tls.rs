//! RESP over TLS (`run --tls`, `verify --tls`): the client side of the server's `--tls-port`
//! (docs/tls.md).
//!
//! [`TlsSettings`] names the PEM files and the server name; [`TlsClient::new`] reads the files
//! once, before any connection, so a missing or garbled file stops the command with its path and
//! the reason. Every connection then performs its own handshake ([`TlsClient::handshake`]) over
//! an evented socket: the TLS stream reads ahead of what it was asked for, which a blocking
//! socket would turn into a wait for bytes that never come.

use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer, ServerName};
use rustls::{ClientConfig, RootCertStore};
use tokio::net::TcpStream;
use tokio_rustls::client::TlsStream;
use tokio_rustls::TlsConnector;

/// Why TLS cannot be set up (before any connection is made).
#[derive(Debug, thiserror::Error)]
pub enum TlsError {
    #[error("cannot read {what} from {path}: {reason}")]
    Read { what: &'static str, path: PathBuf, reason: String },
    #[error("{path} holds no PEM certificate")]
    NoCertificate { path: PathBuf },
    #[error("the CA certificate in {path} cannot verify servers: {reason}")]
    CaCertificate { path: PathBuf, reason: String },
    #[error("the client certificate {cert} and key {key} do not make a TLS identity: {reason}")]
    Identity { cert: PathBuf, key: PathBuf, reason: String },
    #[error("{name:?} is not a TLS server name (a DNS name or an IP address); set --tls-server-name")]
    ServerName { name: String },
    #[error("no TLS protocol version is available: {0}")]
    Versions(rustls::Error),
    #[error("--tls needs --protocol resp: Cairn's native protocol has no TLS (its port is plaintext only)")]
    NativeProtocol,
    #[error("--tls needs evented connections (--io evented or auto), not --io blocking")]
    BlockingIo,
}

/// The client's certificate chain and private key (PEM files), for servers that ask for one.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ClientIdentity {
    pub cert: PathBuf,
    pub key: PathBuf,
}

/// What a TLS connection needs, as the command line gives it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TlsSettings {
    /// PEM bundle of the CA certificates the server's certificate must chain to.
    pub ca_cert: PathBuf,
    /// The client certificate and key, if the client identifies itself.
    pub identity: Option<ClientIdentity>,
    /// Sent as SNI and checked against the server's certificate.
    pub server_name: String,
}

/// A loaded TLS client configuration and the name it expects the server to prove.
#[derive(Clone)]
pub struct TlsClient {
    connector: TlsConnector,
    server_name: ServerName<'static>,
}

impl fmt::Debug for TlsClient {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("TlsClient").field("server_name", &self.server_name).finish_non_exhaustive()
    }
}

impl TlsClient {
    /// Reads the files `settings` names and builds the client configuration.
    pub fn new(settings: &TlsSettings) -> Result<TlsClient, TlsError> {
        let server_name = ServerName::try_from(settings.server_name.clone())
            .map_err(|_| TlsError::ServerName { name: settings.server_name.clone() })?;
        let config = client_config(settings)?;
        Ok(TlsClient { connector: TlsConnector::from(Arc::new(config)), server_name })
    }

    /// The name the server's certificate is checked against.
    pub fn server_name(&self) -> String {
        self.server_name.to_str().into_owned()
    }

    /// Performs the TLS handshake over a connected socket.
    pub async fn handshake(&self, socket: TcpStream) -> std::io::Result<TlsStream<TcpStream>> {
        self.connector.connect(self.server_name.clone(), socket).await
    }
}

/// The rustls client configuration: the CA roots, and the client identity if there is one.
fn client_config(settings: &TlsSettings) -> Result<ClientConfig, TlsError> {
    // rustls deprecates its *ring* provider for lacking post-quantum key exchange; the server
    // uses the same provider (store/server/src/tls/acceptor.rs, docs/tls.md).
    #[allow(deprecated)]
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let roots = root_store(&settings.ca_cert)?;
    let builder = ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(TlsError::Versions)?
        .with_root_certificates(roots);
    let Some(identity) = &settings.identity else {
        return Ok(builder.with_no_client_auth());
    };
    let chain = read_certificates(&identity.cert, "the client certificate")?;
    let key = PrivateKeyDer::from_pem_file(&identity.key).map_err(|e| TlsError::Read {
        what: "the client private key",
        path: identity.key.clone(),
        reason: e.to_string(),
    })?;
    builder.with_client_auth_cert(chain, key).map_err(|e| TlsError::Identity {
        cert: identity.cert.clone(),
        key: identity.key.clone(),
        reason: e.to_string(),
    })
}

/// Every certificate in the PEM file at `path` (at least one).
fn read_certificates(path: &Path, what: &'static str) -> Result<Vec<CertificateDer<'static>>, TlsError> {
    let read_error =
        |e: rustls::pki_types::pem::Error| TlsError::Read { what, path: path.into(), reason: e.to_string() };
    let certificates =
        CertificateDer::pem_file_iter(path).map_err(read_error)?.collect::<Result<Vec<_>, _>>().map_err(read_error)?;
    if certificates.is_empty() {
        return Err(TlsError::NoCertificate { path: path.into() });
    }
    Ok(certificates)
}

/// The CA certificates the server's certificate is checked against.
fn root_store(path: &Path) -> Result<RootCertStore, TlsError> {
    let mut roots = RootCertStore::empty();
    for certificate in read_certificates(path, "the CA certificates")? {
        roots.add(certificate).map_err(|e| TlsError::CaCertificate { path: path.into(), reason: e.to_string() })?;
    }
    Ok(roots)
}

/// The host part of a `host:port` target (`[::1]:6379` gives `::1`): the default server name.
pub fn host_of(addr: &str) -> &str {
    if let Some(bracketed) = addr.strip_prefix('[') {
        return bracketed.split_once(']').map_or(bracketed, |(host, _)| host);
    }
    match addr.rsplit_once(':') {
        // More than one colon and no brackets: an IPv6 address without a port.
        Some((host, _)) if !host.contains(':') => host,
        _ => addr,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scratch(name: &str) -> PathBuf {
        let dir = std::env::temp_dir().join(format!("cairn-bench-tls-unit-{}-{name}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap_or_else(|e| panic!("{e}"));
        dir
    }

    fn settings(ca_cert: PathBuf) -> TlsSettings {
        TlsSettings { ca_cert, identity: None, server_name: "localhost".into() }
    }

    #[test]
    fn the_default_server_name_is_the_host_of_the_target() {
        assert_eq!(host_of("demo.default.svc:6379"), "demo.default.svc");
        assert_eq!(host_of("127.0.0.1:6379"), "127.0.0.1");
        assert_eq!(host_of("[::1]:6379"), "::1");
        assert_eq!(host_of("::1"), "::1");
        assert_eq!(host_of("localhost"), "localhost");
    }

    #[test]
    fn bad_files_are_errors_naming_the_file_and_the_reason() {
        let dir = scratch("bad");
        let missing = dir.join("missing.crt");
        let message = TlsClient::new(&settings(missing.clone())).expect_err("missing CA").to_string();
        assert!(
            message.contains("the CA certificates") && message.contains(&missing.display().to_string()),
            "{message}"
        );
        assert!(message.contains("No such file"), "{message}");

        let empty = dir.join("empty.crt");
        std::fs::write(&empty, "not a certificate\n").unwrap_or_else(|e| panic!("{e}"));
        let message = TlsClient::new(&settings(empty.clone())).expect_err("no PEM").to_string();
        assert_eq!(message, format!("{} holds no PEM certificate", empty.display()));

        let garbled = dir.join("garbled.crt");
        std::fs::write(&garbled, "-----BEGIN CERTIFICATE-----\n!!!\n-----END CERTIFICATE-----\n")
            .unwrap_or_else(|e| panic!("{e}"));
        let message = TlsClient::new(&settings(garbled.clone())).expect_err("garbled").to_string();
        assert!(message.contains(&garbled.display().to_string()), "{message}");
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn a_server_name_that_is_neither_dns_nor_ip_is_refused() {
        let mut s = settings(PathBuf::from("/nonexistent"));
        s.server_name = "bad name!".into();
        let error = TlsClient::new(&s).expect_err("bad name");
        assert!(matches!(error, TlsError::ServerName { .. }), "{error}");
    }
}

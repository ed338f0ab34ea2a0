//! RESP over TLS (`--tls-port`, docs/tls.md).
//!
//! The server's rustls configuration is built once at start from PEM files
//! (a bad file stops the start with its path and the reason). A TLS
//! connection is accepted by a worker like a plaintext one, completes its
//! handshake (bounded by [`HANDSHAKE_TIMEOUT`]), and then runs the same
//! connection loop over the TLS session. It never moves between workers:
//! its session state lives in the stream on this worker's event loop.

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};
use rustls::server::WebPkiClientVerifier;
use rustls::{RootCertStore, ServerConfig};
use tokio::io::AsyncWriteExt;
use tokio::net::TcpStream;
pub use tokio_rustls::TlsAcceptor;

use crate::admission::{admit_stream, release, Socket};
use crate::config::{TlsAuthClients, TlsSettings};
use crate::connection::{connection_loop, refuse_resp};
use crate::server::Server;
use crate::stats::WorkerStats;

/// Longest a client may take to complete its handshake.
pub const HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(10);
/// Longest the close_notify alert may take to leave at the end.
const CLOSE_TIMEOUT: Duration = Duration::from_millis(100);

/// Why the TLS configuration could not be loaded.
#[derive(Debug, thiserror::Error)]
pub enum TlsError {
    #[error("cannot read {what} from {path}: {reason}")]
    Read { what: &'static str, path: PathBuf, reason: String },
    #[error("{path} holds no PEM certificate")]
    NoCertificate { path: PathBuf },
    #[error("the CA certificates in {path} cannot verify clients: {reason}")]
    ClientVerifier { path: PathBuf, reason: String },
    #[error("the certificate and key do not make a TLS configuration: {0}")]
    Config(#[from] rustls::Error),
}

/// Builds the acceptor `settings` describe: the certificate chain and key,
/// and a client verifier as `--tls-auth-clients` asks.
pub fn acceptor(settings: &TlsSettings) -> Result<TlsAcceptor, TlsError> {
    // rustls deprecates its *ring* provider for lacking post-quantum key
    // exchange (offered by its aws-lc-rs provider, whose C build would
    // double this crate's build time); the classical suites it offers are
    // those Redis's OpenSSL build negotiates. See docs/tls.md.
    #[allow(deprecated)]
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let certificates = read_certificates(&settings.cert_file, "the certificate chain")?;
    let key = PrivateKeyDer::from_pem_file(&settings.key_file).map_err(|e| TlsError::Read {
        what: "the private key",
        path: settings.key_file.clone(),
        reason: e.to_string(),
    })?;
    let builder = ServerConfig::builder_with_provider(provider.clone()).with_safe_default_protocol_versions()?;
    let builder = match (&settings.ca_cert_file, settings.auth_clients) {
        (_, TlsAuthClients::No) | (None, _) => builder.with_no_client_auth(),
        (Some(ca), auth) => {
            let roots = root_store(ca)?;
            let verifier = WebPkiClientVerifier::builder_with_provider(Arc::new(roots), provider);
            let verifier = if auth == TlsAuthClients::Optional { verifier.allow_unauthenticated() } else { verifier };
            let verifier =
                verifier.build().map_err(|e| TlsError::ClientVerifier { path: ca.clone(), reason: e.to_string() })?;
            builder.with_client_cert_verifier(verifier)
        }
    };
    let config = builder.with_single_cert(certificates, key)?;
    Ok(TlsAcceptor::from(Arc::new(config)))
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

/// The CA certificates client certificates are checked against.
fn root_store(path: &Path) -> Result<RootCertStore, TlsError> {
    let mut roots = RootCertStore::empty();
    for certificate in read_certificates(path, "the CA certificates")? {
        roots.add(certificate).map_err(|e| TlsError::ClientVerifier { path: path.into(), reason: e.to_string() })?;
    }
    Ok(roots)
}

/// Serves one TLS connection: handshake, admission, then the RESP loop
/// until it closes, is killed, or the server stops.
pub async fn serve(
    server: Arc<Server>,
    acceptor: TlsAcceptor,
    stream: TcpStream,
    peer: SocketAddr,
    worker: usize,
    stats: Arc<WorkerStats>,
) {
    let socket = Socket::accepted(&stream, peer);
    let mut stream = match tokio::time::timeout(HANDSHAKE_TIMEOUT, acceptor.accept(stream)).await {
        Ok(Ok(stream)) => stream,
        Ok(Err(e)) => {
            tracing::debug!(%peer, error = %e, "TLS handshake failed");
            return;
        }
        Err(_) => {
            tracing::debug!(%peer, "TLS handshake timed out");
            return;
        }
    };
    let Some((mut client, registration)) =
        admit_stream(&server, &mut stream, socket, worker, &stats, refuse_resp).await
    else {
        return;
    };
    server.rebalance.connection_started(worker);
    let ended = connection_loop(&server, &mut stream, &mut client, &stats, worker, false).await;
    server.rebalance.connection_ended(worker);
    if let Err(e) = ended {
        tracing::debug!(client = client.id(), error = %e, "TLS connection closed with an error");
    }
    // Best effort: a close_notify tells the client the session ended cleanly.
    let _ = tokio::time::timeout(CLOSE_TIMEOUT, stream.shutdown()).await;
    release(&server, &mut client);
    drop(registration);
}

//! Building the rustls acceptor from the PEM files `TlsSettings` names.
//!
//! The files are read once into [`TlsFiles`] and the acceptor is built from
//! those bytes, so what a reload compares against ([`TlsFiles::fingerprint`])
//! is exactly what the acceptor in use was built from.

use std::collections::hash_map::DefaultHasher;
use std::hash::{Hash, Hasher};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};
use rustls::server::WebPkiClientVerifier;
use rustls::{RootCertStore, ServerConfig};
use tokio_rustls::TlsAcceptor;

use crate::config::{TlsAuthClients, TlsSettings};

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

/// The contents of the certificate, key and CA files, as read together.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct TlsFiles {
    pub cert: Vec<u8>,
    pub key: Vec<u8>,
    pub ca: Option<Vec<u8>>,
}

impl TlsFiles {
    /// Reads the files `settings` names (the CA only when clients are checked).
    pub fn read(settings: &TlsSettings) -> Result<TlsFiles, TlsError> {
        let ca = match ca_file(settings) {
            Some(path) => Some(read_file(path, "the CA certificates")?),
            None => None,
        };
        Ok(TlsFiles {
            cert: read_file(&settings.cert_file, "the certificate chain")?,
            key: read_file(&settings.key_file, "the private key")?,
            ca,
        })
    }

    /// A hash of the contents: equal fingerprints, same files (for the
    /// reload watcher, which compares without keeping old contents).
    pub fn fingerprint(&self) -> u64 {
        fingerprint_of(self)
    }
}

/// A hash of `value`, for comparing what was read with what is in use.
pub fn fingerprint_of(value: &impl Hash) -> u64 {
    let mut hasher = DefaultHasher::new();
    value.hash(&mut hasher);
    hasher.finish()
}

/// An acceptor and what the metrics report about its certificate.
pub struct Built {
    pub acceptor: TlsAcceptor,
    /// Unix time the leaf certificate expires, when its validity parses.
    pub not_after_unix: Option<i64>,
}

/// The CA file clients are checked against, if they are.
fn ca_file(settings: &TlsSettings) -> Option<&Path> {
    match settings.auth_clients {
        TlsAuthClients::No => None,
        _ => settings.ca_cert_file.as_deref(),
    }
}

fn read_file(path: &Path, what: &'static str) -> Result<Vec<u8>, TlsError> {
    std::fs::read(path).map_err(|e| TlsError::Read { what, path: path.into(), reason: e.to_string() })
}

/// Builds the acceptor `settings` describe from `files` (read from its
/// paths): the certificate chain and key, and a client verifier as
/// `--tls-auth-clients` asks.
pub fn build(settings: &TlsSettings, files: &TlsFiles) -> Result<Built, TlsError> {
    // rustls deprecates its *ring* provider for lacking post-quantum key
    // exchange (offered by its aws-lc-rs provider, whose C build would
    // double this crate's build time); the classical suites it offers are
    // those Redis's OpenSSL build negotiates. See docs/tls.md.
    #[allow(deprecated)]
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let certificates = parse_certificates(&files.cert, &settings.cert_file, "the certificate chain")?;
    let key = PrivateKeyDer::from_pem_slice(&files.key).map_err(|e| TlsError::Read {
        what: "the private key",
        path: settings.key_file.clone(),
        reason: e.to_string(),
    })?;
    let not_after_unix = super::expiry::not_after_unix(&certificates[0]);
    let builder = ServerConfig::builder_with_provider(provider.clone()).with_safe_default_protocol_versions()?;
    let builder = match (ca_file(settings), &files.ca) {
        (Some(path), Some(ca)) => {
            let roots = root_store(ca, path)?;
            let verifier = WebPkiClientVerifier::builder_with_provider(Arc::new(roots), provider);
            let verifier = match settings.auth_clients {
                TlsAuthClients::Optional => verifier.allow_unauthenticated(),
                _ => verifier,
            };
            let verifier =
                verifier.build().map_err(|e| TlsError::ClientVerifier { path: path.into(), reason: e.to_string() })?;
            builder.with_client_cert_verifier(verifier)
        }
        _ => builder.with_no_client_auth(),
    };
    let config = builder.with_single_cert(certificates, key)?;
    Ok(Built { acceptor: TlsAcceptor::from(Arc::new(config)), not_after_unix })
}

/// Every certificate in `pem` (read from `path`; at least one).
fn parse_certificates(pem: &[u8], path: &Path, what: &'static str) -> Result<Vec<CertificateDer<'static>>, TlsError> {
    let read_error =
        |e: rustls::pki_types::pem::Error| TlsError::Read { what, path: path.into(), reason: e.to_string() };
    let certificates = CertificateDer::pem_slice_iter(pem).collect::<Result<Vec<_>, _>>().map_err(read_error)?;
    if certificates.is_empty() {
        return Err(TlsError::NoCertificate { path: path.into() });
    }
    Ok(certificates)
}

/// The CA certificates client certificates are checked against.
fn root_store(pem: &[u8], path: &Path) -> Result<RootCertStore, TlsError> {
    let mut roots = RootCertStore::empty();
    for certificate in parse_certificates(pem, path, "the CA certificates")? {
        roots.add(certificate).map_err(|e| TlsError::ClientVerifier { path: path.into(), reason: e.to_string() })?;
    }
    Ok(roots)
}

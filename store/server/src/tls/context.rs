//! The TLS configuration in use, replaceable while the server runs.
//!
//! Each accepted connection takes the current acceptor ([`TlsContext::acceptor`]);
//! connections already open keep the session they negotiated. The
//! configuration changes two ways, both all-or-nothing (a failure keeps the
//! one in use and says why):
//!
//! - `CONFIG SET tls-cert-file|tls-key-file|tls-ca-cert-file|tls-auth-clients`
//!   ([`TlsContext::prepare`] then [`TlsContext::install`]), which rereads
//!   the files even when the paths are unchanged, as Redis does;
//! - the reload watcher ([`super::watch`]), which rereads them when their
//!   contents change on disk (a renewed certificate, a Kubernetes Secret
//!   update) through [`TlsContext::reload_if_changed`].

use std::sync::atomic::{AtomicU64, Ordering};

use parking_lot::{Mutex, RwLock};
use tokio_rustls::TlsAcceptor;

use super::acceptor::{build, fingerprint_of, TlsError, TlsFiles};
use crate::config::TlsSettings;

/// The TLS configuration in use and its counters.
pub struct TlsContext {
    current: RwLock<Current>,
    /// Fingerprint of the last file contents a reload rejected, so a bad
    /// file is reported once, not at every check.
    rejected: Mutex<Option<u64>>,
    pub counters: TlsCounters,
}

impl std::fmt::Debug for TlsContext {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TlsContext").field("settings", &self.current.read().settings).finish_non_exhaustive()
    }
}

/// Everything one configuration was built from, and what it reports.
struct Current {
    settings: TlsSettings,
    acceptor: TlsAcceptor,
    fingerprint: u64,
    not_after_unix: Option<i64>,
    loaded_unix_ms: u64,
}

/// A configuration built and checked, not yet in use.
pub struct Prepared(Current);

/// Handshakes and reloads since the start.
#[derive(Debug, Default)]
pub struct TlsCounters {
    pub handshakes_ok: AtomicU64,
    pub handshakes_failed: AtomicU64,
    pub handshakes_timed_out: AtomicU64,
    pub reloads_ok: AtomicU64,
    pub reloads_failed: AtomicU64,
}

/// What `/metrics` reports about TLS.
#[derive(Debug, Clone, PartialEq)]
pub struct TlsReading {
    pub handshakes_ok: u64,
    pub handshakes_failed: u64,
    pub handshakes_timed_out: u64,
    pub reloads_ok: u64,
    pub reloads_failed: u64,
    pub not_after_unix: Option<i64>,
    pub loaded_unix_seconds: f64,
}

/// What a reload check did.
#[derive(Debug, PartialEq, Eq)]
pub enum Reload {
    /// The files hold what is in use.
    Unchanged,
    /// New contents, now in use.
    Reloaded,
    /// New contents that do not make a configuration (reported once).
    Rejected,
    /// The same rejected contents as at the last check.
    StillRejected,
}

impl TlsContext {
    /// Reads the files and builds the first configuration.
    pub fn load(settings: TlsSettings) -> Result<TlsContext, TlsError> {
        let Prepared(current) = Self::prepare(settings)?;
        Ok(TlsContext { current: RwLock::new(current), rejected: Mutex::new(None), counters: TlsCounters::default() })
    }

    /// Reads the files `settings` names and builds a configuration from them.
    pub fn prepare(settings: TlsSettings) -> Result<Prepared, TlsError> {
        let files = TlsFiles::read(&settings)?;
        Ok(Prepared(Self::from_files(settings, &files)?))
    }

    fn from_files(settings: TlsSettings, files: &TlsFiles) -> Result<Current, TlsError> {
        let built = build(&settings, files)?;
        Ok(Current {
            settings,
            acceptor: built.acceptor,
            fingerprint: files.fingerprint(),
            not_after_unix: built.not_after_unix,
            loaded_unix_ms: cairn_engine::clock::now_ms(),
        })
    }

    /// Puts a prepared configuration in use for the next handshakes.
    pub fn install(&self, Prepared(next): Prepared) {
        *self.current.write() = next;
        *self.rejected.lock() = None;
        self.counters.reloads_ok.fetch_add(1, Ordering::Relaxed);
    }

    /// Counts a CONFIG SET whose configuration could not be prepared.
    pub fn count_failed_reload(&self) {
        self.counters.reloads_failed.fetch_add(1, Ordering::Relaxed);
    }

    /// The acceptor for a new connection.
    pub fn acceptor(&self) -> TlsAcceptor {
        self.current.read().acceptor.clone()
    }

    /// The settings in use.
    pub fn settings(&self) -> TlsSettings {
        self.current.read().settings.clone()
    }

    /// Rereads the files in use and, when their contents changed, builds
    /// and installs a configuration from them. A read or build failure keeps
    /// the configuration in use; it is logged and counted once per distinct
    /// bad contents (a read failure counts as such until the files change).
    pub fn reload_if_changed(&self) -> Reload {
        let settings = self.settings();
        let files = TlsFiles::read(&settings);
        let fingerprint = match &files {
            Ok(files) => files.fingerprint(),
            Err(e) => fingerprint_of(&e.to_string()),
        };
        if fingerprint == self.current.read().fingerprint {
            return Reload::Unchanged;
        }
        if *self.rejected.lock() == Some(fingerprint) {
            return Reload::StillRejected;
        }
        match files.and_then(|files| Self::from_files(settings, &files)) {
            Ok(next) => {
                self.install(Prepared(next));
                tracing::info!("TLS certificate, key or CA file changed on disk: reloaded for new connections");
                Reload::Reloaded
            }
            Err(e) => {
                *self.rejected.lock() = Some(fingerprint);
                self.count_failed_reload();
                tracing::warn!(error = %e, "TLS files changed on disk but cannot be loaded; keeping the configuration in use");
                Reload::Rejected
            }
        }
    }

    /// The counters and the certificate in use, for `/metrics`.
    pub fn reading(&self) -> TlsReading {
        let c = &self.counters;
        let current = self.current.read();
        TlsReading {
            handshakes_ok: c.handshakes_ok.load(Ordering::Relaxed),
            handshakes_failed: c.handshakes_failed.load(Ordering::Relaxed),
            handshakes_timed_out: c.handshakes_timed_out.load(Ordering::Relaxed),
            reloads_ok: c.reloads_ok.load(Ordering::Relaxed),
            reloads_failed: c.reloads_failed.load(Ordering::Relaxed),
            not_after_unix: current.not_after_unix,
            loaded_unix_seconds: current.loaded_unix_ms as f64 / 1000.0,
        }
    }
}

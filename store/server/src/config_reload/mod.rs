//! Applying changes to the config file's `[params]` table while the server
//! runs: a Kubernetes ConfigMap mounted as the file changes in place (the
//! kubelet swaps a symbolic link atomically), and `maxmemory` and the other
//! CONFIG parameters follow without a restart.
//!
//! The file is reread every `--config-reload-interval` ([`watch`], a task
//! on the admin thread's event loop, off the workers) and on SIGHUP or
//! [`crate::RunningServer::reload_config`]. The watcher compares contents,
//! not modification times (a symbolic link swap keeps the path; the new
//! file's time may be older). A new version is parsed as at start, compared
//! with the last version applied ([`plan`]), and its changed parameters are
//! set as ONE CONFIG SET, all or nothing (`config_params::validate_changes`,
//! then `Server::set_config`, as [`crate::startup_params::apply`] at start).
//! Parameters `--param` sets are left alone (the command line wins); a
//! parameter removed from the file keeps its value; other top-level settings
//! are reported for the next restart. Invalid contents change nothing: the
//! error is logged (once per content) and the next valid version applies.
//!
//! # Layout
//!
//! - [`interval`]: the `--config-reload-interval` flag's values;
//! - [`version`]: one version of the file, as compared;
//! - [`plan`]: what a new version changes (pure);
//! - [`watch`]: the periodic check;
//! - this file: the reloader's state, applying a version, its counters
//!   (`cairn_config_reloads_total`) and log lines.

pub mod interval;
pub mod plan;
pub mod version;
pub mod watch;

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use parking_lot::Mutex;

use crate::config::Config;
use crate::config_params::{self, SetError};
use crate::server::Server;
use version::{fingerprint, FileVersion};

/// Why a version of the file was not applied (nothing was).
#[derive(Debug, thiserror::Error)]
pub enum ReloadError {
    #[error("cannot read config file {path}: {source}")]
    Read { path: PathBuf, source: std::io::Error },
    #[error("invalid config file {path}: {reason}")]
    Invalid { path: PathBuf, reason: String },
    #[error("config file {path}: {source}")]
    Refused { path: PathBuf, source: SetError },
}

/// What one reload did.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Outcome {
    /// The server runs without a config file.
    NoFile,
    /// The watcher found the contents it saw last time (not a reload: not
    /// counted).
    Same,
    /// These parameters (canonical names) were set.
    Applied(Vec<String>),
    /// A valid version that sets no parameter.
    Unchanged,
    /// An invalid version, or one CONFIG SET refused; nothing changed.
    Failed(String),
}

/// Reloads by result, since the start.
#[derive(Debug, Default)]
struct Counters {
    applied: AtomicU64,
    unchanged: AtomicU64,
    failed: AtomicU64,
}

/// What `/metrics` reports.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ReloadReading {
    pub applied: u64,
    pub unchanged: u64,
    pub failed: u64,
}

/// What the reloader remembers between checks.
#[derive(Debug)]
struct State {
    /// Fingerprint of the contents (or read error) the last check saw.
    seen: Option<u64>,
    /// The last version applied (at start: the one the server started with).
    applied: FileVersion,
}

/// The config file's reloader (one per server).
#[derive(Debug)]
pub struct ConfigReload {
    path: Option<PathBuf>,
    every: Duration,
    /// Canonical names of the parameters `--param` sets.
    flag_owned: Vec<String>,
    state: Mutex<State>,
    counters: Counters,
}

impl ConfigReload {
    /// The reloader of `config`'s file, starting from the version read at start.
    pub fn new(config: &Config) -> ConfigReload {
        let loaded = config.config_file_loaded.clone();
        let seen = loaded.as_ref().map(|l| l.fingerprint);
        let applied = loaded.map(|l| l.version).unwrap_or_default();
        ConfigReload {
            path: config.config_file.clone(),
            every: config.config_reload_interval,
            flag_owned: config.param_flags.iter().map(|n| version::canonical(n)).collect(),
            state: Mutex::new(State { seen, applied }),
            counters: Counters::default(),
        }
    }

    /// How often the watcher checks the file (`None`: no file, or off).
    pub fn watch_interval(&self) -> Option<Duration> {
        self.path.as_ref().and(Some(self.every)).filter(|every| !every.is_zero())
    }

    /// The watcher's check: a reload when the contents changed since the
    /// last check, else [`Outcome::Same`].
    pub fn check(&self, server: &Server) -> Outcome {
        self.run(server, false)
    }

    /// Rereads the file and applies it now, whether or not its contents
    /// changed (SIGHUP; a failed version is reported again).
    pub fn reload(&self, server: &Server) -> Outcome {
        self.run(server, true)
    }

    /// Reloads by result since the start.
    pub fn reading(&self) -> ReloadReading {
        let c = &self.counters;
        ReloadReading {
            applied: c.applied.load(Ordering::Relaxed),
            unchanged: c.unchanged.load(Ordering::Relaxed),
            failed: c.failed.load(Ordering::Relaxed),
        }
    }

    fn run(&self, server: &Server, always: bool) -> Outcome {
        let Some(path) = &self.path else {
            if always {
                tracing::warn!("no config file to reload (the server was started without --config)");
            }
            return Outcome::NoFile;
        };
        // Held throughout: the watcher and SIGHUP apply one version at a time.
        let mut state = self.state.lock();
        let read = std::fs::read(path);
        let seen = match &read {
            Ok(bytes) => fingerprint(bytes),
            Err(e) => fingerprint(e.to_string().as_bytes()),
        };
        if !always && state.seen == Some(seen) {
            return Outcome::Same;
        }
        state.seen = Some(seen);
        let applied = read
            .map_err(|source| ReloadError::Read { path: path.clone(), source })
            .and_then(|bytes| self.apply(server, path, &state.applied, &bytes));
        match applied {
            Ok((next, names)) => {
                state.applied = next;
                self.count(names)
            }
            Err(e) => {
                tracing::error!(error = %e, "config file not applied; the parameters in use are kept");
                self.counters.failed.fetch_add(1, Ordering::Relaxed);
                Outcome::Failed(e.to_string())
            }
        }
    }

    /// Applies `bytes` (a new version of the file) over `applied`, all or
    /// nothing; returns the version and the names of the parameters set.
    fn apply(
        &self,
        server: &Server,
        path: &Path,
        applied: &FileVersion,
        bytes: &[u8],
    ) -> Result<(FileVersion, Vec<String>), ReloadError> {
        let invalid = |reason: String| ReloadError::Invalid { path: path.to_path_buf(), reason };
        let text = std::str::from_utf8(bytes).map_err(|e| invalid(format!("not UTF-8: {e}")))?;
        let next = FileVersion::parse(text).map_err(invalid)?;
        let plan = plan::plan(applied, &next, &self.flag_owned);
        crate::startup_params::refuse_own_flags(plan.set.iter().map(|(n, _)| n.as_str())).map_err(invalid)?;
        let refused = |source| ReloadError::Refused { path: path.to_path_buf(), source };
        let pairs = plan.set.iter().map(|(n, v)| (n.as_str(), v.as_str()));
        let updates = config_params::validate_changes(&server.runtime, pairs).map_err(refused)?;
        if !updates.is_empty() {
            server.set_config(&updates).map_err(refused)?;
        }
        report(path, &plan, &updates);
        Ok((next, updates.iter().map(|(n, _)| n.to_string()).collect()))
    }

    fn count(&self, names: Vec<String>) -> Outcome {
        if names.is_empty() {
            self.counters.unchanged.fetch_add(1, Ordering::Relaxed);
            return Outcome::Unchanged;
        }
        self.counters.applied.fetch_add(1, Ordering::Relaxed);
        Outcome::Applied(names)
    }
}

/// Logs what a new version changed: the parameters set (credentials
/// redacted), those kept or left to the command line, and the settings that
/// wait for a restart.
fn report(path: &Path, plan: &plan::Plan, updates: &[(&'static str, String)]) {
    let file = path.display();
    if updates.is_empty() {
        tracing::info!(%file, "config file reloaded: no parameter to change");
    } else {
        tracing::info!(%file, params = %describe(updates), "config file reloaded: parameters set");
    }
    if !plan.kept.is_empty() {
        let params = plan.kept.join(", ");
        tracing::info!(%file, %params, "parameters removed from the config file keep their current values");
    }
    if !plan.ignored.is_empty() {
        let params = plan.ignored.join(", ");
        tracing::info!(%file, %params, "config file changes to parameters --param sets are ignored (the command line wins)");
    }
    if !plan.restart.is_empty() {
        let settings = plan.restart.join(", ");
        tracing::warn!(%file, %settings, "config file settings outside [params] changed: they take effect at the next restart");
    }
}

/// `name=value, ...` with credentials as `(redacted)`.
pub fn describe(updates: &[(&'static str, String)]) -> String {
    let pairs: Vec<String> =
        updates.iter().map(|(name, value)| format!("{name}={}", crate::redact::param_value(name, value))).collect();
    pairs.join(", ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn logged_values_hide_credentials() {
        let updates = [("maxmemory", "1048576".to_string()), ("requirepass", "s3cret".to_string())];
        assert_eq!(describe(&updates), "maxmemory=1048576, requirepass=(redacted)");
    }

    #[test]
    fn no_watcher_without_a_file_or_with_interval_zero() {
        let mut config = Config::default();
        assert_eq!(ConfigReload::new(&config).watch_interval(), None);
        config.config_file = Some(PathBuf::from("cairn.toml"));
        assert_eq!(ConfigReload::new(&config).watch_interval(), Some(interval::DEFAULT));
        config.config_reload_interval = Duration::ZERO;
        assert_eq!(ConfigReload::new(&config).watch_interval(), None);
    }
}

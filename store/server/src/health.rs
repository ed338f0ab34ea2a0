//! Liveness and readiness: what `/healthz` and `/readyz` report.
//!
//! The server is *ready* when recovery has finished, it is not shutting
//! down, and no write or fsync has failed. The durability layer reports
//! through the `set_*` methods; everything here is cheap to read.

use std::sync::atomic::{AtomicBool, Ordering};

use parking_lot::RwLock;

/// Readiness state, shared by the workers, the durability layer and the
/// admin server.
#[derive(Debug)]
pub struct Health {
    recovering: AtomicBool,
    shutting_down: AtomicBool,
    write_error: RwLock<Option<String>>,
}

impl Default for Health {
    fn default() -> Self {
        Health::new()
    }
}

impl Health {
    /// A server that is still recovering (not ready yet).
    pub fn new() -> Health {
        Health {
            recovering: AtomicBool::new(true),
            shutting_down: AtomicBool::new(false),
            write_error: RwLock::new(None),
        }
    }

    /// Recovery started (`true`) or finished (`false`).
    pub fn set_recovering(&self, recovering: bool) {
        self.recovering.store(recovering, Ordering::SeqCst);
    }

    pub fn is_recovering(&self) -> bool {
        self.recovering.load(Ordering::SeqCst)
    }

    /// The server began shutting down: readiness turns red at once, so load
    /// balancers stop sending new clients.
    pub fn set_shutting_down(&self) {
        self.shutting_down.store(true, Ordering::SeqCst);
    }

    pub fn is_shutting_down(&self) -> bool {
        self.shutting_down.load(Ordering::SeqCst)
    }

    /// A write or fsync failed (`Some(what happened, with path and errno)`),
    /// or the condition cleared (`None`, e.g. disk space came back).
    pub fn set_write_error(&self, error: Option<String>) {
        *self.write_error.write() = error;
    }

    pub fn write_error(&self) -> Option<String> {
        self.write_error.read().clone()
    }

    /// `Ok` when ready; otherwise every reason it is not, one per entry.
    pub fn readiness(&self) -> Result<(), Vec<String>> {
        let mut reasons = Vec::new();
        if self.is_recovering() {
            reasons.push("recovering: replaying the write-ahead log".to_string());
        }
        if self.is_shutting_down() {
            reasons.push("shutting down".to_string());
        }
        if let Some(error) = self.write_error() {
            reasons.push(format!("writes refused after a write/fsync failure: {error}"));
        }
        if reasons.is_empty() {
            Ok(())
        } else {
            Err(reasons)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ready_only_when_nothing_is_wrong() {
        let health = Health::new();
        assert!(health.readiness().is_err(), "a new server is recovering");
        health.set_recovering(false);
        assert_eq!(health.readiness(), Ok(()));
        health.set_write_error(Some("fdatasync wal/00000001.log: EIO".into()));
        let reasons = health.readiness().unwrap_err();
        assert!(reasons[0].contains("EIO"), "{reasons:?}");
        health.set_write_error(None);
        health.set_shutting_down();
        assert_eq!(health.readiness(), Err(vec!["shutting down".to_string()]));
    }
}

//! `POST /v1/snapshot`: asks the durability layer for a snapshot now.
//!
//! The durability layer implements [`SnapshotHook`] and installs it with
//! [`SnapshotCell::set`]; until then the endpoint answers 503.

use std::sync::Arc;

use axum::extract::State;
use axum::http::StatusCode;
use axum::Json;
use parking_lot::RwLock;
use serde::Serialize;

use super::auth::Authorized;
use super::error::ApiError;
use super::router::AdminState;

/// What a finished snapshot reports.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct SnapshotReport {
    /// The last LSN the snapshot includes.
    pub lsn: u64,
    pub duration_seconds: f64,
    pub bytes: u64,
}

/// Why no snapshot was taken.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
pub enum SnapshotError {
    /// This server cannot take snapshots (503).
    #[error("{0}")]
    Unavailable(String),
    /// Another snapshot is running (409).
    #[error("a snapshot is already in progress")]
    InProgress,
    /// The snapshot failed (500); the message says where and why.
    #[error("snapshot failed: {0}")]
    Failed(String),
}

/// Implemented by the durability layer. Called on a blocking thread; may
/// take as long as the snapshot does.
pub trait SnapshotHook: Send + Sync {
    fn snapshot(&self) -> Result<SnapshotReport, SnapshotError>;
}

/// The stand-in used until the durability layer installs its hook.
#[derive(Debug)]
struct NoSnapshots;

impl SnapshotHook for NoSnapshots {
    fn snapshot(&self) -> Result<SnapshotReport, SnapshotError> {
        Err(SnapshotError::Unavailable("snapshots not available yet".into()))
    }
}

/// Where the server keeps its [`SnapshotHook`].
pub struct SnapshotCell(RwLock<Arc<dyn SnapshotHook>>);

impl Default for SnapshotCell {
    fn default() -> Self {
        SnapshotCell(RwLock::new(Arc::new(NoSnapshots)))
    }
}

impl std::fmt::Debug for SnapshotCell {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("SnapshotCell")
    }
}

impl SnapshotCell {
    pub fn set(&self, hook: Arc<dyn SnapshotHook>) {
        *self.0.write() = hook;
    }

    pub fn get(&self) -> Arc<dyn SnapshotHook> {
        self.0.read().clone()
    }
}

pub async fn post(State(state): State<AdminState>, _auth: Authorized) -> Result<Json<SnapshotReport>, ApiError> {
    let hook = state.server.hooks.snapshot.get();
    let outcome = tokio::task::spawn_blocking(move || hook.snapshot())
        .await
        .map_err(|e| ApiError::internal(format!("snapshot task failed: {e}")))?;
    outcome.map(Json).map_err(|e| {
        let status = match e {
            SnapshotError::Unavailable(_) => StatusCode::SERVICE_UNAVAILABLE,
            SnapshotError::InProgress => StatusCode::CONFLICT,
            SnapshotError::Failed(_) => StatusCode::INTERNAL_SERVER_ERROR,
        };
        ApiError::new(status, e.to_string())
    })
}

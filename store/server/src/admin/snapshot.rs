//! `POST /v1/snapshot`: takes a snapshot now, as SAVE does (on a blocking
//! thread, not the admin event loop). 409 while another snapshot runs, 503
//! during recovery, 500 (with the reason) when it fails.
//!
//! Tests and embedding programs may install their own [`SnapshotHook`] with
//! [`SnapshotCell::set`].

use std::sync::atomic::Ordering;

use axum::extract::State;
use axum::http::StatusCode;
use axum::Json;
use serde::Serialize;

use super::auth::Authorized;
use super::error::ApiError;
use super::router::AdminState;
use crate::server::Server;

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

/// A replacement for the persistence layer's snapshots. Called on a
/// blocking thread; may take as long as the snapshot does.
pub trait SnapshotHook: Send + Sync {
    fn snapshot(&self) -> Result<SnapshotReport, SnapshotError>;
}

/// Where the server keeps an installed [`SnapshotHook`] (none by default).
pub type SnapshotCell = super::hooks::HookCell<dyn SnapshotHook>;

/// Takes a snapshot through the installed hook, or the persistence layer.
pub fn take(server: &Server) -> Result<SnapshotReport, SnapshotError> {
    if let Some(hook) = server.hooks.snapshot.installed() {
        return hook.snapshot();
    }
    let p = &server.persistence;
    if p.is_loading() {
        return Err(SnapshotError::Unavailable("recovering: snapshots start once recovery has finished".into()));
    }
    if p.snapshot.in_progress.load(Ordering::Acquire) {
        return Err(SnapshotError::InProgress);
    }
    let taken = crate::persistence::snapshot::take(p, &server.keyspace).map_err(SnapshotError::Failed)?;
    server.last_save_secs.store(cairn_engine::clock::now_ms() / 1000, Ordering::Relaxed);
    Ok(SnapshotReport { lsn: taken.lsn, duration_seconds: taken.millis as f64 / 1000.0, bytes: taken.bytes })
}

pub async fn post(State(state): State<AdminState>, _auth: Authorized) -> Result<Json<SnapshotReport>, ApiError> {
    let server = state.server.clone();
    let outcome = tokio::task::spawn_blocking(move || take(&server))
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

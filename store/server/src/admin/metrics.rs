//! `GET /metrics`: OpenMetrics when the `Accept` header asks for it (as
//! Prometheus does), Prometheus text format 0.0.4 otherwise.

use axum::extract::State;
use axum::http::header::{ACCEPT, CONTENT_TYPE};
use axum::http::HeaderMap;
use axum::response::IntoResponse;

use super::error::ApiError;
use super::router::AdminState;
use crate::metrics::{render, Format};

pub async fn get(State(state): State<AdminState>, headers: HeaderMap) -> Result<impl IntoResponse, ApiError> {
    let format = Format::from_accept(headers.get(ACCEPT).and_then(|v| v.to_str().ok()));
    let server = state.server.clone();
    // Summing the counters and sizing the databases touches every shard: keep
    // it off the admin event loop.
    let body = tokio::task::spawn_blocking(move || render(&server, format))
        .await
        .map_err(|e| ApiError::internal(format!("metrics task failed: {e}")))?
        .map_err(|_| ApiError::internal("cannot encode metrics"))?;
    Ok(([(CONTENT_TYPE, format.content_type())], body))
}

//! Kubernetes probes: `/healthz` (the process answers) and `/readyz` (it
//! should get traffic: recovered, accepting writes, not shutting down).

use axum::extract::State;
use axum::http::StatusCode;

use super::router::AdminState;

pub async fn healthz() -> &'static str {
    "ok\n"
}

/// 200 `ready`, or 503 with every reason it is not, one per line.
pub async fn readyz(State(state): State<AdminState>) -> (StatusCode, String) {
    match super::readiness(&state.server) {
        Ok(()) => (StatusCode::OK, "ready\n".to_string()),
        Err(reasons) => (StatusCode::SERVICE_UNAVAILABLE, format!("not ready: {}\n", reasons.join("\nnot ready: "))),
    }
}

//! `GET /v1/log-level` and `PUT /v1/log-level` with `{"level": "<filter>"}`:
//! the tracing filter (`info`, `debug`, `cairn_server=debug,info`, ...),
//! changed without a restart.

use axum::body::Bytes;
use axum::extract::State;
use axum::http::StatusCode;
use axum::Json;
use serde::Deserialize;
use serde_json::{json, Value};

use super::auth::Authorized;
use super::error::ApiError;
use super::router::AdminState;
use crate::logging::{self, LogError};

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct LevelBody {
    level: String,
}

pub async fn get() -> Result<Json<Value>, ApiError> {
    let level = logging::current_filter().ok_or_else(|| error(LogError::NotInitialized))?;
    Ok(Json(json!({ "level": level })))
}

pub async fn put(State(_state): State<AdminState>, _auth: Authorized, body: Bytes) -> Result<Json<Value>, ApiError> {
    let body: LevelBody = super::json::parse(&body)?;
    let previous = logging::set_filter(&body.level).map_err(error)?;
    tracing::info!(level = %body.level, %previous, "log level changed through the admin API");
    Ok(Json(json!({ "level": body.level, "previous": previous })))
}

fn error(e: LogError) -> ApiError {
    let status = match e {
        LogError::InvalidFilter { .. } => StatusCode::BAD_REQUEST,
        LogError::NotInitialized => StatusCode::SERVICE_UNAVAILABLE,
        LogError::AlreadyInitialized | LogError::Reload(_) => StatusCode::INTERNAL_SERVER_ERROR,
    };
    ApiError::new(status, e.to_string())
}

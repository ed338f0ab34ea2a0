//! `GET /v1/config[?pattern=glob]` and `PUT /v1/config`: the runtime
//! parameters CONFIG GET and CONFIG SET see, with CONFIG SET's validation.
//!
//! `PUT` takes `{"name": value, ...}` (strings, numbers or booleans, which
//! become `yes`/`no`) and applies all of them or none. `requirepass` is
//! reported as `(set)` or empty, never its value.

use std::collections::BTreeMap;

use axum::body::Bytes;
use axum::extract::{Query, State};
use axum::Json;
use serde::Deserialize;
use serde_json::Value;

use super::auth::Authorized;
use super::error::ApiError;
use super::router::AdminState;
use crate::config_params::validate_changes;

#[derive(Debug, Deserialize)]
pub struct ConfigQuery {
    pattern: Option<String>,
}

pub async fn get(State(state): State<AdminState>, Query(query): Query<ConfigQuery>) -> Json<BTreeMap<String, String>> {
    let pattern = query.pattern.unwrap_or_else(|| "*".into());
    Json(current(&state, &pattern))
}

pub async fn put(
    State(state): State<AdminState>,
    _auth: Authorized,
    body: Bytes,
) -> Result<Json<BTreeMap<String, String>>, ApiError> {
    let changes: BTreeMap<String, Value> = super::json::parse(&body)?;
    let texts = changes
        .iter()
        .map(|(name, value)| Ok((name.as_str(), value_text(name, value)?)))
        .collect::<Result<Vec<(&str, String)>, ApiError>>()?;
    let updates = validate_changes(&state.server.runtime, texts.iter().map(|(n, v)| (*n, v.as_str())))
        .map_err(|e| ApiError::bad_request(e.to_string()))?;
    state.server.set_config(&updates).map_err(|e| ApiError::bad_request(e.to_string()))?;
    tracing::info!(changes = ?updates.iter().map(|(n, _)| *n).collect::<Vec<_>>(), "configuration changed through the admin API");
    let changed: BTreeMap<String, String> = updates.into_iter().map(|(n, v)| (n.to_string(), redact(n, v))).collect();
    Ok(Json(changed))
}

fn current(state: &AdminState, pattern: &str) -> BTreeMap<String, String> {
    state.server.runtime.matching(pattern.as_bytes()).into_iter().map(|(n, v)| (n.to_string(), redact(n, v))).collect()
}

fn redact(name: &str, value: String) -> String {
    match name {
        "requirepass" if !value.is_empty() => "(set)".into(),
        _ => value,
    }
}

/// A JSON value as CONFIG SET's text argument.
fn value_text(name: &str, value: &Value) -> Result<String, ApiError> {
    match value {
        Value::String(s) => Ok(s.clone()),
        Value::Number(n) => Ok(n.to_string()),
        Value::Bool(b) => Ok(if *b { "yes" } else { "no" }.into()),
        _ => Err(ApiError::bad_request(format!("'{name}': values are strings, numbers or booleans"))),
    }
}

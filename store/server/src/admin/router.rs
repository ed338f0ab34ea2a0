//! The admin API's routes and the state their handlers share.

use std::sync::Arc;

use axum::routing::{get, post, put};
use axum::Router;

use crate::server::Server;

/// What every handler gets.
#[derive(Clone, Debug)]
pub struct AdminState {
    pub server: Arc<Server>,
    /// The bearer token of mutating endpoints (`None`: they are refused).
    pub token: Option<Arc<str>>,
}

/// Every admin route.
pub fn router(server: Arc<Server>) -> Router {
    let token = server.config.admin_token.as_deref().map(Arc::from);
    Router::new()
        .route("/metrics", get(super::metrics::get))
        .route("/healthz", get(super::probes::healthz))
        .route("/readyz", get(super::probes::readyz))
        .route("/v1/info", get(super::info::get))
        .route("/v1/config", get(super::config::get).put(super::config::put))
        .route("/v1/snapshot", post(super::snapshot::post))
        .route("/v1/durability", get(super::durability::get))
        .route("/v1/log-level", put(super::log_level::put).get(super::log_level::get))
        .with_state(AdminState { server, token })
}

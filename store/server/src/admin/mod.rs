//! The HTTP admin server (axum): `/metrics`, `/healthz`, `/readyz` and the
//! `/v1/...` JSON API.
//!
//! It runs on its own thread with its own single-threaded tokio runtime, so
//! scrapes and admin calls never run on a worker's event loop; what it reads
//! (per-worker counters, the registries, the keyspace sizes) is read the way
//! INFO reads it.
//!
//! - [`router`]: the routes and the state handlers share;
//! - [`auth`]: the bearer token of the mutating endpoints;
//! - [`error`]: JSON error replies; [`json`]: request bodies (bad JSON → 400);
//! - [`probes`]: `/healthz`, `/readyz`; [`metrics`]: `/metrics`;
//! - [`info`], [`config`], [`durability`], [`snapshot`], [`log_level`]: `/v1/...`;
//! - [`hooks`]: what the durability layer plugs in (its counters, snapshots).

pub mod auth;
pub mod config;
pub mod durability;
pub mod error;
pub mod hooks;
pub mod info;
pub mod json;
pub mod log_level;
pub mod metrics;
pub mod probes;
pub mod router;
pub mod snapshot;

use std::net::{SocketAddr, TcpListener as StdListener};
use std::sync::Arc;
use std::time::Duration;

use crate::server::Server;

/// How long in-flight admin requests may take to finish at shutdown.
const SHUTDOWN_GRACE: Duration = Duration::from_secs(2);

/// Binds the admin listener (before the server starts, so a busy port is a
/// start error like the RESP port's).
pub fn bind(bind: &str, port: u16) -> std::io::Result<(SocketAddr, StdListener)> {
    let addr = crate::listener::resolve(bind, port)?;
    let socket = socket2::Socket::new(socket2::Domain::for_address(addr), socket2::Type::STREAM, None)?;
    socket.set_reuse_address(true)?;
    socket.bind(&addr.into())?;
    socket.listen(128)?;
    socket.set_nonblocking(true)?;
    let listener: StdListener = socket.into();
    Ok((listener.local_addr()?, listener))
}

/// Serves the admin API on its own thread until the server shuts down.
pub fn spawn(server: Arc<Server>, listener: StdListener) -> std::io::Result<std::thread::JoinHandle<()>> {
    std::thread::Builder::new().name("cairn-admin".into()).spawn(move || {
        let runtime = match tokio::runtime::Builder::new_current_thread().enable_all().build() {
            Ok(rt) => rt,
            Err(e) => {
                tracing::error!(error = %e, "cannot build the admin server's event loop");
                server.shutdown.trigger();
                return;
            }
        };
        runtime.block_on(serve(server, listener));
    })
}

async fn serve(server: Arc<Server>, listener: StdListener) {
    let listener = match tokio::net::TcpListener::from_std(listener) {
        Ok(l) => l,
        Err(e) => {
            tracing::error!(error = %e, "cannot register the admin listener");
            server.shutdown.trigger();
            return;
        }
    };
    if let Some(every) = server.tls.as_ref().map(|tls| tls.settings().reload_interval_secs).filter(|s| *s > 0) {
        // Off the workers: the TLS reload watcher shares this event loop.
        tokio::spawn(crate::tls::watch::run(server.clone(), std::time::Duration::from_secs(every)));
    }
    if let Some(every) = server.config_reload.watch_interval() {
        // The config file's watcher, likewise.
        tokio::spawn(crate::config_reload::watch::run(server.clone(), every));
    }
    // MIGRATE's idle cached connections are closed from here too.
    tokio::spawn(crate::migrate::sockets::run_closer(server.clone()));
    // And idle clients are asked to give their buffers back.
    tokio::spawn(crate::client_buffers::cron::run(server.clone()));
    let shutdown = server.shutdown.clone();
    let app = router::router(server.clone());
    let serving = axum::serve(listener, app).with_graceful_shutdown(async move { shutdown.wait().await });
    let deadline = async {
        server.shutdown.wait().await;
        tokio::time::sleep(SHUTDOWN_GRACE).await;
    };
    tokio::select! {
        result = serving => if let Err(e) = result {
            tracing::error!(error = %e, "admin server failed");
        },
        _ = deadline => tracing::warn!("admin requests still running at shutdown were dropped"),
    }
}

/// `Ok` when the server is ready for traffic, otherwise why not. Folds in
/// what the persistence layer knows (the log refusing writes, recovery).
pub fn readiness(server: &Server) -> Result<(), Vec<String>> {
    if server.shutdown.is_triggered() {
        server.health.set_shutting_down();
    }
    let log_error = server.persistence.wal().and_then(|wal| wal.health_message());
    let mut reasons = server.health.readiness().err().unwrap_or_default();
    if let Some(message) = log_error {
        reasons.push(format!("the write-ahead log refuses writes: {message}"));
    }
    if server.persistence.is_loading() && !server.health.is_recovering() {
        reasons.push("loading the dataset".to_string());
    }
    if reasons.is_empty() {
        Ok(())
    } else {
        Err(reasons)
    }
}

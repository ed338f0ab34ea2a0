//! Running script work on a blocking thread, off the worker's event loop.
//!
//! A script holds every shard and may run for seconds, and a worker thread
//! must never wait for one (see [`super::quiesce`]). So a client's EVAL, an
//! EXEC whose transaction calls a script, and a native frame with a script
//! operation run on tokio's blocking pool while the worker keeps serving its
//! other connections. For the last two the client itself moves to that
//! thread and back ([`with_client_elsewhere`]).

use std::sync::Arc;

use super::run;
use crate::client::Client;
use crate::server::Server;
use crate::stats::WorkerStats;

/// The blocking thread failed (it panicked); the client it held is gone.
#[derive(Debug, thiserror::Error)]
#[error("the thread running a script failed: {0}")]
pub struct OffloadFailed(String);

/// Runs a client's script on a blocking thread, so that the worker's event
/// loop keeps serving other connections; returns its outcome.
pub async fn run_elsewhere(
    server: &Arc<Server>,
    stats: &Arc<WorkerStats>,
    client: &Client,
    request: run::ScriptRequest,
) -> run::Outcome {
    let caller = run::Caller { handle: client.handle.clone(), db: client.db, protocol: client.protocol };
    let (server, stats) = (server.clone(), stats.clone());
    let task =
        tokio::task::spawn_blocking(move || run::execute(&server, &stats, &caller, &request, run::Within::Alone));
    match task.await {
        Ok(outcome) => outcome,
        Err(e) => {
            tracing::error!(error = %e, "a script's thread failed");
            let mut reply = Vec::new();
            cairn_protocol::ReplyWriter::new(&mut reply, client.protocol)
                .error("ERR Error running script: the script's thread failed");
            run::Outcome { reply, ..run::Outcome::default() }
        }
    }
}

/// Runs `work` on a blocking thread with the client moved there, then puts
/// the client back. Scripts the client calls meanwhile run on that thread
/// (`Client::off_worker`). On `Err` the client is lost and the connection
/// must close.
pub async fn with_client_elsewhere<T: Send + 'static>(
    server: &Arc<Server>,
    stats: &Arc<WorkerStats>,
    client: &mut Client,
    work: impl FnOnce(&Server, &WorkerStats, &mut Client) -> T + Send + 'static,
) -> Result<T, OffloadFailed> {
    let placeholder = Client::new(client.handle.clone(), false, client.user.clone());
    let mut moved = std::mem::replace(client, placeholder);
    let (server, stats) = (server.clone(), stats.clone());
    let task = tokio::task::spawn_blocking(move || {
        moved.off_worker = true;
        let result = work(&server, &stats, &mut moved);
        moved.off_worker = false;
        (moved, result)
    });
    match task.await {
        Ok((moved, result)) => {
            *client = moved;
            Ok(result)
        }
        Err(e) => {
            tracing::error!(client = client.id(), error = %e, "a client's script thread failed");
            Err(OffloadFailed(e.to_string()))
        }
    }
}

//! Running script work on a blocking thread, off the worker's event loop.
//!
//! A script holds every shard and may run for seconds, and a worker thread
//! must never wait for one (see [`super::quiesce`]). So a client's EVAL or
//! FCALL runs on the server's script thread ([`run_elsewhere`]), and an EXEC
//! whose transaction calls a script, or a native frame with a script
//! operation, on tokio's blocking pool, with the client itself moved to that
//! thread and back ([`with_client_elsewhere`]), while the worker keeps
//! serving its other connections.

use std::sync::Arc;

use super::run;
use crate::client::Client;
use crate::server::Server;
use crate::stats::WorkerStats;

/// The blocking thread failed (it panicked); the client it held is gone.
#[derive(Debug, thiserror::Error)]
#[error("the thread running a script failed: {0}")]
pub struct OffloadFailed(String);

/// Runs a client's scripts, in order, on the server's script thread (see
/// [`super::runner`]), so that the worker's event loop keeps serving other
/// connections; returns each one's reply offset and outcome.
pub async fn run_elsewhere(
    server: &Arc<Server>,
    stats: &Arc<WorkerStats>,
    client: &Client,
    scripts: Vec<run::PendingScript>,
) -> Vec<(usize, run::Outcome)> {
    let caller = run::Caller::of(client);
    let places: Vec<(usize, usize)> = scripts.iter().map(|script| (script.at, script.stat)).collect();
    let requests = scripts.into_iter().map(|script| script.request);
    let receivers = server.scripting.runner.submit(server, stats, &caller, requests);
    let mut outcomes = Vec::with_capacity(places.len());
    for ((at, stat), receiver) in places.into_iter().zip(receivers) {
        let outcome = match receiver {
            Some(receiver) => receiver.await.map_err(|e| e.to_string()),
            None => Err("the script thread could not start".to_string()),
        };
        let outcome = outcome.unwrap_or_else(|failure| {
            tracing::error!(error = %failure, "a script's thread failed");
            let mut reply = Vec::new();
            cairn_protocol::ReplyWriter::new(&mut reply, client.protocol)
                .error("ERR Error running script: the script's thread failed");
            run::Outcome { reply, ..run::Outcome::default() }
        });
        // Its command was counted when dispatched; an error reply counts now.
        outcome.count_error(stats, stat);
        outcomes.push((at, outcome));
    }
    outcomes
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

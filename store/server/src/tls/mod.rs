//! RESP over TLS (`--tls-port`, docs/tls.md).
//!
//! # Layout
//!
//! - [`acceptor`]: reading the PEM files and building the rustls acceptor
//!   (a bad file stops the start, or a reload, with its path and the reason);
//! - [`context`]: the configuration in use, replaced by `CONFIG SET tls-*`
//!   or by the [`watch`]er when the files change on disk, and its counters;
//! - [`config_set`]: CONFIG GET/SET of the `tls-*` file parameters;
//! - [`expiry`]: the certificate's `notAfter`, for `/metrics`;
//! - [`serve`] (here): one connection.
//!
//! A TLS connection is accepted by a worker like a plaintext one, completes
//! its handshake (bounded by [`HANDSHAKE_TIMEOUT`]) with the acceptor in use
//! at that moment, and then runs the same connection loop over the TLS
//! session. It never moves between workers: its session state lives in the
//! stream on this worker's event loop.

pub mod acceptor;
pub mod config_set;
pub mod context;
pub mod expiry;
pub mod watch;

use std::net::SocketAddr;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;

use tokio::io::AsyncWriteExt;
use tokio::net::TcpStream;

pub use acceptor::TlsError;
pub use context::{TlsContext, TlsReading};

use crate::admission::{admit_stream, release, Socket};
use crate::connection::{connection_loop, refuse_resp};
use crate::server::Server;
use crate::stats::WorkerStats;

/// Longest a client may take to complete its handshake.
pub const HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(10);
/// Longest the close_notify alert may take to leave at the end.
const CLOSE_TIMEOUT: Duration = Duration::from_millis(100);

/// Serves one TLS connection: handshake, admission, then the RESP loop
/// until it closes, is killed, or the server stops.
pub async fn serve(server: Arc<Server>, stream: TcpStream, peer: SocketAddr, worker: usize, stats: Arc<WorkerStats>) {
    let Some(tls) = server.tls.as_ref() else {
        return;
    };
    let socket = Socket::accepted(&stream, peer);
    let counters = &tls.counters;
    let handshake = tokio::time::timeout(HANDSHAKE_TIMEOUT, tls.acceptor().accept(stream)).await;
    let mut stream = match handshake {
        Ok(Ok(stream)) => {
            counters.handshakes_ok.fetch_add(1, Ordering::Relaxed);
            stream
        }
        Ok(Err(e)) => {
            counters.handshakes_failed.fetch_add(1, Ordering::Relaxed);
            tracing::debug!(%peer, error = %e, "TLS handshake failed");
            return;
        }
        Err(_) => {
            counters.handshakes_timed_out.fetch_add(1, Ordering::Relaxed);
            tracing::debug!(%peer, "TLS handshake timed out");
            return;
        }
    };
    let Some((mut client, registration)) =
        admit_stream(&server, &mut stream, socket, worker, &stats, refuse_resp).await
    else {
        return;
    };
    server.rebalance.connection_started(worker);
    let ended = connection_loop(&server, &mut stream, &mut client, &stats, worker, false).await;
    server.rebalance.connection_ended(worker);
    if let Err(e) = ended {
        tracing::debug!(client = client.id(), error = %e, "TLS connection closed with an error");
    }
    // Best effort: a close_notify tells the client the session ended cleanly.
    let _ = tokio::time::timeout(CLOSE_TIMEOUT, stream.shutdown()).await;
    release(&server, &mut client);
    drop(registration);
}

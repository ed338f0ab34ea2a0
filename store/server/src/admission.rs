//! Admitting a new connection, whatever its protocol: the `maxclients`
//! check, the client registry, and what an ended connection leaves behind in
//! shared registries.

use std::net::SocketAddr;
use std::os::fd::{AsRawFd, RawFd};
use std::sync::atomic::Ordering;
use std::sync::Arc;

use tokio::io::AsyncWriteExt;
use tokio::net::TcpStream;

use crate::client::{Client, ClientHandle};
use crate::connection::Stream;
use crate::server::Server;
use crate::stats::WorkerStats;

/// Removes the client from the registry however the connection ends.
pub(crate) struct Registration<'a> {
    server: &'a Server,
    id: u64,
}

impl<'a> Registration<'a> {
    /// Takes over the registration of a client that moved here from
    /// another worker (its first worker forgot its guard).
    pub(crate) fn adopt(server: &'a Server, id: u64) -> Registration<'a> {
        Registration { server, id }
    }
}

impl Drop for Registration<'_> {
    fn drop(&mut self) {
        self.server.clients.unregister(self.id);
    }
}

/// Counts a new connection and, under `maxclients`, registers a client for
/// it (unregistered when the returned guard drops). Above the limit, writes
/// the refusal `refuse` encodes in the connection's protocol and returns
/// `None`.
pub(crate) async fn admit<'a>(
    server: &'a Server,
    stream: &mut TcpStream,
    peer: SocketAddr,
    worker: usize,
    stats: &WorkerStats,
    refuse: impl FnOnce(&mut Vec<u8>),
) -> Option<(Client, Registration<'a>)> {
    let socket = Socket::accepted(stream, peer);
    admit_stream(server, stream, socket, worker, stats, refuse).await
}

/// The TCP socket under a connection's stream.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Socket {
    pub peer: SocketAddr,
    pub local: SocketAddr,
    /// Its descriptor (CLIENT KILL shuts it down).
    pub fd: RawFd,
}

impl Socket {
    /// A freshly accepted socket from `peer`: Nagle off (one write per
    /// batch of replies), its addresses and descriptor noted.
    pub(crate) fn accepted(stream: &TcpStream, peer: SocketAddr) -> Socket {
        let _ = stream.set_nodelay(true);
        Socket { peer, local: stream.local_addr().unwrap_or(peer), fd: stream.as_raw_fd() }
    }
}

/// [`admit`] for any stream over a TCP `socket` (a TLS session after its
/// handshake): the refusal goes through the stream.
pub(crate) async fn admit_stream<'a, S: Stream>(
    server: &'a Server,
    stream: &mut S,
    socket: Socket,
    worker: usize,
    stats: &WorkerStats,
    refuse: impl FnOnce(&mut Vec<u8>),
) -> Option<(Client, Registration<'a>)> {
    stats.connections_received.add(1);
    if server.clients.len() >= server.runtime.maxclients.load(Ordering::Relaxed) {
        stats.rejected_connections.add(1);
        let mut refusal = Vec::new();
        refuse(&mut refusal);
        if stream.write_all(&refusal).await.is_ok() {
            let _ = stream.flush().await;
        }
        return None;
    }
    let now = cairn_engine::clock::now_ms();
    let handle =
        Arc::new(ClientHandle::new(server.clients.next_id(), socket.peer, socket.local, socket.fd, worker, now));
    server.clients.register(handle.clone());
    let registration = Registration { server, id: handle.id };
    let user = server.runtime.acl.default_user();
    handle.set_user(user.clone());
    Some((Client::new(handle, server.requires_auth(), user), registration))
}

/// Forgets what an ended connection's client left in shared registries:
/// its WATCHed keys, its pub/sub subscriptions, its MONITOR feed and its
/// client-side caching state.
pub(crate) fn release(server: &Server, client: &mut Client) {
    let watched: Vec<(usize, Vec<u8>)> = client.watched.drain(..).map(|w| (w.db, w.key)).collect();
    server.watches.forget(client.id(), &watched);
    if let Some(subscriptions) = client.pubsub.take() {
        server.pubsub.forget(&subscriptions);
    }
    if client.monitor.take().is_some() {
        server.monitors.remove(client.id());
    }
    client.tracking = None;
    server.tracking.disable(client.id());
}

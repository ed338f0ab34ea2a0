//! Memory the server spends on its client connections, as `MEMORY STATS`
//! `clients.normal` reports it: each connection's client record and the
//! registry's handle for it.

use crate::client::{Client, ClientHandle};
use crate::server::Server;

/// Bytes of the connected clients' records.
pub fn total(server: &Server) -> u64 {
    let per_client = std::mem::size_of::<Client>() + std::mem::size_of::<ClientHandle>();
    (server.clients.len() * per_client) as u64
}

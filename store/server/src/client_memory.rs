//! Memory the server spends on a client connection, as CLIENT LIST's
//! `tot-mem` and `MEMORY STATS` `clients.normal` report it: the client's
//! record and the registry's handle for it, plus the input and reply
//! buffers the connection publishes (see [`crate::client_buffers`]).

use crate::client::{Client, ClientHandle};
use crate::client_buffers::BufferSizes;
use crate::server::Server;

/// Bytes of one client's record and buffers.
pub fn of(buffers: &BufferSizes) -> u64 {
    let record = std::mem::size_of::<Client>() + std::mem::size_of::<ClientHandle>();
    (record + buffers.qbuf + buffers.qbuf_free + buffers.rbs) as u64
}

/// Bytes of every connected client's record and buffers.
pub fn total(server: &Server) -> u64 {
    server.clients.snapshot().iter().map(|c| of(&c.buffers.sizes(None))).sum()
}

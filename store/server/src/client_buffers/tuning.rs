//! What a connection's [`BufferTuner`](super::BufferTuner) reaches beyond its
//! own buffers: the handle it publishes its sizes in, the sweep's list it
//! joins and leaves, the server-wide reply-buffer policy, and its worker's
//! statistics (INFO `reply_buffer_shrinks`, `reply_buffer_expands`). Built
//! once per connection loop.

use std::sync::Arc;

use super::gauges::BufferGauges;
use super::policy::ReplyBufferPolicy;
use super::sweep_list::SweepList;
use crate::client::ClientHandle;
use crate::server::Server;
use crate::stats::WorkerStats;

/// The shared things a connection's buffer tuning touches.
#[derive(Debug, Clone, Copy)]
pub struct Tuning<'a> {
    pub handle: &'a Arc<ClientHandle>,
    pub sweep: &'a SweepList,
    pub policy: &'a ReplyBufferPolicy,
    /// The worker's statistics: only this worker's thread writes them.
    pub stats: &'a WorkerStats,
}

impl<'a> Tuning<'a> {
    /// The tuning of the connection of `handle` served with `stats`.
    pub fn of(server: &'a Server, handle: &'a Arc<ClientHandle>, stats: &'a WorkerStats) -> Self {
        Tuning { handle, sweep: &server.clients.buffer_sweep, policy: &server.runtime.reply_buffer, stats }
    }

    /// Where the connection publishes its sizes.
    pub fn gauges(&self) -> &'a BufferGauges {
        &self.handle.buffers
    }
}

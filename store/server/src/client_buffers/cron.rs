//! The sweep that lets idle connections give their buffers back.
//!
//! A connection's buffers belong to its task, which only runs when woken.
//! Rather than arm a timer on every wait for a request (a timer-wheel
//! registration, with its lock, per batch on the hot path), this sweep runs
//! every [`TUNE_EVERY_MS`] on the admin thread, off the workers: it reads the
//! sizes each connection published and wakes, through the connection's own
//! wake-up (the one CLIENT KILL uses, already polled at no cost), only those
//! with something to give back. A connection that gave everything back is
//! never woken again, so 10,000 idle clients cost a scan of their handles
//! per tick and no wake-ups; one that is woken but cannot tune yet (blocked)
//! is not woken twice.

use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;

use super::tuner::idle_needs_tune;
use super::TUNE_EVERY_MS;
use crate::server::Server;

/// Sweeps the clients every [`TUNE_EVERY_MS`] until the server stops.
pub async fn run(server: Arc<Server>) {
    crate::periodic::every(&server, Duration::from_millis(TUNE_EVERY_MS), || sweep(&server)).await;
}

/// Wakes each idle connection whose buffers can shrink.
pub fn sweep(server: &Server) {
    let now_ms = cairn_engine::clock::now_ms();
    let policy = &server.runtime.reply_buffer;
    for client in server.clients.snapshot() {
        let idle_ms = now_ms.saturating_sub(client.last_interaction_ms.load(Ordering::Relaxed));
        if idle_needs_tune(&client.buffers.read(), idle_ms, now_ms, policy) && client.buffers.request_tidy() {
            client.nudge();
        }
    }
}

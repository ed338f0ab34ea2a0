//! A check repeated on the admin thread's event loop until the server shuts
//! down (the TLS files' and the config file's watchers): off the workers,
//! the first check one interval after the start, late ticks delayed rather
//! than bunched.

use std::time::Duration;

use crate::server::Server;

/// Runs `check` every `every` until `server` shuts down.
pub async fn every(server: &Server, every: Duration, mut check: impl FnMut()) {
    let mut tick = tokio::time::interval(every);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    tick.tick().await;
    loop {
        tokio::select! {
            _ = server.shutdown.wait() => return,
            _ = tick.tick() => check(),
        }
    }
}

//! The periodic check of the config file: every `--config-reload-interval`,
//! on the admin thread's event loop (as the TLS files' watcher), so the
//! workers never read the file. A check reads one small file and compares a
//! fingerprint of it; only new contents are parsed and applied.

use std::sync::Arc;
use std::time::Duration;

use crate::server::Server;

/// Checks the file every `every` until the server stops.
pub async fn run(server: Arc<Server>, every: Duration) {
    let mut tick = tokio::time::interval(every);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    tick.tick().await;
    loop {
        tokio::select! {
            _ = server.shutdown.wait() => return,
            _ = tick.tick() => {
                server.config_reload.check(&server);
            }
        }
    }
}

//! The periodic check of the config file: every `--config-reload-interval`,
//! on the admin thread's event loop (as the TLS files' watcher), so the
//! workers never read the file. A check reads one small file and compares a
//! fingerprint of it; only new contents are parsed and applied.

use std::sync::Arc;
use std::time::Duration;

use crate::server::Server;

/// Checks the file every `every` until the server stops.
pub async fn run(server: Arc<Server>, every: Duration) {
    crate::periodic::every(&server, every, || {
        server.config_reload.check(&server);
    })
    .await;
}

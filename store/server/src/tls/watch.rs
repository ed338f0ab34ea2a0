//! The reload watcher: rereads the TLS files every `--tls-reload-interval`
//! and puts changed contents in use (see [`super::context`]).
//!
//! Certificates are renewed on disk: by cert-manager and the kubelet (a
//! Secret volume's files change in place, through a symbolic link swapped
//! atomically), by certbot, by hand. Comparing contents rather than
//! modification times sees every one of these. A pair caught half-updated
//! (a new certificate with the old key) fails to load and is kept out; the
//! next check, after the second file changed, loads it. The watcher runs on
//! the admin thread's event loop, off the workers, and reads three small
//! files per check.

use std::sync::Arc;

use crate::server::Server;

/// Checks the files every `every` until the server stops.
pub async fn run(server: Arc<Server>, every: std::time::Duration) {
    let Some(tls) = server.tls.as_ref() else {
        return;
    };
    crate::periodic::every(&server, every, || {
        tls.reload_if_changed();
    })
    .await;
}

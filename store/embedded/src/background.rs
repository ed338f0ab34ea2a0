//! The database's background threads: active expiry (the server's expiry
//! pass, its deletions logged as DEL) and the server's snapshot scheduler.

use std::sync::Arc;
use std::thread::JoinHandle;

use cairn_server::expiry::{expire_pass, EXPIRE_PERIOD};
use cairn_server::server::Server;

/// Starts the threads; they stop once `server.shutdown` is triggered (the
/// expiry thread at once when unparked, the scheduler within 200 ms).
pub(crate) fn spawn(server: &Arc<Server>) -> std::io::Result<Vec<JoinHandle<()>>> {
    let mut threads = Vec::with_capacity(2);
    threads.push(spawn_expiry(server.clone())?);
    match cairn_server::persistence::snapshot::spawn_scheduler(server.clone()) {
        Ok(t) => threads.push(t),
        Err(e) => {
            stop(server, threads);
            return Err(e);
        }
    }
    Ok(threads)
}

fn spawn_expiry(server: Arc<Server>) -> std::io::Result<JoinHandle<()>> {
    std::thread::Builder::new().name("cairn-embedded-expire".into()).spawn(move || {
        while !server.shutdown.is_triggered() {
            std::thread::park_timeout(EXPIRE_PERIOD);
            if server.shutdown.is_triggered() {
                break;
            }
            expire_pass(&server, 0, 1);
        }
    })
}

/// Triggers shutdown and joins the threads.
pub(crate) fn stop(server: &Server, threads: Vec<JoinHandle<()>>) {
    server.shutdown.trigger();
    for thread in &threads {
        thread.thread().unpark();
    }
    for thread in threads {
        if thread.join().is_err() {
            tracing::error!("an embedded database background thread panicked");
        }
    }
}

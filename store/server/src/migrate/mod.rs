//! MIGRATE: moving (or copying) keys to another instance, as Redis 7.0's
//! `migrateCommand`, and the connections it keeps to targets.
//!
//! Redis blocks its whole server for MIGRATE's network round trip. Cairn
//! splits it so that no worker waits on the network:
//!
//! 1. [`command`]: the command itself runs on the worker like any other
//!    (arguments, errors, `+NOKEY`, statistics, SLOWLOG, MONITOR) and
//!    serializes the keys with DUMP's encoder, then leaves a [`Pending`]
//!    MIGRATE on the client, without a reply. The batch stops there.
//! 2. [`complete`]: the connection moves the client to a blocking thread
//!    (`scripting::offload::with_client_elsewhere`, as EXEC of a script),
//!    where [`transfer`] talks to the target over a cached connection
//!    ([`sockets`]), and [`removal`] deletes the acknowledged keys that
//!    nobody changed meanwhile; the reply then goes out where the command's
//!    would have. The worker serves its other clients all along.
//!
//! MIGRATE cannot run inside MULTI/EXEC or from a script (it would hold a
//! worker or every shard while waiting): it answers an error there.

pub mod command;
pub mod options;
pub mod removal;
pub mod sockets;
pub mod transfer;

use std::sync::Arc;

use cairn_protocol::ReplyWriter;

use crate::client::Client;
use crate::commands::timing::CommandClock;
use crate::commands::Ctx;
use crate::scripting::offload::{with_client_elsewhere, OffloadFailed};
use crate::server::Server;
use crate::stats::WorkerStats;

/// A MIGRATE whose keys are serialized, waiting for its transfer.
#[derive(Debug)]
pub struct Pending {
    pub request: transfer::Request,
    pub copy: bool,
    /// What each key of `request.keys` held when serialized (same order).
    pub sent: Vec<removal::Sent>,
    /// The id its keys are watched under until its end (`removal::watch`).
    pub watcher: u64,
    /// CLIENT REPLY OFF or SKIP was in force for the command: no reply.
    pub silent: bool,
}

/// Runs a pending MIGRATE off the worker; returns its reply. On `Err` the
/// client is lost and the connection must close (as for EXEC).
pub async fn complete(
    server: &Arc<Server>,
    stats: &Arc<WorkerStats>,
    client: &mut Client,
    pending: Pending,
) -> Result<Vec<u8>, OffloadFailed> {
    with_client_elsewhere(server, stats, client, move |server, stats, client| finish(server, stats, client, pending))
        .await
}

/// The transfer, the deletes and the reply, on the blocking thread.
fn finish(server: &Server, stats: &WorkerStats, client: &mut Client, pending: Pending) -> Vec<u8> {
    let outcome = transfer::transfer(&server.migrate_sockets, &pending.request);
    let mut out = Vec::new();
    let protocol = client.protocol;
    let now_ms = cairn_engine::clock::now_ms();
    let mut ctx = Ctx {
        server,
        client,
        out: ReplyWriter::new(&mut out, protocol),
        stats,
        now_ms,
        clock: CommandClock::start(),
        scripts_here: None,
    };
    let db = ctx.db();
    let _watches = ForgetWatches {
        server,
        watcher: pending.watcher,
        watched: pending.sent.iter().map(|s| (db, s.key.clone())).collect(),
    };
    let removed = if pending.copy { Ok(()) } else { removal::remove_acked(&mut ctx, pending.sent, &outcome.acked) };
    match (removed, outcome.reply.error()) {
        (Err(e), _) => ctx.out.error(&e.message("migrate")),
        (Ok(()), Some(error)) => ctx.out.error(&error),
        (Ok(()), None) => ctx.out.ok(),
    }
    count_error(&mut ctx);
    if pending.silent {
        out.clear();
    }
    out
}

/// Stops watching a MIGRATE's keys when dropped: at the end of [`finish`],
/// and also if the transfer or the deletes panicked, so no watch outlives
/// its MIGRATE.
struct ForgetWatches<'a> {
    server: &'a Server,
    watcher: u64,
    watched: Vec<(usize, Vec<u8>)>,
}

impl Drop for ForgetWatches<'_> {
    fn drop(&mut self) {
        self.server.watches.forget(self.watcher, &self.watched);
    }
}

/// Counts an error reply in the error statistics and as a failed MIGRATE
/// (the command itself was counted when it ran).
fn count_error(ctx: &mut Ctx<'_>) {
    let Some((code, counted)) = ctx.out.take_error() else {
        return;
    };
    if !counted {
        ctx.stats.record_error(code.as_str());
    }
    if let Some(index) = crate::commands::table::lookup(b"migrate") {
        ctx.stats.per_command[index].failed.add(1);
    }
}

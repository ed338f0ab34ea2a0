//! Running logged commands (from the WAL or a snapshot) through the command
//! table, with the clock set to the record's time and blocking commands in
//! their non-blocking form, exactly as they ran live; after the table, the
//! rebuild-only commands snapshots hold (`commands::rebuild_only`). Nothing
//! is logged while replaying, and replies are discarded.

use std::sync::Arc;

use cairn_protocol::{ProtocolVersion, ReplyWriter};

use crate::blocking::BlockState;
use crate::client::{Client, ClientHandle};
use crate::commands::{rebuild_only, table, Ctx};
use crate::server::Server;
use crate::stats::WorkerStats;

/// Applies logged commands to a server's keyspace.
pub struct Replayer<'a> {
    server: &'a Server,
    client: Client,
    stats: WorkerStats,
    out: Vec<u8>,
    /// Commands that replied with an error (they succeeded when logged, so
    /// this means the data diverged; reported, not fatal).
    pub errors: u64,
}

impl<'a> Replayer<'a> {
    pub fn new(server: &'a Server) -> Self {
        let addr = std::net::SocketAddr::from(([127, 0, 0, 1], 0));
        let handle = Arc::new(ClientHandle::new(0, addr, addr, -1, 0, 0));
        let mut client = Client::new(handle, false, crate::acl::internal_user());
        client.origin = crate::client::Origin::Internal;
        client.block = BlockState::Denied;
        Replayer {
            server,
            client,
            stats: WorkerStats::new(table::stat_count()),
            out: Vec::with_capacity(256),
            errors: 0,
        }
    }

    /// Runs one logged command. Err only for a command the table does not
    /// know or whose arity is wrong: the log was written by something else.
    pub fn apply(&mut self, time_ms: u64, db: u32, argv: &[&[u8]]) -> Result<(), String> {
        let name = argv.first().ok_or("empty command")?;
        let spec = table::lookup(name)
            .map(table::spec)
            .or_else(|| rebuild_only::lookup(name))
            .ok_or_else(|| format!("unknown command '{}'", String::from_utf8_lossy(name)))?;
        if !spec.arity_ok(argv.len()) {
            return Err(format!("wrong number of arguments for '{}'", spec.name));
        }
        if db as usize >= self.server.keyspace.num_dbs() {
            return Err(format!("database {db} out of range"));
        }
        self.client.select(db as usize);
        self.out.clear();
        let out = ReplyWriter::new(&mut self.out, ProtocolVersion::Resp2);
        let mut ctx = Ctx::new(self.server, &mut self.client, out, &self.stats, time_ms);
        let result = (spec.handler)(&mut ctx, argv);
        // Replay logs nothing: a form to log (an old record's `~` trim) is dropped.
        ctx.client.log_as = None;
        let failed = result.is_err() || self.out.first() == Some(&b'-');
        if failed {
            self.errors += 1;
            if self.errors <= 10 {
                let message = result
                    .err()
                    .map(|e| e.message(spec.name))
                    .unwrap_or_else(|| String::from_utf8_lossy(&self.out).trim().to_string());
                tracing::warn!(command = spec.name, error = %message, "a replayed command failed");
            }
        }
        Ok(())
    }
}

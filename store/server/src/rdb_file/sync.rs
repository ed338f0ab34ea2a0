//! SYNC and PSYNC for `redis-cli --rdb FILE`: after `REPLCONF rdb-only 1`,
//! the server sends the RDB image of every database as `$<len>\r\n` and
//! the bytes, then closes the connection, as Redis does for an rdb-only
//! client. While the image is being built (off the worker, see
//! [`super::image`]) a newline goes out every second, as Redis's keepalive
//! before the payload (redis-cli skips them).
//!
//! Cairn has no replication: a SYNC or PSYNC without `rdb-only` (a replica
//! starting its link) is refused with an error saying so. SYNC and PSYNC
//! are refused inside MULTI and from scripts (Redis's `no-multi` and
//! `noscript` flags) and need AUTH like any command.

use std::sync::Arc;
use std::time::Duration;

use tokio::io::{AsyncWrite, AsyncWriteExt};

use super::image::{self, Contents};
use crate::commands::{CmdError, CmdResult, Ctx};
use crate::server::Server;
use crate::stats::WorkerStats;

/// How often a newline keeps the connection alive before the payload.
const KEEPALIVE: Duration = Duration::from_secs(1);

const NO_REPLICATION: &str = "ERR Cairn has no replication: SYNC and PSYNC serve only an RDB image to a client \
                              that sent REPLCONF rdb-only 1 first (redis-cli --rdb FILE)";

/// A SYNC the connection serves once the batch's replies are out.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Pending {
    /// PSYNC: `+FULLRESYNC <replid> 0` goes before the payload.
    pub psync: bool,
    pub contents: Contents,
}

/// SYNC, and PSYNC replicationid offset.
pub fn sync(ctx: &mut Ctx<'_>, args: &[&[u8]]) -> CmdResult {
    let repl = ctx.client.repl;
    if !repl.rdb_only {
        return Err(CmdError::Static(NO_REPLICATION));
    }
    if ctx.client.off_worker {
        // A transaction or script run off the worker cannot hand the
        // connection over (MULTI and scripts refuse SYNC before this).
        return Err(CmdError::Static("ERR SYNC cannot run here"));
    }
    let contents = match repl.filter_functions_only {
        Some(functions) => Contents { keys: false, functions },
        None => Contents { keys: true, functions: true },
    };
    let psync = args[0].eq_ignore_ascii_case(b"psync");
    ctx.client.repl.pending = Some(Pending { psync, contents });
    // Nothing after SYNC in the batch runs: the connection ends with the image.
    ctx.client.close_after_reply = true;
    Ok(())
}

/// Builds the image off the worker and sends it; the caller then closes
/// the connection.
pub async fn serve<S: AsyncWrite + Unpin>(
    server: &Arc<Server>,
    stats: &WorkerStats,
    stream: &mut S,
    pending: Pending,
) -> std::io::Result<()> {
    if pending.psync {
        let line = format!("+FULLRESYNC {} 0\r\n", server.run_id);
        put(stream, stats, line.as_bytes()).await?;
    }
    let build = {
        let server = server.clone();
        tokio::task::spawn_blocking(move || image::build(&server, pending.contents))
    };
    tokio::pin!(build);
    let built = loop {
        tokio::select! {
            built = &mut build => break built,
            _ = tokio::time::sleep(KEEPALIVE) => put(stream, stats, b"\n").await?,
        }
    };
    match built {
        Ok(Ok(image)) => {
            put(stream, stats, format!("${}\r\n", image.len()).as_bytes()).await?;
            put(stream, stats, &image).await
        }
        Ok(Err(e)) => put(stream, stats, format!("-ERR cannot build the RDB image: {e}\r\n").as_bytes()).await,
        Err(e) => {
            tracing::error!(error = %e, "the thread building an RDB image for SYNC failed");
            put(stream, stats, b"-ERR cannot build the RDB image\r\n").await
        }
    }
}

async fn put<S: AsyncWrite + Unpin>(stream: &mut S, stats: &WorkerStats, bytes: &[u8]) -> std::io::Result<()> {
    stream.write_all(bytes).await?;
    stream.flush().await?;
    stats.net_output_bytes.add(bytes.len() as u64);
    Ok(())
}

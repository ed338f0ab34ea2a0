//! SYNC and PSYNC for `redis-cli --rdb FILE`: after `REPLCONF rdb-only 1`,
//! the server sends the RDB image of every database in Redis's diskless
//! form (`rdbSaveRioWithEOFMark`): `$EOF:<40-character mark>\r\n`, the
//! RDB bytes as they are written ([`super::image`] on a blocking thread,
//! through the bounded chunk channel of [`super::chunks`], so the image
//! is never whole in memory and a slow reader holds the writer back), then
//! the same mark; then the connection closes, as Redis does for an
//! rdb-only client. Until the first chunk is ready a newline goes out
//! every second, as Redis's keepalive before the payload (redis-cli skips
//! them). If the image fails after its first bytes went out, or the client
//! stops reading for [`WRITE_STALL`], the connection closes without the
//! mark: redis-cli reports an I/O error instead of keeping a truncated
//! file. A client that goes away stops the image at its next chunk.
//!
//! Cairn has no replication: a SYNC or PSYNC without `rdb-only` (a replica
//! starting its link) is refused with an error saying so. SYNC and PSYNC
//! are refused inside MULTI and from scripts (Redis's `no-multi` and
//! `noscript` flags) and need AUTH like any command.

use std::sync::Arc;
use std::time::Duration;

use tokio::io::{AsyncWrite, AsyncWriteExt};
use tokio::sync::mpsc;
use tokio::task::JoinHandle;

use super::chunks;
use super::image::{self, Contents};
use crate::commands::{CmdError, CmdResult, Ctx};
use crate::server::Server;
use crate::stats::WorkerStats;

/// How often a newline keeps the connection alive before the payload.
const KEEPALIVE: Duration = Duration::from_secs(1);
/// How long a client may read nothing before the transfer is dropped
/// (Redis's default `repl-timeout`, which ends a stalled full sync too):
/// the image holds the snapshot lock and frozen shards meanwhile.
pub const WRITE_STALL: Duration = Duration::from_secs(60);
/// Characters in the mark around a diskless payload (`RDB_EOF_MARK_SIZE`).
const EOF_MARK_LEN: usize = 40;

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

/// Writes the image off the worker and sends it; the caller then closes
/// the connection. An error after the payload started leaves the mark out.
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
    let (writer, chunks) = chunks::channel();
    let export = {
        let server = server.clone();
        tokio::task::spawn_blocking(move || image::write(&server, pending.contents, writer))
    };
    send_image(stream, stats, chunks, export).await
}

/// Sends the image's chunks as they come, between `$EOF:<mark>\r\n` and
/// the mark, with keepalive newlines until the first one; `export` is the
/// thread writing them. Its failure before any chunk is an error reply,
/// after one an error without the mark.
pub async fn send_image<S: AsyncWrite + Unpin>(
    stream: &mut S,
    stats: &WorkerStats,
    mut chunks: mpsc::Receiver<Vec<u8>>,
    export: JoinHandle<std::io::Result<()>>,
) -> std::io::Result<()> {
    let first = loop {
        tokio::select! {
            chunk = chunks.recv() => break chunk,
            _ = tokio::time::sleep(KEEPALIVE) => put_within(stream, stats, b"\n").await?,
        }
    };
    let Some(first) = first else {
        // Nothing went out (an image has at least its header): an error reply.
        let error = outcome(export.await).err().unwrap_or_else(|| std::io::Error::other("the image is empty"));
        let reply = format!("-ERR cannot build the RDB image: {error}\r\n");
        return put(stream, stats, reply.as_bytes()).await;
    };
    let mark = eof_mark();
    put_within(stream, stats, format!("$EOF:{mark}\r\n").as_bytes()).await?;
    put_within(stream, stats, &first).await?;
    drop(first);
    while let Some(chunk) = chunks.recv().await {
        put_within(stream, stats, &chunk).await?;
    }
    outcome(export.await)?;
    put_within(stream, stats, mark.as_bytes()).await
}

/// The image thread's result; a failure is logged.
fn outcome(joined: Result<std::io::Result<()>, tokio::task::JoinError>) -> std::io::Result<()> {
    let error = match joined {
        Ok(Ok(())) => return Ok(()),
        Ok(Err(e)) => e,
        Err(e) => std::io::Error::other(format!("the thread writing it failed: {e}")),
    };
    tracing::error!(error = %error, "an RDB image for SYNC failed");
    Err(error)
}

/// The delimiter of a diskless payload: 40 random hex characters
/// (Redis's `RDB_EOF_MARK_SIZE`, `getRandomHexChars`).
fn eof_mark() -> String {
    use rand::Rng;
    let mut rng = rand::thread_rng();
    (0..EOF_MARK_LEN).map(|_| char::from(b"0123456789abcdef"[rng.gen_range(0..16)])).collect()
}

/// [`put`], failing when the client reads nothing for [`WRITE_STALL`].
async fn put_within<S: AsyncWrite + Unpin>(stream: &mut S, stats: &WorkerStats, bytes: &[u8]) -> std::io::Result<()> {
    match tokio::time::timeout(WRITE_STALL, put(stream, stats, bytes)).await {
        Ok(result) => result,
        Err(_) => Err(std::io::Error::new(std::io::ErrorKind::TimedOut, "the client stopped reading the RDB image")),
    }
}

async fn put<S: AsyncWrite + Unpin>(stream: &mut S, stats: &WorkerStats, bytes: &[u8]) -> std::io::Result<()> {
    stream.write_all(bytes).await?;
    stream.flush().await?;
    stats.net_output_bytes.add(bytes.len() as u64);
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// What `send_image` writes when the export sends `sent` then ends with `end`.
    fn sent_for(sent: Vec<Vec<u8>>, end: std::io::Result<()>) -> (std::io::Result<()>, Vec<u8>) {
        let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().expect("runtime");
        runtime.block_on(async move {
            let (tx, rx) = mpsc::channel(chunks::CHUNKS_QUEUED);
            let export = tokio::task::spawn_blocking(move || {
                for chunk in sent {
                    tx.blocking_send(chunk).map_err(|_| std::io::Error::other("gone"))?;
                }
                end
            });
            let mut out = Vec::new();
            let result = send_image(&mut out, &WorkerStats::new(0), rx, export).await;
            (result, out)
        })
    }

    #[test]
    fn the_payload_goes_between_the_eof_line_and_its_mark() {
        let (result, out) = sent_for(vec![b"REDIS".to_vec(), b"0010".to_vec()], Ok(()));
        result.expect("sent");
        let text = String::from_utf8(out).expect("ascii");
        let mark = text.strip_prefix("$EOF:").expect("the EOF form")[..EOF_MARK_LEN].to_string();
        assert!(mark.bytes().all(|b| b.is_ascii_hexdigit()), "{mark}");
        assert_eq!(text, format!("$EOF:{mark}\r\nREDIS0010{mark}"));
    }

    #[test]
    fn a_failure_after_the_first_bytes_leaves_the_mark_out() {
        let (result, out) = sent_for(vec![b"REDIS0010".to_vec()], Err(std::io::Error::other("disk on fire")));
        assert!(result.is_err());
        assert_eq!(out.len(), 5 + EOF_MARK_LEN + 2 + 9, "{:?}", String::from_utf8_lossy(&out));
        assert!(out.ends_with(b"\r\nREDIS0010"));
    }

    #[test]
    fn a_failure_before_any_byte_is_an_error_reply() {
        let (result, out) = sent_for(vec![], Err(std::io::Error::other("disk on fire")));
        result.expect("the reply went out");
        assert_eq!(out, b"-ERR cannot build the RDB image: disk on fire\r\n");
    }
}

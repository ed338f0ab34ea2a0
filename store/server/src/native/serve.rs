//! One native connection: handshake, then read a batch of frames, execute
//! them all, wait until their writes are durable when asked (or in the
//! `sync` tier), and answer the whole batch with one write. Between two
//! batches, with nothing unread, a connection may move to another worker
//! (`crate::rebalance`), taking its session along. Its input and reply
//! buffers are sized, published (CLIENT LIST `qbuf`, `qbuf-free`, `rbs`,
//! `rbp`, `tot-mem`) and given back when idle by the same
//! [`crate::client_buffers`] machinery as a RESP connection's.

use std::net::SocketAddr;
use std::sync::atomic::Ordering;
use std::sync::Arc;

use cairn_native::{decode_frame, encode, Body, DecodeError, Decoded, Limits, Status};
use cairn_protocol::ProtocolVersion;
use tokio::io::AsyncWriteExt;
use tokio::net::TcpStream;

use super::execute::{self, Exec};
use super::handshake::greet;
use super::session::Session;
use crate::admission::{admit, Registration};
use crate::client::Client;
use crate::client_buffers::{BufferTuner, ReplyGrowth, Tuning};
use crate::commands::timing::CommandClock;
use crate::connection::{finish, may_move, read_with_timeout, shrink_if_idle, End};
use crate::rebalance::Carried;
use crate::server::Server;
use crate::stats::WorkerStats;

/// Why a native connection ended early.
#[derive(Debug, thiserror::Error)]
enum NativeEnd {
    #[error("i/o: {0}")]
    Io(#[from] std::io::Error),
    #[error("{0} bytes of unanswered input exceed client-query-buffer-limit")]
    QueryBufferLimit(usize),
}

/// Serves one native connection until it closes, is killed, moves to
/// another worker, or the server stops.
pub async fn serve(
    server: Arc<Server>,
    mut stream: TcpStream,
    peer: SocketAddr,
    worker: usize,
    stats: Arc<WorkerStats>,
) {
    let refuse = |out: &mut Vec<u8>| {
        encode::fatal(out, 0, Status::TooManyClients, b"ERR max number of clients reached");
    };
    let Some((mut client, registration)) = admit(&server, &mut stream, peer, worker, &stats, refuse).await else {
        return;
    };
    client.set_protocol(ProtocolVersion::Resp3);
    client.handle.accepts_pushes.store(false, std::sync::atomic::Ordering::Relaxed);
    carry_on(&server, stream, client, Session::default(), registration, worker, &stats).await;
}

/// Runs the connection on this worker until it ends, then forgets it, or
/// hands it (with its session) to the worker it moves to. A connection
/// another worker handed over starts here (`connection::resume`).
pub(crate) async fn carry_on(
    server: &Arc<Server>,
    mut stream: TcpStream,
    mut client: Client,
    mut session: Session,
    registration: Registration<'_>,
    worker: usize,
    stats: &Arc<WorkerStats>,
) {
    server.rebalance.connection_started(worker);
    let ended = connection_loop(server, &mut stream, &mut client, &mut session, stats, worker).await;
    server.rebalance.connection_ended(worker);
    finish(server, stream, client, registration, ended, || Carried::Native(Box::new(session)));
}

/// What one pass over the read buffer did.
struct Pass {
    /// Input bytes consumed.
    consumed: usize,
    /// A frame asked for a durable reply.
    durable: bool,
    /// Close once the output is written (fatal error, failed handshake, QUIT).
    close: bool,
    /// A script is pending: wait for it (or its threshold) before the next frame.
    wait_script: bool,
    /// The next frame calls a script: run the rest of the input on a blocking thread.
    offload: bool,
    /// The pass's clock (ms).
    now_ms: u64,
}

async fn connection_loop(
    server: &Arc<Server>,
    stream: &mut TcpStream,
    client: &mut Client,
    session: &mut Session,
    stats: &Arc<WorkerStats>,
    worker: usize,
) -> Result<End, NativeEnd> {
    let handle = client.handle.clone();
    let tuning = Tuning::of(server, &handle, stats);
    let (mut tuner, mut input, mut output) =
        BufferTuner::start(cairn_engine::clock::now_ms(), ReplyGrowth::Kept, &tuning);
    // Fires on a kill, or when the buffer sweep asks for a tune (nothing is
    // pushed to native connections: they do not accept pushes, see
    // `ClientHandle::accepts_pushes`).
    let signal = handle.signalled();
    tokio::pin!(signal);
    // Frames left unexecuted after a pass (script pending, or offloaded) run before reading more.
    let mut resume = Resume::Read;
    loop {
        if resume == Resume::Read {
            if input.is_empty() && session.greeted && may_move(client) {
                if let Some(to) = server.rebalance.claim_move(worker) {
                    return Ok(End::MoveTo(to));
                }
            }
            let read = tokio::select! {
                biased;
                _ = &mut signal => {
                    if handle.is_killed() {
                        return Ok(End::Closed);
                    }
                    signal.set(handle.signalled());
                    if handle.buffers.tidy_requested() {
                        tune_idle(&mut tuner, &mut input, &mut output, session, &tuning);
                    }
                    continue;
                }
                read = read_with_timeout(server, stream, &mut input, true) => read?,
            };
            if read == 0 {
                return Ok(End::Closed);
            }
            stats.net_input_bytes.add(read as u64);
            tuner.after_read(&input, &tuning);
        }
        let pass = match std::mem::replace(&mut resume, Resume::Read) {
            Resume::Offload => {
                let Ok((pass, moved_session, mut replies)) =
                    execute_elsewhere(server, stats, client, std::mem::take(session), &input).await
                else {
                    return Ok(End::Closed);
                };
                *session = moved_session;
                // Into the reply buffer, whose size the tuner keeps.
                output.append(&mut replies);
                pass
            }
            _ => execute_frames(server, client, stats, session, &input, &mut output),
        };
        input.drain(..pass.consumed);
        server.persistence.yield_to_starved_syncer();
        if !await_durable(server, client.last_lsn, pass.durable).await {
            return Ok(End::Closed);
        }
        if !output.is_empty() {
            stream.write_all(&output).await?;
            stats.net_output_bytes.add(output.len() as u64);
            tuner.after_reply(&mut output, &tuning);
        }
        if pass.close {
            return Ok(End::Closed);
        }
        if pass.wait_script {
            server.scripting.wait(&server.runtime.busy_reply_threshold_ms).await;
            resume = Resume::Pending;
            continue;
        }
        if pass.offload {
            resume = Resume::Offload;
            continue;
        }
        let limit = server.runtime.client_query_buffer_limit.load(Ordering::Relaxed);
        if input.len() > limit {
            encode::fatal(&mut output, 0, Status::LimitExceeded, b"ERR client-query-buffer-limit exceeded");
            stream.write_all(&output).await?;
            return Err(NativeEnd::QueryBufferLimit(input.len()));
        }
        shrink_if_idle(&mut input);
        shrink_if_idle(&mut session.scratch);
        tuner.end_batch(pass.now_ms, &mut input, &mut output, &tuning);
    }
}

/// The tune the buffer sweep asked of this idle connection; once its input
/// buffer is given back, the session's scratch buffer goes too (CLIENT LIST
/// does not show it, see [`Session::scratch`]).
fn tune_idle(
    tuner: &mut BufferTuner,
    input: &mut Vec<u8>,
    output: &mut Vec<u8>,
    session: &mut Session,
    tuning: &Tuning<'_>,
) {
    let now_ms = cairn_engine::clock::now_ms();
    let idle_ms = now_ms.saturating_sub(tuning.handle.last_interaction_ms.load(Ordering::Relaxed));
    tuner.tune_idle(now_ms, idle_ms, input, output, tuning);
    if input.capacity() == 0 {
        session.scratch = Vec::new();
    }
}

/// How the next turn of the connection loop starts.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Resume {
    /// Read more input first.
    Read,
    /// Execute the frames already read (a script ended or passed its threshold).
    Pending,
    /// Execute the frames already read on a blocking thread: one calls a script.
    Offload,
}

/// Runs the frames in `input` on a blocking thread, with the client and its
/// session moved there (see `scripting::offload`); returns the pass, the
/// session and the replies. `Err`: the thread failed, the connection must close.
async fn execute_elsewhere(
    server: &Arc<Server>,
    stats: &Arc<WorkerStats>,
    client: &mut Client,
    mut session: Session,
    input: &[u8],
) -> Result<(Pass, Session, Vec<u8>), crate::scripting::offload::OffloadFailed> {
    let input = input.to_vec();
    crate::scripting::offload::with_client_elsewhere(server, stats, client, move |server, stats, client| {
        let mut output = Vec::new();
        let pass = execute_frames(server, client, stats, &mut session, &input, &mut output);
        (pass, session, output)
    })
    .await
}

/// Waits until `lsn` is durable when a frame asked for it, or always in the
/// `sync` tier (as RESP does). False when the log failed: the connection
/// closes without the replies, since the writes will never be durable.
async fn await_durable(server: &Server, lsn: u64, asked: bool) -> bool {
    if !asked {
        return crate::connection::await_durable(server, lsn).await;
    }
    let p = &server.persistence;
    if lsn == 0 || p.wal_opened().is_some_and(|w| w.durable_lsn() >= lsn) {
        return true;
    }
    match p.wait_durable(lsn).await {
        Ok(()) => true,
        Err(e) => {
            tracing::error!(error = %e, "closing a native client whose writes cannot be made durable");
            false
        }
    }
}

/// The decoder's limits: frames may not exceed the query buffer limit.
fn limits(server: &Server) -> Limits {
    let query_limit = server.runtime.client_query_buffer_limit.load(Ordering::Relaxed);
    let defaults = Limits::default();
    Limits { max_frame_len: defaults.max_frame_len.min(query_limit), ..defaults }
}

/// Executes every complete frame in `input`, appending replies to `output`.
fn execute_frames(
    server: &Server,
    client: &mut Client,
    stats: &WorkerStats,
    session: &mut Session,
    input: &[u8],
    output: &mut Vec<u8>,
) -> Pass {
    let limits = limits(server);
    // Marks this worker as executing until the pass ends (scripts wait for it).
    let _executing = server.scripting.enter_batch(client);
    let now_ms = cairn_engine::clock::now_ms();
    let mut exec = Exec { server, client, stats, session, now_ms, clock: CommandClock::start() };
    let mut pass = Pass { consumed: 0, durable: false, close: false, wait_script: false, offload: false, now_ms };
    while pass.consumed < input.len() && !pass.close {
        let (frame, used) = match decode_frame(&input[pass.consumed..], &limits) {
            Ok(Decoded::Incomplete) => break,
            Ok(Decoded::Complete { frame, consumed }) => (frame, consumed),
            Err(e) => {
                refuse_malformed(exec.client, &e, output);
                pass.close = true;
                pass.consumed = input.len();
                break;
            }
        };
        if exec.session.greeted && !exec.client.off_worker {
            if crate::scripting::gate::should_wait(server) {
                pass.wait_script = true;
                break;
            }
            if super::scripts::calls_script(&frame.body, exec.client) {
                pass.offload = true;
                break;
            }
        }
        pass.consumed += used;
        if !exec.session.greeted {
            exec.session.greeted = greet(&mut exec, &frame, output);
            pass.close = !exec.session.greeted;
            continue;
        }
        pass.durable |= frame.durable();
        match frame.body {
            Body::Request(op) => execute::request(&mut exec, frame.id, frame.durable(), &op, output),
            Body::Batch(ops) => execute::batch(&mut exec, frame.id, frame.durable(), &ops, output),
            _ => {
                let message = format!("ERR frame kind {:?} is not a request", frame.kind);
                encode::fatal(output, frame.id, Status::ProtocolError, message.as_bytes());
                pass.close = true;
            }
        }
        pass.close |= exec.client.close_after_reply;
    }
    exec.client.handle.last_interaction_ms.store(now_ms, Ordering::Relaxed);
    pass
}

/// A malformed frame: an ERROR frame, then the connection closes.
fn refuse_malformed(client: &Client, error: &DecodeError, output: &mut Vec<u8>) {
    tracing::debug!(client = client.id(), error = %error, "native protocol error");
    let status = match error {
        DecodeError::FrameTooLarge { .. } | DecodeError::BatchSize { .. } | DecodeError::ListSize { .. } => {
            Status::LimitExceeded
        }
        _ => Status::ProtocolError,
    };
    let message = format!("ERR {error}");
    encode::fatal(output, 0, status, message.as_bytes());
}

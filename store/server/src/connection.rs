//! One client connection: read a batch of pipelined requests, execute them
//! all, and answer the whole batch with one write.

use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;

use cairn_protocol::{parse_request, Argv, Limits, Parsed, ReplyWriter};
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio::sync::futures::Notified;

use crate::admission::{admit, release, Registration};
use crate::blocking::{BlockState, Waiter};
use crate::client::Client;
use crate::client_buffers::read::read_more;
use crate::client_buffers::{BufferTuner, ReplyGrowth, Tuning, READ_CHUNK};
use crate::commands::timing::CommandClock;
use crate::commands::{dispatch, Ctx};
use crate::rebalance::{Carried, Moving};
use crate::scripting::gate::Gate;
use crate::scripting::on_worker::ScriptHold;
use crate::server::Server;
use crate::stats::WorkerStats;

/// Most scripts a batch leaves for one trip to the script thread.
const MAX_SCRIPTS_PER_TRIP: usize = 64;
/// Buffers above this size are shrunk back when idle.
const SHRINK_ABOVE: usize = 1024 * 1024;

/// A connection's byte stream: a TCP socket, or a TLS session over one.
pub(crate) trait Stream: AsyncRead + AsyncWrite + Unpin {}

impl<S: AsyncRead + AsyncWrite + Unpin> Stream for S {}

/// Writes `bytes` and flushes them (a TLS session may hold encrypted bytes
/// back until flushed; for a TCP socket the flush does nothing).
async fn send<S: Stream>(stream: &mut S, bytes: &[u8]) -> std::io::Result<()> {
    stream.write_all(bytes).await?;
    stream.flush().await
}

/// Serves one connection until it closes, is killed, moves to another
/// worker, or the server stops.
pub async fn serve(
    server: Arc<Server>,
    mut stream: TcpStream,
    peer: SocketAddr,
    worker: usize,
    stats: Arc<WorkerStats>,
) {
    let Some((client, registration)) = admit(&server, &mut stream, peer, worker, &stats, refuse_resp).await else {
        return;
    };
    carry_on(&server, stream, client, registration, worker, &stats).await;
}

/// The RESP refusal of a connection above `maxclients`.
pub(crate) fn refuse_resp(out: &mut Vec<u8>) {
    out.extend_from_slice(b"-ERR max number of clients reached\r\n");
}

/// Carries on with a connection another worker handed to this one
/// ([`crate::rebalance`]).
pub async fn resume(server: Arc<Server>, moving: Moving, worker: usize, stats: Arc<WorkerStats>) {
    let Moving { stream, client, protocol } = moving;
    let Some((stream, client, registration)) = arrive(&server, stream, *client, worker) else {
        return;
    };
    match protocol {
        Carried::Resp => carry_on(&server, stream, client, registration, worker, &stats).await,
        Carried::Native(session) => {
            crate::native::serve::carry_on(&server, stream, client, *session, registration, worker, &stats).await;
        }
    }
}

/// Takes over a client that moved to `worker`: its registration, its
/// worker, its socket on this worker's event loop. `None` (the client
/// released) if the socket cannot join this event loop.
fn arrive(
    server: &Server,
    stream: std::net::TcpStream,
    mut client: Client,
    worker: usize,
) -> Option<(TcpStream, Client, Registration<'_>)> {
    let registration = Registration::adopt(server, client.id());
    client.handle.worker.store(worker, Ordering::Relaxed);
    match TcpStream::from_std(stream) {
        Ok(stream) => Some((stream, client, registration)),
        Err(e) => {
            tracing::debug!(client = client.id(), error = %e, "a moved connection could not join this worker");
            release(server, &mut client);
            None
        }
    }
}

/// Hands a connection that ended its loop ready to move to worker `to`.
/// Gives the client and its registration back if it could not leave (the
/// caller then releases it).
fn depart<'a>(
    server: &Server,
    stream: TcpStream,
    client: Client,
    protocol: Carried,
    registration: Registration<'a>,
    to: usize,
) -> Option<(Client, Registration<'a>)> {
    match stream.into_std() {
        Ok(stream) => match server.rebalance.send(to, Moving { stream, client: Box::new(client), protocol }) {
            Ok(()) => {
                // The client stays registered: the other worker adopts it.
                std::mem::forget(registration);
                None
            }
            Err(back) => Some((*back.client, registration)),
        },
        Err(e) => {
            tracing::debug!(client = client.id(), error = %e, "a connection could not leave its worker");
            Some((client, registration))
        }
    }
}

/// Runs the connection here until it ends, then forgets it, or hands it to
/// the worker it moves to.
async fn carry_on(
    server: &Arc<Server>,
    mut stream: TcpStream,
    mut client: Client,
    registration: Registration<'_>,
    worker: usize,
    stats: &Arc<WorkerStats>,
) {
    server.rebalance.connection_started(worker);
    let ended = connection_loop(server, &mut stream, &mut client, stats, worker, true).await;
    server.rebalance.connection_ended(worker);
    finish(server, stream, client, registration, ended, || Carried::Resp);
}

/// How a connection loop ended.
pub(crate) enum End {
    Closed,
    /// Between two batches with nothing unread, ordered to move to this worker.
    MoveTo(usize),
}

/// After a connection's loop: hands the connection (with what its protocol
/// `carries`) to the worker it moves to, or, when it closed or cannot
/// leave, forgets its client.
pub(crate) fn finish<E: std::fmt::Display>(
    server: &Server,
    stream: TcpStream,
    mut client: Client,
    registration: Registration<'_>,
    ended: Result<End, E>,
    carries: impl FnOnce() -> Carried,
) {
    let _registration = match ended {
        Ok(End::Closed) => registration,
        Ok(End::MoveTo(to)) => match depart(server, stream, client, carries(), registration, to) {
            None => return,
            Some((back, registration)) => {
                client = back;
                registration
            }
        },
        Err(e) => {
            tracing::debug!(client = client.id(), error = %e, "connection closed with an error");
            registration
        }
    };
    release(server, &mut client);
}

/// Whether nothing ties the client to this worker's thread between two
/// batches: no subscriptions or MONITOR feed (delivered through this
/// worker's wake-ups), no client-side caching, no script thread.
pub(crate) fn may_move(client: &Client) -> bool {
    client.pubsub.is_none() && client.monitor.is_none() && client.tracking.is_none() && !client.off_worker
}

/// Why a connection loop ended early.
#[derive(Debug, thiserror::Error)]
pub(crate) enum ConnectionEnd {
    #[error("i/o: {0}")]
    Io(#[from] std::io::Error),
    #[error("query buffer of {0} bytes exceeds client-query-buffer-limit")]
    QueryBufferLimit(usize),
}

/// Serves `client` over `stream` until the connection ends; between two
/// batches, a `movable` connection (a plain TCP socket) leaves when the
/// rebalancer asks.
pub(crate) async fn connection_loop<S: Stream>(
    server: &Arc<Server>,
    stream: &mut S,
    client: &mut Client,
    stats: &Arc<WorkerStats>,
    worker: usize,
    movable: bool,
) -> Result<End, ConnectionEnd> {
    let mut argv = Argv::default();
    // Registered once: polling it again costs no new registration. Server
    // shutdown needs no wait here: the worker drops its connection tasks.
    // It fires on a kill, on a push queued in the inbox (client-side
    // caching) or when the buffer sweep asks for a tune.
    let handle = client.handle.clone();
    let tuning = Tuning::of(server, &handle, stats);
    let (mut tuner, mut input, mut output) =
        BufferTuner::start(cairn_engine::clock::now_ms(), ReplyGrowth::PerBatch, &tuning);
    let signal = handle.signalled();
    tokio::pin!(signal);
    // After a blocked command ends, the rest of the pipeline runs before reading more.
    let mut unblocked = false;
    loop {
        if !std::mem::take(&mut unblocked) {
            if movable && input.is_empty() && may_move(client) {
                if let Some(to) = server.rebalance.claim_move(worker) {
                    return Ok(End::MoveTo(to));
                }
            }
            let subscribed = client.pubsub.is_some() || client.monitor.is_some();
            let wake = tokio::select! {
                biased;
                _ = &mut signal => Wake::Signal,
                _ = messages_ready(client), if subscribed => Wake::Messages,
                read = read_with_timeout(server, stream, &mut input, !subscribed) => Wake::Read(read?),
            };
            match wake {
                Wake::Read(0) => return Ok(End::Closed),
                Wake::Read(n) => {
                    stats.net_input_bytes.add(n as u64);
                    tuner.after_read(&input, &tuning);
                }
                Wake::Signal | Wake::Messages => {
                    if matches!(wake, Wake::Signal) {
                        if handle.is_killed() {
                            return Ok(End::Closed);
                        }
                        signal.set(handle.signalled());
                        if handle.buffers.tidy_requested() {
                            let now_ms = cairn_engine::clock::now_ms();
                            let idle_ms = now_ms.saturating_sub(handle.last_interaction_ms.load(Ordering::Relaxed));
                            tuner.tune_idle(now_ms, idle_ms, &mut input, &mut output, &tuning);
                        }
                    }
                    if !write_messages(server, stream, client, stats, &mut output, &handle, signal.as_mut()).await? {
                        return Ok(End::Closed);
                    }
                    tuner.trim_reply(&mut output);
                    continue;
                }
            }
        }
        let (consumed, now_ms) = execute_batch(server, client, stats, &input, &mut argv, &mut output);
        input.drain(..consumed);
        if !client.pending_scripts.is_empty() {
            // The scripts' replies join this batch's, and the rest of the
            // pipeline runs before anything is written (one write, as for
            // a batch without scripts).
            let scripts = std::mem::take(&mut client.pending_scripts);
            let outcomes = crate::scripting::offload::run_elsewhere(server, stats, client, scripts).await;
            crate::tracking::hooks::after_script(client);
            if outcomes.iter().any(|(_, outcome)| outcome.log_failed) {
                return Ok(End::Closed);
            }
            for (_, outcome) in &outcomes {
                client.last_lsn = client.last_lsn.max(outcome.last_lsn);
            }
            insert_replies(&mut output, outcomes);
            unblocked = true;
            continue;
        }
        server.persistence.yield_to_starved_syncer();
        if !await_durable(server, client.last_lsn).await {
            return Ok(End::Closed);
        }
        // Messages delivered while the batch ran follow its replies.
        take_messages(server, client, &mut output);
        if !output.is_empty() {
            send(stream, &output).await?;
            stats.net_output_bytes.add(output.len() as u64);
            tuner.after_reply(&mut output, &tuning);
        }
        if std::mem::take(&mut client.pending_exec) {
            let Ok(reply) = crate::scripting::offload::with_client_elsewhere(server, stats, client, exec_here).await
            else {
                return Ok(End::Closed);
            };
            if !send_when_durable(server, stream, stats, client.last_lsn, &reply).await? {
                return Ok(End::Closed);
            }
            unblocked = true;
            continue;
        }
        if let Some(held_by_write) = client.wait_pause.take() {
            server.pause.wait(held_by_write).await;
            unblocked = true;
            continue;
        }
        if std::mem::take(&mut client.wait_script) {
            server.scripting.wait(&server.runtime.busy_reply_threshold_ms).await;
            unblocked = true;
            continue;
        }
        if let Some(wait) = client.wait_aof.take() {
            let reply = crate::persistence::waitaof::wait(server, &wait, client.protocol).await;
            send(stream, &reply).await?;
            stats.net_output_bytes.add(reply.len() as u64);
            unblocked = true;
            continue;
        }
        if let Some(pending) = client.pending_migrate.take() {
            // Its network part off this worker (see `migrate`).
            let Ok(reply) = crate::migrate::complete(server, stats, client, *pending).await else {
                return Ok(End::Closed);
            };
            if !send_when_durable(server, stream, stats, client.last_lsn, &reply).await? {
                return Ok(End::Closed);
            }
            unblocked = true;
            continue;
        }
        if let Some(pending) = client.repl.pending.take() {
            // `redis-cli --rdb`: the image, then the connection ends.
            crate::rdb_file::sync::serve(server, stats, stream, pending).await?;
            return Ok(End::Closed);
        }
        if let BlockState::Blocked(waiter) = std::mem::take(&mut client.block) {
            let Some((reply, lsn)) =
                wait_unblocked(server, stream, signal.as_mut(), &handle, &waiter, &mut input).await?
            else {
                return Ok(End::Closed);
            };
            if !await_durable(server, lsn).await {
                return Ok(End::Closed);
            }
            send(stream, &reply).await?;
            stats.net_output_bytes.add(reply.len() as u64);
            unblocked = true;
            continue;
        }
        if client.close_after_reply {
            return Ok(End::Closed);
        }
        let limit = server.runtime.client_query_buffer_limit.load(Ordering::Relaxed);
        if input.len() > limit {
            tracing::warn!(
                client = client.id(),
                bytes = input.len(),
                "closing client that reached max query buffer length"
            );
            return Err(ConnectionEnd::QueryBufferLimit(input.len()));
        }
        shrink_if_idle(&mut input);
        argv.release_if_large();
        tuner.end_batch(now_ms, &mut input, &mut output, &tuning);
    }
}

/// In the `sync` tier, waits until this client's last write is durable
/// before its replies go out. False when the log failed: the connection is
/// closed without the replies, since the writes will never be durable.
/// Sends the reply of work that ran off this worker (EXEC of a script,
/// MIGRATE) once its writes through `lsn` are as durable as the tier
/// requires; false when they cannot be (the connection must close).
async fn send_when_durable<S: Stream>(
    server: &Server,
    stream: &mut S,
    stats: &WorkerStats,
    lsn: u64,
    reply: &[u8],
) -> std::io::Result<bool> {
    if !await_durable(server, lsn).await {
        return Ok(false);
    }
    send(stream, reply).await?;
    stats.net_output_bytes.add(reply.len() as u64);
    Ok(true)
}

pub(crate) async fn await_durable(server: &Server, lsn: u64) -> bool {
    let p = &server.persistence;
    if !p.acks_wait_for(lsn) {
        return true;
    }
    if p.wal_opened().is_some_and(|w| w.durable_lsn() >= lsn) {
        return true;
    }
    match p.wait_durable(lsn).await {
        Ok(()) => true,
        Err(e) => {
            tracing::error!(error = %e, "closing a client whose writes cannot be made durable");
            false
        }
    }
}

/// What woke an idle connection.
enum Wake {
    Read(usize),
    Messages,
    /// A kill, or a push in the inbox.
    Signal,
}

/// Resolves when pub/sub messages or MONITOR lines may be waiting (never
/// when the client neither subscribes nor monitors).
async fn messages_ready(client: &Client) {
    let subscriber = client.pubsub.as_deref().map(|s| &s.subscriber);
    match (subscriber, client.monitor.as_ref()) {
        (Some(s), None) | (None, Some(s)) => s.ready().await,
        (Some(s), Some(m)) => {
            tokio::select! {
                _ = s.ready() => {}
                _ = m.ready() => {}
            }
        }
        (None, None) => std::future::pending().await,
    }
}

/// Appends the queued pub/sub messages, MONITOR lines and client-side
/// caching pushes to `output` (sending pending BCAST invalidations first).
fn take_messages(server: &Server, client: &Client, output: &mut Vec<u8>) {
    if server.tracking.is_active() {
        server.tracking.broadcast();
    }
    client.handle.inbox.take_into(output);
    if let Some(subscriptions) = &client.pubsub {
        subscriptions.subscriber.take_into(output);
    }
    if let Some(monitor) = &client.monitor {
        monitor.take_into(output);
    }
}

/// Writes the pub/sub messages queued for an idle subscriber. False when the
/// client was killed meanwhile (a subscriber over the output limit that
/// stopped reading is killed while its write is pending).
async fn write_messages<'h, S: Stream>(
    server: &Server,
    stream: &mut S,
    client: &Client,
    stats: &WorkerStats,
    output: &mut Vec<u8>,
    handle: &'h crate::client::ClientHandle,
    mut signal: Pin<&mut Notified<'h>>,
) -> std::io::Result<bool> {
    take_messages(server, client, output);
    if !output.is_empty() {
        let sent = output.len();
        {
            let mut write = std::pin::pin!(send(stream, output));
            loop {
                tokio::select! {
                    biased;
                    _ = signal.as_mut() => {
                        if handle.is_killed() {
                            return Ok(false);
                        }
                        // A push: it waits in the inbox for the next round.
                        signal.set(handle.signalled());
                    }
                    written = &mut write => {
                        written?;
                        break;
                    }
                }
            }
        }
        stats.net_output_bytes.add(sent as u64);
        output.clear();
    }
    shrink_if_idle(output);
    Ok(true)
}

/// Reads more bytes, honouring CONFIG `timeout` (idle clients are closed;
/// as in Redis, subscribers are exempt: `timed` is false for them).
pub(crate) async fn read_with_timeout<S: Stream>(
    server: &Server,
    stream: &mut S,
    input: &mut Vec<u8>,
    timed: bool,
) -> std::io::Result<usize> {
    let timeout = server.runtime.timeout_secs.load(Ordering::Relaxed);
    if timeout == 0 || !timed {
        return read_more(stream, input).await;
    }
    match tokio::time::timeout(Duration::from_secs(timeout), read_more(stream, input)).await {
        Ok(read) => read,
        Err(_) => Ok(0),
    }
}

/// Waits while the client is blocked, still reading (and buffering) its input
/// so that a closed connection is noticed. Returns the reply to send, or
/// `None` when the connection must end.
async fn wait_unblocked<'h, S: Stream>(
    server: &Server,
    stream: &mut S,
    mut signal: Pin<&mut Notified<'h>>,
    handle: &'h crate::client::ClientHandle,
    waiter: &Arc<Waiter>,
    input: &mut Vec<u8>,
) -> Result<Option<(Vec<u8>, u64)>, ConnectionEnd> {
    let mut outcome = std::pin::pin!(waiter.outcome(&server.blocking));
    loop {
        let read = tokio::select! {
            biased;
            _ = signal.as_mut() => {
                if !handle.is_killed() {
                    // Pushes to a blocked client follow its reply.
                    signal.set(handle.signalled());
                    continue;
                }
                Ok(0)
            }
            reply = &mut outcome => return Ok(Some(reply)),
            read = stream.read_buf(input) => read,
        };
        match read {
            Ok(0) => {
                server.blocking.cancel(waiter);
                return Ok(None);
            }
            Ok(_) => {}
            Err(e) => {
                server.blocking.cancel(waiter);
                return Err(e.into());
            }
        }
    }
}

pub(crate) fn shrink_if_idle(buf: &mut Vec<u8>) {
    if buf.is_empty() && buf.capacity() > SHRINK_ABOVE {
        *buf = Vec::with_capacity(READ_CHUNK);
    }
}

/// Executes every complete request in `input`, appending replies to `output`;
/// returns how many input bytes were consumed, and the batch's clock (ms).
fn execute_batch(
    server: &Server,
    client: &mut Client,
    stats: &WorkerStats,
    input: &[u8],
    argv: &mut Argv,
    output: &mut Vec<u8>,
) -> (usize, u64) {
    let limits = Limits {
        max_bulk_len: server.runtime.proto_max_bulk_len.load(Ordering::Relaxed),
        unauthenticated: !client.authenticated,
        ..Limits::default()
    };
    let protocol = client.protocol;
    // Marks this worker as executing until the batch ends (scripts wait for it).
    let _executing = server.scripting.enter_batch(client);
    // One clock read per batch: the commands of a batch arrived together.
    let now_ms = cairn_engine::clock::now_ms();
    let clock = CommandClock::start();
    // The keyspace held across the batch's short scripts, if it runs any.
    let mut scripts_here = ScriptHold::new(server, stats);
    let mut ctx = Ctx {
        server,
        client,
        out: ReplyWriter::new(output, protocol),
        stats,
        now_ms,
        clock,
        scripts_here: Some(&mut scripts_here),
    };
    // One argument vector for the whole batch: emptied after each command and
    // recycled (same allocation) so the borrow of `argv` ends each time.
    let mut spare: Vec<&'static [u8]> = Vec::with_capacity(8);
    let mut pos = 0;
    while pos < input.len() && !ctx.client.close_after_reply {
        match parse_request(&input[pos..], argv, &limits) {
            Ok(Parsed::Incomplete) => break,
            Ok(Parsed::Complete { consumed }) => {
                ctx.client.query_pending = input.len() - pos;
                let mut args: Vec<&[u8]> = spare;
                argv.slices(&input[pos..], &mut args);
                if !ctx.client.pending_scripts.is_empty() && !runs_with_pending_scripts(&ctx, &args) {
                    // Left for after the scripts (it may read what they write).
                    break;
                }
                if !args.is_empty() {
                    let holds_keyspace = ctx.scripts_here.as_deref_mut().is_some_and(|here| here.keep_for(&args));
                    // One load per command while no script is pending (but this
                    // worker's own, held for the batch's next script).
                    if !holds_keyspace && server.scripting.script_pending() {
                        match crate::scripting::gate::check(&mut ctx, &args) {
                            Gate::Run => {}
                            Gate::Answered => {
                                spare = recycle(args);
                                pos += consumed;
                                continue;
                            }
                            Gate::Wait => {
                                ctx.client.wait_script = true;
                                break;
                            }
                        }
                    }
                    if let Some(held_by_write) = crate::pause::gate(&ctx, &args) {
                        ctx.client.wait_pause = Some(held_by_write);
                        break;
                    }
                    if crate::commands::transactions::exec_runs_script(&ctx, &args) {
                        // Off this thread, with the client (see scripting::offload).
                        ctx.client.pending_exec = true;
                    } else {
                        dispatch(&mut ctx, &args);
                        if !server.scripting.script_pending() {
                            server.blocking.serve_ready(server, stats);
                        }
                    }
                }
                spare = recycle(args);
                pos += consumed;
                if matches!(ctx.client.block, BlockState::Blocked(_))
                    || ctx.client.wait_aof.is_some()
                    || ctx.client.pending_scripts.len() >= MAX_SCRIPTS_PER_TRIP
                    || ctx.client.pending_exec
                    || ctx.client.pending_migrate.is_some()
                {
                    break;
                }
            }
            Err(e) => {
                tracing::debug!(client = ctx.client.id(), error = %e, "protocol error");
                ctx.out.error(&format!("ERR {e}"));
                ctx.client.close_after_reply = true;
                pos = input.len();
            }
        }
    }
    ctx.client.handle.last_interaction_ms.store(now_ms, Ordering::Relaxed);
    (pos, now_ms)
}

/// Whether a command after one that left a script may run before that
/// script does: another script of the same pipeline (its reply has its
/// place, and scripts run in order), unless the client is in a transaction
/// or tracks keys (a CLIENT CACHING choice covers one script).
fn runs_with_pending_scripts(ctx: &Ctx<'_>, args: &[&[u8]]) -> bool {
    args.first().is_some_and(|name| crate::commands::table::names_script(name))
        && ctx.client.multi.is_none()
        && ctx.client.tracking.is_none()
}

/// Puts each script's reply into `output` where its command's reply belongs
/// (`at` offsets, ascending).
fn insert_replies(output: &mut Vec<u8>, outcomes: Vec<(usize, crate::scripting::run::Outcome)>) {
    if let [(at, outcome)] = outcomes.as_slice() {
        if *at == output.len() {
            output.extend_from_slice(&outcome.reply);
            return;
        }
    }
    let added: usize = outcomes.iter().map(|(_, outcome)| outcome.reply.len()).sum();
    let mut merged = Vec::with_capacity(output.len() + added);
    let mut from = 0;
    for (at, outcome) in outcomes {
        merged.extend_from_slice(&output[from..at]);
        merged.extend_from_slice(&outcome.reply);
        from = at;
    }
    merged.extend_from_slice(&output[from..]);
    *output = merged;
}

/// EXEC of a transaction that calls a script, on the blocking thread the
/// client was moved to; returns the reply.
fn exec_here(server: &Server, stats: &WorkerStats, client: &mut Client) -> Vec<u8> {
    let mut output = Vec::new();
    let protocol = client.protocol;
    let now_ms = cairn_engine::clock::now_ms();
    let clock = CommandClock::start();
    let mut ctx =
        Ctx { server, client, out: ReplyWriter::new(&mut output, protocol), stats, now_ms, clock, scripts_here: None };
    dispatch(&mut ctx, &[b"EXEC"]);
    server.blocking.serve_ready(server, stats);
    output
}

/// Empties a vector of borrowed slices and returns its allocation with a
/// `'static` element type (in-place collection reuses the buffer).
pub(crate) fn recycle(mut args: Vec<&[u8]>) -> Vec<&'static [u8]> {
    args.clear();
    args.into_iter().map(|_| -> &'static [u8] { &[] }).collect()
}

//! One TCP connection, shared by cheap clones. Requests are pipelined: the
//! writer task sends everything queued in one write, the reader task hands
//! each reply to the request with its id.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::sync::Arc;
use std::time::Duration;

use cairn_native::hello::option;
use cairn_native::{decode_frame, encode, Body, Decoded, Limits, OutcomeList, FLAG_DURABLE, VERSION};
use parking_lot::Mutex;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::tcp::{OwnedReadHalf, OwnedWriteHalf};
use tokio::net::TcpStream;
use tokio::sync::{mpsc, oneshot};

use crate::error::Error;
use crate::options::ConnectOptions;
use crate::value::Value;

/// What a request gets back: one value, or one result per batch operation.
#[derive(Debug)]
pub(crate) enum Answer {
    Single(Result<Value, Error>),
    Batch(Vec<Result<Value, Error>>),
}

type Waiter = oneshot::Sender<Result<Answer, Error>>;

/// A request on its way to the writer task.
struct Outgoing {
    id: u32,
    frame: Vec<u8>,
    waiter: Waiter,
}

/// State the handles and the two tasks share.
struct Shared {
    pending: Mutex<HashMap<u32, Waiter>>,
    next_id: AtomicU32,
    closed: AtomicBool,
    /// Why the connection closed, given to requests sent after that.
    close_reason: Mutex<Option<Error>>,
}

impl Shared {
    /// Fails every request in flight and refuses new ones.
    fn close(&self, reason: Error) {
        self.closed.store(true, Ordering::SeqCst);
        self.close_reason.lock().get_or_insert(reason.clone());
        let waiters: Vec<Waiter> = self.pending.lock().drain().map(|(_, w)| w).collect();
        for waiter in waiters {
            let _ = waiter.send(Err(reason.clone()));
        }
    }

    fn reason(&self) -> Error {
        self.close_reason.lock().clone().unwrap_or(Error::Closed)
    }
}

/// A handle on one connection; clones share it. The durable flag and the
/// timeout belong to the handle, so `conn.durable()` gives a handle whose
/// requests are acknowledged only once durable.
#[derive(Clone)]
pub struct Connection {
    shared: Arc<Shared>,
    tx: mpsc::UnboundedSender<Outgoing>,
    durable: bool,
    timeout: Duration,
    client_id: u64,
}

impl std::fmt::Debug for Connection {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Connection")
            .field("client_id", &self.client_id)
            .field("durable", &self.durable)
            .field("timeout", &self.timeout)
            .field("closed", &self.is_closed())
            .finish()
    }
}

impl Connection {
    /// Connects, performs the handshake, and starts the connection's tasks
    /// (on the current tokio runtime).
    pub async fn connect(options: ConnectOptions) -> Result<Connection, Error> {
        let handshake = handshake(&options);
        let (stream, client_id) = tokio::time::timeout(options.connect_timeout, handshake)
            .await
            .map_err(|_| Error::Timeout(options.connect_timeout))??;
        let (reader, writer) = stream.into_split();
        let shared = Arc::new(Shared {
            pending: Mutex::new(HashMap::new()),
            next_id: AtomicU32::new(1),
            closed: AtomicBool::new(false),
            close_reason: Mutex::new(None),
        });
        let (tx, rx) = mpsc::unbounded_channel();
        let limits = Limits { max_frame_len: options.max_reply_len, max_list_len: usize::MAX, ..Limits::default() };
        tokio::spawn(write_loop(writer, rx, shared.clone()));
        tokio::spawn(read_loop(reader, shared.clone(), limits));
        Ok(Connection { shared, tx, durable: false, timeout: options.request_timeout, client_id })
    }

    /// A handle whose requests are answered only once their writes are
    /// durable (the per-request durable flag), whatever the server's tier.
    pub fn durable(&self) -> Connection {
        Connection { durable: true, ..self.clone() }
    }

    /// A handle with another per-request timeout.
    pub fn with_timeout(&self, timeout: Duration) -> Connection {
        Connection { timeout, ..self.clone() }
    }

    /// The server's id for this connection (CLIENT ID, CLIENT KILL ID).
    pub fn client_id(&self) -> u64 {
        self.client_id
    }

    /// Whether the connection has closed (its requests fail with the reason).
    pub fn is_closed(&self) -> bool {
        self.shared.closed.load(Ordering::SeqCst)
    }

    pub(crate) fn flags(&self) -> u8 {
        if self.durable {
            FLAG_DURABLE
        } else {
            0
        }
    }

    pub(crate) fn next_id(&self) -> u32 {
        self.shared.next_id.fetch_add(1, Ordering::Relaxed)
    }

    /// Sends an encoded frame with request id `id` and waits for its answer.
    pub(crate) async fn send(&self, id: u32, frame: Vec<u8>) -> Result<Answer, Error> {
        if self.is_closed() {
            return Err(self.shared.reason());
        }
        let (waiter, answer) = oneshot::channel();
        if self.tx.send(Outgoing { id, frame, waiter }).is_err() {
            return Err(self.shared.reason());
        }
        match tokio::time::timeout(self.timeout, answer).await {
            Ok(Ok(answer)) => answer,
            Ok(Err(_)) => Err(self.shared.reason()),
            Err(_) => {
                self.shared.pending.lock().remove(&id);
                Err(Error::Timeout(self.timeout))
            }
        }
    }
}

/// Connects and exchanges HELLO / HELLO_OK.
async fn handshake(options: &ConnectOptions) -> Result<(TcpStream, u64), Error> {
    let mut stream = TcpStream::connect(&options.addr)
        .await
        .map_err(|e| Error::Connect { addr: options.addr.clone(), source: Arc::new(e) })?;
    stream.set_nodelay(true)?;
    let db = options.db.map(|d| d.to_string());
    let mut pairs: Vec<(&[u8], &[u8])> = Vec::new();
    if let Some(password) = &options.password {
        pairs.push((option::AUTH, password.as_bytes()));
    }
    if let Some(user) = &options.user {
        pairs.push((option::USER, user.as_bytes()));
    }
    if let Some(name) = &options.name {
        pairs.push((option::NAME, name.as_bytes()));
    }
    if let Some(db) = &db {
        pairs.push((option::DB, db.as_bytes()));
    }
    let mut out = Vec::new();
    encode::hello(&mut out, VERSION, VERSION, &pairs);
    stream.write_all(&out).await?;
    let mut input = Vec::with_capacity(256);
    loop {
        if stream.read_buf(&mut input).await? == 0 {
            return Err(Error::Closed);
        }
        let decoded = decode_frame(&input, &Limits::default()).map_err(|e| Error::Protocol(e.to_string()))?;
        let Decoded::Complete { frame, .. } = decoded else { continue };
        return match frame.body {
            Body::HelloOk(ok) => Ok((stream, ok.client_id)),
            Body::Error { status, message } => {
                Err(Error::Handshake { status, message: String::from_utf8_lossy(message).into_owned() })
            }
            other => Err(Error::Protocol(format!("expected HELLO_OK, got {other:?}"))),
        };
    }
}

/// Sends queued requests, everything available in one write.
async fn write_loop(mut writer: OwnedWriteHalf, mut rx: mpsc::UnboundedReceiver<Outgoing>, shared: Arc<Shared>) {
    let mut out: Vec<u8> = Vec::with_capacity(16 * 1024);
    while let Some(first) = rx.recv().await {
        let mut next = Some(first);
        while let Some(request) = next {
            // Registered before the write, so the reply always finds its waiter.
            shared.pending.lock().insert(request.id, request.waiter);
            out.extend_from_slice(&request.frame);
            next = rx.try_recv().ok();
        }
        if shared.closed.load(Ordering::SeqCst) {
            // The reader closed while these were queued: fail them now, not at their timeout.
            shared.close(shared.reason());
            return;
        }
        if let Err(e) = writer.write_all(&out).await {
            shared.close(e.into());
            return;
        }
        out.clear();
        if shared.closed.load(Ordering::SeqCst) {
            return;
        }
    }
}

/// Reads frames and completes the requests they answer.
async fn read_loop(mut reader: OwnedReadHalf, shared: Arc<Shared>, limits: Limits) {
    let mut input: Vec<u8> = Vec::with_capacity(64 * 1024);
    loop {
        match reader.read_buf(&mut input).await {
            Ok(0) => return shared.close(Error::Closed),
            Ok(_) => {}
            Err(e) => return shared.close(e.into()),
        }
        let mut pos = 0;
        loop {
            match decode_frame(&input[pos..], &limits) {
                Ok(Decoded::Incomplete) => break,
                Ok(Decoded::Complete { frame, consumed }) => {
                    pos += consumed;
                    if let Err(fatal) = deliver(&shared, frame.id, &frame.body) {
                        return shared.close(fatal);
                    }
                }
                Err(e) => return shared.close(Error::Protocol(e.to_string())),
            }
        }
        input.drain(..pos);
        if input.capacity() - input.len() < 16 * 1024 {
            input.reserve(64 * 1024);
        }
    }
}

/// Hands one frame's answer to its waiter; Err when the frame ends the connection.
fn deliver(shared: &Shared, id: u32, body: &Body<'_>) -> Result<(), Error> {
    let answer = match body {
        Body::Reply(outcome) => Answer::Single(Value::from_outcome(outcome)),
        Body::BatchReply(list) => Answer::Batch(batch_results(list)),
        Body::Error { status, message } => {
            return Err(Error::Fatal { status: *status, message: String::from_utf8_lossy(message).into_owned() });
        }
        other => return Err(Error::Protocol(format!("unexpected frame from the server: {other:?}"))),
    };
    // A request that timed out is no longer waiting: its late reply is dropped.
    if let Some(waiter) = shared.pending.lock().remove(&id) {
        let _ = waiter.send(Ok(answer));
    }
    Ok(())
}

fn batch_results(list: &OutcomeList<'_>) -> Vec<Result<Value, Error>> {
    list.iter().map(|outcome| Value::from_outcome(&outcome)).collect()
}

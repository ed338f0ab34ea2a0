//! Where the load goes: a [`Target`] opens [`Connection`]s that queue requests, send them in one
//! write and read the replies in order. RESP is the one implementation today; the native protocol
//! will be a second `Target` with the same request vocabulary (an argv of byte strings).

use std::future::Future;
use std::time::{Duration, Instant};

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

use crate::resp::{encode_request, parse_reply, ProtocolError, Reply};
use crate::stream::{Io, Stream};
use crate::tls::TlsClient;

/// Failures talking to a server.
#[derive(Debug, thiserror::Error)]
pub enum TargetError {
    #[error("cannot connect to {addr}: {source}")]
    Connect { addr: String, source: std::io::Error },
    #[error("connecting to {0} timed out")]
    ConnectTimeout(String),
    #[error("TLS handshake with {addr} failed: {source}")]
    Tls { addr: String, source: std::io::Error },
    #[error("I/O error on {addr}: {source}")]
    Io { addr: String, source: std::io::Error },
    #[error("{addr} closed the connection")]
    Closed { addr: String },
    #[error("{addr}: {source}")]
    Protocol { addr: String, source: ProtocolError },
    #[error("{addr} refused AUTH: {reply}")]
    Auth { addr: String, reply: String },
}

/// A server the driver can open connections to.
pub trait Target: Send + Sync + 'static {
    type Conn: Connection;
    /// Opens one connection, authenticated if the target has a password.
    fn connect(&self) -> impl Future<Output = Result<Self::Conn, TargetError>> + Send;
    /// `host:port` (or whatever names the target in reports).
    fn describe(&self) -> String;
}

/// One connection: requests are queued, sent together by [`Connection::flush`], and their
/// replies read back in order.
pub trait Connection: Send + 'static {
    /// Queues one request given as an argv (`[b"SET", key, value]`).
    fn queue(&mut self, args: &[&[u8]]);
    /// Sends every queued request in one write.
    fn flush(&mut self) -> impl Future<Output = Result<(), TargetError>> + Send;
    /// Reads the next reply.
    fn read_reply(&mut self) -> impl Future<Output = Result<Reply, TargetError>> + Send;
    /// When the bytes of the reply last returned by [`Connection::read_reply`] came off the
    /// socket: its arrival, as latency measures it. Replies that came in one read share it, so
    /// the clock is read once per read, not once per reply.
    fn received_at(&self) -> Instant;
}

/// A RESP2 server on TCP, or over TLS.
#[derive(Debug, Clone)]
pub struct RespTarget {
    pub addr: String,
    pub password: Option<String>,
    pub connect_timeout: Duration,
    /// Evented or blocking sockets (resolved: never [`Io::Auto`] here, which counts as evented).
    /// Ignored with TLS, whose connections are always evented.
    pub io: Io,
    /// Connect with TLS (the server's `--tls-port`).
    pub tls: Option<TlsClient>,
}

impl RespTarget {
    pub fn new(addr: impl Into<String>, password: Option<String>) -> RespTarget {
        RespTarget { addr: addr.into(), password, connect_timeout: Duration::from_secs(10), io: Io::Evented, tls: None }
    }

    /// The same target, its connections in mode `io`.
    pub fn with_io(self, io: Io) -> RespTarget {
        RespTarget { io, ..self }
    }

    /// The same target, its connections over TLS when `tls` is given.
    pub fn with_tls(self, tls: Option<TlsClient>) -> RespTarget {
        RespTarget { tls, ..self }
    }
}

/// A TCP socket connected to `addr` with Nagle off, or a typed error once `timeout` has passed.
async fn connect_socket(addr: &str, timeout: Duration) -> Result<TcpStream, TargetError> {
    let socket = tokio::time::timeout(timeout, TcpStream::connect(addr))
        .await
        .map_err(|_| TargetError::ConnectTimeout(addr.to_string()))?
        .map_err(|source| TargetError::Connect { addr: addr.to_string(), source })?;
    socket.set_nodelay(true).map_err(|source| TargetError::Io { addr: addr.to_string(), source })?;
    Ok(socket)
}

/// A TCP connection to `addr` with Nagle off, in mode `io`, or a typed error once `timeout` has
/// passed (every plaintext target connects this way).
pub async fn connect_tcp(addr: &str, timeout: Duration, io: Io) -> Result<Stream, TargetError> {
    let socket = connect_socket(addr, timeout).await?;
    Stream::new(socket, io).map_err(|source| TargetError::Io { addr: addr.to_string(), source })
}

/// A TLS session with `addr`: a TCP connection and the handshake, both within `timeout`.
pub async fn connect_tls(addr: &str, timeout: Duration, tls: &TlsClient) -> Result<Stream, TargetError> {
    let session = tokio::time::timeout(timeout, async {
        let socket = connect_socket(addr, timeout).await?;
        tls.handshake(socket).await.map_err(|source| TargetError::Tls { addr: addr.to_string(), source })
    })
    .await
    .map_err(|_| TargetError::ConnectTimeout(addr.to_string()))??;
    Ok(Stream::tls(session))
}

impl Target for RespTarget {
    type Conn = RespConnection;

    async fn connect(&self) -> Result<RespConnection, TargetError> {
        let stream = match &self.tls {
            Some(tls) => connect_tls(&self.addr, self.connect_timeout, tls).await?,
            None => connect_tcp(&self.addr, self.connect_timeout, self.io).await?,
        };
        let mut conn = RespConnection::new(stream, self.addr.clone());
        if let Some(password) = &self.password {
            conn.queue(&[b"AUTH", password.as_bytes()]);
            conn.flush().await?;
            match conn.read_reply().await? {
                Reply::Simple(ok) if ok.as_ref() == b"OK" => {}
                other => return Err(TargetError::Auth { addr: self.addr.clone(), reply: format!("{other:?}") }),
            }
        }
        Ok(conn)
    }

    fn describe(&self) -> String {
        self.addr.clone()
    }
}

/// A RESP connection with its own write buffer and read buffer.
#[derive(Debug)]
pub struct RespConnection {
    stream: Stream,
    addr: String,
    out: Vec<u8>,
    input: Vec<u8>,
    /// Start of the unparsed bytes in `input`.
    read_at: usize,
    /// When the last read returned (see [`Connection::received_at`]).
    received_at: Instant,
}

impl RespConnection {
    fn new(stream: Stream, addr: String) -> RespConnection {
        RespConnection {
            stream,
            addr,
            out: Vec::with_capacity(16 * 1024),
            input: Vec::with_capacity(64 * 1024),
            read_at: 0,
            received_at: Instant::now(),
        }
    }

    fn io_error(&self, source: std::io::Error) -> TargetError {
        TargetError::Io { addr: self.addr.clone(), source }
    }

    async fn fill(&mut self) -> Result<(), TargetError> {
        if self.read_at > 0 {
            self.input.drain(..self.read_at);
            self.read_at = 0;
        }
        self.input.reserve(64 * 1024);
        let n = self.stream.read_buf(&mut self.input).await.map_err(|e| self.io_error(e))?;
        if n == 0 {
            return Err(TargetError::Closed { addr: self.addr.clone() });
        }
        self.received_at = Instant::now();
        Ok(())
    }
}

impl Connection for RespConnection {
    fn queue(&mut self, args: &[&[u8]]) {
        encode_request(&mut self.out, args);
    }

    async fn flush(&mut self) -> Result<(), TargetError> {
        let result = self.stream.write_all(&self.out).await;
        self.out.clear();
        result.map_err(|e| self.io_error(e))
    }

    async fn read_reply(&mut self) -> Result<Reply, TargetError> {
        loop {
            let parsed = parse_reply(&self.input[self.read_at..])
                .map_err(|source| TargetError::Protocol { addr: self.addr.clone(), source })?;
            if let Some((reply, used)) = parsed {
                self.read_at += used;
                return Ok(reply);
            }
            self.fill().await?;
        }
    }

    fn received_at(&self) -> Instant {
        self.received_at
    }
}

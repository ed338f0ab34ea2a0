//! The native binary protocol as a [`Target`]: the same argv vocabulary as RESP, mapped onto the
//! typed operations (GET, SET, INCR/INCRBY, DEL, EXISTS, MGET, MSET) or the generic COMMAND
//! operation. Requests queued before a flush go out in one write, either as one BATCH frame
//! ([`NativeMode::Batch`]) or as one REQUEST frame each ([`NativeMode::Pipeline`]); replies are
//! turned into the RESP [`Reply`] values the driver's model checks. Buffers are reused: the
//! protocol path allocates only the reply values the model needs (as the RESP target does).

use std::collections::VecDeque;
use std::time::{Duration, Instant};

use cairn_native::hello::option;
use cairn_native::op::encode_op;
use cairn_native::{decode_frame, encode, Body, Decoded, Kind, Limits, Op, OpRef, Outcome, SetCondition, Value};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

use crate::resp::{parse_reply, ProtocolError, Reply};
use crate::stream::{Io, Stream};
use crate::target::{connect_tcp, Connection, Target, TargetError};

/// How queued requests are framed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NativeMode {
    /// All requests queued before a flush in one BATCH frame (one reply frame).
    Batch,
    /// One REQUEST frame per request, pipelined in one write.
    Pipeline,
}

/// A Cairn native listener on TCP.
#[derive(Debug, Clone)]
pub struct NativeTarget {
    pub addr: String,
    pub password: Option<String>,
    pub mode: NativeMode,
    pub connect_timeout: Duration,
    /// Evented or blocking sockets (resolved, as for [`crate::target::RespTarget::io`]).
    pub io: Io,
}

impl NativeTarget {
    pub fn new(addr: impl Into<String>, password: Option<String>, mode: NativeMode) -> NativeTarget {
        NativeTarget { addr: addr.into(), password, mode, connect_timeout: Duration::from_secs(10), io: Io::Evented }
    }

    /// The same target, its connections in mode `io`.
    pub fn with_io(self, io: Io) -> NativeTarget {
        NativeTarget { io, ..self }
    }
}

impl Target for NativeTarget {
    type Conn = NativeConnection;

    async fn connect(&self) -> Result<NativeConnection, TargetError> {
        let stream = connect_tcp(&self.addr, self.connect_timeout, self.io).await?;
        let mut conn = NativeConnection::new(stream, self.addr.clone(), self.mode);
        conn.handshake(self.password.as_deref()).await?;
        Ok(conn)
    }

    fn describe(&self) -> String {
        format!("{} (native)", self.addr)
    }
}

/// One native connection with its own buffers.
#[derive(Debug)]
pub struct NativeConnection {
    stream: Stream,
    addr: String,
    mode: NativeMode,
    /// Frames ready to send.
    out: Vec<u8>,
    /// Batch mode: the operations queued since the last flush.
    ops: Vec<u8>,
    queued: u32,
    next_id: u32,
    /// The ids of the frames sent and not yet answered, in order.
    expected: VecDeque<u32>,
    input: Vec<u8>,
    read_at: usize,
    /// Replies decoded (from a batch reply) and not yet handed out.
    ready: VecDeque<Reply>,
    limits: Limits,
    /// When the last read returned (see [`Connection::received_at`]).
    received_at: Instant,
}

impl NativeConnection {
    fn new(stream: Stream, addr: String, mode: NativeMode) -> NativeConnection {
        NativeConnection {
            stream,
            addr,
            mode,
            out: Vec::with_capacity(16 * 1024),
            ops: Vec::with_capacity(16 * 1024),
            queued: 0,
            next_id: 1,
            expected: VecDeque::with_capacity(64),
            input: Vec::with_capacity(64 * 1024),
            read_at: 0,
            ready: VecDeque::with_capacity(64),
            limits: Limits { max_frame_len: 1 << 30, max_list_len: usize::MAX, ..Limits::default() },
            received_at: Instant::now(),
        }
    }

    fn protocol_error(&self, message: String) -> TargetError {
        TargetError::Protocol { addr: self.addr.clone(), source: ProtocolError(message) }
    }

    async fn handshake(&mut self, password: Option<&str>) -> Result<(), TargetError> {
        let options: Vec<(&[u8], &[u8])> = password.map(|p| (option::AUTH, p.as_bytes())).into_iter().collect();
        encode::hello(&mut self.out, cairn_native::VERSION, cairn_native::VERSION, &options);
        self.expected.push_back(0);
        self.flush().await?;
        match self.read_frame().await? {
            Reply::Simple(_) => Ok(()),
            other => Err(TargetError::Auth { addr: self.addr.clone(), reply: format!("{other:?}") }),
        }
    }

    async fn fill(&mut self) -> Result<(), TargetError> {
        if self.read_at > 0 {
            self.input.drain(..self.read_at);
            self.read_at = 0;
        }
        self.input.reserve(64 * 1024);
        let n = self
            .stream
            .read_buf(&mut self.input)
            .await
            .map_err(|source| TargetError::Io { addr: self.addr.clone(), source })?;
        if n == 0 {
            return Err(TargetError::Closed { addr: self.addr.clone() });
        }
        self.received_at = Instant::now();
        Ok(())
    }

    /// Reads the next frame; a batch reply's outcomes after the first go to `ready`.
    async fn read_frame(&mut self) -> Result<Reply, TargetError> {
        loop {
            let decoded = decode_frame(&self.input[self.read_at..], &self.limits)
                .map_err(|e| self.protocol_error(e.to_string()))?;
            let Decoded::Complete { frame, consumed } = decoded else {
                self.fill().await?;
                continue;
            };
            let expected = self.expected.pop_front();
            if expected != Some(frame.id) && frame.kind != Kind::Error {
                return Err(self.protocol_error(format!("reply id {} where {expected:?} was due", frame.id)));
            }
            let addr = &self.addr;
            let convert =
                |o: &Outcome<'_>| to_reply(o).map_err(|source| TargetError::Protocol { addr: addr.clone(), source });
            let first = match frame.body {
                Body::HelloOk(_) => Reply::Simple(b"OK"[..].into()),
                Body::Reply(outcome) => convert(&outcome)?,
                Body::BatchReply(list) => {
                    let mut outcomes = list.iter();
                    let first = outcomes.next().map(|o| convert(&o)).transpose()?;
                    for outcome in outcomes {
                        self.ready.push_back(convert(&outcome)?);
                    }
                    first.unwrap_or(Reply::Array(None))
                }
                Body::Error { status, message } => {
                    Reply::Error(format!("fatal {status:?}: {}", String::from_utf8_lossy(message)))
                }
                other => return Err(self.protocol_error(format!("unexpected frame {other:?}"))),
            };
            self.read_at += consumed;
            return Ok(first);
        }
    }

    fn take_id(&mut self) -> u32 {
        let id = self.next_id;
        self.next_id = self.next_id.wrapping_add(1);
        self.expected.push_back(id);
        id
    }
}

/// A native outcome as the RESP reply the driver's model expects.
fn to_reply(outcome: &Outcome<'_>) -> Result<Reply, ProtocolError> {
    Ok(match outcome {
        Outcome::Error { message, .. } => Reply::Error(String::from_utf8_lossy(message).into_owned()),
        Outcome::Ok(Value::Nil) => Reply::Bulk(None),
        Outcome::Ok(Value::Ok) => Reply::Simple(b"OK"[..].into()),
        Outcome::Ok(Value::Int(n)) => Reply::Integer(*n),
        Outcome::Ok(Value::Bytes(b)) => Reply::Bulk(Some(b.to_vec())),
        Outcome::Ok(Value::Array(items)) => {
            Reply::Array(Some(items.iter().map(|i| Reply::Bulk(i.map(<[u8]>::to_vec))).collect()))
        }
        Outcome::Ok(Value::Resp(bytes)) => match parse_reply(bytes)? {
            Some((reply, _)) => reply,
            None => return Err(ProtocolError("truncated RESP value in a native reply".into())),
        },
    })
}

/// The typed operation for an argv, or the generic COMMAND operation.
fn to_op<'a>(args: &'a [&'a [u8]]) -> OpRef<'a> {
    let name = args.first().copied().unwrap_or(b"");
    let is = |word: &str| name.eq_ignore_ascii_case(word.as_bytes());
    match args.len() {
        2 if is("GET") => Op::Get { key: args[1] },
        3 if is("SET") => Op::Set { key: args[1], value: args[2], ttl_ms: None, condition: SetCondition::Always },
        2 if is("INCR") => Op::IncrBy { key: args[1], delta: 1 },
        n if n >= 2 && is("DEL") => Op::Del { keys: &args[1..] },
        n if n >= 2 && is("EXISTS") => Op::Exists { keys: &args[1..] },
        n if n >= 2 && is("MGET") => Op::MGet { keys: &args[1..] },
        _ => Op::Command { args },
    }
}

impl Connection for NativeConnection {
    fn queue(&mut self, args: &[&[u8]]) {
        let op = to_op(args);
        match self.mode {
            NativeMode::Batch => {
                encode_op(&mut self.ops, &op);
                self.queued += 1;
            }
            NativeMode::Pipeline => {
                let id = self.take_id();
                encode::request(&mut self.out, id, 0, &op);
            }
        }
    }

    async fn flush(&mut self) -> Result<(), TargetError> {
        if self.queued > 0 {
            let id = self.take_id();
            if self.queued == 1 {
                // One operation: a REQUEST frame (the batch buffer holds exactly one op).
                let start = encode::begin(&mut self.out, Kind::Request, 0, id);
                self.out.extend_from_slice(&self.ops);
                encode::finish(&mut self.out, start);
            } else {
                let start = encode::begin(&mut self.out, Kind::Batch, 0, id);
                self.out.extend_from_slice(&self.queued.to_le_bytes());
                self.out.extend_from_slice(&self.ops);
                encode::finish(&mut self.out, start);
            }
            self.ops.clear();
            self.queued = 0;
        }
        let result = self.stream.write_all(&self.out).await;
        self.out.clear();
        result.map_err(|source| TargetError::Io { addr: self.addr.clone(), source })
    }

    async fn read_reply(&mut self) -> Result<Reply, TargetError> {
        if let Some(reply) = self.ready.pop_front() {
            return Ok(reply);
        }
        self.read_frame().await
    }

    fn received_at(&self) -> Instant {
        self.received_at
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn argv_maps_to_typed_operations() {
        assert!(matches!(to_op(&[b"get", b"k"]), Op::Get { key: b"k" }));
        assert!(matches!(to_op(&[b"SET", b"k", b"v"]), Op::Set { ttl_ms: None, .. }));
        assert!(matches!(to_op(&[b"INCR", b"k"]), Op::IncrBy { delta: 1, .. }));
        assert!(matches!(to_op(&[b"SET", b"k", b"v", b"NX"]), Op::Command { .. }));
        assert!(matches!(to_op(&[b"LPUSH", b"l", b"x"]), Op::Command { .. }));
    }

    #[test]
    fn outcomes_become_resp_replies() {
        assert_eq!(to_reply(&Outcome::Ok(Value::Nil)).unwrap(), Reply::Bulk(None));
        assert_eq!(to_reply(&Outcome::Ok(Value::Int(3))).unwrap(), Reply::Integer(3));
        assert_eq!(to_reply(&Outcome::Ok(Value::Resp(b":4\r\n"))).unwrap(), Reply::Integer(4));
        let error = Outcome::Error { status: cairn_native::Status::WrongType, message: b"WRONGTYPE x" };
        assert_eq!(to_reply(&error).unwrap(), Reply::Error("WRONGTYPE x".into()));
    }
}

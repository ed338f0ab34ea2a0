//! Replies: each request gets one [`Outcome`]: status [`Status::Ok`] and a
//! [`Value`], or an error status and a message.

use crate::cursor::Cursor;
use crate::error::DecodeError;
use crate::limits::Limits;
use crate::op::put_bytes;

/// Status codes (u16 on the wire). Codes a client does not know are kept as
/// [`Status::Other`] so that servers may add codes without breaking clients.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Status {
    Ok,
    /// A command error (`ERR ...` in RESP): syntax, not an integer, ...
    Err,
    /// Operation against a key holding the wrong kind of value.
    WrongType,
    /// Authentication required.
    NoAuth,
    /// Wrong password in the handshake.
    AuthFailed,
    /// The generic COMMAND operation named no known command.
    UnknownCommand,
    /// Refused above `maxmemory`.
    OutOfMemory,
    /// The server is still loading its data.
    Loading,
    /// Durable flag while the server keeps no log (tier `none`): the write was not executed.
    DurabilityUnavailable,
    /// The log failed: the write cannot be made durable.
    DurabilityFailed,
    /// Malformed frame; the connection closes after this reply.
    ProtocolError,
    /// The handshake asked for versions this server does not speak.
    UnsupportedVersion,
    /// A limit was exceeded (frame size, query buffer); the connection closes.
    LimitExceeded,
    /// `maxclients` reached; the connection closes.
    TooManyClients,
    /// The command cannot run over the native protocol (pub/sub, WAITAOF, ...).
    Unsupported,
    /// A code this version does not know.
    Other(u16),
}

impl Status {
    pub fn code(self) -> u16 {
        match self {
            Status::Ok => 0,
            Status::Err => 1,
            Status::WrongType => 2,
            Status::NoAuth => 3,
            Status::AuthFailed => 4,
            Status::UnknownCommand => 5,
            Status::OutOfMemory => 6,
            Status::Loading => 7,
            Status::DurabilityUnavailable => 8,
            Status::DurabilityFailed => 9,
            Status::ProtocolError => 10,
            Status::UnsupportedVersion => 11,
            Status::LimitExceeded => 12,
            Status::TooManyClients => 13,
            Status::Unsupported => 14,
            Status::Other(code) => code,
        }
    }

    pub fn from_code(code: u16) -> Status {
        match code {
            0 => Status::Ok,
            1 => Status::Err,
            2 => Status::WrongType,
            3 => Status::NoAuth,
            4 => Status::AuthFailed,
            5 => Status::UnknownCommand,
            6 => Status::OutOfMemory,
            7 => Status::Loading,
            8 => Status::DurabilityUnavailable,
            9 => Status::DurabilityFailed,
            10 => Status::ProtocolError,
            11 => Status::UnsupportedVersion,
            12 => Status::LimitExceeded,
            13 => Status::TooManyClients,
            14 => Status::Unsupported,
            other => Status::Other(other),
        }
    }
}

/// Value tags (u8 on the wire).
pub mod tag {
    pub const NIL: u8 = 0;
    pub const OK: u8 = 1;
    pub const INT: u8 = 2;
    pub const BYTES: u8 = 3;
    pub const ARRAY: u8 = 4;
    pub const RESP: u8 = 5;
}

/// The value of a successful request, borrowed from the frame.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Value<'a> {
    /// No value (GET of a missing key, SET NX that did not set).
    Nil,
    /// Done, nothing to return (SET, MSET).
    Ok,
    Int(i64),
    Bytes(&'a [u8]),
    /// Items that may be missing (MGET).
    Array(ArrayItems<'a>),
    /// The RESP3 encoding of a generic command's reply.
    Resp(&'a [u8]),
}

/// One request's result.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Outcome<'a> {
    Ok(Value<'a>),
    Error { status: Status, message: &'a [u8] },
}

/// Reads one outcome: u16 status, then a value (status 0) or a message.
pub fn decode_outcome<'a>(cursor: &mut Cursor<'a>, limits: &Limits) -> Result<Outcome<'a>, DecodeError> {
    let status = Status::from_code(cursor.u16("status")?);
    if status != Status::Ok {
        return Ok(Outcome::Error { status, message: cursor.bytes("error message")? });
    }
    let tag = cursor.u8("value tag")?;
    Ok(Outcome::Ok(match tag {
        tag::NIL => Value::Nil,
        tag::OK => Value::Ok,
        tag::INT => Value::Int(cursor.i64("integer value")?),
        tag::BYTES => Value::Bytes(cursor.bytes("bytes value")?),
        tag::ARRAY => Value::Array(ArrayItems::decode(cursor, limits)?),
        tag::RESP => Value::Resp(cursor.bytes("RESP value")?),
        other => return Err(DecodeError::UnknownValueTag(other)),
    }))
}

/// Appends a successful outcome.
pub fn put_ok(out: &mut Vec<u8>, value: &Value<'_>) {
    out.extend_from_slice(&Status::Ok.code().to_le_bytes());
    match value {
        Value::Nil => out.push(tag::NIL),
        Value::Ok => out.push(tag::OK),
        Value::Int(n) => {
            out.push(tag::INT);
            out.extend_from_slice(&n.to_le_bytes());
        }
        Value::Bytes(bytes) => {
            out.push(tag::BYTES);
            put_bytes(out, bytes);
        }
        Value::Array(items) => {
            put_array_header(out, items.len());
            for item in items.iter() {
                put_array_item(out, item);
            }
        }
        Value::Resp(bytes) => {
            out.push(tag::RESP);
            put_bytes(out, bytes);
        }
    }
}

/// Appends an error outcome.
pub fn put_error(out: &mut Vec<u8>, status: Status, message: &[u8]) {
    out.extend_from_slice(&status.code().to_le_bytes());
    put_bytes(out, message);
}

/// Starts a successful outcome whose value is an array of `count` items;
/// follow with `count` calls of [`put_array_item`].
pub fn put_ok_array(out: &mut Vec<u8>, count: usize) {
    out.extend_from_slice(&Status::Ok.code().to_le_bytes());
    put_array_header(out, count);
}

fn put_array_header(out: &mut Vec<u8>, count: usize) {
    out.push(tag::ARRAY);
    out.extend_from_slice(&(count as u32).to_le_bytes());
}

/// Appends one array item: presence byte, then the bytes when present.
pub fn put_array_item(out: &mut Vec<u8>, item: Option<&[u8]>) {
    match item {
        Some(bytes) => {
            out.push(1);
            put_bytes(out, bytes);
        }
        None => out.push(0),
    }
}

/// The validated items of an array value.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ArrayItems<'a> {
    count: usize,
    raw: &'a [u8],
}

impl<'a> ArrayItems<'a> {
    fn decode(cursor: &mut Cursor<'a>, limits: &Limits) -> Result<Self, DecodeError> {
        let count = cursor.u32("array count")? as u64;
        let max = limits.max_list_len;
        if count > max as u64 {
            return Err(DecodeError::ListSize { count, min: 0, max });
        }
        let start = cursor.position();
        for _ in 0..count {
            match cursor.u8("array item presence")? {
                0 => {}
                1 => {
                    cursor.bytes("array item")?;
                }
                other => return Err(DecodeError::BadPresence(other)),
            }
        }
        Ok(ArrayItems { count: count as usize, raw: cursor.since(start) })
    }

    pub fn len(&self) -> usize {
        self.count
    }

    pub fn is_empty(&self) -> bool {
        self.count == 0
    }

    pub fn iter(&self) -> ArrayItemsIter<'a> {
        ArrayItemsIter { cursor: Cursor::new(self.raw), left: self.count }
    }
}

/// Iterator over [`ArrayItems`].
#[derive(Clone, Debug)]
pub struct ArrayItemsIter<'a> {
    cursor: Cursor<'a>,
    left: usize,
}

impl<'a> Iterator for ArrayItemsIter<'a> {
    type Item = Option<&'a [u8]>;

    fn next(&mut self) -> Option<Option<&'a [u8]>> {
        if self.left == 0 {
            return None;
        }
        self.left -= 1;
        // Validated when decoded: these reads cannot fail.
        match self.cursor.u8("array item presence").ok()? {
            0 => Some(None),
            _ => Some(Some(self.cursor.bytes("array item").ok()?)),
        }
    }
}

/// The validated outcomes of a batch reply.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct OutcomeList<'a> {
    count: usize,
    raw: &'a [u8],
    limits: Limits,
}

impl<'a> OutcomeList<'a> {
    pub fn decode(cursor: &mut Cursor<'a>, limits: &Limits) -> Result<Self, DecodeError> {
        let count = cursor.u32("batch reply count")? as u64;
        let max = limits.max_batch_ops;
        if count == 0 || count > max as u64 {
            return Err(DecodeError::BatchSize { count, max });
        }
        let start = cursor.position();
        for _ in 0..count {
            decode_outcome(cursor, limits)?;
        }
        Ok(OutcomeList { count: count as usize, raw: cursor.since(start), limits: *limits })
    }

    pub fn len(&self) -> usize {
        self.count
    }

    pub fn is_empty(&self) -> bool {
        self.count == 0
    }

    pub fn iter(&self) -> impl Iterator<Item = Outcome<'a>> + 'a {
        let mut cursor = Cursor::new(self.raw);
        let limits = self.limits;
        // Validated when decoded: these decodes cannot fail.
        (0..self.count).map_while(move |_| decode_outcome(&mut cursor, &limits).ok())
    }
}

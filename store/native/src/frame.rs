//! Frames: a 12-byte header, then a body whose shape the kind gives.
//!
//! ```text
//! offset size field
//! 0      4    length: bytes after this field (8 + body), u32 LE
//! 4      1    kind
//! 5      1    flags
//! 6      2    reserved, must be 0
//! 8      4    request id, u32 LE (echoed in the reply)
//! 12     ...  body
//! ```

use crate::cursor::Cursor;
use crate::error::DecodeError;
use crate::hello::{Hello, HelloOk};
use crate::limits::Limits;
use crate::list::OpList;
use crate::op::{decode_op, DecodedOp};
use crate::reply::{decode_outcome, Outcome, OutcomeList, Status};

/// Header size in bytes.
pub const HEADER_LEN: usize = 12;
/// Header bytes counted by the length field (all but the length itself).
pub const HEADER_AFTER_LEN: usize = 8;

/// Request flag: reply only once the request's writes are durable.
pub const FLAG_DURABLE: u8 = 0x01;

/// Frame kinds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u8)]
pub enum Kind {
    /// Client → server: the handshake, first frame of a connection.
    Hello = 0x01,
    /// Client → server: one operation.
    Request = 0x02,
    /// Client → server: many operations, one id, one reply.
    Batch = 0x03,
    /// Server → client: the handshake succeeded.
    HelloOk = 0x81,
    /// Server → client: the outcome of a request.
    Reply = 0x82,
    /// Server → client: the outcomes of a batch, in order.
    BatchReply = 0x83,
    /// Server → client: a fatal error; the server closes the connection after it.
    Error = 0xFF,
}

impl Kind {
    pub fn from_u8(byte: u8) -> Option<Kind> {
        Some(match byte {
            0x01 => Kind::Hello,
            0x02 => Kind::Request,
            0x03 => Kind::Batch,
            0x81 => Kind::HelloOk,
            0x82 => Kind::Reply,
            0x83 => Kind::BatchReply,
            0xFF => Kind::Error,
            _ => return None,
        })
    }

    /// Flags defined for this kind; any other bit set is malformed.
    pub fn allowed_flags(self) -> u8 {
        match self {
            Kind::Request | Kind::Batch => FLAG_DURABLE,
            _ => 0,
        }
    }
}

/// A decoded frame, borrowing from the input buffer.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Frame<'a> {
    pub kind: Kind,
    pub flags: u8,
    pub id: u32,
    pub body: Body<'a>,
}

impl Frame<'_> {
    pub fn durable(&self) -> bool {
        self.flags & FLAG_DURABLE != 0
    }
}

/// What a frame carries.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Body<'a> {
    Hello(Hello<'a>),
    Request(DecodedOp<'a>),
    Batch(OpList<'a>),
    HelloOk(HelloOk<'a>),
    Reply(Outcome<'a>),
    BatchReply(OutcomeList<'a>),
    Error { status: Status, message: &'a [u8] },
}

/// The result of decoding the front of a buffer.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Decoded<T> {
    /// A whole frame, and how many bytes it took.
    Complete { frame: T, consumed: usize },
    /// More bytes are needed; nothing was consumed.
    Incomplete,
}

/// Decodes the frame at the front of `buf`. The length is checked against
/// `limits.max_frame_len` as soon as the first four bytes are in, so an
/// oversized frame is refused before it is buffered.
pub fn decode_frame<'a>(buf: &'a [u8], limits: &Limits) -> Result<Decoded<Frame<'a>>, DecodeError> {
    let Some(len_bytes) = buf.first_chunk::<4>() else {
        return Ok(Decoded::Incomplete);
    };
    let len = u32::from_le_bytes(*len_bytes);
    if (len as usize) < HEADER_AFTER_LEN {
        return Err(DecodeError::FrameTooShort(len));
    }
    let total = 4 + len as usize;
    if total > limits.max_frame_len {
        return Err(DecodeError::FrameTooLarge { len: total, max: limits.max_frame_len });
    }
    if buf.len() < total {
        return Ok(Decoded::Incomplete);
    }
    let mut header = Cursor::new(&buf[4..HEADER_LEN]);
    let kind_byte = header.u8("kind")?;
    let kind = Kind::from_u8(kind_byte).ok_or(DecodeError::UnknownKind(kind_byte))?;
    let flags = header.u8("flags")?;
    if flags & !kind.allowed_flags() != 0 {
        return Err(DecodeError::UnknownFlags { kind: kind_byte, flags });
    }
    let reserved = header.u16("reserved")?;
    if reserved != 0 {
        return Err(DecodeError::Reserved(reserved));
    }
    let id = header.u32("request id")?;
    let mut body = Cursor::new(&buf[HEADER_LEN..total]);
    let decoded = decode_body(kind, &mut body, limits)?;
    body.finish()?;
    Ok(Decoded::Complete { frame: Frame { kind, flags, id, body: decoded }, consumed: total })
}

fn decode_body<'a>(kind: Kind, body: &mut Cursor<'a>, limits: &Limits) -> Result<Body<'a>, DecodeError> {
    Ok(match kind {
        Kind::Hello => Body::Hello(Hello::decode(body, limits)?),
        Kind::Request => Body::Request(decode_op(body, limits)?),
        Kind::Batch => Body::Batch(OpList::decode(body, limits)?),
        Kind::HelloOk => Body::HelloOk(HelloOk::decode(body)?),
        Kind::Reply => Body::Reply(decode_outcome(body, limits)?),
        Kind::BatchReply => Body::BatchReply(OutcomeList::decode(body, limits)?),
        Kind::Error => {
            Body::Error { status: Status::from_code(body.u16("status")?), message: body.bytes("error message")? }
        }
    })
}

//! Operations: what one request asks for. Each starts with a one-byte
//! [`OpCode`]; the typed operations carry exactly their arguments, and
//! [`Op::Command`] carries any command's argv so every command is reachable.

use crate::cursor::Cursor;
use crate::error::DecodeError;
use crate::limits::Limits;
use crate::list::{ByteList, Strings};

/// Operation codes (first byte of an operation).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u8)]
pub enum OpCode {
    Get = 1,
    Set = 2,
    Del = 3,
    Exists = 4,
    IncrBy = 5,
    Expire = 6,
    MGet = 7,
    MSet = 8,
    Command = 9,
}

impl OpCode {
    pub fn from_u8(byte: u8) -> Option<OpCode> {
        Some(match byte {
            1 => OpCode::Get,
            2 => OpCode::Set,
            3 => OpCode::Del,
            4 => OpCode::Exists,
            5 => OpCode::IncrBy,
            6 => OpCode::Expire,
            7 => OpCode::MGet,
            8 => OpCode::MSet,
            9 => OpCode::Command,
            _ => return None,
        })
    }
}

/// SET's existence condition.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum SetCondition {
    #[default]
    Always,
    /// Only if the key does not exist (NX).
    IfAbsent,
    /// Only if the key exists (XX).
    IfPresent,
}

/// SET option bits.
pub const SET_NX: u8 = 1;
pub const SET_XX: u8 = 2;
pub const SET_TTL: u8 = 4;
const SET_KNOWN: u8 = SET_NX | SET_XX | SET_TTL;

/// One operation. `L` is how lists of strings are held: [`ByteList`] when
/// decoded, `&[&[u8]]` when built to be encoded.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Op<'a, L = &'a [&'a [u8]]> {
    Get {
        key: &'a [u8],
    },
    /// SET key value [PX ttl_ms] [NX|XX].
    Set {
        key: &'a [u8],
        value: &'a [u8],
        ttl_ms: Option<u64>,
        condition: SetCondition,
    },
    /// DEL key [key ...] (at least one key).
    Del {
        keys: L,
    },
    /// EXISTS key [key ...] (at least one key).
    Exists {
        keys: L,
    },
    IncrBy {
        key: &'a [u8],
        delta: i64,
    },
    /// PEXPIRE key ttl_ms (zero or negative deletes the key, as in Redis).
    Expire {
        key: &'a [u8],
        ttl_ms: i64,
    },
    /// MGET key [key ...] (at least one key).
    MGet {
        keys: L,
    },
    /// MSET key value [key value ...] (a non-empty, even number of strings).
    MSet {
        items: L,
    },
    /// Any command: argv with the command name first (at least one string).
    Command {
        args: L,
    },
}

/// An operation decoded from a frame.
pub type DecodedOp<'a> = Op<'a, ByteList<'a>>;

/// An operation built by a caller, to encode.
pub type OpRef<'a> = Op<'a, &'a [&'a [u8]]>;

impl<L> Op<'_, L> {
    pub fn code(&self) -> OpCode {
        match self {
            Op::Get { .. } => OpCode::Get,
            Op::Set { .. } => OpCode::Set,
            Op::Del { .. } => OpCode::Del,
            Op::Exists { .. } => OpCode::Exists,
            Op::IncrBy { .. } => OpCode::IncrBy,
            Op::Expire { .. } => OpCode::Expire,
            Op::MGet { .. } => OpCode::MGet,
            Op::MSet { .. } => OpCode::MSet,
            Op::Command { .. } => OpCode::Command,
        }
    }
}

/// Reads one operation.
pub fn decode_op<'a>(cursor: &mut Cursor<'a>, limits: &Limits) -> Result<DecodedOp<'a>, DecodeError> {
    let byte = cursor.u8("operation code")?;
    let code = OpCode::from_u8(byte).ok_or(DecodeError::UnknownOp(byte))?;
    Ok(match code {
        OpCode::Get => Op::Get { key: cursor.bytes("key")? },
        OpCode::Set => decode_set(cursor)?,
        OpCode::Del => Op::Del { keys: ByteList::decode(cursor, 1, limits)? },
        OpCode::Exists => Op::Exists { keys: ByteList::decode(cursor, 1, limits)? },
        OpCode::IncrBy => Op::IncrBy { key: cursor.bytes("key")?, delta: cursor.i64("INCRBY delta")? },
        OpCode::Expire => Op::Expire { key: cursor.bytes("key")?, ttl_ms: cursor.i64("EXPIRE ttl")? },
        OpCode::MGet => Op::MGet { keys: ByteList::decode(cursor, 1, limits)? },
        OpCode::MSet => {
            let items = ByteList::decode(cursor, 2, limits)?;
            if items.len() % 2 != 0 {
                return Err(DecodeError::OddPairs("MSET"));
            }
            Op::MSet { items }
        }
        OpCode::Command => Op::Command { args: ByteList::decode(cursor, 1, limits)? },
    })
}

fn decode_set<'a>(cursor: &mut Cursor<'a>) -> Result<DecodedOp<'a>, DecodeError> {
    let bits = cursor.u8("SET options")?;
    if bits & !SET_KNOWN != 0 {
        return Err(DecodeError::UnknownSetBits(bits));
    }
    let condition = match (bits & SET_NX != 0, bits & SET_XX != 0) {
        (true, true) => return Err(DecodeError::ConflictingSetConditions),
        (true, false) => SetCondition::IfAbsent,
        (false, true) => SetCondition::IfPresent,
        (false, false) => SetCondition::Always,
    };
    let ttl_ms = if bits & SET_TTL != 0 { Some(cursor.u64("SET ttl")?) } else { None };
    let key = cursor.bytes("key")?;
    let value = cursor.bytes("value")?;
    Ok(Op::Set { key, value, ttl_ms, condition })
}

/// Appends one operation.
pub fn encode_op<L: Strings>(out: &mut Vec<u8>, op: &Op<'_, L>) {
    out.push(op.code() as u8);
    match op {
        Op::Get { key } => put_bytes(out, key),
        Op::Set { key, value, ttl_ms, condition } => {
            let mut bits = match condition {
                SetCondition::Always => 0,
                SetCondition::IfAbsent => SET_NX,
                SetCondition::IfPresent => SET_XX,
            };
            if ttl_ms.is_some() {
                bits |= SET_TTL;
            }
            out.push(bits);
            if let Some(ttl) = ttl_ms {
                out.extend_from_slice(&ttl.to_le_bytes());
            }
            put_bytes(out, key);
            put_bytes(out, value);
        }
        Op::Del { keys } | Op::Exists { keys } | Op::MGet { keys } => put_list(out, keys),
        Op::MSet { items } => put_list(out, items),
        Op::Command { args } => put_list(out, args),
        Op::IncrBy { key, delta } => {
            put_bytes(out, key);
            out.extend_from_slice(&delta.to_le_bytes());
        }
        Op::Expire { key, ttl_ms } => {
            put_bytes(out, key);
            out.extend_from_slice(&ttl_ms.to_le_bytes());
        }
    }
}

/// Appends a byte string (u32 length, then the bytes).
pub fn put_bytes(out: &mut Vec<u8>, bytes: &[u8]) {
    out.extend_from_slice(&(bytes.len() as u32).to_le_bytes());
    out.extend_from_slice(bytes);
}

/// Appends a list of byte strings (u32 count, then each string).
pub fn put_list<L: Strings>(out: &mut Vec<u8>, list: &L) {
    out.extend_from_slice(&(list.count() as u32).to_le_bytes());
    for item in list.items() {
        put_bytes(out, item);
    }
}

//! WAL records: self-checking frames that carry one or more commands.
//!
//! ```text
//! offset  size  field
//! 0       4     body length N (u32, little endian)
//! 4       4     crc32c of the body
//! 8       N     body:
//!                 lsn      u64   log sequence number, +1 per record
//!                 time_ms  u64   wall clock the commands ran at (Unix ms)
//!                 durable  u64   the durable LSN when the record was made
//!                 kind     u8    1 = one command, 2 = transaction (MULTI/EXEC)
//!                 count    varint  number of commands (1 for kind 1)
//!                 count x { db varint, argc varint, argc x { len varint, bytes } }
//! ```
//!
//! Commands are logical (the arguments of a Redis command, rewritten by the
//! server into their deterministic effect where needed), so replay runs them
//! through the same code as live traffic. A transaction is one record, so a
//! torn tail can never apply half of one.

use thiserror::Error;

/// Log sequence number: the position of a record in the log.
pub type Lsn = u64;

/// Size of the length and checksum prefix.
pub const PREFIX_LEN: usize = 8;
/// Smallest valid body: lsn, time, durable hint, kind, count.
pub const MIN_BODY_LEN: usize = 8 + 8 + 8 + 1 + 1;
/// Largest body accepted when reading (a 512 MiB value plus its arguments).
pub const MAX_BODY_LEN: usize = (1 << 30) - 1;

/// What a record holds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u8)]
pub enum Kind {
    Command = 1,
    Transaction = 2,
}

/// One command inside a record.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LoggedCommand {
    pub db: u32,
    pub args: Vec<Vec<u8>>,
}

/// A decoded record.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Record {
    pub lsn: Lsn,
    pub time_ms: u64,
    /// The durable LSN when this record was made: every record up to it had
    /// been fdatasynced, so a bad record at or below it is corruption, not a
    /// torn tail.
    pub durable_hint: Lsn,
    pub kind: Kind,
    pub commands: Vec<LoggedCommand>,
}

/// Why bytes are not a valid record.
#[derive(Debug, Error, PartialEq, Eq)]
pub enum DecodeError {
    #[error("incomplete record (need {0} bytes)")]
    Incomplete(usize),
    #[error("record length {0} out of range")]
    BadLength(usize),
    #[error("checksum mismatch")]
    BadChecksum,
    #[error("malformed record body: {0}")]
    Malformed(&'static str),
}

/// Appends a LEB128 varint.
pub fn put_varint(out: &mut Vec<u8>, mut v: u64) {
    while v >= 0x80 {
        out.push((v as u8) | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

/// Reads a LEB128 varint at `*pos`.
pub fn get_varint(buf: &[u8], pos: &mut usize) -> Result<u64, DecodeError> {
    let mut v: u64 = 0;
    for shift in (0..64).step_by(7) {
        let byte = *buf.get(*pos).ok_or(DecodeError::Malformed("truncated varint"))?;
        *pos += 1;
        v |= u64::from(byte & 0x7f) << shift;
        if byte & 0x80 == 0 {
            return Ok(v);
        }
    }
    Err(DecodeError::Malformed("varint too long"))
}

/// Appends one command's encoding (db, argc, args).
pub fn put_command(out: &mut Vec<u8>, db: u32, args: &[&[u8]]) {
    put_varint(out, u64::from(db));
    put_varint(out, args.len() as u64);
    for arg in args {
        put_varint(out, arg.len() as u64);
        out.extend_from_slice(arg);
    }
}

/// The fixed fields of a record.
#[derive(Clone, Copy, Debug)]
pub struct Header {
    pub lsn: Lsn,
    pub time_ms: u64,
    pub durable_hint: Lsn,
    pub kind: Kind,
}

/// Encodes a record at the end of `out`: `body` writes the commands after
/// the count. Returns the record's total length.
pub fn encode(out: &mut Vec<u8>, header: Header, count: usize, body: impl FnOnce(&mut Vec<u8>)) -> usize {
    let Header { lsn, time_ms, durable_hint, kind } = header;
    let start = out.len();
    out.extend_from_slice(&[0u8; PREFIX_LEN]);
    out.extend_from_slice(&lsn.to_le_bytes());
    out.extend_from_slice(&time_ms.to_le_bytes());
    out.extend_from_slice(&durable_hint.to_le_bytes());
    out.push(kind as u8);
    put_varint(out, count as u64);
    body(out);
    let body_len = out.len() - start - PREFIX_LEN;
    let crc = super::checksum::crc32c(&out[start + PREFIX_LEN..]);
    out[start..start + 4].copy_from_slice(&(body_len as u32).to_le_bytes());
    out[start + 4..start + 8].copy_from_slice(&crc.to_le_bytes());
    out.len() - start
}

/// The body length a record at the start of `buf` claims, if the prefix is there.
pub fn claimed_len(buf: &[u8]) -> Option<usize> {
    let bytes: [u8; 4] = buf.get(..4)?.try_into().ok()?;
    Some(u32::from_le_bytes(bytes) as usize)
}

/// The LSN of a record at the start of `buf`, without checking it.
pub fn peek_lsn(buf: &[u8]) -> Option<Lsn> {
    let bytes: [u8; 8] = buf.get(PREFIX_LEN..PREFIX_LEN + 8)?.try_into().ok()?;
    Some(u64::from_le_bytes(bytes))
}

/// The durable hint of a record at the start of `buf`, without checking it.
pub fn peek_durable_hint(buf: &[u8]) -> Option<Lsn> {
    let bytes: [u8; 8] = buf.get(PREFIX_LEN + 16..PREFIX_LEN + 24)?.try_into().ok()?;
    Some(u64::from_le_bytes(bytes))
}

/// Checks the frame at the start of `buf` (length and checksum) and returns
/// its total length, without decoding the commands.
pub fn check_frame(buf: &[u8]) -> Result<usize, DecodeError> {
    let len = claimed_len(buf).ok_or(DecodeError::Incomplete(PREFIX_LEN))?;
    if !(MIN_BODY_LEN..=MAX_BODY_LEN).contains(&len) {
        return Err(DecodeError::BadLength(len));
    }
    let total = PREFIX_LEN + len;
    if buf.len() < total {
        return Err(DecodeError::Incomplete(total));
    }
    let stored = u32::from_le_bytes([buf[4], buf[5], buf[6], buf[7]]);
    if super::checksum::crc32c(&buf[PREFIX_LEN..total]) != stored {
        return Err(DecodeError::BadChecksum);
    }
    Ok(total)
}

/// A record borrowed from the bytes it was read from (recovery decodes
/// without allocating).
#[derive(Clone, Copy, Debug)]
pub struct RecordRef<'a> {
    pub lsn: Lsn,
    pub time_ms: u64,
    pub durable_hint: Lsn,
    pub kind: Kind,
    count: usize,
    /// The encoded commands (after the count).
    commands: &'a [u8],
}

impl<'a> RecordRef<'a> {
    /// Number of commands.
    pub fn len(&self) -> usize {
        self.count
    }

    pub fn is_empty(&self) -> bool {
        self.count == 0
    }

    /// Calls `f(db, args)` for each command, reusing `scratch` for the
    /// argument slices. The record was validated by [`decode_ref`].
    pub fn for_each_command<E>(
        &self,
        scratch: &mut Vec<&'a [u8]>,
        mut f: impl FnMut(u32, &[&'a [u8]]) -> Result<(), E>,
    ) -> Result<(), E> {
        let mut pos = 0;
        for _ in 0..self.count {
            scratch.clear();
            let Ok(db) = command_slices(self.commands, &mut pos, scratch) else { return Ok(()) };
            f(db, scratch)?;
        }
        Ok(())
    }

    /// An owned copy.
    pub fn to_owned(&self) -> Record {
        let mut commands = Vec::with_capacity(self.count);
        let mut scratch = Vec::new();
        let _ = self.for_each_command::<()>(&mut scratch, |db, args| {
            commands.push(LoggedCommand { db, args: args.iter().map(|a| a.to_vec()).collect() });
            Ok(())
        });
        Record { lsn: self.lsn, time_ms: self.time_ms, durable_hint: self.durable_hint, kind: self.kind, commands }
    }
}

/// Decodes and validates the record at the start of `buf` without copying;
/// returns it and its total length.
pub fn decode_ref(buf: &[u8]) -> Result<(RecordRef<'_>, usize), DecodeError> {
    let total = check_frame(buf)?;
    let body = &buf[PREFIX_LEN..total];
    let word = |at: usize| -> Result<u64, DecodeError> {
        let bytes: [u8; 8] = body[at..at + 8].try_into().map_err(|_| DecodeError::Malformed("header"))?;
        Ok(u64::from_le_bytes(bytes))
    };
    let (lsn, time_ms, durable_hint) = (word(0)?, word(8)?, word(16)?);
    let kind = match body[24] {
        1 => Kind::Command,
        2 => Kind::Transaction,
        _ => return Err(DecodeError::Malformed("unknown record kind")),
    };
    let mut pos = 25;
    let count = get_varint(body, &mut pos)? as usize;
    if count > body.len() || (kind == Kind::Command && count != 1) {
        return Err(DecodeError::Malformed("command count"));
    }
    let commands = &body[pos..];
    let mut check = 0;
    let mut scratch = Vec::new();
    for _ in 0..count {
        scratch.clear();
        command_slices(commands, &mut check, &mut scratch)?;
    }
    if check != commands.len() {
        return Err(DecodeError::Malformed("trailing bytes"));
    }
    Ok((RecordRef { lsn, time_ms, durable_hint, kind, count, commands }, total))
}

/// Decodes the record at the start of `buf` into an owned value.
pub fn decode(buf: &[u8]) -> Result<(Record, usize), DecodeError> {
    let (rec, total) = decode_ref(buf)?;
    Ok((rec.to_owned(), total))
}

/// Reads one command at `*pos`: its db, and its arguments into `args`.
fn command_slices<'a>(body: &'a [u8], pos: &mut usize, args: &mut Vec<&'a [u8]>) -> Result<u32, DecodeError> {
    let db = u32::try_from(get_varint(body, pos)?).map_err(|_| DecodeError::Malformed("db"))?;
    let argc = get_varint(body, pos)? as usize;
    if argc == 0 || argc > body.len() {
        return Err(DecodeError::Malformed("argument count"));
    }
    for _ in 0..argc {
        let len = get_varint(body, pos)? as usize;
        let end = pos.checked_add(len).filter(|&e| e <= body.len()).ok_or(DecodeError::Malformed("argument"))?;
        args.push(&body[*pos..end]);
        *pos = end;
    }
    Ok(db)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn one(lsn: Lsn, args: &[&[u8]]) -> Vec<u8> {
        let mut out = Vec::new();
        let header = Header { lsn, time_ms: 1234, durable_hint: 0, kind: Kind::Command };
        encode(&mut out, header, 1, |o| put_command(o, 3, args));
        out
    }

    #[test]
    fn round_trip() {
        let buf = one(7, &[b"SET", b"k", b"v"]);
        let (rec, len) = decode(&buf).unwrap();
        assert_eq!(len, buf.len());
        assert_eq!(rec.lsn, 7);
        assert_eq!(rec.time_ms, 1234);
        assert_eq!(
            rec.commands,
            vec![LoggedCommand { db: 3, args: vec![b"SET".to_vec(), b"k".to_vec(), b"v".to_vec()] }]
        );
    }

    #[test]
    fn every_single_byte_flip_is_caught() {
        let buf = one(7, &[b"SET", b"key", b"value"]);
        for i in 0..buf.len() {
            for bit in 0..8 {
                let mut bad = buf.clone();
                bad[i] ^= 1 << bit;
                assert!(decode(&bad).is_err(), "flip at byte {i} bit {bit} went unnoticed");
            }
        }
    }

    #[test]
    fn truncation_is_incomplete_and_zeros_are_invalid() {
        let buf = one(1, &[b"DEL", b"k"]);
        for cut in 0..buf.len() {
            assert!(decode(&buf[..cut]).is_err());
        }
        assert_eq!(decode(&[0u8; 64]).unwrap_err(), DecodeError::BadLength(0));
    }

    #[test]
    fn varints() {
        for v in [0u64, 1, 127, 128, 300, u32::MAX as u64, u64::MAX] {
            let mut out = Vec::new();
            put_varint(&mut out, v);
            let mut pos = 0;
            assert_eq!(get_varint(&out, &mut pos).unwrap(), v);
            assert_eq!(pos, out.len());
        }
    }
}

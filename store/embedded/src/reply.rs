//! Replies: the RESP2 bytes the command layer writes, decoded into [`Reply`]
//! (the shapes are few and small; typed calls narrow them further).

use crate::error::{Error, Result};

/// One decoded reply.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Reply {
    /// A null bulk string or null array (a missing key, a failed NX, ...).
    Nil,
    /// A status reply such as `OK` or `QUEUED`.
    Status(String),
    Int(i64),
    Bulk(Vec<u8>),
    Array(Vec<Reply>),
    /// An error reply; only inside [`Reply::Array`] (a failed command of a
    /// batch). A command's own error reply is returned as [`Error`].
    Error(String),
}

/// Nesting deeper than this is refused (the command layer never writes it).
const MAX_DEPTH: usize = 64;

/// Decodes exactly one reply filling `buf`.
pub(crate) fn decode(buf: &[u8]) -> Result<Reply> {
    let (reply, used) = parse(buf, 0)?;
    if used != buf.len() {
        return Err(malformed(buf));
    }
    Ok(reply)
}

fn malformed(buf: &[u8]) -> Error {
    let shown = &buf[..buf.len().min(64)];
    Error::UnexpectedReply(format!("malformed reply {:?}", String::from_utf8_lossy(shown)))
}

/// Parses one reply at the start of `buf`; returns it and the bytes used.
fn parse(buf: &[u8], depth: usize) -> Result<(Reply, usize)> {
    if depth > MAX_DEPTH {
        return Err(malformed(buf));
    }
    let (line, after) = line(buf)?;
    let Some((&kind, rest)) = line.split_first() else { return Err(malformed(buf)) };
    let text = || String::from_utf8_lossy(rest).into_owned();
    match kind {
        b'+' => Ok((Reply::Status(text()), after)),
        b'-' => Ok((Reply::Error(text()), after)),
        b':' => Ok((Reply::Int(number(rest).ok_or_else(|| malformed(buf))?), after)),
        b'$' => bulk(buf, rest, after),
        b'*' => array(buf, rest, after, depth),
        _ => Err(malformed(buf)),
    }
}

fn bulk(buf: &[u8], len: &[u8], after: usize) -> Result<(Reply, usize)> {
    let len = number(len).ok_or_else(|| malformed(buf))?;
    if len < 0 {
        return Ok((Reply::Nil, after));
    }
    let end = after.checked_add(len as usize).filter(|e| e.checked_add(2).is_some()).ok_or_else(|| malformed(buf))?;
    if buf.get(end..end + 2) != Some(b"\r\n") {
        return Err(malformed(buf));
    }
    Ok((Reply::Bulk(buf[after..end].to_vec()), end + 2))
}

fn array(buf: &[u8], len: &[u8], mut at: usize, depth: usize) -> Result<(Reply, usize)> {
    let len = number(len).ok_or_else(|| malformed(buf))?;
    if len < 0 {
        return Ok((Reply::Nil, at));
    }
    let mut items = Vec::with_capacity((len as usize).min(1024));
    for _ in 0..len {
        let (item, used) = parse(&buf[at..], depth + 1)?;
        items.push(item);
        at += used;
    }
    Ok((Reply::Array(items), at))
}

/// The line at the start of `buf` (without CRLF) and the offset after it.
fn line(buf: &[u8]) -> Result<(&[u8], usize)> {
    let end = buf.windows(2).position(|w| w == b"\r\n").ok_or_else(|| malformed(buf))?;
    Ok((&buf[..end], end + 2))
}

fn number(digits: &[u8]) -> Option<i64> {
    std::str::from_utf8(digits).ok()?.parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn decodes_every_shape() {
        assert_eq!(decode(b"+OK\r\n").expect("status"), Reply::Status("OK".into()));
        assert_eq!(decode(b"-ERR no\r\n").expect("error"), Reply::Error("ERR no".into()));
        assert_eq!(decode(b":-42\r\n").expect("int"), Reply::Int(-42));
        assert_eq!(decode(b"$3\r\na\r\n\r\n").expect("bulk"), Reply::Bulk(b"a\r\n".to_vec()));
        assert_eq!(decode(b"$-1\r\n").expect("nil"), Reply::Nil);
        assert_eq!(decode(b"*-1\r\n").expect("nil array"), Reply::Nil);
        assert_eq!(
            decode(b"*3\r\n:1\r\n$0\r\n\r\n*1\r\n+QUEUED\r\n").expect("array"),
            Reply::Array(vec![Reply::Int(1), Reply::Bulk(vec![]), Reply::Array(vec![Reply::Status("QUEUED".into())])])
        );
    }

    #[test]
    fn refuses_truncated_and_trailing_bytes() {
        assert!(decode(b"$5\r\nab\r\n").is_err());
        assert!(decode(b":1\r\n:2\r\n").is_err());
        assert!(decode(b"*2\r\n:1\r\n").is_err());
        assert!(decode(b"").is_err());
    }
}

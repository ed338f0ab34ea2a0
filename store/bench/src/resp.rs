//! RESP2 on the wire: requests encoded by hand as multibulk arrays, replies parsed from a byte
//! buffer. An incomplete reply is a normal result (`Ok(None)`), not an error.

use std::borrow::Cow;
use std::fmt;

/// One reply from a RESP server (RESP2, plus RESP3's `_` null for tolerance).
#[derive(Clone, PartialEq, Eq)]
pub enum Reply {
    /// A simple string (`+OK` borrows a static `OK`).
    Simple(Cow<'static, [u8]>),
    Error(String),
    Integer(i64),
    /// `None` is the null bulk string (`$-1`).
    Bulk(Option<Vec<u8>>),
    /// `None` is the null array (`*-1`).
    Array(Option<Vec<Reply>>),
}

impl fmt::Debug for Reply {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Reply::Simple(s) => write!(f, "+{}", String::from_utf8_lossy(s)),
            Reply::Error(e) => write!(f, "-{e}"),
            Reply::Integer(n) => write!(f, ":{n}"),
            Reply::Bulk(None) => write!(f, "(nil)"),
            Reply::Bulk(Some(b)) => write!(f, "{:?}", short(b)),
            Reply::Array(None) => write!(f, "(nil array)"),
            Reply::Array(Some(items)) => f.debug_list().entries(items).finish(),
        }
    }
}

/// At most 64 bytes of `bytes`, lossily as text, for messages.
pub fn short(bytes: &[u8]) -> String {
    let text = String::from_utf8_lossy(&bytes[..bytes.len().min(64)]).into_owned();
    if bytes.len() > 64 {
        format!("{text}...({} bytes)", bytes.len())
    } else {
        text
    }
}

/// Bytes that are not a RESP reply.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("protocol error: {0}")]
pub struct ProtocolError(pub String);

/// Appends `args` as a RESP multibulk request.
pub fn encode_request(out: &mut Vec<u8>, args: &[&[u8]]) {
    // One reservation for the whole request: `*N`/`$N` lines of at most 20 digits plus CRLFs.
    out.reserve(24 + args.iter().map(|arg| arg.len() + 24).sum::<usize>());
    push_length_line(out, b'*', args.len());
    for arg in args {
        push_length_line(out, b'$', arg.len());
        out.extend_from_slice(arg);
        out.extend_from_slice(b"\r\n");
    }
}

/// Appends `{kind}{n}\r\n`; one and two digits (nearly every length a driver sends) by hand.
/// (Fixed-size pieces: the compiler writes each with one capacity check and a store.)
fn push_length_line(out: &mut Vec<u8>, kind: u8, n: usize) {
    match n {
        0..=9 => out.extend_from_slice(&[kind, b'0' + n as u8, b'\r', b'\n']),
        10..=99 => out.extend_from_slice(&[kind, b'0' + (n / 10) as u8, b'0' + (n % 10) as u8, b'\r', b'\n']),
        _ => {
            out.push(kind);
            push_decimal(out, n as u64);
            out.extend_from_slice(b"\r\n");
        }
    }
}

fn push_decimal(out: &mut Vec<u8>, n: u64) {
    let mut digits = [0u8; 20];
    let mut i = digits.len();
    let mut n = n;
    loop {
        i -= 1;
        digits[i] = b'0' + (n % 10) as u8;
        n /= 10;
        if n == 0 {
            break;
        }
    }
    out.extend_from_slice(&digits[i..]);
}

/// Parses one reply from the front of `buf`: `Ok(Some((reply, bytes used)))`, `Ok(None)` when
/// `buf` holds only part of a reply.
pub fn parse_reply(buf: &[u8]) -> Result<Option<(Reply, usize)>, ProtocolError> {
    let Some(line_end) = find_crlf(buf, 1) else { return Ok(None) };
    let Some(&kind) = buf.first() else { return Ok(None) };
    let line = &buf[1..line_end];
    let after_line = line_end + 2;
    match kind {
        b'+' => Ok(Some((Reply::Simple(simple(line)), after_line))),
        b'-' => Ok(Some((Reply::Error(String::from_utf8_lossy(line).into_owned()), after_line))),
        b':' => Ok(Some((Reply::Integer(parse_int(line)?), after_line))),
        b'_' => Ok(Some((Reply::Bulk(None), after_line))),
        b'$' => parse_bulk(buf, parse_int(line)?, after_line),
        b'*' => parse_array(buf, parse_int(line)?, after_line),
        other => Err(ProtocolError(format!("unexpected reply type byte {:?}", other as char))),
    }
}

/// A simple string's bytes: `OK` (every SET's reply) without an allocation.
fn simple(line: &[u8]) -> Cow<'static, [u8]> {
    if line == b"OK" {
        Cow::Borrowed(b"OK")
    } else {
        Cow::Owned(line.to_vec())
    }
}

fn parse_bulk(buf: &[u8], len: i64, start: usize) -> Result<Option<(Reply, usize)>, ProtocolError> {
    if len < 0 {
        return Ok(Some((Reply::Bulk(None), start)));
    }
    let len = usize::try_from(len).map_err(|_| ProtocolError(format!("bulk length {len}")))?;
    let end = start + len;
    if buf.len() < end + 2 {
        return Ok(None);
    }
    if &buf[end..end + 2] != b"\r\n" {
        return Err(ProtocolError("bulk string not followed by CRLF".into()));
    }
    Ok(Some((Reply::Bulk(Some(buf[start..end].to_vec())), end + 2)))
}

fn parse_array(buf: &[u8], len: i64, start: usize) -> Result<Option<(Reply, usize)>, ProtocolError> {
    if len < 0 {
        return Ok(Some((Reply::Array(None), start)));
    }
    let mut items = Vec::with_capacity(usize::try_from(len.min(1024)).unwrap_or(0));
    let mut at = start;
    for _ in 0..len {
        match parse_reply(&buf[at..])? {
            Some((item, used)) => {
                items.push(item);
                at += used;
            }
            None => return Ok(None),
        }
    }
    Ok(Some((Reply::Array(Some(items)), at)))
}

fn find_crlf(buf: &[u8], from: usize) -> Option<usize> {
    buf.get(from..)?.windows(2).position(|w| w == b"\r\n").map(|p| p + from)
}

fn parse_int(line: &[u8]) -> Result<i64, ProtocolError> {
    std::str::from_utf8(line)
        .ok()
        .and_then(|s| s.parse().ok())
        .ok_or_else(|| ProtocolError(format!("not an integer: {:?}", short(line))))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse_all(bytes: &[u8]) -> Reply {
        let (reply, used) = parse_reply(bytes).unwrap().unwrap();
        assert_eq!(used, bytes.len());
        reply
    }

    #[test]
    fn encodes_a_multibulk_request() {
        let mut out = Vec::new();
        encode_request(&mut out, &[b"SET", b"k", b""]);
        assert_eq!(out, b"*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$0\r\n\r\n");
        out.clear();
        encode_request(&mut out, &[&[b'x'; 1234][..]]);
        assert!(out.starts_with(b"*1\r\n$1234\r\n"));
    }

    #[test]
    fn length_lines_are_decimal_at_every_digit_boundary() {
        for len in [0usize, 1, 9, 10, 11, 99, 100, 101, 999, 1000, 65_536] {
            let arg = vec![b'x'; len];
            let mut out = Vec::new();
            encode_request(&mut out, &[&arg]);
            let mut expected = format!("*1\r\n${len}\r\n").into_bytes();
            expected.extend_from_slice(&arg);
            expected.extend_from_slice(b"\r\n");
            assert_eq!(out, expected, "length {len}");
        }
    }

    #[test]
    fn parses_every_reply_type() {
        assert_eq!(parse_all(b"+OK\r\n"), Reply::Simple(b"OK"[..].into()));
        assert_eq!(parse_all(b"-ERR bad\r\n"), Reply::Error("ERR bad".into()));
        assert_eq!(parse_all(b":-42\r\n"), Reply::Integer(-42));
        assert_eq!(parse_all(b"$-1\r\n"), Reply::Bulk(None));
        assert_eq!(parse_all(b"_\r\n"), Reply::Bulk(None));
        assert_eq!(parse_all(b"$5\r\nab\r\nc\r\n"), Reply::Bulk(Some(b"ab\r\nc".to_vec())));
        assert_eq!(parse_all(b"*-1\r\n"), Reply::Array(None));
        assert_eq!(
            parse_all(b"*2\r\n:1\r\n$1\r\nx\r\n"),
            Reply::Array(Some(vec![Reply::Integer(1), Reply::Bulk(Some(b"x".to_vec()))]))
        );
    }

    #[test]
    fn an_incomplete_reply_asks_for_more_at_every_cut() {
        let full = b"*2\r\n$3\r\nabc\r\n:7\r\n";
        for cut in 0..full.len() {
            assert_eq!(parse_reply(&full[..cut]), Ok(None), "cut at {cut}");
        }
        assert!(parse_reply(full).unwrap().is_some());
    }

    #[test]
    fn leaves_the_next_reply_in_the_buffer() {
        let (reply, used) = parse_reply(b"+OK\r\n:1\r\n").unwrap().unwrap();
        assert_eq!(reply, Reply::Simple(b"OK"[..].into()));
        assert_eq!(used, 5);
    }

    #[test]
    fn garbage_is_a_protocol_error() {
        assert!(parse_reply(b"?what\r\n").is_err());
        assert!(parse_reply(b":12x\r\n").is_err());
        assert!(parse_reply(b"$3\r\nabcde\r\n").is_err());
    }

    #[test]
    fn agrees_with_the_redis_protocol_crate_on_replies() {
        use redis_protocol::resp2::decode::decode;
        use redis_protocol::resp2::types::OwnedFrame;
        let wire: &[u8] = b"*3\r\n+OK\r\n$-1\r\n*1\r\n:5\r\n";
        let (theirs, their_used) = decode(wire).unwrap().unwrap();
        let (ours, our_used) = parse_reply(wire).unwrap().unwrap();
        assert_eq!(their_used, our_used);
        let expected = OwnedFrame::Array(vec![
            OwnedFrame::SimpleString(b"OK".to_vec()),
            OwnedFrame::Null,
            OwnedFrame::Array(vec![OwnedFrame::Integer(5)]),
        ]);
        assert_eq!(theirs, expected);
        assert_eq!(
            ours,
            Reply::Array(Some(vec![
                Reply::Simple(b"OK"[..].into()),
                Reply::Bulk(None),
                Reply::Array(Some(vec![Reply::Integer(5)]))
            ]))
        );
    }
}

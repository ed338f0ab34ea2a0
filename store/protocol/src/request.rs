//! The RESP request parser.
//!
//! [`parse_request`] looks at the start of a read buffer and either finds one
//! complete request (multibulk `*N\r\n$L\r\n...` or an inline line), reports
//! that more bytes are needed, or reports a protocol error with Redis's exact
//! message. Multibulk arguments are returned as byte ranges into the buffer,
//! so parsing allocates nothing; inline arguments, which may contain quotes
//! and escapes, are decoded into owned storage that is reused between calls.

use std::ops::Range;

use crate::limits::{Limits, UNAUTHENTICATED_MAX_BULK, UNAUTHENTICATED_MAX_MULTIBULK};
use crate::number::parse_i64;

/// Arguments of one parsed request.
#[derive(Debug, Default)]
pub struct Argv {
    ranges: Vec<Range<usize>>,
    inline_args: Vec<Vec<u8>>,
    is_inline: bool,
}

impl Argv {
    /// Number of arguments.
    pub fn len(&self) -> usize {
        if self.is_inline {
            self.inline_args.len()
        } else {
            self.ranges.len()
        }
    }

    /// Whether there are no arguments.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Gives back the storage a request with many arguments left behind
    /// (100,000 arguments keep 1.6 MB of ranges), so that an idle
    /// connection does not hold its largest request's size forever. Call
    /// between batches: the arguments are dropped.
    pub fn release_if_large(&mut self) {
        if self.ranges.capacity() > Self::KEPT_ARGS || self.inline_args.capacity() > Self::KEPT_ARGS {
            *self = Argv::default();
        }
    }

    /// Arguments' storage kept between requests.
    const KEPT_ARGS: usize = 1024;

    /// Fills `out` with the arguments as slices of `buf` (the buffer that was parsed).
    pub fn slices<'a>(&'a self, buf: &'a [u8], out: &mut Vec<&'a [u8]>) {
        out.clear();
        if self.is_inline {
            out.extend(self.inline_args.iter().map(|a| a.as_slice()));
        } else {
            out.extend(self.ranges.iter().map(|r| &buf[r.clone()]));
        }
    }

    fn reset(&mut self) {
        self.ranges.clear();
        self.inline_args.clear();
        self.is_inline = false;
    }
}

/// What [`parse_request`] found at the start of the buffer.
#[derive(Debug, PartialEq, Eq)]
pub enum Parsed {
    /// A whole request of `consumed` bytes; its arguments are in the [`Argv`]
    /// (which may be empty: an empty line or a multibulk count ≤ 0 is skipped).
    Complete { consumed: usize },
    /// The buffer holds only part of a request.
    Incomplete,
}

/// A malformed request. The message is Redis's, byte for byte; after it the
/// connection must be closed, as the stream can no longer be trusted.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ParseError {
    #[error("Protocol error: invalid multibulk length")]
    InvalidMultibulkLength,
    #[error("Protocol error: unauthenticated multibulk length")]
    UnauthenticatedMultibulkLength,
    #[error("Protocol error: invalid bulk length")]
    InvalidBulkLength,
    #[error("Protocol error: unauthenticated bulk length")]
    UnauthenticatedBulkLength,
    #[error("Protocol error: expected '$', got '{}'", char::from(*.0))]
    ExpectedDollar(u8),
    #[error("Protocol error: too big inline request")]
    TooBigInline,
    #[error("Protocol error: too big mbulk count string")]
    TooBigMultibulkCount,
    #[error("Protocol error: too big bulk count string")]
    TooBigBulkCount,
    #[error("Protocol error: unbalanced quotes in request")]
    UnbalancedQuotes,
}

/// Parses one request from the start of `buf` into `argv`.
pub fn parse_request(buf: &[u8], argv: &mut Argv, limits: &Limits) -> Result<Parsed, ParseError> {
    argv.reset();
    match buf.first() {
        None => Ok(Parsed::Incomplete),
        Some(b'*') => parse_multibulk(buf, argv, limits),
        Some(_) => parse_inline(buf, argv, limits),
    }
}

/// Finds the `\r\n` ending the line that starts at `from`; returns the index of `\r`.
fn find_crlf(buf: &[u8], from: usize) -> Option<usize> {
    let mut i = from;
    while let Some(pos) = memchr(b'\r', &buf[i..]) {
        let at = i + pos;
        if at + 1 >= buf.len() {
            return None;
        }
        if buf[at + 1] == b'\n' {
            return Some(at);
        }
        i = at + 1;
    }
    None
}

fn memchr(needle: u8, haystack: &[u8]) -> Option<usize> {
    haystack.iter().position(|&b| b == needle)
}

/// Reads the length line that starts at `from` (just after its `*` or `$`):
/// its value and the index of its `\r`, or `Ok(None)` while the line is
/// incomplete. `too_big` is the error for a line longer than an inline
/// request may be, `invalid` the one for a line that is not a number.
#[inline(always)]
fn length_line(
    buf: &[u8],
    from: usize,
    limits: &Limits,
    too_big: ParseError,
    invalid: ParseError,
) -> Result<Option<(i64, usize)>, ParseError> {
    if let Some(found) = plain_length_line(buf, from) {
        return Ok(Some(found));
    }
    let Some(cr) = find_crlf(buf, from) else {
        if buf.len() - (from - 1) > limits.max_inline_len {
            return Err(too_big);
        }
        return Ok(None);
    };
    parse_i64(&buf[from..cr]).map(|value| Some((value, cr))).ok_or(invalid)
}

/// The common length line, read in one pass: 1 to 18 digits without a
/// leading zero, then `\r\n`. `None` for anything else (the general path
/// then decides, with Redis's errors).
#[inline(always)]
fn plain_length_line(buf: &[u8], from: usize) -> Option<(i64, usize)> {
    let mut value: i64 = 0;
    let mut at = from;
    while let Some(&byte) = buf.get(at) {
        if !byte.is_ascii_digit() {
            break;
        }
        if at - from == 18 {
            return None;
        }
        value = value * 10 + i64::from(byte - b'0');
        at += 1;
    }
    let digits = at - from;
    let plain = digits == 1 || (digits > 1 && buf[from] != b'0');
    (plain && buf.get(at) == Some(&b'\r') && buf.get(at + 1) == Some(&b'\n')).then_some((value, at))
}

fn parse_multibulk(buf: &[u8], argv: &mut Argv, limits: &Limits) -> Result<Parsed, ParseError> {
    let line = length_line(buf, 1, limits, ParseError::TooBigMultibulkCount, ParseError::InvalidMultibulkLength)?;
    let Some((count, cr)) = line else {
        return Ok(Parsed::Incomplete);
    };
    if count > limits.max_multibulk_len as i64 || count > i64::from(i32::MAX) {
        return Err(ParseError::InvalidMultibulkLength);
    }
    if limits.unauthenticated && count > UNAUTHENTICATED_MAX_MULTIBULK as i64 {
        return Err(ParseError::UnauthenticatedMultibulkLength);
    }
    let mut pos = cr + 2;
    if count <= 0 {
        return Ok(Parsed::Complete { consumed: pos });
    }
    argv.ranges.reserve((count as usize).min(1024));
    for _ in 0..count {
        let Some(&first) = buf.get(pos) else {
            return Ok(Parsed::Incomplete);
        };
        if first != b'$' {
            return Err(ParseError::ExpectedDollar(first));
        }
        let line = length_line(buf, pos + 1, limits, ParseError::TooBigBulkCount, ParseError::InvalidBulkLength)?;
        let Some((len, cr)) = line else {
            return Ok(Parsed::Incomplete);
        };
        if len < 0 || len as u64 > limits.max_bulk_len as u64 {
            return Err(ParseError::InvalidBulkLength);
        }
        if limits.unauthenticated && len as usize > UNAUTHENTICATED_MAX_BULK {
            return Err(ParseError::UnauthenticatedBulkLength);
        }
        let start = cr + 2;
        let end = start + len as usize;
        if buf.len() < end + 2 {
            return Ok(Parsed::Incomplete);
        }
        // Redis does not check the two bytes after a bulk either: it skips them.
        argv.ranges.push(start..end);
        pos = end + 2;
    }
    Ok(Parsed::Complete { consumed: pos })
}

fn parse_inline(buf: &[u8], argv: &mut Argv, limits: &Limits) -> Result<Parsed, ParseError> {
    let Some(nl) = memchr(b'\n', buf) else {
        if buf.len() > limits.max_inline_len {
            return Err(ParseError::TooBigInline);
        }
        return Ok(Parsed::Incomplete);
    };
    let mut line = &buf[..nl];
    if line.last() == Some(&b'\r') {
        line = &line[..line.len() - 1];
    }
    argv.is_inline = true;
    split_args(line, &mut argv.inline_args)?;
    Ok(Parsed::Complete { consumed: nl + 1 })
}

fn is_space(b: u8) -> bool {
    matches!(b, b' ' | b'\n' | b'\r' | b'\t' | 0x0b | 0x0c)
}

fn hex_value(b: u8) -> Option<u8> {
    match b {
        b'0'..=b'9' => Some(b - b'0'),
        b'a'..=b'f' => Some(b - b'a' + 10),
        b'A'..=b'F' => Some(b - b'A' + 10),
        _ => None,
    }
}

/// Splits an inline line into arguments the way Redis's `sdssplitargs` does:
/// whitespace separates, `"..."` understands `\n \r \t \b \a \xHH` escapes,
/// `'...'` understands `\'`, and a closing quote must be followed by a space.
pub fn split_args(line: &[u8], out: &mut Vec<Vec<u8>>) -> Result<(), ParseError> {
    let mut i = 0;
    loop {
        while i < line.len() && is_space(line[i]) {
            i += 1;
        }
        if i >= line.len() {
            return Ok(());
        }
        let mut current = Vec::new();
        i = split_one(line, i, &mut current)?;
        out.push(current);
    }
}

/// Reads one token starting at `i`; returns the index after it.
fn split_one(line: &[u8], mut i: usize, current: &mut Vec<u8>) -> Result<usize, ParseError> {
    #[derive(PartialEq)]
    enum Mode {
        Plain,
        Double,
        Single,
    }
    let mut mode = Mode::Plain;
    loop {
        let Some(&c) = line.get(i) else {
            return if mode == Mode::Plain { Ok(i) } else { Err(ParseError::UnbalancedQuotes) };
        };
        match mode {
            Mode::Double => {
                if c == b'\\' && i + 3 < line.len() && line[i + 1] == b'x' {
                    if let (Some(h), Some(l)) = (hex_value(line[i + 2]), hex_value(line[i + 3])) {
                        current.push(h * 16 + l);
                        i += 4;
                        continue;
                    }
                }
                if c == b'\\' && i + 1 < line.len() {
                    current.push(match line[i + 1] {
                        b'n' => b'\n',
                        b'r' => b'\r',
                        b't' => b'\t',
                        b'b' => 0x08,
                        b'a' => 0x07,
                        other => other,
                    });
                    i += 2;
                    continue;
                }
                if c == b'"' {
                    if let Some(&next) = line.get(i + 1) {
                        if !is_space(next) {
                            return Err(ParseError::UnbalancedQuotes);
                        }
                    }
                    return Ok(i + 1);
                }
                current.push(c);
            }
            Mode::Single => {
                if c == b'\\' && line.get(i + 1) == Some(&b'\'') {
                    current.push(b'\'');
                    i += 2;
                    continue;
                }
                if c == b'\'' {
                    if let Some(&next) = line.get(i + 1) {
                        if !is_space(next) {
                            return Err(ParseError::UnbalancedQuotes);
                        }
                    }
                    return Ok(i + 1);
                }
                current.push(c);
            }
            Mode::Plain => match c {
                c if is_space(c) => return Ok(i),
                b'"' => mode = Mode::Double,
                b'\'' => mode = Mode::Single,
                _ => current.push(c),
            },
        }
        i += 1;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_large_request_s_storage_is_given_back_a_small_one_s_kept() {
        let many: Vec<u8> = {
            let mut req = b"*3000\r\n".to_vec();
            for _ in 0..3000 {
                req.extend_from_slice(b"$1\r\nx\r\n");
            }
            req
        };
        let mut argv = Argv::default();
        assert!(matches!(
            parse_request(b"*1\r\n$4\r\nPING\r\n", &mut argv, &Limits::default()),
            Ok(Parsed::Complete { .. })
        ));
        let small = argv.ranges.capacity();
        argv.release_if_large();
        assert_eq!(argv.ranges.capacity(), small);
        assert!(matches!(parse_request(&many, &mut argv, &Limits::default()), Ok(Parsed::Complete { .. })));
        assert_eq!(argv.len(), 3000);
        argv.release_if_large();
        assert_eq!(argv.ranges.capacity(), 0);
    }

    /// A complete length line's value as `length_line` reads it: the
    /// one-pass fast path, else `parse_i64`.
    fn parse_length(s: &[u8]) -> Option<i64> {
        let line = [s, b"\r\n"].concat();
        plain_length_line(&line, 0).map(|(value, _)| value).or_else(|| parse_i64(s))
    }

    /// The one-pass fast path of `length_line` agrees with `parse_i64` everywhere.
    #[test]
    fn parse_length_agrees_with_parse_i64() {
        let fixed: &[&[u8]] = &[
            b"0",
            b"00",
            b"01",
            b"1",
            b"9",
            b"10",
            b"-1",
            b"-0",
            b"+1",
            b" 1",
            b"1 ",
            b"",
            b"12a",
            b"999999999999999999",
            b"1000000000000000000",
            b"9223372036854775807",
            b"9223372036854775808",
            b"-9223372036854775808",
            b"99999999999999999999",
        ];
        for s in fixed {
            assert_eq!(parse_length(s), parse_i64(s), "{:?}", String::from_utf8_lossy(s));
        }
        let mut seed = 0x2545_f491_4f6c_dd1du64;
        for _ in 0..100_000 {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            let len = (seed % 21) as usize;
            let s: Vec<u8> = (0..len).map(|i| b"0123456789-+x"[((seed >> (i * 3 % 60)) % 13) as usize]).collect();
            assert_eq!(parse_length(&s), parse_i64(&s), "{:?}", String::from_utf8_lossy(&s));
        }
    }

    fn parse_all(input: &[u8]) -> Result<Vec<Vec<Vec<u8>>>, ParseError> {
        let mut argv = Argv::default();
        let mut pos = 0;
        let mut out = Vec::new();
        let limits = Limits::default();
        while pos < input.len() {
            match parse_request(&input[pos..], &mut argv, &limits)? {
                Parsed::Incomplete => break,
                Parsed::Complete { consumed } => {
                    let mut s = Vec::new();
                    argv.slices(&input[pos..], &mut s);
                    if !s.is_empty() {
                        out.push(s.iter().map(|a| a.to_vec()).collect());
                    }
                    pos += consumed;
                }
            }
        }
        Ok(out)
    }

    #[test]
    fn multibulk_and_inline() {
        let got = parse_all(b"*2\r\n$3\r\nGET\r\n$1\r\nk\r\nPING\r\nset a \"b c\"\n").unwrap();
        assert_eq!(
            got,
            vec![
                vec![b"GET".to_vec(), b"k".to_vec()],
                vec![b"PING".to_vec()],
                vec![b"set".to_vec(), b"a".to_vec(), b"b c".to_vec()],
            ]
        );
    }

    #[test]
    fn every_prefix_is_incomplete() {
        let input = b"*3\r\n$3\r\nSET\r\n$3\r\nkey\r\n$5\r\nvalue\r\n";
        let mut argv = Argv::default();
        for cut in 0..input.len() {
            let r = parse_request(&input[..cut], &mut argv, &Limits::default()).unwrap();
            assert_eq!(r, Parsed::Incomplete, "cut at {cut}");
        }
    }

    #[test]
    fn errors_have_redis_messages() {
        let e = |s: &[u8]| parse_all(s).unwrap_err().to_string();
        assert_eq!(e(b"*3000000000\r\n"), "Protocol error: invalid multibulk length");
        assert_eq!(e(b"*3\r\n$3\r\nSET\r\n$1\r\nx\r\nfooz\r\n"), "Protocol error: expected '$', got 'f'");
        assert_eq!(e(b"*3\r\n$3\r\nSET\r\n$1\r\nx\r\n$-10\r\n"), "Protocol error: invalid bulk length");
        assert_eq!(e(b"*3\r\n$3\r\nSET\r\n$1\r\nx\r\n$blabla\r\n"), "Protocol error: invalid bulk length");
        assert_eq!(e(b"set \"\"\"test-key\"\"\" x\r\n"), "Protocol error: unbalanced quotes in request");
        assert_eq!(e(&[b'a'; 70000]), "Protocol error: too big inline request");
    }

    #[test]
    fn empty_and_negative_requests_are_skipped() {
        assert_eq!(parse_all(b"\r\n*-10\r\n*0\r\nPING\r\n").unwrap(), vec![vec![b"PING".to_vec()]]);
    }

    #[test]
    fn inline_escapes() {
        let mut out = Vec::new();
        split_args(br#"a "x\x41\n" 'it\'s'"#, &mut out).unwrap();
        assert_eq!(out, vec![b"a".to_vec(), b"xA\n".to_vec(), b"it's".to_vec()]);
    }

    /// Differential test: random multibulk streams decoded by this parser and
    /// by the `redis-protocol` crate must agree, at every split point.
    #[test]
    fn agrees_with_redis_protocol_crate() {
        use rand::{Rng, SeedableRng};
        use redis_protocol::resp2::decode::decode_bytes_mut;
        use redis_protocol::resp2::types::BytesFrame;
        let mut rng = rand::rngs::StdRng::seed_from_u64(7);
        for _ in 0..300 {
            let mut stream = Vec::new();
            let ncmd = rng.gen_range(1..6);
            for _ in 0..ncmd {
                let nargs = rng.gen_range(1..6);
                stream.extend_from_slice(format!("*{nargs}\r\n").as_bytes());
                for _ in 0..nargs {
                    let len = rng.gen_range(0..40);
                    let arg: Vec<u8> = (0..len).map(|_| rng.gen()).collect();
                    stream.extend_from_slice(format!("${len}\r\n").as_bytes());
                    stream.extend_from_slice(&arg);
                    stream.extend_from_slice(b"\r\n");
                }
            }
            let mut oracle = Vec::new();
            let mut bytes = bytes::BytesMut::from(&stream[..]);
            while let Some((frame, _, _)) = decode_bytes_mut(&mut bytes).expect("oracle decodes") {
                let BytesFrame::Array(items) = frame else { panic!("not an array") };
                oracle.push(
                    items
                        .into_iter()
                        .map(|f| match f {
                            BytesFrame::BulkString(b) => b.to_vec(),
                            other => panic!("unexpected {other:?}"),
                        })
                        .collect::<Vec<_>>(),
                );
            }
            assert_eq!(parse_all(&stream).unwrap(), oracle);
            let cut = rng.gen_range(0..stream.len());
            let partial = parse_all(&stream[..cut]).unwrap();
            assert!(partial.len() <= oracle.len() && oracle.starts_with(&partial));
        }
    }
}

//! Reply encoding, straight into the connection's output buffer.
//!
//! One [`ReplyWriter`] method per RESP3 type; under RESP2 each falls back to
//! the encoding Redis 7.0 uses (maps become flat arrays, doubles become bulk
//! strings, booleans become integers, null becomes a null bulk or array).

use crate::number::format_f64_reply;

/// The protocol a connection speaks (`HELLO 2|3`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum ProtocolVersion {
    #[default]
    Resp2,
    Resp3,
}

/// Writes replies into a byte buffer.
#[derive(Debug)]
pub struct ReplyWriter<'a> {
    out: &'a mut Vec<u8>,
    version: ProtocolVersion,
    /// Set by [`ReplyWriter::error`]: the first word of the last error written
    /// (for error statistics), or `None` when no error was written.
    last_error_code: Option<ErrorCode>,
    /// The last error was counted in the error statistics where it arose
    /// (a script's error that a command inside it replied).
    last_error_counted: bool,
}

/// The first word of an error reply (`ERR`, `WRONGTYPE`, ...), kept inline.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ErrorCode {
    bytes: [u8; 32],
    len: u8,
}

impl ErrorCode {
    /// The code of error message `message`: its first word.
    pub fn of(message: &str) -> Self {
        let word = message.split(' ').next().unwrap_or("ERR");
        let mut bytes = [0u8; 32];
        let len = word.len().min(32);
        bytes[..len].copy_from_slice(&word.as_bytes()[..len]);
        ErrorCode { bytes, len: len as u8 }
    }

    /// The code as text.
    pub fn as_str(&self) -> &str {
        std::str::from_utf8(&self.bytes[..self.len as usize]).unwrap_or("ERR")
    }
}

impl<'a> ReplyWriter<'a> {
    pub fn new(out: &'a mut Vec<u8>, version: ProtocolVersion) -> Self {
        ReplyWriter { out, version, last_error_code: None, last_error_counted: false }
    }

    pub fn version(&self) -> ProtocolVersion {
        self.version
    }

    /// Switches protocol (HELLO, RESET); later replies use the new one.
    pub fn set_version(&mut self, version: ProtocolVersion) {
        self.version = version;
    }

    pub fn is_resp3(&self) -> bool {
        self.version == ProtocolVersion::Resp3
    }

    /// The buffer being written (for callers that splice pre-encoded bytes).
    pub fn buffer(&mut self) -> &mut Vec<u8> {
        self.out
    }

    /// Takes the error code recorded since the last call.
    pub fn take_error_code(&mut self) -> Option<ErrorCode> {
        self.last_error_counted = false;
        self.last_error_code.take()
    }

    /// Takes the error recorded since the last call, and whether it was
    /// counted in the statistics already ([`ReplyWriter::note_error`]).
    pub fn take_error(&mut self) -> Option<(ErrorCode, bool)> {
        let counted = std::mem::take(&mut self.last_error_counted);
        self.last_error_code.take().map(|code| (code, counted))
    }

    /// Records an error written as raw bytes (a script's reply), as
    /// [`ReplyWriter::error`] would have; `counted`: its statistics were
    /// updated where it arose.
    pub fn note_error(&mut self, code: ErrorCode, counted: bool) {
        self.last_error_code = Some(code);
        self.last_error_counted = counted;
    }

    fn line(&mut self, prefix: u8, body: &[u8]) {
        self.out.push(prefix);
        self.out.extend_from_slice(body);
        self.out.extend_from_slice(b"\r\n");
    }

    fn header(&mut self, prefix: u8, n: i64) {
        let mut buf = itoa::Buffer::new();
        self.line(prefix, buf.format(n).as_bytes());
    }

    /// `+OK`-style status.
    pub fn simple(&mut self, s: &str) {
        self.line(b'+', s.as_bytes());
    }

    pub fn ok(&mut self) {
        self.out.extend_from_slice(b"+OK\r\n");
    }

    /// An error. `message` starts with its code (`ERR ...`, `WRONGTYPE ...`);
    /// newlines are replaced by spaces as Redis does, so the stream stays valid.
    pub fn error(&mut self, message: &str) {
        self.last_error_code = Some(ErrorCode::of(message));
        self.last_error_counted = false;
        self.out.push(b'-');
        self.out.extend(message.bytes().map(|b| if b == b'\r' || b == b'\n' { b' ' } else { b }));
        self.out.extend_from_slice(b"\r\n");
    }

    pub fn int(&mut self, n: i64) {
        self.header(b':', n);
    }

    pub fn bulk(&mut self, data: &[u8]) {
        self.header(b'$', data.len() as i64);
        self.out.extend_from_slice(data);
        self.out.extend_from_slice(b"\r\n");
    }

    /// A bulk string holding the decimal form of `n`.
    pub fn bulk_int(&mut self, n: i64) {
        let mut buf = itoa::Buffer::new();
        self.bulk(buf.format(n).as_bytes());
    }

    /// The null reply for a missing string (`$-1` in RESP2).
    pub fn null_bulk(&mut self) {
        match self.version {
            ProtocolVersion::Resp2 => self.out.extend_from_slice(b"$-1\r\n"),
            ProtocolVersion::Resp3 => self.out.extend_from_slice(b"_\r\n"),
        }
    }

    /// The null reply for a missing aggregate (`*-1` in RESP2).
    pub fn null_array(&mut self) {
        match self.version {
            ProtocolVersion::Resp2 => self.out.extend_from_slice(b"*-1\r\n"),
            ProtocolVersion::Resp3 => self.out.extend_from_slice(b"_\r\n"),
        }
    }

    pub fn array(&mut self, len: usize) {
        self.header(b'*', len as i64);
    }

    /// A map of `len` pairs (a flat array of `2 * len` items in RESP2).
    pub fn map(&mut self, len: usize) {
        match self.version {
            ProtocolVersion::Resp2 => self.header(b'*', 2 * len as i64),
            ProtocolVersion::Resp3 => self.header(b'%', len as i64),
        }
    }

    /// A set (an array in RESP2).
    pub fn set(&mut self, len: usize) {
        match self.version {
            ProtocolVersion::Resp2 => self.header(b'*', len as i64),
            ProtocolVersion::Resp3 => self.header(b'~', len as i64),
        }
    }

    /// A push message (an array in RESP2).
    pub fn push(&mut self, len: usize) {
        match self.version {
            ProtocolVersion::Resp2 => self.header(b'*', len as i64),
            ProtocolVersion::Resp3 => self.header(b'>', len as i64),
        }
    }

    /// An attribute map (RESP3 only; callers skip it under RESP2).
    pub fn attribute(&mut self, len: usize) {
        self.header(b'|', len as i64);
    }

    pub fn double(&mut self, value: f64) {
        let mut text = Vec::with_capacity(24);
        format_f64_reply(value, &mut text);
        match self.version {
            ProtocolVersion::Resp2 => self.bulk(&text),
            ProtocolVersion::Resp3 => self.line(b',', &text),
        }
    }

    pub fn boolean(&mut self, value: bool) {
        match self.version {
            ProtocolVersion::Resp2 => self.int(i64::from(value)),
            ProtocolVersion::Resp3 => self.out.extend_from_slice(if value { b"#t\r\n" } else { b"#f\r\n" }),
        }
    }

    /// A big number given as decimal text (a bulk string in RESP2).
    pub fn big_number(&mut self, digits: &str) {
        match self.version {
            ProtocolVersion::Resp2 => self.bulk(digits.as_bytes()),
            ProtocolVersion::Resp3 => self.line(b'(', digits.as_bytes()),
        }
    }

    /// Verbatim text with a three-letter format such as `txt` (a bulk string in RESP2).
    pub fn verbatim(&mut self, format: &str, text: &[u8]) {
        match self.version {
            ProtocolVersion::Resp2 => self.bulk(text),
            ProtocolVersion::Resp3 => {
                self.header(b'=', (text.len() + 4) as i64);
                self.out.extend_from_slice(format.as_bytes());
                self.out.push(b':');
                self.out.extend_from_slice(text);
                self.out.extend_from_slice(b"\r\n");
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn encode(version: ProtocolVersion, f: impl FnOnce(&mut ReplyWriter)) -> String {
        let mut out = Vec::new();
        f(&mut ReplyWriter::new(&mut out, version));
        String::from_utf8(out).unwrap()
    }

    #[test]
    fn resp2_fallbacks() {
        use ProtocolVersion::*;
        assert_eq!(encode(Resp2, |w| w.null_bulk()), "$-1\r\n");
        assert_eq!(encode(Resp3, |w| w.null_bulk()), "_\r\n");
        assert_eq!(encode(Resp2, |w| w.map(2)), "*4\r\n");
        assert_eq!(encode(Resp3, |w| w.map(2)), "%2\r\n");
        assert_eq!(encode(Resp2, |w| w.double(1.5)), "$3\r\n1.5\r\n");
        assert_eq!(encode(Resp3, |w| w.double(1.5)), ",1.5\r\n");
        assert_eq!(encode(Resp2, |w| w.boolean(true)), ":1\r\n");
        assert_eq!(encode(Resp3, |w| w.verbatim("txt", b"hi")), "=6\r\ntxt:hi\r\n");
        assert_eq!(encode(Resp2, |w| w.error("ERR a\r\nb")), "-ERR a  b\r\n");
    }
}

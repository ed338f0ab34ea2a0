//! Stream entry IDs: `<ms>-<seq>`, two unsigned 64-bit numbers ordered as one
//! 128-bit number, and their parsing with Redis's exact rules.

use std::fmt;

/// A stream entry ID. The derived order (ms, then seq) is the stream order.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct StreamId {
    pub ms: u64,
    pub seq: u64,
}

impl StreamId {
    pub const MIN: StreamId = StreamId { ms: 0, seq: 0 };
    pub const MAX: StreamId = StreamId { ms: u64::MAX, seq: u64::MAX };

    pub const fn new(ms: u64, seq: u64) -> StreamId {
        StreamId { ms, seq }
    }

    pub fn is_zero(self) -> bool {
        self == StreamId::MIN
    }

    /// The next ID, or `None` after the last possible one.
    pub fn next(self) -> Option<StreamId> {
        match (self.ms, self.seq) {
            (u64::MAX, u64::MAX) => None,
            (ms, u64::MAX) => Some(StreamId::new(ms + 1, 0)),
            (ms, seq) => Some(StreamId::new(ms, seq + 1)),
        }
    }

    /// The previous ID, or `None` before 0-0.
    pub fn prev(self) -> Option<StreamId> {
        match (self.ms, self.seq) {
            (0, 0) => None,
            (ms, 0) => Some(StreamId::new(ms - 1, u64::MAX)),
            (ms, seq) => Some(StreamId::new(ms, seq - 1)),
        }
    }

    /// The ID as 16 big-endian bytes (the radix tree key Redis uses).
    pub fn to_be_bytes(self) -> [u8; 16] {
        let mut out = [0u8; 16];
        out[..8].copy_from_slice(&self.ms.to_be_bytes());
        out[8..].copy_from_slice(&self.seq.to_be_bytes());
        out
    }

    /// Formats the ID as `<ms>-<seq>` without allocating.
    pub fn with_text<R>(self, f: impl FnOnce(&[u8]) -> R) -> R {
        let mut buf = [0u8; 41];
        let mut ms = itoa::Buffer::new();
        let a = ms.format(self.ms).as_bytes();
        buf[..a.len()].copy_from_slice(a);
        buf[a.len()] = b'-';
        let mut seq = itoa::Buffer::new();
        let b = seq.format(self.seq).as_bytes();
        let end = a.len() + 1 + b.len();
        buf[a.len() + 1..end].copy_from_slice(b);
        f(&buf[..end])
    }
}

impl fmt::Display for StreamId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}-{}", self.ms, self.seq)
    }
}

/// What an ID argument said about its sequence part.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SeqSpec {
    /// `<ms>-<seq>` (or `-`/`+`).
    Given,
    /// `<ms>` alone: the caller's default sequence was used.
    Missing,
    /// `<ms>-*` (XADD only): the sequence is to be generated.
    Auto,
}

/// How an ID argument is read.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ParseRules {
    /// Sequence used for `<ms>` alone.
    pub missing_seq: u64,
    /// Refuse `-` and `+`.
    pub strict: bool,
    /// Accept `<ms>-*`.
    pub allow_auto_seq: bool,
}

impl ParseRules {
    /// `-` and `+` allowed; `<ms>` alone means `<ms>-<missing_seq>`.
    pub const fn lenient(missing_seq: u64) -> ParseRules {
        ParseRules { missing_seq, strict: false, allow_auto_seq: false }
    }

    /// `-` and `+` refused; `<ms>` alone means `<ms>-0`.
    pub const STRICT: ParseRules = ParseRules { missing_seq: 0, strict: true, allow_auto_seq: false };

    /// XADD's ID argument: strict, and `<ms>-*` accepted.
    pub const XADD: ParseRules = ParseRules { missing_seq: 0, strict: true, allow_auto_seq: true };
}

/// Parses an ID argument as Redis's `streamGenericParseIDOrReply` does.
/// `None` means "Invalid stream ID specified as stream command argument".
pub fn parse_id(arg: &[u8], rules: ParseRules) -> Option<(StreamId, SeqSpec)> {
    // Redis copies the argument into a 128-byte C buffer: longer is invalid,
    // and an embedded NUL ends the text.
    if arg.len() > 127 {
        return None;
    }
    let arg = arg.iter().position(|&b| b == 0).map_or(arg, |nul| &arg[..nul]);
    match arg {
        b"-" | b"+" if rules.strict => return None,
        b"-" => return Some((StreamId::MIN, SeqSpec::Given)),
        b"+" => return Some((StreamId::MAX, SeqSpec::Given)),
        _ => {}
    }
    let (ms_text, seq_text) = match arg.iter().position(|&b| b == b'-') {
        Some(dash) => (&arg[..dash], Some(&arg[dash + 1..])),
        None => (arg, None),
    };
    let ms = parse_u64_like_redis(ms_text)?;
    match seq_text {
        None => Some((StreamId::new(ms, rules.missing_seq), SeqSpec::Missing)),
        Some(b"*") if rules.allow_auto_seq => Some((StreamId::new(ms, 0), SeqSpec::Auto)),
        Some(seq) => Some((StreamId::new(ms, parse_u64_like_redis(seq)?), SeqSpec::Given)),
    }
}

/// Redis's `string2ull`: a canonical `long long` that is not negative, or
/// else whatever C's `strtoull` accepts in full (leading spaces, a sign, leading
/// zeros; a `-` negates modulo 2^64), refusing overflow and empty text.
pub fn parse_u64_like_redis(text: &[u8]) -> Option<u64> {
    if let Some(n) = crate::number::parse_i64(text) {
        return u64::try_from(n).ok();
    }
    let start = text.iter().position(|b| !matches!(b, b' ' | b'\t' | b'\n' | b'\x0b' | b'\x0c' | b'\r'))?;
    let mut rest = &text[start..];
    let mut negative = false;
    if let Some((&sign, tail)) = rest.split_first() {
        if sign == b'+' || sign == b'-' {
            negative = sign == b'-';
            rest = tail;
        }
    }
    if rest.is_empty() || !rest.iter().all(u8::is_ascii_digit) {
        return None;
    }
    let mut value: u64 = 0;
    for &d in rest {
        value = value.checked_mul(10)?.checked_add(u64::from(d - b'0'))?;
    }
    Some(if negative { value.wrapping_neg() } else { value })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn p(s: &str, rules: ParseRules) -> Option<(StreamId, SeqSpec)> {
        parse_id(s.as_bytes(), rules)
    }

    #[test]
    fn parses_forms() {
        let lenient = ParseRules::lenient(u64::MAX);
        assert_eq!(p("-", lenient), Some((StreamId::MIN, SeqSpec::Given)));
        assert_eq!(p("+", lenient), Some((StreamId::MAX, SeqSpec::Given)));
        assert_eq!(p("5", lenient), Some((StreamId::new(5, u64::MAX), SeqSpec::Missing)));
        assert_eq!(p("5-3", lenient), Some((StreamId::new(5, 3), SeqSpec::Given)));
        assert_eq!(p("-", ParseRules::STRICT), None);
        assert_eq!(p("5-*", ParseRules::STRICT), None);
        assert_eq!(p("5-*", ParseRules::XADD), Some((StreamId::new(5, 0), SeqSpec::Auto)));
        assert_eq!(
            p("18446744073709551615-18446744073709551615", ParseRules::STRICT),
            Some((StreamId::MAX, SeqSpec::Given))
        );
        assert_eq!(p("18446744073709551616", ParseRules::STRICT), None);
        assert_eq!(p("abc", ParseRules::STRICT), None);
        assert_eq!(p("1-2-3", ParseRules::STRICT), None);
        assert_eq!(p("", ParseRules::STRICT), None);
        assert_eq!(p("-5", ParseRules::STRICT), None);
    }

    #[test]
    fn strtoull_quirks() {
        assert_eq!(parse_u64_like_redis(b"007"), Some(7));
        assert_eq!(parse_u64_like_redis(b" +7"), Some(7));
        assert_eq!(parse_u64_like_redis(b"-5"), None);
        assert_eq!(parse_u64_like_redis(b"-18446744073709551615"), Some(1));
        assert_eq!(parse_u64_like_redis(b"7 "), None);
        assert_eq!(parse_u64_like_redis(b" "), None);
    }

    #[test]
    fn successor_and_predecessor() {
        assert_eq!(StreamId::new(1, u64::MAX).next(), Some(StreamId::new(2, 0)));
        assert_eq!(StreamId::MAX.next(), None);
        assert_eq!(StreamId::new(2, 0).prev(), Some(StreamId::new(1, u64::MAX)));
        assert_eq!(StreamId::MIN.prev(), None);
        assert_eq!(StreamId::new(12, 34).with_text(|t| t.to_vec()), b"12-34".to_vec());
        assert_eq!(StreamId::MAX.to_string().len(), 41);
    }
}

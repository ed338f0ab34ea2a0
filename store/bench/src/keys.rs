//! Key ownership and self-describing values.
//!
//! Every connection owns its keys: `{prefix}:{family}:{conn}:{k}` for `k` in `0..keys_per_conn`,
//! with one family per operation type (`s` strings for SET/GET, `n` INCR counters, `l` lists,
//! `h` hashes). No other connection touches them, so the connection knows exactly what each of
//! its replies must be, even with pipelining. The prefix carries a run id, so runs never collide.
//!
//! A value is `{version:x}.{conn:x}.{k:x}.` followed by filler up to the value size (never
//! shorter than that header): the version is the count of writes to that key so far, which lets
//! the durability audit tell an older value (a lost write) from a garbled one.

/// Key families, one per kind of data.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Family {
    Strings,
    Counters,
    Lists,
    Hashes,
}

impl Family {
    pub fn tag(self) -> u8 {
        match self {
            Family::Strings => b's',
            Family::Counters => b'n',
            Family::Lists => b'l',
            Family::Hashes => b'h',
        }
    }

    pub fn from_tag(tag: u8) -> Option<Family> {
        [Family::Strings, Family::Counters, Family::Lists, Family::Hashes].into_iter().find(|f| f.tag() == tag)
    }
}

/// Fields per hash key: hash key `k / HASH_FIELDS` holds field `k % HASH_FIELDS`.
pub const HASH_FIELDS: u64 = 16;

/// Names keys and builds values for one run.
#[derive(Debug, Clone)]
pub struct KeyNamer {
    pub prefix: String,
    pub value_size: usize,
}

impl KeyNamer {
    /// Writes the key of `(family, conn, k)` into `out` (cleared first).
    pub fn key(&self, out: &mut Vec<u8>, family: Family, conn: u32, k: u64) {
        self.stem(out, family, conn);
        Self::finish_key(out, family, k);
    }

    /// Writes the part of `(family, conn, ·)`'s keys that does not depend on `k`,
    /// `{prefix}:{family}:{conn}:`, into `out` (cleared first). A connection keeps its stems and
    /// appends [`KeyNamer::finish_key`] to a copy, instead of naming every key from scratch.
    pub fn stem(&self, out: &mut Vec<u8>, family: Family, conn: u32) {
        out.clear();
        // Pushed piece by piece: `write!` through `fmt` cost a few percent of the
        // driver's CPU per request (profile in docs/bench.md).
        out.extend_from_slice(self.prefix.as_bytes());
        out.extend_from_slice(&[b':', family.tag(), b':']);
        out.extend_from_slice(itoa::Buffer::new().format(conn).as_bytes());
        out.push(b':');
    }

    /// Appends the `k` part of a key to its [`KeyNamer::stem`].
    pub fn finish_key(out: &mut Vec<u8>, family: Family, k: u64) {
        let k = if family == Family::Hashes { k / HASH_FIELDS } else { k };
        out.extend_from_slice(itoa::Buffer::new().format(k).as_bytes());
    }

    /// Writes the hash field of key index `k` into `out` (cleared first).
    pub fn field(out: &mut Vec<u8>, k: u64) {
        out.clear();
        out.push(b'f');
        out.extend_from_slice(itoa::Buffer::new().format(k % HASH_FIELDS).as_bytes());
    }

    /// Writes the value of the `version`th write of `(conn, k)` into `out` (cleared first).
    pub fn value(&self, out: &mut Vec<u8>, conn: u32, k: u64, version: u64) {
        out.clear();
        // By hand rather than `write!` (`core::fmt` was ~4% of a pipelined SET's CPU), and the
        // header assembled on the stack and appended in one piece.
        let mut header = [0u8; HEADER_MAX];
        let mut at = put_hex(&mut header, 0, version);
        at = put_hex(&mut header, at, u64::from(conn));
        at = put_hex(&mut header, at, k);
        out.extend_from_slice(&header[..at]);
        push_filler(out, version, self.value_size);
    }
}

/// The longest value header: three 16-digit hex numbers, each followed by a `.`.
const HEADER_MAX: usize = 3 * 17;

/// Writes `n` in lowercase hex (without leading zeros, `0` for zero) and a `.` into `buf` from
/// `at`; returns where the next piece goes. Called at most three times per header, so the 17
/// bytes it may write always fit.
fn put_hex(buf: &mut [u8; HEADER_MAX], at: usize, n: u64) -> usize {
    const DIGITS: &[u8; 16] = b"0123456789abcdef";
    let digits = (64 - n.leading_zeros()).div_ceil(4).max(1) as usize;
    for (i, slot) in buf[at..at + digits].iter_mut().enumerate() {
        *slot = DIGITS[((n >> ((digits - 1 - i) * 4)) & 0xf) as usize];
    }
    buf[at + digits] = b'.';
    at + digits + 1
}

/// Pads `out` to `size` bytes with letters: the byte at index `i` is `'a' + (version + i) % 26`.
fn push_filler(out: &mut Vec<u8>, version: u64, size: usize) {
    const LETTERS: &[u8; 52] = b"abcdefghijklmnopqrstuvwxyzabcdefghijklmnopqrstuvwxyz";
    while out.len() < size {
        // One period of the alphabet starting at the letter this index needs.
        let first = ((version % 26) as usize + out.len() % 26) % 26;
        let take = (size - out.len()).min(26);
        out.extend_from_slice(&LETTERS[first..first + take]);
    }
}

/// The `(version, conn, k)` a value claims to be, if it has the shape of one.
pub fn parse_value(value: &[u8]) -> Option<(u64, u32, u64)> {
    let mut parts = value.splitn(4, |&b| b == b'.');
    let hex = |p: Option<&[u8]>| std::str::from_utf8(p?).ok().and_then(|s| u64::from_str_radix(s, 16).ok());
    let version = hex(parts.next())?;
    let conn = u32::try_from(hex(parts.next())?).ok()?;
    let k = hex(parts.next())?;
    parts.next()?;
    Some((version, conn, k))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn namer(size: usize) -> KeyNamer {
        KeyNamer { prefix: "cb1".into(), value_size: size }
    }

    #[test]
    fn keys_name_the_family_connection_and_index() {
        let mut out = Vec::new();
        namer(8).key(&mut out, Family::Strings, 3, 17);
        assert_eq!(out, b"cb1:s:3:17");
        namer(8).key(&mut out, Family::Hashes, 3, 17);
        assert_eq!(out, b"cb1:h:3:1");
        KeyNamer::field(&mut out, 17);
        assert_eq!(out, b"f1");
    }

    #[test]
    fn values_have_the_requested_size_and_describe_themselves() {
        let mut out = Vec::new();
        namer(256).value(&mut out, 7, 300, 42);
        assert_eq!(out.len(), 256);
        assert!(out.starts_with(b"2a.7.12c."));
        assert_eq!(parse_value(&out), Some((42, 7, 300)));
        namer(3).value(&mut out, 7, 300, 42);
        assert_eq!(out, b"2a.7.12c.", "never shorter than the header");
        let mut other = Vec::new();
        namer(256).value(&mut other, 7, 300, 43);
        namer(256).value(&mut out, 7, 300, 42);
        assert_ne!(out, other);
    }

    #[test]
    fn values_match_the_formatted_reference_byte_for_byte() {
        use std::io::Write;
        let reference = |size: usize, conn: u32, k: u64, version: u64| {
            let mut out = Vec::new();
            write!(out, "{version:x}.{conn:x}.{k:x}.").unwrap();
            let header = out.len();
            for i in header..size.max(header) {
                out.push(b'a' + ((version as usize + i) % 26) as u8);
            }
            out
        };
        let mut out = Vec::new();
        for size in [1, 9, 10, 32, 37, 100, 1000] {
            for (conn, k, version) in [(0, 0, 1), (7, 300, 42), (u32::MAX, u64::MAX, 1 << 40), (3, 25, 26)] {
                namer(size).value(&mut out, conn, k, version);
                assert_eq!(out, reference(size, conn, k, version), "size {size} conn {conn} k {k} v {version}");
            }
        }
    }

    #[test]
    fn foreign_values_do_not_parse() {
        assert_eq!(parse_value(b"hello"), None);
        assert_eq!(parse_value(b"zz.1.2.xx"), None);
        assert_eq!(parse_value(b"1.2.3"), None);
    }
}

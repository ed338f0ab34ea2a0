//! A listpack: byte strings packed one after another in a single buffer,
//! the compact encoding of small hashes (Redis's `listpack`).
//!
//! # Layout
//!
//! ```text
//! buf: [len varint][bytes][len varint][bytes]...
//! ```
//!
//! Each string is its length as an unsigned LEB128 varint (one byte below
//! 128) followed by its bytes. A hash stores field, value, field, value...
//! Lookups walk the buffer (O(n), as Redis does below its listpack limits).
//! The buffer is a boxed slice of its exact size (a write reallocates it, as
//! Redis's listpack does), since small collections are many.

/// Strings packed in one buffer.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Listpack {
    buf: Box<[u8]>,
    /// Number of strings.
    count: u32,
}

/// Where one string sits in the buffer: `start..end` covers its header and
/// bytes, `data` where its bytes begin.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Span {
    pub start: usize,
    pub data: usize,
    pub end: usize,
}

impl Listpack {
    /// Number of strings.
    pub fn count(&self) -> usize {
        self.count as usize
    }

    /// Bytes of the buffer.
    pub fn heap_bytes(&self) -> usize {
        self.buf.len()
    }

    /// Edits the buffer as a vector, then stores it back at its exact size.
    fn edit(&mut self, f: impl FnOnce(&mut Vec<u8>)) {
        let mut buf = std::mem::take(&mut self.buf).into_vec();
        f(&mut buf);
        self.buf = buf.into_boxed_slice();
    }

    /// Appends a string.
    pub fn push(&mut self, s: &[u8]) {
        let mut header = [0u8; 10];
        let n = encode_len(s.len(), &mut header);
        self.edit(|buf| {
            buf.reserve_exact(n + s.len());
            buf.extend_from_slice(&header[..n]);
            buf.extend_from_slice(s);
        });
        self.count += 1;
    }

    /// The string whose header starts at `start`.
    pub fn span_at(&self, start: usize) -> Span {
        let (len, n) = decode_len(&self.buf[start..]);
        Span { start, data: start + n, end: start + n + len }
    }

    /// The bytes of a span.
    pub fn bytes(&self, span: Span) -> &[u8] {
        &self.buf[span.data..span.end]
    }

    /// Iterates over the strings with their spans.
    pub fn spans(&self) -> Spans<'_> {
        Spans { lp: self, pos: 0 }
    }

    /// Iterates over the strings.
    pub fn iter(&self) -> impl Iterator<Item = &[u8]> + '_ {
        self.spans().map(|span| self.bytes(span))
    }

    /// Replaces the string at `span` with `s`.
    pub fn replace(&mut self, span: Span, s: &[u8]) {
        let mut header = [0u8; 10];
        let n = encode_len(s.len(), &mut header);
        let new_len = n + s.len();
        let old_len = span.end - span.start;
        if new_len == old_len {
            self.buf[span.start..span.start + n].copy_from_slice(&header[..n]);
            self.buf[span.start + n..span.end].copy_from_slice(s);
            return;
        }
        self.edit(|buf| {
            buf.reserve_exact(new_len.saturating_sub(old_len));
            buf.splice(span.start..span.end, header[..n].iter().chain(s.iter()).copied());
        });
    }

    /// Removes the `strings` strings found in `start..end`.
    pub fn remove_range(&mut self, start: usize, end: usize, strings: usize) {
        self.edit(|buf| {
            buf.drain(start..end);
        });
        self.count -= strings as u32;
    }
}

/// Iterator over the spans of a listpack.
#[derive(Debug, Clone)]
pub struct Spans<'a> {
    lp: &'a Listpack,
    pos: usize,
}

impl Iterator for Spans<'_> {
    type Item = Span;

    fn next(&mut self) -> Option<Span> {
        if self.pos >= self.lp.buf.len() {
            return None;
        }
        let span = self.lp.span_at(self.pos);
        self.pos = span.end;
        Some(span)
    }
}

/// Writes `len` as a LEB128 varint; returns the bytes used.
fn encode_len(mut len: usize, out: &mut [u8; 10]) -> usize {
    let mut i = 0;
    loop {
        let byte = (len & 0x7f) as u8;
        len >>= 7;
        if len == 0 {
            out[i] = byte;
            return i + 1;
        }
        out[i] = byte | 0x80;
        i += 1;
    }
}

/// Reads a LEB128 varint; returns the value and the bytes used. The buffer
/// is only ever written by [`encode_len`], so it is well formed.
fn decode_len(buf: &[u8]) -> (usize, usize) {
    let mut value = 0usize;
    let mut shift = 0;
    for (i, &byte) in buf.iter().enumerate() {
        value |= usize::from(byte & 0x7f) << shift;
        if byte & 0x80 == 0 {
            return (value, i + 1);
        }
        shift += 7;
    }
    debug_assert!(false, "truncated listpack header");
    (0, buf.len())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn push_iterate_replace_remove() {
        let mut lp = Listpack::default();
        let long = vec![b'x'; 300];
        lp.push(b"a");
        lp.push(&long);
        lp.push(b"");
        assert_eq!(lp.count(), 3);
        let all: Vec<&[u8]> = lp.iter().collect();
        assert_eq!(all, vec![&b"a"[..], &long[..], &b""[..]]);
        let second = lp.spans().nth(1).expect("second");
        lp.replace(second, b"short");
        assert_eq!(lp.iter().nth(1), Some(&b"short"[..]));
        let first = lp.spans().next().expect("first");
        let second = lp.spans().nth(1).expect("second");
        lp.remove_range(first.start, second.end, 2);
        assert_eq!(lp.count(), 1);
        assert_eq!(lp.iter().collect::<Vec<_>>(), vec![&b""[..]]);
    }

    #[test]
    fn varint_roundtrip() {
        for len in [0usize, 1, 127, 128, 16_383, 16_384, 1 << 30] {
            let mut buf = [0u8; 10];
            let n = encode_len(len, &mut buf);
            assert_eq!(decode_len(&buf[..n]), (len, n));
        }
    }
}

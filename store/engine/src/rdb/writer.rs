//! Writing the RDB primitives of a payload body as Redis 7.0 writes them:
//! lengths (`rdbSaveLen`), strings (`rdbSaveRawString`: integer-encoded when
//! short and canonical, otherwise verbatim: Cairn does not LZF-compress),
//! binary doubles and millisecond times.

/// Longest string `rdbSaveRawString` tries to store as an integer.
const MAX_INT_ENCODED_LEN: usize = 11;

/// A growing payload body.
#[derive(Debug, Default)]
pub struct Writer {
    pub out: Vec<u8>,
}

impl Writer {
    pub fn new() -> Self {
        Writer::default()
    }

    pub fn u8(&mut self, b: u8) {
        self.out.push(b);
    }

    /// An RDB length in its shortest form.
    pub fn len(&mut self, n: u64) {
        if n < 1 << 6 {
            self.out.push(n as u8);
        } else if n < 1 << 14 {
            self.out.push(0x40 | (n >> 8) as u8);
            self.out.push(n as u8);
        } else if n <= u32::MAX as u64 {
            self.out.push(super::reader::LEN_32BIT);
            self.out.extend_from_slice(&(n as u32).to_be_bytes());
        } else {
            self.out.push(super::reader::LEN_64BIT);
            self.out.extend_from_slice(&n.to_be_bytes());
        }
    }

    /// A string: integer-encoded when Redis would (`rdbTryIntegerEncoding`),
    /// otherwise its length and bytes.
    pub fn string(&mut self, s: &[u8]) {
        if s.len() <= MAX_INT_ENCODED_LEN {
            if let Some(v) = crate::number::parse_i64(s) {
                if self.try_int(v) {
                    return;
                }
            }
        }
        self.len(s.len() as u64);
        self.out.extend_from_slice(s);
    }

    /// An integer value as a string (`rdbSaveLongLongAsStringObject`).
    pub fn int_string(&mut self, v: i64) {
        if !self.try_int(v) {
            let mut buf = itoa::Buffer::new();
            let text = buf.format(v);
            self.len(text.len() as u64);
            self.out.extend_from_slice(text.as_bytes());
        }
    }

    /// Writes `v` as an INT8/16/32 string encoding if it fits (`rdbEncodeInteger`).
    fn try_int(&mut self, v: i64) -> bool {
        if let Ok(b) = i8::try_from(v) {
            self.out.extend_from_slice(&[0xc0, b as u8]);
        } else if let Ok(h) = i16::try_from(v) {
            self.out.push(0xc1);
            self.out.extend_from_slice(&h.to_le_bytes());
        } else if let Ok(w) = i32::try_from(v) {
            self.out.push(0xc2);
            self.out.extend_from_slice(&w.to_le_bytes());
        } else {
            return false;
        }
        true
    }

    pub fn binary_double(&mut self, v: f64) {
        self.out.extend_from_slice(&v.to_le_bytes());
    }

    pub fn millis(&mut self, ms: i64) {
        self.out.extend_from_slice(&ms.to_le_bytes());
    }

    pub fn raw(&mut self, bytes: &[u8]) {
        self.out.extend_from_slice(bytes);
    }
}

#[cfg(test)]
mod tests {
    use super::super::reader::Reader;
    use super::*;

    #[test]
    fn lengths_round_trip_in_their_shortest_form() {
        for (n, size) in [(0u64, 1), (63, 1), (64, 2), (16383, 2), (16384, 5), (u32::MAX as u64, 5), (1 << 40, 9)] {
            let mut w = Writer::new();
            w.len(n);
            assert_eq!(w.out.len(), size, "{n}");
            assert_eq!(Reader::new(&w.out).len(), Ok(n));
        }
    }

    #[test]
    fn strings_are_integer_encoded_as_redis_does() {
        let cases: [(&[u8], &[u8]); 6] = [
            (b"1", b"\xc0\x01"),
            (b"-200", b"\xc1\x38\xff"),
            (b"100000", b"\xc2\xa0\x86\x01\x00"),
            (b"007", b"\x03007"),
            (b"12345678901", b"\x0b12345678901"),
            (b"text", b"\x04text"),
        ];
        for (s, expected) in cases {
            let mut w = Writer::new();
            w.string(s);
            assert_eq!(w.out, expected, "{:?}", String::from_utf8_lossy(s));
            assert_eq!(Reader::new(&w.out).string().unwrap(), s);
        }
        let mut w = Writer::new();
        w.int_string(1 << 40);
        assert_eq!(w.out, b"\x0d1099511627776");
    }
}

//! Reading the RDB primitives of a payload body: lengths, strings (plain,
//! integer-encoded and LZF-compressed), doubles (binary and the old text
//! form) and millisecond times. Every read is bounds-checked; a claimed
//! length never allocates more than the bytes present.

use super::error::{bad, RdbError};
use super::lzf;

/// Length-encoding marker: 32-bit big-endian length follows.
pub(super) const LEN_32BIT: u8 = 0x80;
/// Length-encoding marker: 64-bit big-endian length follows.
pub(super) const LEN_64BIT: u8 = 0x81;
/// String encodings (after the `11` length prefix).
pub(super) const ENC_INT8: u8 = 0;
pub(super) const ENC_INT16: u8 = 1;
pub(super) const ENC_INT32: u8 = 2;
pub(super) const ENC_LZF: u8 = 3;

/// A cursor over a payload body.
pub struct Reader<'a> {
    data: &'a [u8],
    pos: usize,
}

/// What a length field holds.
enum Length {
    Plain(u64),
    /// A special string encoding (`11xxxxxx`).
    Encoded(u8),
}

impl<'a> Reader<'a> {
    pub fn new(data: &'a [u8]) -> Self {
        Reader { data, pos: 0 }
    }

    /// Bytes not read yet.
    pub fn remaining(&self) -> usize {
        self.data.len() - self.pos
    }

    pub fn bytes(&mut self, n: usize) -> Result<&'a [u8], RdbError> {
        if n > self.remaining() {
            return bad("truncated payload");
        }
        let out = &self.data[self.pos..self.pos + n];
        self.pos += n;
        Ok(out)
    }

    pub fn array<const N: usize>(&mut self) -> Result<[u8; N], RdbError> {
        let mut out = [0u8; N];
        out.copy_from_slice(self.bytes(N)?);
        Ok(out)
    }

    pub fn u8(&mut self) -> Result<u8, RdbError> {
        Ok(self.array::<1>()?[0])
    }

    fn length_field(&mut self) -> Result<Length, RdbError> {
        let first = self.u8()?;
        Ok(match first >> 6 {
            0 => Length::Plain((first & 0x3f) as u64),
            1 => Length::Plain((((first & 0x3f) as u64) << 8) | self.u8()? as u64),
            3 => Length::Encoded(first & 0x3f),
            _ if first == LEN_32BIT => Length::Plain(u32::from_be_bytes(self.array()?) as u64),
            _ if first == LEN_64BIT => Length::Plain(u64::from_be_bytes(self.array()?)),
            _ => return bad("unknown length encoding"),
        })
    }

    /// An RDB length (`rdbLoadLen`).
    pub fn len(&mut self) -> Result<u64, RdbError> {
        match self.length_field()? {
            Length::Plain(n) => Ok(n),
            Length::Encoded(_) => bad("an encoded string where a length belongs"),
        }
    }

    /// A length that counts items of at least `min_item_bytes` bytes each
    /// still to be read: refused when the payload cannot hold that many, so
    /// it can size a collection safely.
    pub fn count(&mut self, min_item_bytes: usize) -> Result<usize, RdbError> {
        let n = self.len()?;
        let fits = usize::try_from(n).ok().filter(|&n| n.saturating_mul(min_item_bytes.max(1)) <= self.remaining());
        fits.ok_or(RdbError::BadData("a count larger than the payload"))
    }

    /// A length used as a `usize` (for strings), bounded by the payload.
    fn string_len(&mut self, n: u64) -> Result<usize, RdbError> {
        match usize::try_from(n) {
            Ok(n) if n <= self.remaining() => Ok(n),
            _ => bad("string longer than the payload"),
        }
    }

    /// An RDB string in any encoding (`rdbGenericLoadStringObject`).
    pub fn string(&mut self) -> Result<Vec<u8>, RdbError> {
        match self.length_field()? {
            Length::Plain(n) => {
                let n = self.string_len(n)?;
                Ok(self.bytes(n)?.to_vec())
            }
            Length::Encoded(ENC_INT8) => Ok(int_text(self.u8()? as i8 as i64)),
            Length::Encoded(ENC_INT16) => Ok(int_text(i16::from_le_bytes(self.array()?) as i64)),
            Length::Encoded(ENC_INT32) => Ok(int_text(i32::from_le_bytes(self.array()?) as i64)),
            Length::Encoded(ENC_LZF) => self.lzf_string(),
            Length::Encoded(_) => bad("unknown string encoding"),
        }
    }

    fn lzf_string(&mut self) -> Result<Vec<u8>, RdbError> {
        let compressed_len = self.len()?;
        let len = self.len()?;
        let compressed_len = self.string_len(compressed_len)?;
        let len = usize::try_from(len).map_err(|_| RdbError::BadData("LZF length overflows"))?;
        let compressed = self.bytes(compressed_len)?;
        lzf::decompress(compressed, len)
    }

    /// A double in binary form (8 bytes, little-endian IEEE 754).
    pub fn binary_double(&mut self) -> Result<f64, RdbError> {
        Ok(f64::from_le_bytes(self.array()?))
    }

    /// A double in the old text form (`rdbLoadDoubleValue`): a length byte
    /// (253 NaN, 254 +inf, 255 -inf) then that many ASCII characters.
    pub fn text_double(&mut self) -> Result<f64, RdbError> {
        match self.u8()? {
            253 => Ok(f64::NAN),
            254 => Ok(f64::INFINITY),
            255 => Ok(f64::NEG_INFINITY),
            n => {
                let text = self.bytes(n as usize)?;
                parse_strtod(text).ok_or(RdbError::BadData("unparsable text double"))
            }
        }
    }

    /// A millisecond time (8 bytes little-endian, signed).
    pub fn millis(&mut self) -> Result<i64, RdbError> {
        Ok(i64::from_le_bytes(self.array()?))
    }
}

fn int_text(v: i64) -> Vec<u8> {
    itoa::Buffer::new().format(v).as_bytes().to_vec()
}

/// Parses a double as C's `strtod` accepts what Redis writes (`%.17g`,
/// `inf`, `nan`); the whole text must be consumed.
pub fn parse_strtod(text: &[u8]) -> Option<f64> {
    let s = std::str::from_utf8(text).ok()?;
    match s.to_ascii_lowercase().as_str() {
        "inf" | "+inf" | "infinity" | "+infinity" => return Some(f64::INFINITY),
        "-inf" | "-infinity" => return Some(f64::NEG_INFINITY),
        "nan" | "+nan" | "-nan" => return Some(f64::NAN),
        _ => {}
    }
    if s.is_empty() || s.starts_with(|c: char| c.is_ascii_whitespace()) {
        return None;
    }
    s.parse::<f64>().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lengths_in_every_width() {
        let mut r = Reader::new(&[0x05, 0x41, 0x02, 0x80, 0, 1, 0, 0, 0x81, 0, 0, 0, 1, 0, 0, 0, 0]);
        assert_eq!(r.len(), Ok(5));
        assert_eq!(r.len(), Ok(0x102));
        assert_eq!(r.len(), Ok(0x10000));
        assert_eq!(r.len(), Ok(1 << 32));
        assert_eq!(r.len(), Err(RdbError::BadData("truncated payload")));
        assert!(Reader::new(&[0x82]).len().is_err());
        assert!(Reader::new(&[0xc0, 1]).len().is_err());
    }

    #[test]
    fn strings_in_every_encoding() {
        let mut r = Reader::new(&[0x03, b'a', b'b', b'c', 0xc0, 0xfe, 0xc1, 0x39, 0x30, 0xc2, 0x87, 0xd6, 0x12, 0x00]);
        assert_eq!(r.string().unwrap(), b"abc");
        assert_eq!(r.string().unwrap(), b"-2");
        assert_eq!(r.string().unwrap(), b"12345");
        assert_eq!(r.string().unwrap(), b"1234567");
        // A 40-byte string of 'a' as redis-server 7.0.15 DUMPs it (LZF).
        let lzf = [0xc3, 0x09, 0x28, 0x01, b'a', b'a', 0xe0, 0x1b, 0x00, 0x01, b'a', b'a'];
        assert_eq!(Reader::new(&lzf).string().unwrap(), vec![b'a'; 40]);
        assert!(Reader::new(&[0xc4]).string().is_err());
        assert!(Reader::new(&[0x05, b'a']).string().is_err());
        // A huge claimed length with nothing behind it.
        let huge = [0x81, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xf7];
        assert!(Reader::new(&huge).string().is_err());
        // LZF claiming 4 GiB of output from 3 bytes.
        let lzf_huge = [0xc3, 0x03, 0x80, 0xff, 0xff, 0xff, 0xff, 0x00, b'a', 0x00];
        assert!(Reader::new(&lzf_huge).string().is_err());
    }

    #[test]
    fn doubles_in_both_forms() {
        let mut r = Reader::new(&[3, b'1', b'.', b'5', 253, 254, 255, 2, b'x', b'y']);
        assert_eq!(r.text_double(), Ok(1.5));
        assert!(r.text_double().unwrap().is_nan());
        assert_eq!(r.text_double(), Ok(f64::INFINITY));
        assert_eq!(r.text_double(), Ok(f64::NEG_INFINITY));
        assert!(r.text_double().is_err());
        let bytes = 2.5f64.to_le_bytes();
        let mut r = Reader::new(&bytes);
        assert_eq!(r.binary_double(), Ok(2.5));
        assert!(r.binary_double().is_err());
    }

    #[test]
    fn counts_are_bounded_by_the_payload() {
        assert_eq!(Reader::new(&[0x02, 0, 0]).count(1), Ok(2));
        assert!(Reader::new(&[0x03, 0, 0]).count(1).is_err());
        assert!(Reader::new(&[0x81, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff]).count(1).is_err());
    }
}

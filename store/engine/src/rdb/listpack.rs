//! Listpacks (`src/listpack.c`): the compact encoding of small hashes and
//! sorted sets, of list nodes and of stream nodes. [`parse`] validates one
//! as Redis's deep sanitization does (`lpValidateIntegrity` with `deep`:
//! header size and count, every entry's encoding and back-length, the
//! terminator) and returns its elements; [`Writer`] builds one byte for byte
//! as Redis's `lpAppend` would.

use super::element::Element;
use super::error::{bad, RdbError};

const HEADER_SIZE: usize = 6;
const EOF: u8 = 0xff;
/// The header's element count when it does not fit 16 bits.
const COUNT_UNKNOWN: u16 = u16::MAX;
/// Longest string listpack tries to store as an integer.
const MAX_INT_STRING_LEN: usize = 20;

/// The elements of a valid listpack.
pub fn parse(lp: &[u8]) -> Result<Vec<Element<'_>>, RdbError> {
    if lp.len() < HEADER_SIZE + 1 {
        return bad("listpack shorter than its header");
    }
    let total = u32::from_le_bytes([lp[0], lp[1], lp[2], lp[3]]) as usize;
    let declared = u16::from_le_bytes([lp[4], lp[5]]);
    if total != lp.len() || lp[lp.len() - 1] != EOF {
        return bad("listpack header size is wrong");
    }
    let end = lp.len() - 1;
    let mut pos = HEADER_SIZE;
    let mut elements = Vec::with_capacity((end - pos) / 2);
    while pos < end {
        let (element, size) = entry(&lp[pos..end])?;
        elements.push(element);
        pos += size;
    }
    if declared != COUNT_UNKNOWN && declared as usize != elements.len() {
        return bad("listpack header count is wrong");
    }
    Ok(elements)
}

/// Reads the entry at the start of `data`: its element and its size
/// including the back-length, which must match.
fn entry(data: &[u8]) -> Result<(Element<'_>, usize), RdbError> {
    let first = data[0];
    let need = |n: usize| if data.len() >= n { Ok(()) } else { bad("listpack entry past the end") };
    let (element, encoded) = if first & 0x80 == 0 {
        (Element::Int((first & 0x7f) as i64), 1)
    } else if first & 0xc0 == 0x80 {
        let len = (first & 0x3f) as usize;
        need(1 + len)?;
        (Element::Str(&data[1..1 + len]), 1 + len)
    } else if first & 0xe0 == 0xc0 {
        need(2)?;
        let raw = (((first & 0x1f) as i64) << 8) | data[1] as i64;
        (Element::Int(if raw >= 1 << 12 { raw - (1 << 13) } else { raw }), 2)
    } else if first & 0xf0 == 0xe0 {
        need(2)?;
        let len = (((first & 0x0f) as usize) << 8) | data[1] as usize;
        need(2 + len)?;
        (Element::Str(&data[2..2 + len]), 2 + len)
    } else {
        match first {
            0xf0 => {
                need(5)?;
                let len = u32::from_le_bytes([data[1], data[2], data[3], data[4]]) as usize;
                need(5usize.saturating_add(len))?;
                (Element::Str(&data[5..5 + len]), 5 + len)
            }
            0xf1 => {
                need(3)?;
                (Element::Int(i16::from_le_bytes([data[1], data[2]]) as i64), 3)
            }
            0xf2 => {
                need(4)?;
                let v = i32::from_le_bytes([0, data[1], data[2], data[3]]) >> 8;
                (Element::Int(v as i64), 4)
            }
            0xf3 => {
                need(5)?;
                (Element::Int(i32::from_le_bytes([data[1], data[2], data[3], data[4]]) as i64), 5)
            }
            0xf4 => {
                need(9)?;
                let mut b = [0u8; 8];
                b.copy_from_slice(&data[1..9]);
                (Element::Int(i64::from_le_bytes(b)), 9)
            }
            _ => return bad("invalid listpack entry encoding"),
        }
    };
    let mut backlen = [0u8; 5];
    let back = encode_backlen(encoded, &mut backlen);
    need(encoded + back.len())?;
    if &data[encoded..encoded + back.len()] != back {
        return bad("listpack entry back-length is wrong");
    }
    Ok((element, encoded + back.len()))
}

/// The back-length of an entry whose encoding takes `len` bytes
/// (`lpEncodeBacklen`), written into `buf`.
fn encode_backlen(len: usize, buf: &mut [u8; 5]) -> &[u8] {
    let l = len as u64;
    let n = match l {
        0..=127 => {
            buf[0] = l as u8;
            1
        }
        128..=16382 => {
            buf[0] = (l >> 7) as u8;
            buf[1] = (l & 127) as u8 | 128;
            2
        }
        16383..=2_097_150 => {
            buf[0] = (l >> 14) as u8;
            buf[1] = ((l >> 7) & 127) as u8 | 128;
            buf[2] = (l & 127) as u8 | 128;
            3
        }
        2_097_151..=268_435_454 => {
            buf[0] = (l >> 21) as u8;
            buf[1] = ((l >> 14) & 127) as u8 | 128;
            buf[2] = ((l >> 7) & 127) as u8 | 128;
            buf[3] = (l & 127) as u8 | 128;
            4
        }
        _ => {
            buf[0] = (l >> 28) as u8;
            buf[1] = ((l >> 21) & 127) as u8 | 128;
            buf[2] = ((l >> 14) & 127) as u8 | 128;
            buf[3] = ((l >> 7) & 127) as u8 | 128;
            buf[4] = (l & 127) as u8 | 128;
            5
        }
    };
    &buf[..n]
}

/// The integer a string element is stored as, if listpack would store it
/// as one (`lpStringToInt64`: canonical decimal within i64).
pub fn string_as_int(s: &[u8]) -> Option<i64> {
    if s.len() > MAX_INT_STRING_LEN {
        return None;
    }
    crate::number::parse_i64(s)
}

/// Builds a listpack as a sequence of `lpAppend` calls would.
#[derive(Debug, Default)]
pub struct Writer {
    body: Vec<u8>,
    count: usize,
}

impl Writer {
    pub fn new() -> Self {
        Writer::default()
    }

    /// Appends a string, stored as an integer when it reads as one.
    pub fn push_str(&mut self, s: &[u8]) {
        match string_as_int(s) {
            Some(v) => self.push_int(v),
            None => self.push_raw_str(s),
        }
    }

    fn push_raw_str(&mut self, s: &[u8]) {
        let start = self.body.len();
        let len = s.len();
        if len < 64 {
            self.body.push(0x80 | len as u8);
        } else if len < 4096 {
            self.body.push(0xe0 | (len >> 8) as u8);
            self.body.push(len as u8);
        } else {
            self.body.push(0xf0);
            self.body.extend_from_slice(&(len as u32).to_le_bytes());
        }
        self.body.extend_from_slice(s);
        self.end_entry(start);
    }

    /// Appends an integer in its smallest encoding.
    pub fn push_int(&mut self, v: i64) {
        let start = self.body.len();
        match v {
            0..=127 => self.body.push(v as u8),
            -4096..=4095 => {
                let u = if v < 0 { (1 << 13) + v } else { v } as u16;
                self.body.push(0xc0 | (u >> 8) as u8);
                self.body.push(u as u8);
            }
            -32768..=32767 => {
                self.body.push(0xf1);
                self.body.extend_from_slice(&(v as i16).to_le_bytes());
            }
            -8_388_608..=8_388_607 => {
                self.body.push(0xf2);
                self.body.extend_from_slice(&(v as i32).to_le_bytes()[..3]);
            }
            _ if i32::try_from(v).is_ok() => {
                self.body.push(0xf3);
                self.body.extend_from_slice(&(v as i32).to_le_bytes());
            }
            _ => {
                self.body.push(0xf4);
                self.body.extend_from_slice(&v.to_le_bytes());
            }
        }
        self.end_entry(start);
    }

    fn end_entry(&mut self, start: usize) {
        let mut buf = [0u8; 5];
        let back = encode_backlen(self.body.len() - start, &mut buf);
        self.body.extend_from_slice(back);
        self.count += 1;
    }

    /// Elements appended so far.
    pub fn len(&self) -> usize {
        self.count
    }

    pub fn is_empty(&self) -> bool {
        self.count == 0
    }

    /// The size the finished listpack would have now.
    pub fn bytes(&self) -> usize {
        HEADER_SIZE + self.body.len() + 1
    }

    /// The finished listpack.
    pub fn finish(self) -> Vec<u8> {
        let total = HEADER_SIZE + self.body.len() + 1;
        let mut out = Vec::with_capacity(total);
        out.extend_from_slice(&(total as u32).to_le_bytes());
        let count = u16::try_from(self.count).ok().filter(|&c| c != COUNT_UNKNOWN).unwrap_or(COUNT_UNKNOWN);
        out.extend_from_slice(&count.to_le_bytes());
        out.extend_from_slice(&self.body);
        out.push(EOF);
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn build(items: &[&[u8]]) -> Vec<u8> {
        let mut w = Writer::new();
        items.iter().for_each(|i| w.push_str(i));
        w.finish()
    }

    #[test]
    fn matches_redis_bytes() {
        // The listpack of `HSET h f 1 g 2` in redis-server 7.0.15.
        let redis = b"\x11\x00\x00\x00\x04\x00\x81f\x02\x01\x01\x81g\x02\x02\x01\xff";
        assert_eq!(build(&[b"f", b"1", b"g", b"2"]), redis);
        let parsed = parse(redis).unwrap();
        assert_eq!(parsed, vec![Element::Str(b"f"), Element::Int(1), Element::Str(b"g"), Element::Int(2)]);
    }

    #[test]
    fn every_integer_width_round_trips() {
        let values = [
            0,
            127,
            128,
            -1,
            4095,
            -4096,
            4096,
            32767,
            -32768,
            40000,
            -8_388_608,
            8_388_608,
            i32::MIN as i64,
            i64::MAX,
            i64::MIN,
        ];
        let mut w = Writer::new();
        values.iter().for_each(|&v| w.push_int(v));
        let lp = w.finish();
        let parsed: Vec<i64> = parse(&lp).unwrap().iter().map(|e| e.int().unwrap()).collect();
        assert_eq!(parsed, values);
    }

    #[test]
    fn every_string_width_round_trips() {
        let long = vec![b'x'; 5000];
        let mid = vec![b'y'; 300];
        let lp = build(&[b"", b"abc", &mid, &long, b"007", b"-0", b"12345678901234567890123"]);
        let parsed: Vec<Vec<u8>> = parse(&lp).unwrap().iter().map(|e| e.bytes().to_vec()).collect();
        assert_eq!(parsed[3], long);
        assert_eq!(parsed[2], mid);
        assert_eq!(parsed[4], b"007");
        assert!(matches!(parse(&lp).unwrap()[4], Element::Str(_)));
    }

    #[test]
    fn lying_headers_and_entries_are_refused() {
        let good = build(&[b"a", b"1"]);
        let mut wrong_size = good.clone();
        wrong_size[0] += 1;
        assert!(parse(&wrong_size).is_err());
        let mut wrong_count = good.clone();
        wrong_count[4] = 3;
        assert!(parse(&wrong_count).is_err());
        let mut unknown_count = good.clone();
        unknown_count[4] = 0xff;
        unknown_count[5] = 0xff;
        assert_eq!(parse(&unknown_count).unwrap().len(), 2);
        let mut bad_backlen = good.clone();
        bad_backlen[8] = 9;
        assert!(parse(&bad_backlen).is_err());
        let mut no_eof = good.clone();
        *no_eof.last_mut().unwrap() = 0;
        assert!(parse(&no_eof).is_err());
        let mut bad_encoding = good.clone();
        bad_encoding[6] = 0xf5;
        assert!(parse(&bad_encoding).is_err());
        // A string claiming more bytes than the listpack holds.
        let mut long_claim = good;
        long_claim[6] = 0xbf;
        assert!(parse(&long_claim).is_err());
        assert!(parse(b"\x07\x00\x00\x00\x00\x00").is_err());
        assert_eq!(parse(b"\x07\x00\x00\x00\x00\x00\xff").unwrap(), vec![]);
    }
}

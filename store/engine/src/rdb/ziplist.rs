//! Ziplists (`src/ziplist.c`): the compact encoding RDB versions before 10
//! used for small lists, hashes and sorted sets. Read only, validated as
//! `ziplistValidateIntegrity` with `deep` does: header size, tail offset and
//! count, every entry's encoding and its `prevlen`, the terminator.

use super::element::Element;
use super::error::{bad, RdbError};

const HEADER_SIZE: usize = 10;
const END: u8 = 0xff;
const BIG_PREVLEN: u8 = 254;

/// The elements of a valid ziplist.
pub fn parse(zl: &[u8]) -> Result<Vec<Element<'_>>, RdbError> {
    if zl.len() < HEADER_SIZE + 1 {
        return bad("ziplist shorter than its header");
    }
    let total = u32::from_le_bytes([zl[0], zl[1], zl[2], zl[3]]) as usize;
    let tail = u32::from_le_bytes([zl[4], zl[5], zl[6], zl[7]]) as usize;
    let declared = u16::from_le_bytes([zl[8], zl[9]]);
    if total != zl.len() || zl[zl.len() - 1] != END {
        return bad("ziplist header size is wrong");
    }
    let end = zl.len() - 1;
    let mut pos = HEADER_SIZE;
    let mut last_start = HEADER_SIZE;
    let mut prev_size = 0;
    let mut elements = Vec::with_capacity((end - pos) / 2);
    while pos < end {
        let (element, prevlen, size) = entry(&zl[pos..end])?;
        if prevlen != prev_size {
            return bad("ziplist prevlen is wrong");
        }
        elements.push(element);
        last_start = pos;
        prev_size = size;
        pos += size;
    }
    if tail != last_start {
        return bad("ziplist tail offset is wrong");
    }
    if declared != u16::MAX && declared as usize != elements.len() {
        return bad("ziplist header count is wrong");
    }
    Ok(elements)
}

/// Reads the entry at the start of `data`: its element, its `prevlen`
/// field and its total size.
fn entry(data: &[u8]) -> Result<(Element<'_>, usize, usize), RdbError> {
    let need = |n: usize| if data.len() >= n { Ok(()) } else { bad("ziplist entry past the end") };
    let (prevlen, mut pos) = if data[0] < BIG_PREVLEN {
        (data[0] as usize, 1)
    } else if data[0] == BIG_PREVLEN {
        need(5)?;
        (u32::from_le_bytes([data[1], data[2], data[3], data[4]]) as usize, 5)
    } else {
        return bad("ziplist entry where the end belongs");
    };
    need(pos + 1)?;
    let enc = data[pos];
    pos += 1;
    let int_bytes = |pos: usize, n: usize| -> Result<&[u8], RdbError> {
        need(pos + n)?;
        Ok(&data[pos..pos + n])
    };
    let (element, data_len) = match enc >> 6 {
        0 => string(data, pos, (enc & 0x3f) as usize)?,
        1 => {
            need(pos + 1)?;
            let len = (((enc & 0x3f) as usize) << 8) | data[pos] as usize;
            pos += 1;
            string(data, pos, len)?
        }
        2 if enc == 0x80 => {
            let b = int_bytes(pos, 4)?;
            let len = u32::from_be_bytes([b[0], b[1], b[2], b[3]]) as usize;
            pos += 4;
            string(data, pos, len)?
        }
        2 => return bad("invalid ziplist entry encoding"),
        _ => match enc {
            0xc0 => {
                let b = int_bytes(pos, 2)?;
                (Element::Int(i16::from_le_bytes([b[0], b[1]]) as i64), 2)
            }
            0xd0 => {
                let b = int_bytes(pos, 4)?;
                (Element::Int(i32::from_le_bytes([b[0], b[1], b[2], b[3]]) as i64), 4)
            }
            0xe0 => {
                let b = int_bytes(pos, 8)?;
                let mut a = [0u8; 8];
                a.copy_from_slice(b);
                (Element::Int(i64::from_le_bytes(a)), 8)
            }
            0xf0 => {
                let b = int_bytes(pos, 3)?;
                (Element::Int((i32::from_le_bytes([0, b[0], b[1], b[2]]) >> 8) as i64), 3)
            }
            0xfe => {
                let b = int_bytes(pos, 1)?;
                (Element::Int(b[0] as i8 as i64), 1)
            }
            0xf1..=0xfd => (Element::Int((enc & 0x0f) as i64 - 1), 0),
            _ => return bad("invalid ziplist entry encoding"),
        },
    };
    Ok((element, prevlen, pos + data_len))
}

fn string(data: &[u8], pos: usize, len: usize) -> Result<(Element<'_>, usize), RdbError> {
    match data.get(pos..pos.saturating_add(len)) {
        Some(s) => Ok((Element::Str(s), len)),
        None => bad("ziplist string past the end"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A ziplist of `["a", 5, 300]` built by hand as Redis 6.2 would.
    fn sample() -> Vec<u8> {
        let entries: Vec<Vec<u8>> = vec![vec![0, 0x01, b'a'], vec![3, 0xf6], vec![2, 0xc0, 0x2c, 0x01]];
        let mut body = Vec::new();
        let mut tail = 0;
        for e in &entries {
            tail = 10 + body.len();
            body.extend_from_slice(e);
        }
        let total = 10 + body.len() + 1;
        let mut zl = (total as u32).to_le_bytes().to_vec();
        zl.extend_from_slice(&(tail as u32).to_le_bytes());
        zl.extend_from_slice(&3u16.to_le_bytes());
        zl.extend_from_slice(&body);
        zl.push(0xff);
        zl
    }

    #[test]
    fn reads_strings_and_integers() {
        let zl = sample();
        assert_eq!(parse(&zl).unwrap(), vec![Element::Str(b"a"), Element::Int(5), Element::Int(300)]);
    }

    #[test]
    fn lying_headers_and_entries_are_refused() {
        let good = sample();
        for (index, value) in [(0, 99), (4, 11), (8, 4), (13, 9), (11, 0x3f), (14, 0x81)] {
            let mut bad = good.clone();
            bad[index] = value;
            assert!(parse(&bad).is_err(), "byte {index} = {value}");
        }
        let mut no_end = good.clone();
        *no_end.last_mut().unwrap() = 0;
        assert!(parse(&no_end).is_err());
        assert!(parse(&good[..9]).is_err());
    }
}

//! LZF decompression (liblzf's `lzf_decompress`, `src/lzf_d.c`): Redis
//! stores strings longer than 20 bytes LZF-compressed in RDB files and DUMP
//! payloads when that saves space. Cairn only reads them (its own payloads
//! are uncompressed, which Redis accepts).

use super::error::{bad, RdbError};

/// Decompresses `input` into exactly `expected_len` bytes. The output grows
/// as it is produced (never allocated from `expected_len` up front) and stops
/// at `expected_len`, so a lying length costs at most what the input makes.
pub fn decompress(input: &[u8], expected_len: usize) -> Result<Vec<u8>, RdbError> {
    let mut out: Vec<u8> = Vec::with_capacity(expected_len.min(input.len().saturating_mul(4)));
    let mut ip = 0;
    while ip < input.len() {
        let ctrl = input[ip] as usize;
        ip += 1;
        if ctrl < 32 {
            let run = ctrl + 1;
            let literal = input.get(ip..ip + run).ok_or(RdbError::BadData("LZF literal past the input"))?;
            if out.len() + run > expected_len {
                return bad("LZF output longer than declared");
            }
            out.extend_from_slice(literal);
            ip += run;
        } else {
            let mut len = ctrl >> 5;
            if len == 7 {
                len += *input.get(ip).ok_or(RdbError::BadData("LZF reference past the input"))? as usize;
                ip += 1;
            }
            let low = *input.get(ip).ok_or(RdbError::BadData("LZF reference past the input"))? as usize;
            ip += 1;
            let distance = ((ctrl & 0x1f) << 8) + low + 1;
            let copy = len + 2;
            if out.len() + copy > expected_len {
                return bad("LZF output longer than declared");
            }
            let Some(start) = out.len().checked_sub(distance) else {
                return bad("LZF reference before the output");
            };
            // Byte by byte: the source may overlap what is being written.
            for i in 0..copy {
                let b = out[start + i];
                out.push(b);
            }
        }
    }
    if out.len() != expected_len {
        return bad("LZF output shorter than declared");
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn literals_and_overlapping_references() {
        // "abc" literal, then a reference of 2+4=6 bytes at distance 3.
        let input = [2, b'a', b'b', b'c', 4 << 5, 2];
        assert_eq!(decompress(&input, 9).unwrap(), b"abcabcabc");
        // A long reference: len 7 + extra 1 = 8, +2 = 10 bytes of 'x'.
        let input = [0, b'x', 7 << 5, 1, 0];
        assert_eq!(decompress(&input, 11).unwrap(), b"xxxxxxxxxxx");
    }

    #[test]
    fn damage_is_an_error() {
        assert!(decompress(&[5, b'a'], 6).is_err()); // literal past the input
        assert!(decompress(&[0, b'a', 1 << 5, 9], 4).is_err()); // reference before the output
        assert!(decompress(&[0, b'a', 1 << 5], 4).is_err()); // reference cut short
        assert!(decompress(&[0, b'a'], 2).is_err()); // shorter than declared
        assert!(decompress(&[1, b'a', b'b'], 1).is_err()); // longer than declared
        assert!(decompress(&[0, b'a', 7 << 5, 255, 0], 10).is_err()); // longer than declared
    }
}

//! Zipmaps (`src/zipmap.c`): the small-hash encoding of RDB files from
//! Redis before 2.6. Read only, validated as `zipmapValidateIntegrity`
//! with `deep` does (every length within bounds, not empty, the count byte).

use super::error::{bad, RdbError};

const END: u8 = 0xff;
const BIG_LEN: u8 = 254;

/// A field and its value.
pub type Pair<'a> = (&'a [u8], &'a [u8]);

/// The field/value pairs of a valid zipmap.
pub fn parse(zm: &[u8]) -> Result<Vec<Pair<'_>>, RdbError> {
    if zm.len() < 2 || zm[zm.len() - 1] != END {
        return bad("zipmap without its end");
    }
    let end = zm.len() - 1;
    let mut pos = 1;
    let mut pairs = Vec::new();
    while zm[pos] != END {
        let field_len = length(zm, &mut pos, end)?;
        let field = take(zm, &mut pos, field_len, end)?;
        let value_len = length(zm, &mut pos, end)?;
        let free = *zm.get(pos).filter(|_| pos < end).ok_or(RdbError::BadData("zipmap entry past the end"))? as usize;
        pos += 1;
        let value = take(zm, &mut pos, value_len, end)?;
        take(zm, &mut pos, free, end)?;
        pairs.push((field, value));
    }
    if pos != end {
        return bad("zipmap ends early");
    }
    if pairs.is_empty() {
        return bad("empty zipmap");
    }
    if zm[0] < BIG_LEN && zm[0] as usize != pairs.len() {
        return bad("zipmap count is wrong");
    }
    Ok(pairs)
}

fn length(zm: &[u8], pos: &mut usize, end: usize) -> Result<usize, RdbError> {
    let first = *zm.get(*pos).filter(|_| *pos < end).ok_or(RdbError::BadData("zipmap entry past the end"))?;
    if first < BIG_LEN {
        *pos += 1;
        return Ok(first as usize);
    }
    if first == END {
        return bad("zipmap ends inside an entry");
    }
    let b = take(zm, &mut (*pos + 1), 4, end)?;
    *pos += 5;
    Ok(u32::from_le_bytes([b[0], b[1], b[2], b[3]]) as usize)
}

fn take<'a>(zm: &'a [u8], pos: &mut usize, n: usize, end: usize) -> Result<&'a [u8], RdbError> {
    let stop = pos.checked_add(n).filter(|&s| s <= end).ok_or(RdbError::BadData("zipmap entry past the end"))?;
    let out = &zm[*pos..stop];
    *pos = stop;
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_pairs_with_free_bytes() {
        // 2 pairs: "a" -> "1" (no free), "bc" -> "xy" (1 free byte).
        let zm = b"\x02\x01a\x01\x001\x02bc\x02\x01xy?\xff";
        assert_eq!(parse(zm).unwrap(), vec![(&b"a"[..], &b"1"[..]), (&b"bc"[..], &b"xy"[..])]);
    }

    #[test]
    fn damage_is_refused() {
        assert!(parse(b"\x03\x01a\x01\x001\xff").is_err()); // count
        assert!(parse(b"\x00\xff").is_err()); // empty
        assert!(parse(b"\x01\x01a\x09\x001\xff").is_err()); // value past the end
        assert!(parse(b"\x01\x01a\x01\x001").is_err()); // no end
        assert!(parse(b"\x01\xfe\xff\xff\xff\xff\xff").is_err()); // huge field
    }
}

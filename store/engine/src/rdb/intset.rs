//! Intsets (`src/intset.c`): the encoding of sets of integers. [`parse`]
//! validates one as `intsetValidateIntegrity` with `deep` does (a known
//! width, a size that matches the count, not empty, strictly ascending);
//! [`encode`] writes one as Redis would hold it.

use super::error::{bad, RdbError};

const HEADER_SIZE: usize = 8;

/// The members of a valid intset, ascending.
pub fn parse(data: &[u8]) -> Result<Vec<i64>, RdbError> {
    if data.len() < HEADER_SIZE {
        return bad("intset shorter than its header");
    }
    let width = u32::from_le_bytes([data[0], data[1], data[2], data[3]]) as usize;
    let count = u32::from_le_bytes([data[4], data[5], data[6], data[7]]) as usize;
    if !matches!(width, 2 | 4 | 8) {
        return bad("intset encoding is unknown");
    }
    if count.checked_mul(width).and_then(|n| n.checked_add(HEADER_SIZE)) != Some(data.len()) {
        return bad("intset size does not match its count");
    }
    if count == 0 {
        return bad("empty intset");
    }
    let members: Vec<i64> = data[HEADER_SIZE..].chunks_exact(width).map(read_member).collect();
    if members.windows(2).any(|w| w[0] >= w[1]) {
        return bad("intset not strictly ascending");
    }
    Ok(members)
}

fn read_member(b: &[u8]) -> i64 {
    match b.len() {
        2 => i16::from_le_bytes([b[0], b[1]]) as i64,
        4 => i32::from_le_bytes([b[0], b[1], b[2], b[3]]) as i64,
        _ => i64::from_le_bytes([b[0], b[1], b[2], b[3], b[4], b[5], b[6], b[7]]),
    }
}

/// The intset holding `members` (ascending, distinct), in the narrowest
/// width that fits them all.
pub fn encode(members: &[i64]) -> Vec<u8> {
    let fits = |lo: i64, hi: i64| members.iter().all(|m| (lo..=hi).contains(m));
    let width: usize = if fits(i16::MIN as i64, i16::MAX as i64) {
        2
    } else if fits(i32::MIN as i64, i32::MAX as i64) {
        4
    } else {
        8
    };
    let mut out = Vec::with_capacity(HEADER_SIZE + members.len() * width);
    out.extend_from_slice(&(width as u32).to_le_bytes());
    out.extend_from_slice(&(members.len() as u32).to_le_bytes());
    for &m in members {
        out.extend_from_slice(&m.to_le_bytes()[..width]);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn matches_redis_bytes_and_round_trips() {
        // `SADD s 1 2 3` in redis-server 7.0.15: int16, 3 members.
        let redis = b"\x02\x00\x00\x00\x03\x00\x00\x00\x01\x00\x02\x00\x03\x00";
        assert_eq!(encode(&[1, 2, 3]), redis);
        assert_eq!(parse(redis).unwrap(), vec![1, 2, 3]);
        let wide = [i64::MIN, -70000, 0, 70000, i64::MAX];
        assert_eq!(parse(&encode(&wide)).unwrap(), wide);
        assert_eq!(encode(&[-70000, 5])[0], 4);
    }

    #[test]
    fn damage_is_refused() {
        let good = encode(&[1, 2, 3]);
        let mut width = good.clone();
        width[0] = 3;
        assert!(parse(&width).is_err());
        let mut count = good.clone();
        count[4] = 4;
        assert!(parse(&count).is_err());
        let mut order = good.clone();
        order[10] = 1; // 1, 1, 3
        assert!(parse(&order).is_err());
        assert!(parse(&encode(&[])).is_err());
        assert!(parse(&good[..7]).is_err());
    }
}

//! Geohashes as Redis computes them (`geohash.c`): interleaving longitude and
//! latitude bits into one integer, decoding it back to a cell, the eight
//! neighbouring cells, and the 52-bit sorted set score of a position.
//!
//! Longitude bits sit at the odd positions, latitude bits at the even ones;
//! a hash of `step` steps has `2 * step` bits.

/// Steps of a full-precision hash: 26 * 2 = 52 bits, a score a double holds exactly.
pub const STEP_MAX: u8 = 26;

/// The latitude limits of EPSG:900913 (Web Mercator): no geocoding at the poles.
pub const LAT_MIN: f64 = -85.05112878;
pub const LAT_MAX: f64 = 85.05112878;
pub const LONG_MIN: f64 = -180.0;
pub const LONG_MAX: f64 = 180.0;

/// A hash of `step` steps (`GeoHashBits`); all zero means "no cell".
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct HashBits {
    pub bits: u64,
    pub step: u8,
}

impl HashBits {
    /// `HASHISZERO`: the cell was excluded from a search.
    pub fn is_zero(&self) -> bool {
        self.bits == 0 && self.step == 0
    }
}

/// An interval of one coordinate.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Range {
    pub min: f64,
    pub max: f64,
}

/// The ranges of Redis's own hashes (`geohashGetCoordRange`).
pub const LONG_RANGE: Range = Range { min: LONG_MIN, max: LONG_MAX };
pub const LAT_RANGE: Range = Range { min: LAT_MIN, max: LAT_MAX };

/// The ranges of the standard geohash that GEOHASH prints.
pub const STANDARD_LONG_RANGE: Range = Range { min: -180.0, max: 180.0 };
pub const STANDARD_LAT_RANGE: Range = Range { min: -90.0, max: 90.0 };

/// The cell a hash stands for.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Area {
    pub hash: HashBits,
    pub longitude: Range,
    pub latitude: Range,
}

/// The eight cells around one, in Redis's field order.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Neighbors {
    pub north: HashBits,
    pub east: HashBits,
    pub west: HashBits,
    pub south: HashBits,
    pub north_east: HashBits,
    pub south_east: HashBits,
    pub north_west: HashBits,
    pub south_west: HashBits,
}

/// Interleaves the low 32 bits of `x` (even positions) and `y` (odd positions).
fn interleave64(xlo: u32, ylo: u32) -> u64 {
    const B: [u64; 5] =
        [0x5555555555555555, 0x3333333333333333, 0x0F0F0F0F0F0F0F0F, 0x00FF00FF00FF00FF, 0x0000FFFF0000FFFF];
    const S: [u32; 5] = [1, 2, 4, 8, 16];
    let mut x = u64::from(xlo);
    let mut y = u64::from(ylo);
    for i in (0..5).rev() {
        x = (x | (x << S[i])) & B[i];
        y = (y | (y << S[i])) & B[i];
    }
    x | (y << 1)
}

/// Undoes [`interleave64`]: the even bits in the low half, the odd bits in the high half.
fn deinterleave64(interleaved: u64) -> u64 {
    const B: [u64; 6] = [
        0x5555555555555555,
        0x3333333333333333,
        0x0F0F0F0F0F0F0F0F,
        0x00FF00FF00FF00FF,
        0x0000FFFF0000FFFF,
        0x00000000FFFFFFFF,
    ];
    const S: [u32; 6] = [0, 1, 2, 4, 8, 16];
    let mut x = interleaved;
    let mut y = interleaved >> 1;
    for i in 0..6 {
        x = (x | (x >> S[i])) & B[i];
        y = (y | (y >> S[i])) & B[i];
    }
    x | (y << 32)
}

/// `geohashEncode`: the cell of `step` steps holding the position within the
/// given ranges; `None` outside them (or outside Redis's own limits).
pub fn encode(long_range: Range, lat_range: Range, longitude: f64, latitude: f64, step: u8) -> Option<HashBits> {
    if step > 32 || step == 0 {
        return None;
    }
    let outside_limits = !(LONG_MIN..=LONG_MAX).contains(&longitude) || !(LAT_MIN..=LAT_MAX).contains(&latitude);
    let outside_ranges = latitude < lat_range.min
        || latitude > lat_range.max
        || longitude < long_range.min
        || longitude > long_range.max;
    if outside_limits || outside_ranges {
        return None;
    }
    let cells = (1u64 << step) as f64;
    let lat_offset = (latitude - lat_range.min) / (lat_range.max - lat_range.min) * cells;
    let long_offset = (longitude - long_range.min) / (long_range.max - long_range.min) * cells;
    // C converts the offsets to uint32_t, truncating toward zero.
    Some(HashBits { bits: interleave64(lat_offset as u32, long_offset as u32), step })
}

/// [`encode`] within Redis's own ranges (`geohashEncodeWGS84`).
pub fn encode_wgs84(longitude: f64, latitude: f64, step: u8) -> Option<HashBits> {
    encode(LONG_RANGE, LAT_RANGE, longitude, latitude, step)
}

/// `geohashDecode`: the cell of `hash` within the given ranges.
pub fn decode(long_range: Range, lat_range: Range, hash: HashBits) -> Option<Area> {
    if hash.is_zero() {
        return None;
    }
    let separated = deinterleave64(hash.bits);
    let lat_cell = separated as u32;
    let long_cell = (separated >> 32) as u32;
    let cells = (1u64 << hash.step) as f64;
    let lat_scale = lat_range.max - lat_range.min;
    let long_scale = long_range.max - long_range.min;
    let at = |min: f64, cell: u32, scale: f64| min + (f64::from(cell) / cells) * scale;
    Some(Area {
        hash,
        latitude: Range {
            min: at(lat_range.min, lat_cell, lat_scale),
            max: at(lat_range.min, lat_cell.wrapping_add(1), lat_scale),
        },
        longitude: Range {
            min: at(long_range.min, long_cell, long_scale),
            max: at(long_range.min, long_cell.wrapping_add(1), long_scale),
        },
    })
}

/// [`decode`] within Redis's own ranges.
pub fn decode_wgs84(hash: HashBits) -> Option<Area> {
    decode(LONG_RANGE, LAT_RANGE, hash)
}

/// The centre of a cell, clamped to Redis's limits (`geohashDecodeAreaToLongLat`).
fn area_center(area: &Area) -> [f64; 2] {
    let longitude = ((area.longitude.min + area.longitude.max) / 2.0).clamp(LONG_MIN, LONG_MAX);
    let latitude = ((area.latitude.min + area.latitude.max) / 2.0).clamp(LAT_MIN, LAT_MAX);
    [longitude, latitude]
}

/// The position (longitude, latitude) a hash decodes to.
pub fn decode_to_long_lat(hash: HashBits) -> Option<[f64; 2]> {
    decode_wgs84(hash).map(|area| area_center(&area))
}

/// C's `(uint64_t)score` as x86-64 compiles it: truncation, negative values
/// wrapping as their two's complement, out-of-range values as the
/// instruction's "indefinite" result.
fn score_to_bits(score: f64) -> u64 {
    const TWO_63: f64 = 9_223_372_036_854_775_808.0;
    const INDEFINITE: u64 = 1 << 63;
    if score < TWO_63 {
        if score >= -TWO_63 {
            score as i64 as u64
        } else {
            INDEFINITE
        }
    } else if score - TWO_63 < TWO_63 {
        ((score - TWO_63) as i64 as u64) ^ INDEFINITE
    } else {
        0
    }
}

/// The position a sorted set score stands for (`decodeGeohash`).
pub fn decode_score(score: f64) -> Option<[f64; 2]> {
    decode_to_long_lat(HashBits { bits: score_to_bits(score), step: STEP_MAX })
}

/// The score of a position: its full-precision hash (`geohashAlign52Bits`
/// of a 26-step hash); `None` outside Redis's limits.
pub fn score_of(longitude: f64, latitude: f64) -> Option<u64> {
    encode_wgs84(longitude, latitude, STEP_MAX).map(align_52_bits)
}

/// A hash shifted to 52 bits: the smallest score inside its cell.
pub fn align_52_bits(hash: HashBits) -> u64 {
    hash.bits << (52 - u32::from(hash.step) * 2)
}

/// Moves a hash one cell east (`d > 0`) or west (`d < 0`), wrapping around.
fn move_x(hash: &mut HashBits, d: i8) {
    move_along(hash, d, 0xaaaaaaaaaaaaaaaa);
}

/// Moves a hash one cell north (`d > 0`) or south (`d < 0`), wrapping around.
fn move_y(hash: &mut HashBits, d: i8) {
    move_along(hash, d, 0x5555555555555555);
}

/// Redis's `geohash_move_x`/`geohash_move_y` in one: steps the coordinate
/// whose interleaved bits `moving` selects by one cell, leaving the other.
fn move_along(hash: &mut HashBits, d: i8, moving: u64) {
    if d == 0 {
        return;
    }
    let fixed = !moving;
    let shift = 64 - u32::from(hash.step) * 2;
    let mut moved = hash.bits & moving;
    let kept = hash.bits & fixed;
    let zz = fixed >> shift;
    if d > 0 {
        moved = moved.wrapping_add(zz + 1);
    } else {
        moved = (moved | zz).wrapping_sub(zz + 1);
    }
    moved &= moving >> shift;
    hash.bits = moved | kept;
}

/// The hash `dx` cells east and `dy` cells north of `hash`.
fn moved(hash: HashBits, dx: i8, dy: i8) -> HashBits {
    let mut h = hash;
    move_x(&mut h, dx);
    move_y(&mut h, dy);
    h
}

/// The eight cells around `hash` (`geohashNeighbors`).
pub fn neighbors(hash: HashBits) -> Neighbors {
    Neighbors {
        east: moved(hash, 1, 0),
        west: moved(hash, -1, 0),
        south: moved(hash, 0, -1),
        north: moved(hash, 0, 1),
        north_west: moved(hash, -1, 1),
        north_east: moved(hash, 1, 1),
        south_east: moved(hash, 1, -1),
        south_west: moved(hash, -1, -1),
    }
}

/// The 11-character standard geohash GEOHASH prints for a score: the
/// position re-encoded in the standard ranges (latitude -90..90), the last
/// character always `0` since a score holds 52 bits, not 55.
pub fn standard_geohash(score: f64) -> Option<[u8; 11]> {
    const ALPHABET: &[u8; 32] = b"0123456789bcdefghjkmnpqrstuvwxyz";
    let [longitude, latitude] = decode_score(score)?;
    let hash = encode(STANDARD_LONG_RANGE, STANDARD_LAT_RANGE, longitude, latitude, STEP_MAX)?;
    let mut out = [b'0'; 11];
    for (i, c) in out.iter_mut().enumerate().take(10) {
        let index = (hash.bits >> (52 - (i + 1) * 5)) & 0x1f;
        *c = ALPHABET[index as usize];
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn interleaving_round_trips() {
        for (x, y) in [(0u32, 0u32), (1, 0), (0, 1), (0x3ff_ffff, 0x155_5555), (u32::MAX, 7)] {
            let separated = deinterleave64(interleave64(x, y));
            assert_eq!((separated as u32, (separated >> 32) as u32), (x, y));
        }
        assert_eq!(interleave64(1, 0), 1);
        assert_eq!(interleave64(0, 1), 2);
    }

    #[test]
    fn scores_match_redis() {
        // From Redis's unit/geo "Check geoset values".
        assert_eq!(score_of(-74.0131604, 40.7126674), Some(1791873972053020));
        assert_eq!(score_of(-73.9454966, 40.747533), Some(1791875804419201));
        assert_eq!(score_of(-73.7858139, 40.6428986), Some(1791895905559723));
        assert_eq!(score_of(181.0, 0.0), None);
        assert_eq!(score_of(0.0, 85.06), None);
    }

    #[test]
    fn decoding_lands_near_the_encoded_position() {
        let score = score_of(13.361389, 38.115556).expect("valid") as f64;
        let [longitude, latitude] = decode_score(score).expect("decodes");
        assert!((longitude - 13.361389).abs() < 1e-5 && (latitude - 38.115556).abs() < 1e-5);
    }

    #[test]
    fn the_standard_geohash_of_the_wikipedia_example() {
        let score = score_of(-5.6, 42.6).expect("valid") as f64;
        assert_eq!(&standard_geohash(score).expect("decodes"), b"ezs42e44yx0");
    }

    #[test]
    fn neighbors_wrap_around() {
        let hash = HashBits { bits: 0, step: 2 };
        let n = neighbors(hash);
        // West of the first column is the last one; south of the first row is the last one.
        assert_eq!(n.west.bits, 0b1010);
        assert_eq!(n.south.bits, 0b0101);
        assert_eq!(n.east.bits, 0b0010);
        assert_eq!(n.north.bits, 0b0001);
        assert_eq!(n.north_east.bits, 0b0011);
    }

    #[test]
    fn negative_scores_convert_as_on_x86() {
        assert_eq!(score_to_bits(-1.0), u64::MAX);
        assert_eq!(score_to_bits(1.5), 1);
        assert_eq!(score_to_bits(f64::INFINITY), 0);
        assert_eq!(score_to_bits(f64::NEG_INFINITY), 1 << 63);
    }
}

//! Sketches against bytes and counts produced by Redis 7.0.15.

use super::*;

fn hex(text: &str) -> Vec<u8> {
    let digits: String = text.chars().filter(|c| !c.is_whitespace()).collect();
    (0..digits.len()).step_by(2).map(|i| u8::from_str_radix(&digits[i..i + 2], 16).expect("hex")).collect()
}

/// FNV-1a 64, to compare a dense sketch with Redis's without embedding it.
fn fnv1a(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325, |h, &b| (h ^ u64::from(b)).wrapping_mul(0x100_0000_01b3))
}

fn sketch_of(elements: impl IntoIterator<Item = String>) -> Vec<u8> {
    let mut hll = new_sparse();
    for element in elements {
        add(&mut hll, element.as_bytes(), 3000).expect("valid sketch");
    }
    hll
}

/// PFCOUNT's caching, as the server does it.
fn count_and_cache(hll: &mut [u8]) -> u64 {
    let n = count(hll).expect("valid sketch");
    cache_count(hll, n);
    n
}

const REDIS_EMPTY: &str = "48594c4c0100000000000000000000807fff";
const REDIS_ABCDE: &str = "48594c4c0100000000000000000000805c7b8044768050b184498c80426d80425a";
const REDIS_ABCDE_COUNTED: &str = "48594c4c0100000005000000000000005c7b8044768050b184498c80426d80425a";

#[test]
fn a_new_sketch_is_redis_empty_sparse_one() {
    let mut created = new_sparse();
    assert_eq!(cached_count(&created), Some(0));
    invalidate_cache(&mut created);
    assert_eq!(created, hex(REDIS_EMPTY), "PFADD marks the new sketch's cache stale");
    assert_eq!(check(&new_sparse()), Ok(Encoding::Sparse));
    assert_eq!(count(&new_sparse()), Ok(0));
}

#[test]
fn adding_and_counting_give_redis_bytes() {
    let mut hll = sketch_of(["a", "b", "c", "d", "e"].map(String::from));
    assert_eq!(hll, hex(REDIS_ABCDE));
    assert_eq!(cached_count(&hll), None);
    assert_eq!(count_and_cache(&mut hll), 5);
    assert_eq!(hll, hex(REDIS_ABCDE_COUNTED));
    assert_eq!(cached_count(&hll), Some(5));
    assert_eq!(decode_sparse(&hll), "Z:7292 v:1,1 Z:1143 v:1,1 Z:4274 v:2,1 Z:2445 v:1,1 Z:622 v:1,1 Z:603");
}

#[test]
fn a_redis_sparse_sketch_decodes_and_grows_identically() {
    let redis = hex(include_str!("redis_sparse_300.hex"));
    assert_eq!(check(&redis), Ok(Encoding::Sparse));
    assert_eq!(cached_count(&redis), Some(302));
    assert_eq!(count(&redis), Ok(302));
    let mut ours = sketch_of((0..300).map(|i| format!("e{i}")));
    assert_eq!(count_and_cache(&mut ours), 302);
    assert_eq!(ours, redis);
}

#[test]
fn a_large_sketch_is_dense_and_identical_to_redis() {
    let mut hll = sketch_of((0..50_000).map(|i| format!("k{i}")));
    assert_eq!(encoding_of(&hll), Encoding::Dense);
    assert_eq!(hll.len(), DENSE_LEN);
    assert_eq!(count_and_cache(&mut hll), 49_774);
    assert_eq!(fnv1a(&hll), 0xd425_86ce_e3c9_0868);
}

#[test]
fn cardinalities_match_redis() {
    for (n, redis) in [(1, 1), (10, 10), (100, 100), (1000, 999), (10_000, 10_092), (100_000, 101_048)] {
        let hll = sketch_of((0..n).map(|i| format!("c{i}")));
        assert_eq!(count(&hll), Ok(redis), "{n} elements");
    }
}

#[test]
fn sparse_promotes_to_dense_past_the_byte_limit() {
    let mut hll = new_sparse();
    let mut n = 0;
    while encoding_of(&hll) == Encoding::Sparse {
        assert!(hll.len() <= 3000, "sparse sketch of {} bytes", hll.len());
        add(&mut hll, format!("p{n}").as_bytes(), 3000).expect("valid");
        n += 1;
    }
    assert_eq!(hll.len(), DENSE_LEN);
    assert!(n > 1000, "promoted after {n} elements");
    let mut small_limit = new_sparse();
    for i in 0..20 {
        add(&mut small_limit, format!("p{i}").as_bytes(), 30).expect("valid");
    }
    assert_eq!(encoding_of(&small_limit), Encoding::Dense);
}

#[test]
fn sparse_and_dense_sketches_of_the_same_elements_agree() {
    for size in [0, 1, 7, 64, 500, 2000] {
        let mut sparse = new_sparse();
        let mut dense = new_sparse();
        assert_eq!(to_dense(&mut dense), Ok(true));
        assert_eq!(to_dense(&mut dense), Ok(false));
        for i in 0..size {
            let element = format!("s{size}-{i}");
            let a = add(&mut sparse, element.as_bytes(), 1 << 20).expect("valid");
            let b = add(&mut dense, element.as_bytes(), 1 << 20).expect("valid");
            assert_eq!(a, b, "{element}");
        }
        assert_eq!(encoding_of(&sparse), Encoding::Sparse);
        assert_eq!(count(&sparse), count(&dense), "{size} elements");
        let mut promoted = sparse.clone();
        to_dense(&mut promoted).expect("valid");
        assert_eq!(promoted[HEADER_LEN..], dense[HEADER_LEN..]);
    }
}

#[test]
fn merged_registers_count_the_union_like_redis() {
    let x = sketch_of((0..1000).map(|i| format!("x{i}")));
    let y = sketch_of((500..3000).map(|i| format!("x{i}")));
    let abc = hex(REDIS_ABCDE);
    let mut union = Registers::default();
    for hll in [&x, &y, &abc] {
        union.merge(hll).expect("valid");
    }
    assert_eq!(union.count(), 2991);

    let mut merged = Registers::default();
    merged.merge(&x).expect("valid");
    merged.merge(&y).expect("valid");
    let mut destination = new_sparse();
    if encoding_of(&x) == Encoding::Dense || encoding_of(&y) == Encoding::Dense {
        to_dense(&mut destination).expect("valid");
    }
    merged.store_into(&mut destination, 3000);
    assert_eq!(encoding_of(&destination), Encoding::Dense);
    assert_eq!(fnv1a(&destination), 0x2733_95ad_ebbb_6bcd);
    assert_eq!(count(&destination), Ok(2985));
}

#[test]
fn headers_and_lengths_are_checked() {
    assert_eq!(check(b"HYLL"), Err(HllError::NotHll));
    let mut bad_magic = new_sparse();
    bad_magic[..4].copy_from_slice(b"0123");
    assert_eq!(check(&bad_magic), Err(HllError::NotHll));
    let mut bad_encoding = new_sparse();
    bad_encoding[4] = b'x';
    assert_eq!(check(&bad_encoding), Err(HllError::NotHll));
    let mut short_dense = new_sparse();
    short_dense[4] = 0;
    assert_eq!(check(&short_dense), Err(HllError::NotHll));
    assert_eq!(HllError::NotHll.to_string(), "WRONGTYPE Key is not a valid HyperLogLog string value.");
    assert_eq!(HllError::Corrupt.to_string(), "INVALIDOBJ Corrupted HLL object detected");
}

#[test]
fn corrupt_sparse_opcodes_are_detected() {
    let mut tail = sketch_of(["a", "b", "c"].map(String::from));
    tail.extend_from_slice(b"hello");
    assert_eq!(count(&tail), Err(HllError::Corrupt));
    assert_eq!(Registers::default().merge(&tail), Err(HllError::Corrupt));
    assert_eq!(to_dense(&mut tail.clone()), Err(HllError::Corrupt));

    // XZERO runs adding up past 2^32 registers, then a VAL: no overflow.
    let mut huge = new_sparse();
    huge.truncate(HEADER_LEN);
    for _ in 0..(131_072 + 1000) {
        huge.extend_from_slice(&[0x40 | 0x3f, 0xff]);
    }
    huge.push(0xff);
    assert_eq!(count(&huge), Err(HllError::Corrupt));
    assert_eq!(Registers::default().merge(&huge), Err(HllError::Corrupt));

    // Runs that stop short of the last register.
    let mut short = new_sparse();
    short.truncate(HEADER_LEN);
    short.extend_from_slice(&[0x40, 99]);
    assert_eq!(count(&short), Err(HllError::Corrupt));
    for i in 0..100 {
        let _ = add(&mut short, format!("e{i}").as_bytes(), 3000);
    }
}

#[test]
fn random_corruption_never_panics() {
    use rand::{Rng, SeedableRng};
    let mut rng = rand::rngs::StdRng::seed_from_u64(7);
    for round in 0..300 {
        let mut hll = sketch_of((0..rng.gen_range(0..3000)).map(|i| format!("r{round}-{i}")));
        for _ in 0..rng.gen_range(1..5) {
            let at = rng.gen_range(0..hll.len());
            hll[at] = rng.gen();
        }
        if check(&hll).is_err() {
            continue;
        }
        let _ = count(&hll);
        let _ = Registers::default().merge(&hll);
        let _ = decode_sparse(&hll);
        for i in 0..20 {
            let _ = add(&mut hll, format!("more{i}").as_bytes(), 3000);
        }
        let _ = to_dense(&mut hll);
    }
}

#[test]
fn the_self_test_passes() {
    assert_eq!(self_test(3000), Ok(()));
}

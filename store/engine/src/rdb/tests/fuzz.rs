//! A seeded fuzz of the decoder: random bytes and mutations of valid
//! payloads (flipped bytes, truncations, length fields set huge, spliced
//! garbage) must give `Ok` or `Err`, never a panic. The checksum is skipped
//! so that mutations reach the decoder.

use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

use super::fixtures::FIXTURES;
use super::unhex;
use crate::rdb::payload::seal;
use crate::rdb::restore_payload;

const CASES_PER_SEED: usize = 4000;

/// Decodes a body under a valid footer; returns whether it decoded.
fn decodes(body: &[u8]) -> bool {
    restore_payload(&seal(body.to_vec()), true).is_ok()
}

fn mutate(rng: &mut StdRng, body: &mut Vec<u8>) {
    match rng.gen_range(0..6) {
        0 => {
            let flips = rng.gen_range(1..4);
            for _ in 0..flips {
                let i = rng.gen_range(0..body.len());
                body[i] ^= 1 << rng.gen_range(0..8);
            }
        }
        1 => {
            let i = rng.gen_range(0..body.len());
            body[i] = rng.gen();
        }
        2 => body.truncate(rng.gen_range(0..body.len())),
        3 => {
            // A huge 64-bit length where a length may be.
            let i = rng.gen_range(0..body.len());
            let huge: [u8; 9] = [0x81, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, rng.gen()];
            body.splice(i..(i + 1).min(body.len()), huge);
        }
        4 => {
            let i = rng.gen_range(0..body.len());
            let junk: Vec<u8> = (0..rng.gen_range(1..16)).map(|_| rng.gen()).collect();
            body.splice(i..i, junk);
        }
        _ => {
            // A 32-bit little-endian header field (listpack/ziplist/intset
            // sizes and counts) set to a large value.
            if body.len() > 8 {
                let i = rng.gen_range(0..body.len() - 4);
                body[i..i + 4].copy_from_slice(&rng.gen_range(1u32 << 20..u32::MAX).to_le_bytes());
            }
        }
    }
}

#[test]
fn mutated_payloads_never_panic() {
    let bodies: Vec<Vec<u8>> = FIXTURES
        .iter()
        .map(|f| {
            let payload = unhex(f.payload_hex);
            payload[..payload.len() - 10].to_vec()
        })
        .collect();
    let mut rng = StdRng::seed_from_u64(0x5eed_cafe);
    let mut decoded = 0;
    for case in 0..CASES_PER_SEED {
        let mut body = bodies[case % bodies.len()].clone();
        for _ in 0..rng.gen_range(1..4) {
            if body.is_empty() {
                break;
            }
            mutate(&mut rng, &mut body);
        }
        decoded += decodes(&body) as usize;
    }
    // Some mutations are harmless (a flipped bit in a string's content).
    assert!(decoded > 0 && decoded < CASES_PER_SEED, "{decoded} of {CASES_PER_SEED} decoded");
}

#[test]
fn random_bodies_never_panic() {
    let mut rng = StdRng::seed_from_u64(42);
    for _ in 0..CASES_PER_SEED {
        let len = rng.gen_range(0..64);
        let mut body: Vec<u8> = (0..len).map(|_| rng.gen()).collect();
        if let Some(first) = body.first_mut() {
            *first = rng.gen_range(0..22); // mostly known types
        }
        decodes(&body);
    }
}

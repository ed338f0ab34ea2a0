//! PFSELFTEST: the register packing round-trips random values, and sparse
//! and dense sketches fed the same elements agree and stay within six
//! standard errors of the true cardinality up to ten million elements.

use rand::Rng;

use super::{add, count, dense, encoding, new_sparse, register_and_count, Encoding, DENSE_LEN, HEADER_LEN};
use super::{REGISTERS, REGISTER_MAX};

const CYCLES: usize = 1000;
const ELEMENTS: u64 = 10_000_000;

/// Runs the self test; the error is the reply's text (`TESTFAILED ...`).
pub fn self_test(sparse_max_bytes: usize) -> Result<(), String> {
    let mut rng = rand::thread_rng();
    registers_round_trip(&mut rng)?;
    estimates_hold(rng.gen(), sparse_max_bytes)
}

fn registers_round_trip(rng: &mut impl Rng) -> Result<(), String> {
    let mut registers = vec![0u8; DENSE_LEN - HEADER_LEN];
    let mut expected = vec![0u8; REGISTERS];
    for _ in 0..CYCLES {
        for (i, slot) in expected.iter_mut().enumerate() {
            *slot = rng.gen::<u8>() & REGISTER_MAX;
            dense::put(&mut registers, i, *slot);
        }
        for (i, &want) in expected.iter().enumerate() {
            let got = dense::get(&registers, i);
            if got != want {
                return Err(format!("TESTFAILED Register {i} should be {want} but is {got}"));
            }
        }
    }
    Ok(())
}

fn estimates_hold(seed: u64, sparse_max_bytes: usize) -> Result<(), String> {
    let mut reference = vec![0u8; DENSE_LEN];
    reference[..4].copy_from_slice(b"HYLL");
    let mut hll = new_sparse();
    let relative_error = 1.04 / (REGISTERS as f64).sqrt();
    let mut checkpoint: u64 = 1;
    for j in 1..=ELEMENTS {
        let element = (j ^ seed).to_le_bytes();
        let (index, value) = register_and_count(&element);
        dense::raise(&mut reference[HEADER_LEN..], index, value);
        add(&mut hll, &element, sparse_max_bytes).map_err(|e| e.to_string())?;
        if j != checkpoint {
            continue;
        }
        if j < (sparse_max_bytes / 2) as u64 && encoding(&hll) != Encoding::Sparse {
            return Err("TESTFAILED sparse encoding not used".into());
        }
        let expected = count(&reference).map_err(|e| e.to_string())?;
        if count(&hll).map_err(|e| e.to_string())? != expected {
            return Err("TESTFAILED dense/sparse disagree".into());
        }
        let max_error = if j == 10 { 1 } else { (relative_error * 6.0 * checkpoint as f64).ceil() as u64 };
        let error = checkpoint.abs_diff(expected);
        if error > max_error {
            return Err(format!("TESTFAILED Too big error. card:{checkpoint} abserr:{error}"));
        }
        checkpoint *= 10;
    }
    Ok(())
}

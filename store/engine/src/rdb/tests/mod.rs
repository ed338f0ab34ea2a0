//! Whole-payload tests: Redis-produced fixtures (decode, readback, and
//! byte-identical re-encoding), round trips of values built in Cairn, every
//! decode error path, and a seeded fuzz of mutated payloads.

mod canonical;
mod errors;
mod file;
mod fixtures;
mod fixtures_test;
mod fuzz;
mod round_trip;
mod valkey;
mod valkey_file;

/// A value's length as Redis's length commands give it (STRLEN, HLEN,
/// LLEN, SCARD, ZCARD; 0 for a stream), for readback checks.
pub fn value_len(value: &crate::value::Value) -> usize {
    use crate::value::Value;
    match value {
        Value::Str(s) => s.with_bytes(|b| b.len()),
        Value::Hash(h) => h.len(),
        Value::List(l) => l.len(),
        Value::Set(s) => s.len(),
        Value::ZSet(z) => z.len(),
        Value::Stream(_) => 0,
    }
}

/// Bytes from hex (fixtures and hand-built payloads).
pub fn unhex(hex: &str) -> Vec<u8> {
    (0..hex.len() / 2).map(|i| u8::from_str_radix(&hex[2 * i..2 * i + 2], 16).unwrap_or(0)).collect()
}

//! Every fixture decodes to what redis-server 7.0.15 holds after RESTORE,
//! and re-encodes to Redis's exact bytes where Redis wrote no LZF string
//! (and the value's order is deterministic: not a hash table's).

use super::canonical::canonical;
use super::fixtures::FIXTURES;
use super::unhex;
use crate::rdb::{dump_payload, restore_payload};
use crate::value::Value;

#[test]
fn fixtures_decode_to_redis_readback() {
    for f in FIXTURES {
        let payload = unhex(f.payload_hex);
        let value = restore_payload(&payload, false).unwrap_or_else(|e| panic!("{}: {e}", f.name));
        assert_eq!(canonical(&value), f.readback, "{}", f.name);
    }
}

/// Whether Cairn's order for the value is Redis's (not a hash table's).
fn deterministic_order(value: &Value) -> bool {
    !matches!(value.encoding(), "hashtable")
}

#[test]
fn fixtures_reencode_byte_for_byte() {
    let mut compared = 0;
    for f in FIXTURES.iter().filter(|f| f.uncompressed && !f.name.starts_with("rdb_") && !f.name.starts_with("legacy"))
    {
        let payload = unhex(f.payload_hex);
        let value = restore_payload(&payload, false).unwrap_or_else(|e| panic!("{}: {e}", f.name));
        if deterministic_order(&value) {
            assert_eq!(dump_payload(&value), payload, "{}", f.name);
            compared += 1;
        }
    }
    assert!(compared >= 10, "only {compared} fixtures compared");
}

#[test]
fn every_fixture_round_trips_through_cairns_encoding() {
    for f in FIXTURES {
        let value = restore_payload(&unhex(f.payload_hex), false).unwrap_or_else(|e| panic!("{}: {e}", f.name));
        let again = restore_payload(&dump_payload(&value), false).unwrap_or_else(|e| panic!("{}: {e}", f.name));
        assert_eq!(canonical(&again), f.readback, "{}", f.name);
    }
}

//! The object types a DUMP payload's RDB version defines that Cairn cannot
//! hold: hashes with field expiration times (Valkey 9's type 22 under its
//! version 80, Redis 7.4's types 22 to 25 under version 12). RESTORE refuses
//! them by name, with Redis's `Bad data format` reply and what the payload
//! holds, rather than the bare reply it gives a damaged payload. The same
//! bytes under an older version are no type at all: plain bad data.

use super::file_format::{Format, Magic, NEWEST_REDIS, VALKEY_80};
use super::payload::VALKEY_VERSION;

const VALKEY_FIELD_TTL_HASH: &str = "Bad data format: the payload holds Valkey's hash with field expiration times \
     (RDB type 22), which Cairn does not support";
const REDIS_FIELD_TTL_HASH: &str = "Bad data format: the payload holds Redis 7.4's hash with field expiration times, \
     which Cairn does not support";

/// The reply refusing `body` (a payload's object, its type byte first)
/// when payload version `version` says that type is one Cairn cannot hold.
pub fn refusal(version: u16, body: &[u8]) -> Option<&'static str> {
    let rdb_type = *body.first()?;
    let format = if version == VALKEY_VERSION {
        Format { magic: Magic::Valkey, version: VALKEY_80 }
    } else if u32::from(version) == NEWEST_REDIS {
        Format { magic: Magic::Redis, version: NEWEST_REDIS }
    } else {
        return None;
    };
    format.field_ttl_hash(rdb_type)?;
    Some(match format.magic {
        Magic::Valkey => VALKEY_FIELD_TTL_HASH,
        Magic::Redis => REDIS_FIELD_TTL_HASH,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn field_ttl_hashes_are_named_under_the_versions_that_define_them() {
        assert_eq!(refusal(80, b"\x16\x02"), Some(VALKEY_FIELD_TTL_HASH));
        assert_eq!(refusal(80, b"\x17\x02"), None);
        assert_eq!(refusal(80, b"\x15\x02"), None);
        for t in 22u8..=25 {
            assert_eq!(refusal(12, &[t, 2]), Some(REDIS_FIELD_TTL_HASH), "type {t}");
        }
        assert_eq!(refusal(12, b"\x1a"), None);
    }

    #[test]
    fn older_versions_and_empty_bodies_are_left_to_the_decoder() {
        for version in [9, 10, 11] {
            assert_eq!(refusal(version, b"\x16\x02"), None, "version {version}");
        }
        assert_eq!(refusal(80, b""), None);
    }
}

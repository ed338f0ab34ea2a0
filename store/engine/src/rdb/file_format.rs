//! The format an RDB file declares in its 9-byte header, and what its type
//! bytes mean under it. Two magics exist:
//!
//! - `REDIS` + 4 digits: Redis (1 to 11 up to 7.2, 12 from 7.4) and Valkey
//!   before 9.0 (11). Valkey reserves 12 to 79 for Redis and refuses
//!   `REDIS` with a version above 79; so does Cairn.
//! - `VALKEY` + 3 digits: Valkey 9.0 and 9.1 write `VALKEY080` (Redis
//!   7.2's types plus its own). A `VALKEY` header never carries 79 or less;
//!   81 (Valkey 9.2) is newer than Cairn reads.
//!
//! Past Redis 7.2's last type (21) the two diverge: type 22 is Valkey 9's
//! hash with per-field expiration times (`RDB_TYPE_HASH_2`), while 22 to 25
//! are Redis 7.4's hashes with field expiration times. Cairn has no field
//! TTLs, so both are refused by name ([`Format::field_ttl_hash`]).

use super::file_error::RdbFileError;

/// The newest `REDIS` version read (Redis 7.4).
pub const NEWEST_REDIS: u32 = 12;
/// The one `VALKEY` version read (Valkey 9.0 and 9.1).
pub const VALKEY_80: u32 = 80;
/// The highest version a `REDIS` header may carry: 80 and up are Valkey's.
const REDIS_MAGIC_MAX: u32 = 79;

/// Which server family wrote the file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Magic {
    Redis,
    Valkey,
}

/// A file's magic and RDB version.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Format {
    pub magic: Magic,
    pub version: u32,
}

/// Valkey 9's hash with per-field expiration times.
const VALKEY_HASH_2: u8 = 22;
/// Redis 7.4's hashes with field expiration times (`HASH_METADATA_PRE_GA`,
/// `HASH_LISTPACK_EX_PRE_GA`, `HASH_METADATA`, `HASH_LISTPACK_EX`).
const REDIS_FIELD_TTL_HASHES: std::ops::RangeInclusive<u8> = 22..=25;

impl Format {
    /// Reads the header, refusing any magic or version Cairn cannot read.
    pub fn parse(header: &[u8; 9]) -> Result<Format, RdbFileError> {
        let (magic, digits) = if let Some(digits) = header.strip_prefix(b"REDIS") {
            (Magic::Redis, digits)
        } else if let Some(digits) = header.strip_prefix(b"VALKEY") {
            (Magic::Valkey, digits)
        } else {
            return Err(RdbFileError::NotRdb);
        };
        if !digits.iter().all(u8::is_ascii_digit) {
            return Err(RdbFileError::NotRdb);
        }
        let version = digits.iter().fold(0u32, |v, d| v * 10 + (d - b'0') as u32);
        let readable = match magic {
            Magic::Redis => (1..=NEWEST_REDIS).contains(&version),
            Magic::Valkey => version == VALKEY_80,
        };
        if !readable {
            let header = String::from_utf8_lossy(header).into_owned();
            let why = match magic {
                Magic::Redis if version > REDIS_MAGIC_MAX => "a REDIS header never carries a Valkey version",
                Magic::Valkey if version <= REDIS_MAGIC_MAX => "a VALKEY header carries 80 or more",
                _ if version == 0 => "there is no version 0",
                _ => "a newer format than Cairn reads",
            };
            return Err(RdbFileError::Version { header, why });
        }
        Ok(Format { magic, version })
    }

    /// The header as written: `REDIS0011`, `VALKEY080`.
    pub fn header(&self) -> String {
        match self.magic {
            Magic::Redis => format!("REDIS{:04}", self.version),
            Magic::Valkey => format!("VALKEY{:03}", self.version),
        }
    }

    /// What a type byte past Redis 7.2's names when it is a hash with field
    /// expiration times in this format, or `None`.
    pub fn field_ttl_hash(&self, rdb_type: u8) -> Option<&'static str> {
        match self.magic {
            Magic::Valkey if rdb_type == VALKEY_HASH_2 => Some("Valkey 9's hash with field expiration times (HASH_2)"),
            Magic::Redis if REDIS_FIELD_TTL_HASHES.contains(&rdb_type) => {
                Some("Redis 7.4's hash with field expiration times")
            }
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(header: &[u8]) -> Result<Format, RdbFileError> {
        Format::parse(header.try_into().expect("9 bytes"))
    }

    #[test]
    fn each_magic_carries_its_own_versions() {
        assert_eq!(parse(b"REDIS0001").ok(), Some(Format { magic: Magic::Redis, version: 1 }));
        assert_eq!(parse(b"REDIS0012").ok(), Some(Format { magic: Magic::Redis, version: 12 }));
        assert_eq!(parse(b"VALKEY080").ok(), Some(Format { magic: Magic::Valkey, version: 80 }));
        assert_eq!(parse(b"VALKEY080").map(|f| f.header()).ok().as_deref(), Some("VALKEY080"));
        assert_eq!(parse(b"REDIS0009").map(|f| f.header()).ok().as_deref(), Some("REDIS0009"));
        for header in [&b"REDIS0000"[..], b"REDIS0013", b"REDIS0080", b"VALKEY011", b"VALKEY079", b"VALKEY081"] {
            let err = parse(header).unwrap_err();
            assert!(matches!(&err, RdbFileError::Version { .. }), "{err}");
            assert!(err.to_string().contains(std::str::from_utf8(header).unwrap()), "{err}");
        }
        for header in [&b"VALKEY08x"[..], b"VALKEI080", b"REDIS001 ", b"redis0010"] {
            assert!(matches!(parse(header), Err(RdbFileError::NotRdb)));
        }
    }

    #[test]
    fn type_22_means_a_field_ttl_hash_in_both_families_and_23_to_25_only_in_redis() {
        let valkey = Format { magic: Magic::Valkey, version: 80 };
        let redis = Format { magic: Magic::Redis, version: 12 };
        assert!(valkey.field_ttl_hash(22).is_some_and(|n| n.contains("HASH_2")));
        assert_eq!(valkey.field_ttl_hash(23), None);
        assert!((22..=25).all(|t| redis.field_ttl_hash(t).is_some_and(|n| n.contains("Redis 7.4"))));
        assert_eq!(redis.field_ttl_hash(26), None);
        assert_eq!(redis.field_ttl_hash(21), None);
    }
}

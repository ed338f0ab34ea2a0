//! The DUMP framing (`createDumpPayload` / `verifyDumpPayload`): the
//! object, then the RDB version (2 bytes little-endian), then the CRC-64 of
//! everything before it (8 bytes little-endian).

use super::crc64::crc64;
use super::error::RdbError;

/// The RDB version Redis 7.0 writes.
pub const WRITTEN_VERSION: u16 = 10;
/// The newest Redis RDB version accepted: Redis 7.2 writes 11, 7.4 writes
/// 12; the types they add that Cairn can hold (set listpacks, streams with
/// consumer active times) are decoded, the others refused by type.
pub const NEWEST_READ_VERSION: u16 = 12;
/// The RDB version Valkey 9.0 and 9.1 write (Valkey 7.2 to 8.1 write 11):
/// Redis 7.2's types, plus its hash with field TTLs (type 22, refused),
/// under a version number of Valkey's own (Valkey leaves 12 to 79 to Redis).
pub const VALKEY_VERSION: u16 = 80;
const FOOTER_LEN: usize = 10;

/// Seals a payload body.
pub fn seal(mut body: Vec<u8>) -> Vec<u8> {
    body.extend_from_slice(&WRITTEN_VERSION.to_le_bytes());
    let crc = crc64(0, &body);
    body.extend_from_slice(&crc.to_le_bytes());
    body
}

/// The RDB version a payload's footer declares (None: too short to have one).
pub fn version(payload: &[u8]) -> Option<u16> {
    let at = payload.len().checked_sub(FOOTER_LEN)?;
    Some(u16::from_le_bytes([payload[at], payload[at + 1]]))
}

/// The body of a payload whose version is one we read and whose CRC-64
/// matches (unless `skip_checksum`, Redis's `DEBUG
/// SET-SKIP-CHECKSUM-VALIDATION`).
pub fn open(payload: &[u8], skip_checksum: bool) -> Result<&[u8], RdbError> {
    let body_len = payload.len().checked_sub(FOOTER_LEN).ok_or(RdbError::Framing)?;
    let (body, footer) = payload.split_at(body_len);
    let version = u16::from_le_bytes([footer[0], footer[1]]);
    if version > NEWEST_READ_VERSION && version != VALKEY_VERSION {
        return Err(RdbError::Framing);
    }
    if skip_checksum {
        return Ok(body);
    }
    let mut crc = [0u8; 8];
    crc.copy_from_slice(&footer[2..]);
    if crc64(0, &payload[..payload.len() - 8]) != u64::from_le_bytes(crc) {
        return Err(RdbError::Framing);
    }
    Ok(body)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn seals_as_redis_and_opens() {
        // `SET k 1` then `DUMP k` in redis-server 7.0.15.
        let redis = b"\x00\xc0\x01\x0a\x00\x26\x78\xe7\xb6\xd1\x01\x11\xfc";
        assert_eq!(seal(b"\x00\xc0\x01".to_vec()), redis);
        assert_eq!(open(redis, false), Ok(&b"\x00\xc0\x01"[..]));
    }

    #[test]
    fn opens_valkey_payloads() {
        // `SET s hello` then `DUMP s` in valkey-server 9.1.2 (RDB version 80).
        let valkey = b"\x00\x05hello\x50\x00\xac\x58\x16\xe7\xfb\x66\x47\xfe";
        assert_eq!(open(valkey, false), Ok(&b"\x00\x05hello"[..]));
        let mut between = b"\x00\x05hello".to_vec();
        between.extend_from_slice(&79u16.to_le_bytes());
        let crc = crc64(0, &between);
        between.extend_from_slice(&crc.to_le_bytes());
        assert_eq!(open(&between, false), Err(RdbError::Framing));
    }

    #[test]
    fn reads_the_footer_version() {
        assert_eq!(version(&seal(b"\x00\xc0\x01".to_vec())), Some(WRITTEN_VERSION));
        assert_eq!(version(b"\x00\x05hello\x50\x00\xac\x58\x16\xe7\xfb\x66\x47\xfe"), Some(VALKEY_VERSION));
        assert_eq!(version(&[0; 9]), None);
    }

    #[test]
    fn refuses_short_newer_or_damaged_payloads() {
        let good = seal(b"\x00\xc0\x01".to_vec());
        assert_eq!(open(&good[..9], false), Err(RdbError::Framing));
        let mut damaged = good.clone();
        damaged[1] ^= 1;
        assert_eq!(open(&damaged, false), Err(RdbError::Framing));
        assert!(open(&damaged, true).is_ok());
        let mut newer = good[..3].to_vec();
        newer.extend_from_slice(&13u16.to_le_bytes());
        let crc = crc64(0, &newer);
        newer.extend_from_slice(&crc.to_le_bytes());
        assert_eq!(open(&newer, false), Err(RdbError::Framing));
        assert_eq!(open(&newer, true), Err(RdbError::Framing));
    }
}

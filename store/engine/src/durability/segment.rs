//! WAL segments: fixed-size, preallocated files named by the LSN of their
//! first record, and how one segment's bytes are scanned.
//!
//! ```text
//! wal-<base lsn, 20 digits>.log
//! offset  size  field
//! 0       8     magic "CAIRNWAL"
//! 8       4     format version (1)
//! 12      4     reserved (0)
//! 16      8     base LSN: the first record's LSN
//! 24      8     segment size in bytes
//! 28..60        reserved (0)
//! 60      4     crc32c of bytes 0..60
//! 64      ...   records back to back (see `record`), then whatever the
//!               file held before: zeros when new, old records when reused
//! ```
//!
//! A segment is zero-filled and fsynced before it is first used and is
//! reused (renamed) rather than deleted, so writing records never changes
//! the file size and `fdatasync` commits data only.

use super::record::{self, Lsn, RecordRef};

pub const MAGIC: &[u8; 8] = b"CAIRNWAL";
pub const VERSION: u32 = 1;
pub const HEADER_LEN: usize = 64;

/// File name of the segment starting at `base`.
pub fn name(base: Lsn) -> String {
    format!("wal-{base:020}.log")
}

/// The base LSN in a segment file name.
pub fn parse_name(name: &str) -> Option<Lsn> {
    name.strip_prefix("wal-")?.strip_suffix(".log")?.parse().ok()
}

/// File name of a prepared spare segment.
pub fn spare_name(n: u64) -> String {
    format!("wal-spare-{n:06}.tmp")
}

pub fn is_spare_name(name: &str) -> bool {
    name.starts_with("wal-spare-") && name.ends_with(".tmp")
}

/// A segment's header.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SegmentHeader {
    pub base_lsn: Lsn,
    pub size: u64,
}

impl SegmentHeader {
    pub fn encode(&self) -> [u8; HEADER_LEN] {
        let mut h = [0u8; HEADER_LEN];
        h[0..8].copy_from_slice(MAGIC);
        h[8..12].copy_from_slice(&VERSION.to_le_bytes());
        h[16..24].copy_from_slice(&self.base_lsn.to_le_bytes());
        h[24..32].copy_from_slice(&self.size.to_le_bytes());
        let crc = super::checksum::crc32c(&h[..60]);
        h[60..64].copy_from_slice(&crc.to_le_bytes());
        h
    }

    /// Decodes a header; `None` if it is not a valid one.
    pub fn decode(buf: &[u8]) -> Option<SegmentHeader> {
        let h = buf.get(..HEADER_LEN)?;
        if &h[0..8] != MAGIC || u32::from_le_bytes(h[8..12].try_into().ok()?) != VERSION {
            return None;
        }
        if super::checksum::crc32c(&h[..60]) != u32::from_le_bytes(h[60..64].try_into().ok()?) {
            return None;
        }
        Some(SegmentHeader {
            base_lsn: u64::from_le_bytes(h[16..24].try_into().ok()?),
            size: u64::from_le_bytes(h[24..32].try_into().ok()?),
        })
    }
}

/// How the scan of a segment ended.
#[derive(Debug, PartialEq, Eq)]
pub enum ScanEnd {
    /// Zeros or records of an earlier use of the file: the log ends here.
    Clean,
    /// An incomplete or damaged record that nothing durable follows: a torn
    /// tail left by a crash.
    Torn { reason: String },
    /// A damaged record followed by a record written after it was durable:
    /// real corruption.
    Corrupt { reason: String },
}

/// The result of scanning one segment.
#[derive(Debug)]
pub struct Scan {
    /// Offset just past the last valid record.
    pub end_offset: usize,
    /// The LSN the next record must have.
    pub next_lsn: Lsn,
    pub end: ScanEnd,
}

/// Walks the records of a segment (`bytes` is the whole file) starting with
/// `expected` as the first LSN, calling `visit` for each valid record in
/// order.
pub fn scan<'a, E>(
    bytes: &'a [u8],
    mut expected: Lsn,
    mut visit: impl FnMut(RecordRef<'a>) -> Result<(), E>,
) -> Result<Scan, E> {
    let mut pos = HEADER_LEN.min(bytes.len());
    loop {
        let rest = &bytes[pos..];
        let problem = match record::decode_ref(rest) {
            Ok((rec, len)) if rec.lsn == expected => {
                visit(rec)?;
                pos += len;
                expected += 1;
                continue;
            }
            Ok((rec, _)) if rec.lsn < expected => None,
            Ok((rec, _)) => Some(format!("record has LSN {} where {} was expected", rec.lsn, expected)),
            Err(record::DecodeError::BadLength(0)) => None,
            // The zero-filled tail the writer left when the next record did
            // not fit: fewer bytes than a record's length prefix.
            Err(record::DecodeError::Incomplete(_)) if rest.iter().all(|&b| b == 0) => None,
            Err(e) => Some(e.to_string()),
        };
        let end = match (problem, durable_record_after(bytes, pos + 1, expected)) {
            (_, Some(at)) => ScanEnd::Corrupt {
                reason: format!("damaged record at offset {pos}, yet a record written after LSN {expected} was durable follows at offset {at}"),
            },
            (None, None) => ScanEnd::Clean,
            (Some(reason), None) => ScanEnd::Torn { reason },
        };
        return Ok(Scan { end_offset: pos, next_lsn: expected, end });
    }
}

/// The offset of a valid record at or after `from` that was made when LSN
/// `lost` was already durable (so `lost` cannot legitimately be missing).
fn durable_record_after(bytes: &[u8], from: usize, lost: Lsn) -> Option<usize> {
    let mut pos = from;
    while pos + record::PREFIX_LEN + record::MIN_BODY_LEN <= bytes.len() {
        let rest = &bytes[pos..];
        if rest[..4] == [0, 0, 0, 0] {
            // A record's length is never 0, so its first non-zero byte is
            // within its first four: skip runs of zeros quickly.
            match rest.iter().position(|&b| b != 0) {
                Some(nonzero) => {
                    pos += nonzero.saturating_sub(3).max(1);
                    continue;
                }
                None => return None,
            }
        }
        let plausible = record::claimed_len(rest).is_some_and(|l| (record::MIN_BODY_LEN..=rest.len()).contains(&l))
            && record::peek_lsn(rest).is_some_and(|l| l >= lost)
            && record::peek_durable_hint(rest).is_some_and(|h| h >= lost);
        if plausible && record::check_frame(rest).is_ok() {
            return Some(pos);
        }
        pos += 1;
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::durability::record::{encode, put_command, Header, Kind};

    fn segment(records: &[(Lsn, Lsn)], size: usize) -> Vec<u8> {
        let mut buf =
            SegmentHeader { base_lsn: records.first().map_or(1, |r| r.0), size: size as u64 }.encode().to_vec();
        for &(lsn, hint) in records {
            let header = Header { lsn, time_ms: 0, durable_hint: hint, kind: Kind::Command };
            encode(&mut buf, header, 1, |o| put_command(o, 0, &[b"SET", b"k", b"v"]));
        }
        buf.resize(size, 0);
        buf
    }

    fn count(bytes: &[u8], first: Lsn) -> (usize, Scan) {
        let mut n = 0;
        let s = scan::<()>(bytes, first, |_| {
            n += 1;
            Ok(())
        })
        .unwrap();
        (n, s)
    }

    #[test]
    fn names() {
        assert_eq!(parse_name(&name(42)), Some(42));
        assert_eq!(parse_name("wal-x.log"), None);
        assert!(is_spare_name(&spare_name(3)));
    }

    #[test]
    fn clean_end_at_zeros() {
        let seg = segment(&[(1, 0), (2, 0), (3, 1)], 4096);
        let (n, s) = count(&seg, 1);
        assert_eq!((n, s.next_lsn, s.end), (3, 4, ScanEnd::Clean));
    }

    #[test]
    fn a_zero_tail_shorter_than_a_length_prefix_is_a_clean_end() {
        // A segment filled up to a few bytes before its end: the writer
        // rotated because the next record did not fit in what was left.
        let full = segment(&[(1, 0), (2, 0), (3, 1)], 4096);
        let (_, s) = count(&full, 1);
        for left in 1..record::PREFIX_LEN {
            let seg = &full[..s.end_offset + left];
            let (n, scan) = count(seg, 1);
            assert_eq!((n, scan.next_lsn, scan.end), (3, 4, ScanEnd::Clean), "{left} bytes left");
        }
        // Non-zero bytes there are the start of a torn record.
        let mut seg = full[..s.end_offset + 3].to_vec();
        seg[s.end_offset] = 7;
        assert!(matches!(count(&seg, 1).1.end, ScanEnd::Torn { .. }));
    }

    #[test]
    fn torn_tail_is_not_corruption() {
        let mut seg = segment(&[(1, 0), (2, 0), (3, 1)], 4096);
        let third = {
            let (_, s) = count(&segment(&[(1, 0), (2, 0)], 4096), 1);
            s.end_offset
        };
        seg[third + 12] ^= 0xff;
        let (n, s) = count(&seg, 1);
        assert_eq!(n, 2);
        assert!(matches!(s.end, ScanEnd::Torn { .. }), "{:?}", s.end);
    }

    #[test]
    fn damage_before_a_durable_record_is_corruption() {
        // Record 4 was made when 2 was durable: losing 2 is corruption.
        let mut seg = segment(&[(1, 0), (2, 0), (3, 1), (4, 2)], 4096);
        let second = {
            let (_, s) = count(&segment(&[(1, 0)], 4096), 1);
            s.end_offset
        };
        seg[second + 12] ^= 0xff;
        let (n, s) = count(&seg, 1);
        assert_eq!(n, 1);
        assert!(matches!(s.end, ScanEnd::Corrupt { .. }), "{:?}", s.end);
    }

    #[test]
    fn stale_records_of_a_reused_segment_end_the_log() {
        let old = segment(&[(1, 0), (2, 1), (3, 2), (4, 3)], 4096);
        let mut seg = old.clone();
        let fresh = segment(&[(10, 9)], 4096);
        let (_, s) = count(&fresh, 10);
        seg[..s.end_offset].copy_from_slice(&fresh[..s.end_offset]);
        // The rest of the old records no longer line up; whatever they decode
        // to has a smaller LSN or a bad frame.
        let (n, scan) = count(&seg, 10);
        assert_eq!(n, 1);
        assert!(!matches!(scan.end, ScanEnd::Corrupt { .. }), "{:?}", scan.end);
    }
}

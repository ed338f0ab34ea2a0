//! When a certificate expires: its `notAfter`, read from the DER encoding.
//!
//! Only the path to the validity is walked (RFC 5280, 4.1):
//!
//! ```text
//! Certificate ::= SEQUENCE { tbsCertificate, signatureAlgorithm, signature }
//! TBSCertificate ::= SEQUENCE {
//!     version [0] EXPLICIT OPTIONAL, serialNumber INTEGER,
//!     signature AlgorithmIdentifier, issuer Name,
//!     validity SEQUENCE { notBefore Time, notAfter Time }, ... }
//! Time ::= UTCTime (YYMMDDHHMMSSZ) | GeneralizedTime (YYYYMMDDHHMMSSZ)
//! ```
//!
//! Anything else (a malformed certificate, a time with fractions or an
//! offset, which RFC 5280 forbids) gives `None`: the metric is then absent,
//! and rustls judges the certificate itself.

const SEQUENCE: u8 = 0x30;
const INTEGER: u8 = 0x02;
const EXPLICIT_0: u8 = 0xa0;
const UTC_TIME: u8 = 0x17;
const GENERALIZED_TIME: u8 = 0x18;

/// Unix time (seconds) of the certificate's `notAfter`.
pub fn not_after_unix(der: &[u8]) -> Option<i64> {
    let (certificate, _) = expect(der, SEQUENCE)?;
    let (mut tbs, _) = expect(certificate, SEQUENCE)?;
    if tbs.first() == Some(&EXPLICIT_0) {
        tbs = element(tbs)?.2;
    }
    let (_, after_serial) = expect(tbs, INTEGER)?;
    let (_, after_signature) = expect(after_serial, SEQUENCE)?;
    let (_, after_issuer) = expect(after_signature, SEQUENCE)?;
    let (validity, _) = expect(after_issuer, SEQUENCE)?;
    let (_, _, after_not_before) = element(validity)?;
    let (tag, not_after, _) = element(after_not_before)?;
    parse_time(tag, not_after)
}

/// The content of the element at the start of `input` if its tag is `tag`,
/// and what follows it.
fn expect(input: &[u8], tag: u8) -> Option<(&[u8], &[u8])> {
    let (found, content, rest) = element(input)?;
    (found == tag).then_some((content, rest))
}

/// The tag, content and remainder of the DER element at the start of
/// `input` (single-byte tags; definite lengths up to four bytes).
fn element(input: &[u8]) -> Option<(u8, &[u8], &[u8])> {
    let (&tag, rest) = input.split_first()?;
    let (&first, rest) = rest.split_first()?;
    let (len, rest) = if first < 0x80 {
        (usize::from(first), rest)
    } else {
        let width = usize::from(first & 0x7f);
        if width == 0 || width > 4 || rest.len() < width {
            return None;
        }
        let len = rest[..width].iter().fold(0usize, |n, b| (n << 8) | usize::from(*b));
        (len, &rest[width..])
    };
    (rest.len() >= len).then(|| (tag, &rest[..len], &rest[len..]))
}

/// A UTCTime or GeneralizedTime in the `Z` form RFC 5280 requires.
fn parse_time(tag: u8, text: &[u8]) -> Option<i64> {
    let text = std::str::from_utf8(text).ok()?.strip_suffix('Z')?;
    if !text.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let (year, rest) = match (tag, text.len()) {
        (UTC_TIME, 12) => {
            let yy: i64 = text[..2].parse().ok()?;
            (if yy >= 50 { 1900 + yy } else { 2000 + yy }, &text[2..])
        }
        (GENERALIZED_TIME, 14) => (text[..4].parse().ok()?, &text[4..]),
        _ => return None,
    };
    let field = |i: usize| rest[i..i + 2].parse::<i64>().ok();
    let (month, day, hour, minute, second) = (field(0)?, field(2)?, field(4)?, field(6)?, field(8)?);
    if !(1..=12).contains(&month) || !(1..=31).contains(&day) || hour > 23 || minute > 59 || second > 60 {
        return None;
    }
    Some(days_from_civil(year, month, day) * 86_400 + hour * 3_600 + minute * 60 + second)
}

/// Days since 1970-01-01 of a proleptic Gregorian date (H. Hinnant's
/// `days_from_civil`).
fn days_from_civil(year: i64, month: i64, day: i64) -> i64 {
    let year = if month <= 2 { year - 1 } else { year };
    let era = year.div_euclid(400);
    let year_of_era = year - era * 400;
    let day_of_year = (153 * (month + if month > 2 { -3 } else { 9 }) + 2) / 5 + day - 1;
    let day_of_era = year_of_era * 365 + year_of_era / 4 - year_of_era / 100 + day_of_year;
    era * 146_097 + day_of_era - 719_468
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn calendar_dates_become_unix_days() {
        assert_eq!(days_from_civil(1970, 1, 1), 0);
        assert_eq!(days_from_civil(2000, 3, 1), 11_017);
        assert_eq!(days_from_civil(2026, 12, 7), 20_794);
        assert_eq!(days_from_civil(1969, 12, 31), -1);
    }

    #[test]
    fn both_time_forms_parse_and_bad_ones_do_not() {
        assert_eq!(parse_time(UTC_TIME, b"700101000000Z"), Some(0));
        assert_eq!(parse_time(UTC_TIME, b"491231235959Z"), Some(2_524_607_999));
        assert_eq!(parse_time(GENERALIZED_TIME, b"20500101000000Z"), Some(2_524_608_000));
        assert_eq!(parse_time(UTC_TIME, b"701301000000Z"), None, "month 13");
        assert_eq!(parse_time(UTC_TIME, b"700101000000+0100"), None, "offset form");
        assert_eq!(parse_time(GENERALIZED_TIME, b"700101000000Z"), None, "wrong width");
        assert_eq!(parse_time(UTC_TIME, b"7001010000-0Z"), None);
    }

    #[test]
    fn truncated_or_foreign_input_gives_none() {
        assert_eq!(not_after_unix(&[]), None);
        assert_eq!(not_after_unix(&[0x30, 0x82, 0xff]), None);
        assert_eq!(not_after_unix(&[0x30, 0x03, 0x02, 0x01, 0x00]), None);
        assert_eq!(element(&[0x04, 0x85, 1, 1, 1, 1, 1]), None, "five length bytes");
    }
}

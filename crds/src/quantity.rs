//! Sizes as the CRDs accept them: binary-unit sizes (`Mi`, `Gi`, `Ti`) for storage and memory,
//! which the CRD schema restricts to [`BINARY_QUANTITY_PATTERN`]; and general quantities without
//! an exponent (`800Mi`, `1G`, `1.5Gi`) for `maxmemory`.

/// The schema pattern of a size field: a whole number with a binary suffix.
pub const BINARY_QUANTITY_PATTERN: &str = "^[1-9][0-9]{0,8}(Mi|Gi|Ti)$";

const MIB: u64 = 1 << 20;

/// A size that is not `<digits>(Mi|Gi|Ti)`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{value:?} is not a size like 512Mi, 20Gi or 1Ti")]
pub struct QuantityError {
    pub value: String,
}

/// Parses `512Mi`, `20Gi`, `1Ti` into bytes.
pub fn parse_binary_bytes(value: &str) -> Result<u64, QuantityError> {
    let err = || QuantityError { value: value.to_string() };
    let (digits, unit) = value.split_at(value.len().saturating_sub(2));
    let multiplier = match unit {
        "Mi" => MIB,
        "Gi" => MIB << 10,
        "Ti" => MIB << 20,
        _ => return Err(err()),
    };
    if digits.is_empty() || digits.len() > 9 || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return Err(err());
    }
    let n: u64 = digits.parse().map_err(|_| err())?;
    if n == 0 {
        return Err(err());
    }
    Ok(n * multiplier)
}

/// Bytes of a Kubernetes quantity without an exponent: `800Mi`, `1G`, `1.5Gi`, `0`, `1000000`
/// (binary suffixes `Ki`..`Ei`, decimal `k`..`E`), a fraction rounded up to a whole byte as
/// Kubernetes does.
pub fn parse_quantity_bytes(text: &str) -> Option<u64> {
    const SUFFIXES: [(&str, u128); 12] = [
        ("Ki", 1 << 10),
        ("Mi", 1 << 20),
        ("Gi", 1 << 30),
        ("Ti", 1 << 40),
        ("Pi", 1 << 50),
        ("Ei", 1 << 60),
        ("k", 1_000),
        ("M", 1_000_000),
        ("G", 1_000_000_000),
        ("T", 1_000_000_000_000),
        ("P", 1_000_000_000_000_000),
        ("E", 1_000_000_000_000_000_000),
    ];
    let (number, multiplier) =
        SUFFIXES.iter().find_map(|(suffix, m)| text.strip_suffix(suffix).map(|n| (n, *m))).unwrap_or((text, 1));
    let (whole, fraction) = number.split_once('.').unwrap_or((number, ""));
    let digits = |s: &str, max: usize| !s.is_empty() && s.len() <= max && s.bytes().all(|b| b.is_ascii_digit());
    if !digits(whole, 15) || (number.contains('.') && !digits(fraction, 9)) {
        return None;
    }
    let scale = 10u128.pow(u32::try_from(fraction.len()).ok()?);
    let mantissa: u128 = format!("{whole}{fraction}").parse().ok()?;
    u64::try_from((mantissa * multiplier).div_ceil(scale)).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    const GIB: u64 = 1 << 30;

    #[test]
    fn parses_binary_units() {
        assert_eq!(parse_binary_bytes("512Mi"), Ok(512 * MIB));
        assert_eq!(parse_binary_bytes("20Gi"), Ok(20 * 1024 * MIB));
        assert_eq!(parse_binary_bytes("1Ti"), Ok(1024 * 1024 * MIB));
    }

    #[test]
    fn rejects_other_shapes() {
        for bad in ["", "Gi", "0Gi", "1.5Gi", "10G", "10", "-1Gi", "1e3Mi", "1234567890Gi"] {
            assert!(parse_binary_bytes(bad).is_err(), "{bad:?} accepted");
        }
    }

    #[test]
    fn quantities_in_binary_and_decimal_units() {
        for (text, bytes) in [
            ("0", 0),
            ("1000000", 1_000_000),
            ("800Mi", 800 * MIB),
            ("1Gi", GIB),
            ("1.5Gi", 3 * GIB / 2),
            ("1G", 1_000_000_000),
            ("512k", 512_000),
            ("64Ki", 65_536),
            ("2T", 2_000_000_000_000),
            ("0.5", 1),
            ("1.0001k", 1001),
            ("7Ei", 7 << 60),
        ] {
            assert_eq!(parse_quantity_bytes(text), Some(bytes), "{text}");
        }
        for bad in
            ["", "Mi", "1.5.Gi", ".5Gi", "1.Gi", "-1Gi", "1e9", "1gb", "1 Gi", "1GiB", "16Ei", "1234567890123456"]
        {
            assert_eq!(parse_quantity_bytes(bad), None, "{bad:?} accepted");
        }
    }
}

//! Binary-unit sizes (`Mi`, `Gi`, `Ti`) as the CRDs accept them for storage and memory.
//!
//! The CRD schema restricts these fields to [`BINARY_QUANTITY_PATTERN`], so the operator only
//! ever needs to parse this small subset of Kubernetes quantities.

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

#[cfg(test)]
mod tests {
    use super::*;

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
}

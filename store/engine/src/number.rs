//! Numbers as Redis reads and writes them.

/// Parses a signed 64-bit integer with Redis's `string2ll` rules: optional
/// `-`, no `+`, no spaces, no leading zeros, at most 20 characters.
pub fn parse_i64(s: &[u8]) -> Option<i64> {
    if s.is_empty() || s.len() > 20 {
        return None;
    }
    if s == b"0" {
        return Some(0);
    }
    let (negative, digits) = match s[0] {
        b'-' => (true, &s[1..]),
        _ => (false, s),
    };
    if digits.is_empty() || digits[0] == b'0' {
        return None;
    }
    let mut value: u64 = 0;
    for &b in digits {
        if !b.is_ascii_digit() {
            return None;
        }
        value = value.checked_mul(10)?.checked_add(u64::from(b - b'0'))?;
    }
    if negative {
        if value > (i64::MAX as u64) + 1 {
            return None;
        }
        Some((value as i64).wrapping_neg())
    } else {
        i64::try_from(value).ok()
    }
}

/// Parses an unsigned 64-bit integer with the same rules as [`parse_i64`].
pub fn parse_u64(s: &[u8]) -> Option<u64> {
    if s == b"0" {
        return Some(0);
    }
    if s.is_empty() || s.len() > 20 || s[0] == b'0' {
        return None;
    }
    let mut value: u64 = 0;
    for &b in s {
        if !b.is_ascii_digit() {
            return None;
        }
        value = value.checked_mul(10)?.checked_add(u64::from(b - b'0'))?;
    }
    Some(value)
}

/// Parses a float as Redis's `string2ld` does: no leading space, the whole
/// string consumed, NaN refused (infinities are accepted).
pub fn parse_f64(s: &[u8]) -> Option<f64> {
    if s.is_empty() || s[0].is_ascii_whitespace() {
        return None;
    }
    let text = std::str::from_utf8(s).ok()?;
    let value: f64 = match text.to_ascii_lowercase().as_str() {
        "inf" | "+inf" | "infinity" | "+infinity" => f64::INFINITY,
        "-inf" | "-infinity" => f64::NEG_INFINITY,
        _ => text.parse().ok()?,
    };
    (!value.is_nan()).then_some(value)
}

/// Formats a float for humans (INCRBYFLOAT): the shortest decimal that reads
/// back as the same value, without an exponent, "-0" written as "0".
pub fn format_f64_human(value: f64) -> String {
    if value == 0.0 {
        return "0".to_string();
    }
    if value.is_infinite() {
        return if value > 0.0 { "inf" } else { "-inf" }.to_string();
    }
    format!("{value}")
}

/// Formats a float as Redis's `%.17g` reply does (RESP2 doubles), using the
/// shortest round-trip form, and `inf`/`-inf`/`nan` spelled as Redis does.
pub fn format_f64_reply(value: f64, out: &mut Vec<u8>) {
    if value.is_nan() {
        out.extend_from_slice(b"nan");
    } else if value.is_infinite() {
        out.extend_from_slice(if value > 0.0 { b"inf" } else { b"-inf" });
    } else if value == value.trunc() && value.abs() < 1e17 {
        // Integral values print without a fractional part, as %.17g does.
        let mut buf = itoa::Buffer::new();
        out.extend_from_slice(buf.format(value as i64).as_bytes());
    } else {
        let mut buf = ryu::Buffer::new();
        out.extend_from_slice(buf.format_finite(value).as_bytes());
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn strict_integers() {
        assert_eq!(parse_i64(b"123"), Some(123));
        assert_eq!(parse_i64(b"-9223372036854775808"), Some(i64::MIN));
        assert_eq!(parse_i64(b"9223372036854775807"), Some(i64::MAX));
        for bad in [&b"9223372036854775808"[..], b"01", b"+1", b" 1", b"1 ", b"-0", b"", b"-", b"1a"] {
            assert_eq!(parse_i64(bad), None, "{:?}", String::from_utf8_lossy(bad));
        }
    }

    #[test]
    fn floats() {
        assert_eq!(parse_f64(b"1.5"), Some(1.5));
        assert_eq!(parse_f64(b"1e3"), Some(1000.0));
        assert_eq!(parse_f64(b" 1"), None);
        assert_eq!(parse_f64(b"nan"), None);
        assert_eq!(format_f64_human(10.5 + 0.1), "10.6");
        assert_eq!(format_f64_human(3.0), "3");
        assert_eq!(format_f64_human(17179869185.5), "17179869185.5");
    }
}

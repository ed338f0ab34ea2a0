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

/// Formats a float exactly as Redis 7.0's double replies do: C's `%.17g`
/// (17 significant digits, trailing zeros dropped, exponent form below 1e-4
/// and from 1e17), with `inf`/`-inf`/`nan` spelled as Redis does.
pub fn format_f64_reply(value: f64, out: &mut Vec<u8>) {
    if value.is_nan() {
        out.extend_from_slice(b"nan");
    } else if value.is_infinite() {
        out.extend_from_slice(if value > 0.0 { b"inf" } else { b"-inf" });
    } else if value == value.trunc() && value.abs() < 1e17 && !(value == 0.0 && value.is_sign_negative()) {
        // Integral values of at most 17 digits print exactly, without a fraction.
        let mut buf = itoa::Buffer::new();
        out.extend_from_slice(buf.format(value as i64).as_bytes());
    } else {
        format_g17(value, out);
    }
}

/// `%.17g` of a finite value, from Rust's correctly rounded `{:.16e}`.
fn format_g17(value: f64, out: &mut Vec<u8>) {
    use std::io::Write;
    let mut buf = [0u8; 40];
    let mut cursor = std::io::Cursor::new(&mut buf[..]);
    // 17 significant digits never need more than 40 bytes ("-d.16digits e-308").
    let _ = write!(cursor, "{value:.16e}");
    let len = cursor.position() as usize;
    let text = &buf[..len];
    let (negative, text) = match text.split_first() {
        Some((b'-', rest)) => (true, rest),
        _ => (false, text),
    };
    let e_pos = text.iter().position(|&b| b == b'e').unwrap_or(text.len());
    let exponent: i32 = std::str::from_utf8(&text[e_pos + 1..]).ok().and_then(|s| s.parse().ok()).unwrap_or(0);
    // The 17 significant digits, without the decimal point.
    let mut digits: Vec<u8> = text[..e_pos].iter().copied().filter(u8::is_ascii_digit).collect();
    while digits.len() > 1 && digits.last() == Some(&b'0') {
        digits.pop();
    }
    if negative {
        out.push(b'-');
    }
    if !(-4..17).contains(&exponent) {
        out.push(digits[0]);
        if digits.len() > 1 {
            out.push(b'.');
            out.extend_from_slice(&digits[1..]);
        }
        out.push(b'e');
        out.push(if exponent < 0 { b'-' } else { b'+' });
        let magnitude = exponent.unsigned_abs();
        if magnitude < 10 {
            out.push(b'0');
        }
        out.extend_from_slice(itoa::Buffer::new().format(magnitude).as_bytes());
    } else if exponent < 0 {
        out.extend_from_slice(b"0.");
        out.extend(std::iter::repeat_n(b'0', (-exponent - 1) as usize));
        out.extend_from_slice(&digits);
    } else {
        let int_len = exponent as usize + 1;
        if digits.len() <= int_len {
            out.extend_from_slice(&digits);
            out.extend(std::iter::repeat_n(b'0', int_len - digits.len()));
        } else {
            out.extend_from_slice(&digits[..int_len]);
            out.push(b'.');
            out.extend_from_slice(&digits[int_len..]);
        }
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

    fn reply(value: f64) -> String {
        let mut out = Vec::new();
        format_f64_reply(value, &mut out);
        String::from_utf8(out).expect("ascii")
    }

    #[test]
    fn replies_match_printf_g17() {
        // Expected strings are what C's printf("%.17g") prints.
        let cases: &[(f64, &str)] = &[
            (0.0, "0"),
            (-0.0, "-0"),
            (1.0, "1"),
            (-3.0, "-3"),
            (1.5, "1.5"),
            (0.1, "0.10000000000000001"),
            (0.30000000000000004, "0.30000000000000004"),
            (3.25, "3.25"),
            (1.5e-7, "1.4999999999999999e-07"),
            (1e20, "1e+20"),
            (123456789012345678.0, "1.2345678901234568e+17"),
            (99999999999999999.0, "1e+17"),
            (1e16, "10000000000000000"),
            (0.0001, "0.0001"),
            (0.00001, "1.0000000000000001e-05"),
            (f64::MAX, "1.7976931348623157e+308"),
            (5e-324, "4.9406564584124654e-324"),
            (1e-322, "9.8813129168249309e-323"),
            (-2.5e100, "-2.4999999999999999e+100"),
            (1234.5678, "1234.5678"),
            (f64::INFINITY, "inf"),
            (f64::NEG_INFINITY, "-inf"),
        ];
        for (value, expected) in cases {
            assert_eq!(reply(*value), *expected, "{value:e}");
        }
    }
}

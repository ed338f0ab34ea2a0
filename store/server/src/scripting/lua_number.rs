//! Lua 5.1's number ↔ text rules, as the C libraries Redis embeds see them:
//! C's `%.<precision>g` (Lua's `tostring` is `%.14g`, lua-cjson's
//! `encode_number_precision`), and `strtod` (the longest prefix that is a
//! number, as lua-cjson's decoder and Lua's string coercion read them).

/// `value` as C's `printf("%.<precision>g")` prints it (`inf`, `-nan`, ...).
pub fn format_g(value: f64, precision: usize) -> String {
    if value.is_nan() {
        return if value.is_sign_negative() { "-nan" } else { "nan" }.to_string();
    }
    if value.is_infinite() {
        return if value > 0.0 { "inf" } else { "-inf" }.to_string();
    }
    if value == 0.0 {
        return if value.is_sign_negative() { "-0" } else { "0" }.to_string();
    }
    let precision = precision.max(1);
    // %e with precision - 1 digits gives the exponent X that decides the style.
    let scientific = format!("{:.*e}", precision - 1, value);
    let Some((mantissa, exponent)) = scientific.split_once('e') else {
        return scientific;
    };
    let exponent: i32 = exponent.parse().unwrap_or(0);
    if exponent < -4 || exponent >= precision as i32 {
        let sign = if exponent < 0 { '-' } else { '+' };
        format!("{}e{sign}{:02}", strip_fraction_zeros(mantissa), exponent.unsigned_abs())
    } else {
        let decimals = (precision as i32 - 1 - exponent).max(0) as usize;
        strip_fraction_zeros(&format!("{value:.decimals$}")).to_string()
    }
}

/// `%g` drops the trailing zeros of the fraction, and the point if nothing is left.
fn strip_fraction_zeros(text: &str) -> &str {
    if text.contains('.') {
        text.trim_end_matches('0').trim_end_matches('.')
    } else {
        text
    }
}

/// C's `strtod` on `bytes`: the value of its longest numeric prefix and the
/// bytes it takes (decimal with exponent, `0x` hexadecimal with `p`
/// exponent, `inf`, `infinity`, `nan`, `nan(...)`, a leading sign);
/// None when no prefix is a number. Leading white space is not skipped.
pub fn strtod(bytes: &[u8]) -> Option<(f64, usize)> {
    let (negative, start) = match bytes.first() {
        Some(b'-') => (true, 1),
        Some(b'+') => (false, 1),
        _ => (false, 0),
    };
    let rest = &bytes[start..];
    let (magnitude, used) = special(rest).or_else(|| hexadecimal(rest)).or_else(|| decimal(rest))?;
    Some((if negative { -magnitude } else { magnitude }, start + used))
}

fn starts_with_ignore_case(bytes: &[u8], prefix: &[u8]) -> bool {
    bytes.len() >= prefix.len() && bytes[..prefix.len()].eq_ignore_ascii_case(prefix)
}

fn special(bytes: &[u8]) -> Option<(f64, usize)> {
    if starts_with_ignore_case(bytes, b"infinity") {
        return Some((f64::INFINITY, 8));
    }
    if starts_with_ignore_case(bytes, b"inf") {
        return Some((f64::INFINITY, 3));
    }
    if !starts_with_ignore_case(bytes, b"nan") {
        return None;
    }
    // nan(n-char-sequence) takes the parenthesized part when it is closed.
    if bytes.get(3) == Some(&b'(') {
        let inner = bytes[4..].iter().take_while(|b| b.is_ascii_alphanumeric() || **b == b'_').count();
        if bytes.get(4 + inner) == Some(&b')') {
            return Some((f64::NAN, 5 + inner));
        }
    }
    Some((f64::NAN, 3))
}

fn digits(bytes: &[u8], hex: bool) -> usize {
    bytes.iter().take_while(|b| if hex { b.is_ascii_hexdigit() } else { b.is_ascii_digit() }).count()
}

/// The exponent part `e[+-]digits` (or `p...` for hexadecimal) at the start
/// of `bytes`, if it is complete: its value and length.
fn exponent(bytes: &[u8], marker: u8) -> Option<(i64, usize)> {
    if !bytes.first().is_some_and(|b| b.eq_ignore_ascii_case(&marker)) {
        return None;
    }
    let (negative, sign_len) = match bytes.get(1) {
        Some(b'-') => (true, 1),
        Some(b'+') => (false, 1),
        _ => (false, 0),
    };
    let body = &bytes[1 + sign_len..];
    let count = digits(body, false);
    if count == 0 {
        return None;
    }
    let value = body[..count].iter().fold(0i64, |acc, d| (acc * 10 + i64::from(d - b'0')).min(1 << 40));
    Some((if negative { -value } else { value }, 1 + sign_len + count))
}

fn decimal(bytes: &[u8]) -> Option<(f64, usize)> {
    let int_len = digits(bytes, false);
    let mut used = int_len;
    let mut frac_len = 0;
    if bytes.get(used) == Some(&b'.') {
        frac_len = digits(&bytes[used + 1..], false);
        if int_len + frac_len > 0 {
            used += 1 + frac_len;
        }
    }
    if int_len + frac_len == 0 {
        return None;
    }
    let mut text = String::with_capacity(used + 8);
    text.push('0');
    text.push_str(std::str::from_utf8(&bytes[..int_len]).ok()?);
    text.push('.');
    let frac_start = int_len + 1;
    text.push_str(std::str::from_utf8(&bytes[frac_start.min(used)..(frac_start + frac_len).min(used)]).ok()?);
    text.push('0');
    if let Some((value, len)) = exponent(&bytes[used..], b'e') {
        text.push_str(&format!("e{value}"));
        used += len;
    }
    Some((text.parse::<f64>().ok()?, used))
}

fn hexadecimal(bytes: &[u8]) -> Option<(f64, usize)> {
    if bytes.len() < 2 || bytes[0] != b'0' || !bytes[1].eq_ignore_ascii_case(&b'x') {
        return None;
    }
    let body = &bytes[2..];
    let int_len = digits(body, true);
    let mut used = int_len;
    let mut frac_len = 0;
    if body.get(used) == Some(&b'.') {
        frac_len = digits(&body[used + 1..], true);
        used += 1 + frac_len;
    }
    if int_len + frac_len == 0 {
        // "0x" alone: strtod reads the "0".
        return Some((0.0, 1));
    }
    let fraction = if frac_len > 0 { &body[int_len + 1..int_len + 1 + frac_len] } else { &[][..] };
    let mut mantissa = 0f64;
    for d in body[..int_len].iter().chain(fraction) {
        mantissa = mantissa * 16.0 + f64::from((*d as char).to_digit(16).unwrap_or(0));
    }
    let mut scale = -4 * frac_len as i64;
    if let Some((value, len)) = exponent(&body[used..], b'p') {
        scale += value;
        used += len;
    }
    Some((mantissa * 2f64.powi(scale.clamp(-2000, 2000) as i32), 2 + used))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn format_g_matches_printf() {
        // Expected strings are what glibc's printf("%.14g") prints.
        let cases: &[(f64, &str)] = &[
            (100.0, "100"),
            (0.1, "0.1"),
            (0.0003, "0.0003"),
            (0.00001, "1e-05"),
            (1023.2, "1023.2"),
            (-5000.0, "-5000"),
            (1e14, "1e+14"),
            (123456789012345.0, "1.2345678901234e+14"),
            (12345678901234.0, "12345678901234"),
            (1.0 / 3.0, "0.33333333333333"),
            (2f64.powi(40), "1099511627776"),
            (-0.0, "-0"),
            (f64::INFINITY, "inf"),
            (f64::NEG_INFINITY, "-inf"),
            (1e300, "1e+300"),
        ];
        for (value, expected) in cases {
            assert_eq!(format_g(*value, 14), *expected, "{value}");
        }
        assert_eq!(format_g(4.56789, 3), "4.57");
        assert_eq!(format_g(0.5, 1), "0.5");
        assert_eq!(format_g(1234.0, 2), "1.2e+03");
    }

    #[test]
    fn strtod_takes_the_longest_numeric_prefix() {
        assert_eq!(strtod(b"12abc"), Some((12.0, 2)));
        assert_eq!(strtod(b"-5e3,"), Some((-5000.0, 4)));
        assert_eq!(strtod(b"1e"), Some((1.0, 1)));
        assert_eq!(strtod(b"0.3e-3]"), Some((0.0003, 6)));
        assert_eq!(strtod(b"1."), Some((1.0, 2)));
        assert_eq!(strtod(b".5"), Some((0.5, 2)));
        assert_eq!(strtod(b"0x10"), Some((16.0, 4)));
        assert_eq!(strtod(b"0x1p4"), Some((16.0, 5)));
        assert_eq!(strtod(b"0x"), Some((0.0, 1)));
        assert_eq!(strtod(b"Infinity"), Some((f64::INFINITY, 8)));
        assert_eq!(strtod(b"-inf"), Some((f64::NEG_INFINITY, 4)));
        assert!(strtod(b"nan").is_some_and(|(v, n)| v.is_nan() && n == 3));
        assert_eq!(strtod(b"-"), None);
        assert_eq!(strtod(b"."), None);
        assert_eq!(strtod(b"x"), None);
    }
}

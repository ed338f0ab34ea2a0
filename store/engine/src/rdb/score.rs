//! How Redis 7.0 writes a sorted-set score into a listpack
//! (`zzlInsertAt`): an integer element when the double is a whole number in
//! `double2ll`'s safe range, otherwise the text of `d2string` (`%.17g`,
//! `inf`, `-inf`).

use super::listpack::Writer;

/// Largest magnitude `double2ll` converts (`LLONG_MAX / 2`).
const SAFE_INT_LIMIT: f64 = (i64::MAX / 2) as f64;

/// Appends `score` to a listpack as Redis does.
pub fn push_score(lp: &mut Writer, score: f64) {
    match as_whole(score) {
        Some(v) => lp.push_int(v),
        None => lp.push_str(format_g17(score).as_bytes()),
    }
}

/// `double2ll`: the integer a double equals, within the safe range.
fn as_whole(d: f64) -> Option<i64> {
    if !(-SAFE_INT_LIMIT..=SAFE_INT_LIMIT).contains(&d) {
        return None;
    }
    let v = d as i64;
    (v as f64 == d).then_some(v)
}

/// C's `printf("%.17g", v)` (with `inf`/`-inf`/`nan` as `d2string`).
pub fn format_g17(v: f64) -> String {
    if v.is_nan() {
        return "nan".into();
    }
    if v.is_infinite() {
        return if v < 0.0 { "-inf".into() } else { "inf".into() };
    }
    let sci = format!("{:.16e}", v.abs());
    let (mantissa, exp) = sci.split_once('e').unwrap_or((&sci, "0"));
    let exp: i32 = exp.parse().unwrap_or(0);
    let digits: String = mantissa.chars().filter(|c| c.is_ascii_digit()).collect();
    let sign = if v.is_sign_negative() { "-" } else { "" };
    if (-4..17).contains(&exp) {
        let (int_part, frac) = if exp >= 0 {
            let split = (exp as usize + 1).min(digits.len());
            (digits[..split].to_string(), digits[split..].to_string())
        } else {
            ("0".to_string(), format!("{}{}", "0".repeat((-exp - 1) as usize), digits))
        };
        let frac = frac.trim_end_matches('0');
        if frac.is_empty() {
            format!("{sign}{int_part}")
        } else {
            format!("{sign}{int_part}.{frac}")
        }
    } else {
        let (first, rest) = digits.split_at(1);
        let rest = rest.trim_end_matches('0');
        let dot = if rest.is_empty() { String::new() } else { format!(".{rest}") };
        let exp_sign = if exp < 0 { '-' } else { '+' };
        format!("{sign}{first}{dot}e{exp_sign}{:02}", exp.abs())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Expected texts are what glibc's `printf("%.17g")` prints.
    #[test]
    fn formats_as_printf_g17() {
        assert_eq!(format_g17(1.5), "1.5");
        assert_eq!(format_g17(0.1), "0.10000000000000001");
        assert_eq!(format_g17(-2.25), "-2.25");
        assert_eq!(format_g17(1e20), "1e+20");
        assert_eq!(format_g17(1.5e-7), "1.4999999999999999e-07");
        assert_eq!(format_g17(0.0001), "0.0001");
        assert_eq!(format_g17(123456.789), "123456.789");
        assert_eq!(format_g17(3.0e16), "30000000000000000");
        assert_eq!(format_g17(1.0e17), "1e+17");
        assert_eq!(format_g17(f64::INFINITY), "inf");
        assert_eq!(format_g17(f64::NEG_INFINITY), "-inf");
    }

    #[test]
    fn whole_scores_are_integers() {
        assert_eq!(as_whole(3.0), Some(3));
        assert_eq!(as_whole(-0.0), Some(0));
        assert_eq!(as_whole(1.5), None);
        assert_eq!(as_whole(1e19), None);
        assert_eq!(as_whole(f64::INFINITY), None);
    }
}

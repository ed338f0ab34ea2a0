//! How GEO replies write numbers, byte for byte as Redis 7.0 does.
//!
//! - Distances (`addReplyDoubleDistance`): four decimals, rounded as C's
//!   `llrint` rounds (half to even), always as a bulk string.
//! - Coordinates (`addReplyHumanLongDouble`): `%.17Lf` with the trailing
//!   zeros (and a bare trailing dot) removed, `-0` written `0`.

/// A distance with four decimals (`fixedpoint_d2string(d, 4)`).
pub fn distance(d: f64) -> String {
    if d == 0.0 {
        return "0.0000".to_string();
    }
    // `as` saturates where llrint would give LLONG_MIN; distances are finite.
    let scaled = (d * 10_000.0).round_ties_even() as i64;
    let sign = if scaled < 0 { "-" } else { "" };
    let magnitude = scaled.unsigned_abs();
    format!("{sign}{}.{:04}", magnitude / 10_000, magnitude % 10_000)
}

/// A coordinate as Redis's "human" long double format writes it.
pub fn coordinate(value: f64) -> String {
    if value.is_infinite() {
        return if value > 0.0 { "inf" } else { "-inf" }.to_string();
    }
    // The double widens exactly to a long double, and both printfs are exact.
    let mut text = format!("{value:.17}");
    if text.contains('.') {
        let trimmed = text.trim_end_matches('0').len();
        text.truncate(trimmed);
        if text.ends_with('.') {
            text.pop();
        }
    }
    if text == "-0" {
        text = "0".to_string();
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn distances_have_four_decimals() {
        assert_eq!(distance(0.0), "0.0000");
        assert_eq!(distance(-0.0), "0.0000");
        assert_eq!(distance(0.77504), "0.7750");
        assert_eq!(distance(166274.15156960033), "166274.1516");
        assert_eq!(distance(0.00001), "0.0000");
        assert_eq!(distance(0.00016), "0.0002");
        // Half a unit in the last place rounds to even, as llrint does.
        assert_eq!(distance(0.5 / 1024.0 / 1024.0 * 2.0), "0.0000");
        assert_eq!(distance(2.5 / 16.0), "0.1562");
    }

    #[test]
    fn coordinates_drop_trailing_zeros() {
        assert_eq!(coordinate(0.1), "0.10000000000000001");
        assert_eq!(coordinate(10.0), "10");
        assert_eq!(coordinate(-0.0), "0");
        assert_eq!(coordinate(-1e-30), "0");
        assert_eq!(coordinate(0.5), "0.5");
    }
}

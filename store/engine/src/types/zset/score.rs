//! Scores and ranges as the sorted-set commands read them.
//!
//! Two float grammars coexist in Redis, and clients can tell them apart:
//! - a *score* (ZADD, ZINCRBY, WEIGHTS) goes through `getDoubleFromObject`:
//!   no leading space, the whole string, no NaN, and no overflow or underflow
//!   (`1e400` and `1e-400` are refused, `inf` is fine);
//! - a *range bound* (ZRANGEBYSCORE, ZCOUNT, ...) goes through bare `strtod`:
//!   leading spaces are skipped, overflow saturates, and the empty string
//!   reads as 0. A `(` prefix makes the bound exclusive.
//!
//! Lexicographic bounds are `-`, `+`, `[member` (inclusive) and `(member`
//! (exclusive).

/// Parses a score with `getDoubleFromObject`'s rules.
pub fn parse_score(s: &[u8]) -> Option<f64> {
    if s.first().is_none_or(u8::is_ascii_whitespace) {
        return None;
    }
    let value = parse_text(s)?;
    if value.is_infinite() && !names_infinity(s) {
        return None; // ERANGE overflow
    }
    if value == 0.0 && has_nonzero_mantissa(s) {
        return None; // ERANGE underflow
    }
    Some(value)
}

/// Parses a range bound's number with `strtod`'s rules (see the module doc).
fn parse_bound_number(s: &[u8]) -> Option<f64> {
    if s.is_empty() {
        return Some(0.0);
    }
    let trimmed = s.trim_ascii_start();
    if trimmed.is_empty() {
        return None;
    }
    parse_text(trimmed)
}

/// The whole text as a non-NaN float: decimal, `inf`/`infinity`, or C's
/// hexadecimal form (`0x1.8p3`), as `strtod` reads them.
fn parse_text(s: &[u8]) -> Option<f64> {
    let value = match parse_hex(s) {
        Some(v) => v,
        None => std::str::from_utf8(s).ok()?.parse().ok()?,
    };
    (!value.is_nan()).then_some(value)
}

/// `[+-]0x<hex>[.<hex>][p[+-]<dec>]`; `None` when not hexadecimal or malformed.
fn parse_hex(s: &[u8]) -> Option<f64> {
    let (negative, rest) = match s.first()? {
        b'-' => (true, &s[1..]),
        b'+' => (false, &s[1..]),
        _ => (false, s),
    };
    let rest = rest.strip_prefix(b"0x").or_else(|| rest.strip_prefix(b"0X"))?;
    let (mantissa_text, exponent_text) = match rest.iter().position(|b| b.eq_ignore_ascii_case(&b'p')) {
        Some(p) => (&rest[..p], Some(&rest[p + 1..])),
        None => (rest, None),
    };
    let mut mantissa = 0f64;
    let mut scale = 0i32;
    let mut digits = 0;
    let mut seen_point = false;
    for &b in mantissa_text {
        if b == b'.' && !seen_point {
            seen_point = true;
            continue;
        }
        let digit = (b as char).to_digit(16)?;
        mantissa = mantissa * 16.0 + f64::from(digit);
        digits += 1;
        if seen_point {
            scale -= 4;
        }
    }
    if digits == 0 {
        return None;
    }
    if let Some(text) = exponent_text {
        let exponent: i32 = std::str::from_utf8(text).ok()?.parse().ok()?;
        scale = scale.saturating_add(exponent);
    }
    let magnitude = mantissa * 2f64.powi(scale);
    Some(if negative { -magnitude } else { magnitude })
}

fn names_infinity(s: &[u8]) -> bool {
    s.iter().any(|b| b.eq_ignore_ascii_case(&b'i'))
}

/// Whether a decimal literal's mantissa has a nonzero digit (so a zero result is an underflow).
fn has_nonzero_mantissa(s: &[u8]) -> bool {
    s.iter().take_while(|b| !b.eq_ignore_ascii_case(&b'e')).any(|b| (b'1'..=b'9').contains(b))
}

/// A score interval: `min`/`max` with their exclusive flags.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ScoreRange {
    pub min: f64,
    pub max: f64,
    pub min_exclusive: bool,
    pub max_exclusive: bool,
}

impl ScoreRange {
    /// Parses `min` and `max` (`zslParseRange`); `None` is Redis's
    /// "min or max is not a float".
    pub fn parse(min: &[u8], max: &[u8]) -> Option<ScoreRange> {
        let (min, min_exclusive) = Self::parse_bound(min)?;
        let (max, max_exclusive) = Self::parse_bound(max)?;
        Some(ScoreRange { min, max, min_exclusive, max_exclusive })
    }

    fn parse_bound(s: &[u8]) -> Option<(f64, bool)> {
        match s.split_first() {
            Some((b'(', rest)) => Some((parse_bound_number(rest)?, true)),
            _ => Some((parse_bound_number(s)?, false)),
        }
    }

    /// `score` is not below the range.
    pub fn above_min(&self, score: f64) -> bool {
        if self.min_exclusive {
            score > self.min
        } else {
            score >= self.min
        }
    }

    /// `score` is not above the range.
    pub fn below_max(&self, score: f64) -> bool {
        if self.max_exclusive {
            score < self.max
        } else {
            score <= self.max
        }
    }
}

/// One end of a lexicographic range.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LexBound {
    /// `-`: below every string.
    Min,
    /// `+`: above every string.
    Max,
    /// `[member`.
    Inclusive(Box<[u8]>),
    /// `(member`.
    Exclusive(Box<[u8]>),
}

impl LexBound {
    /// Parses `-`, `+`, `[x` or `(x` (`zslParseLexRangeItem`).
    pub fn parse(s: &[u8]) -> Option<LexBound> {
        match s.split_first()? {
            (b'-', []) => Some(LexBound::Min),
            (b'+', []) => Some(LexBound::Max),
            (b'[', rest) => Some(LexBound::Inclusive(rest.into())),
            (b'(', rest) => Some(LexBound::Exclusive(rest.into())),
            _ => None,
        }
    }
}

/// A lexicographic interval.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LexRange {
    pub min: LexBound,
    pub max: LexBound,
}

impl LexRange {
    /// Parses `min` and `max`; `None` is Redis's "min or max not valid string range item".
    pub fn parse(min: &[u8], max: &[u8]) -> Option<LexRange> {
        Some(LexRange { min: LexBound::parse(min)?, max: LexBound::parse(max)? })
    }

    /// `member` is not below the range.
    pub fn above_min(&self, member: &[u8]) -> bool {
        match &self.min {
            LexBound::Min => true,
            LexBound::Max => false,
            LexBound::Inclusive(m) => member >= &**m,
            LexBound::Exclusive(m) => member > &**m,
        }
    }

    /// `member` is not above the range.
    pub fn below_max(&self, member: &[u8]) -> bool {
        match &self.max {
            LexBound::Min => false,
            LexBound::Max => true,
            LexBound::Inclusive(m) => member <= &**m,
            LexBound::Exclusive(m) => member < &**m,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scores() {
        assert_eq!(parse_score(b"1.5"), Some(1.5));
        assert_eq!(parse_score(b"-inf"), Some(f64::NEG_INFINITY));
        assert_eq!(parse_score(b"+inf"), Some(f64::INFINITY));
        assert_eq!(parse_score(b"1e308"), Some(1e308));
        assert_eq!(parse_score(b"0e5"), Some(0.0));
        assert_eq!(parse_score(b"0x10"), Some(16.0));
        assert_eq!(parse_score(b"-0x1.8p1"), Some(-3.0));
        for bad in [&b""[..], b" 1", b"1 ", b"nan", b"abc", b"1e400", b"1e-400", b"30.badscore", b"0x", b"0x1p2000"] {
            assert_eq!(parse_score(bad), None, "{}", String::from_utf8_lossy(bad));
        }
    }

    #[test]
    fn score_ranges() {
        let r = ScoreRange::parse(b"(1", b"+inf").expect("valid");
        assert!(r.min_exclusive && !r.max_exclusive);
        assert!(!r.above_min(1.0) && r.above_min(1.5) && r.below_max(f64::INFINITY));
        assert_eq!(ScoreRange::parse(b"", b" 2").map(|r| (r.min, r.max)), Some((0.0, 2.0)));
        assert_eq!(ScoreRange::parse(b"(1e400", b"1").map(|r| r.min), Some(f64::INFINITY));
        assert!(ScoreRange::parse(b"str", b"1").is_none());
        assert!(ScoreRange::parse(b"1", b"NaN").is_none());
        assert!(ScoreRange::parse(b"1", b"(").is_some());
    }

    #[test]
    fn lex_ranges() {
        let r = LexRange::parse(b"[b", b"(d").expect("valid");
        assert!(r.above_min(b"b") && !r.above_min(b"a"));
        assert!(r.below_max(b"c") && !r.below_max(b"d"));
        let all = LexRange::parse(b"-", b"+").expect("valid");
        assert!(all.above_min(b"") && all.below_max(b"\xff"));
        let none = LexRange::parse(b"+", b"-").expect("valid");
        assert!(!none.above_min(b"x") && !none.below_max(b"x"));
        for bad in [&b"foo"[..], b"+x", b"-x", b""] {
            assert!(LexBound::parse(bad).is_none());
        }
    }
}

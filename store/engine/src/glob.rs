//! Redis's glob-style pattern matching (`stringmatchlen`): `*`, `?`,
//! `[abc]`, `[^a-z]`, and `\` escapes.

/// Whether `text` matches `pattern`.
pub fn matches(pattern: &[u8], text: &[u8], nocase: bool) -> bool {
    match_from(pattern, text, nocase, 0)
}

fn fold(b: u8, nocase: bool) -> u8 {
    if nocase {
        b.to_ascii_lowercase()
    } else {
        b
    }
}

fn match_from(mut p: &[u8], mut s: &[u8], nocase: bool, depth: usize) -> bool {
    // Bound the recursion on hostile patterns (Redis 7.0 does the same).
    if depth > 1000 {
        return false;
    }
    while let Some(&pc) = p.first() {
        match pc {
            b'*' => {
                while p.len() > 1 && p[1] == b'*' {
                    p = &p[1..];
                }
                if p.len() == 1 {
                    return true;
                }
                for start in 0..=s.len() {
                    if match_from(&p[1..], &s[start..], nocase, depth + 1) {
                        return true;
                    }
                }
                return false;
            }
            b'?' => {
                if s.is_empty() {
                    return false;
                }
                s = &s[1..];
            }
            b'[' => {
                let Some((&c, rest)) = s.split_first() else { return false };
                let (matched, after) = match_class(&p[1..], c, nocase);
                if !matched {
                    return false;
                }
                p = after;
                s = rest;
                continue;
            }
            b'\\' if p.len() >= 2 => {
                p = &p[1..];
                if s.first().map(|&c| fold(c, nocase)) != Some(fold(p[0], nocase)) {
                    return false;
                }
                s = &s[1..];
            }
            _ => {
                if s.first().map(|&c| fold(c, nocase)) != Some(fold(pc, nocase)) {
                    return false;
                }
                s = &s[1..];
            }
        }
        p = &p[1..];
    }
    s.is_empty()
}

/// Matches `c` against a class whose body starts at `p` (after `[`); returns
/// whether it matched and the pattern after the closing `]`.
fn match_class(mut p: &[u8], c: u8, nocase: bool) -> (bool, &[u8]) {
    let negate = p.first() == Some(&b'^');
    if negate {
        p = &p[1..];
    }
    let mut matched = false;
    loop {
        match p {
            [] => break,
            [b']', rest @ ..] => {
                p = rest;
                return (matched != negate, p);
            }
            [b'\\', e, rest @ ..] => {
                matched |= fold(*e, nocase) == fold(c, nocase);
                p = rest;
            }
            [a, b'-', b, rest @ ..] if *b != b']' => {
                let (mut lo, mut hi) = (fold(*a, nocase), fold(*b, nocase));
                if lo > hi {
                    std::mem::swap(&mut lo, &mut hi);
                }
                let x = fold(c, nocase);
                matched |= x >= lo && x <= hi;
                p = rest;
            }
            [x, rest @ ..] => {
                matched |= fold(*x, nocase) == fold(c, nocase);
                p = rest;
            }
        }
    }
    // Unterminated class: Redis treats the end of the pattern as the `]`.
    (matched != negate, p)
}

#[cfg(test)]
mod tests {
    use super::matches;

    #[test]
    fn patterns() {
        assert!(matches(b"*", b"anything", false));
        assert!(matches(b"h?llo", b"hello", false));
        assert!(matches(b"h[ae]llo", b"hallo", false));
        assert!(!matches(b"h[^e]llo", b"hello", false));
        assert!(matches(b"h[a-b]llo", b"hbllo", false));
        assert!(matches(b"key:*:x", b"key:12:x", false));
        assert!(!matches(b"key:*:x", b"key:12:y", false));
        assert!(matches(b"a\\*b", b"a*b", false));
        assert!(matches(b"MAX*", b"maxmemory", true));
        assert!(!matches(b"foo", b"foobar", false));
    }
}

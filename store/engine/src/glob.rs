//! Redis's glob-style pattern matching (`stringmatchlen`): `*`, `?`,
//! `[abc]`, `[^a-z]`, and `\` escapes.

/// Whether `text` matches `pattern`.
pub fn matches(pattern: &[u8], text: &[u8], nocase: bool) -> bool {
    let mut give_up = false;
    match_from(pattern, text, nocase, &mut give_up, 0)
}

fn fold(b: u8, nocase: bool) -> u8 {
    if nocase {
        b.to_ascii_lowercase()
    } else {
        b
    }
}

/// `give_up` implements Redis's `skipLongerMatches`: once the rest of a
/// pattern after a `*` matched nowhere in the remaining text, trying earlier
/// stars on longer spans cannot help, which keeps `a*a*a*...b` linear-ish.
fn match_from(mut p: &[u8], mut s: &[u8], nocase: bool, give_up: &mut bool, depth: usize) -> bool {
    if depth > 1000 {
        return false;
    }
    while !p.is_empty() && !s.is_empty() {
        match p[0] {
            b'*' => {
                while p.len() > 1 && p[1] == b'*' {
                    p = &p[1..];
                }
                if p.len() == 1 {
                    return true;
                }
                while !s.is_empty() {
                    if match_from(&p[1..], s, nocase, give_up, depth + 1) {
                        return true;
                    }
                    if *give_up {
                        return false;
                    }
                    s = &s[1..];
                }
                *give_up = true;
                return false;
            }
            b'?' => s = &s[1..],
            b'[' => {
                let (matched, after) = match_class(&p[1..], s[0], nocase);
                if !matched {
                    return false;
                }
                s = &s[1..];
                p = after;
                continue;
            }
            b'\\' if p.len() >= 2 => {
                p = &p[1..];
                if fold(s[0], nocase) != fold(p[0], nocase) {
                    return false;
                }
                s = &s[1..];
            }
            pc => {
                if fold(s[0], nocase) != fold(pc, nocase) {
                    return false;
                }
                s = &s[1..];
            }
        }
        p = &p[1..];
    }
    while p.first() == Some(&b'*') {
        p = &p[1..];
    }
    p.is_empty() && s.is_empty()
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
        assert!(matches(b"a*", b"a", false));
        assert!(!matches(b"a?", b"a", false));
    }

    #[test]
    fn nested_stars_do_not_explode() {
        let pattern = format!("{}b", "a*".repeat(20));
        let text = "a".repeat(40);
        let started = std::time::Instant::now();
        assert!(!matches(pattern.as_bytes(), text.as_bytes(), false));
        let pattern = "*?".repeat(50_000);
        let text = "a".repeat(50_000);
        // Like Redis 7.0, nesting deeper than 1000 stars gives up (no match).
        assert!(!matches(pattern.as_bytes(), text.as_bytes(), false));
        assert!(started.elapsed().as_secs() < 5);
    }
}

//! Redis 7's script shebang: `#!lua flags=no-writes,allow-oom` on a script's
//! first line (`evalExtractShebangFlags` in eval.c). Cairn honours
//! `no-writes` (the script runs as EVAL_RO would) and accepts the other flags
//! Redis defines; the line is left out of what Lua compiles, its newline kept
//! so that line numbers in errors match Redis's.

/// The flags Redis 7.0 defines for scripts.
const KNOWN_FLAGS: &[&str] = &["no-writes", "allow-oom", "allow-stale", "no-cluster", "allow-cross-slot-keys"];

/// What a script's shebang declares.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct Shebang {
    /// `flags=no-writes`: write (and may-replicate) commands are refused.
    pub no_writes: bool,
    /// `flags=allow-oom`: the script may start above `maxmemory`.
    pub allow_oom: bool,
}

/// The shebang of `body`, if it has one; Err: Redis's error text (without
/// the `ERR ` prefix).
pub fn parse(body: &[u8]) -> Result<Option<Shebang>, String> {
    if !body.starts_with(b"#!") {
        return Ok(None);
    }
    let end = body.iter().position(|&b| b == b'\n').ok_or("Invalid script shebang")?;
    let line = String::from_utf8_lossy(&body[..end]);
    let mut parts = line.split_whitespace();
    let engine = parts.next().ok_or("Invalid engine in script shebang")?;
    if engine != "#!lua" {
        return Err(format!("Unexpected engine in script shebang: {engine}"));
    }
    let mut shebang = Shebang::default();
    for part in parts {
        let flags = part.strip_prefix("flags=").ok_or_else(|| format!("Unknown lua shebang option: {part}"))?;
        for flag in flags.split(',').filter(|f| !f.is_empty()) {
            if !KNOWN_FLAGS.contains(&flag) {
                return Err(format!("Unexpected flag in script shebang: {flag}"));
            }
            shebang.no_writes |= flag == "no-writes";
            shebang.allow_oom |= flag == "allow-oom";
        }
    }
    Ok(Some(shebang))
}

/// What Lua compiles: `body` without its shebang line (the newline kept).
pub fn code(body: &[u8]) -> &[u8] {
    if !body.starts_with(b"#!") {
        return body;
    }
    body.iter().position(|&b| b == b'\n').map_or(&[], |end| &body[end..])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shebangs_parse_as_redis_reads_them() {
        assert_eq!(parse(b"return 1"), Ok(None));
        assert_eq!(parse(b"#!lua\nreturn 1"), Ok(Some(Shebang { no_writes: false, allow_oom: false })));
        assert_eq!(
            parse(b"#!lua flags=allow-oom,no-writes\nreturn 1"),
            Ok(Some(Shebang { no_writes: true, allow_oom: true }))
        );
        assert_eq!(parse(b"#!lua flags=\nreturn 1"), Ok(Some(Shebang::default())));
        assert_eq!(parse(b"#!lua"), Err("Invalid script shebang".into()));
        assert_eq!(parse(b"#!python\n"), Err("Unexpected engine in script shebang: #!python".into()));
        assert_eq!(parse(b"#!lua name=x\n"), Err("Unknown lua shebang option: name=x".into()));
        assert_eq!(parse(b"#!lua flags=fast\n"), Err("Unexpected flag in script shebang: fast".into()));
    }

    #[test]
    fn the_shebang_line_is_not_compiled_but_its_newline_is() {
        assert_eq!(code(b"#!lua flags=no-writes\nreturn 1"), b"\nreturn 1");
        assert_eq!(code(b"return 1"), b"return 1");
    }
}

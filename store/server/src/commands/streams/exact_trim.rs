//! How XADD and XTRIM with an approximate trim (`~`) are logged: as the
//! exact trim they did, since what `~` removes depends on the stream's node
//! sizes (`stream-node-max-entries`, `stream-node-max-bytes`), which may
//! differ when the log is replayed. As Redis's `streamRewriteApproxSpecifier`
//! and `streamRewriteTrimArgument`: `~` becomes `=`, and the threshold the
//! stream's length after the trim (MAXLEN) or its first ID (MINID; the
//! largest ID when it is empty). `LIMIT` goes: Redis keeps it and ignores it
//! when loading, Cairn's replay would refuse it without `~`.

use cairn_engine::types::stream::{StreamId, TrimStrategy};
use cairn_engine::types::Stream;

use super::args::AddTrimArgs;

/// The arguments to log for `args`, which trimmed `stream` as `parsed`
/// says; `None` when they are logged as sent (no trim, or an exact one).
pub fn logged_form(args: &[&[u8]], parsed: &AddTrimArgs, stream: &Stream) -> Option<Vec<Vec<u8>>> {
    let spec = parsed.trim.as_ref().filter(|spec| spec.approx)?;
    let threshold = match spec.strategy {
        TrimStrategy::MaxLen(_) => stream.len().to_string(),
        TrimStrategy::MinId(_) if stream.is_empty() => StreamId::MAX.to_string(),
        TrimStrategy::MinId(_) => stream.meta().first_id.to_string(),
    };
    let dropped = |i: &usize| parsed.limit_pos.iter().any(|&at| *i == at || *i == at + 1);
    let logged = args.iter().enumerate().filter(|(i, _)| !dropped(i)).map(|(i, arg)| {
        if i + 1 == parsed.threshold_pos {
            b"=".to_vec()
        } else if i == parsed.threshold_pos {
            threshold.as_bytes().to_vec()
        } else {
            arg.to_vec()
        }
    });
    Some(logged.collect())
}

#[cfg(test)]
mod tests {
    use cairn_engine::types::stream::NewId;

    use super::super::args::parse_add_trim;
    use super::*;

    fn logged(line: &str, stream: &Stream) -> Option<String> {
        let args: Vec<&[u8]> = line.split(' ').map(str::as_bytes).collect();
        let parsed = parse_add_trim(&args, line.starts_with("XADD")).expect("valid");
        let words = logged_form(&args, &parsed, stream)?;
        Some(words.iter().map(|w| String::from_utf8_lossy(w)).collect::<Vec<_>>().join(" "))
    }

    #[test]
    fn an_approximate_trim_is_logged_as_the_exact_one_it_did() {
        let mut stream = Stream::new();
        for ms in 3..=9 {
            stream.append(NewId::Explicit(StreamId::new(ms, 0)), &[b"f", b"v"]).expect("appended");
        }
        assert_eq!(logged("XTRIM s MAXLEN ~ 5", &stream).as_deref(), Some("XTRIM s MAXLEN = 7"));
        assert_eq!(logged("XADD s MINID ~ 5 LIMIT 30 * f v", &stream).as_deref(), Some("XADD s MINID = 3-0 * f v"));
        assert_eq!(
            logged("XADD s NOMKSTREAM LIMIT 1 MAXLEN ~ 1 LIMIT 2 9-1 f v", &stream).as_deref(),
            Some("XADD s NOMKSTREAM MAXLEN = 7 9-1 f v")
        );
        assert_eq!(logged("XTRIM s MAXLEN = 5", &stream), None);
        assert_eq!(logged("XADD s * f ~", &stream), None);
        assert_eq!(
            logged("XTRIM s MINID ~ 5", &Stream::new()).as_deref(),
            Some("XTRIM s MINID = 18446744073709551615-18446744073709551615")
        );
    }
}

//! Argument parsing shared by the stream commands: IDs, range bounds, and
//! XADD/XTRIM's trimming options (Redis's `streamParseAddOrTrimArgsOrReply`).

use cairn_engine::types::encoding::LIMITS;
use cairn_engine::types::stream::{parse_id, ParseRules, SeqSpec, StreamId, TrimSpec, TrimStrategy};

use super::super::{int_arg, is, CmdError};

pub const INVALID_ID: CmdError = CmdError::Static("ERR Invalid stream ID specified as stream command argument");

/// An ID where `-` and `+` are refused and `<ms>` means `<ms>-0`.
pub fn strict_id(arg: &[u8]) -> Result<StreamId, CmdError> {
    parse_id(arg, ParseRules::STRICT).map(|(id, _)| id).ok_or(INVALID_ID)
}

/// An ID where `-`/`+` are the extremes and `<ms>` means `<ms>-<missing_seq>`.
pub fn lenient_id(arg: &[u8], missing_seq: u64) -> Result<StreamId, CmdError> {
    parse_id(arg, ParseRules::lenient(missing_seq)).map(|(id, _)| id).ok_or(INVALID_ID)
}

/// A range bound, possibly exclusive (`(` prefix, then strict).
fn interval_id(arg: &[u8], missing_seq: u64) -> Result<(StreamId, bool), CmdError> {
    if arg.len() > 1 && arg[0] == b'(' {
        let rules = ParseRules { missing_seq, ..ParseRules::STRICT };
        parse_id(&arg[1..], rules).map(|(id, _)| (id, true)).ok_or(INVALID_ID)
    } else {
        lenient_id(arg, missing_seq).map(|id| (id, false))
    }
}

/// The inclusive start of a range (`<ms>` means `<ms>-0`).
pub fn range_start(arg: &[u8]) -> Result<StreamId, CmdError> {
    match interval_id(arg, 0)? {
        (id, true) => id.next().ok_or(CmdError::Static("ERR invalid start ID for the interval")),
        (id, false) => Ok(id),
    }
}

/// The inclusive end of a range (`<ms>` means `<ms>-18446744073709551615`).
pub fn range_end(arg: &[u8]) -> Result<StreamId, CmdError> {
    match interval_id(arg, u64::MAX)? {
        (id, true) => id.prev().ok_or(CmdError::Static("ERR invalid end ID for the interval")),
        (id, false) => Ok(id),
    }
}

/// An integer option with Redis's custom error message.
pub fn int_or(arg: &[u8], message: &'static str) -> Result<i64, CmdError> {
    int_arg(arg).map_err(|_| CmdError::Static(message))
}

/// What XADD or XTRIM asked for.
#[derive(Debug, Default)]
pub struct AddTrimArgs {
    /// XADD's explicit ID (`None` for `*`).
    pub id: Option<(StreamId, SeqSpec)>,
    pub no_mkstream: bool,
    pub trim: Option<TrimSpec>,
    /// Position of XADD's ID argument.
    pub id_pos: usize,
    /// Position of the MAXLEN or MINID threshold (Redis's
    /// `trim_strategy_arg_idx`; 0 without a trimming strategy).
    pub threshold_pos: usize,
    /// Positions of each `LIMIT` keyword.
    pub limit_pos: Vec<usize>,
}

const BOTH_STRATEGIES: CmdError =
    CmdError::Static("ERR syntax error, MAXLEN and MINID options at the same time are not compatible");

/// Parses XADD's (`xadd`) or XTRIM's options.
pub fn parse_add_trim(args: &[&[u8]], xadd: bool) -> Result<AddTrimArgs, CmdError> {
    let mut parsed = AddTrimArgs::default();
    let mut strategy = None;
    let mut approx = false;
    let mut limit: Option<i64> = None;
    let mut i = 2;
    while i < args.len() {
        let more = args.len() - 1 - i;
        let opt = args[i];
        if xadd && opt == b"*" {
            break;
        } else if (is(opt, "maxlen") || is(opt, "minid")) && more > 0 {
            if strategy.is_some() {
                return Err(BOTH_STRATEGIES);
            }
            approx = false;
            let next = args[i + 1];
            if more >= 2 && (next == b"~" || next == b"=") {
                approx = next == b"~";
                i += 1;
            }
            strategy = Some(if is(opt, "maxlen") {
                let maxlen = int_arg(args[i + 1])?;
                if maxlen < 0 {
                    return Err(CmdError::Static("ERR The MAXLEN argument must be >= 0."));
                }
                TrimStrategy::MaxLen(maxlen as u64)
            } else {
                TrimStrategy::MinId(strict_id(args[i + 1])?)
            });
            i += 1;
            parsed.threshold_pos = i;
        } else if is(opt, "limit") && more > 0 {
            let n = int_arg(args[i + 1])?;
            if n < 0 {
                return Err(CmdError::Static("ERR The LIMIT argument must be >= 0."));
            }
            limit = Some(n);
            parsed.limit_pos.push(i);
            i += 1;
        } else if xadd && is(opt, "nomkstream") {
            parsed.no_mkstream = true;
        } else if xadd {
            parsed.id = Some(parse_id(opt, ParseRules::XADD).ok_or(INVALID_ID)?);
            break;
        } else {
            return Err(CmdError::Syntax);
        }
        i += 1;
    }
    parsed.id_pos = i;
    if limit.is_some_and(|n| n != 0) && strategy.is_none() {
        return Err(CmdError::Static("ERR syntax error, LIMIT cannot be used without specifying a trimming strategy"));
    }
    if !xadd && strategy.is_none() {
        return Err(CmdError::Static("ERR syntax error, XTRIM must be called with a trimming strategy"));
    }
    let limit = match limit {
        Some(_) if !approx => {
            return Err(CmdError::Static("ERR syntax error, LIMIT cannot be used without the special ~ option"))
        }
        Some(n) => n as u64,
        None if approx => default_approx_limit(),
        None => 0,
    };
    parsed.trim = strategy.map(|strategy| TrimSpec { strategy, approx, limit });
    Ok(parsed)
}

/// Without LIMIT, `~` trimming removes at most 100 nodes' worth of entries.
fn default_approx_limit() -> u64 {
    let limit = LIMITS.stream_node_max_entries.get().saturating_mul(100);
    if limit <= 0 {
        10_000
    } else {
        limit.min(1_000_000) as u64
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(line: &str, xadd: bool) -> Result<AddTrimArgs, CmdError> {
        let args: Vec<&[u8]> = line.split(' ').map(str::as_bytes).collect();
        parse_add_trim(&args, xadd)
    }

    #[test]
    fn add_trim_options() {
        let p = parse("XADD s MAXLEN ~ 10 LIMIT 5 * f v", true).expect("test value");
        assert_eq!(p.id_pos, 7);
        assert_eq!(p.trim, Some(TrimSpec { strategy: TrimStrategy::MaxLen(10), approx: true, limit: 5 }));
        assert_eq!((p.threshold_pos, p.limit_pos), (4, vec![5]));
        let p = parse("XADD s NOMKSTREAM 5-* f v", true).expect("test value");
        assert!(p.no_mkstream);
        assert_eq!(p.id, Some((StreamId::new(5, 0), SeqSpec::Auto)));
        assert_eq!(p.id_pos, 3);
        assert!(parse("XTRIM s MAXLEN 1 LIMIT 30", false).is_err());
        assert!(parse("XTRIM s MAXLEN 1 MINID 3", false).is_err());
        assert!(parse("XTRIM s LIMIT 3", false).is_err());
        assert!(parse("XTRIM s * 3", false).is_err());
        let p = parse("XTRIM s MINID = 3", false).expect("test value");
        assert_eq!(
            p.trim,
            Some(TrimSpec { strategy: TrimStrategy::MinId(StreamId::new(3, 0)), approx: false, limit: 0 })
        );
    }

    #[test]
    fn range_bounds() {
        assert_eq!(range_start(b"(5-1"), Ok(StreamId::new(5, 2)));
        assert_eq!(range_end(b"(5-0"), Ok(StreamId::new(4, u64::MAX)));
        assert_eq!(range_end(b"5"), Ok(StreamId::new(5, u64::MAX)));
        assert!(range_start(b"(-").is_err());
        assert!(range_end(b"(0-0").is_err());
        assert!(range_start(b"(18446744073709551615-18446744073709551615").is_err());
    }
}

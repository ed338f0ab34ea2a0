//! CLIENT TRACKING, CACHING, GETREDIR and TRACKINGINFO: client-side caching
//! from the client's side, with Redis 7.0's options, checks and error texts
//! (the mechanism is in [`crate::tracking`]).

use super::{int_arg, is, text, CmdError, CmdResult, Ctx};
use crate::tracking::tracker::Options;

const NO_PUSHES: &str = "ERR this connection cannot receive push messages (client-side caching needs RESP)";

/// CLIENT TRACKING ON|OFF [REDIRECT id] [PREFIX p ...] [BCAST] [OPTIN] [OPTOUT] [NOLOOP].
pub fn tracking(ctx: &mut Ctx<'_>, args: &[&[u8]]) -> CmdResult {
    let (options, prefixes) = parse_options(ctx, &args[3..])?;
    if is(args[2], "on") {
        check_compatible(ctx, &options, &prefixes)?;
        if !ctx.client.handle.accepts_pushes.load(std::sync::atomic::Ordering::Relaxed) {
            return Err(CmdError::Static(NO_PUSHES));
        }
        let tracker = ctx.server.tracking.enable(&ctx.client.handle, options, &prefixes);
        ctx.client.tracking = Some(tracker);
    } else if is(args[2], "off") {
        ctx.client.tracking = None;
        ctx.server.tracking.disable(ctx.client.id());
    } else {
        return Err(CmdError::Syntax);
    }
    ctx.out.ok();
    Ok(())
}

/// The options after ON/OFF, as Redis parses them (REDIRECT's client must exist now).
fn parse_options<'a>(ctx: &Ctx<'_>, words: &[&'a [u8]]) -> Result<(Options, Vec<&'a [u8]>), CmdError> {
    let mut options = Options::default();
    let mut prefixes = Vec::new();
    let mut j = 0;
    while j < words.len() {
        let word = words[j];
        let more = j + 1 < words.len();
        if is(word, "redirect") && more {
            j += 1;
            if options.redirect != 0 {
                return Err(CmdError::Static("ERR A client can only redirect to a single other client"));
            }
            let id = int_arg(words[j])?;
            if id <= 0 || ctx.server.clients.get(id as u64).is_none() {
                return Err(CmdError::Static("ERR The client ID you want redirect to does not exist"));
            }
            options.redirect = id as u64;
        } else if is(word, "bcast") {
            options.bcast = true;
        } else if is(word, "optin") {
            options.optin = true;
        } else if is(word, "optout") {
            options.optout = true;
        } else if is(word, "noloop") {
            options.noloop = true;
        } else if is(word, "prefix") && more {
            j += 1;
            prefixes.push(words[j]);
        } else {
            return Err(CmdError::Syntax);
        }
        j += 1;
    }
    Ok((options, prefixes))
}

/// Redis's checks before CLIENT TRACKING ON, in its order.
fn check_compatible(ctx: &Ctx<'_>, options: &Options, prefixes: &[&[u8]]) -> CmdResult {
    if !options.bcast && !prefixes.is_empty() {
        return Err(CmdError::Static("ERR PREFIX option requires BCAST mode to be enabled"));
    }
    let current = ctx.client.tracking.as_ref().map(|t| t.state.lock().options.clone());
    if current.as_ref().is_some_and(|c| c.bcast != options.bcast) {
        return Err(CmdError::Static(
            "ERR You can't switch BCAST mode on/off before disabling tracking for this client, and then \
             re-enabling it with a different mode.",
        ));
    }
    if options.bcast && (options.optin || options.optout) {
        return Err(CmdError::Static("ERR OPTIN and OPTOUT are not compatible with BCAST"));
    }
    if options.optin && options.optout {
        return Err(CmdError::Static("ERR You can't specify both OPTIN mode and OPTOUT mode"));
    }
    if current.is_some_and(|c| (options.optin && c.optout) || (options.optout && c.optin)) {
        return Err(CmdError::Static(
            "ERR You can't switch OPTIN/OPTOUT mode before disabling tracking for this client, and then \
             re-enabling it with a different mode.",
        ));
    }
    if options.bcast {
        check_prefix_overlaps(ctx, prefixes)?;
    }
    Ok(())
}

/// Whether one prefix starts the other (both would match the same keys).
fn overlap(a: &[u8], b: &[u8]) -> bool {
    let n = a.len().min(b.len());
    a[..n] == b[..n]
}

/// A client's prefixes must not overlap, with its own or with each other.
fn check_prefix_overlaps(ctx: &Ctx<'_>, prefixes: &[&[u8]]) -> CmdResult {
    let existing: Vec<Vec<u8>> =
        ctx.client.tracking.as_ref().map(|t| t.state.lock().prefixes.clone()).unwrap_or_default();
    for (i, prefix) in prefixes.iter().enumerate() {
        if let Some(old) = existing.iter().find(|old| overlap(old, prefix)) {
            return Err(CmdError::err(format!(
                "Prefix '{}' overlaps with an existing prefix '{}'. Prefixes for a single client must not overlap.",
                text(prefix),
                text(old)
            )));
        }
        if let Some(other) = prefixes[i + 1..].iter().find(|other| overlap(prefix, other)) {
            return Err(CmdError::err(format!(
                "Prefix '{}' overlaps with another provided prefix '{}'. Prefixes for a single client must not overlap.",
                text(prefix),
                text(other)
            )));
        }
    }
    Ok(())
}

/// CLIENT CACHING YES|NO: whether the next command's keys are tracked
/// (YES under OPTIN, NO under OPTOUT).
pub fn caching(ctx: &mut Ctx<'_>, choice: &[u8]) -> CmdResult {
    let Some(tracker) = ctx.client.tracking.as_ref() else {
        return Err(CmdError::Static(
            "ERR CLIENT CACHING can be called only when the client is in tracking mode with OPTIN or OPTOUT mode enabled",
        ));
    };
    let mut state = tracker.state.lock();
    if is(choice, "yes") {
        if !state.options.optin {
            return Err(CmdError::Static(
                "ERR CLIENT CACHING YES is only valid when tracking is enabled in OPTIN mode.",
            ));
        }
    } else if is(choice, "no") {
        if !state.options.optout {
            return Err(CmdError::Static(
                "ERR CLIENT CACHING NO is only valid when tracking is enabled in OPTOUT mode.",
            ));
        }
    } else {
        return Err(CmdError::Syntax);
    }
    state.caching = true;
    drop(state);
    ctx.out.ok();
    Ok(())
}

/// CLIENT GETREDIR: the redirection id, 0 without one, -1 when not tracking.
pub fn getredir(ctx: &mut Ctx<'_>) -> CmdResult {
    let redirect = ctx.client.tracking.as_ref().map_or(-1, |t| t.state.lock().options.redirect as i64);
    ctx.out.int(redirect);
    Ok(())
}

/// CLIENT TRACKINGINFO: flags, redirect and prefixes, as Redis shows them.
pub fn trackinginfo(ctx: &mut Ctx<'_>) -> CmdResult {
    let (flags, redirect, prefixes) = match ctx.client.tracking.as_ref() {
        Some(tracker) => {
            let state = tracker.state.lock();
            (state.flag_names(), state.options.redirect as i64, state.prefixes.clone())
        }
        None => (vec!["off"], -1, Vec::new()),
    };
    ctx.out.map(3);
    ctx.out.bulk(b"flags");
    ctx.out.set(flags.len());
    for flag in flags {
        ctx.out.bulk(flag.as_bytes());
    }
    ctx.out.bulk(b"redirect");
    ctx.out.int(redirect);
    ctx.out.bulk(b"prefixes");
    ctx.out.array(prefixes.len());
    for prefix in &prefixes {
        ctx.out.bulk(prefix);
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    #[test]
    fn prefixes_overlap_when_one_starts_the_other() {
        assert!(super::overlap(b"FOO", b"FOOBAR"));
        assert!(super::overlap(b"", b"x"));
        assert!(!super::overlap(b"FOO", b"BAR"));
    }
}

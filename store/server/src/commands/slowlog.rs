//! SLOWLOG GET / LEN / RESET / HELP over the server's [`crate::slowlog`].

use super::{int_arg, is, CmdError, CmdResult, Ctx};

pub fn slowlog(ctx: &mut Ctx<'_>, args: &[&[u8]]) -> CmdResult {
    let sub = args[1];
    let log = &ctx.server.runtime.slowlog;
    match args.len() {
        2 if is(sub, "help") => help(ctx),
        2 if is(sub, "reset") => {
            log.reset();
            ctx.out.ok();
        }
        2 if is(sub, "len") => ctx.out.int(log.len() as i64),
        2 | 3 if is(sub, "get") => get(ctx, args.get(2).copied())?,
        _ if ["help", "reset", "len", "get"].iter().any(|known| is(sub, known)) => {
            return Err(syntax_error(sub));
        }
        _ => return Err(CmdError::unknown_subcommand("slowlog", sub)),
    }
    Ok(())
}

/// SLOWLOG GET [count]: the newest `count` entries (10 by default, -1 all).
fn get(ctx: &mut Ctx<'_>, count: Option<&[u8]>) -> CmdResult {
    const BAD_COUNT: &str = "ERR count should be greater than or equal to -1";
    let count = match count {
        None => Some(10),
        Some(arg) => match int_arg(arg).map_err(|_| CmdError::Static(BAD_COUNT))? {
            -1 => None,
            n if n < -1 => return Err(CmdError::Static(BAD_COUNT)),
            n => Some(n as usize),
        },
    };
    let entries = ctx.server.runtime.slowlog.newest(count);
    ctx.out.array(entries.len());
    for entry in &entries {
        ctx.out.array(6);
        ctx.out.int(entry.id as i64);
        ctx.out.int(entry.time_secs as i64);
        ctx.out.int(entry.duration_us as i64);
        ctx.out.array(entry.args.len());
        for arg in &entry.args {
            ctx.out.bulk(arg);
        }
        ctx.out.bulk(entry.peer.as_bytes());
        ctx.out.bulk(&entry.client_name);
    }
    Ok(())
}

/// Redis's `addReplySubcommandSyntaxError`, for a known subcommand given
/// the wrong number of arguments.
fn syntax_error(sub: &[u8]) -> CmdError {
    let sub: String = String::from_utf8_lossy(sub).chars().take(128).collect();
    CmdError::Message(format!("ERR unknown subcommand or wrong number of arguments for '{sub}'. Try SLOWLOG HELP."))
}

fn help(ctx: &mut Ctx<'_>) {
    let lines = [
        "SLOWLOG <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
        "GET [<count>]",
        "    Return top <count> entries from the slowlog (default: 10, -1 mean all).",
        "    Entries are made of:",
        "    id, timestamp, time in microseconds, arguments array, client IP and port,",
        "    client name",
        "LEN",
        "    Return the length of the slowlog.",
        "RESET",
        "    Reset the slowlog.",
        "HELP",
        "    Print this help.",
    ];
    super::server_admin::write_help(ctx, &lines);
}

//! ACL: SETUSER, GETUSER, DELUSER, USERS, WHOAMI, LIST, CAT, DRYRUN,
//! GENPASS, LOG, SAVE, LOAD, HELP over the server's users ([`crate::acl`]),
//! with Redis 7.0's replies.

use super::{is, table, CmdError, CmdResult, Ctx};
use crate::acl::{self, user::CATEGORIES};

/// Each subcommand's exact argument count (negative: at least), from Redis's table.
const ARITIES: &[(&str, i32)] = &[
    ("cat", -2),
    ("deluser", -3),
    ("dryrun", -4),
    ("genpass", -2),
    ("getuser", 3),
    ("help", 2),
    ("list", 2),
    ("load", 2),
    ("log", -2),
    ("save", 2),
    ("setuser", -3),
    ("users", 2),
    ("whoami", 2),
];

const NO_ACL_FILE: &str = "ERR This Redis instance is not configured to use an ACL file. You may want to specify \
                           users via the ACL SETUSER command and then issue a CONFIG REWRITE (assuming you have a \
                           Redis configuration file set) in order to store users in the Redis configuration.";

pub fn acl(ctx: &mut Ctx<'_>, args: &[&[u8]]) -> CmdResult {
    match super::subcommand("acl", args, ARITIES)? {
        "setuser" => setuser(ctx, args[2], &args[3..]),
        "getuser" => getuser(ctx, args[2]),
        "deluser" => deluser(ctx, &args[2..]),
        "users" => {
            let names = ctx.server.runtime.acl.names();
            ctx.out.array(names.len());
            names.iter().for_each(|n| ctx.out.bulk(n.as_bytes()));
            Ok(())
        }
        "whoami" => {
            ctx.out.bulk(ctx.client.user.name.as_bytes());
            Ok(())
        }
        "list" => {
            let lines = ctx.server.runtime.acl.describe_all();
            ctx.out.array(lines.len());
            lines.iter().for_each(|l| ctx.out.bulk(l.as_bytes()));
            Ok(())
        }
        "cat" => cat(ctx, args.get(2).copied()),
        "dryrun" => dryrun(ctx, args[2], &args[3..]),
        "genpass" => genpass(ctx, args.get(2).copied()),
        "log" => log(ctx, &args[2..]),
        "save" | "load" => Err(CmdError::Static(NO_ACL_FILE)),
        _ => {
            help(ctx);
            Ok(())
        }
    }
}

fn user_name(arg: &[u8]) -> Result<&str, CmdError> {
    let name = std::str::from_utf8(arg)
        .map_err(|_| CmdError::Static("ERR Usernames can't contain spaces or null characters"))?;
    if name.bytes().any(|b| b == b' ' || b == 0) {
        return Err(CmdError::Static("ERR Usernames can't contain spaces or null characters"));
    }
    Ok(name)
}

fn setuser(ctx: &mut Ctx<'_>, name: &[u8], rules: &[&[u8]]) -> CmdResult {
    let name = user_name(name)?;
    ctx.server
        .runtime
        .acl
        .set_user(name, rules)
        .map_err(|(rule, why)| CmdError::err(format!("Error in ACL SETUSER modifier '{rule}': {why}")))?;
    ctx.out.ok();
    Ok(())
}

fn getuser(ctx: &mut Ctx<'_>, name: &[u8]) -> CmdResult {
    let Some(user) = std::str::from_utf8(name).ok().and_then(|n| ctx.server.runtime.acl.get(n)) else {
        ctx.out.null_bulk();
        return Ok(());
    };
    let rules = user.rules();
    let out = &mut ctx.out;
    out.map(6);
    out.bulk(b"flags");
    let flags = rules.flags();
    out.array(flags.len());
    flags.iter().for_each(|f| out.bulk(f.as_bytes()));
    out.bulk(b"passwords");
    out.array(rules.passwords.len());
    rules.passwords.iter().for_each(|p| out.bulk(p.as_bytes()));
    out.bulk(b"commands");
    out.bulk(rules.describe_commands().as_bytes());
    out.bulk(b"keys");
    out.bulk(rules.describe_keys().as_bytes());
    out.bulk(b"channels");
    out.bulk(rules.describe_channels().as_bytes());
    out.bulk(b"selectors");
    out.array(0);
    Ok(())
}

fn deluser(ctx: &mut Ctx<'_>, names: &[&[u8]]) -> CmdResult {
    let names: Vec<String> = names.iter().map(|n| String::from_utf8_lossy(n).into_owned()).collect();
    if names.iter().any(|n| n == acl::DEFAULT_USER) {
        return Err(CmdError::Static("ERR The 'default' user cannot be removed"));
    }
    let removed = ctx.server.runtime.acl.delete(&names);
    // Connections authenticated as a deleted user are closed (as Redis does).
    for handle in ctx.server.clients.snapshot() {
        if handle.user().is_some_and(|u| removed.iter().any(|r| std::sync::Arc::ptr_eq(r, &u))) {
            handle.kill();
        }
    }
    ctx.out.int(removed.len() as i64);
    Ok(())
}

fn cat(ctx: &mut Ctx<'_>, category: Option<&[u8]>) -> CmdResult {
    let Some(category) = category else {
        ctx.out.array(CATEGORIES.len());
        CATEGORIES.iter().for_each(|c| ctx.out.bulk(c.as_bytes()));
        return Ok(());
    };
    let lower = String::from_utf8_lossy(category).to_ascii_lowercase();
    if !CATEGORIES.contains(&lower.as_str()) {
        return Err(CmdError::err(format!("Unknown category '{}'", String::from_utf8_lossy(category))));
    }
    let names: Vec<String> = acl::user::in_category(&lower)
        .into_iter()
        .filter(|n| {
            let top = n.split('|').next().unwrap_or(n);
            table::lookup(top.as_bytes()).is_some()
        })
        .collect();
    ctx.out.array(names.len());
    names.iter().for_each(|n| ctx.out.bulk(n.as_bytes()));
    Ok(())
}

/// ACL DRYRUN user command [arg ...]: whether `user` could run it.
fn dryrun(ctx: &mut Ctx<'_>, name: &[u8], command: &[&[u8]]) -> CmdResult {
    let text = String::from_utf8_lossy(name);
    let Some(user) = ctx.server.runtime.acl.get(&text) else {
        return Err(CmdError::err(format!("User '{text}' not found")));
    };
    let Some(index) = table::lookup(command[0]) else {
        return Err(CmdError::err(format!("Command '{}' not found", String::from_utf8_lossy(command[0]))));
    };
    let spec = table::spec(index);
    if !spec.arity_ok(command.len()) {
        return Err(CmdError::err(format!("wrong number of arguments for '{}' command", spec.name)));
    }
    match acl::check::check(&user.rules(), spec.name, command) {
        Ok(()) => ctx.out.ok(),
        Err(denied) => ctx.out.bulk(denied.dry_run_message(command).as_bytes()),
    }
    Ok(())
}

/// ACL GENPASS [bits]: random hex, 256 bits by default.
fn genpass(ctx: &mut Ctx<'_>, bits: Option<&[u8]>) -> CmdResult {
    use rand::Rng;
    const BAD: &str =
        "ERR ACL GENPASS argument must be the number of bits for the output password, a positive number up to 4096";
    let bits = match bits {
        None => 256,
        Some(arg) => match super::int_arg(arg) {
            Ok(n) if (1..=4096).contains(&n) => n as usize,
            _ => return Err(CmdError::Static(BAD)),
        },
    };
    let chars = bits.div_ceil(4);
    let mut rng = rand::thread_rng();
    let pass: String = (0..chars).map(|_| char::from(b"0123456789abcdef"[rng.gen_range(0..16)])).collect();
    ctx.out.bulk(pass.as_bytes());
    Ok(())
}

/// ACL LOG [count | RESET]: Cairn records no denials yet, so the log is empty.
fn log(ctx: &mut Ctx<'_>, args: &[&[u8]]) -> CmdResult {
    match args {
        [] => ctx.out.array(0),
        [reset] if is(reset, "reset") => ctx.out.ok(),
        [count] => {
            super::int_arg(count).map_err(|_| CmdError::Static("ERR value is out of range, must be positive"))?;
            ctx.out.array(0);
        }
        _ => return Err(CmdError::Syntax),
    }
    Ok(())
}

fn help(ctx: &mut Ctx<'_>) {
    const LINES: &[&str] = &[
        "ACL <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
        "CAT [<category>]",
        "    List all commands that belong to <category>, or all command categories",
        "    when no category is specified.",
        "DELUSER <username> [<username> ...]",
        "    Delete a list of users.",
        "DRYRUN <username> <command> [<arg> ...]",
        "    Returns whether the user can execute the given command without executing the command.",
        "GETUSER <username>",
        "    Get the user's details.",
        "GENPASS [<bits>]",
        "    Generate a secure 256-bit user password. The optional `bits` argument can",
        "    be used to specify a different size.",
        "LIST",
        "    Show users details in config file format.",
        "LOAD",
        "    Reload users from the ACL file.",
        "LOG [<count> | RESET]",
        "    Show the ACL log entries.",
        "SAVE",
        "    Save the current config to the ACL file.",
        "SETUSER <username> <attribute> [<attribute> ...]",
        "    Create or modify a user with the specified attributes.",
        "USERS",
        "    List all the registered usernames.",
        "WHOAMI",
        "    Return the current connection username.",
        "HELP",
        "    Print this help.",
    ];
    ctx.out.array(LINES.len());
    for line in LINES {
        ctx.out.simple(line);
    }
}

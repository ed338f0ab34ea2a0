//! XGROUP: CREATE, SETID, DESTROY, CREATECONSUMER, DELCONSUMER, HELP.

use cairn_engine::events as ev;
use cairn_engine::types::stream::{StreamId, ENTRIES_READ_INVALID};
use cairn_engine::types::Stream;

use super::super::{int_arg, is, text, CmdError, CmdResult, Ctx};
use super::args::{lenient_id, strict_id};
use super::{check_subcommand_arity, lookup, lookup_or_create, now_ms, subcommand_syntax_error, write_help};

/// Subcommands and their arities (whole command line).
const SUBCOMMANDS: &[(&str, i32)] =
    &[("create", -5), ("setid", -5), ("destroy", 4), ("createconsumer", 5), ("delconsumer", 5), ("help", 2)];

const HELP: &[&str] = &[
    "CREATE <key> <groupname> <id|$> [option]",
    "    Create a new consumer group. Options are:",
    "    * MKSTREAM",
    "      Create the empty stream if it does not exist.",
    "    * ENTRIESREAD entries_read",
    "      Set the group's entries_read counter (internal use).",
    "CREATECONSUMER <key> <groupname> <consumer>",
    "    Create a new consumer in the specified group.",
    "DELCONSUMER <key> <groupname> <consumer>",
    "    Remove the specified consumer.",
    "DESTROY <key> <groupname>",
    "    Remove the specified group.",
    "SETID <key> <groupname> <id|$> [ENTRIESREAD entries_read]",
    "    Set the current group ID and entries_read counter.",
];

const KEY_REQUIRED: CmdError = CmdError::Static(
    "ERR The XGROUP subcommand requires the key to exist. Note that for CREATE you may want to use the MKSTREAM \
     option to create an empty stream automatically.",
);

/// Options after `<id>` of CREATE and SETID.
struct GroupOptions {
    mkstream: bool,
    entries_read: i64,
}

pub fn xgroup(ctx: &mut Ctx<'_>, args: &[&[u8]]) -> CmdResult {
    let sub = args[1];
    let Some(&(name, arity)) = SUBCOMMANDS.iter().find(|(n, _)| is(sub, n)) else {
        return Err(CmdError::unknown_subcommand("xgroup", sub));
    };
    check_subcommand_arity("xgroup", sub, args.len(), arity)?;
    if name == "help" {
        write_help(ctx, "xgroup", HELP);
        return Ok(());
    }
    let options = parse_options(args, name)?;
    let (key, group) = (args[2], args[3]);
    let db = ctx.db();
    let now = now_ms(ctx);
    let mut shard = ctx.server.keyspace.lock_key(key);
    let table = shard.db(db);
    let exists = lookup(table, key, ctx.now_ms)?.is_some();
    if !exists && !options.mkstream {
        return Err(KEY_REQUIRED);
    }
    if name == "create" {
        if args.len() > 8 {
            return Err(subcommand_syntax_error("xgroup", sub));
        }
        let id = create_id(args[4], lookup(table, key, ctx.now_ms)?.as_deref())?;
        let stream = lookup_or_create(table, key, ctx.now_ms)?;
        if !stream.create_group(group, id, options.entries_read) {
            return Err(CmdError::Static("BUSYGROUP Consumer Group name already exists"));
        }
        ctx.notify(ev::STREAM, "xgroup-create", key);
        ctx.out.ok();
        return Ok(());
    }
    let stream = lookup(table, key, ctx.now_ms)?.ok_or(KEY_REQUIRED)?;
    if name == "destroy" {
        let destroyed = stream.destroy_group(group);
        if destroyed {
            // Blocked XREADGROUPs on this group get -NOGROUP.
            ctx.server.blocking.signal(db, key);
            ctx.notify(ev::STREAM, "xgroup-destroy", key);
        }
        ctx.out.int(i64::from(destroyed));
        return Ok(());
    }
    let last_id = stream.last_id();
    let Some(g) = stream.group_mut(group) else {
        return Err(CmdError::Message(format!(
            "NOGROUP No such consumer group '{}' for key name '{}'",
            text(group),
            text(key)
        )));
    };
    match name {
        "setid" => {
            if args.len() != 5 && args.len() != 7 {
                return Err(subcommand_syntax_error("xgroup", sub));
            }
            g.last_id = if args[4] == b"$" { last_id } else { lenient_id(args[4], 0)? };
            g.entries_read = options.entries_read;
            ctx.notify(ev::STREAM, "xgroup-setid", key);
            ctx.out.ok();
        }
        "createconsumer" => {
            let created = g.create_consumer(args[4], now);
            if created {
                ctx.notify(ev::STREAM, "xgroup-createconsumer", key);
            }
            ctx.out.int(i64::from(created));
        }
        _ => {
            let deleted = g.delete_consumer(args[4]);
            if deleted.is_some() {
                ctx.notify(ev::STREAM, "xgroup-delconsumer", key);
            }
            ctx.out.int(deleted.unwrap_or(0) as i64);
        }
    }
    Ok(())
}

/// CREATE's ID: `$` is the stream's last ID (0-0 without a stream).
fn create_id(arg: &[u8], stream: Option<&Stream>) -> Result<StreamId, CmdError> {
    if arg == b"$" {
        return Ok(stream.map_or(StreamId::MIN, |s| s.last_id()));
    }
    strict_id(arg)
}

/// MKSTREAM and ENTRIESREAD, accepted where Redis accepts them.
fn parse_options(args: &[&[u8]], name: &str) -> Result<GroupOptions, CmdError> {
    let mut options = GroupOptions { mkstream: false, entries_read: ENTRIES_READ_INVALID };
    let create = name == "create";
    let setid = name == "setid";
    let mut i = 5;
    while i < args.len() {
        if create && is(args[i], "mkstream") {
            options.mkstream = true;
            i += 1;
        } else if (create || setid) && is(args[i], "entriesread") && i + 1 < args.len() {
            let n = int_arg(args[i + 1])?;
            if n < 0 && n != ENTRIES_READ_INVALID {
                return Err(CmdError::Static("ERR value for ENTRIESREAD must be positive or -1"));
            }
            options.entries_read = n;
            i += 2;
        } else {
            return Err(subcommand_syntax_error("xgroup", args[1]));
        }
    }
    Ok(options)
}

//! Stream commands: XADD, XLEN, XRANGE, XREVRANGE, XDEL, XTRIM, XSETID, XREAD,
//! XREADGROUP, XGROUP, XACK, XPENDING, XCLAIM, XAUTOCLAIM and XINFO, with Redis
//! 7.0.15's replies and error messages.
//!
//! # Layout
//!
//! - this file: the command rows, key lookup and the reply writers shared by
//!   the family (an ID, an entry).
//! - [`args`]: parsing of IDs, ranges and XADD/XTRIM's trimming options.
//! - [`add`]: XADD, XLEN, XDEL, XTRIM, XSETID; [`exact_trim`]: how XADD and
//!   XTRIM log an approximate trim.
//! - [`range`]: XRANGE, XREVRANGE.
//! - [`read`]: XREAD, XREADGROUP.
//! - [`groups`]: XGROUP and its subcommands.
//! - [`pending`]: XACK, XPENDING, XCLAIM, XAUTOCLAIM.
//! - [`info`]: XINFO and its subcommands.
//! - [`restore_consumer`]: CAIRN.XCONSUMER, the rebuild-only command that
//!   restores a consumer from a snapshot (not in the command table).
//!
//! The data structure and its semantics live in `cairn_engine::types::stream`.

mod add;
mod args;
mod exact_trim;
mod groups;
mod info;
mod pending;
mod range;
mod read;
mod restore_consumer;

pub(crate) use restore_consumer::xconsumer;

use cairn_engine::types::stream::{StreamEntry, StreamId};
use cairn_engine::types::Stream;
use cairn_engine::{Table, Value};
use cairn_protocol::ReplyWriter;

use super::table::{c, CommandSpec, F, K1, MOVABLE, NONE, R, SUBCOMMANDS, W};
use super::{text, CmdError, CmdResult, Ctx};

/// XREAD and XREADGROUP name their keys after `STREAMS`, which the table
/// cannot express: like Redis (`movablekeys`, key spec 0 0 0) they declare
/// none. EXEC then holds every shard for them, and XREADGROUP does not touch
/// WATCHed keys (Redis's does not either).
const KSTREAMS: (i32, i32, i32) = NONE;
/// XGROUP and XINFO subcommands: the key is the second argument.
const K2: (i32, i32, i32) = (2, 2, 1);

/// This family's commands (joined into the command table).
pub static COMMANDS: &[CommandSpec] = &[
    c("xadd", -5, W | F, K1, add::xadd),
    c("xlen", 2, R | F, K1, add::xlen),
    c("xdel", -3, W | F, K1, add::xdel),
    c("xtrim", -4, W, K1, add::xtrim),
    c("xsetid", -3, W | F, K1, add::xsetid),
    c("xrange", -4, R, K1, range::xrange),
    c("xrevrange", -4, R, K1, range::xrevrange),
    c("xread", -4, R, KSTREAMS, read::xread),
    c("xreadgroup", -7, W | MOVABLE, KSTREAMS, read::xreadgroup),
    c("xgroup", -2, W | SUBCOMMANDS, K2, groups::xgroup),
    c("xack", -4, W | F, K1, pending::xack),
    c("xpending", -3, R, K1, pending::xpending),
    c("xclaim", -6, W | F, K1, pending::xclaim),
    c("xautoclaim", -6, W | F, K1, pending::xautoclaim),
    c("xinfo", -2, R | SUBCOMMANDS, K2, info::xinfo),
];

/// The stream stored at `key`: `Ok(None)` when absent, WRONGTYPE for other types.
fn lookup<'t>(table: &'t mut Table, key: &[u8], now_ms: u64) -> Result<Option<&'t mut Stream>, CmdError> {
    match table.get(key, now_ms) {
        None => Ok(None),
        Some(entry) => match &mut entry.value {
            Value::Stream(s) => Ok(Some(s)),
            _ => Err(CmdError::WrongType),
        },
    }
}

/// The stream at `key`, created empty if absent.
fn lookup_or_create<'t>(table: &'t mut Table, key: &[u8], now_ms: u64) -> Result<&'t mut Stream, CmdError> {
    if lookup(table, key, now_ms)?.is_none() {
        table.insert(key, Value::Stream(Box::default()), cairn_engine::entry::NO_EXPIRY, now_ms);
    }
    lookup(table, key, now_ms)?.ok_or(CmdError::NoSuchKey)
}

/// An ID as a bulk string.
fn write_id(out: &mut ReplyWriter<'_>, id: StreamId) {
    id.with_text(|t| out.bulk(t));
}

/// An entry: `[id, [field, value, ...]]`.
fn write_entry(out: &mut ReplyWriter<'_>, entry: &StreamEntry<'_>) {
    out.array(2);
    write_id(out, entry.id);
    let fields = entry.fields();
    out.array(fields.len() * 2);
    for (field, value) in fields {
        out.bulk(field);
        out.bulk(value);
    }
}

/// Entries of `stream` by ID, as an array (the IDs must exist).
fn write_entries_by_id(out: &mut ReplyWriter<'_>, stream: &Stream, ids: &[StreamId]) {
    out.array(ids.len());
    for &id in ids {
        match stream.get(id) {
            Some(entry) => write_entry(out, &entry),
            None => out.null_array(),
        }
    }
}

/// `-NOGROUP No such key '<key>' or consumer group '<group>'<suffix>`.
fn no_key_or_group(key: &[u8], group: &[u8], suffix: &str) -> CmdError {
    CmdError::Message(format!("NOGROUP No such key '{}' or consumer group '{}'{suffix}", text(key), text(group)))
}

/// Redis's `addReplySubcommandSyntaxError`.
fn subcommand_syntax_error(command: &str, sub: &[u8]) -> CmdError {
    let sub: String = text(sub).chars().take(128).collect();
    CmdError::err(format!(
        "unknown subcommand or wrong number of arguments for '{sub}'. Try {} HELP.",
        command.to_ascii_uppercase()
    ))
}

/// Redis's `addReplyHelp`: the usage line, `lines`, then HELP's own entry.
fn write_help(ctx: &mut Ctx<'_>, command: &str, lines: &[&str]) {
    ctx.out.array(lines.len() + 3);
    ctx.out
        .simple(&format!("{} <subcommand> [<arg> [value] [opt] ...]. Subcommands are:", command.to_ascii_uppercase()));
    for line in lines {
        ctx.out.simple(line);
    }
    ctx.out.simple("HELP");
    ctx.out.simple("    Prints this help.");
}

/// A subcommand's arity check: `arity` counts the whole command line, negative for "at least".
fn check_subcommand_arity(command: &str, sub: &[u8], argc: usize, arity: i32) -> CmdResult {
    let ok = if arity >= 0 { argc == arity as usize } else { argc >= arity.unsigned_abs() as usize };
    if ok {
        Ok(())
    } else {
        Err(CmdError::subcommand_arity(command, sub))
    }
}

/// The current time as Redis's `mstime()` (signed milliseconds).
fn now_ms(ctx: &Ctx<'_>) -> i64 {
    ctx.now_ms as i64
}

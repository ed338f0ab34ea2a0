//! XRANGE and XREVRANGE.

use super::super::{int_arg, is, CmdError, CmdResult, Ctx};
use super::args::{range_end, range_start};
use super::{lookup, write_entry};

/// XRANGE key start end [COUNT count]
pub fn xrange(ctx: &mut Ctx<'_>, args: &[&[u8]]) -> CmdResult {
    range(ctx, args, false)
}

/// XREVRANGE key end start [COUNT count]
pub fn xrevrange(ctx: &mut Ctx<'_>, args: &[&[u8]]) -> CmdResult {
    range(ctx, args, true)
}

fn range(ctx: &mut Ctx<'_>, args: &[&[u8]], rev: bool) -> CmdResult {
    let (start_arg, end_arg) = if rev { (args[3], args[2]) } else { (args[2], args[3]) };
    let start = range_start(start_arg)?;
    let end = range_end(end_arg)?;
    let mut count: Option<usize> = None;
    let mut i = 4;
    while i < args.len() {
        if is(args[i], "count") && i + 1 < args.len() {
            count = Some(int_arg(args[i + 1])?.max(0) as usize);
            i += 2;
        } else {
            return Err(CmdError::Syntax);
        }
    }
    let db = ctx.db();
    let mut shard = ctx.server.keyspace.lock_key(args[1]);
    let Some(stream) = lookup(shard.db(db), args[1], ctx.now_ms)? else {
        ctx.out.array(0);
        return Ok(());
    };
    if count == Some(0) {
        ctx.out.null_array();
        return Ok(());
    }
    let entries: Vec<_> = stream.range(start, end, rev).take(count.unwrap_or(usize::MAX)).collect();
    ctx.out.array(entries.len());
    for entry in &entries {
        write_entry(&mut ctx.out, entry);
    }
    Ok(())
}

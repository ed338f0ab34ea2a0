//! LOLWUT [VERSION version]: Redis answers with generative art and its
//! version; Cairn answers as Redis does for versions without art
//! (`lolwutUnstableCommand`): the version line alone.

use super::connection::REDIS_COMPAT_VERSION;
use super::{int_arg, is, CmdResult, Ctx};

/// LOLWUT [VERSION version] [art arguments ...]
pub fn lolwut(ctx: &mut Ctx<'_>, args: &[&[u8]]) -> CmdResult {
    if args.len() >= 3 && is(args[1], "version") {
        int_arg(args[2])?;
    }
    ctx.out.verbatim("txt", format!("Redis ver. {REDIS_COMPAT_VERSION}\n").as_bytes());
    Ok(())
}

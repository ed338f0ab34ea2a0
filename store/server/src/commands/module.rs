//! MODULE, as Redis 7.0 answers it with `enable-module-command no` (its
//! default) and no module loaded: Cairn does not load Redis modules.
//! LIST (which GUI clients run on connecting) is an empty list; LOAD,
//! LOADEX and UNLOAD are refused with Redis's message.

use super::{is, CmdError, CmdResult, Ctx};

const NOT_ALLOWED: &str = "ERR MODULE command not allowed. If the enable-module-command option is set to \"local\", \
                           you can run it from a local connection, otherwise you need to set this option in the \
                           configuration file, and then restart the server.";

const HELP: &[&str] = &[
    "MODULE <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
    "LIST",
    "    Return a list of loaded modules.",
    "LOAD <path> [<arg> ...]",
    "    Load a module library from <path>, passing to it any optional arguments.",
    "LOADEX <path> [[CONFIG NAME VALUE] [CONFIG NAME VALUE]] [ARGS ...]",
    "    Load a module library from <path>, while passing it module configurations and optional arguments.",
    "UNLOAD <name>",
    "    Unload a module.",
    "HELP",
    "    Prints this help.",
];

/// MODULE LIST | HELP | LOAD | LOADEX | UNLOAD
pub fn module(ctx: &mut Ctx<'_>, args: &[&[u8]]) -> CmdResult {
    let sub = args[1];
    let full = format!("module|{}", super::text(sub).to_lowercase());
    let Some(arity) = super::meta::arity(&full) else {
        return Err(CmdError::unknown_subcommand("module", sub));
    };
    if !super::arity_fits(arity, args.len()) {
        return Err(CmdError::subcommand_arity("module", sub));
    }
    if is(sub, "list") {
        ctx.out.array(0);
    } else if is(sub, "help") {
        super::server_admin::write_help(ctx, HELP);
    } else {
        return Err(CmdError::Static(NOT_ALLOWED));
    }
    Ok(())
}

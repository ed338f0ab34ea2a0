//! EVAL, EVALSHA, EVAL_RO, EVALSHA_RO and SCRIPT (see crate::scripting).

use super::table::{c, CommandSpec, MOVABLE, NONE, RUNS_SCRIPT, SUBCOMMANDS};
use super::{int_arg, is, CmdError, CmdResult, Ctx};
use crate::blocking::BlockState;
use crate::scripting::run::{self, ScriptRequest};

pub static COMMANDS: &[CommandSpec] = &[
    c("eval", -3, MOVABLE | RUNS_SCRIPT, NONE, eval),
    c("evalsha", -3, MOVABLE | RUNS_SCRIPT, NONE, evalsha),
    c("eval_ro", -3, super::table::R | MOVABLE | RUNS_SCRIPT, NONE, eval_ro),
    c("evalsha_ro", -3, super::table::R | MOVABLE | RUNS_SCRIPT, NONE, evalsha_ro),
    c("script", -2, SUBCOMMANDS, NONE, script),
];

const NOSCRIPT: &str = "NOSCRIPT No matching script. Please use EVAL.";

pub fn eval(ctx: &mut Ctx<'_>, args: &[&[u8]]) -> CmdResult {
    eval_generic(ctx, args, false, false)
}

pub fn evalsha(ctx: &mut Ctx<'_>, args: &[&[u8]]) -> CmdResult {
    eval_generic(ctx, args, true, false)
}

pub fn eval_ro(ctx: &mut Ctx<'_>, args: &[&[u8]]) -> CmdResult {
    eval_generic(ctx, args, false, true)
}

pub fn evalsha_ro(ctx: &mut Ctx<'_>, args: &[&[u8]]) -> CmdResult {
    eval_generic(ctx, args, true, true)
}

pub(crate) fn numkeys(args: &[&[u8]]) -> Result<usize, CmdError> {
    let numkeys = int_arg(args[2])?;
    if numkeys > (args.len() - 3) as i64 {
        return Err(CmdError::Static("ERR Number of keys can't be greater than number of args"));
    }
    if numkeys < 0 {
        return Err(CmdError::Static("ERR Number of keys can't be negative"));
    }
    Ok(numkeys as usize)
}

fn eval_generic(ctx: &mut Ctx<'_>, args: &[&[u8]], by_sha: bool, read_only: bool) -> CmdResult {
    let numkeys = numkeys(args)?;
    let cache = &ctx.server.scripting.cache;
    let shebang = |body: &[u8]| crate::scripting::shebang::parse(body).map_err(CmdError::err);
    if !by_sha {
        // A malformed shebang is refused before the script is cached.
        shebang(args[1])?;
    }
    let cached = if by_sha { cache.get(args[1]).ok_or(CmdError::Static(NOSCRIPT))? } else { cache.insert(args[1]) };
    let flags = shebang(&cached.body)?;
    // A script without a shebang runs: its commands are what the OOM and
    // replica checks refuse.
    if let Some(s) = flags {
        super::functions::refuse_before_start(ctx, s.no_writes, s.allow_oom)?;
    }
    let read_only = read_only || flags.is_some_and(|s| s.no_writes);
    let request = ScriptRequest {
        sha: cached.sha,
        body: cached.body,
        speed: cached.speed,
        keys: args[3..3 + numkeys].iter().map(|a| a.to_vec()).collect(),
        argv: args[3 + numkeys..].iter().map(|a| a.to_vec()).collect(),
        read_only,
        allow_oom: flags.is_some_and(|s| s.allow_oom),
        function: None,
    };
    start(ctx, request);
    Ok(())
}

/// Runs the script here (off the worker already, or in process), or leaves
/// it for the connection to run off its event loop (connection.rs).
pub(crate) fn start(ctx: &mut Ctx<'_>, request: ScriptRequest) {
    if matches!(ctx.client.block, BlockState::Denied) || ctx.client.off_worker {
        run_inline(ctx, &request);
    } else {
        // After a script left for the script thread, the next ones follow it there (in order).
        if ctx.client.pending_scripts.is_empty() && crate::scripting::on_worker::try_run(ctx, &request) {
            return;
        }
        let at = ctx.out.buffer().len();
        // EVAL, FCALL, ...: the dispatcher noted the index (no subcommands).
        let stat = usize::from(ctx.client.handle.last_command.load(std::sync::atomic::Ordering::Relaxed));
        ctx.client.pending_scripts.push(run::PendingScript { at, request, stat });
    }
}

/// Runs the script on this thread: the client is off its worker (see
/// `scripting::offload`), or in process (the embedded database). Inside EXEC
/// its writes join the transaction's record.
pub(crate) fn run_inline(ctx: &mut Ctx<'_>, request: &ScriptRequest) {
    let caller = run::Caller::of(ctx.client);
    let mut parent = ctx.client.txn_log.take();
    let within = if ctx.client.in_exec { run::Within::Exec(parent.as_mut()) } else { run::Within::Alone };
    let outcome = run::execute(ctx.server, ctx.stats, &caller, request, within);
    ctx.client.txn_log = parent;
    outcome.answer(ctx);
}

const HELP: &[&str] = &[
    "SCRIPT <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
    "DEBUG (YES|SYNC|NO)",
    "    Set the debug mode for subsequent scripts executed.",
    "EXISTS <sha1> [<sha1> ...]",
    "    Return information about the existence of the scripts in the script cache.",
    "FLUSH [ASYNC|SYNC]",
    "    Flush the Lua scripts cache. Very dangerous on replicas.",
    "    When called without the optional mode argument, the behavior is determined by the",
    "    lazyfree-lazy-user-flush configuration directive. Valid modes are:",
    "    * ASYNC: Asynchronously flush the scripts cache.",
    "    * SYNC: Synchronously flush the scripts cache.",
    "KILL",
    "    Kill the currently executing Lua script.",
    "LOAD <script>",
    "    Load a script into the scripts cache without executing it.",
    "HELP",
    "    Prints this help.",
];

/// SCRIPT DEBUG YES|SYNC|NO: Cairn has no Lua debugger, so debugging is
/// always off: NO is accepted, YES and SYNC are refused.
fn script_debug(ctx: &mut Ctx<'_>, mode: &[u8]) -> CmdResult {
    if is(mode, "no") {
        ctx.out.ok();
        Ok(())
    } else if is(mode, "yes") || is(mode, "sync") {
        Err(CmdError::Static("ERR Cairn has no Lua debugger: SCRIPT DEBUG YES and SYNC are not supported"))
    } else {
        Err(CmdError::Static("ERR Use SCRIPT DEBUG YES/SYNC/NO"))
    }
}

pub fn script(ctx: &mut Ctx<'_>, args: &[&[u8]]) -> CmdResult {
    let sub = args[1];
    let arity_ok = |ok: bool| if ok { Ok(()) } else { Err(CmdError::subcommand_arity("script", sub)) };
    let scripting = &ctx.server.scripting;
    if is(sub, "load") {
        arity_ok(args.len() == 3)?;
        crate::scripting::shebang::parse(args[2]).map_err(CmdError::err)?;
        let sha = scripting.cache.insert(args[2]).sha;
        ctx.out.bulk(sha.as_bytes());
    } else if is(sub, "exists") {
        arity_ok(args.len() >= 3)?;
        ctx.out.array(args.len() - 2);
        for sha in &args[2..] {
            ctx.out.int(i64::from(scripting.cache.contains(sha)));
        }
    } else if is(sub, "flush") {
        arity_ok(args.len() <= 3)?;
        if args.len() == 3 && !is(args[2], "sync") && !is(args[2], "async") {
            return Err(CmdError::Static("ERR SCRIPT FLUSH only support SYNC|ASYNC option"));
        }
        scripting.cache.flush();
        scripting.release_stale();
        ctx.out.ok();
    } else if is(sub, "kill") {
        arity_ok(args.len() == 2)?;
        scripting.busy.kill(false).map_err(|refused| CmdError::Static(refused.message()))?;
        ctx.out.ok();
    } else if is(sub, "help") {
        arity_ok(args.len() == 2)?;
        ctx.out.array(HELP.len());
        for line in HELP {
            ctx.out.simple(line);
        }
    } else if is(sub, "debug") {
        arity_ok(args.len() == 3)?;
        script_debug(ctx, args[2])?;
    } else {
        return Err(CmdError::unknown_subcommand("script", sub));
    }
    Ok(())
}

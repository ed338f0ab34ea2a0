//! FUNCTION (LOAD, DELETE, FLUSH, LIST, DUMP, RESTORE, STATS, KILL, HELP),
//! FCALL and FCALL_RO: Redis 7.0's functions over the script runner of
//! EVAL (see crate::scripting::library and docs/ARCHITECTURE.md).
//!
//! LOAD, DELETE, FLUSH and RESTORE change the libraries: each is logged as
//! sent, under the registry's lock, so the log's order is the registry's
//! (and replay loads the libraries again). FCALL's writes are logged as the
//! commands the function ran, as EVAL's are.

use super::table::{c, CommandSpec, MOVABLE, NONE, R, RUNS_SCRIPT, SUBCOMMANDS};
use super::{is, text, CmdError, CmdResult, Ctx};
use crate::client::Origin;
use crate::scripting::library::{Library, Registry, ALLOW_OOM, FLAG_NAMES, NO_WRITES};
use crate::scripting::library_dump;
use crate::scripting::library_load::{self, LOAD_TIMEOUT};
use crate::scripting::run::{FunctionTarget, ScriptRequest};

pub static COMMANDS: &[CommandSpec] = &[
    c("function", -2, SUBCOMMANDS, NONE, function),
    c("fcall", -3, MOVABLE | RUNS_SCRIPT, NONE, fcall),
    c("fcall_ro", -3, R | MOVABLE | RUNS_SCRIPT, NONE, fcall_ro),
];

pub fn fcall(ctx: &mut Ctx<'_>, args: &[&[u8]]) -> CmdResult {
    fcall_generic(ctx, args, false)
}

pub fn fcall_ro(ctx: &mut Ctx<'_>, args: &[&[u8]]) -> CmdResult {
    fcall_generic(ctx, args, true)
}

fn fcall_generic(ctx: &mut Ctx<'_>, args: &[&[u8]], read_only: bool) -> CmdResult {
    let libraries = &ctx.server.scripting.libraries;
    let generation = libraries.generation();
    let (library, name, flags, speed) = {
        let registry = libraries.read();
        let (library, info) = registry.function(args[1]).ok_or(CmdError::Static("ERR Function not found"))?;
        (library, info.name.clone(), info.flags, info.speed.clone())
    };
    let numkeys = match super::int_arg(args[2]) {
        Ok(n) => n,
        Err(_) => return Err(CmdError::Static("ERR Bad number of keys provided")),
    };
    if numkeys > (args.len() - 3) as i64 {
        return Err(CmdError::Static("ERR Number of keys can't be greater than number of args"));
    }
    if numkeys < 0 {
        return Err(CmdError::Static("ERR Number of keys can't be negative"));
    }
    let no_writes = flags & NO_WRITES != 0;
    if read_only && !no_writes {
        return Err(CmdError::Static("ERR Can not execute a script with write flag using *_ro command."));
    }
    refuse_before_start(ctx, no_writes, flags & ALLOW_OOM != 0)?;
    let numkeys = numkeys as usize;
    let request = ScriptRequest {
        sha: name.clone(),
        body: std::sync::Arc::from(&[][..]),
        keys: args[3..3 + numkeys].iter().map(|a| a.to_vec()).collect(),
        argv: args[3 + numkeys..].iter().map(|a| a.to_vec()).collect(),
        read_only: no_writes,
        allow_oom: flags & ALLOW_OOM != 0,
        speed,
        function: Some(FunctionTarget {
            library,
            key: name.to_ascii_lowercase(),
            generation,
            command: args.iter().map(|a| a.to_vec()).collect(),
        }),
    };
    super::scripting::start(ctx, request);
    Ok(())
}

pub fn function(ctx: &mut Ctx<'_>, args: &[&[u8]]) -> CmdResult {
    let sub = args[1];
    let arity = |ok: bool| if ok { Ok(()) } else { Err(CmdError::subcommand_arity("function", sub)) };
    if is(sub, "load") {
        arity(args.len() >= 3)?;
        released(ctx, args, load)
    } else if is(sub, "delete") {
        arity(args.len() == 3)?;
        released(ctx, args, delete)
    } else if is(sub, "flush") {
        arity(args.len() >= 2)?;
        released(ctx, args, flush)
    } else if is(sub, "list") {
        list(ctx, &args[2..])
    } else if is(sub, "dump") {
        arity(args.len() == 2)?;
        dump(ctx);
        Ok(())
    } else if is(sub, "restore") {
        arity(args.len() >= 3)?;
        released(ctx, args, restore)
    } else if is(sub, "stats") {
        arity(args.len() == 2)?;
        stats(ctx)
    } else if is(sub, "kill") {
        arity(args.len() == 2)?;
        ctx.server.scripting.busy.kill(true).map_err(|refused| CmdError::Static(refused.message()))?;
        ctx.out.ok();
        Ok(())
    } else if is(sub, "help") {
        arity(args.len() == 2)?;
        super::server_admin::write_help(ctx, HELP);
        Ok(())
    } else {
        Err(CmdError::unknown_subcommand("function", sub))
    }
}

/// Redis's reply to a FUNCTION subcommand with a wrong argument count.
fn syntax_error(sub: &[u8]) -> CmdError {
    CmdError::Message(format!(
        "ERR unknown subcommand or wrong number of arguments for '{}'. Try FUNCTION HELP.",
        text(sub)
    ))
}

/// Logs a library change as sent (not while replaying), still under the
/// registry's lock; inside EXEC it joins the transaction's record.
fn log_change(ctx: &mut Ctx<'_>, args: &[&[u8]]) -> Result<(), String> {
    if ctx.client.origin == Origin::Internal {
        return Ok(());
    }
    let Some(wal) = ctx.server.persistence.wal() else { return Ok(()) };
    let db = ctx.client.db as u32;
    if let Some(txn) = ctx.client.txn_log.as_mut() {
        txn.push((db, args.iter().map(|a| a.to_vec()).collect()));
        return Ok(());
    }
    let refused = |e| crate::persistence::logging::refused(&e).message("function");
    wal.check_writable().map_err(refused)?;
    let lsn = wal.append_command(cairn_engine::clock::monotonic_now_ms(), db, args).map_err(refused)?;
    ctx.client.last_lsn = lsn;
    Ok(())
}

/// A script or function that declares it may write is refused before it
/// starts, as Redis treats it as a write command: above `maxmemory` (unless
/// `allow-oom`) and without the good replicas `min-replicas-to-write` asks for.
pub(crate) fn refuse_before_start(ctx: &Ctx<'_>, no_writes: bool, allow_oom: bool) -> CmdResult {
    if no_writes {
        return Ok(());
    }
    if !allow_oom && out_of_memory(ctx) {
        return Err(CmdError::Static(crate::maxmemory::OOM));
    }
    if ctx.server.runtime.lacks_good_replicas() {
        return Err(CmdError::Static(super::NOREPLICAS));
    }
    Ok(())
}

/// Memory is above `maxmemory` even after eviction (LOAD and RESTORE are
/// Redis `denyoom` subcommands, which the dispatcher does not see).
fn out_of_memory(ctx: &Ctx<'_>) -> bool {
    ctx.client.origin != Origin::Internal
        && ctx.server.runtime.maxmemory.load(std::sync::atomic::Ordering::Relaxed) != 0
        && crate::maxmemory::make_room(ctx.server, ctx.now_ms)
}

/// How long a load may run: unlimited when replaying.
fn load_timeout(ctx: &Ctx<'_>) -> Option<std::time::Duration> {
    (ctx.client.origin != Origin::Internal).then_some(LOAD_TIMEOUT)
}

fn load(ctx: &mut Ctx<'_>, args: &[&[u8]]) -> CmdResult {
    let mut replace = false;
    let mut pos = 2;
    while pos < args.len() - 1 {
        if !is(args[pos], "replace") {
            return Err(CmdError::Message(format!("ERR Unknown option given: {}", text(args[pos]))));
        }
        replace = true;
        pos += 1;
    }
    let code = args[pos];
    if out_of_memory(ctx) {
        return Err(CmdError::Static(crate::maxmemory::OOM));
    }
    let scripting = &ctx.server.scripting;
    let meta = crate::scripting::library::metadata(code).map_err(CmdError::Message)?;
    if !replace && scripting.libraries.read().library(meta.name.as_bytes()).is_some() {
        return Err(CmdError::Message(format!("ERR Library '{}' already exists", meta.name)));
    }
    let library = library_load::load(scripting, code, load_timeout(ctx)).map_err(CmdError::Message)?;
    let name = library.name.clone();
    let libraries = scripting.libraries.clone();
    libraries.change(|registry| registry.add(library, replace), || log_change(ctx, args)).map_err(CmdError::Message)?;
    ctx.out.bulk(name.as_bytes());
    Ok(())
}

fn delete(ctx: &mut Ctx<'_>, args: &[&[u8]]) -> CmdResult {
    let key = String::from_utf8_lossy(args[2]).to_ascii_lowercase();
    let libraries = ctx.server.scripting.libraries.clone();
    libraries
        .change(
            |registry| if registry.remove(&key) { Ok(()) } else { Err("ERR Library not found".to_string()) },
            || log_change(ctx, args),
        )
        .map_err(CmdError::Message)?;
    ctx.out.ok();
    Ok(())
}

fn flush(ctx: &mut Ctx<'_>, args: &[&[u8]]) -> CmdResult {
    if args.len() > 3 {
        return Err(syntax_error(args[1]));
    }
    if args.len() == 3 && !is(args[2], "sync") && !is(args[2], "async") {
        return Err(CmdError::Static("ERR FUNCTION FLUSH only supports SYNC|ASYNC option"));
    }
    let libraries = ctx.server.scripting.libraries.clone();
    libraries
        .change(
            |registry| {
                *registry = Registry::default();
                Ok(())
            },
            || log_change(ctx, args),
        )
        .map_err(CmdError::Message)?;
    ctx.out.ok();
    Ok(())
}

/// After a change to the libraries, the interpreters drop the ones they
/// loaded (see crate::scripting::stale).
fn released(ctx: &mut Ctx<'_>, args: &[&[u8]], change: fn(&mut Ctx<'_>, &[&[u8]]) -> CmdResult) -> CmdResult {
    let result = change(ctx, args);
    if result.is_ok() {
        ctx.server.scripting.release_stale();
    }
    result
}

/// FUNCTION LIST [LIBRARYNAME pattern] [WITHCODE].
fn list(ctx: &mut Ctx<'_>, options: &[&[u8]]) -> CmdResult {
    let (mut with_code, mut pattern) = (false, None);
    let mut i = 0;
    while i < options.len() {
        let arg = options[i];
        if !with_code && is(arg, "withcode") {
            with_code = true;
        } else if pattern.is_none() && is(arg, "libraryname") {
            pattern = Some(*options.get(i + 1).ok_or(CmdError::Static("ERR library name argument was not given"))?);
            i += 1;
        } else {
            let arg = text(arg).replace(['\r', '\n'], " ");
            return Err(CmdError::Message(format!("ERR Unknown argument {arg}")));
        }
        i += 1;
    }
    let registry = ctx.server.scripting.libraries.read();
    let matching: Vec<&Library> = registry
        .libraries
        .values()
        .filter(|l| pattern.is_none_or(|p| cairn_engine::glob::matches(p, l.name.as_bytes(), true)))
        .map(|l| &**l)
        .collect();
    ctx.out.array(matching.len());
    for library in matching {
        write_library(ctx, library, with_code);
    }
    Ok(())
}

fn write_library(ctx: &mut Ctx<'_>, library: &Library, with_code: bool) {
    let out = &mut ctx.out;
    out.map(if with_code { 4 } else { 3 });
    out.bulk(b"library_name");
    out.bulk(library.name.as_bytes());
    out.bulk(b"engine");
    out.bulk(b"LUA");
    out.bulk(b"functions");
    out.array(library.functions.len());
    for info in library.functions.values() {
        out.map(3);
        out.bulk(b"name");
        out.bulk(info.name.as_bytes());
        out.bulk(b"description");
        match &info.description {
            Some(d) => out.bulk(d),
            None => out.null_bulk(),
        }
        out.bulk(b"flags");
        let flags: Vec<&str> = FLAG_NAMES.iter().filter(|(bit, _)| info.flags & bit != 0).map(|(_, n)| *n).collect();
        out.set(flags.len());
        for flag in flags {
            out.simple(flag);
        }
    }
    if with_code {
        out.bulk(b"library_code");
        out.bulk(&library.code);
    }
}

fn dump(ctx: &mut Ctx<'_>) {
    let registry = ctx.server.scripting.libraries.read();
    let payload = library_dump::encode(registry.libraries.values().map(|l| l.code.as_slice()));
    drop(registry);
    ctx.out.bulk(&payload);
}

/// How FUNCTION RESTORE treats the libraries already loaded.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Policy {
    Append,
    Replace,
    Flush,
}

fn restore(ctx: &mut Ctx<'_>, args: &[&[u8]]) -> CmdResult {
    if args.len() > 4 {
        return Err(syntax_error(args[1]));
    }
    let policy = match args.get(3) {
        None => Policy::Append,
        Some(p) if is(p, "append") => Policy::Append,
        Some(p) if is(p, "replace") => Policy::Replace,
        Some(p) if is(p, "flush") => Policy::Flush,
        Some(_) => {
            return Err(CmdError::Static(
                "ERR Wrong restore policy given, value should be either FLUSH, APPEND or REPLACE.",
            ))
        }
    };
    if out_of_memory(ctx) {
        return Err(CmdError::Static(crate::maxmemory::OOM));
    }
    let codes = library_dump::decode(args[2]).map_err(CmdError::Static)?;
    let scripting = &ctx.server.scripting;
    let timeout = load_timeout(ctx);
    let mut loaded = Registry::default();
    for code in &codes {
        let library = library_load::load(scripting, code, timeout).map_err(CmdError::Message)?;
        loaded.add(library, false).map_err(CmdError::Message)?;
    }
    let libraries = scripting.libraries.clone();
    libraries.change(|registry| join(registry, loaded, policy), || log_change(ctx, args)).map_err(CmdError::Message)?;
    ctx.out.ok();
    Ok(())
}

/// Adds the restored libraries (libraryJoin): all or none.
fn join(registry: &mut Registry, restored: Registry, policy: Policy) -> Result<(), String> {
    if policy == Policy::Flush {
        *registry = restored;
        return Ok(());
    }
    if policy == Policy::Append {
        if let Some(taken) = restored.libraries.keys().find(|k| registry.libraries.contains_key(*k)) {
            return Err(format!("ERR Library {} already exists", restored.libraries[taken].name));
        }
    }
    for key in restored.libraries.keys() {
        registry.remove(key);
    }
    for library in restored.libraries.into_values() {
        let library = std::sync::Arc::try_unwrap(library).map_err(|_| "ERR library in use".to_string())?;
        registry.add(library, false)?;
    }
    Ok(())
}

fn stats(ctx: &mut Ctx<'_>) -> CmdResult {
    let busy = &ctx.server.scripting.busy;
    if busy.eval_running() {
        return Err(CmdError::Static(crate::scripting::busy::BUSY));
    }
    let running = busy.running_function();
    let (libraries, functions) = {
        let registry = ctx.server.scripting.libraries.read();
        (registry.libraries.len(), registry.function_count())
    };
    let out = &mut ctx.out;
    out.map(2);
    out.bulk(b"running_script");
    match running {
        None => out.null_bulk(),
        Some((function, ms)) => {
            out.map(3);
            out.bulk(b"name");
            out.bulk(function.name.as_bytes());
            out.bulk(b"command");
            out.array(function.command.len());
            for arg in &function.command {
                out.bulk(arg);
            }
            out.bulk(b"duration_ms");
            out.int(ms as i64);
        }
    }
    out.bulk(b"engines");
    out.map(1);
    out.bulk(b"LUA");
    out.map(2);
    out.bulk(b"libraries_count");
    out.int(libraries as i64);
    out.bulk(b"functions_count");
    out.int(functions as i64);
    Ok(())
}

const HELP: &[&str] = &[
    "FUNCTION <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
    "LOAD [REPLACE] <FUNCTION CODE>",
    "    Create a new library with the given library name and code.",
    "DELETE <LIBRARY NAME>",
    "    Delete the given library.",
    "LIST [LIBRARYNAME PATTERN] [WITHCODE]",
    "    Return general information on all the libraries:",
    "    * Library name",
    "    * The engine used to run the Library",
    "    * Library description",
    "    * Functions list",
    "    * Library code (if WITHCODE is given)",
    "    It also possible to get only function that matches a pattern using LIBRARYNAME argument.",
    "STATS",
    "    Return information about the current function running:",
    "    * Function name",
    "    * Command used to run the function",
    "    * Duration in MS that the function is running",
    "    If no function is running, return nil",
    "    In addition, returns a list of available engines.",
    "KILL",
    "    Kill the current running function.",
    "FLUSH [ASYNC|SYNC]",
    "    Delete all the libraries.",
    "    When called without the optional mode argument, the behavior is determined by the",
    "    lazyfree-lazy-user-flush configuration directive. Valid modes are:",
    "    * ASYNC: Asynchronously flush the libraries.",
    "    * SYNC: Synchronously flush the libraries.",
    "DUMP",
    "    Return a serialized payload representing the current libraries, can be restored using FUNCTION RESTORE command",
    "RESTORE <PAYLOAD> [FLUSH|APPEND|REPLACE]",
    "    Restore the libraries represented by the given payload, it is possible to give a restore policy to",
    "    control how to handle existing libraries (default APPEND):",
    "    * FLUSH: delete all existing libraries.",
    "    * APPEND: appends the restored libraries to the existing libraries. On collision, abort.",
    "    * REPLACE: appends the restored libraries to the existing libraries, On collision, replace the old",
    "      libraries with the new libraries (notice that even on this option there is a chance of failure",
    "      in case of functions name collision with another library).",
    "HELP",
    "    Prints this help.",
];

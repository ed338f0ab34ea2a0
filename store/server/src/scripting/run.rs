//! Running one script: every shard held (so it runs atomically and the
//! commands it calls re-enter their locks), a script client whose commands
//! go through the same [`dispatch`] as a connection's, and its writes logged
//! as one transaction record.

use std::cell::RefCell;
use std::sync::Arc;

use cairn_protocol::{ProtocolVersion, ReplyWriter};
use mlua::{HookTriggers, Lua, MultiValue, Value, VmState};

use super::busy::{Busy, Running, RunningFunction, KILLED};
use super::convert::{lua_to_reply, reply_to_lua};
use super::library::Library;
use super::lua_env::{with_env, CallError, LuaEnv};
use crate::blocking::BlockState;
use crate::client::{Client, ClientHandle};
use crate::commands::{dispatch, table, Ctx};
use crate::server::Server;
use crate::stats::WorkerStats;

/// Lua instructions between two checks of SCRIPT KILL (as Redis's hook).
const HOOK_EVERY_INSTRUCTIONS: u32 = 100_000;

/// A script to run.
#[derive(Debug, Clone)]
pub struct ScriptRequest {
    pub sha: String,
    pub body: Arc<[u8]>,
    pub keys: Vec<Vec<u8>>,
    pub argv: Vec<Vec<u8>>,
    /// EVAL_RO / EVALSHA_RO, or a `no-writes` shebang: write and
    /// may-replicate (PUBLISH, ...) commands are refused.
    pub read_only: bool,
    /// `allow-oom` (shebang or function flag): its `denyoom` commands run
    /// above `maxmemory`.
    pub allow_oom: bool,
    /// FCALL: the function to call (then `sha` is its name and `body` empty).
    pub function: Option<FunctionTarget>,
}

/// The function an FCALL runs.
#[derive(Debug, Clone)]
pub struct FunctionTarget {
    pub library: Arc<Library>,
    /// The function's lowercase name (its key in the library).
    pub key: String,
    /// The registry generation when FCALL found it.
    pub generation: u64,
    /// The FCALL command (FUNCTION STATS shows it).
    pub command: Vec<Vec<u8>>,
}

/// Who runs the script: the script client starts in its database.
#[derive(Debug, Clone)]
pub struct Caller {
    pub handle: Arc<ClientHandle>,
    pub db: usize,
    pub protocol: ProtocolVersion,
}

/// A script's reply and what its writes need.
#[derive(Debug, Default)]
pub struct Outcome {
    pub reply: Vec<u8>,
    /// LSN of its log record (0: none); the `sync` tier waits for it.
    pub last_lsn: u64,
    /// Its writes ran but could not be logged: the caller must close.
    pub log_failed: bool,
}

/// A transaction's pending log (EXEC): a script inside EXEC adds its writes there.
pub type TxnLog = Vec<(u32, Vec<Vec<u8>>)>;

/// Where a script runs.
pub enum Within<'a> {
    /// On its own: it announces itself and waits for the workers to leave
    /// their batches before it takes the shards (see `scripting::quiesce`).
    Alone,
    /// Inside EXEC, which announced it and holds every shard already; its
    /// writes join the transaction's log (when there is a log).
    Exec(Option<&'a mut TxnLog>),
}

/// Runs a script on this thread, holding every shard, and returns its reply.
/// Never on a worker thread: alone, it waits for the workers to leave their
/// batches (see [`super::quiesce`]).
pub fn execute(
    server: &Server,
    stats: &WorkerStats,
    caller: &Caller,
    request: &ScriptRequest,
    within: Within<'_>,
) -> Outcome {
    let keyspace = &server.keyspace;
    let scripting = &server.scripting;
    let all: Vec<usize> = (0..keyspace.num_shards()).collect();
    // Declared in this order, dropped in the reverse one: the script ends,
    // then its shards are released, then its announcement goes.
    let (announced, parent_txn) = match within {
        Within::Alone => (Some(scripting.quiesce.announce()), None),
        Within::Exec(parent_txn) => (None, parent_txn),
    };
    if announced.is_some() {
        scripting.quiesce.wait_for_workers();
    }
    let held = keyspace.hold_shards(&all);
    let function =
        request.function.as_ref().map(|f| RunningFunction { name: request.sha.clone(), command: f.command.clone() });
    let running = Running::start(&scripting.busy, function);
    // The script's commands are checked against its caller's user.
    let user = caller.handle.user().unwrap_or_else(|| server.runtime.acl.default_user());
    let mut client = Client::new(caller.handle.clone(), false, user);
    client.origin = crate::client::Origin::Script;
    client.db = caller.db;
    client.block = BlockState::Denied;
    // A tracking caller's script tracks its declared keys once it reads.
    if let Some(tracker) = server.tracking.tracker(caller.handle.id) {
        client.tracking = Some(tracker);
        client.script_keys = request.keys.clone();
    }
    let wal = server.persistence.wal();
    if wal.is_some() {
        client.txn_log = Some(Vec::new());
    }
    let mut scratch = Vec::new();
    let mut outcome = Outcome::default();
    {
        let now_ms = cairn_engine::clock::monotonic_now_ms();
        let mut ctx =
            Ctx::new(server, &mut client, ReplyWriter::new(&mut scratch, ProtocolVersion::Resp2), stats, now_ms);
        let mut out = ReplyWriter::new(&mut outcome.reply, caller.protocol);
        run_lua(&mut ctx, request, &mut out);
        let logged = ctx.client.txn_log.take().unwrap_or_default();
        match (parent_txn, wal) {
            (Some(parent), _) => parent.extend(logged),
            (None, Some(wal)) => {
                if let Err(e) = crate::persistence::logging::log_transaction(&mut ctx, wal, logged) {
                    tracing::error!(error = %e, "a script's writes could not be logged");
                    outcome.log_failed = true;
                }
            }
            (None, None) => {}
        }
    }
    outcome.last_lsn = client.last_lsn;
    drop(running);
    drop(held);
    drop(announced);
    scripting.busy.notify_changed();
    server.blocking.serve_ready(server, stats);
    outcome
}

/// Compiles (or finds) the script and runs it, writing its reply to `out`.
fn run_lua(ctx: &mut Ctx<'_>, request: &ScriptRequest, out: &mut ReplyWriter<'_>) {
    let scripting = &ctx.server.scripting;
    let busy = scripting.busy.clone();
    let generation = scripting.cache.generation();
    let result = with_env(generation, |env| call_script(env, ctx, request, out, busy));
    if let Err(e) = result {
        out.error(&format!("ERR Error running script {}, {e}", request.sha));
    }
    super::lua_env::report_memory(&scripting.lua_memory);
}

/// What the functions a script calls share.
struct CallState<'c, 'a> {
    ctx: &'c mut Ctx<'a>,
    resp3: bool,
    read_only: bool,
    busy: &'c Busy,
    /// Memory was above `maxmemory` when the script started.
    oom_at_start: bool,
    /// The script called a write command.
    wrote: bool,
}

fn call_script(
    env: &mut LuaEnv,
    ctx: &mut Ctx<'_>,
    request: &ScriptRequest,
    out: &mut ReplyWriter<'_>,
    busy: Arc<Busy>,
) {
    let function = match &request.function {
        None => env.function(&request.sha, &request.body),
        Some(target) => env.library_function(target.generation, &target.library, &target.key),
    };
    let function = match function {
        Ok(f) => f,
        Err(message) => {
            out.error(&message);
            return;
        }
    };
    let lua = &env.lua;
    let arguments =
        if request.function.is_some() { function_arguments(lua, request) } else { set_arrays(lua, request) };
    let arguments = match arguments {
        Ok(arguments) => arguments,
        Err(e) => {
            out.error(&format!("ERR {e}"));
            return;
        }
    };
    let hook_busy = busy.clone();
    lua.set_hook(HookTriggers::new().every_nth_instruction(HOOK_EVERY_INSTRUCTIONS), move |lua, _| {
        if hook_busy.kill_requested() {
            // From now on every line fails (as Redis's hook), so that a
            // script's pcall cannot swallow the kill and carry on.
            lua.set_hook(HookTriggers::new().every_line(), |_, _| Err(mlua::Error::runtime(KILLED)));
            return Err(mlua::Error::runtime(KILLED));
        }
        Ok(VmState::Continue)
    });
    // As Redis's `pre_command_oom_state`: above `maxmemory` when the script
    // starts, its `denyoom` commands are refused until it has written.
    let oom_at_start = !request.allow_oom && crate::maxmemory::over_limit(ctx.server);
    let state = RefCell::new(CallState {
        ctx,
        resp3: false,
        read_only: request.read_only,
        busy: &busy,
        oom_at_start,
        wrote: false,
    });
    let imp = env.imp.clone();
    let result = lua.scope(|scope| {
        let redis: mlua::Table = imp.raw_get("redis")?;
        let call = scope.create_function(|lua, args: MultiValue| match redis_call(lua, &state, args)? {
            (Value::Table(reply), true) => {
                let message: String = reply.raw_get("err").unwrap_or_default();
                Err(mlua::Error::external(CallError(message)))
            }
            (reply, _) => Ok(reply),
        })?;
        redis.raw_set("call", super::call_args::packing(lua, call)?)?;
        let pcall = scope.create_function(|lua, args: MultiValue| Ok(redis_call(lua, &state, args)?.0))?;
        redis.raw_set("pcall", super::call_args::packing(lua, pcall)?)?;
        imp.raw_set(
            "setresp",
            scope.create_function(|_, version: i64| {
                set_resp(&state, version == 3);
                Ok(())
            })?,
        )?;
        imp.raw_set(
            "acl_check_cmd",
            scope.create_function(|lua, args: MultiValue| match self::arguments(args) {
                Err(message) => Ok(error_table(lua, message)?),
                Ok(argv) => Ok(acl_check_cmd(&state.borrow(), argv.as_slice()).map_or(Value::Nil, Value::Boolean)),
            })?,
        )?;
        imp.raw_set(
            "log",
            scope.create_function(|_, (level, message): (i64, mlua::String)| {
                log(level, &message);
                Ok(())
            })?,
        )?;
        let (ok, value): (bool, Value) = match &arguments {
            None => imp.raw_get::<mlua::Function>("run")?.call(function)?,
            Some((keys, argv)) => imp.raw_get::<mlua::Function>("run_function")?.call((function, keys, argv))?,
        };
        let resp3 = state.borrow().resp3;
        if ok {
            lua_to_reply(&value, out, resp3);
        } else {
            write_error(&value, out, &request.sha, busy.kill_requested());
        }
        Ok(())
    });
    lua.remove_hook();
    for name in ["setresp", "log", "acl_check_cmd"] {
        let _ = imp.raw_set(name, Value::Nil);
    }
    if let Ok(redis) = imp.raw_get::<mlua::Table>("redis") {
        let _ = redis.raw_set("call", Value::Nil);
        let _ = redis.raw_set("pcall", Value::Nil);
    }
    if let Err(e) = result {
        out.error(&format!("ERR Error running script {}, {e}", request.sha));
        let _ = lua.gc_collect();
    }
}

/// What a script is called with: nothing (EVAL: the KEYS and ARGV
/// globals are set here), or the keys and arguments tables (FCALL).
type Arguments = Option<(mlua::Table, mlua::Table)>;

/// The KEYS and ARGV globals.
fn set_arrays(lua: &Lua, request: &ScriptRequest) -> mlua::Result<Arguments> {
    let globals = lua.globals();
    globals.raw_set("KEYS", array(lua, &request.keys)?)?;
    globals.raw_set("ARGV", array(lua, &request.argv)?)?;
    Ok(None)
}

/// A function's two parameters: its keys and its arguments.
fn function_arguments(lua: &Lua, request: &ScriptRequest) -> mlua::Result<Arguments> {
    Ok(Some((array(lua, &request.keys)?, array(lua, &request.argv)?)))
}

fn array(lua: &Lua, items: &[Vec<u8>]) -> mlua::Result<mlua::Table> {
    let table = lua.create_table_with_capacity(items.len(), 0)?;
    for (i, item) in items.iter().enumerate() {
        table.raw_set(i + 1, lua.create_string(item)?)?;
    }
    Ok(table)
}

fn set_resp(state: &RefCell<CallState<'_, '_>>, resp3: bool) {
    let mut st = state.borrow_mut();
    st.resp3 = resp3;
    let version = if resp3 { ProtocolVersion::Resp3 } else { ProtocolVersion::Resp2 };
    st.ctx.out.set_version(version);
    st.ctx.client.protocol = version;
}

pub(crate) fn log(level: i64, message: &mlua::String) {
    let message = message.to_string_lossy();
    match level {
        0 | 1 => tracing::debug!(target: "cairn::script", "{message}"),
        2 => tracing::info!(target: "cairn::script", "{message}"),
        _ => tracing::warn!(target: "cairn::script", "{message}"),
    }
}

/// `redis.call` / `redis.pcall`: the reply as a Lua value, and whether it is an error.
fn redis_call(lua: &Lua, state: &RefCell<CallState<'_, '_>>, args: MultiValue) -> mlua::Result<(Value, bool)> {
    let argv = match arguments(args) {
        Ok(argv) => argv,
        Err(message) => return Ok((error_table(lua, message)?, true)),
    };
    let reply = call_command(&mut state.borrow_mut(), &argv);
    match reply {
        Err(message) => Ok((error_table(lua, message)?, true)),
        Ok(bytes) => {
            let failed = matches!(bytes.first(), Some(b'-' | b'!'));
            Ok((reply_to_lua(lua, &bytes)?, failed))
        }
    }
}

/// `redis.acl_check_cmd`: whether the script's user may run `argv`; None
/// for an unknown command.
fn acl_check_cmd(st: &CallState<'_, '_>, argv: &[Vec<u8>]) -> Option<bool> {
    let index = table::lookup(&argv[0])?;
    let spec = table::spec(index);
    let args: Vec<&[u8]> = argv.iter().map(Vec::as_slice).collect();
    let user = &st.ctx.client.user;
    Some(user.is_unrestricted() || crate::acl::check::check(&user.rules(), spec.name, &args).is_ok())
}

fn arguments(args: MultiValue) -> Result<Vec<Vec<u8>>, &'static str> {
    if args.is_empty() {
        return Err("ERR Please specify at least one argument for this redis lib call");
    }
    super::call_args::unpacked(args, |value| match value {
        Value::String(s) => Ok(s.as_bytes().to_vec()),
        // Redis writes numbers with %.17g, not Lua's lossy %.14g.
        Value::Integer(n) => Ok(super::lua_number::format_g(n as f64, 17).into_bytes()),
        Value::Number(n) => Ok(super::lua_number::format_g(n, 17).into_bytes()),
        _ => Err("ERR Lua redis lib command arguments must be strings or integers"),
    })
}

/// Runs one command for the script through the dispatcher; its reply bytes.
fn call_command(st: &mut CallState<'_, '_>, argv: &[Vec<u8>]) -> Result<Vec<u8>, &'static str> {
    let Some(index) = table::lookup(&argv[0]) else {
        return Err("ERR Unknown Redis command called from script");
    };
    let spec = table::spec(index);
    if super::not_allowed_from_scripts(index)
        && (super::never_from_scripts(spec)
            || !st.ctx.server.runtime.disable_deny_scripts.load(std::sync::atomic::Ordering::Relaxed))
    {
        return Err("ERR This Redis command is not allowed from script");
    }
    if !spec.arity_ok(argv.len()) {
        return Err("ERR Wrong number of args calling Redis command from script");
    }
    if st.oom_at_start && !st.wrote && crate::maxmemory::denyoom(index) {
        return Err("OOM command not allowed when used memory > 'maxmemory'.");
    }
    if spec.flags & table::WRITE != 0 || table::may_replicate(index) {
        if st.read_only {
            return Err("ERR Write commands are not allowed from read-only scripts.");
        }
        if st.ctx.server.runtime.lacks_good_replicas() {
            return Err(crate::commands::NOREPLICAS);
        }
        st.busy.note_write();
        st.wrote = true;
    }
    let args: Vec<&[u8]> = argv.iter().map(Vec::as_slice).collect();
    dispatch(st.ctx, &args);
    let buffer = st.ctx.out.buffer();
    let bytes = buffer.clone();
    buffer.clear();
    Ok(bytes)
}

fn error_table(lua: &Lua, message: &str) -> mlua::Result<Value> {
    let table = lua.create_table_with_capacity(0, 1)?;
    table.raw_set("err", message)?;
    Ok(Value::Table(table))
}

/// A failed script's reply, as Redis 7.0 words it:
/// `<err> script: <sha>, on @user_script:<line>.`
fn write_error(value: &Value, out: &mut ReplyWriter<'_>, sha: &str, killed: bool) {
    let Value::Table(t) = value else {
        if killed {
            out.error(&format!("ERR {KILLED} script: {sha}"));
            return;
        }
        let text = match value {
            Value::String(s) => s.to_string_lossy(),
            _ => "execution failure".to_string(),
        };
        out.error(&format!("ERR Error running script {sha}, {}", truncate(&text, 100)));
        return;
    };
    let mut message = match t.raw_get::<Value>("err") {
        Ok(Value::String(s)) => s.to_string_lossy(),
        _ => "ERR unknown error".to_string(),
    };
    if killed {
        message = format!("ERR {KILLED}");
    }
    let message = message.strip_prefix('-').unwrap_or(&message).to_string();
    let source = t.raw_get::<Option<String>>("source").ok().flatten();
    let line = t.raw_get::<Option<i64>>("line").ok().flatten();
    match (source, line) {
        (Some(source), Some(line)) => out.error(&format!("{message} script: {sha}, on {source}:{line}.")),
        _ => out.error(&message),
    }
}

fn truncate(text: &str, max: usize) -> &str {
    match text.char_indices().nth(max) {
        Some((i, _)) => &text[..i],
        None => text,
    }
}

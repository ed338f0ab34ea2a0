//! Running one script: every shard held (so it runs atomically and the
//! commands it calls re-enter their locks), a script client whose commands
//! go through the same [`dispatch`] as a connection's, and its writes logged
//! as one transaction record.

use std::cell::RefCell;
use std::sync::Arc;
use std::time::{Duration, Instant};

use cairn_protocol::{ProtocolVersion, ReplyWriter};
use mlua::{ffi, HookTriggers, Lua, Value, VmState};

use super::busy::{Busy, Running, RunningFunction, KILLED};
use super::callbacks::{CallState, Published};
use super::convert::lua_to_reply;
use super::key_scope::KeyScope;
use super::library::Library;
use super::lua_env::{with_env, Engine, LuaEnv};
use crate::blocking::BlockState;
use crate::client::{Client, ClientHandle};
use crate::commands::Ctx;
use crate::server::Server;
use crate::stats::WorkerStats;

/// Lua instructions between two checks of SCRIPT KILL (as Redis's hook).
const HOOK_EVERY_INSTRUCTIONS: u32 = 100_000;
/// The same for a script on a worker, which also checks its deadline.
const DEADLINE_CHECK_INSTRUCTIONS: u32 = 10_000;
/// The error that stops a script abandoned on a worker (never seen by a client).
const ABANDONED: &str = "Script abandoned on the worker to run on the script thread";

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
    /// How long the script's runs take (whether it may run on a worker).
    pub speed: Arc<super::speed::RunSpeed>,
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

impl Caller {
    /// The caller a client's script runs for.
    pub fn of(client: &Client) -> Caller {
        Caller { handle: client.handle.clone(), db: client.db, protocol: client.protocol }
    }
}

/// A script a connection's command left to run, and where its reply goes:
/// the offset in the connection's output where the command's reply would
/// have been written.
#[derive(Debug)]
pub struct PendingScript {
    pub at: usize,
    pub request: ScriptRequest,
    /// The command statistics slot of the command that called it.
    pub stat: usize,
}

/// A script's reply and what its writes need.
#[derive(Debug, Default)]
pub struct Outcome {
    pub reply: Vec<u8>,
    /// LSN of its log record (0: none); the `sync` tier waits for it.
    pub last_lsn: u64,
    /// Its writes ran but could not be logged: the caller must close.
    pub log_failed: bool,
    /// Whether it was stopped on a worker before writing anything (then it
    /// changed nothing, its reply is empty, and it must run again).
    pub stopped: Stopped,
    /// The reply is an error: its code, and whether it was counted in the
    /// error statistics already (an error a command inside replied).
    pub error: Option<(cairn_protocol::ErrorCode, bool)>,
}

impl Outcome {
    /// Answers the command that ran the script on this thread: the reply
    /// joins the batch's, the `sync` tier waits for the script's record, and
    /// a record that could not be logged closes the connection after it;
    /// an error reply counts as the dispatcher counts errors.
    pub fn answer(self, ctx: &mut Ctx<'_>) {
        ctx.client.last_lsn = ctx.client.last_lsn.max(self.last_lsn);
        if self.log_failed {
            ctx.client.close_after_reply = true;
        }
        ctx.out.buffer().extend_from_slice(&self.reply);
        if let Some((code, counted)) = self.error {
            ctx.out.note_error(code, counted);
        }
    }

    /// For a reply put in place after its command was dispatched (a script
    /// that ran on the script thread): the error statistics and the failed
    /// calls of command statistics slot `stat`, as the dispatcher counts them.
    pub fn count_error(&self, stats: &WorkerStats, stat: usize) {
        if let Some((code, counted)) = &self.error {
            if !counted {
                stats.record_error(code.as_str());
            }
            stats.per_command[stat].failed.add(1);
        }
    }
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
/// Alone, it waits for the workers (but its own, on a worker) to leave their
/// batches (see [`super::quiesce`]).
pub fn execute(
    server: &Server,
    stats: &WorkerStats,
    caller: &Caller,
    request: &ScriptRequest,
    within: Within<'_>,
) -> Outcome {
    let (alone, parent_txn) = match within {
        Within::Alone => (true, None),
        Within::Exec(parent_txn) => (false, parent_txn),
    };
    let exclusive = Exclusive::take(server, alone);
    let outcome = run_held(server, stats, caller, request, parent_txn, None, Hold::Everything);
    drop(exclusive);
    after_scripts(server, stats);
    outcome
}

/// Runs a script on the worker that received it, which holds the keyspace
/// already ([`Exclusive`], kept across a batch's scripts by
/// `scripting::on_worker`): abandoned ([`Outcome::abandoned`]) if it is
/// still running at `deadline` and has not written.
pub fn execute_on_worker(
    server: &Server,
    stats: &WorkerStats,
    caller: &Caller,
    request: &ScriptRequest,
    _held: &Exclusive<'_>,
    deadline: Instant,
) -> Outcome {
    run_held(server, stats, caller, request, None, Some(deadline), Hold::Everything)
}

/// Runs a short script that keeps to its declared keys on the worker that
/// received it, holding only those keys' shards (see
/// [`super::key_scope`]): abandoned if it is still running at `deadline`
/// and has not written ([`Outcome::abandoned`]), or if it reaches outside
/// those keys before writing ([`Stopped::LeftScope`]).
pub fn execute_keyed(
    server: &Server,
    stats: &WorkerStats,
    caller: &Caller,
    request: &ScriptRequest,
    deadline: Instant,
) -> Outcome {
    run_held(server, stats, caller, request, None, Some(deadline), Hold::DeclaredKeys)
}

/// What a run holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Hold {
    /// Every shard, held by the caller (the run watches whether it keeps to its keys).
    Everything,
    /// Its declared keys' shards, which the run takes itself.
    DeclaredKeys,
}

/// How a run on a worker ended early, before it wrote anything.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub enum Stopped {
    #[default]
    No,
    /// At its deadline: it runs again on the script thread, and the script
    /// is long from now on.
    AtDeadline,
    /// Outside its declared keys in a keyed run: it runs again holding every
    /// shard, and the script is not keyed from now on.
    LeftScope,
}

thread_local! {
    /// The busy state keyed runs report to: they run beside other scripts,
    /// and are short, so SCRIPT KILL and BUSY replies concern only the
    /// script that holds every shard.
    static KEYED_RUNS_BUSY: Arc<Busy> = Arc::new(Busy::default());
}

/// Runs scripts one after the other under one exclusive hold of the
/// keyspace (the script runner's round, see [`super::runner`]); their
/// outcomes in the same order.
pub fn execute_round(server: &Server, scripts: &[(&WorkerStats, &Caller, &ScriptRequest)]) -> Vec<Outcome> {
    let Some(&(first_stats, ..)) = scripts.first() else { return Vec::new() };
    let exclusive = Exclusive::take(server, true);
    let outcomes = scripts
        .iter()
        .map(|&(stats, caller, request)| run_held(server, stats, caller, request, None, None, Hold::Everything))
        .collect();
    drop(exclusive);
    after_scripts(server, first_stats);
    outcomes
}

/// What a script needs to run alone: every shard held and, unless it runs
/// inside EXEC (which did this already), no worker inside a batch (but the
/// one taking it, see [`super::quiesce`]). Whoever drops it calls
/// [`after_scripts`].
pub struct Exclusive<'s> {
    // Dropped in this order: the shards, then the announcement.
    _held: cairn_engine::keyspace::HeldShards<'s>,
    _announced: Option<super::quiesce::Announced<'s>>,
}

impl<'s> Exclusive<'s> {
    pub fn take(server: &'s Server, announce: bool) -> Exclusive<'s> {
        let quiesce = &server.scripting.quiesce;
        let announced = announce.then(|| quiesce.announce());
        if announced.is_some() {
            quiesce.wait_for_workers();
        }
        Exclusive { _held: server.keyspace.hold_all_shards(), _announced: announced }
    }
}

/// Once the shards are released: the clients waiting for the script look
/// again, and blocked clients its pushes served are answered.
pub fn after_scripts(server: &Server, stats: &WorkerStats) {
    server.scripting.busy.notify_changed();
    server.blocking.serve_ready(server, stats);
}

/// Runs one script while its caller holds the keyspace ([`Exclusive`]), or
/// holding its declared keys' shards itself.
fn run_held(
    server: &Server,
    stats: &WorkerStats,
    caller: &Caller,
    request: &ScriptRequest,
    parent_txn: Option<&mut TxnLog>,
    deadline: Option<Instant>,
    hold: Hold,
) -> Outcome {
    let scripting = &server.scripting;
    let (mut scope, busy, running) = match hold {
        Hold::Everything => {
            let function = request
                .function
                .as_ref()
                .map(|f| RunningFunction { name: request.sha.clone(), command: f.command.clone() });
            let running = Running::start(&scripting.busy, function);
            (KeyScope::observing(&server.keyspace, &request.keys), scripting.busy.clone(), Some(running))
        }
        Hold::DeclaredKeys => {
            let scope = KeyScope::holding(&server.keyspace, &request.keys);
            (scope, KEYED_RUNS_BUSY.with(Arc::clone), None)
        }
    };
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
        outcome.stopped = run_lua(&mut ctx, request, &mut out, Bounds { busy, scope: &mut scope, deadline });
        outcome.error = out.take_error();
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
    // After the log: another write to these keys is logged after this one.
    let stayed = scope.stayed();
    drop(scope);
    if !stayed {
        request.speed.record_keys(false);
    } else if outcome.stopped != Stopped::AtDeadline {
        request.speed.record_keys(true);
    }
    if outcome.stopped == Stopped::AtDeadline {
        request.speed.mark_long();
    }
    if outcome.stopped != Stopped::No {
        outcome.reply.clear();
    }
    outcome
}

/// What bounds a run: the busy state its hook reads (SCRIPT KILL), the
/// shards it may touch, and its deadline on a worker.
struct Bounds<'r, 'k> {
    busy: Arc<Busy>,
    scope: &'r mut KeyScope<'k>,
    deadline: Option<Instant>,
}

/// Compiles (or finds) the script and runs it, writing its reply to `out`;
/// whether it was stopped early (see [`execute_on_worker`], [`execute_keyed`]).
fn run_lua(ctx: &mut Ctx<'_>, request: &ScriptRequest, out: &mut ReplyWriter<'_>, bounds: Bounds<'_, '_>) -> Stopped {
    let scripting = &ctx.server.scripting;
    let generation = scripting.cache.generation();
    let engine = if request.function.is_some() { Engine::Functions } else { Engine::Eval };
    let result = with_env(engine, generation, |env| {
        let stopped = call_script(env, ctx, request, out, bounds);
        env.gc_pace.script_ran(&env.lua);
        stopped
    });
    super::lua_env::report_memory(engine, scripting.memory(engine));
    result.unwrap_or_else(|e| {
        out.error(&format!("ERR Error running script {}, {e}", request.sha));
        Stopped::No
    })
}

fn call_script(
    env: &mut LuaEnv,
    ctx: &mut Ctx<'_>,
    request: &ScriptRequest,
    out: &mut ReplyWriter<'_>,
    bounds: Bounds<'_, '_>,
) -> Stopped {
    let Bounds { busy, scope, deadline } = bounds;
    let function = match &request.function {
        None => env.function(&request.sha, &request.body),
        Some(target) => env.library_function(target.generation, &target.library, &target.key),
    };
    let function = match function {
        Ok(f) => f,
        Err(message) => {
            out.error(&message);
            return Stopped::No;
        }
    };
    let lua = &env.lua;
    let arguments =
        if request.function.is_some() { function_arguments(lua, request) } else { set_arrays(lua, request) };
    let arguments = match arguments {
        Ok(arguments) => arguments,
        Err(e) => {
            out.error(&format!("ERR {e}"));
            return Stopped::No;
        }
    };
    let hook_busy = busy.clone();
    // A keyed run reports to a busy state of its own, which SHUTDOWN's kill
    // does not reach: it looks at the shutdown itself.
    let shutdown = ctx.server.shutdown.clone();
    let every = if deadline.is_some() { DEADLINE_CHECK_INSTRUCTIONS } else { HOOK_EVERY_INSTRUCTIONS };
    lua.set_hook(HookTriggers::new().every_nth_instruction(every), move |lua, _| {
        if hook_busy.kill_requested() || shutdown.is_triggered() {
            return stop(lua, KILLED);
        }
        if deadline.is_some_and(|deadline| Instant::now() >= deadline) && super::callbacks::abandon_unless_written() {
            return stop(lua, ABANDONED);
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
        stopped: Stopped::No,
        scope,
    });
    let budget = Duration::from_micros(state.borrow().ctx.server.config.script_inline_us);
    let result = {
        let _published = Published::new(&state);
        // Timed without the interpreter's creation and the compilation.
        let started = Instant::now();
        let called: mlua::Result<(bool, Value)> = match &arguments {
            None => env.run.call(function),
            Some((keys, argv)) => match env.run_function() {
                Some(run_function) => run_function.call((function, keys, argv)),
                None => Err(mlua::Error::runtime("the functions API is not loaded")),
            },
        };
        request.speed.record(started.elapsed(), budget);
        called.map(|(ok, value)| {
            if ok {
                lua_to_reply(&value, out, state.borrow().resp3, &env.fields);
            } else {
                write_error(&value, out, &request.sha, busy.kill_requested());
            }
        })
    };
    lua.remove_hook();
    if let Err(e) = result {
        out.error(&format!("ERR Error running script {}, {e}", request.sha));
        let _ = lua.gc_collect();
    }
    let stopped = state.borrow().stopped;
    stopped
}

/// Stops the running script with `message`: every line from now on fails
/// (as Redis's hook), so that a script's pcall cannot swallow the stop and
/// carry on.
fn stop(lua: &Lua, message: &'static str) -> mlua::Result<VmState> {
    lua.set_hook(HookTriggers::new().every_line(), move |_, _| Err(mlua::Error::runtime(message)));
    Err(mlua::Error::runtime(message))
}

/// What a script is called with: nothing (EVAL: the KEYS and ARGV
/// globals are set here), or the keys and arguments tables (FCALL).
type Arguments = Option<(mlua::Table, mlua::Table)>;

/// The KEYS and ARGV globals.
fn set_arrays(lua: &Lua, request: &ScriptRequest) -> mlua::Result<Arguments> {
    // SAFETY: pushes a key and a table, which lua_rawset pops into the
    // globals, twice: the stack is left as found. Memory errors are caught
    // by exec_raw's protected call.
    unsafe {
        lua.exec_raw::<()>((), |state| {
            for (name, items) in [(c"KEYS", &request.keys), (c"ARGV", &request.argv)] {
                ffi::lua_pushstring(state, name.as_ptr());
                super::convert::push_strings(state, items);
                ffi::lua_rawset(state, ffi::LUA_GLOBALSINDEX);
            }
        })?;
    }
    Ok(None)
}

/// A function's two parameters: its keys and its arguments.
fn function_arguments(lua: &Lua, request: &ScriptRequest) -> mlua::Result<Arguments> {
    // SAFETY: pushes the two tables exec_raw returns. Memory errors are
    // caught by its protected call.
    let (keys, argv) = unsafe {
        lua.exec_raw::<(mlua::Table, mlua::Table)>((), |state| {
            super::convert::push_strings(state, &request.keys);
            super::convert::push_strings(state, &request.argv);
        })?
    };
    Ok(Some((keys, argv)))
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
    let text = match (source, line) {
        (Some(source), Some(line)) => format!("{message} script: {sha}, on {source}:{line}."),
        _ => message,
    };
    out.error(&text);
    if !killed && super::convert::counted_where_it_arose(t) {
        out.note_error(cairn_protocol::ErrorCode::of(&text), true);
    }
}

fn truncate(text: &str, max: usize) -> &str {
    match text.char_indices().nth(max) {
        Some((i, _)) => &text[..i],
        None => text,
    }
}

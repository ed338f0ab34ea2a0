//! The Rust functions a script calls: `redis.call`, `redis.pcall`, and the
//! prelude's `impl.setresp`, `impl.acl_check_cmd` and `impl.log`.
//!
//! They are created once per interpreter ([`install`]), not per run: a
//! function created per run is a Lua closure and a userdata with a
//! finalizer, and their allocation and collection cost more than a short
//! script itself. They reach the running script's state through a
//! thread-local that [`Published`] sets for the duration of the run; called
//! at any other time they fail.

use std::cell::{Cell, RefCell};
use std::marker::PhantomData;

use cairn_protocol::ProtocolVersion;
use mlua::{Lua, MultiValue, Table, Value};

use super::busy::Busy;
use super::convert::reply_to_lua;
use super::key_scope::{self, Admit, KeyScope};
use super::lua_env::CallError;
use super::run::Stopped;
use crate::commands::{dispatch, table, Ctx};

thread_local! {
    /// The `RefCell<CallState>` of the script running on this thread, or null.
    static CURRENT: Cell<*const ()> = const { Cell::new(std::ptr::null()) };
}

/// The running script's state, published to the callbacks until dropped.
pub(super) struct Published<'s> {
    previous: *const (),
    _state: PhantomData<&'s ()>,
}

impl<'s> Published<'s> {
    pub(super) fn new(state: &'s RefCell<CallState<'_, '_, '_>>) -> Published<'s> {
        let previous = CURRENT.replace(std::ptr::from_ref(state).cast());
        Published { previous, _state: PhantomData }
    }
}

impl Drop for Published<'_> {
    fn drop(&mut self) {
        CURRENT.set(self.previous);
    }
}

/// Runs `f` with the state of the script running on this thread.
fn with_current<R>(f: impl FnOnce(&RefCell<CallState<'_, '_, '_>>) -> R) -> mlua::Result<R> {
    let current = CURRENT.get();
    if current.is_null() {
        return Err(mlua::Error::runtime("this function is only available while a script runs"));
    }
    // SAFETY: `current` was set by `Published::new` from a reference that
    // outlives the `Published`, which puts the previous value back when it
    // is dropped; the thread-local is read on this thread only. The borrows
    // inside the state (the context, the Busy) outlive the reference too,
    // and `f` cannot keep any of them: it accepts every lifetime.
    let state = unsafe { &*current.cast::<RefCell<CallState<'_, '_, '_>>>() };
    Ok(f(state))
}

/// For the deadline of a script on a worker: abandons the running script
/// unless it has written; whether it did.
pub(super) fn abandon_unless_written() -> bool {
    with_current(|state| match state.try_borrow_mut() {
        Ok(mut st) if !st.wrote => {
            if st.stopped == Stopped::No {
                st.stopped = Stopped::AtDeadline;
            }
            true
        }
        _ => false,
    })
    .unwrap_or(false)
}

/// Creates the callbacks in a new interpreter: `redis.call` and `redis.pcall`
/// in the prelude's `impl.redis`, the others in `impl`.
pub(super) fn install(lua: &Lua, imp: &Table) -> mlua::Result<()> {
    let redis: Table = imp.raw_get("redis")?;
    let call =
        lua.create_function(|lua, args: MultiValue| match with_current(|state| redis_call(lua, state, args))?? {
            (Value::Table(reply), true) => {
                let message: String = reply.raw_get("err").unwrap_or_default();
                let counted = super::convert::counted_where_it_arose(&reply);
                Err(mlua::Error::external(CallError(message, counted)))
            }
            (reply, _) => Ok(reply),
        })?;
    redis.raw_set("call", super::call_args::packing(lua, call)?)?;
    let pcall =
        lua.create_function(|lua, args: MultiValue| Ok(with_current(|state| redis_call(lua, state, args))??.0))?;
    redis.raw_set("pcall", super::call_args::packing(lua, pcall)?)?;
    let setresp = lua.create_function(|_, version: i64| with_current(|state| set_resp(state, version == 3)))?;
    imp.raw_set("setresp", setresp)?;
    let acl_check = lua.create_function(|lua, args: MultiValue| match arguments(args) {
        Err(message) => error_table(lua, message),
        Ok(argv) => with_current(|state| acl_check_cmd(&state.borrow(), &argv).map_or(Value::Nil, Value::Boolean)),
    })?;
    imp.raw_set("acl_check_cmd", acl_check)?;
    let log = lua.create_function(|_, (level, message): (i64, mlua::String)| {
        self::log(level, &message);
        Ok(())
    })?;
    imp.raw_set("log", log)
}

/// What the functions a script calls share.
pub(super) struct CallState<'c, 'a, 'k> {
    pub ctx: &'c mut Ctx<'a>,
    /// The shards the run may touch (see `scripting::key_scope`).
    pub scope: &'c mut KeyScope<'k>,
    /// The script switched to RESP3 (`redis.setresp(3)`).
    pub resp3: bool,
    pub read_only: bool,
    pub busy: &'c Busy,
    /// Memory was above `maxmemory` when the script started.
    pub oom_at_start: bool,
    /// The script called a write command.
    pub wrote: bool,
    /// The script was abandoned on a worker (see `run::execute_on_worker`,
    /// `run::execute_keyed`): it may not call commands any more.
    pub stopped: Stopped,
}
fn set_resp(state: &RefCell<CallState<'_, '_, '_>>, resp3: bool) {
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
fn redis_call(lua: &Lua, state: &RefCell<CallState<'_, '_, '_>>, args: MultiValue) -> mlua::Result<(Value, bool)> {
    let argv = match arguments(args) {
        Ok(argv) => argv,
        Err(message) => return Ok((error_table(lua, message)?, true)),
    };
    let reply = call_command(&mut state.borrow_mut(), &argv);
    match reply {
        Err(message) => Ok((counted_error(error_table(lua, message)?)?, true)),
        Ok(bytes) => {
            let failed = matches!(bytes.first(), Some(b'-' | b'!'));
            let value = reply_to_lua(lua, &bytes)?;
            Ok((if failed { counted_error(value)? } else { value }, failed))
        }
    }
}

/// The field of an error table whose error was counted in the statistics
/// where it arose (Redis's name): the script's reply does not count it again.
pub(super) const COUNTED: &str = "ignore_error_stats_update";

fn counted_error(value: Value) -> mlua::Result<Value> {
    if let Value::Table(table) = &value {
        table.raw_set(COUNTED, true)?;
    }
    Ok(value)
}

/// `redis.acl_check_cmd`: whether the script's user may run `argv`; None
/// for an unknown command.
fn acl_check_cmd(st: &CallState<'_, '_, '_>, argv: &[Vec<u8>]) -> Option<bool> {
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
/// Runs one command for the script; a command refused before it runs
/// counts as a rejected call and an error reply, as in Redis's `scriptCall`.
fn call_command(st: &mut CallState<'_, '_, '_>, argv: &[Vec<u8>]) -> Result<Vec<u8>, &'static str> {
    checked_call(st, argv).map_err(|(index, message)| {
        // A run stopped on its worker runs again: its refusals are nobody's.
        if st.stopped == Stopped::No {
            st.ctx.stats.record_error(cairn_protocol::ErrorCode::of(message).as_str());
            if let Some(index) = index {
                let args: Vec<&[u8]> = argv.iter().map(Vec::as_slice).collect();
                st.ctx.stats.per_command[table::stat_of_request(index, &args)].rejected.add(1);
            }
        }
        message
    })
}

/// A command refused before it ran: its index, if known, and the error.
type Refused = (Option<usize>, &'static str);

fn checked_call(st: &mut CallState<'_, '_, '_>, argv: &[Vec<u8>]) -> Result<Vec<u8>, Refused> {
    if st.stopped != Stopped::No {
        return Err((None, "ERR Script abandoned on the worker"));
    }
    let Some(index) = table::lookup(&argv[0]) else {
        return Err((None, "ERR Unknown Redis command called from script"));
    };
    let refuse = |message: &'static str| Err((Some(index), message));
    let spec = table::spec(index);
    if super::not_allowed_from_scripts(index)
        && (super::never_from_scripts(spec)
            || !st.ctx.server.runtime.disable_deny_scripts.load(std::sync::atomic::Ordering::Relaxed))
    {
        return refuse("ERR This Redis command is not allowed from script");
    }
    if spec.flags & table::SUBCOMMANDS != 0
        && argv.len() > 1
        && super::subcommand_not_allowed_from_scripts(spec, &argv[1])
    {
        return refuse("ERR This Redis command is not allowed from script");
    }
    if !spec.arity_ok(argv.len()) {
        return refuse("ERR Wrong number of args calling Redis command from script");
    }
    if st.oom_at_start && !st.wrote && crate::maxmemory::denyoom(index) {
        return refuse("OOM command not allowed when used memory > 'maxmemory'.");
    }
    let args: Vec<&[u8]> = argv.iter().map(Vec::as_slice).collect();
    let needs = key_scope::needs(&st.ctx.server.keyspace, index, &args);
    match st.scope.admit(&needs, st.wrote) {
        Admit::Run => {}
        Admit::Abandon => {
            st.stopped = Stopped::LeftScope;
            return Err((Some(index), "ERR Script abandoned on the worker"));
        }
        Admit::Refuse => return refuse(key_scope::OUT_OF_SCOPE),
    }
    if spec.flags & table::WRITE != 0 || table::may_replicate(index) {
        if st.read_only {
            return refuse("ERR Write commands are not allowed from read-only scripts.");
        }
        if st.ctx.server.runtime.lacks_good_replicas() {
            return refuse(crate::commands::NOREPLICAS);
        }
        st.busy.note_write();
        st.wrote = true;
    }
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

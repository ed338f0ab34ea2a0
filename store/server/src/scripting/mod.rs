//! Lua scripting: EVAL, EVALSHA, EVAL_RO, EVALSHA_RO and SCRIPT, with Redis
//! 7.0's semantics (see docs/scripting.md).
//!
//! # Layout
//!
//! - [`cache`]: SHA1 → script body (SCRIPT LOAD, EVAL); [`shebang`]: the
//!   `#!lua flags=...` line a script may start with.
//! - [`library`]: function libraries (FUNCTION LOAD, FCALL), shared by all
//!   threads; [`library_load`]: running a library's code to register its
//!   functions; [`library_dump`]: FUNCTION DUMP / RESTORE's payload.
//! - [`busy`]: the running script's state: BUSY replies, SCRIPT KILL.
//! - [`quiesce`]: keeping worker threads off the shard locks a script holds.
//! - [`offload`]: running a script (or a transaction or native frame that
//!   calls one) on a blocking thread, the client moved there and back.
//! - [`lua_env`]: the sandboxed Lua 5.1 interpreter of each thread, with the
//!   `redis` library of `prelude.lua`, precompiled once ([`prelude_chunk`],
//!   stripped by [`lua_bytecode`]); [`lua_bit`]: its `bit` library;
//!   [`lua_cjson`] (with [`lua_cjson_decode`]), [`lua_cmsgpack`],
//!   [`lua_struct`]: the cjson, cmsgpack and struct libraries, whose errors
//!   are raised as Lua strings ([`lua_lib`]); [`lua_number`]: C's `%.14g`
//!   and `strtod` as those libraries use them.
//! - [`convert`]: reply ↔ Lua value conversions; [`call_args`]: `redis.call`
//!   with thousands of arguments.
//! - [`lua_gc`]: Redis's collection step every 50 scripts;
//!   [`lua_memory`]: `used_memory_lua` (EVAL's interpreters) and
//!   `used_memory_vm_functions` (the functions'), each summed over threads;
//!   [`stale`]: releasing interpreters SCRIPT FLUSH left stale (and
//!   libraries a registry change did) without waiting for a script.
//! - [`run`]: running one script atomically (every shard held, or its
//!   declared keys' shards), its commands through the dispatcher, its writes
//!   logged as one record; [`callbacks`]: `redis.call` and the other Rust
//!   functions it calls; [`key_scope`]: the shards a keyed run holds, and
//!   the check of each command it calls against them.
//!
//! - [`runner`]: the server's script thread, which runs clients' scripts in
//!   rounds; [`on_worker`]: running a short script on the worker itself
//!   (keyed, or under one hold of the keyspace per batch); [`speed`]: which
//!   scripts are short, and which keep to their keys.
//!
//! Where a client's script runs: a script known to be short (its runs so far
//! finished within `--script-inline-us`) runs on the worker that received
//! it, as Redis runs every script on its one thread ([`on_worker`]), holding
//! only its declared keys' shards if its runs kept to them ([`key_scope`]); any
//! other goes to the script thread: the EVAL handler leaves a
//! [`run::PendingScript`] on the client, and the connection hands it to
//! [`offload::run_elsewhere`] while the worker keeps serving its other
//! clients, who wait for the script (or get -BUSY past
//! `busy-reply-threshold`). A transaction or a native frame that calls a
//! script runs on a blocking thread as a whole.

pub mod busy;
pub mod cache;
pub mod call_args;
pub mod callbacks;
pub mod convert;
pub mod gate;
pub mod key_scope;
pub mod library;
pub mod library_dump;
pub mod library_load;
pub mod lua_bit;
pub mod lua_bytecode;
pub mod lua_cjson;
pub mod lua_cjson_decode;
pub mod lua_cmsgpack;
pub mod lua_env;
pub mod lua_gc;
pub mod lua_lib;
pub mod lua_memory;
pub mod lua_number;
pub mod lua_struct;
pub mod offload;
pub mod on_worker;
pub mod prelude_chunk;
pub mod quiesce;
pub mod run;
pub mod runner;
pub mod shebang;
pub mod speed;
pub mod stale;

use std::sync::{Arc, OnceLock};

/// Stack of every thread that may run a script: the workers (short
/// scripts), the script thread and the blocking pool. The libraries' C-style
/// decoders recurse once per nesting level until Lua's own stack limit
/// stops them (`cmsgpack.unpack` of 5,000 nested arrays must fail with
/// Lua's "stack overflow" error, as in Redis), which takes more than the
/// default 2 MiB in some builds. Only the pages a thread touches are
/// committed.
pub const SCRIPT_THREAD_STACK_BYTES: usize = 16 << 20;

use crate::client::Client;
use crate::commands::table;

/// The server's scripting state.
#[derive(Debug)]
pub struct Scripting {
    pub cache: cache::ScriptCache,
    /// Function libraries (shared with persistence, which snapshots them).
    pub libraries: Arc<library::Libraries>,
    pub busy: Arc<busy::Busy>,
    /// Scripts pending, and which workers are inside a batch of commands.
    pub quiesce: quiesce::Quiesce,
    /// used_memory_lua (used_memory_vm_eval): the bytes of every EVAL
    /// interpreter, summed.
    pub lua_memory: lua_memory::LuaMemory,
    /// used_memory_vm_functions: the bytes of every functions interpreter.
    pub functions_memory: lua_memory::LuaMemory,
    /// The thread that runs clients' scripts.
    pub runner: runner::Runner,
    /// Held by the worker running a short script itself (see [`on_worker`]).
    pub on_worker: parking_lot::Mutex<()>,
    pub where_ran: speed::WhereScriptsRan,
}

impl Scripting {
    pub fn new(workers: usize, libraries: Arc<library::Libraries>) -> Scripting {
        Scripting {
            cache: cache::ScriptCache::default(),
            libraries,
            busy: Arc::default(),
            quiesce: quiesce::Quiesce::new(workers),
            lua_memory: lua_memory::LuaMemory::default(),
            functions_memory: lua_memory::LuaMemory::default(),
            runner: runner::Runner::default(),
            on_worker: parking_lot::Mutex::new(()),
            where_ran: speed::WhereScriptsRan::default(),
        }
    }

    /// The client's worker starts a batch of commands (nothing is marked when
    /// the client runs off its worker, see [`offload`]).
    pub fn enter_batch(&self, client: &Client) -> quiesce::Executing<'_> {
        self.quiesce.enter(if client.off_worker {
            usize::MAX
        } else {
            client.handle.worker.load(std::sync::atomic::Ordering::Relaxed)
        })
    }

    /// SCRIPT FLUSH or a library change: every thread drops what became
    /// stale in its interpreter (workers on their next housekeeping tick,
    /// the script thread now, this thread at once; see [`stale`]).
    pub fn release_stale(&self) {
        let current = stale::Generations::of(self);
        self.runner.release_stale(current);
        stale::release(current);
    }

    /// The figure the interpreters of `engine` report to.
    pub fn memory(&self, engine: lua_env::Engine) -> &lua_memory::LuaMemory {
        match engine {
            lua_env::Engine::Eval => &self.lua_memory,
            lua_env::Engine::Functions => &self.functions_memory,
        }
    }

    /// Whether a script is announced or running (checked before each command).
    #[inline]
    pub fn script_pending(&self) -> bool {
        self.quiesce.script_pending()
    }

    /// Waits until no script is pending, or the running one is past `busy-reply-threshold`.
    pub async fn wait(&self, threshold_ms: &std::sync::atomic::AtomicU64) {
        self.busy.wait(&self.quiesce, threshold_ms).await;
    }
}

/// Whether command `index` may not be called from a script (Redis's
/// `noscript` flag: EVAL, MULTI, WATCH, SUBSCRIBE, SCRIPT ...).
/// Commands a script may never call, even with `DEBUG
/// SET-DISABLE-DENY-SCRIPTS 1`: scripts, transactions, subscriptions,
/// MONITOR and the connection's own state (they would nest or break the
/// script's client).
pub fn never_from_scripts(spec: &table::CommandSpec) -> bool {
    spec.runs_script()
        || matches!(
            spec.name,
            "script"
                | "function"
                | "multi"
                | "exec"
                | "discard"
                | "watch"
                | "unwatch"
                | "monitor"
                | "subscribe"
                | "psubscribe"
                | "ssubscribe"
                | "unsubscribe"
                | "punsubscribe"
                | "sunsubscribe"
                | "reset"
                | "quit"
                | "hello"
                | "auth"
        )
}

/// Whether subcommand `sub` of container `spec` is flagged `noscript` in
/// Redis's table (CLUSTER RESET, CONFIG SET, ...).
pub fn subcommand_not_allowed_from_scripts(spec: &table::CommandSpec, sub: &[u8]) -> bool {
    let name = format!("{}|{}", spec.name, String::from_utf8_lossy(sub).to_ascii_lowercase());
    crate::commands::meta::has_flag(&name, "noscript")
}

pub fn not_allowed_from_scripts(index: usize) -> bool {
    static FLAGS: OnceLock<Vec<bool>> = OnceLock::new();
    FLAGS
        .get_or_init(|| {
            let noscript = table::redis_flagged("noscript");
            let names = table::all().iter().map(|spec| matches!(spec.name, "script" | "function"));
            noscript.iter().zip(names).map(|(&flagged, named)| flagged || named).collect()
        })
        .get(index)
        .copied()
        .unwrap_or(true)
}

//! Lua scripting: EVAL, EVALSHA, EVAL_RO, EVALSHA_RO and SCRIPT, with Redis
//! 7.0's semantics (see docs/scripting.md).
//!
//! # Layout
//!
//! - [`cache`]: SHA1 → script body (SCRIPT LOAD, EVAL).
//! - [`busy`]: the running script's state: BUSY replies, SCRIPT KILL.
//! - [`lua_env`]: the sandboxed Lua 5.1 interpreter of each thread, with the
//!   `redis` library of `prelude.lua`.
//! - [`convert`]: reply ↔ Lua value conversions.
//! - [`run`]: running one script atomically (every shard held), its
//!   commands through the dispatcher, its writes logged as one record.
//!
//! A connection does not run a script on its worker's event loop: the EVAL
//! handler leaves a [`run::ScriptRequest`] on the client, and the connection
//! runs it on a blocking thread ([`run_elsewhere`]) while the worker keeps
//! serving its other clients, who wait for the script (or get -BUSY past
//! `busy-reply-threshold`). Inside EXEC a script runs inline.

pub mod busy;
pub mod cache;
pub mod convert;
pub mod gate;
pub mod lua_env;
pub mod run;

use std::sync::{Arc, OnceLock};

use crate::client::Client;
use crate::commands::table;
use crate::server::Server;
use crate::stats::WorkerStats;

/// The server's scripting state.
#[derive(Debug, Default)]
pub struct Scripting {
    pub cache: cache::ScriptCache,
    pub busy: Arc<busy::Busy>,
    /// Bytes the interpreter that ran the last script used (used_memory_lua).
    lua_bytes: std::sync::atomic::AtomicUsize,
}

impl Scripting {
    pub fn lua_bytes(&self) -> usize {
        self.lua_bytes.load(std::sync::atomic::Ordering::Relaxed)
    }

    pub fn set_lua_bytes(&self, bytes: usize) {
        self.lua_bytes.store(bytes, std::sync::atomic::Ordering::Relaxed);
    }
}

/// Whether command `index` may not be called from a script (Redis's
/// `noscript` flag: EVAL, MULTI, WATCH, SUBSCRIBE, SCRIPT ...).
pub fn not_allowed_from_scripts(index: usize) -> bool {
    static FLAGS: OnceLock<Vec<bool>> = OnceLock::new();
    FLAGS
        .get_or_init(|| {
            let meta: serde_json::Value =
                serde_json::from_str(include_str!("../commands/redis_meta.json")).unwrap_or_default();
            table::all()
                .iter()
                .map(|spec| {
                    let flags = &meta[spec.name][0][2];
                    let list = flags.get("~+").or_else(|| flags.get("~")).and_then(|f| f.as_array());
                    let noscript = list.is_some_and(|l| l.iter().any(|v| v.as_str() == Some("noscript")));
                    noscript || matches!(spec.name, "script" | "function")
                })
                .collect()
        })
        .get(index)
        .copied()
        .unwrap_or(true)
}

/// Runs a client's script on a blocking thread, so that the worker's event
/// loop keeps serving other connections; returns its outcome.
pub async fn run_elsewhere(
    server: &Arc<Server>,
    stats: &Arc<WorkerStats>,
    client: &Client,
    request: run::ScriptRequest,
) -> run::Outcome {
    let caller = run::Caller { handle: client.handle.clone(), db: client.db, protocol: client.protocol };
    let (server, stats) = (server.clone(), stats.clone());
    let task = tokio::task::spawn_blocking(move || run::execute(&server, &stats, &caller, &request, None));
    match task.await {
        Ok(outcome) => outcome,
        Err(e) => {
            tracing::error!(error = %e, "a script's thread failed");
            let mut reply = Vec::new();
            cairn_protocol::ReplyWriter::new(&mut reply, client.protocol)
                .error("ERR Error running script: the script's thread failed");
            run::Outcome { reply, ..run::Outcome::default() }
        }
    }
}

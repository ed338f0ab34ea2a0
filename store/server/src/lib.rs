//! The `cairn` server: configuration, per-core workers, listeners, the
//! connection loop and the command table, over the engine's keyspace.
//!
//! # Layout
//!
//! - [`config`]: flags, `CAIRN_*` environment variables and the TOML file,
//!   resolved into [`Config`]; [`config_params`]: what CONFIG GET/SET see;
//!   [`startup_params`]: CONFIG parameters set at start (`--param`, `[params]`);
//!   [`config_reload`]: the file's `[params]` applied again when it changes
//!   (checked periodically, and on SIGHUP);
//!   [`termination_message`]: where a fatal error is also written (`--termination-message-path`);
//!   [`periodic`]: a check repeated on the admin thread (the file watchers).
//! - [`cpus`]: CPU lists and the affinity mask (one worker per allowed CPU);
//!   [`rebalance`]: moving connections between workers as the load needs;
//!   [`cpu_quota`]: the cgroup's CPU limit (spinning is off under one).
//! - [`listener`]: SO_REUSEPORT listeners, one per worker;
//! - [`rebind`]: moving them at runtime (CONFIG SET port, tls-port, bind).
//! - [`worker`]: a pinned thread with a single-threaded tokio event loop that
//!   accepts connections and runs active expiry ([`expiry`]) for its share
//!   of the shards; [`busy_poll`]: how it polls briefly before sleeping;
//!   [`worker_activity`]: which workers are mid-batch (the syncer waits for them).
//! - [`connection`]: one client: read a batch, execute it, one write;
//!   `admission`: maxclients and the client registry, for both protocols.
//! - [`native`]: the native binary protocol's connections (same workers,
//!   same commands, same WAL as RESP); [`tls`]: RESP over TLS (`--tls-port`).
//! - [`commands`]: the command table, the dispatcher, one file per family.
//! - [`client`]: per-connection state and the registry CLIENT LIST reads;
//!   [`acl`]: ACL users (ACL SETUSER, AUTH user pass) and the NOPERM check.
//! - [`blocking`]: clients blocked in BLPOP and friends, and how they are served;
//!   [`blocked_stats`]: what their commands count in the statistics, and when.
//! - [`pubsub`]: channel and pattern subscribers, and delivery across workers;
//!   [`notify`]: keyspace notifications published through it; [`monitor`]:
//!   MONITOR's feed of every command run, delivered the same way; [`slowlog`]:
//!   SLOWLOG's record of slow commands; [`redact`]: the credentials both hide;
//!   [`hex`]: lowercase hex text (script SHA1s, ACL password hashes).
//! - [`latency`]: the latency monitor's events (LATENCY LATEST/HISTORY);
//!   [`latency_report`]: its GRAPH and DOCTOR texts; [`latency_stats`]: the
//!   per-command latency histograms (LATENCY HISTOGRAM, INFO latencystats).
//! - [`maxmemory`]: `-OOM` for `denyoom` commands and eviction above `maxmemory`
//!   (sampled LRU/LFU/TTL/random, as Redis); [`used_memory`]: the counting
//!   allocator behind INFO `used_memory` and the limit; [`allocator`]:
//!   jemalloc underneath it and its figures (INFO `allocator_*`, MEMORY
//!   PURGE and MALLOC-STATS);
//!   [`lazyfree`]: big values freed on a background thread (UNLINK, FLUSH ASYNC).
//! - [`migrate`]: MIGRATE (its network part off the workers) and its cached
//!   connections to target instances.
//! - [`rdb_file`]: whole RDB files: `--import-rdb` at start, and the
//!   rdb-only SYNC of `redis-cli --rdb`.
//! - [`server`]: the state all workers share; [`stats`]: per-worker counters.
//! - [`watch`]: WATCH bookkeeping (who watches which key); [`pause`]: CLIENT
//!   PAUSE, which holds writes (or everything) until it ends.
//! - [`tracking`]: client-side caching (CLIENT TRACKING): who may cache which
//!   key, and invalidations delivered across workers; [`modified`]: what a
//!   modified key signals (WATCHers and tracking clients).
//! - [`shutdown`]: the signal that stops every worker.
//! - [`persistence`]: durability tiers, logging every write, durable acks,
//!   snapshots and recovery (over the engine's `durability` module).
//! - [`scripting`]: Lua scripts (EVAL, SCRIPT) and Redis 7 functions
//!   (FUNCTION, FCALL): the interpreter, the script cache, the function
//!   libraries, busy scripts and SCRIPT/FUNCTION KILL.
//! - [`admin`]: the HTTP admin server (axum, own thread); [`metrics`]: the
//!   Prometheus metrics it serves; [`health`]: readiness; [`logging`]: the
//!   tracing setup whose filter the admin API can change.
//!
//! Tests start a server in-process with [`start`] on an ephemeral port; the
//! binary calls [`run`].

pub mod acl;
pub mod admin;
mod admission;
pub mod allocator;
pub mod blocked_stats;
pub mod blocking;
pub mod busy_poll;
pub mod client;
pub mod client_buffers;
pub mod client_memory;
pub mod commands;
pub mod config;
pub mod config_params;
pub mod config_reload;
pub mod connection;
pub mod cpu_quota;
pub mod cpus;
pub mod expiry;
pub mod health;
pub mod hex;
pub mod latency;
pub mod latency_report;
pub mod latency_stats;
pub mod lazyfree;
pub mod listener;
pub mod logging;
pub mod maxmemory;
pub mod metrics;
pub mod migrate;
pub mod modified;
pub mod monitor;
pub mod native;
pub mod notify;
pub mod pause;
pub mod periodic;
pub mod persistence;
pub mod pubsub;
pub mod rdb_file;
pub mod rebalance;
pub mod rebind;
pub mod redact;
pub mod scripting;
pub mod server;
pub mod shutdown;
pub mod slowlog;
pub mod startup_params;
pub mod stats;
pub mod termination_message;
pub mod tls;
pub mod tracking;
pub mod used_memory;
pub mod watch;
pub mod worker;
pub mod worker_activity;

use std::net::SocketAddr;
use std::sync::Arc;

pub use config::{Args, Config};
pub use shutdown::Shutdown;

use crate::server::Server;

/// Why the server could not start.
#[derive(Debug, thiserror::Error)]
pub enum StartError {
    #[error("invalid CPU configuration: {0}")]
    Cpus(#[from] cpus::CpuListError),
    #[error("cannot listen on {addr}: {source}")]
    Listen { addr: String, source: std::io::Error },
    #[error("cannot create data directory {path}: {source}")]
    DataDir { path: String, source: std::io::Error },
    /// Another server or an embedded database holds `DATA_DIR/LOCK`.
    #[error(transparent)]
    Locked(#[from] persistence::lock::LockError),
    #[error("cannot listen on {addr} (TLS port): {source}")]
    TlsListen { addr: String, source: std::io::Error },
    #[error("TLS: {0}")]
    Tls(#[from] tls::TlsError),
    #[error("cannot listen on {addr} (native port): {source}")]
    NativeListen { addr: String, source: std::io::Error },
    #[error("cannot listen on {addr} (admin port): {source}")]
    AdminListen { addr: String, source: std::io::Error },
    #[error("invalid parameter set at start: {0}")]
    Params(String),
    #[error("cannot start worker thread: {0}")]
    Thread(std::io::Error),
    #[error("recovery failed: {0}")]
    Recovery(#[from] persistence::recover::RecoverError),
    #[error("import failed: {0}")]
    Import(#[from] rdb_file::import::ImportError),
}

/// A started server.
#[derive(Debug)]
pub struct RunningServer {
    /// The address of the plaintext RESP listener (with the actual port),
    /// or of the TLS one when plaintext RESP is off (`--port off`), as
    /// bound at start (CONFIG SET port/bind may move it: `Server::rebind`).
    pub addr: SocketAddr,
    /// The address of the RESP over TLS listener, if enabled.
    pub tls_addr: Option<SocketAddr>,
    /// The address the native protocol listener is bound to, if enabled.
    pub native_addr: Option<SocketAddr>,
    /// The address the HTTP admin server is bound to (with the actual port).
    pub admin_addr: SocketAddr,
    pub server: Arc<Server>,
    threads: Vec<std::thread::JoinHandle<()>>,
    /// Held until the log is closed (dropped at the end of `join`).
    _lock: persistence::lock::DirLock,
}

impl RunningServer {
    /// Triggers shutdown and waits for every worker to stop.
    pub fn stop(self) {
        self.server.health.set_shutting_down();
        self.server.shutdown.trigger();
        // A running script (even one that wrote) stops at its next hook.
        self.server.scripting.busy.force_kill();
        self.join();
    }

    /// Rereads the config file now and applies its `[params]` changes (what
    /// SIGHUP does; the periodic check, `--config-reload-interval`, does
    /// the same when the contents change).
    pub fn reload_config(&self) -> config_reload::Outcome {
        self.server.config_reload.reload(&self.server)
    }

    /// Waits until the workers stop (after the shutdown signal), then
    /// syncs and closes the log (or saves a snapshot in the `none` tier).
    pub fn join(self) {
        for thread in self.threads {
            if thread.join().is_err() {
                tracing::error!("a worker thread panicked");
            }
        }
        self.server.persistence.close(&self.server.keyspace, true);
    }
}

/// Starts the server's workers and returns once they are listening.
pub fn start(mut config: Config, shutdown: Shutdown) -> Result<RunningServer, StartError> {
    let plan = cpus::plan_workers(config.threads, config.cpus.as_deref())?;
    std::fs::create_dir_all(&config.data_dir)
        .map_err(|source| StartError::DataDir { path: config.data_dir.display().to_string(), source })?;
    let lock = persistence::lock::DirLock::acquire(&config.data_dir)?;
    // Certificates first: a bad file fails the start before any port is taken.
    let tls_context = config.tls.clone().map(tls::TlsContext::load).transpose()?;
    let (resp_addr, resp_listeners) =
        bind_optional(&config.bind, config.port, plan.len(), |addr, source| StartError::Listen { addr, source })?;
    let (tls_addr, tls_listeners) =
        bind_optional(&config.bind, config.tls.as_ref().map(|t| t.port), plan.len(), |addr, source| {
            StartError::TlsListen { addr, source }
        })?;
    let (native_addr, native_listeners) =
        bind_optional(&config.bind, config.native_port, plan.len(), |addr, source| StartError::NativeListen {
            addr,
            source,
        })?;
    let Some(addr) = resp_addr.or(tls_addr) else {
        return Err(StartError::Listen {
            addr: config.bind.clone(),
            source: std::io::Error::new(
                std::io::ErrorKind::InvalidInput,
                "no RESP port: --port and --tls-port are off",
            ),
        });
    };
    let (admin_addr, admin_listener) = admin::bind(&config.admin_bind, config.admin_port).map_err(|source| {
        StartError::AdminListen { addr: format!("{}:{}", config.admin_bind, config.admin_port), source }
    })?;
    // Calibrate the latency clock now, not on the first command; and read
    // Redis's command metadata (a JSON parse) before clients come.
    let _ = quanta::Instant::now();
    commands::table::warm_up();
    // Resolved once, here: the workers read the configured value.
    let quota = cpu_quota::cpu_quota();
    config.resolve_spin_budgets(quota);
    let addresses = rebind::Addresses {
        bind: config.bind.clone(),
        resp: resp_addr.map(|a| a.port()),
        tls: tls_addr.map(|a| a.port()),
        native: native_addr.map(|a| a.port()),
    };
    let server = Arc::new(
        Server::new(config, resp_addr.map_or(0, |a| a.port()), plan.len(), shutdown)
            .with_tls(tls_context)
            .listening_on(addresses),
    );
    if let Some(tls_addr) = tls_addr {
        server.runtime.set_all(&[("tls-port", tls_addr.port().to_string())]);
    }
    startup_params::apply(&server).map_err(StartError::Params)?;
    let mut threads = Vec::with_capacity(plan.len() + 2);
    let mut resp_listeners = resp_listeners.into_iter();
    let mut tls_listeners = tls_listeners.into_iter();
    let mut native_listeners = native_listeners.into_iter();
    for (index, cpu) in plan.iter().enumerate() {
        let listeners = worker::Listeners {
            resp: resp_listeners.next(),
            tls: tls_listeners.next(),
            native: native_listeners.next(),
        };
        match worker::spawn(server.clone(), index, *cpu, listeners) {
            Ok(t) => threads.push(t),
            Err(e) => {
                server.shutdown.trigger();
                return Err(StartError::Thread(e));
            }
        }
    }
    // The admin port answers during recovery: /healthz 200, /readyz 503.
    match admin::spawn(server.clone(), admin_listener) {
        Ok(t) => threads.push(t),
        Err(e) => {
            server.shutdown.trigger();
            return Err(StartError::Thread(e));
        }
    }
    server.startup_memory.store(used_memory::used_memory(), std::sync::atomic::Ordering::Relaxed);
    let recovered = persistence::recover::recover(&server)
        .map_err(StartError::from)
        .and_then(|recovered| import_rdb(&server, &recovered).map(|()| recovered));
    let recovered = match recovered {
        Ok(r) => r,
        Err(e) => {
            server.shutdown.trigger();
            for t in threads {
                let _ = t.join();
            }
            return Err(e);
        }
    };
    server.persistence.loading.store(false, std::sync::atomic::Ordering::Release);
    // What recovery replayed is on disk already (Redis starts at 0 changes).
    let snap = &server.persistence.snapshot;
    snap.changes.saved(snap.changes.total());
    server.health.set_recovering(false);
    tracing::info!(
        snapshot_lsn = recovered.snapshot_lsn,
        snapshot_records = recovered.snapshot_records,
        log_records = recovered.log.records_replayed,
        replay_errors = recovered.replay_errors,
        seconds = recovered.seconds,
        durability = %server.persistence.tier(),
        "recovery finished"
    );
    match persistence::snapshot::spawn_scheduler(server.clone()) {
        Ok(t) => threads.push(t),
        Err(e) => return Err(StartError::Thread(e)),
    }
    tracing::info!(
        %addr,
        tls_addr = ?tls_addr,
        %admin_addr,
        native_addr = ?native_addr,
        workers = plan.len(),
        cpus = ?plan,
        data_dir = %server.config.data_dir.display(),
        "Ready to accept connections"
    );
    Ok(RunningServer { addr, tls_addr, native_addr, admin_addr, server, threads, _lock: lock })
}

/// `--import-rdb`: loads the file into the recovered (empty) server, still
/// in the loading phase.
fn import_rdb(server: &Server, recovered: &persistence::recover::Recovered) -> Result<(), StartError> {
    let Some(path) = &server.config.import_rdb else { return Ok(()) };
    let imported = rdb_file::import::run(server, path, recovered)?;
    tracing::info!(
        file = %path.display(),
        header = %imported.header,
        keys = %imported.per_db(),
        expired_skipped = imported.expired_skipped,
        empty_skipped = imported.empty_skipped,
        functions = imported.functions,
        seconds = imported.seconds,
        "RDB file imported"
    );
    Ok(())
}

/// Binds one listener per worker on `port` of `bind`, unless the port is
/// off (`None`).
fn bind_optional(
    bind: &str,
    port: Option<u16>,
    workers: usize,
    error: impl Fn(String, std::io::Error) -> StartError,
) -> Result<(Option<SocketAddr>, Vec<std::net::TcpListener>), StartError> {
    let Some(port) = port else {
        return Ok((None, Vec::new()));
    };
    let wanted = listener::resolve(bind, port).map_err(|e| error(format!("{bind}:{port}"), e))?;
    let (addr, listeners) = listener::bind_all(wanted, workers).map_err(|e| error(format!("{bind}:{port}"), e))?;
    Ok((Some(addr), listeners))
}

/// Runs the server until `shutdown` is triggered.
pub fn run(config: Config, shutdown: Shutdown) -> Result<(), StartError> {
    start(config, shutdown)?.join();
    Ok(())
}

//! State shared by all workers: the keyspace, the configuration, the clients
//! and the statistics.

use std::sync::Arc;
use std::time::Instant;

use cairn_engine::Keyspace;
use parking_lot::Mutex;

use crate::blocking::Blocking;
use crate::client::ClientRegistry;
use crate::config::Config;
use crate::config_params::RuntimeConfig;
use crate::shutdown::Shutdown;
use crate::stats::{Totals, WorkerStats};
use crate::watch::WatchRegistry;

/// The server's shared state.
#[derive(Debug)]
pub struct Server {
    pub config: Config,
    pub runtime: RuntimeConfig,
    pub keyspace: Keyspace,
    pub clients: Arc<ClientRegistry>,
    /// Client-side caching (CLIENT TRACKING).
    pub tracking: Arc<crate::tracking::Tracking>,
    pub watches: WatchRegistry,
    /// Clients blocked in BLPOP and friends.
    pub blocking: Blocking,
    /// Pub/sub channel and pattern subscribers.
    pub pubsub: Arc<crate::pubsub::PubSub>,
    /// Connections in MONITOR mode.
    pub monitors: crate::monitor::Monitors,
    /// CLIENT PAUSE.
    pub pause: crate::pause::ClientPause,
    /// The background freer of big values.
    pub lazyfree: crate::lazyfree::LazyFree,
    pub workers: Vec<Arc<WorkerStats>>,
    /// Connections moving between workers ([`crate::rebalance`]).
    pub rebalance: crate::rebalance::Rebalance,
    pub shutdown: Shutdown,
    pub started: Instant,
    pub started_ms: u64,
    /// 40 hex characters, new at every start (INFO run_id).
    pub run_id: String,
    /// Where the listeners are, and moving them (CONFIG SET port/tls-port/bind).
    pub rebind: crate::rebind::Rebind,
    /// Counters as they were at the last CONFIG RESETSTAT.
    stats_baseline: Mutex<Totals>,
    /// The per-command latency histograms' baseline (LATENCY HISTOGRAM, INFO latencystats).
    pub command_latency: crate::latency_stats::CommandLatency,
    /// Unix seconds of the last successful save (LASTSAVE).
    pub last_save_secs: std::sync::atomic::AtomicU64,
    /// Used memory when the server was ready to load its data
    /// (`MEMORY STATS` `startup.allocated`).
    pub startup_memory: std::sync::atomic::AtomicU64,
    /// Keys evicted by the `maxmemory` policy (INFO `evicted_keys`).
    pub evicted_keys: std::sync::atomic::AtomicU64,
    /// The best eviction candidates seen so far, kept between evictions.
    pub eviction_pool: parking_lot::Mutex<crate::maxmemory::pool::Pool>,
    ops_sampler: Mutex<OpsSampler>,
    /// Durability: the tier, the log, snapshots, recovery state.
    pub persistence: crate::persistence::Persistence,
    /// Readiness (/readyz): recovering, shutting down, write failures.
    pub health: crate::health::Health,
    /// Replacements for what /metrics and the admin API read from `persistence`.
    pub hooks: crate::admin::hooks::Hooks,
    /// Lua scripting: the script cache and the running script's state.
    pub scripting: crate::scripting::Scripting,
    /// The TLS configuration in use, when `--tls-port` is set.
    pub tls: Option<crate::tls::TlsContext>,
    /// The config file's reloader (its `[params]` apply without a restart).
    pub config_reload: crate::config_reload::ConfigReload,
    /// MIGRATE's cached connections to target instances.
    pub migrate_sockets: crate::migrate::sockets::SocketCache,
}

/// instantaneous_ops_per_sec: the mean rate over the last 16 samples, as Redis.
#[derive(Debug, Default)]
struct OpsSampler {
    last_commands: u64,
    last_ms: u64,
    rates: [u64; 16],
    next: usize,
}

impl Server {
    pub fn new(config: Config, port: u16, num_workers: usize, shutdown: Shutdown) -> Server {
        let persistence = crate::persistence::Persistence::new(&config);
        Server::with_persistence(config, port, num_workers, shutdown, persistence)
    }

    /// A server over the given persistence (tests pass a simulated disk).
    pub fn with_persistence(
        config: Config,
        port: u16,
        num_workers: usize,
        shutdown: Shutdown,
        persistence: crate::persistence::Persistence,
    ) -> Server {
        let num_commands = crate::commands::table::stat_count();
        let started_ms = cairn_engine::clock::now_ms();
        let runtime = RuntimeConfig::new(&config);
        // `CONFIG GET port` reports the port clients reach (with `--port 0`
        // the system picked it; Redis's 0 would mean no TCP listener).
        runtime.set_all(&[("port", port.to_string())]);
        let keyspace = Keyspace::with_events(config.databases, config.shards, runtime.key_events.clone());
        let pubsub = Arc::new(crate::pubsub::PubSub::default());
        crate::notify::install(keyspace.events(), pubsub.clone());
        let pause = crate::pause::ClientPause::new(runtime.key_events.clone());
        let libraries = persistence.libraries.clone();
        let clients = Arc::new(ClientRegistry::default());
        let tracking = crate::tracking::Tracking::new(clients.clone(), runtime.key_events.clone());
        Server {
            runtime,
            keyspace,
            clients,
            tracking,
            watches: WatchRegistry::default(),
            blocking: Blocking::default(),
            pubsub,
            monitors: crate::monitor::Monitors::default(),
            pause,
            lazyfree: crate::lazyfree::LazyFree::default(),
            workers: (0..num_workers).map(|_| Arc::new(WorkerStats::new(num_commands))).collect(),
            rebalance: crate::rebalance::Rebalance::new(num_workers, config.rebalance),
            shutdown,
            started: Instant::now(),
            started_ms,
            run_id: new_run_id(),
            rebind: crate::rebind::Rebind::new(
                crate::rebind::Addresses {
                    bind: config.bind.clone(),
                    resp: (port != 0).then_some(port),
                    ..Default::default()
                },
                num_workers,
            ),
            stats_baseline: Mutex::new(Totals::default()),
            command_latency: crate::latency_stats::CommandLatency::default(),
            last_save_secs: std::sync::atomic::AtomicU64::new(started_ms / 1000),
            startup_memory: std::sync::atomic::AtomicU64::new(0),
            evicted_keys: std::sync::atomic::AtomicU64::new(0),
            eviction_pool: parking_lot::Mutex::default(),
            ops_sampler: Mutex::new(OpsSampler { last_ms: started_ms, ..OpsSampler::default() }),
            persistence,
            health: crate::health::Health::new(),
            hooks: crate::admin::hooks::Hooks::default(),
            scripting: crate::scripting::Scripting::new(num_workers, libraries),
            tls: None,
            config_reload: crate::config_reload::ConfigReload::new(&config),
            migrate_sockets: crate::migrate::sockets::SocketCache::new(config.migrate_socket_idle),
            config,
        }
    }

    /// The server with `tls` as its TLS configuration (loaded at start).
    pub fn with_tls(mut self, tls: Option<crate::tls::TlsContext>) -> Server {
        self.tls = tls;
        self
    }

    /// The server listening on `addresses` (bound at start).
    pub fn listening_on(mut self, addresses: crate::rebind::Addresses) -> Server {
        self.rebind = crate::rebind::Rebind::new(addresses, self.workers.len());
        self
    }

    /// The plaintext RESP port clients reach now (0: off), INFO `tcp_port`.
    pub fn tcp_port(&self) -> u16 {
        self.rebind.addresses().resp.unwrap_or(0)
    }

    /// Statistics since start or the last CONFIG RESETSTAT.
    pub fn totals(&self) -> Totals {
        self.raw_totals().since(&self.stats_baseline.lock())
    }

    /// Statistics since start: the workers' counters and the keyspace's
    /// count of expired keys (lazy and active expiry alike, as Redis counts).
    pub fn raw_totals(&self) -> Totals {
        let mut totals = Totals::collect(&self.workers, crate::commands::table::stat_count());
        totals.expired_keys = self.keyspace.events().expired();
        totals.evicted_keys = self.evicted_keys.load(std::sync::atomic::Ordering::Relaxed);
        totals.lazyfreed_objects = self.lazyfree.freed();
        totals
    }

    /// CONFIG RESETSTAT.
    pub fn reset_stats(&self) {
        *self.stats_baseline.lock() = self.raw_totals();
        self.command_latency.reset(&self.workers);
    }

    /// Applies validated CONFIG SET changes (see `config_params::validate_changes`),
    /// and what some of them change beyond the value: `latency-tracking`
    /// freezes or resumes the command latency histograms; `appendonly`,
    /// `appendfsync` and `durability` change the durability tier first (if
    /// that fails, nothing is applied); `port`, `tls-port` and `bind` move
    /// the listeners (bound first, put in use last).
    pub fn set_config(&self, updates: &[(&'static str, String)]) -> Result<(), crate::config_params::SetError> {
        use crate::config_params::{durability_change, durability_values, SetError, DURABILITY_PARAMS};
        let p = &self.persistence;
        let mut updates = updates.to_vec();
        let _moving = updates.iter().any(|(n, _)| crate::rebind::PARAMS.contains(n)).then(|| self.rebind.lock());
        // Built before anything changes; put in use after the tier switch.
        let tls = self.prepare_tls(&updates)?;
        let listeners = self.rebind.prepare(&updates, self.tls.is_some())?;
        if let Some((logging, fsync)) = durability_change(&updates, p.tier(), p.fsync_tier()) {
            let name = updates.iter().find(|(n, _)| DURABILITY_PARAMS.contains(n)).map_or("appendonly", |(n, _)| *n);
            crate::persistence::tier_switch::apply(self, logging, fsync)
                .map_err(|reason| SetError::Refused { name: name.to_string(), reason })?;
            // The three names' values follow the tier, whichever was set.
            updates.retain(|(n, _)| !DURABILITY_PARAMS.contains(n));
            updates.extend(durability_values(p.tier(), p.fsync_tier()));
        }
        if let (Some(context), Some(prepared)) = (&self.tls, tls) {
            context.install(prepared);
            tracing::info!("TLS configuration reloaded by CONFIG SET");
        }
        if let Some(listeners) = listeners {
            self.rebind.install(listeners);
        }
        let tracking_was = self.runtime.get("latency-tracking");
        self.runtime.set_all(&updates);
        let tracking_is = self.runtime.get("latency-tracking");
        if tracking_is != tracking_was {
            self.command_latency.set_tracking(&self.workers, tracking_is.as_deref() == Some("yes"));
        }
        self.enforce_new_limits(&updates);
        Ok(())
    }

    /// As Redis, lower limits take effect at once, however they were set
    /// (CONFIG SET, `PUT /v1/config`, the config file's reload): the
    /// tracking table drops keys, and above `maxmemory` keys are evicted
    /// (under an evicting policy).
    fn enforce_new_limits(&self, updates: &[(&'static str, String)]) {
        if updates.iter().any(|(name, _)| *name == "tracking-table-max-keys") {
            let max_keys = self.runtime.tracking_table_max_keys.load(std::sync::atomic::Ordering::Relaxed);
            self.tracking.enforce_limit(max_keys);
        }
        if updates.iter().any(|(name, _)| *name == "maxmemory") {
            crate::maxmemory::make_room(self, cairn_engine::clock::now_ms());
        }
    }

    /// The TLS configuration the `tls-*` parameters among `updates` ask
    /// for, read and built (`None` when they set none); refused when TLS is
    /// off or the files do not load.
    fn prepare_tls(
        &self,
        updates: &[(&'static str, String)],
    ) -> Result<Option<crate::tls::context::Prepared>, crate::config_params::SetError> {
        use crate::config_params::SetError;
        let Some(name) = updates.iter().map(|(n, _)| *n).find(|n| crate::tls::config_set::PARAMS.contains(n)) else {
            return Ok(None);
        };
        let refused = |reason: String| SetError::Refused { name: name.to_string(), reason };
        let Some(context) = &self.tls else {
            // Setting the value in place is a no-op (Redis's CONFIG sanity
            // test sets every parameter to its own value); a change is refused.
            let unchanged = updates
                .iter()
                .filter(|(n, _)| crate::tls::config_set::PARAMS.contains(n))
                .all(|(n, v)| self.runtime.get(n).as_deref() == Some(v.as_str()));
            return match unchanged {
                true => Ok(None),
                false => Err(refused("TLS is off: start the server with --tls-port to use TLS files".into())),
            };
        };
        let Some(settings) = crate::tls::config_set::changed(&context.settings(), updates) else {
            return Ok(None);
        };
        let settings = settings.map_err(|why| refused(format!("Unable to update TLS configuration: {why}")))?;
        match crate::tls::TlsContext::prepare(settings) {
            Ok(prepared) => Ok(Some(prepared)),
            Err(e) => {
                context.count_failed_reload();
                tracing::warn!(error = %e, "CONFIG SET: the TLS configuration cannot be loaded; keeping the one in use");
                Err(refused(format!("Unable to update TLS configuration: {e}")))
            }
        }
    }

    /// Records one ops/s sample (called every 100 ms by worker 0).
    pub fn sample_ops(&self) {
        let commands = Totals::collect(&self.workers, crate::commands::table::stat_count()).commands;
        let now = cairn_engine::clock::now_ms();
        let mut s = self.ops_sampler.lock();
        let elapsed = now.saturating_sub(s.last_ms).max(1);
        let index = s.next % s.rates.len();
        s.rates[index] = commands.saturating_sub(s.last_commands) * 1000 / elapsed;
        s.next += 1;
        s.last_commands = commands;
        s.last_ms = now;
    }

    pub fn ops_per_sec(&self) -> u64 {
        let s = self.ops_sampler.lock();
        s.rates.iter().sum::<u64>() / s.rates.len() as u64
    }

    /// Whether new connections must authenticate.
    pub fn requires_auth(&self) -> bool {
        self.runtime.acl.requires_auth()
    }
}

fn new_run_id() -> String {
    use rand::Rng;
    let mut rng = rand::thread_rng();
    (0..40).map(|_| char::from(b"0123456789abcdef"[rng.gen_range(0..16)])).collect()
}

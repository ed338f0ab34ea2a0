//! A run's settings, resolved from the command line.

use std::time::Duration;

use crate::keys::KeyNamer;
use crate::stream::Io;
use crate::workload::{KeyPattern, OpMix, Shape};

/// When the measured phase ends.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stop {
    /// After this many measured requests across all connections.
    Requests(u64),
    /// After this long.
    Duration(Duration),
}

/// Everything a run needs besides the target.
#[derive(Debug, Clone)]
pub struct RunConfig {
    pub mix: OpMix,
    pub clients: u32,
    pub pipeline: u32,
    pub threads: usize,
    /// How connections wait for their sockets; resolved, so never [`Io::Auto`] after
    /// [`RunConfig::resolve_io`].
    pub io: Io,
    pub stop: Stop,
    pub warmup: Duration,
    pub keyspace: u64,
    pub key_pattern: KeyPattern,
    pub shape: Shape,
    pub think_time: Duration,
    pub seed: u64,
    pub namer: KeyNamer,
    /// Write every string key once before the warm-up (when the mix reads).
    pub prefill: bool,
    /// Read back every key at the end and compare.
    pub final_check: bool,
    /// Mismatch messages kept for the report (the count is always exact).
    pub max_reported_mismatches: usize,
}

impl RunConfig {
    /// Settles `io` for this run's connections and threads ([`Io::resolve`]).
    pub fn resolve_io(mut self) -> RunConfig {
        self.io = self.io.resolve(self.clients, self.threads);
        self
    }

    /// Keys owned by each connection: the key space divided among the connections, at least one.
    pub fn keys_per_conn(&self) -> u64 {
        (self.keyspace / u64::from(self.clients.max(1))).max(1)
    }
}

/// A run id for key prefixes: distinct across runs, processes and machines in practice.
pub fn fresh_prefix() -> String {
    let nanos = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map(|d| d.as_nanos()).unwrap_or(0);
    let mixed = (nanos as u64) ^ (u64::from(std::process::id()) << 40) ^ rand::random::<u64>();
    format!("cb{:x}", mixed & 0xffff_ffff_ffff)
}

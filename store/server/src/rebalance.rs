//! Moving connections between workers: a light load runs on one worker, a
//! heavy one spreads over all of them.
//!
//! A connection lives on the worker whose listener accepted it, and
//! `SO_REUSEPORT` spreads new connections over all workers by hash. That is
//! right when the load needs every CPU, and wrong when it does not: a
//! benchmark client on the same machine, with 8 connections at pipeline 1,
//! keeps both workers of a 2-CPU machine half busy, so each of them sleeps
//! and wakes once per request and one of them always shares its CPU with
//! the client (docs/benchmarks.md, "Co-located clients"). One worker serving
//! all of them is faster there.
//!
//! So worker 0 samples, every housekeeping tick, how busy each worker's
//! event loop was (the share of the tick it was not parked; spinning before
//! a park counts as idle) and how much CPU time the allowed CPUs left idle:
//!
//! - **consolidate**: when all workers together were busy less than
//!   [`LIGHT_PERMILLE`] of one CPU for [`SETTLE_TICKS`] ticks (or less than
//!   [`CONTENDED_LIGHT_PERMILLE`] while other processes keep the allowed
//!   CPUs busy), every other worker hands its connections to worker 0;
//! - **spread**: when a worker was busy more than [`HEAVY_PERMILLE`] for
//!   [`SETTLE_TICKS`] ticks while the allowed CPUs had at least
//!   [`SPARE_PERMILLE`] of a CPU idle, it hands half its connections to the
//!   least busy worker.
//!
//! A connection moves only between two batches, with nothing buffered in
//! either direction and no state tied to its thread (not subscribed,
//! monitoring or blocked): its socket leaves the worker's event loop, and
//! the connection carries on, with the same client, on the other worker
//! ([`Moving`], `connection::resume`, then `native::serve::carry_on` for a
//! native connection): RESP and native-protocol connections move alike.
//! `--rebalance off` keeps every connection where it was accepted.

use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::time::Instant;

use parking_lot::Mutex;
use tokio::sync::mpsc::{unbounded_channel, UnboundedReceiver, UnboundedSender};

use crate::client::Client;

/// All workers together busier than this (per mille of one CPU) is not light.
pub const LIGHT_PERMILLE: u32 = 800;
/// With the allowed CPUs taken (less than [`CONTENDED_SPARE_PERMILLE`]
/// idle) and other processes using at least [`OTHERS_PERMILLE`] of them,
/// workers together busier than this are still gathered: spread, they only
/// compete with those processes for the CPUs.
pub const CONTENDED_LIGHT_PERMILLE: u32 = 1300;
/// Less idle time than this (per mille of one CPU): the allowed CPUs are taken.
pub const CONTENDED_SPARE_PERMILLE: u32 = 150;
/// CPU time of other processes (per mille of one CPU) that makes them a
/// reason to gather.
pub const OTHERS_PERMILLE: u32 = 300;
/// A worker busier than this (per mille of its tick) may shed connections.
pub const HEAVY_PERMILLE: u32 = 850;
/// Idle CPU time the allowed CPUs must have for spreading to help.
pub const SPARE_PERMILLE: u32 = 500;
/// Ticks a condition must hold before connections move (and after a move).
pub const SETTLE_TICKS: u32 = 3;

/// No destination.
const NOWHERE: usize = usize::MAX;

/// A connection on its way to another worker.
pub struct Moving {
    pub stream: std::net::TcpStream,
    pub client: Box<Client>,
    pub protocol: Carried,
}

/// What a moving connection's protocol carries along besides its client.
pub enum Carried {
    /// A RESP connection: nothing (it moves with nothing buffered).
    Resp,
    /// A native-protocol connection: its session (handshake done, reusable buffers).
    Native(Box<crate::native::session::Session>),
}

/// One worker's share: its parked time, its connections, and the order to
/// move some of them.
#[derive(Debug, Default)]
struct Share {
    parked_ns: AtomicU64,
    connections: AtomicUsize,
    move_to: AtomicUsize,
    to_move: AtomicUsize,
}

/// The workers' shares and the channels connections move through.
pub struct Rebalance {
    enabled: bool,
    shares: Vec<Share>,
    inboxes: Vec<UnboundedSender<Moving>>,
    receivers: Mutex<Vec<Option<UnboundedReceiver<Moving>>>>,
    /// Connections moved since start (INFO stats `cairn_connections_moved`).
    pub moved: AtomicU64,
}

impl std::fmt::Debug for Rebalance {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Rebalance").field("enabled", &self.enabled).field("shares", &self.shares).finish()
    }
}

impl Rebalance {
    pub fn new(workers: usize, enabled: bool) -> Rebalance {
        let (inboxes, receivers): (Vec<_>, Vec<_>) = (0..workers).map(|_| unbounded_channel()).unzip();
        Rebalance {
            enabled: enabled && workers > 1,
            shares: (0..workers).map(|_| Share { move_to: AtomicUsize::new(NOWHERE), ..Share::default() }).collect(),
            inboxes,
            receivers: Mutex::new(receivers.into_iter().map(Some).collect()),
            moved: AtomicU64::new(0),
        }
    }

    /// Whether connections may move (`--rebalance on` and two workers or more).
    pub fn is_enabled(&self) -> bool {
        self.enabled
    }

    /// The channel connections moving to `worker` arrive on (taken once).
    pub fn take_inbox(&self, worker: usize) -> Option<UnboundedReceiver<Moving>> {
        self.receivers.lock().get_mut(worker).and_then(Option::take)
    }

    /// Adds a parked stretch of `worker`'s event loop.
    pub fn add_parked(&self, worker: usize, parked: std::time::Duration) {
        if let Some(share) = self.shares.get(worker) {
            share.parked_ns.fetch_add(parked.as_nanos() as u64, Ordering::Relaxed);
        }
    }

    /// A connection starts (or arrives) on `worker`.
    pub fn connection_started(&self, worker: usize) {
        if let Some(share) = self.shares.get(worker) {
            share.connections.fetch_add(1, Ordering::Relaxed);
        }
    }

    /// A connection ends on (or leaves) `worker`.
    pub fn connection_ended(&self, worker: usize) {
        if let Some(share) = self.shares.get(worker) {
            share.connections.fetch_sub(1, Ordering::Relaxed);
        }
    }

    /// Where an idle connection of `worker` should go, if anywhere: claims
    /// one of the moves ordered for this worker.
    pub fn claim_move(&self, worker: usize) -> Option<usize> {
        if !self.enabled {
            return None;
        }
        let share = self.shares.get(worker)?;
        let to = share.move_to.load(Ordering::Relaxed);
        if to == NOWHERE {
            return None;
        }
        let claimed = share.to_move.fetch_update(Ordering::AcqRel, Ordering::Relaxed, |n| n.checked_sub(1)).is_ok();
        if !claimed {
            share.move_to.store(NOWHERE, Ordering::Relaxed);
            return None;
        }
        Some(to)
    }

    /// Hands a connection to `worker`; gives it back if that worker is gone.
    pub fn send(&self, worker: usize, moving: Moving) -> Result<(), Moving> {
        match self.inboxes.get(worker) {
            Some(inbox) => inbox.send(moving).map_err(|e| e.0),
            None => Err(moving),
        }
        .inspect(|_| {
            self.moved.fetch_add(1, Ordering::Relaxed);
        })
    }

    fn order(&self, order: Order) {
        let share = &self.shares[order.from];
        share.to_move.store(order.count, Ordering::Relaxed);
        share.move_to.store(order.to, Ordering::Release);
    }

    /// Forgets the moves still ordered (a new decision replaces them).
    fn cancel_orders(&self) {
        for share in &self.shares {
            share.move_to.store(NOWHERE, Ordering::Relaxed);
            share.to_move.store(0, Ordering::Relaxed);
        }
    }

    fn snapshot(&self) -> (Vec<u64>, Vec<usize>) {
        let parked = self.shares.iter().map(|s| s.parked_ns.load(Ordering::Relaxed)).collect();
        let connections = self.shares.iter().map(|s| s.connections.load(Ordering::Relaxed)).collect();
        (parked, connections)
    }
}

/// Move `count` idle connections from worker `from` to worker `to`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Order {
    pub from: usize,
    pub to: usize,
    pub count: usize,
}

/// What one tick measured.
#[derive(Debug, Clone)]
pub struct Sample {
    /// Per worker, per mille of the tick its event loop was not parked.
    pub busy: Vec<u32>,
    pub connections: Vec<usize>,
    /// Idle time of the allowed CPUs over the tick, per mille of one CPU.
    pub spare: u32,
    /// The allowed CPUs' time over the tick, per mille of one CPU (1000
    /// per CPU).
    pub capacity: u32,
}

impl Sample {
    /// Whether the workers' load should gather on one worker: it fits
    /// there easily, or, spread, it only competes with other processes for
    /// CPUs they keep busy.
    fn light(&self) -> bool {
        let total: u32 = self.busy.iter().sum();
        if total < LIGHT_PERMILLE {
            return true;
        }
        let others = self.capacity.saturating_sub(self.spare).saturating_sub(total);
        total < CONTENDED_LIGHT_PERMILLE && self.spare < CONTENDED_SPARE_PERMILLE && others >= OTHERS_PERMILLE
    }
}

/// The decision, tick by tick: how long each condition has held.
#[derive(Debug, Default)]
pub struct Planner {
    light_ticks: u32,
    heavy_ticks: Vec<u32>,
    last: Option<(Instant, Vec<u64>, CpuTimes)>,
    /// The CPUs this process may run on, read at the first tick.
    allowed: Option<Vec<usize>>,
}

impl Planner {
    /// Samples the workers and the CPUs and gives the orders the sample
    /// calls for (worker 0's housekeeping calls it every tick).
    pub fn tick(&mut self, rebalance: &Rebalance) {
        if !rebalance.enabled {
            return;
        }
        let now = Instant::now();
        let (parked, connections) = rebalance.snapshot();
        let allowed = self.allowed.get_or_insert_with(crate::cpus::allowed_cpus);
        let cpus = CpuTimes::read(allowed);
        let Some((then, parked_then, cpus_then)) = self.last.replace((now, parked.clone(), cpus.clone())) else {
            return;
        };
        let wall_ns = now.duration_since(then).as_nanos().max(1) as u64;
        let busy = parked
            .iter()
            .zip(&parked_then)
            .map(|(p, q)| 1000u32.saturating_sub((p.saturating_sub(*q) * 1000 / wall_ns).min(1000) as u32))
            .collect();
        let spare = cpus.spare_permille(&cpus_then);
        let capacity = (cpus.cpus as u32).saturating_mul(1000);
        let orders = self.decide(&Sample { busy, connections, spare, capacity });
        if !orders.is_empty() {
            rebalance.cancel_orders();
        }
        for order in orders {
            tracing::debug!(?order, "moving connections between workers");
            rebalance.order(order);
        }
    }

    /// The orders a sample calls for, given the ticks before it.
    pub fn decide(&mut self, sample: &Sample) -> Vec<Order> {
        let workers = sample.busy.len();
        self.heavy_ticks.resize(workers, 0);
        if workers < 2 {
            return Vec::new();
        }
        self.light_ticks = if sample.light() { self.light_ticks + 1 } else { 0 };
        for (ticks, busy) in self.heavy_ticks.iter_mut().zip(&sample.busy) {
            *ticks = if *busy > HEAVY_PERMILLE { *ticks + 1 } else { 0 };
        }
        if self.light_ticks >= SETTLE_TICKS {
            let orders: Vec<Order> = (1..workers)
                .filter(|&w| sample.connections[w] > 0)
                .map(|w| Order { from: w, to: 0, count: sample.connections[w] })
                .collect();
            if !orders.is_empty() {
                self.settle();
            }
            return orders;
        }
        if sample.spare < SPARE_PERMILLE {
            return Vec::new();
        }
        let heavy = (0..workers).filter(|&w| self.heavy_ticks[w] >= SETTLE_TICKS && sample.connections[w] >= 2);
        let Some(from) = heavy.max_by_key(|&w| sample.busy[w]) else {
            return Vec::new();
        };
        let Some(to) = (0..workers).filter(|&w| w != from).min_by_key(|&w| sample.busy[w]) else {
            return Vec::new();
        };
        if sample.busy[to] > HEAVY_PERMILLE / 2 {
            return Vec::new();
        }
        self.settle();
        vec![Order { from, to, count: sample.connections[from] / 2 }]
    }

    fn settle(&mut self) {
        self.light_ticks = 0;
        self.heavy_ticks.iter_mut().for_each(|t| *t = 0);
    }
}

/// Busy and idle CPU time of the CPUs this process may run on, from
/// `/proc/stat` (jiffies); empty when it cannot be read.
#[derive(Debug, Clone, Default)]
struct CpuTimes {
    idle: u64,
    total: u64,
    cpus: u64,
}

impl CpuTimes {
    fn read(allowed: &[usize]) -> CpuTimes {
        let Ok(text) = std::fs::read_to_string("/proc/stat") else {
            return CpuTimes::default();
        };
        let mut times = CpuTimes::default();
        for line in text.lines() {
            let mut fields = line.split_ascii_whitespace();
            let Some(cpu) =
                fields.next().and_then(|name| name.strip_prefix("cpu")).and_then(|n| n.parse::<usize>().ok())
            else {
                continue;
            };
            if !allowed.contains(&cpu) {
                continue;
            }
            let values: Vec<u64> = fields.filter_map(|v| v.parse().ok()).collect();
            // user nice system idle iowait irq softirq steal ...
            times.idle += values.get(3).copied().unwrap_or(0) + values.get(4).copied().unwrap_or(0);
            times.total += values.iter().take(8).sum::<u64>();
            times.cpus += 1;
        }
        times
    }

    /// Idle time since `before`, per mille of one CPU's time.
    fn spare_permille(&self, before: &CpuTimes) -> u32 {
        let total = self.total.saturating_sub(before.total);
        if total == 0 || self.cpus == 0 {
            return 0;
        }
        let idle = self.idle.saturating_sub(before.idle);
        (idle * 1000 * self.cpus / total) as u32
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample(busy: &[u32], connections: &[usize], spare: u32) -> Sample {
        Sample { busy: busy.to_vec(), connections: connections.to_vec(), spare, capacity: 2000 }
    }

    #[test]
    fn a_busier_load_gathers_too_when_other_processes_take_the_cpus() {
        // Two workers 60% busy, a client on the same machine using the
        // rest: spread, they only compete with it.
        let mut planner = Planner::default();
        let contended = sample(&[600, 600], &[8, 8], 50);
        for _ in 1..SETTLE_TICKS {
            assert!(planner.decide(&contended).is_empty());
        }
        assert_eq!(planner.decide(&contended), vec![Order { from: 1, to: 0, count: 8 }]);
        // The same load with the CPUs to itself stays spread.
        let mut planner = Planner::default();
        let alone = sample(&[600, 600], &[8, 8], 700);
        for _ in 0..SETTLE_TICKS * 2 {
            assert!(planner.decide(&alone).is_empty());
        }
        // And a load that would not fit one worker stays spread whatever.
        let mut planner = Planner::default();
        let heavy = sample(&[900, 900], &[8, 8], 0);
        for _ in 0..SETTLE_TICKS * 2 {
            assert!(planner.decide(&heavy).is_empty());
        }
    }

    #[test]
    fn a_light_load_gathers_on_worker_zero_after_it_settles() {
        let mut planner = Planner::default();
        let light = sample(&[300, 300], &[4, 4], 1500);
        for _ in 1..SETTLE_TICKS {
            assert!(planner.decide(&light).is_empty(), "not before the load has settled");
        }
        assert_eq!(planner.decide(&light), vec![Order { from: 1, to: 0, count: 4 }]);
        assert!(planner.decide(&light).is_empty(), "after a move, it settles again");
    }

    #[test]
    fn a_busy_tick_resets_the_count() {
        let mut planner = Planner::default();
        for _ in 1..SETTLE_TICKS {
            planner.decide(&sample(&[200, 200], &[4, 4], 1500));
        }
        assert!(planner.decide(&sample(&[500, 400], &[4, 4], 1500)).is_empty());
        assert!(planner.decide(&sample(&[200, 200], &[4, 4], 1500)).is_empty());
    }

    #[test]
    fn a_heavy_worker_sheds_half_its_connections_when_a_cpu_is_spare() {
        let mut planner = Planner::default();
        let heavy = sample(&[950, 0], &[64, 0], 900);
        for _ in 1..SETTLE_TICKS {
            assert!(planner.decide(&heavy).is_empty());
        }
        assert_eq!(planner.decide(&heavy), vec![Order { from: 0, to: 1, count: 32 }]);
    }

    #[test]
    fn no_spreading_when_the_cpus_are_taken() {
        // A client on the same machine uses the other CPU: a second worker
        // would only compete with it.
        let mut planner = Planner::default();
        let heavy = sample(&[950, 0], &[64, 0], 100);
        for _ in 0..SETTLE_TICKS * 3 {
            assert!(planner.decide(&heavy).is_empty());
        }
    }

    #[test]
    fn one_worker_never_moves_anything() {
        let mut planner = Planner::default();
        for _ in 0..SETTLE_TICKS * 2 {
            assert!(planner.decide(&sample(&[10], &[3], 1000)).is_empty());
        }
    }

    #[test]
    fn claims_stop_at_the_ordered_count() {
        let rebalance = Rebalance::new(2, true);
        rebalance.order(Order { from: 1, to: 0, count: 2 });
        assert_eq!(rebalance.claim_move(1), Some(0));
        assert_eq!(rebalance.claim_move(1), Some(0));
        assert_eq!(rebalance.claim_move(1), None);
        assert_eq!(rebalance.claim_move(0), None);
        rebalance.order(Order { from: 1, to: 0, count: 5 });
        rebalance.cancel_orders();
        assert_eq!(rebalance.claim_move(1), None, "a new decision cancels what is left of the old");
        let off = Rebalance::new(2, false);
        off.order(Order { from: 1, to: 0, count: 2 });
        assert_eq!(off.claim_move(1), None, "--rebalance off");
    }

    #[test]
    fn cpu_times_read_the_allowed_cpus() {
        let times = CpuTimes::read(&crate::cpus::allowed_cpus());
        assert!(times.cpus >= 1 && times.total > 0, "{times:?}");
    }
}

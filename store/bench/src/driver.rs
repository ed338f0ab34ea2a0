//! One connection's life: prefill, warm-up, the measured phase, the final-state check. Every
//! reply is checked against the connection's [`Model`] of its own keys.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use tokio::sync::{watch, Barrier};

use crate::ack_log::{push_line, AckSink};
use crate::config::{RunConfig, Stop};
use crate::latencies::{SampleBuffer, SharedLatencies};
use crate::model::{Model, Pending};
use crate::target::{Connection, Target, TargetError};
use crate::workload::{KeyPattern, Op, Shape};

/// Requests per batch while prefilling and during the final-state check.
const CHECK_BATCH: usize = 256;

/// What every connection shares.
#[derive(Debug)]
pub struct Shared {
    pub config: RunConfig,
    /// Measured requests claimed so far (for [`Stop::Requests`]).
    pub claimed: AtomicU64,
    /// Replies received so far, all phases (for the progress bar).
    pub replies: AtomicU64,
    /// Connections ready to start (prefilled); the run releases them together.
    pub ready: Barrier,
    /// When the warm-up starts; set once every connection is ready.
    pub start: watch::Receiver<Option<Instant>>,
    /// Every connection's latencies.
    pub latencies: SharedLatencies,
}

/// What one connection measured and found.
#[derive(Debug, Default)]
pub struct Outcome {
    pub measured: u64,
    pub last_reply: Option<Instant>,
    pub mismatches: u64,
    pub messages: Vec<String>,
    pub final_checked: u64,
    pub acked_writes: u64,
}

impl Outcome {
    fn mismatch(&mut self, message: String, keep: usize) {
        self.mismatches += 1;
        if self.messages.len() < keep {
            self.messages.push(message);
        }
    }
}

/// A connection that failed with a transport error, with what it had checked before.
#[derive(Debug)]
pub struct Failed {
    pub error: TargetError,
    pub outcome: Outcome,
}

/// Runs connection `index` to the end.
pub async fn drive<T: Target>(
    target: Arc<T>,
    shared: Arc<Shared>,
    ack: Option<AckSink>,
    index: u32,
) -> Result<Outcome, Failed> {
    let mut outcome = Outcome::default();
    let mut conn = match target.connect().await {
        Ok(conn) => conn,
        Err(error) => {
            // Still take part in the start barrier, or the others would wait forever.
            shared.ready.wait().await;
            return Err(Failed { error, outcome });
        }
    };
    let mut state = Driver::new(&shared, ack, index);
    let prefilled = state.prefill(&mut conn, &mut outcome).await;
    shared.ready.wait().await;
    if let Err(error) = prefilled {
        return Err(Failed { error, outcome });
    }
    let mut start = shared.start.clone();
    let start = match start.wait_for(Option::is_some).await {
        Ok(at) => at.unwrap_or_else(Instant::now),
        Err(_) => Instant::now(),
    };
    if let Err(error) = state.load(&mut conn, &mut outcome, start).await {
        return Err(Failed { error, outcome });
    }
    if shared.config.final_check {
        if let Err(error) = state.final_check(&mut conn, &mut outcome).await {
            return Err(Failed { error, outcome });
        }
    }
    Ok(outcome)
}

struct Driver<'a> {
    shared: &'a Shared,
    ack: Option<AckSink>,
    model: Model,
    rng: StdRng,
    sequence: [u64; 5],
    pending: Vec<Pending>,
    acks: Vec<u8>,
    /// Latencies not yet moved into [`Shared::latencies`].
    samples: SampleBuffer,
}

impl Drop for Driver<'_> {
    /// Hands over the last samples however the connection ended.
    fn drop(&mut self) {
        self.samples.flush(&self.shared.latencies);
    }
}

impl<'a> Driver<'a> {
    fn new(shared: &'a Shared, ack: Option<AckSink>, index: u32) -> Driver<'a> {
        let config = &shared.config;
        Driver {
            shared,
            ack,
            model: Model::new(index, config.keys_per_conn()),
            rng: StdRng::seed_from_u64(config.seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) ^ u64::from(index)),
            sequence: [0; 5],
            pending: Vec::with_capacity(config.pipeline as usize),
            acks: Vec::new(),
            samples: shared.latencies.buffer(index),
        }
    }

    fn config(&self) -> &RunConfig {
        &self.shared.config
    }

    fn next_key(&mut self, op: Op) -> u64 {
        let keys = self.model.keys();
        match self.config().key_pattern {
            KeyPattern::Random => self.rng.gen_range(0..keys),
            KeyPattern::Sequential => {
                let slot = &mut self.sequence[op as usize];
                let k = *slot % keys;
                *slot += 1;
                k
            }
        }
    }

    /// Writes every string key once, so that GETs hit (not measured).
    async fn prefill<C: Connection>(&mut self, conn: &mut C, outcome: &mut Outcome) -> Result<(), TargetError> {
        if !(self.config().prefill && self.config().mix.contains(Op::Get)) {
            return Ok(());
        }
        let keys = self.model.keys();
        let mut k = 0;
        while k < keys {
            let end = (k + CHECK_BATCH as u64).min(keys);
            for key in k..end {
                let p = self.model.advance(Op::Set, key);
                self.pending.push(p);
            }
            self.queue_pending(conn);
            conn.flush().await?;
            self.check_batch(conn, outcome, None).await?;
            k = end;
        }
        Ok(())
    }

    /// Warm-up, then the measured phase, until the stop condition.
    async fn load<C: Connection>(
        &mut self,
        conn: &mut C,
        outcome: &mut Outcome,
        start: Instant,
    ) -> Result<(), TargetError> {
        let config = self.config();
        let measure_from = start + config.warmup;
        let stop = config.stop;
        let end = match stop {
            Stop::Duration(d) => Some(measure_from + d),
            Stop::Requests(_) => None,
        };
        let pipeline = u64::from(config.pipeline);
        let think = (config.shape == Shape::AgentShaped).then_some(config.think_time);
        loop {
            if let Some(think) = think {
                let nanos = think.as_nanos() as u64 * 2;
                if nanos > 0 {
                    tokio::time::sleep(Duration::from_nanos(self.rng.gen_range(0..=nanos))).await;
                }
            }
            let now = Instant::now();
            if end.is_some_and(|end| now >= end) {
                return Ok(());
            }
            let measuring = now >= measure_from;
            let batch = match stop {
                Stop::Requests(total) if measuring => {
                    let claimed = self.shared.claimed.fetch_add(pipeline, Ordering::Relaxed);
                    if claimed >= total {
                        return Ok(());
                    }
                    pipeline.min(total - claimed)
                }
                _ => pipeline,
            };
            self.issue_batch(conn, batch);
            let sent = Instant::now();
            conn.flush().await?;
            let recorded = self.check_batch(conn, outcome, measuring.then_some(sent)).await?;
            if measuring {
                outcome.measured += batch;
                outcome.last_reply = recorded;
            }
        }
    }

    /// Picks `batch` requests and advances the model by all of them, then queues them (see
    /// [`Model::advance`]); their expectations go to `self.pending`.
    fn issue_batch<C: Connection>(&mut self, conn: &mut C, batch: u64) {
        for _ in 0..batch {
            let op = self.shared.config.mix.pick(self.rng.gen());
            let k = self.next_key(op);
            let p = self.model.advance(op, k);
            self.pending.push(p);
        }
        self.queue_pending(conn);
    }

    /// Queues the requests of `self.pending` on `conn`.
    fn queue_pending<C: Connection>(&mut self, conn: &mut C) {
        for p in &self.pending {
            self.model.queue(conn, &self.shared.config.namer, p);
        }
    }

    /// Reads and checks the replies of `self.pending`; records latencies from `sent` if given.
    /// Returns when the last reply arrived.
    async fn check_batch<C: Connection>(
        &mut self,
        conn: &mut C,
        outcome: &mut Outcome,
        sent: Option<Instant>,
    ) -> Result<Option<Instant>, TargetError> {
        let keep = self.config().max_reported_mismatches;
        let mut last_arrival = None;
        let mut latencies = SameLatency::default();
        let pending = std::mem::take(&mut self.pending);
        for p in &pending {
            let reply = conn.read_reply().await?;
            if let (Some(sent), Some(op)) = (sent, p.op) {
                // The arrival of the read that brought the reply: one clock read per read.
                latencies.add(&mut self.samples, &self.shared.latencies, op, sent, conn.received_at());
                last_arrival = Some(conn.received_at());
            }
            match self.model.check(&self.shared.config.namer, p, &reply) {
                Ok(Some(ack)) => {
                    outcome.acked_writes += 1;
                    if self.ack.is_some() {
                        push_line(&mut self.acks, &ack);
                    }
                }
                Ok(None) => {}
                Err(message) => outcome.mismatch(message, keep),
            }
        }
        latencies.flush(&mut self.samples, &self.shared.latencies);
        self.shared.replies.fetch_add(pending.len() as u64, Ordering::Relaxed);
        self.pending = pending;
        self.pending.clear();
        if let Some(sink) = &self.ack {
            if !self.acks.is_empty() {
                sink.send(std::mem::take(&mut self.acks));
            }
        }
        // When the batch's last reply arrived (for the run's wall time).
        Ok(last_arrival)
    }

    /// Reads back every key this connection wrote.
    async fn final_check<C: Connection>(&mut self, conn: &mut C, outcome: &mut Outcome) -> Result<(), TargetError> {
        let reads = self.model.final_reads();
        for chunk in reads.chunks(CHECK_BATCH) {
            for read in chunk {
                self.model.queue(conn, &self.shared.config.namer, read);
                self.pending.push(*read);
            }
            conn.flush().await?;
            self.check_batch(conn, outcome, None).await?;
        }
        outcome.final_checked = reads.len() as u64;
        Ok(())
    }
}

/// Consecutive replies of one operation that came in one read (so with the same latency: a
/// pipelined batch's replies), recorded in one histogram update instead of one each.
#[derive(Default)]
struct SameLatency {
    /// The operation, when its requests were sent and when the read brought their replies.
    run: Option<(Op, Instant, Instant)>,
    count: u64,
}

impl SameLatency {
    fn add(&mut self, buffer: &mut SampleBuffer, shared: &SharedLatencies, op: Op, sent: Instant, arrived: Instant) {
        if self.run != Some((op, sent, arrived)) {
            self.flush(buffer, shared);
            self.run = Some((op, sent, arrived));
        }
        self.count += 1;
    }

    fn flush(&mut self, buffer: &mut SampleBuffer, shared: &SharedLatencies) {
        if let Some((op, sent, arrived)) = self.run.take() {
            buffer.record_n(shared, op, arrived.saturating_duration_since(sent).as_nanos() as u64, self.count);
        }
        self.count = 0;
    }
}

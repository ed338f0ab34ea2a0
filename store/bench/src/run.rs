//! A whole run: start every connection, release them together, collect and merge what they found.

use std::future::Future;
use std::path::Path;
use std::sync::atomic::AtomicU64;
use std::sync::Arc;
use std::time::Instant;

use tokio::sync::{oneshot, watch, Barrier};
use tokio::task::JoinHandle;

use crate::ack_log::{AckLogError, AckWriter};
use crate::config::{RunConfig, Stop};
use crate::driver::{drive, Outcome, Shared};
use crate::latencies::SharedLatencies;
use crate::progress::Progress;
use crate::report::RunReport;
use crate::stats::Recorder;
use crate::stream::Io;
use crate::target::Target;

/// A run that could not produce a report.
#[derive(Debug, thiserror::Error)]
pub enum RunError {
    #[error(transparent)]
    AckLog(#[from] AckLogError),
    #[error("a connection task failed: {0}")]
    Task(String),
}

/// Runs the load described by `config` against `target`.
pub async fn run<T: Target>(
    target: T,
    config: RunConfig,
    ack_log: Option<&Path>,
    show_progress: bool,
) -> Result<RunReport, RunError> {
    let (ack, writer) = match ack_log {
        Some(path) => {
            let (sink, writer) = AckWriter::create(path, &config.namer.prefix, config.namer.value_size)?;
            (Some(sink), Some(writer))
        }
        None => (None, None),
    };
    let (start_tx, start_rx) = watch::channel(None);
    let clients = config.clients;
    let threads = config.threads;
    let shared = Arc::new(Shared {
        config,
        claimed: AtomicU64::new(0),
        replies: AtomicU64::new(0),
        ready: Barrier::new(clients as usize + 1),
        start: start_rx,
        latencies: SharedLatencies::new(threads),
    });
    let target = Arc::new(target);
    let blocking = shared.config.io == Io::Blocking;
    let tasks = (0..clients)
        .map(|i| {
            let connection = drive(target.clone(), shared.clone(), ack.clone(), i);
            if blocking {
                on_own_thread(connection, i)
            } else {
                Ok(tokio::spawn(async move { Ok::<_, RunError>(connection.await) }))
            }
        })
        .collect::<Result<Vec<_>, _>>()?;
    shared.ready.wait().await;
    let started = Instant::now();
    let _ = start_tx.send(Some(started));
    let progress = show_progress.then(|| Progress::start(shared.clone(), started));

    let mut merged = Merged::default();
    for task in tasks {
        match task.await.map_err(|join| RunError::Task(join.to_string()))?? {
            Ok(outcome) => merged.add(outcome, None, shared.config.max_reported_mismatches),
            Err(failed) => {
                merged.add(failed.outcome, Some(failed.error.to_string()), shared.config.max_reported_mismatches)
            }
        }
    }
    if let Some(progress) = progress {
        progress.finish().await;
    }
    // Dropping the last sink lets the ack-log writer drain and stop.
    drop(ack);
    if let Some(writer) = writer {
        writer.finish()?;
    }
    Ok(merged.report(target.describe(), &shared.config, started, shared.latencies.merged()))
}

/// Runs one connection's `drive` on a new thread with a runtime of its own (for timers: the
/// agent-shaped think time), so its blocking socket calls stall nothing else; the handle joins it
/// from the run's runtime like a task.
fn on_own_thread<F>(connection: F, index: u32) -> Result<JoinHandle<Result<F::Output, RunError>>, RunError>
where
    F: Future + Send + 'static,
    F::Output: Send + 'static,
{
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| RunError::Task(format!("starting connection {index}'s runtime: {e}")))?;
    let (done, result) = oneshot::channel();
    std::thread::Builder::new()
        .name(format!("cairn-bench-conn-{index}"))
        .spawn(move || {
            let _ = done.send(runtime.block_on(connection));
        })
        .map_err(|e| RunError::Task(format!("starting connection {index}'s thread: {e}")))?;
    // The join is a task of the run's runtime, so a blocking connection is awaited like any other.
    Ok(tokio::spawn(async move {
        result.await.map_err(|_| RunError::Task(format!("connection {index}'s thread panicked")))
    }))
}

#[derive(Default)]
struct Merged {
    measured: u64,
    last_reply: Option<Instant>,
    mismatches: u64,
    connection_errors: u64,
    messages: Vec<String>,
    final_checked: u64,
    acked_writes: u64,
}

impl Merged {
    fn add(&mut self, outcome: Outcome, error: Option<String>, keep: usize) {
        self.measured += outcome.measured;
        self.last_reply = self.last_reply.max(outcome.last_reply);
        self.mismatches += outcome.mismatches;
        self.final_checked += outcome.final_checked;
        self.acked_writes += outcome.acked_writes;
        for m in outcome.messages {
            if self.messages.len() < keep {
                self.messages.push(m);
            }
        }
        if let Some(e) = error {
            self.connection_errors += 1;
            if self.messages.len() < keep {
                self.messages.push(e);
            }
        }
    }

    fn report(self, target: String, config: &RunConfig, started: Instant, latencies: Recorder) -> RunReport {
        let measure_from = started + config.warmup;
        let measured_seconds = match (self.last_reply, config.stop) {
            (Some(last), _) => last.saturating_duration_since(measure_from).as_secs_f64(),
            (None, Stop::Duration(d)) => d.as_secs_f64(),
            (None, Stop::Requests(_)) => 0.0,
        };
        let ops_per_sec = if measured_seconds > 0.0 { self.measured as f64 / measured_seconds } else { 0.0 };
        let errors = self.mismatches + self.connection_errors;
        RunReport {
            target,
            ops: config.mix.spec(),
            clients: config.clients,
            pipeline: config.pipeline,
            threads: config.threads,
            io: serde_plain(&config.io),
            shape: serde_plain(&config.shape),
            think_time_ms: config.think_time.as_secs_f64() * 1000.0,
            value_size: config.namer.value_size,
            keyspace: config.keyspace,
            key_pattern: serde_plain(&config.key_pattern),
            key_prefix: config.namer.prefix.clone(),
            measured_seconds: (measured_seconds * 1000.0).round() / 1000.0,
            requests: self.measured,
            ops_per_sec: ops_per_sec.round(),
            latency: latencies.summary(),
            per_op: latencies.per_op(),
            errors,
            mismatches: self.mismatches,
            connection_errors: self.connection_errors,
            final_state_keys_checked: self.final_checked,
            acked_writes: self.acked_writes,
            verified: errors == 0,
            first_errors: self.messages,
        }
    }
}

/// A unit enum's serde name (`closed-loop`).
fn serde_plain<T: serde::Serialize>(value: &T) -> String {
    serde_json::to_value(value).ok().and_then(|v| v.as_str().map(str::to_string)).unwrap_or_default()
}

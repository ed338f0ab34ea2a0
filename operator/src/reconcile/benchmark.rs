//! Reconciles a `KVStoreBenchmark`: once its store is Ready, creates its Job (once) against the
//! store's Service, and when the Job finishes reads the driver's summary from the pod's
//! termination message into the status. A finished benchmark is never re-run; Kubernetes
//! deletes its Job after `ttlSecondsAfterFinished`, and a Job that vanishes before its result
//! was read fails the benchmark instead of starting a second run.

use std::sync::Arc;
use std::time::{Duration, Instant};

use cairn_crds::{BenchPhase, KVStore, KVStoreBenchmark, KVStoreBenchmarkStatus};
use k8s_openapi::api::batch::v1::Job;
use k8s_openapi::api::core::v1::Pod;
use kube::api::ListParams;
use kube::runtime::controller::Action;
use kube::runtime::events::{Event, EventType};
use kube::{Api, ResourceExt};

use super::summary::{driver_said, parse_summary};
use super::{apply, apply_status};
use crate::builders;
use crate::conditions::{self, is_true, Want, COMPLETE, FAILED, READY};
use crate::context::{key, Context};
use crate::labels::job_name;
use crate::Error;

pub const CONTROLLER: &str = "kvstorebenchmark";
/// Requeue while the store is missing or the Job runs (Job changes also trigger reconciles).
pub const REQUEUE_WAITING: Duration = Duration::from_secs(15);
/// The label Kubernetes puts on a Job's pods.
pub const JOB_NAME_LABEL: &str = "batch.kubernetes.io/job-name";

/// Entry point of the benchmark controller.
pub async fn reconcile(bench: Arc<KVStoreBenchmark>, ctx: Arc<Context>) -> Result<Action, Error> {
    let started = Instant::now();
    let result = reconcile_inner(&bench, &ctx).await;
    let failure = result.as_ref().err().map(Error::metric_label);
    ctx.metrics.observe(CONTROLLER, started.elapsed(), failure);
    if result.is_ok() {
        ctx.succeeded(&key(bench.as_ref()));
    }
    result
}

/// Error policy of the benchmark controller.
pub fn error_policy(bench: Arc<KVStoreBenchmark>, error: &Error, ctx: Arc<Context>) -> Action {
    crate::context::error_action(CONTROLLER, bench.as_ref(), error, &ctx)
}

/// How a Job ended, from its status conditions.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum JobOutcome {
    Running,
    Complete,
    Failed(String),
}

pub fn job_outcome(job: &Job) -> JobOutcome {
    let conditions = job.status.as_ref().and_then(|s| s.conditions.as_ref()).cloned().unwrap_or_default();
    for c in conditions.iter().filter(|c| c.status == "True") {
        match c.type_.as_str() {
            "Complete" => return JobOutcome::Complete,
            "Failed" => {
                let why = c.message.clone().or_else(|| c.reason.clone()).unwrap_or_default();
                return JobOutcome::Failed(why);
            }
            _ => {}
        }
    }
    JobOutcome::Running
}

/// The driver container's termination message among a Job's pods (the newest that has one).
pub fn termination_message(pods: &[Pod]) -> Option<String> {
    let mut messages: Vec<(String, String)> = pods
        .iter()
        .filter_map(|pod| {
            let statuses = pod.status.as_ref()?.container_statuses.as_ref()?;
            let status = statuses.iter().find(|s| s.name == builders::job::CONTAINER)?;
            let terminated = status.state.as_ref()?.terminated.as_ref()?;
            let finished = terminated.finished_at.as_ref().map(|t| t.0.to_string()).unwrap_or_default();
            Some((finished, terminated.message.clone()?))
        })
        .collect();
    messages.sort();
    messages.pop().map(|(_, m)| m)
}

async fn reconcile_inner(bench: &KVStoreBenchmark, ctx: &Context) -> Result<Action, Error> {
    let namespace = bench.namespace().ok_or(Error::MissingField("metadata.namespace"))?;
    let name = bench.name_any();
    let client = ctx.client.clone();
    let benches: Api<KVStoreBenchmark> = Api::namespaced(client.clone(), &namespace);
    let previous = bench.status.clone().unwrap_or_default();
    let generation = bench.metadata.generation;
    if matches!(previous.phase, BenchPhase::Succeeded | BenchPhase::Failed) {
        return Ok(Action::await_change());
    }

    let jobs: Api<Job> = Api::namespaced(client.clone(), &namespace);
    let job_name = job_name(&name);
    let job = match jobs.get_opt(&job_name).await? {
        // A Job is created once: its pod template is immutable, and re-applying it after the
        // store changed would fail (or, after its TTL, run the benchmark a second time).
        Some(job) => job,
        None if previous.job_name.is_some() => {
            let message = format!(
                "Job {job_name} disappeared before its result was read (deleted, or removed after \
                 ttlSecondsAfterFinished); create a new KVStoreBenchmark to run again"
            );
            return finish_lost(bench, ctx, &benches, &previous, message).await;
        }
        None => {
            let stores: Api<KVStore> = Api::namespaced(client.clone(), &namespace);
            let Some(store) = stores.get_opt(&bench.spec.store).await? else {
                let waiting = Waiting::not_found(&bench.spec.store, &namespace);
                return report_waiting(bench, ctx, &benches, &previous, waiting).await;
            };
            if let Some(waiting) = store_not_ready(&store) {
                return report_waiting(bench, ctx, &benches, &previous, waiting).await;
            }
            apply(&jobs, &builders::job::build(bench, &store)).await?
        }
    };
    let outcome = job_outcome(&job);

    let (phase, summary, message) = match &outcome {
        JobOutcome::Running => (BenchPhase::Running, None, format!("Job {job_name} is running")),
        JobOutcome::Complete | JobOutcome::Failed(_) => {
            let pods: Api<Pod> = Api::namespaced(client.clone(), &namespace);
            let listed = pods.list(&ListParams::default().labels(&format!("{JOB_NAME_LABEL}={job_name}"))).await?;
            let left = termination_message(&listed.items);
            let parsed = left.as_deref().map(parse_summary);
            match (&outcome, parsed) {
                (JobOutcome::Complete, Some(Ok(s))) if s.verified && s.errors == 0 => {
                    let msg = format!("{:.0} ops/s, p99 {:.0} µs, verified", s.ops_per_sec, s.p99_us);
                    (BenchPhase::Succeeded, Some(s), msg)
                }
                (JobOutcome::Complete, Some(Ok(s))) => {
                    let msg = format!("verification failed: {} errors", s.errors);
                    (BenchPhase::Failed, Some(s), msg)
                }
                (JobOutcome::Complete, Some(Err(e))) => (BenchPhase::Failed, None, e.to_string()),
                (JobOutcome::Complete, None) => {
                    (BenchPhase::Failed, None, "the driver left no summary in its termination message".into())
                }
                (_, parsed) => {
                    let why = match &outcome {
                        JobOutcome::Failed(why) => why.clone(),
                        _ => String::new(),
                    };
                    let said = left.as_deref().and_then(driver_said).map(|l| format!("; the driver said: {l}"));
                    (
                        BenchPhase::Failed,
                        parsed.and_then(Result::ok),
                        format!("Job failed: {why}{}", said.unwrap_or_default()),
                    )
                }
            }
        }
    };
    let done = matches!(phase, BenchPhase::Succeeded | BenchPhase::Failed);
    let wants = [
        Want {
            type_: READY,
            status: true,
            reason: "JobStarted",
            message: format!("Job {job_name} runs against KVStore {}", bench.spec.store),
        },
        Want {
            type_: COMPLETE,
            status: phase == BenchPhase::Succeeded,
            reason: if done { "Finished" } else { "Running" },
            message: message.clone(),
        },
        Want {
            type_: FAILED,
            status: phase == BenchPhase::Failed,
            reason: if phase == BenchPhase::Failed { "RunFailed" } else { "NoFailure" },
            message: message.clone(),
        },
    ];
    let status = KVStoreBenchmarkStatus {
        observed_generation: generation,
        phase,
        job_name: Some(job_name.clone()),
        summary,
        message: Some(message.clone()),
        conditions: conditions::settle(&previous.conditions, &wants, generation),
    };
    apply_status(&benches, &name, serde_json::to_value(&status)?).await?;
    if previous.job_name.is_none() {
        let note = format!("started Job {job_name} against KVStore {}", bench.spec.store);
        ctx.event(bench, event(EventType::Normal, "JobCreated", note)).await;
    }
    match phase {
        BenchPhase::Succeeded => ctx.event(bench, event(EventType::Normal, "Succeeded", message)).await,
        BenchPhase::Failed => ctx.event(bench, event(EventType::Warning, "Failed", message)).await,
        _ => {}
    }
    Ok(if done { Action::await_change() } else { Action::requeue(REQUEUE_WAITING) })
}

/// Why a benchmark cannot start yet against `store`, if it cannot: a driver started against a
/// store that is not Ready would only measure connection errors. A store serving TLS is no
/// reason to wait: the Job connects with TLS (`builders::job`).
pub fn store_not_ready(store: &KVStore) -> Option<Waiting> {
    let ready = store.status.as_ref().is_some_and(|s| is_true(&s.conditions, READY));
    (!ready).then(|| Waiting {
        reason: "StoreNotReady",
        message: format!("waiting for KVStore {} to be Ready before starting the benchmark", store.name_any()),
    })
}

/// A benchmark that waits for its store.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Waiting {
    /// The Ready condition's reason (and the Event's).
    pub reason: &'static str,
    /// The status message.
    pub message: String,
}

impl Waiting {
    /// The store the benchmark names does not exist (yet).
    pub fn not_found(store: &str, namespace: &str) -> Waiting {
        Waiting { reason: "StoreNotFound", message: format!("KVStore {store} not found in {namespace}") }
    }
}

async fn report_waiting(
    bench: &KVStoreBenchmark,
    ctx: &Context,
    benches: &Api<KVStoreBenchmark>,
    previous: &KVStoreBenchmarkStatus,
    waiting: Waiting,
) -> Result<Action, Error> {
    let generation = bench.metadata.generation;
    let status = KVStoreBenchmarkStatus {
        observed_generation: generation,
        phase: BenchPhase::Pending,
        message: Some(waiting.message.clone()),
        conditions: conditions::settle(
            &previous.conditions,
            &[Want { type_: READY, status: false, reason: waiting.reason, message: waiting.message.clone() }],
            generation,
        ),
        ..previous.clone()
    };
    apply_status(benches, &bench.name_any(), serde_json::to_value(&status)?).await?;
    if previous.message.as_deref() != Some(waiting.message.as_str()) {
        let type_ = if waiting.reason == "StoreNotFound" { EventType::Warning } else { EventType::Normal };
        ctx.event(bench, event(type_, waiting.reason, waiting.message)).await;
    }
    Ok(Action::requeue(REQUEUE_WAITING))
}

/// Fails a benchmark whose Job vanished before its result was read (never re-run it).
async fn finish_lost(
    bench: &KVStoreBenchmark,
    ctx: &Context,
    benches: &Api<KVStoreBenchmark>,
    previous: &KVStoreBenchmarkStatus,
    message: String,
) -> Result<Action, Error> {
    let generation = bench.metadata.generation;
    let wants = [
        Want { type_: COMPLETE, status: false, reason: "JobLost", message: message.clone() },
        Want { type_: FAILED, status: true, reason: "JobLost", message: message.clone() },
    ];
    let status = KVStoreBenchmarkStatus {
        observed_generation: generation,
        phase: BenchPhase::Failed,
        message: Some(message.clone()),
        conditions: conditions::settle(&previous.conditions, &wants, generation),
        ..previous.clone()
    };
    apply_status(benches, &bench.name_any(), serde_json::to_value(&status)?).await?;
    ctx.event(bench, event(EventType::Warning, "Failed", message)).await;
    Ok(Action::await_change())
}

fn event(type_: EventType, reason: &str, note: String) -> Event {
    Event { type_, reason: reason.into(), note: Some(note), action: "Benchmark".into(), secondary: None }
}

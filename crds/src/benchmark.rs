//! The `KVStoreBenchmark` resource: one run of the `cairn-bench` driver, as a Job, against a
//! `KVStore`'s Service; its summary comes back into the status.

use k8s_openapi::apimachinery::pkg::apis::meta::v1::Condition;
use kube::{CustomResource, KubeSchema};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// A benchmark run against a KVStore in the same namespace.
// clippy reads the repeated `type_ = ...` of `printcolumn(...)` as duplicated attributes.
#[allow(clippy::duplicated_attributes)]
#[derive(CustomResource, KubeSchema, Serialize, Deserialize, Clone, Debug, PartialEq)]
#[kube(
    group = "cairn.io",
    version = "v1alpha1",
    kind = "KVStoreBenchmark",
    plural = "kvstorebenchmarks",
    singular = "kvstorebenchmark",
    shortname = "kvsb",
    category = "cairn",
    namespaced,
    status = "KVStoreBenchmarkStatus",
    doc = "A run of the cairn-bench load driver against a KVStore; its summary lands in the status.",
    printcolumn(name = "Store", type_ = "string", json_path = ".spec.store"),
    printcolumn(name = "Phase", type_ = "string", json_path = ".status.phase"),
    printcolumn(name = "Ops/s", type_ = "number", json_path = ".status.summary.opsPerSec"),
    printcolumn(name = "p99 µs", type_ = "number", json_path = ".status.summary.p99Us"),
    printcolumn(name = "Age", type_ = "date", json_path = ".metadata.creationTimestamp")
)]
#[x_kube(validation = Rule::new("self == oldSelf").message("a benchmark's spec is immutable: create a new KVStoreBenchmark"))]
#[serde(rename_all = "camelCase")]
pub struct KVStoreBenchmarkSpec {
    /// Name of the KVStore (same namespace) to load.
    #[schemars(length(min = 1, max = 63))]
    pub store: String,

    /// Image holding `cairn-bench`; defaults to the store's image.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub image: Option<String>,

    /// What load to apply.
    #[serde(default)]
    pub workload: Workload,

    /// Whole CPUs for the driver pod (requests = limits).
    #[serde(default = "one")]
    #[schemars(range(min = 1, max = 64))]
    pub cpus: i32,

    /// Seconds after the Job finishes before Kubernetes deletes it (and its pod).
    #[serde(default = "default_ttl")]
    #[schemars(range(min = 0))]
    pub ttl_seconds_after_finished: i32,
}

fn one() -> i32 {
    1
}
fn default_ttl() -> i32 {
    3600
}

/// The load: operations, concurrency and shape.
#[derive(Serialize, Deserialize, JsonSchema, Clone, Debug, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct Workload {
    /// Operations to run, as a mix.
    #[serde(default = "default_ops")]
    #[schemars(length(min = 1))]
    pub operations: Vec<BenchOperation>,
    /// Connections.
    #[serde(default = "default_clients")]
    #[schemars(range(min = 1, max = 1024))]
    pub clients: u32,
    /// Requests in flight per connection.
    #[serde(default = "one_u32")]
    #[schemars(range(min = 1, max = 1024))]
    pub pipeline: u32,
    /// Measured duration in seconds (warm-up excluded).
    #[serde(default = "default_duration")]
    #[schemars(range(min = 1, max = 86400))]
    pub duration_seconds: u32,
    /// Value size in bytes.
    #[serde(default = "default_value_size")]
    #[schemars(range(min = 1, max = 16777216))]
    pub value_size_bytes: u32,
    /// Closed loop (next request when the reply arrives) or agent-shaped (think time between
    /// requests).
    #[serde(default)]
    pub shape: LoadShape,
    /// Mean think time of agent-shaped writers, in milliseconds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 0, max = 3600000))]
    pub think_time_ms: Option<u32>,
}

impl Default for Workload {
    fn default() -> Self {
        Workload {
            operations: default_ops(),
            clients: default_clients(),
            pipeline: 1,
            duration_seconds: default_duration(),
            value_size_bytes: default_value_size(),
            shape: LoadShape::default(),
            think_time_ms: None,
        }
    }
}

fn default_ops() -> Vec<BenchOperation> {
    vec![BenchOperation::Set, BenchOperation::Get]
}
fn default_clients() -> u32 {
    50
}
fn one_u32() -> u32 {
    1
}
fn default_duration() -> u32 {
    30
}
fn default_value_size() -> u32 {
    32
}

/// A benchmark operation.
#[derive(Serialize, Deserialize, JsonSchema, Clone, Copy, Debug, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
pub enum BenchOperation {
    Set,
    Get,
    Incr,
    Lpush,
    Hset,
}

impl BenchOperation {
    pub fn as_str(self) -> &'static str {
        match self {
            BenchOperation::Set => "set",
            BenchOperation::Get => "get",
            BenchOperation::Incr => "incr",
            BenchOperation::Lpush => "lpush",
            BenchOperation::Hset => "hset",
        }
    }
}

/// Load shape.
#[derive(Serialize, Deserialize, JsonSchema, Clone, Copy, Debug, Default, PartialEq, Eq)]
#[serde(rename_all = "kebab-case")]
pub enum LoadShape {
    #[default]
    ClosedLoop,
    AgentShaped,
}

impl LoadShape {
    pub fn as_str(self) -> &'static str {
        match self {
            LoadShape::ClosedLoop => "closed-loop",
            LoadShape::AgentShaped => "agent-shaped",
        }
    }
}

/// Observed state of a benchmark.
#[derive(Serialize, Deserialize, JsonSchema, Clone, Debug, Default, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct KVStoreBenchmarkStatus {
    /// The `metadata.generation` this status describes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub observed_generation: Option<i64>,
    /// Pending, Running, Succeeded or Failed.
    #[serde(default)]
    pub phase: BenchPhase,
    /// The Job running the driver.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub job_name: Option<String>,
    /// The driver's summary, from its termination message.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub summary: Option<BenchSummary>,
    /// A human-readable explanation of the phase.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
    /// Ready (the store exists), Complete and Failed.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub conditions: Vec<Condition>,
}

/// Phase of a benchmark.
#[derive(Serialize, Deserialize, JsonSchema, Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum BenchPhase {
    #[default]
    Pending,
    Running,
    Succeeded,
    Failed,
}

/// What `cairn-bench --summary-json` reported (at most 4 KiB of JSON).
#[derive(Serialize, Deserialize, JsonSchema, Clone, Debug, Default, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct BenchSummary {
    /// Completed operations per second.
    pub ops_per_sec: f64,
    /// Median latency in microseconds.
    pub p50_us: f64,
    /// 99th percentile latency in microseconds.
    pub p99_us: f64,
    /// Failed or mismatched replies.
    pub errors: u64,
    /// Whether every reply and the final state verified.
    pub verified: bool,
}

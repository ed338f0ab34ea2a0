//! The `KVStore` resource: one Cairn server, run by the operator as a StatefulSet with its
//! Services, ConfigMap and PodDisruptionBudget.

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::{Affinity, Toleration, TopologySpreadConstraint};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Condition;
use kube::{CustomResource, KubeSchema};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::{Durability, FsyncClass, MaxmemoryPolicy};

/// The image used when `spec.image` is empty.
pub const DEFAULT_IMAGE: &str = "cairn-db/cairn:0.1.0";

/// Desired state of a Cairn key-value store.
// clippy reads the repeated `type_ = ...` of `printcolumn(...)` as duplicated attributes.
#[allow(clippy::duplicated_attributes)]
#[derive(CustomResource, KubeSchema, Serialize, Deserialize, Clone, Debug, PartialEq)]
#[kube(
    group = "cairn.io",
    version = "v1alpha1",
    kind = "KVStore",
    plural = "kvstores",
    singular = "kvstore",
    shortname = "kvs",
    shortname = "cairn",
    category = "cairn",
    namespaced,
    status = "KVStoreStatus",
    doc = "A durable, Redis-compatible key-value store (Cairn) run as a StatefulSet.",
    printcolumn(name = "Ready", type_ = "string", json_path = ".status.conditions[?(@.type==\"Ready\")].status"),
    printcolumn(name = "Durability", type_ = "string", json_path = ".spec.durability"),
    printcolumn(name = "Fsync class", type_ = "string", json_path = ".spec.fsyncClass"),
    printcolumn(name = "Volume", type_ = "string", json_path = ".status.volume.size"),
    printcolumn(name = "Age", type_ = "date", json_path = ".metadata.creationTimestamp")
)]
#[x_kube(validation = Rule::new("!has(self.maxmemory) || !has(self.memory) || self.maxmemory.endsWith('%') || !isQuantity(self.maxmemory) || !isQuantity(self.memory) || quantity(self.maxmemory).compareTo(quantity(self.memory)) <= 0").message("maxmemory must not exceed memory"))]
#[serde(rename_all = "camelCase")]
pub struct KVStoreSpec {
    /// Container image holding the `cairn` server binary (and `cairn-bench`).
    #[serde(default = "default_image")]
    pub image: String,

    /// Image pull policy of the server container.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub image_pull_policy: Option<PullPolicy>,

    /// Number of server pods. Must be 1: Cairn has no replication yet.
    #[serde(default = "one")]
    #[x_kube(validation = Rule::new("self >= 1").message("replicas must be at least 1"))]
    #[x_kube(validation = Rule::new("self == 1").message("replicas must be 1 until Cairn supports replication"))]
    pub replicas: i32,

    /// When a write is acknowledged: none, async, everysec or sync (see docs/kubernetes.md).
    #[serde(default)]
    #[x_kube(validation = Rule::new("self in ['none', 'async', 'everysec', 'sync']").message("durability must be none, async, everysec or sync"))]
    pub durability: Durability,

    /// The kind of disk backing the data volume; decides the storage class and the volume size
    /// computed when `storage.size` is absent.
    #[serde(default)]
    pub fsync_class: FsyncClass,

    /// The data volume (WAL segments and snapshots).
    #[serde(default)]
    pub storage: StorageSpec,

    /// Whole CPUs for the server (requests = limits, Guaranteed QoS): with the kubelet's static
    /// CPU manager the pod gets exclusive cores, and the server runs one pinned worker per core.
    #[serde(default = "one")]
    #[x_kube(validation = Rule::new("self >= 1 && self <= 256").message("cpus must be a whole number of cores between 1 and 256"))]
    pub cpus: i32,

    /// Memory for the server (requests = limits), e.g. `2Gi`. The whole dataset lives in memory.
    #[serde(default = "default_memory")]
    #[schemars(regex(pattern = "^[1-9][0-9]{0,8}(Mi|Gi|Ti)$"))]
    pub memory: String,

    /// The server's `maxmemory`: above it, writes evict keys under `maxmemoryPolicy` or are
    /// refused with `-OOM`, instead of the pod being OOM-killed at `memory`. A Kubernetes
    /// quantity (`800Mi`, `1G`, `1.5Gi`), a percentage of `memory` (`75%`), or `"0"` for no limit
    /// (quote it). Default `75%`: maxmemory counts the dataset's allocations, not allocator
    /// fragmentation, client and replication buffers, Lua, thread stacks or the binary, which
    /// all count against the pod's limit; the remaining quarter is their headroom. At most
    /// `memory`.
    #[serde(default = "default_maxmemory")]
    #[schemars(length(max = 32))]
    #[schemars(regex(
        pattern = r"^(([1-9]|[1-9][0-9]|100)%|[0-9]{1,15}(\.[0-9]{1,9})?(Ki|Mi|Gi|Ti|Pi|Ei|k|M|G|T|P|E)?)$"
    ))]
    pub maxmemory: String,

    /// What the server does at `maxmemory` (its `maxmemory-policy`): `noeviction` (the default,
    /// as in Redis) refuses writes with `-OOM`; `allkeys-lru`, `allkeys-lfu`, `allkeys-random`
    /// evict any key; `volatile-lru`, `volatile-lfu`, `volatile-random`, `volatile-ttl` only keys
    /// with a TTL.
    #[serde(default)]
    pub maxmemory_policy: MaxmemoryPolicy,

    /// Container and Service ports.
    #[serde(default)]
    pub ports: Ports,

    /// The client Service.
    #[serde(default)]
    pub service: ServiceSpec,

    /// A Secret holding the password clients must send with AUTH (passed to the server as
    /// `CAIRN_REQUIREPASS`). No authentication when absent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub auth_secret: Option<AuthSecretRef>,

    /// A `kubernetes.io/tls` Secret (tls.crt, tls.key, and ca.crt when client certificates are
    /// asked for) for TLS. With it the RESP port serves RESP over TLS only, and the native
    /// protocol's port (which has no TLS) is off; see docs/tls.md.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tls_secret: Option<TlsSecretRef>,

    /// Extra server configuration, in the server's TOML config format; stored in a ConfigMap
    /// and passed with `--config`. Flags the operator sets (ports, durability, data dir) win.
    /// Its `[params]` table holds CONFIG parameters (names case-insensitive); a name the server
    /// does not know, or one with a setting of its own (port, maxclients, ...), is refused. A
    /// change of a `[params]` value reaches the running server without a restart (the server
    /// rereads the file); adding or removing a `[params]` entry, or any other change, rolls the
    /// pods (a parameter removed from the file would keep its value in the running server).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub config: Option<String>,

    /// Where the pod may run.
    #[serde(default)]
    pub scheduling: Scheduling,

    /// The PodDisruptionBudget of the store's pods.
    #[serde(default)]
    pub pod_disruption_budget: PodDisruptionBudgetSpec,

    /// Extra labels and annotations of the pods.
    #[serde(default)]
    pub pod_metadata: PodMetadata,
}

fn default_image() -> String {
    DEFAULT_IMAGE.to_string()
}

fn one() -> i32 {
    1
}

fn default_memory() -> String {
    "1Gi".to_string()
}

/// The default `spec.maxmemory`: three quarters of `spec.memory`.
pub const DEFAULT_MAXMEMORY: &str = "75%";

fn default_maxmemory() -> String {
    DEFAULT_MAXMEMORY.to_string()
}

/// Image pull policy.
#[derive(Serialize, Deserialize, JsonSchema, Clone, Copy, Debug, PartialEq, Eq)]
pub enum PullPolicy {
    Always,
    IfNotPresent,
    Never,
}

impl PullPolicy {
    pub fn as_str(self) -> &'static str {
        match self {
            PullPolicy::Always => "Always",
            PullPolicy::IfNotPresent => "IfNotPresent",
            PullPolicy::Never => "Never",
        }
    }
}

/// The data volume.
#[derive(KubeSchema, Serialize, Deserialize, Clone, Debug, Default, PartialEq)]
#[x_kube(validation = Rule::new("!has(oldSelf.storageClassName) || has(self.storageClassName)").message("storage.storageClassName cannot be removed once set"))]
#[x_kube(validation = Rule::new("!has(oldSelf.size) || has(self.size)").message("storage.size cannot be removed once set"))]
#[serde(rename_all = "camelCase")]
pub struct StorageSpec {
    /// Storage class of the data volume. Defaults to the fsync class's storage class
    /// (see docs/kubernetes.md). Immutable.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[x_kube(validation = Rule::new("self == oldSelf").message("storage.storageClassName is immutable"))]
    pub storage_class_name: Option<String>,

    /// Size of the data volume, e.g. `50Gi`. Computed from the fsync class, durability,
    /// `targetAcksPerSecond` and `expectedDataSize` when absent. Can only grow.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(regex(pattern = "^[1-9][0-9]{0,8}(Mi|Gi|Ti)$"))]
    #[x_kube(validation = Rule::new("quantity(self).compareTo(quantity(oldSelf)) >= 0").message("storage.size can only grow"))]
    pub size: Option<String>,

    /// Expected size of the dataset (in memory and in one snapshot), used to size the volume.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(regex(pattern = "^[1-9][0-9]{0,8}(Mi|Gi|Ti)$"))]
    pub expected_data_size: Option<String>,

    /// Durable acknowledgements per second the volume must sustain; with per-GiB disks this
    /// grows the volume (their IOPS grow with size).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 1, max = 10_000_000))]
    pub target_acks_per_second: Option<u32>,
}

/// Ports of the server, in the container and on the Services.
#[derive(Serialize, Deserialize, JsonSchema, Clone, Debug, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct Ports {
    /// RESP2/RESP3 port (redis-cli, client libraries).
    #[serde(default = "default_resp_port")]
    #[schemars(range(min = 1, max = 65535))]
    pub resp: i32,
    /// Native binary protocol port (docs/native-protocol.md), on the container and the
    /// Services.
    #[serde(default = "default_native_port")]
    #[schemars(range(min = 1, max = 65535))]
    pub native: i32,
    /// HTTP admin port: /metrics, /healthz, /readyz.
    #[serde(default = "default_admin_port")]
    #[schemars(range(min = 1, max = 65535))]
    pub admin: i32,
}

impl Default for Ports {
    fn default() -> Self {
        Ports { resp: default_resp_port(), native: default_native_port(), admin: default_admin_port() }
    }
}

fn default_resp_port() -> i32 {
    6379
}
fn default_native_port() -> i32 {
    7379
}
fn default_admin_port() -> i32 {
    8379
}

/// The client Service.
#[derive(Serialize, Deserialize, JsonSchema, Clone, Debug, Default, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct ServiceSpec {
    /// Service type of the client Service.
    #[serde(default, rename = "type")]
    pub type_: ServiceType,
    /// Annotations of the client Service (e.g. for a cloud load balancer).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub annotations: BTreeMap<String, String>,
}

/// Service type.
#[derive(Serialize, Deserialize, JsonSchema, Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum ServiceType {
    #[default]
    ClusterIP,
    NodePort,
    LoadBalancer,
}

impl ServiceType {
    pub fn as_str(self) -> &'static str {
        match self {
            ServiceType::ClusterIP => "ClusterIP",
            ServiceType::NodePort => "NodePort",
            ServiceType::LoadBalancer => "LoadBalancer",
        }
    }
}

/// A key of a Secret in the KVStore's namespace holding the AUTH password.
#[derive(Serialize, Deserialize, JsonSchema, Clone, Debug, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct AuthSecretRef {
    /// Name of the Secret.
    #[schemars(length(min = 1, max = 253))]
    pub name: String,
    /// Key in the Secret.
    #[serde(default = "default_password_key")]
    pub key: String,
}

fn default_password_key() -> String {
    "password".to_string()
}

/// A `kubernetes.io/tls` Secret in the KVStore's namespace.
#[derive(Serialize, Deserialize, JsonSchema, Clone, Debug, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct TlsSecretRef {
    /// Name of the Secret.
    #[schemars(length(min = 1, max = 253))]
    pub name: String,
    /// Whether clients must present a certificate signed by the Secret's ca.crt: `no` (the
    /// default: clients check the server's certificate, the server asks for none), `optional`
    /// (checked when a client sends one) or `yes` (mutual TLS).
    #[serde(default)]
    pub auth_clients: TlsClientAuth,
}

/// `spec.tlsSecret.authClients`: the server's `--tls-auth-clients`.
#[derive(Serialize, Deserialize, JsonSchema, Clone, Copy, Debug, Default, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
pub enum TlsClientAuth {
    #[default]
    No,
    Optional,
    Yes,
}

impl TlsClientAuth {
    /// The value of the server's `--tls-auth-clients` flag.
    pub fn as_flag(self) -> &'static str {
        match self {
            TlsClientAuth::No => "no",
            TlsClientAuth::Optional => "optional",
            TlsClientAuth::Yes => "yes",
        }
    }

    /// Whether the server needs the CA file (`ca.crt`) to check client certificates.
    pub fn needs_ca(self) -> bool {
        self != TlsClientAuth::No
    }
}

/// Scheduling of the pods.
#[derive(Serialize, Deserialize, JsonSchema, Clone, Debug, Default, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct Scheduling {
    /// Node labels the pod's node must have.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub node_selector: BTreeMap<String, String>,
    /// Taints the pod tolerates.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tolerations: Vec<Toleration>,
    /// Node and pod affinity.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub affinity: Option<Affinity>,
    /// Topology spread constraints (the operator fills in the label selector when empty).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub topology_spread_constraints: Vec<TopologySpreadConstraint>,
    /// Priority class of the pods.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub priority_class_name: Option<String>,
}

/// The PodDisruptionBudget.
#[derive(Serialize, Deserialize, JsonSchema, Clone, Debug, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct PodDisruptionBudgetSpec {
    /// Whether the operator creates a PodDisruptionBudget.
    #[serde(default = "yes")]
    pub enabled: bool,
    /// Pods that may be evicted at once. 0 blocks voluntary evictions (node drains) of a
    /// single-replica store until an administrator intervenes.
    #[serde(default)]
    #[schemars(range(min = 0))]
    pub max_unavailable: i32,
}

impl Default for PodDisruptionBudgetSpec {
    fn default() -> Self {
        PodDisruptionBudgetSpec { enabled: true, max_unavailable: 0 }
    }
}

fn yes() -> bool {
    true
}

/// Extra metadata of the pods.
#[derive(Serialize, Deserialize, JsonSchema, Clone, Debug, Default, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct PodMetadata {
    /// Extra pod labels (the operator's own labels win).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub labels: BTreeMap<String, String>,
    /// Extra pod annotations.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub annotations: BTreeMap<String, String>,
}

/// Observed state of a KVStore.
#[derive(Serialize, Deserialize, JsonSchema, Clone, Debug, Default, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct KVStoreStatus {
    /// The `metadata.generation` this status describes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub observed_generation: Option<i64>,
    /// Pods that pass their readiness probe (`/readyz`).
    #[serde(default)]
    pub ready_replicas: i32,
    /// Where clients connect.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub endpoints: Option<Endpoints>,
    /// The data volume chosen, and why.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub volume: Option<VolumeStatus>,
    /// Ready, Progressing and Degraded.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub conditions: Vec<Condition>,
}

/// Service DNS names (`host:port`) of the store.
#[derive(Serialize, Deserialize, JsonSchema, Clone, Debug, Default, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct Endpoints {
    /// RESP endpoint.
    pub resp: String,
    /// Native protocol endpoint (none when the store serves TLS: the native port is off).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub native: Option<String>,
    /// HTTP admin endpoint.
    pub admin: String,
}

/// The data volume the operator chose.
#[derive(Serialize, Deserialize, JsonSchema, Clone, Debug, Default, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct VolumeStatus {
    /// Size requested for the data volume.
    pub size: String,
    /// Storage class of the data volume.
    pub storage_class_name: String,
    /// The fsync class the model was taken from.
    pub fsync_class: String,
    /// IOPS the performance model predicts for this size.
    pub model_iops: u64,
    /// Throughput in MiB/s the model predicts for this size.
    pub model_throughput_mibps: u64,
    /// Why this size: which requirement bound it.
    pub reason: String,
}

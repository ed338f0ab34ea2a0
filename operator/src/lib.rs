//! The Cairn operator: reconciles `KVStore` and `KVStoreBenchmark` resources.
//!
//! # Layout
//!
//! - [`store_contract`]: every name taken from the store image (binaries, flags, env, paths).
//! - [`labels`]: names and labels of owned objects; the field manager.
//! - [`sizing`]: the fsync-class table and the pure volume-sizing function.
//! - [`maxmemory`]: `spec.maxmemory` (quantity or percentage of memory) resolved into bytes.
//! - [`config_file`]: the server's config file in the ConfigMap (`spec.config` plus the
//!   operator's `[params]`, applied live) and its checks.
//! - [`params`]: `[params]` names as the server reads them: live or not, typos, refusals.
//! - [`config_change`]: what a change of the config file needs: a restart (the part hashed
//!   into the pod template) or none (the live parameters, reported in an Event).
//! - [`validate`]: spec checks beyond the CRD schema; resolves a spec for the builders.
//! - [`builders`]: pure builders, one Kubernetes object per file.
//! - [`reconcile`]: the two reconcilers (server-side apply → status subresource → Events), and
//!   the per-object decoding of the untyped watches (`reconcile::decode`), and why a store's
//!   pods do not run (`reconcile::pods`).
//! - [`conditions`]: Ready / Progressing / Degraded bookkeeping.
//! - [`context`]: client, event recorder, metrics and the error policy's backoff.
//! - [`metrics`]: Prometheus metrics and the `/metrics` endpoint.
//! - [`leader`]: optional Lease-based leader election.
//! - [`render`]: `cairn-operator render`, the builders' output as YAML without a cluster.
//! - [`run`]: wires the controllers together (used by `main.rs`).

pub mod builders;
pub mod conditions;
pub mod config_change;
pub mod config_file;
pub mod context;
pub mod error;
pub mod labels;
pub mod leader;
pub mod maxmemory;
pub mod metrics;
pub mod params;
pub mod reconcile;
pub mod render;
pub mod run;
pub mod sizing;
pub mod store_contract;
pub mod validate;

#[cfg(test)]
mod testdata;

pub use error::Error;

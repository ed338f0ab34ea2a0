//! Runs both controllers until a shutdown signal, after leading if leader election is on.

use std::future::Future;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;

use cairn_crds::{KVStore, KVStoreBenchmark};
use futures::StreamExt;
use k8s_openapi::api::apps::v1::StatefulSet;
use k8s_openapi::api::batch::v1::Job;
use k8s_openapi::api::core::v1::{ConfigMap, Service};
use k8s_openapi::api::policy::v1::PodDisruptionBudget;
use kube::api::{ApiResource, DynamicObject};
use kube::runtime::{watcher, Controller};
use kube::{Api, Client, Resource};
use serde::de::DeserializeOwned;

use crate::context::Context;
use crate::metrics::Metrics;
use crate::reconcile::{benchmark, decode, store};

/// Which namespace to watch: one, or all.
#[derive(Debug, Clone)]
pub enum Scope {
    All,
    Namespace(String),
}

fn api<K>(client: &Client, scope: &Scope) -> Api<K>
where
    K: Resource<Scope = k8s_openapi::NamespaceResourceScope, DynamicType = ()>
        + Clone
        + DeserializeOwned
        + std::fmt::Debug,
{
    match scope {
        Scope::All => Api::all(client.clone()),
        Scope::Namespace(ns) => Api::namespaced(client.clone(), ns),
    }
}

/// The custom resources of kind `K`, untyped (see [`decode`]).
fn dynamic_api<K: Resource<DynamicType = ()>>(client: &Client, scope: &Scope) -> (Api<DynamicObject>, ApiResource) {
    let resource = ApiResource::erase::<K>(&());
    let api = match scope {
        Scope::All => Api::all_with(client.clone(), &resource),
        Scope::Namespace(ns) => Api::namespaced_with(client.clone(), ns, &resource),
    };
    (api, resource)
}

/// Default of `--shutdown-timeout`: below the chart's `terminationGracePeriodSeconds` (30 s).
pub const SHUTDOWN_TIMEOUT: Duration = Duration::from_secs(20);

/// Runs the KVStore and KVStoreBenchmark controllers until `shutdown` resolves; in-flight
/// reconciles finish first, for at most `shutdown_timeout`. The bound matters when a watch is
/// failing (API server unreachable, or an object that cannot be decoded): kube-rs's controller
/// then never winds down by itself, and the process would hang until the kubelet kills it.
pub async fn controllers(
    client: Client,
    scope: Scope,
    metrics: Arc<Metrics>,
    shutdown: impl Future<Output = ()> + Send + Sync + 'static,
    shutdown_timeout: Duration,
) {
    let ctx = Arc::new(Context::new(client.clone(), metrics.clone()));
    let (tx, rx) = tokio::sync::watch::channel(false);
    let signal = |mut rx: tokio::sync::watch::Receiver<bool>| async move {
        let _ = rx.wait_for(|stop| *stop).await;
    };
    let wc = watcher::Config::default;
    let (store_api, store_resource) = dynamic_api::<KVStore>(&client, &scope);
    let stores = Controller::new_with(store_api, wc(), store_resource)
        .owns(api::<StatefulSet>(&client, &scope), wc())
        .owns(api::<Service>(&client, &scope), wc())
        .owns(api::<ConfigMap>(&client, &scope), wc())
        .owns(api::<PodDisruptionBudget>(&client, &scope), wc())
        .graceful_shutdown_on(signal(rx.clone()))
        .run(
            |obj, ctx| decode::reconcile_decoded(obj, ctx, store::CONTROLLER, store::reconcile),
            |obj, error, ctx| decode::error_policy::<KVStore>(store::CONTROLLER, &obj, error, &ctx),
            ctx.clone(),
        )
        .for_each(|result| async move {
            if let Err(e) = result {
                tracing::debug!(error = %e, "kvstore controller");
            }
        });
    let (bench_api, bench_resource) = dynamic_api::<KVStoreBenchmark>(&client, &scope);
    let benches = Controller::new_with(bench_api, wc(), bench_resource)
        .owns(api::<Job>(&client, &scope), wc())
        .graceful_shutdown_on(signal(rx.clone()))
        .run(
            |obj, ctx| decode::reconcile_decoded(obj, ctx, benchmark::CONTROLLER, benchmark::reconcile),
            |obj, error, ctx| decode::error_policy::<KVStoreBenchmark>(benchmark::CONTROLLER, &obj, error, &ctx),
            ctx,
        )
        .for_each(|result| async move {
            if let Err(e) = result {
                tracing::debug!(error = %e, "benchmark controller");
            }
        });
    tokio::spawn(async move {
        shutdown.await;
        tracing::info!("shutting down: finishing in-flight reconciles");
        let _ = tx.send(true);
    });
    let deadline = async move {
        signal(rx).await;
        tokio::time::sleep(shutdown_timeout).await;
    };
    metrics.ready.store(true, Ordering::Relaxed);
    tokio::select! {
        _ = futures::future::join(stores, benches) => {}
        _ = deadline => {
            tracing::warn!(timeout_s = shutdown_timeout.as_secs(), "the controllers did not stop in time; stopping anyway");
        }
    }
    metrics.ready.store(false, Ordering::Relaxed);
}

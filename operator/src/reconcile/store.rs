//! Reconciles a `KVStore` into its ConfigMap, Services, StatefulSet and PodDisruptionBudget,
//! then reports readiness, endpoints, the chosen volume and conditions in its status.

use std::sync::Arc;
use std::time::{Duration, Instant};

use cairn_crds::{parse_binary_bytes, Endpoints, KVStore, KVStoreStatus, VolumeStatus};
use k8s_openapi::api::apps::v1::StatefulSet;
use k8s_openapi::api::core::v1::{ConfigMap, PersistentVolumeClaim, Service};
use k8s_openapi::api::policy::v1::PodDisruptionBudget;
use kube::api::{DeleteParams, Patch, PatchParams};
use kube::runtime::controller::Action;
use kube::runtime::events::{Event, EventType};
use kube::{Api, ResourceExt};

use super::{apply, apply_status};
use crate::builders;
use crate::conditions::{self, is_true, Want, DEGRADED, PROGRESSING, READY};
use crate::context::{key, Context};
use crate::labels::{client_service_name, service_dns, DATA_VOLUME};
use crate::sizing::VolumePlan;
use crate::validate::{resolve, InvalidSpec};
use crate::Error;

pub const CONTROLLER: &str = "kvstore";
/// Requeue while pods are not all ready.
pub const REQUEUE_PROGRESSING: Duration = Duration::from_secs(30);
/// Requeue of a healthy store (a resync; owned objects' changes trigger reconciles anyway).
pub const REQUEUE_STEADY: Duration = Duration::from_secs(300);

/// Entry point of the KVStore controller.
pub async fn reconcile(store: Arc<KVStore>, ctx: Arc<Context>) -> Result<Action, Error> {
    let started = Instant::now();
    let result = reconcile_inner(&store, &ctx).await;
    let failure = result.as_ref().err().map(Error::metric_label);
    ctx.metrics.observe(CONTROLLER, started.elapsed(), failure);
    if result.is_ok() {
        ctx.succeeded(&key(store.as_ref()));
    }
    result
}

/// Error policy of the KVStore controller.
pub fn error_policy(store: Arc<KVStore>, error: &Error, ctx: Arc<Context>) -> Action {
    crate::context::error_action(CONTROLLER, store.as_ref(), error, &ctx)
}

/// The volume the StatefulSet's claim template keeps, and the size existing claims must grow to.
///
/// Claim templates are immutable and volumes cannot shrink: once a size and class are in the
/// status, the template keeps them; a larger new plan expands the existing claims instead.
pub fn settle_volume(plan: VolumePlan, previous: Option<&VolumeStatus>) -> (VolumePlan, Option<String>) {
    let Some(prev) = previous else {
        return (plan, None);
    };
    let prev_bytes = parse_binary_bytes(&prev.size).unwrap_or(0);
    let mut kept = plan.clone();
    kept.storage_class = prev.storage_class_name.clone();
    if plan.storage_class != prev.storage_class_name {
        kept.reason = format!(
            "{}; storage class kept at {} (a volume's class cannot change)",
            kept.reason, prev.storage_class_name
        );
    }
    if plan.size_bytes > prev_bytes {
        kept.size = prev.size.clone();
        kept.size_bytes = prev_bytes;
        kept.reason = format!("{}; existing claims expanded from {}", plan.reason, prev.size);
        (kept, Some(plan.size))
    } else {
        if plan.size_bytes < prev_bytes {
            kept.reason = format!("{}; kept at {} (volumes cannot shrink)", plan.reason, prev.size);
        }
        kept.size = prev.size.clone();
        kept.size_bytes = prev_bytes;
        (kept, None)
    }
}

async fn reconcile_inner(store: &KVStore, ctx: &Context) -> Result<Action, Error> {
    let namespace = store.namespace().ok_or(Error::MissingField("metadata.namespace"))?;
    let name = store.name_any();
    let client = ctx.client.clone();
    let stores: Api<KVStore> = Api::namespaced(client.clone(), &namespace);
    let previous = store.status.clone().unwrap_or_default();
    let generation = store.metadata.generation;

    let resolved = match resolve(store) {
        Ok(r) => r,
        Err(InvalidSpec(message)) => {
            return report_invalid(store, ctx, &stores, &previous, message).await;
        }
    };
    let (volume, expand_to) = settle_volume(resolved.volume, previous.volume.as_ref());

    let config_maps: Api<ConfigMap> = Api::namespaced(client.clone(), &namespace);
    apply(&config_maps, &builders::configmap::build(store)).await?;
    let services: Api<Service> = Api::namespaced(client.clone(), &namespace);
    apply(&services, &builders::service_headless::build(store)).await?;
    apply(&services, &builders::service_client::build(store)).await?;
    let statefulsets: Api<StatefulSet> = Api::namespaced(client.clone(), &namespace);
    let sts = apply(&statefulsets, &builders::statefulset::build(store, &volume)).await?;
    let pdbs: Api<PodDisruptionBudget> = Api::namespaced(client.clone(), &namespace);
    match builders::pdb::build(store) {
        Some(pdb) => {
            apply(&pdbs, &pdb).await?;
        }
        None => match pdbs.delete(&name, &DeleteParams::default()).await {
            Ok(_) => {}
            Err(kube::Error::Api(status)) if status.code == 404 => {}
            Err(e) => return Err(e.into()),
        },
    }
    if let Some(size) = &expand_to {
        expand_claims(ctx, store, &namespace, size).await?;
    }

    let sts_status = sts.status.clone().unwrap_or_default();
    let ready = sts_status.ready_replicas.unwrap_or(0);
    let wanted = store.spec.replicas;
    let rolled =
        sts_status.observed_generation >= sts.metadata.generation && sts_status.updated_replicas.unwrap_or(0) >= wanted;
    let is_ready = ready >= wanted;
    let progressing = !is_ready || !rolled;
    let wants = [
        Want {
            type_: READY,
            status: is_ready,
            reason: if is_ready { "AllReplicasReady" } else { "ReplicasNotReady" },
            message: format!("{ready}/{wanted} pods ready"),
        },
        Want {
            type_: PROGRESSING,
            status: progressing,
            reason: if progressing { "RollingOut" } else { "RolloutComplete" },
            message: if progressing {
                format!("StatefulSet {name}: {ready}/{wanted} ready, rollout in progress")
            } else {
                format!("StatefulSet {name} is up to date")
            },
        },
        Want { type_: DEGRADED, status: false, reason: "AsExpected", message: "the spec is valid and applied".into() },
    ];
    let svc = service_dns(&client_service_name(&name), &namespace);
    let ports = &store.spec.ports;
    let status = KVStoreStatus {
        observed_generation: generation,
        ready_replicas: ready,
        endpoints: Some(Endpoints {
            resp: format!("{svc}:{}", ports.resp),
            native: format!("{svc}:{}", ports.native),
            admin: format!("{svc}:{}", ports.admin),
        }),
        volume: Some(VolumeStatus {
            size: expand_to.clone().unwrap_or_else(|| volume.size.clone()),
            storage_class_name: volume.storage_class.clone(),
            fsync_class: store.spec.fsync_class.to_string(),
            model_iops: volume.model_iops,
            model_throughput_mibps: volume.model_mibps,
            reason: volume.reason.clone(),
        }),
        conditions: conditions::settle(&previous.conditions, &wants, generation),
    };
    apply_status(&stores, &name, serde_json::to_value(&status)?).await?;

    if previous.observed_generation.is_none() {
        let note = format!("created StatefulSet {name} with a {} volume on {}", volume.size, volume.storage_class);
        ctx.event(store, normal("Created", "Apply", note)).await;
    }
    if is_ready && !is_true(&previous.conditions, READY) {
        ctx.event(store, normal("Ready", "Rollout", format!("{ready}/{wanted} pods ready"))).await;
    }
    if let Some(shortfall) = &volume.shortfall {
        let old_reason = previous.volume.as_ref().map(|v| v.reason.as_str());
        if old_reason != Some(volume.reason.as_str()) {
            ctx.event(store, warning("VolumeUnderProvisioned", "Size", shortfall.clone())).await;
        }
    }
    Ok(Action::requeue(if progressing { REQUEUE_PROGRESSING } else { REQUEUE_STEADY }))
}

async fn report_invalid(
    store: &KVStore,
    ctx: &Context,
    stores: &Api<KVStore>,
    previous: &KVStoreStatus,
    message: String,
) -> Result<Action, Error> {
    let generation = store.metadata.generation;
    let wants = [
        Want {
            type_: READY,
            status: is_true(&previous.conditions, READY),
            reason: "InvalidSpec",
            message: "the spec is invalid; the last valid state is kept".into(),
        },
        Want { type_: PROGRESSING, status: false, reason: "InvalidSpec", message: "waiting for a valid spec".into() },
        Want { type_: DEGRADED, status: true, reason: "InvalidSpec", message: message.clone() },
    ];
    let status = KVStoreStatus {
        observed_generation: generation,
        conditions: conditions::settle(&previous.conditions, &wants, generation),
        ..previous.clone()
    };
    apply_status(stores, &store.name_any(), serde_json::to_value(&status)?).await?;
    let already = previous
        .conditions
        .iter()
        .any(|c| c.type_ == DEGRADED && c.message == message && c.observed_generation == generation);
    if !already {
        ctx.event(store, warning("InvalidSpec", "Validate", message)).await;
    }
    Ok(Action::await_change())
}

/// Grows the existing data claims (`data-<store>-<ordinal>`) to `size`.
async fn expand_claims(ctx: &Context, store: &KVStore, namespace: &str, size: &str) -> Result<(), Error> {
    let claims: Api<PersistentVolumeClaim> = Api::namespaced(ctx.client.clone(), namespace);
    let patch = serde_json::json!({"spec": {"resources": {"requests": {"storage": size}}}});
    for ordinal in 0..store.spec.replicas {
        let claim = format!("{DATA_VOLUME}-{}-{ordinal}", store.name_any());
        match claims.patch(&claim, &PatchParams::default(), &Patch::Merge(&patch)).await {
            Ok(_) => {
                let note = format!("expanding {claim} to {size}");
                ctx.event(store, normal("VolumeExpanding", "Resize", note)).await;
            }
            Err(kube::Error::Api(status)) if status.code == 404 => {}
            Err(e) => return Err(e.into()),
        }
    }
    Ok(())
}

fn normal(reason: &str, action: &str, note: String) -> Event {
    Event { type_: EventType::Normal, reason: reason.into(), note: Some(note), action: action.into(), secondary: None }
}

fn warning(reason: &str, action: &str, note: String) -> Event {
    Event { type_: EventType::Warning, ..normal(reason, action, note) }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sizing::{plan_volume, SizingInput};
    use cairn_crds::{Durability, FsyncClass};

    fn plan(acks: u32) -> VolumePlan {
        plan_volume(&SizingInput {
            fsync_class: FsyncClass::PremiumSsd,
            durability: Durability::Sync,
            target_acks_per_sec: Some(acks),
            ..SizingInput::default()
        })
    }

    fn status_of(p: &VolumePlan) -> VolumeStatus {
        VolumeStatus { size: p.size.clone(), storage_class_name: p.storage_class.clone(), ..VolumeStatus::default() }
    }

    #[test]
    fn a_first_plan_is_taken_as_is() {
        let (kept, expand) = settle_volume(plan(10_000), None);
        assert_eq!(kept.size, "167Gi");
        assert_eq!(expand, None);
    }

    #[test]
    fn a_smaller_plan_keeps_the_volume() {
        let big = plan(10_000);
        let (kept, expand) = settle_volume(plan(100), Some(&status_of(&big)));
        assert_eq!(kept.size, "167Gi");
        assert_eq!(expand, None);
        assert!(kept.reason.contains("cannot shrink"), "{}", kept.reason);
    }

    #[test]
    fn a_larger_plan_expands_the_claims_but_not_the_template() {
        let small = plan(100);
        let (kept, expand) = settle_volume(plan(10_000), Some(&status_of(&small)));
        assert_eq!(expand.as_deref(), Some("167Gi"));
        assert_eq!(kept.size, "10Gi", "the claim template is immutable");
    }
}

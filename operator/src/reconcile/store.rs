//! Reconciles a `KVStore` into its ConfigMap, Services, StatefulSet and PodDisruptionBudget,
//! then reports readiness, endpoints, the chosen volume and conditions in its status.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use cairn_crds::{parse_binary_bytes, Endpoints, KVStore, KVStoreStatus, VolumeStatus};
use k8s_openapi::api::apps::v1::StatefulSet;
use k8s_openapi::api::core::v1::{
    ConfigMap, PersistentVolumeClaim, PersistentVolumeClaimSpec, Pod, Service, VolumeResourceRequirements,
};
use k8s_openapi::api::policy::v1::PodDisruptionBudget;
use k8s_openapi::apimachinery::pkg::api::resource::Quantity;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use kube::api::{DeleteParams, ListParams};
use kube::runtime::controller::Action;
use kube::runtime::events::{Event, EventType};
use kube::{Api, ResourceExt};

use super::pods::PodTrouble;
use super::{apply, apply_status};
use crate::builders;
use crate::conditions::{self, is_true, Want, DEGRADED, PROGRESSING, READY};
use crate::config_change;
use crate::context::{key, Context};
use crate::labels::{
    client_service_name, config_map_name, selector_labels, service_dns, CONFIG_HASH_ANNOTATION, DATA_VOLUME,
};
use crate::sizing::VolumePlan;
use crate::store_contract::CONFIG_FILE_NAME;
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

/// The data volume a live StatefulSet's claim template asks for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ClaimTemplate {
    /// The template's storage request, e.g. `10Gi`.
    pub size: String,
    /// The template's storage class.
    pub storage_class: String,
}

impl ClaimTemplate {
    /// The `data` claim template of an existing StatefulSet, if it has one.
    pub fn of(sts: &StatefulSet) -> Option<ClaimTemplate> {
        let claim = sts
            .spec
            .as_ref()?
            .volume_claim_templates
            .as_ref()?
            .iter()
            .find(|c| c.metadata.name.as_deref() == Some(DATA_VOLUME))?;
        let spec = claim.spec.as_ref()?;
        let size = spec.resources.as_ref()?.requests.as_ref()?.get("storage")?.0.clone();
        Some(ClaimTemplate { size, storage_class: spec.storage_class_name.clone().unwrap_or_default() })
    }
}

/// What a reconcile does with the data volume.
#[derive(Debug, Clone, PartialEq)]
pub struct SettledVolume {
    /// What the StatefulSet's claim template carries: an existing template exactly as it is
    /// (claim templates are immutable), otherwise the plan.
    pub template: VolumePlan,
    /// The size the claims have or are being expanded to (reported in `status.volume.size`).
    pub size: String,
    /// Set when the claims must grow to a larger plan.
    pub expand_to: Option<String>,
}

/// Decides the claim template, the claims' size and any expansion from the new `plan`, the
/// last reported volume (`previous`) and the live StatefulSet's claim template (`existing`).
///
/// Claim templates are immutable and volumes cannot shrink: a template, once created, is kept
/// as it is; a larger plan expands the existing claims (and is reported as the size); a smaller
/// one is ignored, and the reason says so. The storage class of a volume never changes.
pub fn settle_volume(
    plan: VolumePlan,
    previous: Option<&VolumeStatus>,
    existing: Option<&ClaimTemplate>,
) -> SettledVolume {
    let bytes = |size: &str| parse_binary_bytes(size).unwrap_or(0);
    // The largest size the claims are known to have been given.
    let current = [previous.map(|p| p.size.as_str()), existing.map(|t| t.size.as_str())]
        .into_iter()
        .flatten()
        .max_by_key(|size| bytes(size))
        .map(str::to_string);
    let class = existing
        .map(|t| t.storage_class.clone())
        .or_else(|| previous.map(|p| p.storage_class_name.clone()))
        .unwrap_or_else(|| plan.storage_class.clone());

    let mut template = plan.clone();
    if class != plan.storage_class {
        template.reason = format!("{}; storage class kept at {class} (a volume's class cannot change)", plan.reason);
    }
    template.storage_class = class;
    let Some(current) = current else {
        let size = template.size.clone();
        return SettledVolume { template, size, expand_to: None };
    };
    let current_bytes = bytes(&current);
    let (size, expand_to) = if plan.size_bytes > current_bytes {
        template.reason = format!("{}; existing claims expanded from {current}", template.reason);
        (plan.size.clone(), Some(plan.size.clone()))
    } else {
        if plan.size_bytes < current_bytes {
            template.reason = format!("{}; kept at {current} (volumes cannot shrink)", template.reason);
        }
        (current.clone(), None)
    };
    // The template itself: the live one as it is, or (when the StatefulSet is gone but its
    // claims remain) the size the claims have.
    template.size = existing.map_or(current, |t| t.size.clone());
    template.size_bytes = bytes(&template.size);
    SettledVolume { template, size, expand_to }
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
    let statefulsets: Api<StatefulSet> = Api::namespaced(client.clone(), &namespace);
    let live_sts = statefulsets.get_opt(&name).await?;
    let existing = live_sts.as_ref().and_then(ClaimTemplate::of);
    let settled = settle_volume(resolved.volume, previous.volume.as_ref(), existing.as_ref());
    let volume = &settled.template;
    let expand_to = settled.expand_to.clone();

    let config_maps: Api<ConfigMap> = Api::namespaced(client.clone(), &namespace);
    let config_map = builders::configmap::build(store);
    let config_before = config_maps.get_opt(&config_map_name(&name)).await?.and_then(config_file_of);
    apply(&config_maps, &config_map).await?;
    let services: Api<Service> = Api::namespaced(client.clone(), &namespace);
    apply(&services, &builders::service_headless::build(store)).await?;
    apply(&services, &builders::service_client::build(store)).await?;
    let built_sts = builders::statefulset::build(store, volume);
    let applied_live = config_before.as_deref().map_or_else(Vec::new, |before| {
        let after = builders::configmap::config_text(store);
        config_change::applied_live(before, &after, config_hash(live_sts.as_ref()), config_hash(Some(&built_sts)))
    });
    let sts = apply(&statefulsets, &built_sts).await?;
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
    // Pods are looked at only while the store is not settled: then they say why.
    let trouble = if progressing { pod_trouble(ctx, &namespace, &name).await? } else { None };
    let degraded = match &trouble {
        Some(t) => Want { type_: DEGRADED, status: true, reason: t.reason, message: t.message.clone() },
        None => Want {
            type_: DEGRADED,
            status: false,
            reason: "AsExpected",
            message: "the spec is valid and applied".into(),
        },
    };
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
        degraded,
    ];
    let svc = service_dns(&client_service_name(&name), &namespace);
    let ports = &store.spec.ports;
    let status = KVStoreStatus {
        observed_generation: generation,
        ready_replicas: ready,
        endpoints: Some(Endpoints {
            resp: format!("{svc}:{}", ports.resp),
            native: store.spec.tls_secret.is_none().then(|| format!("{svc}:{}", ports.native)),
            admin: format!("{svc}:{}", ports.admin),
        }),
        volume: Some(VolumeStatus {
            size: settled.size.clone(),
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
        let note = format!("created StatefulSet {name} with a {} volume on {}", settled.size, volume.storage_class);
        ctx.event(store, normal("Created", "Apply", note)).await;
    }
    if is_ready && !is_true(&previous.conditions, READY) {
        ctx.event(store, normal("Ready", "Rollout", format!("{ready}/{wanted} pods ready"))).await;
    }
    if let Some(t) = &trouble {
        let reported = previous.conditions.iter().any(|c| c.type_ == DEGRADED && c.message == t.message);
        if !reported {
            ctx.event(store, warning(t.reason, "Run", t.message.clone())).await;
        }
    }
    if let Some(note) = config_change::applied_live_note(&applied_live) {
        ctx.event(store, normal("ConfigAppliedLive", "Reconfigure", note)).await;
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

/// The first trouble among the store's pods (see [`super::pods`]).
async fn pod_trouble(ctx: &Context, namespace: &str, name: &str) -> Result<Option<PodTrouble>, Error> {
    let pods: Api<Pod> = Api::namespaced(ctx.client.clone(), namespace);
    let selector = selector_labels(name).iter().map(|(k, v)| format!("{k}={v}")).collect::<Vec<_>>().join(",");
    let listed = pods.list(&ListParams::default().labels(&selector)).await?;
    Ok(super::pods::trouble(&listed.items))
}

/// Grows the existing data claims (`data-<store>-<ordinal>`) that ask for less than `size`.
/// A claim that already asks for as much or more is left alone (a volume cannot shrink, and
/// the API server rejects a smaller request); a missing claim is not an error.
async fn expand_claims(ctx: &Context, store: &KVStore, namespace: &str, size: &str) -> Result<(), Error> {
    let claims: Api<PersistentVolumeClaim> = Api::namespaced(ctx.client.clone(), namespace);
    let wanted = parse_binary_bytes(size).unwrap_or(0);
    let claim_size = |name: &str| PersistentVolumeClaim {
        metadata: ObjectMeta { name: Some(name.to_string()), ..ObjectMeta::default() },
        spec: Some(PersistentVolumeClaimSpec {
            resources: Some(VolumeResourceRequirements {
                requests: Some(BTreeMap::from([("storage".to_string(), Quantity(size.to_string()))])),
                ..VolumeResourceRequirements::default()
            }),
            ..PersistentVolumeClaimSpec::default()
        }),
        ..PersistentVolumeClaim::default()
    };
    for ordinal in 0..store.spec.replicas {
        let claim = format!("{DATA_VOLUME}-{}-{ordinal}", store.name_any());
        let Some(existing) = claims.get_opt(&claim).await? else {
            continue;
        };
        let requested = existing
            .spec
            .and_then(|s| s.resources)
            .and_then(|r| r.requests)
            .and_then(|r| r.get("storage").map(|q| q.0.clone()));
        // A size the operator did not write (not `<n>Mi|Gi|Ti`) is patched: the API server
        // refuses a shrink, which then shows up as a failed reconcile.
        if requested.as_deref().and_then(|q| parse_binary_bytes(q).ok()).is_some_and(|have| have >= wanted) {
            continue;
        }
        // Server-side apply of the one field, under the operator's field manager.
        apply(&claims, &claim_size(&claim)).await?;
        let note = format!("expanding {claim} to {size}");
        ctx.event(store, normal("VolumeExpanding", "Resize", note)).await;
    }
    Ok(())
}

/// The config file a ConfigMap holds.
fn config_file_of(config_map: ConfigMap) -> Option<String> {
    config_map.data?.remove(CONFIG_FILE_NAME)
}

/// The config hash a StatefulSet's pod template carries (a change of it rolls the pods).
fn config_hash(sts: Option<&StatefulSet>) -> Option<&str> {
    let template = sts?.spec.as_ref()?.template.metadata.as_ref()?;
    template.annotations.as_ref()?.get(CONFIG_HASH_ANNOTATION).map(String::as_str)
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

    fn template_of(p: &VolumePlan) -> ClaimTemplate {
        ClaimTemplate { size: p.size.clone(), storage_class: p.storage_class.clone() }
    }

    #[test]
    fn a_first_plan_is_taken_as_is() {
        let settled = settle_volume(plan(10_000), None, None);
        assert_eq!((settled.template.size.as_str(), settled.size.as_str()), ("167Gi", "167Gi"));
        assert_eq!(settled.expand_to, None);
    }

    #[test]
    fn a_smaller_plan_keeps_the_volume() {
        let big = plan(10_000);
        let settled = settle_volume(plan(100), Some(&status_of(&big)), Some(&template_of(&big)));
        assert_eq!((settled.template.size.as_str(), settled.size.as_str()), ("167Gi", "167Gi"));
        assert_eq!(settled.expand_to, None);
        assert!(settled.template.reason.contains("cannot shrink"), "{}", settled.template.reason);
    }

    #[test]
    fn a_larger_plan_expands_the_claims_but_not_the_template() {
        let small = plan(100);
        let settled = settle_volume(plan(10_000), Some(&status_of(&small)), Some(&template_of(&small)));
        assert_eq!(settled.expand_to.as_deref(), Some("167Gi"));
        assert_eq!(settled.size, "167Gi");
        assert_eq!(settled.template.size, "10Gi", "the claim template is immutable");
    }

    #[test]
    fn after_an_expansion_the_template_stays_as_created() {
        // The reconcile after an expansion: the status says 167Gi, the live template 10Gi. The
        // StatefulSet must be applied with 10Gi again (a real API server rejects a change).
        let small = plan(100);
        let big = plan(10_000);
        let settled = settle_volume(plan(10_000), Some(&status_of(&big)), Some(&template_of(&small)));
        assert_eq!(settled.template.size, "10Gi");
        assert_eq!(settled.size, "167Gi");
        assert_eq!(settled.expand_to, None);
    }

    #[test]
    fn the_storage_class_of_a_live_template_wins() {
        let mut other = plan(100);
        other.storage_class = "gp3".into();
        let settled = settle_volume(plan(100), None, Some(&template_of(&other)));
        assert_eq!(settled.template.storage_class, "gp3");
        assert!(settled.template.reason.contains("storage class kept at gp3"), "{}", settled.template.reason);
    }

    #[test]
    fn without_a_statefulset_the_template_takes_the_claims_size() {
        let big = plan(10_000);
        let settled = settle_volume(plan(100), Some(&status_of(&big)), None);
        assert_eq!((settled.template.size.as_str(), settled.size.as_str()), ("167Gi", "167Gi"));
    }

    #[test]
    fn reads_the_claim_template_of_a_statefulset() {
        let store = crate::testdata::store("demo");
        let p = plan(100);
        let sts = crate::builders::statefulset::build(&store, &p);
        assert_eq!(ClaimTemplate::of(&sts), Some(template_of(&p)));
        assert_eq!(ClaimTemplate::of(&StatefulSet::default()), None);
    }
}

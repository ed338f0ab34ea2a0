//! Decoding watched objects one at a time.
//!
//! The controllers watch `KVStore` and `KVStoreBenchmark` as [`DynamicObject`]s and decode each
//! object when it is reconciled. A typed watch would fail its whole list on one object this
//! operator cannot decode (written against a newer CRD during an upgrade, or stored by an API
//! server that checks no schema), and stall every object of the kind; here that one object is
//! reported in its own status (Degraded, reason `InvalidSpec`) and an Event, and the others go on.

use std::future::Future;
use std::sync::Arc;
use std::time::Instant;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::Condition;
use kube::api::{ApiResource, DynamicObject, Patch, PatchParams};
use kube::runtime::controller::Action;
use kube::runtime::events::{Event, EventType};
use kube::{Api, Resource};
use serde::de::DeserializeOwned;

use crate::conditions::{self, Want, DEGRADED};
use crate::context::{key_of, retry, Context};
use crate::labels::FIELD_MANAGER;
use crate::Error;

/// The Event reason (and Degraded reason) of an object that cannot be decoded.
pub const REASON: &str = "InvalidSpec";

/// Decodes a watched object into its typed form.
pub fn decode<K: DeserializeOwned>(obj: &DynamicObject) -> Result<K, serde_json::Error> {
    serde_json::from_value(serde_json::to_value(obj)?)
}

/// Reconciles `obj` with `reconcile` once decoded, or reports why it cannot be decoded.
pub async fn reconcile_decoded<K, F, Fut>(
    obj: Arc<DynamicObject>,
    ctx: Arc<Context>,
    controller: &'static str,
    reconcile: F,
) -> Result<Action, Error>
where
    K: Resource<DynamicType = ()> + DeserializeOwned,
    F: FnOnce(Arc<K>, Arc<Context>) -> Fut,
    Fut: Future<Output = Result<Action, Error>>,
{
    match decode::<K>(&obj) {
        Ok(typed) => reconcile(Arc::new(typed), ctx).await,
        Err(error) => {
            let started = Instant::now();
            let result = report_undecodable::<K>(&obj, &ctx, &error).await;
            let failure = result.as_ref().err().map(Error::metric_label);
            ctx.metrics.observe(controller, started.elapsed(), failure);
            result
        }
    }
}

/// Error policy of a controller over [`DynamicObject`]s of kind `K`: as the typed one.
pub fn error_policy<K: Resource<DynamicType = ()>>(
    controller: &str,
    obj: &DynamicObject,
    error: &Error,
    ctx: &Context,
) -> Action {
    let key = key_of(&K::kind(&()), obj.metadata.namespace.as_deref(), obj.metadata.name.as_deref().unwrap_or(""));
    retry(controller, &key, error, ctx)
}

/// The status written for an object that cannot be decoded: the status it had (as stored),
/// with `observedGeneration` and a Degraded condition carrying `message`; its other conditions
/// are kept.
pub fn undecodable_status(obj: &DynamicObject, message: &str) -> serde_json::Value {
    let mut status =
        obj.data.get("status").cloned().filter(serde_json::Value::is_object).unwrap_or_else(|| serde_json::json!({}));
    let previous: Vec<Condition> =
        status.get("conditions").and_then(|c| serde_json::from_value(c.clone()).ok()).unwrap_or_default();
    let generation = obj.metadata.generation;
    let degraded = Want { type_: DEGRADED, status: true, reason: REASON, message: message.to_string() };
    let mut conditions: Vec<Condition> = previous.iter().filter(|c| c.type_ != DEGRADED).cloned().collect();
    conditions.extend(conditions::settle(&previous, &[degraded], generation));
    status["observedGeneration"] = serde_json::json!(generation);
    status["conditions"] = serde_json::to_value(conditions).unwrap_or_default();
    status
}

async fn report_undecodable<K: Resource<DynamicType = ()>>(
    obj: &DynamicObject,
    ctx: &Context,
    error: &serde_json::Error,
) -> Result<Action, Error> {
    let resource = ApiResource::erase::<K>(&());
    let namespace = obj.metadata.namespace.clone().ok_or(Error::MissingField("metadata.namespace"))?;
    let name = obj.metadata.name.clone().ok_or(Error::MissingField("metadata.name"))?;
    let message = format!(
        "this operator cannot read the object: {error} (fix the field, or run the operator version that \
         matches the installed CRD)"
    );
    let already = obj
        .data
        .get("status")
        .and_then(|s| s.get("conditions"))
        .and_then(|c| serde_json::from_value::<Vec<Condition>>(c.clone()).ok())
        .is_some_and(|cs| {
            cs.iter().any(|c| {
                c.type_ == DEGRADED && c.message == message && c.observed_generation == obj.metadata.generation
            })
        });
    let body = serde_json::json!({
        "apiVersion": resource.api_version,
        "kind": resource.kind,
        "status": undecodable_status(obj, &message),
    });
    let api: Api<DynamicObject> = Api::namespaced_with(ctx.client.clone(), &namespace, &resource);
    api.patch_status(&name, &PatchParams::apply(FIELD_MANAGER).force(), &Patch::Apply(&body)).await?;
    if !already {
        let event = Event {
            type_: EventType::Warning,
            reason: REASON.into(),
            note: Some(message),
            action: "Decode".into(),
            secondary: None,
        };
        if let Err(e) = ctx.recorder.publish(&event, &obj.object_ref(&resource)).await {
            tracing::warn!(error = %e, "publishing an event failed");
        }
    }
    tracing::warn!(kind = %resource.kind, %namespace, %name, %error, "cannot decode the object");
    Ok(Action::await_change())
}

#[cfg(test)]
mod tests {
    use super::*;
    use cairn_crds::KVStore;

    fn dynamic(value: serde_json::Value) -> DynamicObject {
        serde_json::from_value(value).unwrap_or_else(|e| panic!("dynamic object: {e}"))
    }

    #[test]
    fn decodes_a_valid_object_and_reports_an_invalid_one() {
        let good = dynamic(serde_json::json!({"apiVersion": "cairn.io/v1alpha1", "kind": "KVStore",
            "metadata": {"name": "demo", "namespace": "default"}, "spec": {"cpus": 2}}));
        let store: KVStore = decode(&good).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(store.spec.cpus, 2);
        let bad = dynamic(serde_json::json!({"apiVersion": "cairn.io/v1alpha1", "kind": "KVStore",
            "metadata": {"name": "demo", "namespace": "default"}, "spec": {"cpus": "two"}}));
        let error = decode::<KVStore>(&bad).expect_err("a string where an integer belongs");
        assert!(error.to_string().contains("invalid type"), "{error}");
    }

    #[test]
    fn the_status_keeps_what_it_had_and_adds_degraded() {
        let obj = dynamic(serde_json::json!({"apiVersion": "cairn.io/v1alpha1", "kind": "KVStore",
            "metadata": {"name": "demo", "namespace": "default", "generation": 3},
            "spec": {"durability": "strict"},
            "status": {"readyReplicas": 1, "volume": {"size": "10Gi"}, "conditions": [
                {"type": "Ready", "status": "True", "reason": "AllReplicasReady", "message": "1/1",
                 "lastTransitionTime": "2026-01-01T00:00:00Z"}]}}));
        let status = undecodable_status(&obj, "cannot read");
        assert_eq!(status["observedGeneration"], 3);
        assert_eq!(status["volume"]["size"], "10Gi");
        let conditions = status["conditions"].as_array().cloned().unwrap_or_default();
        assert!(conditions.iter().any(|c| c["type"] == "Ready" && c["status"] == "True"), "{status}");
        assert!(
            conditions.iter().any(|c| c["type"] == "Degraded" && c["status"] == "True" && c["reason"] == REASON),
            "{status}"
        );
    }
}

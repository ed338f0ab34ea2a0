//! What every reconcile shares: the client, the event recorder, metrics and retry counters.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use kube::runtime::controller::Action;
use kube::runtime::events::{Event, Recorder, Reporter};
use kube::{Client, Resource, ResourceExt};

use crate::labels::FIELD_MANAGER;
use crate::metrics::Metrics;

/// First retry delay after a failed reconcile; doubles per consecutive failure.
pub const BACKOFF_BASE: Duration = Duration::from_secs(2);
/// Longest retry delay.
pub const BACKOFF_MAX: Duration = Duration::from_secs(300);

pub struct Context {
    pub client: Client,
    pub recorder: Recorder,
    pub metrics: Arc<Metrics>,
    failures: Mutex<HashMap<String, u32>>,
}

impl Context {
    pub fn new(client: Client, metrics: Arc<Metrics>) -> Self {
        let reporter = Reporter { controller: FIELD_MANAGER.into(), instance: std::env::var("POD_NAME").ok() };
        Context {
            recorder: Recorder::new(client.clone(), reporter),
            client,
            metrics,
            failures: Mutex::new(HashMap::new()),
        }
    }

    /// Publishes an Event about `obj`; a failure to publish is logged, never fatal.
    pub async fn event<K: Resource<DynamicType = ()>>(&self, obj: &K, event: Event) {
        let reference = obj.object_ref(&());
        if let Err(e) = self.recorder.publish(&event, &reference).await {
            tracing::warn!(error = %e, reason = %event.reason, "publishing an event failed");
        }
    }

    /// The retry delay after one more failure of the object `key`.
    pub fn backoff(&self, key: &str) -> Duration {
        let mut failures = self.failures.lock().unwrap_or_else(|p| p.into_inner());
        let n = failures.entry(key.to_string()).or_insert(0);
        *n = n.saturating_add(1);
        backoff_delay(*n)
    }

    /// Forgets the failures of `key` after a successful reconcile.
    pub fn succeeded(&self, key: &str) {
        let mut failures = self.failures.lock().unwrap_or_else(|p| p.into_inner());
        failures.remove(key);
    }
}

/// Exponential backoff: `BACKOFF_BASE * 2^(failures-1)`, capped at `BACKOFF_MAX`.
pub fn backoff_delay(failures: u32) -> Duration {
    let factor = 1u32 << failures.saturating_sub(1).min(16);
    BACKOFF_BASE.saturating_mul(factor).min(BACKOFF_MAX)
}

/// The key of an object in the retry table.
pub fn key<K: Resource<DynamicType = ()>>(obj: &K) -> String {
    key_of(&K::kind(&()), obj.namespace().as_deref(), &obj.name_any())
}

/// The key of the object `kind` `namespace/name` in the retry table (as [`key`] makes it).
pub fn key_of(kind: &str, namespace: Option<&str>, name: &str) -> String {
    format!("{kind}/{}/{name}", namespace.unwrap_or_default()).replace("//", "/")
}

/// Error policy shared by both controllers: log, count, and retry with backoff.
pub fn error_action<K: Resource<DynamicType = ()>>(
    controller: &str,
    obj: &K,
    error: &crate::Error,
    ctx: &Context,
) -> Action {
    retry(controller, &key(obj), error, ctx)
}

/// Logs a failed reconcile of the object `key` and schedules its retry with backoff.
pub fn retry(controller: &str, key: &str, error: &crate::Error, ctx: &Context) -> Action {
    let delay = ctx.backoff(key);
    tracing::warn!(controller, object = %key, error = %error, retry_in_s = delay.as_secs(), "reconcile failed");
    Action::requeue(delay)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn backoff_doubles_up_to_the_cap() {
        assert_eq!(backoff_delay(1), Duration::from_secs(2));
        assert_eq!(backoff_delay(2), Duration::from_secs(4));
        assert_eq!(backoff_delay(5), Duration::from_secs(32));
        assert_eq!(backoff_delay(30), BACKOFF_MAX);
    }
}

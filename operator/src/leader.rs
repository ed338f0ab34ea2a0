//! Optional leader election on a `coordination.k8s.io/v1` Lease, so that several operator
//! replicas can run with one active. The decision is a pure function ([`decide`]); the loop
//! around it creates or merge-patches the Lease with its `resourceVersion` as a precondition.
//! A leader that fails to renew within [`RENEW_DEADLINE`] (before the lease can expire) exits,
//! and is restarted as a follower; a leader that shuts down gracefully releases the Lease, so a
//! follower takes over at once instead of after [`LEASE_DURATION`].

use std::time::Duration;

use k8s_openapi::api::coordination::v1::{Lease, LeaseSpec};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{MicroTime, ObjectMeta};
use k8s_openapi::jiff::{SignedDuration, Timestamp};
use kube::api::{Patch, PatchParams, PostParams};
use kube::Api;

use crate::labels::FIELD_MANAGER;

/// How long a lease is valid without renewal.
pub const LEASE_DURATION: Duration = Duration::from_secs(15);
/// How often the leader renews (and a follower retries).
pub const RENEW_INTERVAL: Duration = Duration::from_secs(5);
/// How long a leader keeps leading without a successful renewal: shorter than
/// [`LEASE_DURATION`], so that it stops before another replica can take the lease.
pub const RENEW_DEADLINE: Duration = Duration::from_secs(10);

/// What to do with the Lease as it is now.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Decision {
    /// Nobody holds it, or the holder's lease expired: take it.
    Acquire,
    /// We hold it: renew.
    Renew,
    /// Someone else holds a live lease.
    Wait { holder: String },
}

/// Decides from the Lease spec (if any), our identity and the time now.
pub fn decide(spec: Option<&LeaseSpec>, identity: &str, now: Timestamp) -> Decision {
    let Some(spec) = spec else {
        return Decision::Acquire;
    };
    let holder = spec.holder_identity.clone().unwrap_or_default();
    if holder == identity {
        return Decision::Renew;
    }
    if holder.is_empty() {
        return Decision::Acquire;
    }
    let duration = i64::from(spec.lease_duration_seconds.unwrap_or(0));
    let renewed = spec.renew_time.as_ref().map(|t| t.0);
    match renewed {
        Some(at) if at + SignedDuration::from_secs(duration) > now => Decision::Wait { holder },
        _ => Decision::Acquire,
    }
}

/// Errors of the election loop.
#[derive(Debug, thiserror::Error)]
pub enum LeaderError {
    #[error("Lease API: {0}")]
    Kube(#[from] kube::Error),
    #[error("lost the lease to {0}")]
    Lost(String),
}

/// Holds the Lease `name` for `identity`.
pub struct Elector {
    api: Api<Lease>,
    name: String,
    identity: String,
}

impl Elector {
    pub fn new(api: Api<Lease>, name: &str, identity: &str) -> Self {
        Elector { api, name: name.into(), identity: identity.into() }
    }

    /// One round: returns whether we lead after it.
    pub async fn try_lead(&self) -> Result<bool, LeaderError> {
        let now = Timestamp::now();
        let current = self.api.get_opt(&self.name).await?;
        let decision = decide(current.as_ref().and_then(|l| l.spec.as_ref()), &self.identity, now);
        let spec = |acquired: bool, transitions: i32| LeaseSpec {
            holder_identity: Some(self.identity.clone()),
            lease_duration_seconds: Some(LEASE_DURATION.as_secs() as i32),
            renew_time: Some(MicroTime(now)),
            acquire_time: acquired.then_some(MicroTime(now)),
            lease_transitions: Some(transitions),
            ..LeaseSpec::default()
        };
        match (decision, current) {
            (Decision::Wait { holder }, _) => {
                tracing::debug!(%holder, "another replica leads");
                Ok(false)
            }
            (Decision::Acquire | Decision::Renew, None) => {
                let lease = Lease {
                    metadata: ObjectMeta { name: Some(self.name.clone()), ..ObjectMeta::default() },
                    spec: Some(spec(true, 0)),
                };
                match self.api.create(&PostParams::default(), &lease).await {
                    Ok(_) => Ok(true),
                    Err(kube::Error::Api(s)) if s.code == 409 => Ok(false),
                    Err(e) => Err(e.into()),
                }
            }
            (decision, Some(lease)) => {
                let transitions = lease.spec.as_ref().and_then(|s| s.lease_transitions).unwrap_or(0);
                let acquiring = decision == Decision::Acquire;
                let mut new_spec = spec(acquiring, transitions + i32::from(acquiring));
                if !acquiring {
                    new_spec.acquire_time = lease.spec.as_ref().and_then(|s| s.acquire_time.clone());
                }
                let patch = serde_json::json!({
                    "metadata": {"resourceVersion": lease.metadata.resource_version},
                    "spec": new_spec,
                });
                match self.api.patch(&self.name, &patch_params(), &Patch::Merge(&patch)).await {
                    Ok(_) => Ok(true),
                    Err(kube::Error::Api(s)) if s.code == 409 => Ok(false),
                    Err(e) => Err(e.into()),
                }
            }
        }
    }

    /// Waits until this replica leads.
    pub async fn acquire(&self) -> Result<(), LeaderError> {
        loop {
            if self.try_lead().await? {
                tracing::info!(lease = %self.name, identity = %self.identity, "leading");
                return Ok(());
            }
            tokio::time::sleep(RENEW_INTERVAL).await;
        }
    }

    /// Gives the Lease up if this replica holds it (on a graceful shutdown): the holder is
    /// cleared, with the Lease's `resourceVersion` as a precondition.
    pub async fn release(&self) -> Result<(), LeaderError> {
        let Some(lease) = self.api.get_opt(&self.name).await? else {
            return Ok(());
        };
        let holder = lease.spec.as_ref().and_then(|s| s.holder_identity.as_deref()).unwrap_or_default();
        if holder != self.identity {
            return Ok(());
        }
        let patch = serde_json::json!({
            "metadata": {"resourceVersion": lease.metadata.resource_version},
            "spec": {"holderIdentity": null, "leaseDurationSeconds": 1, "renewTime": MicroTime(Timestamp::now())},
        });
        self.api.patch(&self.name, &patch_params(), &Patch::Merge(&patch)).await?;
        tracing::info!(lease = %self.name, "released the lease");
        Ok(())
    }

    /// Renews forever; returns an error once the lease is lost or cannot be renewed in time.
    pub async fn keep(&self) -> LeaderError {
        let mut last_renewal = tokio::time::Instant::now();
        loop {
            tokio::time::sleep(RENEW_INTERVAL).await;
            match self.try_lead().await {
                Ok(true) => last_renewal = tokio::time::Instant::now(),
                Ok(false) => return LeaderError::Lost("another replica".into()),
                Err(e) if last_renewal.elapsed() >= RENEW_DEADLINE => return e,
                Err(e) => tracing::warn!(error = %e, "renewing the lease failed; retrying"),
            }
        }
    }
}

/// Patches of the Lease carry the operator's field manager.
fn patch_params() -> PatchParams {
    PatchParams { field_manager: Some(FIELD_MANAGER.into()), ..PatchParams::default() }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn held_by(holder: &str, renewed: Timestamp) -> LeaseSpec {
        LeaseSpec {
            holder_identity: Some(holder.into()),
            lease_duration_seconds: Some(15),
            renew_time: Some(MicroTime(renewed)),
            ..LeaseSpec::default()
        }
    }

    #[test]
    fn decisions() {
        let now = Timestamp::UNIX_EPOCH + SignedDuration::from_secs(1_000);
        assert_eq!(decide(None, "a", now), Decision::Acquire);
        assert_eq!(decide(Some(&held_by("a", now)), "a", now), Decision::Renew);
        let fresh = now - SignedDuration::from_secs(5);
        assert_eq!(decide(Some(&held_by("b", fresh)), "a", now), Decision::Wait { holder: "b".into() });
        let stale = now - SignedDuration::from_secs(16);
        assert_eq!(decide(Some(&held_by("b", stale)), "a", now), Decision::Acquire);
        assert_eq!(decide(Some(&held_by("", fresh)), "a", now), Decision::Acquire);
        // A released lease (no holder) is free at once.
        let released = LeaseSpec { holder_identity: None, ..held_by("b", now) };
        assert_eq!(decide(Some(&released), "a", now), Decision::Acquire);
    }

    #[test]
    fn a_leader_stops_before_its_lease_can_expire() {
        assert!(RENEW_INTERVAL < RENEW_DEADLINE && RENEW_DEADLINE < LEASE_DURATION);
    }
}

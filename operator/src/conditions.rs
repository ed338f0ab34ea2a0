//! Standard status conditions (Ready, Progressing, Degraded and the benchmark's own), keeping
//! `lastTransitionTime` when a condition's status does not change.

use k8s_openapi::apimachinery::pkg::apis::meta::v1::{Condition, Time};
use k8s_openapi::jiff::Timestamp;

pub const READY: &str = "Ready";
pub const PROGRESSING: &str = "Progressing";
pub const DEGRADED: &str = "Degraded";
pub const COMPLETE: &str = "Complete";
pub const FAILED: &str = "Failed";

/// A condition to set: type, status, reason (PascalCase) and message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Want<'a> {
    pub type_: &'a str,
    pub status: bool,
    pub reason: &'a str,
    pub message: String,
}

/// The conditions `wants` describe, at `generation`, carrying over transition times from
/// `previous` where the status is unchanged.
pub fn settle(previous: &[Condition], wants: &[Want<'_>], generation: Option<i64>) -> Vec<Condition> {
    let now = Time(Timestamp::now());
    wants
        .iter()
        .map(|w| {
            let status = if w.status { "True" } else { "False" };
            let last = previous
                .iter()
                .find(|c| c.type_ == w.type_ && c.status == status)
                .map(|c| c.last_transition_time.clone())
                .unwrap_or_else(|| now.clone());
            Condition {
                type_: w.type_.to_string(),
                status: status.to_string(),
                reason: w.reason.to_string(),
                message: w.message.clone(),
                observed_generation: generation,
                last_transition_time: last,
            }
        })
        .collect()
}

/// Whether `conditions` has `type_` set to True.
pub fn is_true(conditions: &[Condition], type_: &str) -> bool {
    conditions.iter().any(|c| c.type_ == type_ && c.status == "True")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn want(status: bool) -> Want<'static> {
        Want { type_: READY, status, reason: "R", message: "m".into() }
    }

    #[test]
    fn keeps_the_transition_time_while_the_status_holds() {
        let mut first = settle(&[], &[want(false)], Some(1));
        let old = Time(Timestamp::UNIX_EPOCH);
        first[0].last_transition_time = old.clone();
        let second = settle(&first, &[want(false)], Some(2));
        assert_eq!(second[0].last_transition_time, old);
        assert_eq!(second[0].observed_generation, Some(2));
        let third = settle(&second, &[want(true)], Some(2));
        assert_ne!(third[0].last_transition_time, old);
        assert!(is_true(&third, READY));
    }
}

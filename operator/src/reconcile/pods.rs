//! Why a store's pods are not running, read from their status: a pod the scheduler cannot place,
//! an image that cannot be pulled, a container Kubernetes cannot create (a missing Secret), or a
//! server that keeps exiting, with the error it left in its termination message (the server
//! writes it to `/dev/termination-log`, `--termination-message-path`). The store reconciler puts
//! the first such trouble in the `Degraded` condition and an Event, so `kubectl get kvstore`
//! says what is wrong without a look at the pods.

use k8s_openapi::api::core::v1::{ContainerStateTerminated, ContainerStatus, Pod};

use crate::builders::statefulset::CONTAINER;

/// Longest message kept: an Event's note must stay under 1 KiB.
pub const MAX_MESSAGE: usize = 900;

/// What keeps a store's pod from running.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PodTrouble {
    /// The `Degraded` condition's reason (and the Event's).
    pub reason: &'static str,
    /// What is wrong, naming the pod.
    pub message: String,
}

/// Container waiting reasons that mean the image cannot be pulled.
const IMAGE_REASONS: [&str; 4] = ["ErrImagePull", "ImagePullBackOff", "InvalidImageName", "ErrImageNeverPull"];
/// Container waiting reasons that mean Kubernetes cannot create or start the container.
const CREATE_REASONS: [&str; 3] = ["CreateContainerConfigError", "CreateContainerError", "RunContainerError"];

/// The first trouble among `pods`, in pod name order; `None` when every pod is running or on its
/// way (scheduled, pulling, starting).
pub fn trouble(pods: &[Pod]) -> Option<PodTrouble> {
    let mut pods: Vec<&Pod> = pods.iter().collect();
    pods.sort_by_key(|p| p.metadata.name.clone());
    pods.into_iter().find_map(pod_trouble)
}

fn pod_trouble(pod: &Pod) -> Option<PodTrouble> {
    let name = pod.metadata.name.as_deref().unwrap_or("?");
    unschedulable(pod, name).or_else(|| {
        let status = pod.status.as_ref()?.container_statuses.as_ref()?.iter().find(|s| s.name == CONTAINER)?;
        container_trouble(status, name)
    })
}

fn unschedulable(pod: &Pod, name: &str) -> Option<PodTrouble> {
    let condition =
        pod.status.as_ref()?.conditions.as_ref()?.iter().find(|c| {
            c.type_ == "PodScheduled" && c.status == "False" && c.reason.as_deref() == Some("Unschedulable")
        })?;
    let why = condition.message.as_deref().unwrap_or("no node fits its CPU, memory and placement rules");
    Some(PodTrouble { reason: "Unschedulable", message: fit(format!("pod {name} cannot be scheduled: {why}")) })
}

fn container_trouble(status: &ContainerStatus, pod: &str) -> Option<PodTrouble> {
    let state = status.state.as_ref()?;
    if let Some(waiting) = &state.waiting {
        let reason = waiting.reason.as_deref().unwrap_or_default();
        let detail = waiting.message.as_deref().unwrap_or(reason);
        if IMAGE_REASONS.contains(&reason) {
            let image = &status.image;
            let message = format!("pod {pod} cannot pull image {image} ({reason}): {detail}");
            return Some(PodTrouble { reason: "ImagePullFailed", message: fit(message) });
        }
        if CREATE_REASONS.contains(&reason) {
            let message = format!("pod {pod}: the container cannot start ({reason}): {detail}");
            return Some(PodTrouble { reason: "ContainerCannotStart", message: fit(message) });
        }
        if reason == "CrashLoopBackOff" {
            let last = status.last_state.as_ref().and_then(|s| s.terminated.as_ref());
            // No restart count: the message (and its Event) stays the same from one restart to the next.
            let message = format!("pod {pod}: the server keeps exiting{}", last.map(exit_summary).unwrap_or_default());
            return Some(PodTrouble { reason: "CrashLoopBackOff", message: fit(message) });
        }
        return None;
    }
    let terminated = state.terminated.as_ref().filter(|t| t.exit_code != 0)?;
    let message = format!("pod {pod}: the server exited{}", exit_summary(terminated));
    Some(PodTrouble { reason: "ServerExited", message: fit(message) })
}

/// `; last exit code 1: <message>`, or the kill reason (OOMKilled) with advice.
fn exit_summary(terminated: &ContainerStateTerminated) -> String {
    let code = terminated.exit_code;
    let reason = terminated.reason.as_deref().unwrap_or_default();
    if reason == "OOMKilled" {
        return format!(
            "; last exit: OOMKilled (exit code {code}): the pod used more than spec.memory; raise spec.memory \
             or lower spec.maxmemory"
        );
    }
    match terminated.message.as_deref().map(str::trim).filter(|m| !m.is_empty()) {
        Some(message) => format!("; last exit code {code}: {message}"),
        None if !reason.is_empty() => format!("; last exit code {code} ({reason})"),
        None => format!("; last exit code {code}"),
    }
}

/// `message` cut at a character boundary to [`MAX_MESSAGE`] bytes, marked when cut.
fn fit(message: String) -> String {
    if message.len() <= MAX_MESSAGE {
        return message;
    }
    let mut end = MAX_MESSAGE - 3;
    while !message.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}...", &message[..end])
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn pod(name: &str, status: serde_json::Value) -> Pod {
        serde_json::from_value(json!({"metadata": {"name": name}, "status": status})).expect("pod")
    }

    fn container(state: serde_json::Value, last: serde_json::Value, restarts: i32) -> serde_json::Value {
        json!({"containerStatuses": [{"name": CONTAINER, "ready": false, "restartCount": restarts,
            "image": "registry.example/cairn:0.1.0", "imageID": "", "state": state, "lastState": last}]})
    }

    #[test]
    fn running_and_starting_pods_are_no_trouble() {
        let running = pod("demo-0", container(json!({"running": {}}), json!({}), 0));
        let creating = pod("demo-1", container(json!({"waiting": {"reason": "ContainerCreating"}}), json!({}), 0));
        let pending = pod("demo-2", json!({"phase": "Pending"}));
        assert_eq!(trouble(&[running, creating, pending]), None);
    }

    #[test]
    fn a_crash_loop_quotes_the_servers_termination_message() {
        let p = pod(
            "demo-0",
            container(
                json!({"waiting": {"reason": "CrashLoopBackOff", "message": "back-off 40s restarting failed container"}}),
                json!({"terminated": {"exitCode": 1, "reason": "Error",
                    "message": "invalid configuration: invalid config file /etc/cairn/cairn.toml: unknown field `maxclient`\n"}}),
                3,
            ),
        );
        let t = trouble(&[p]).expect("trouble");
        assert_eq!(t.reason, "CrashLoopBackOff");
        assert_eq!(
            t.message,
            "pod demo-0: the server keeps exiting; last exit code 1: invalid configuration: invalid config file \
             /etc/cairn/cairn.toml: unknown field `maxclient`"
        );
    }

    #[test]
    fn an_oom_kill_says_which_fields_to_change() {
        let p = pod(
            "demo-0",
            container(
                json!({"waiting": {"reason": "CrashLoopBackOff"}}),
                json!({"terminated": {"exitCode": 137, "reason": "OOMKilled"}}),
                5,
            ),
        );
        let t = trouble(&[p]).expect("trouble");
        assert!(t.message.contains("OOMKilled") && t.message.contains("spec.maxmemory"), "{}", t.message);
    }

    #[test]
    fn a_server_that_just_exited_is_reported_before_the_back_off() {
        let p = pod(
            "demo-0",
            container(
                json!({"terminated": {"exitCode": 1, "message": "cannot start the server: recovery failed"}}),
                json!({}),
                0,
            ),
        );
        let t = trouble(&[p]).expect("trouble");
        assert_eq!(t.reason, "ServerExited");
        assert!(t.message.ends_with("last exit code 1: cannot start the server: recovery failed"), "{}", t.message);
        let clean = pod("demo-0", container(json!({"terminated": {"exitCode": 0}}), json!({}), 0));
        assert_eq!(trouble(&[clean]), None);
    }

    #[test]
    fn image_and_secret_problems_are_named() {
        let pull = pod(
            "demo-0",
            container(
                json!({"waiting": {"reason": "ImagePullBackOff", "message": "Back-off pulling image"}}),
                json!({}),
                0,
            ),
        );
        let t = trouble(&[pull]).expect("trouble");
        assert_eq!(t.reason, "ImagePullFailed");
        assert!(t.message.contains("registry.example/cairn:0.1.0"), "{}", t.message);
        let secret = pod(
            "demo-0",
            container(
                json!({"waiting": {"reason": "CreateContainerConfigError", "message": "secret \"demo-auth\" not found"}}),
                json!({}),
                0,
            ),
        );
        let t = trouble(&[secret]).expect("trouble");
        assert_eq!(t.reason, "ContainerCannotStart");
        assert!(t.message.ends_with("secret \"demo-auth\" not found"), "{}", t.message);
    }

    #[test]
    fn an_unschedulable_pod_quotes_the_scheduler() {
        let p = pod(
            "demo-0",
            json!({"phase": "Pending", "conditions": [{"type": "PodScheduled", "status": "False",
                "reason": "Unschedulable", "message": "0/3 nodes are available: 3 Insufficient cpu."}]}),
        );
        let t = trouble(&[p]).expect("trouble");
        assert_eq!(t.reason, "Unschedulable");
        assert_eq!(t.message, "pod demo-0 cannot be scheduled: 0/3 nodes are available: 3 Insufficient cpu.");
    }

    #[test]
    fn the_first_pod_by_name_wins_and_long_messages_are_cut() {
        let long = "x".repeat(5000);
        let b = pod("demo-1", container(json!({"terminated": {"exitCode": 2, "message": long}}), json!({}), 0));
        let a = pod("demo-0", container(json!({"terminated": {"exitCode": 1, "message": "first"}}), json!({}), 0));
        assert!(trouble(&[b.clone(), a]).expect("trouble").message.contains("demo-0"));
        let t = trouble(&[b]).expect("trouble");
        assert_eq!(t.message.len(), MAX_MESSAGE);
        assert!(t.message.ends_with("..."));
    }
}

//! The CPU quota of this process's cgroup (a container's or pod's CPU
//! limit), if it has one.
//!
//! A worker that spins while its clients wait for an fdatasync
//! (`--durable-spin-us`) keeps a CPU busy; under a CFS quota that time counts
//! against the limit, and a cgroup that reaches it is throttled for the rest
//! of the period. Measured (docs/durability.md): a 1-CPU quota, 8 `sync`
//! writers, 26–27 throttling stalls and a p99.9 of 26–27 ms per run with the
//! spin, none and 2–5 ms without. So under a quota the spin is off unless
//! asked for.

use std::path::{Path, PathBuf};

/// The quota in CPUs (1.5 = one and a half CPUs), or `None` when unlimited
/// or unknown.
pub fn cpu_quota() -> Option<f64> {
    let cgroups = std::fs::read_to_string("/proc/self/cgroup").ok()?;
    let root = Path::new("/sys/fs/cgroup");
    if let Some(path) = cgroup_path(&cgroups, None) {
        if let Ok(text) = std::fs::read_to_string(under(root, &path).join("cpu.max")) {
            return parse_cpu_max(&text);
        }
    }
    let path = cgroup_path(&cgroups, Some("cpu"))?;
    ["cpu", "cpu,cpuacct"].iter().find_map(|mount| {
        let dir = under(&root.join(mount), &path);
        let quota = std::fs::read_to_string(dir.join("cpu.cfs_quota_us")).ok()?;
        let period = std::fs::read_to_string(dir.join("cpu.cfs_period_us")).ok()?;
        parse_cfs_v1(&quota, &period)
    })
}

/// `dir` joined with an absolute cgroup path.
fn under(dir: &Path, cgroup: &str) -> PathBuf {
    dir.join(cgroup.trim_start_matches('/'))
}

/// This process's cgroup path for `controller` (cgroup v1) or the unified
/// hierarchy (`None`, the `0::` line), from `/proc/self/cgroup`.
fn cgroup_path(proc_cgroup: &str, controller: Option<&str>) -> Option<String> {
    proc_cgroup.lines().find_map(|line| {
        let mut fields = line.splitn(3, ':');
        let (_id, controllers, path) = (fields.next()?, fields.next()?, fields.next()?);
        let matches = match controller {
            None => controllers.is_empty(),
            Some(wanted) => controllers.split(',').any(|c| c == wanted),
        };
        matches.then(|| path.to_string())
    })
}

/// cgroup v2 `cpu.max`: `max 100000` (no quota) or `QUOTA PERIOD`.
fn parse_cpu_max(text: &str) -> Option<f64> {
    let mut fields = text.split_whitespace();
    let quota = fields.next()?;
    let period: f64 = fields.next()?.parse().ok()?;
    let quota: f64 = quota.parse().ok()?;
    (quota > 0.0 && period > 0.0).then(|| quota / period)
}

/// cgroup v1 `cpu.cfs_quota_us` (-1: no quota) over `cpu.cfs_period_us`.
fn parse_cfs_v1(quota: &str, period: &str) -> Option<f64> {
    let quota: f64 = quota.trim().parse().ok()?;
    let period: f64 = period.trim().parse().ok()?;
    (quota > 0.0 && period > 0.0).then(|| quota / period)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_cgroup_v2_cpu_max() {
        assert_eq!(parse_cpu_max("max 100000\n"), None);
        assert_eq!(parse_cpu_max("200000 100000\n"), Some(2.0));
        assert_eq!(parse_cpu_max("50000 100000"), Some(0.5));
        assert_eq!(parse_cpu_max(""), None);
        assert_eq!(parse_cpu_max("garbage"), None);
    }

    #[test]
    fn parses_cgroup_v1_cfs() {
        assert_eq!(parse_cfs_v1("-1\n", "100000\n"), None);
        assert_eq!(parse_cfs_v1("150000\n", "100000\n"), Some(1.5));
        assert_eq!(parse_cfs_v1("x", "100000"), None);
    }

    #[test]
    fn finds_the_cgroup_path() {
        let v1 = "4:memory:/pod/abc\n1:cpu,cpuacct:/kubepods/pod1/c1\n0::/\n";
        assert_eq!(cgroup_path(v1, Some("cpu")).as_deref(), Some("/kubepods/pod1/c1"));
        assert_eq!(cgroup_path(v1, None).as_deref(), Some("/"));
        assert_eq!(cgroup_path("0::/system.slice/x.service\n", None).as_deref(), Some("/system.slice/x.service"));
        assert_eq!(cgroup_path("0::/\n", Some("cpu")), None);
        assert_eq!(under(Path::new("/sys/fs/cgroup"), "/a/b"), PathBuf::from("/sys/fs/cgroup/a/b"));
    }

    #[test]
    fn reading_this_process_quota_does_not_fail() {
        // Whatever the environment, the answer is a positive quota or none.
        assert!(cpu_quota().is_none_or(|q| q > 0.0));
    }
}

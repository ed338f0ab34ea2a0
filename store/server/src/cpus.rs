//! CPU lists (`--cpus 0-3,6`) and the process's allowed CPUs.

use thiserror::Error;

#[derive(Debug, Error, PartialEq, Eq)]
pub enum CpuListError {
    #[error("invalid CPU list '{0}': expected numbers and ranges such as 0-3,6")]
    Invalid(String),
    #[error("CPU list '{0}' is empty")]
    Empty(String),
    #[error("CPU {cpu} is not in this process's allowed set {allowed:?}")]
    NotAllowed { cpu: usize, allowed: Vec<usize> },
}

/// Parses `0-3,6` into `[0, 1, 2, 3, 6]` (sorted, distinct).
pub fn parse_cpu_list(text: &str) -> Result<Vec<usize>, CpuListError> {
    let invalid = || CpuListError::Invalid(text.to_string());
    let mut cpus = Vec::new();
    for part in text.split(',').map(str::trim).filter(|p| !p.is_empty()) {
        match part.split_once('-') {
            Some((lo, hi)) => {
                let lo: usize = lo.trim().parse().map_err(|_| invalid())?;
                let hi: usize = hi.trim().parse().map_err(|_| invalid())?;
                if lo > hi || hi - lo > 4096 {
                    return Err(invalid());
                }
                cpus.extend(lo..=hi);
            }
            None => cpus.push(part.parse().map_err(|_| invalid())?),
        }
    }
    cpus.sort_unstable();
    cpus.dedup();
    if cpus.is_empty() {
        return Err(CpuListError::Empty(text.to_string()));
    }
    Ok(cpus)
}

/// The CPUs this process may run on (its affinity mask).
pub fn allowed_cpus() -> Vec<usize> {
    // SAFETY: cpu_set_t is plain data; sched_getaffinity writes at most its size.
    let mut set: libc::cpu_set_t = unsafe { std::mem::zeroed() };
    let rc = unsafe { libc::sched_getaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &mut set) };
    if rc != 0 {
        let n = std::thread::available_parallelism().map(|n| n.get()).unwrap_or(1);
        return (0..n).collect();
    }
    (0..libc::CPU_SETSIZE as usize).filter(|&cpu| unsafe { libc::CPU_ISSET(cpu, &set) }).collect()
}

/// Decides the worker layout: one worker per CPU to pin to, or `threads`
/// unpinned workers when no CPU list applies.
pub fn plan_workers(threads: Option<usize>, cpus: Option<&str>) -> Result<Vec<Option<usize>>, CpuListError> {
    let allowed = allowed_cpus();
    if let Some(list) = cpus {
        let chosen = parse_cpu_list(list)?;
        if let Some(&cpu) = chosen.iter().find(|c| !allowed.contains(c)) {
            return Err(CpuListError::NotAllowed { cpu, allowed });
        }
        return Ok(chosen.into_iter().map(Some).collect());
    }
    match threads {
        Some(n) if n > allowed.len() => Ok(vec![None; n]),
        Some(n) => Ok(allowed.into_iter().take(n.max(1)).map(Some).collect()),
        None => Ok(allowed.into_iter().map(Some).collect()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lists() {
        assert_eq!(parse_cpu_list("0-3,6").unwrap(), vec![0, 1, 2, 3, 6]);
        assert_eq!(parse_cpu_list("2,1,2").unwrap(), vec![1, 2]);
        assert!(parse_cpu_list("a").is_err());
        assert!(parse_cpu_list("3-1").is_err());
        assert!(parse_cpu_list("").is_err());
    }

    #[test]
    fn plans() {
        let allowed = allowed_cpus();
        assert!(!allowed.is_empty());
        assert_eq!(plan_workers(None, None).unwrap().len(), allowed.len());
        assert_eq!(plan_workers(Some(1), None).unwrap(), vec![Some(allowed[0])]);
        assert!(plan_workers(None, Some("100000")).is_err());
    }
}

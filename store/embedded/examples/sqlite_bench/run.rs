//! Running the cells: writer threads released together, per-call latency
//! recorded, rounds alternating the systems, medians.

use std::path::Path;
use std::sync::{Arc, Barrier};
use std::time::{Duration, Instant};

use crate::Args;

/// The two systems.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum System {
    Cairn,
    Sqlite,
}

impl System {
    pub fn name(self) -> &'static str {
        match self {
            System::Cairn => "Cairn",
            System::Sqlite => "SQLite",
        }
    }
}

/// One run's (or one cell's median) figures.
#[derive(Clone, Copy, Debug, Default)]
pub struct Measured {
    pub acks_per_sec: f64,
    pub p50_us: f64,
    pub p99_us: f64,
}

/// Median figures per writer count: (writers, Cairn, SQLite).
pub type Results = Vec<(usize, Measured, Measured)>;

/// What a writer thread runs: `append(writer, n, value)` stores one value durably.
pub trait Target: Sync {
    fn append(&self, writer: usize, n: usize, value: &[u8]) -> anyhow::Result<()>;
}

pub fn all(args: &Args, base: &Path) -> anyhow::Result<Results> {
    let mut runs: Vec<(Vec<Measured>, Vec<Measured>)> = vec![(Vec::new(), Vec::new()); args.writers.len()];
    for round in 0..args.rounds {
        for (cell, &writers) in args.writers.iter().enumerate() {
            let order =
                if (round + cell) % 2 == 0 { [System::Cairn, System::Sqlite] } else { [System::Sqlite, System::Cairn] };
            for system in order {
                let dir = base.join(format!("r{round}-w{writers}-{}", system.name().to_lowercase()));
                let measured = match system {
                    System::Cairn => crate::cairn::run(args, &dir, writers)?,
                    System::Sqlite => crate::sqlite::run(args, &dir, writers)?,
                };
                let _ = std::fs::remove_dir_all(&dir);
                eprintln!(
                    "round {} writers {writers:>2} {:<6} {:>9.0} acks/s  p50 {:>7.1} us  p99 {:>8.1} us",
                    round + 1,
                    system.name(),
                    measured.acks_per_sec,
                    measured.p50_us,
                    measured.p99_us
                );
                let slot = &mut runs[cell];
                match system {
                    System::Cairn => slot.0.push(measured),
                    System::Sqlite => slot.1.push(measured),
                }
            }
        }
    }
    Ok(args.writers.iter().zip(runs).map(|(&w, (c, s))| (w, median(&c), median(&s))).collect())
}

/// Runs `writers` threads of `args.appends` appends each against `target`.
pub fn measure(args: &Args, writers: usize, target: &dyn Target) -> anyhow::Result<Measured> {
    let start = Arc::new(Barrier::new(writers + 1));
    let (latencies, elapsed) = std::thread::scope(|s| {
        let handles: Vec<_> = (0..writers)
            .map(|w| {
                let start = start.clone();
                s.spawn(move || writer(args, w, target, &start))
            })
            .collect();
        start.wait();
        let began = Instant::now();
        let mut all = Vec::with_capacity(writers * args.appends);
        let mut failure = None;
        for h in handles {
            match h.join() {
                Ok(Ok(mut l)) => all.append(&mut l),
                Ok(Err(e)) => failure = Some(e),
                Err(_) => failure = Some(anyhow::anyhow!("a writer thread panicked")),
            }
        }
        match failure {
            Some(e) => Err(e),
            None => Ok((all, began.elapsed())),
        }
    })?;
    Ok(summarize(latencies, elapsed))
}

fn writer(args: &Args, w: usize, target: &dyn Target, start: &Barrier) -> anyhow::Result<Vec<Duration>> {
    let value = vec![b'a' + (w % 26) as u8; args.value_bytes];
    let mut latencies = Vec::with_capacity(args.appends);
    start.wait();
    for n in 0..args.appends {
        let began = Instant::now();
        target.append(w, n, &value)?;
        latencies.push(began.elapsed());
    }
    Ok(latencies)
}

fn summarize(mut latencies: Vec<Duration>, elapsed: Duration) -> Measured {
    latencies.sort_unstable();
    let at = |q: f64| {
        let index = ((latencies.len() as f64 * q).ceil() as usize).clamp(1, latencies.len()) - 1;
        latencies[index].as_secs_f64() * 1e6
    };
    Measured { acks_per_sec: latencies.len() as f64 / elapsed.as_secs_f64(), p50_us: at(0.50), p99_us: at(0.99) }
}

fn median(runs: &[Measured]) -> Measured {
    let pick = |f: fn(&Measured) -> f64| {
        let mut v: Vec<f64> = runs.iter().map(f).collect();
        v.sort_by(f64::total_cmp);
        match v.len() {
            0 => 0.0,
            n if n % 2 == 1 => v[n / 2],
            n => (v[n / 2 - 1] + v[n / 2]) / 2.0,
        }
    };
    Measured { acks_per_sec: pick(|m| m.acks_per_sec), p50_us: pick(|m| m.p50_us), p99_us: pick(|m| m.p99_us) }
}

/// The key of append `n` of writer `w`.
pub fn key(w: usize, n: usize) -> String {
    format!("w{w}:{n}")
}

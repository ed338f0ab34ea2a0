//! The `run` mode: N writers, each on its own connection and its own keys, issuing one write at a
//! time (P=1) and logging each acknowledged write with its reply.

use crate::acklog::{log_path, now_us, AckLogWriter};
use crate::ops::OpGenerator;
use crate::resp::{Conn, Reply};
use anyhow::Context;
use std::path::PathBuf;
use std::sync::{Arc, Barrier};
use std::time::{Duration, Instant};

#[derive(Debug, Clone)]
pub struct RunConfig {
    pub addr: String,
    pub writers: usize,
    pub duration: Duration,
    pub log_dir: PathBuf,
    pub prefix: String,
    pub seed: u64,
    pub value_size: usize,
}

/// How one writer's run ended.
#[derive(Debug, Default)]
struct WriterResult {
    acked: u64,
    stopped_by: Option<String>,
}

/// Runs the writers until the duration ends or each one loses its server; prints a summary.
pub fn run(config: &RunConfig) -> anyhow::Result<()> {
    std::fs::create_dir_all(&config.log_dir).with_context(|| format!("cannot create {}", config.log_dir.display()))?;
    let barrier = Arc::new(Barrier::new(config.writers));
    let started = Instant::now();
    let handles: Vec<_> = (0..config.writers)
        .map(|w| {
            let (config, barrier) = (config.clone(), barrier.clone());
            std::thread::spawn(move || run_writer(&config, w, &barrier))
        })
        .collect();
    let mut acked = 0;
    let mut stopped = 0;
    for handle in handles {
        let result = handle.join().map_err(|_| anyhow::anyhow!("a writer thread panicked"))??;
        acked += result.acked;
        stopped += usize::from(result.stopped_by.is_some());
    }
    let secs = started.elapsed().as_secs_f64();
    println!(
        "run: writers={} acked={acked} elapsed_s={secs:.2} acks_per_s={:.0} stopped_by_error={stopped}",
        config.writers,
        acked as f64 / secs.max(1e-9)
    );
    Ok(())
}

fn run_writer(config: &RunConfig, w: usize, barrier: &Barrier) -> anyhow::Result<WriterResult> {
    let mut log = AckLogWriter::create(&log_path(&config.log_dir, w), w)?;
    let conn = Conn::connect(&config.addr, Duration::from_secs(30));
    barrier.wait();
    let mut conn = match conn {
        Ok(conn) => conn,
        Err(e) => return Ok(WriterResult { acked: 0, stopped_by: Some(format!("connect: {e}")) }),
    };
    let mut generator = OpGenerator::new(config.seed, &config.prefix, w, config.value_size);
    let deadline = Instant::now() + config.duration;
    let mut result = WriterResult::default();
    let mut seq = 0;
    while Instant::now() < deadline {
        seq += 1;
        let op = generator.next(seq);
        let sent_us = now_us();
        match conn.call(&op.args()) {
            Ok(Reply::Error(e)) => {
                log.uncertain(seq, sent_us, &op, &format!("error-reply:{e}"))?;
                result.stopped_by = Some(e);
                break;
            }
            Ok(reply) => {
                log.acked(seq, &op, &reply.to_log_token())?;
                result.acked += 1;
            }
            Err(e) => {
                log.uncertain(seq, sent_us, &op, &e.to_string())?;
                result.stopped_by = Some(e.to_string());
                break;
            }
        }
    }
    log.flush()?;
    Ok(result)
}

//! `cairn-crashtest`: the workload and the verifier of the crash tests (`e2e/crash/*.sh`),
//! server-agnostic (Redis or Cairn, anything speaking RESP2).
//!
//! # Layout
//! - `resp`: a minimal blocking RESP2 client.
//! - `ops`: the write operations, the keys each writer owns, the seeded operation mix.
//! - `acklog`: the per-writer ack log (acknowledged writes with replies, the one uncertain write).
//! - `writer`: `run` — N writers at P=1, each on its own connection and keys.
//! - `model`: what the state read back must be, given a writer's log; losses and changes.
//! - `verify`: `verify` — read back every writer's keys and summarise.
//! - `stats`: percentiles.
//!
//! `ping` waits until the server answers PONG (not -LOADING).

mod acklog;
mod model;
mod ops;
mod resp;
mod stats;
mod verify;
mod writer;

use anyhow::bail;
use clap::{Parser, Subcommand};
use resp::{Conn, Reply};
use std::path::PathBuf;
use std::time::{Duration, Instant};

#[derive(Parser, Debug)]
#[command(name = "cairn-crashtest", about = "Crash-test writers and verifier")]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand, Debug)]
enum Command {
    /// Run writers until the duration ends or the server goes away.
    Run {
        #[arg(long, default_value = "127.0.0.1:6379")]
        addr: String,
        #[arg(long, default_value_t = 64)]
        writers: usize,
        /// Upper bound on the run, in seconds (the test kills the server well before).
        #[arg(long, default_value_t = 10.0)]
        duration: f64,
        /// Where the ack logs go (one file per writer); one directory per run.
        #[arg(long)]
        log_dir: PathBuf,
        /// Key prefix; must be unique per run so that every key starts empty.
        #[arg(long)]
        prefix: String,
        #[arg(long, default_value_t = 1)]
        seed: u64,
        /// Values are padded to this many bytes.
        #[arg(long, default_value_t = 16)]
        value_size: usize,
    },
    /// Check every acknowledged write of the given runs against the server.
    Verify {
        #[arg(long, default_value = "127.0.0.1:6379")]
        addr: String,
        /// Report lost acknowledged writes (and the loss window) without failing.
        #[arg(long)]
        allow_loss: bool,
        /// How many individual problems to print.
        #[arg(long, default_value_t = 10)]
        show_problems: usize,
        /// Ack log directories written by `run`.
        #[arg(required = true)]
        log_dirs: Vec<PathBuf>,
    },
    /// Wait until the server answers PING with PONG.
    Ping {
        #[arg(long, default_value = "127.0.0.1:6379")]
        addr: String,
        #[arg(long, default_value_t = 30.0)]
        timeout: f64,
    },
}

fn main() -> anyhow::Result<()> {
    match Cli::parse().command {
        Command::Run { addr, writers, duration, log_dir, prefix, seed, value_size } => {
            let duration = Duration::from_secs_f64(duration);
            writer::run(&writer::RunConfig { addr, writers, duration, log_dir, prefix, seed, value_size })
        }
        Command::Verify { addr, allow_loss, show_problems, log_dirs } => {
            let code = verify::verify(&verify::VerifyConfig { addr, log_dirs, allow_loss, show_problems })?;
            std::process::exit(code)
        }
        Command::Ping { addr, timeout } => ping(&addr, Duration::from_secs_f64(timeout)),
    }
}

fn ping(addr: &str, timeout: Duration) -> anyhow::Result<()> {
    let deadline = Instant::now() + timeout;
    let mut last = String::from("no attempt");
    while Instant::now() < deadline {
        match Conn::connect(addr, Duration::from_secs(2)).and_then(|mut c| c.call(&[b"PING"])) {
            Ok(Reply::Status(s)) if s == "PONG" => return Ok(()),
            Ok(other) => last = format!("{other:?}"),
            Err(e) => last = e.to_string(),
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    bail!("{addr} did not answer PONG within {timeout:?} (last: {last})")
}

//! The `cairn-bench` binary: parses the command line and runs `run`, `verify` or `matrix`.
//!
//! # Layout
//!
//! Everything lives in the library (`cairn_bench`); this file only maps results to output and
//! exit codes: 0 when every reply verified (or no acknowledged write was lost), 1 when
//! verification failed, 2 on a usage or setup error.

use std::process::ExitCode;

use anyhow::Context;
use cairn_bench::cli::{Cli, Command, Protocol, RunArgs, VerifyArgs};
use cairn_bench::native::{NativeMode, NativeTarget};
use cairn_bench::target::RespTarget;
use cairn_bench::{ack_log, audit, matrix, progress, run};
use clap::Parser;

fn main() -> ExitCode {
    let cli = Cli::parse();
    let result = match cli.command {
        Command::Run(args) => run_command(&args),
        Command::Verify(args) => verify_command(&args),
        Command::Matrix(args) => matrix::main(&args),
    };
    match result {
        Ok(true) => ExitCode::SUCCESS,
        Ok(false) => ExitCode::from(1),
        Err(e) => {
            eprintln!("cairn-bench: {e:#}");
            ExitCode::from(2)
        }
    }
}

/// One driver thread: a `current_thread` runtime, whose connections run on the calling thread
/// (a multi-thread runtime with one worker parks and wakes through its idle-worker bookkeeping on
/// every reply, measurable at one connection). More threads: a multi-thread runtime.
fn runtime(threads: usize) -> anyhow::Result<tokio::runtime::Runtime> {
    let mut builder = if threads <= 1 {
        tokio::runtime::Builder::new_current_thread()
    } else {
        let mut builder = tokio::runtime::Builder::new_multi_thread();
        builder.worker_threads(threads);
        builder
    };
    builder.enable_all().build().context("starting the async runtime")
}

fn run_command(args: &RunArgs) -> anyhow::Result<bool> {
    let config = args.config()?;
    let tls = args.tls_client()?;
    let (addr, password) = (args.server.addr(), args.server.password.clone());
    let show_progress = !args.no_progress && !args.json && progress::wanted();
    let ack_log = args.ack_log.as_deref();
    let runtime = runtime(config.threads)?;
    let report = match args.protocol {
        Protocol::Resp => {
            let target = RespTarget::new(addr, password).with_io(config.io).with_tls(tls);
            runtime.block_on(run::run(target, config, ack_log, show_progress))?
        }
        Protocol::Native | Protocol::NativePipeline => {
            let mode = if args.protocol == Protocol::Native { NativeMode::Batch } else { NativeMode::Pipeline };
            let target = NativeTarget::new(addr, password, mode).with_io(config.io);
            runtime.block_on(run::run(target, config, ack_log, show_progress))?
        }
    };
    if args.json {
        println!("{}", serde_json::to_string_pretty(&report)?);
    } else {
        print!("{}", report.human());
    }
    if let Some(path) = &args.summary_json {
        std::fs::write(path, report.summary_json()).with_context(|| format!("writing {}", path.display()))?;
    }
    if !report.verified {
        eprintln!(
            "cairn-bench: verification FAILED: {} mismatched replies, {} connection errors; first: {}",
            report.mismatches,
            report.connection_errors,
            report.first_errors.first().map(String::as_str).unwrap_or("-")
        );
    }
    Ok(report.verified)
}

fn verify_command(args: &VerifyArgs) -> anyhow::Result<bool> {
    let log = ack_log::read(&args.ack_log)?;
    let target = RespTarget::new(args.server.addr(), args.server.password.clone()).with_tls(args.server.tls_client()?);
    let report = runtime(1)?.block_on(audit::audit(&target, &log))?;
    if args.json {
        println!("{}", serde_json::to_string_pretty(&report)?);
    } else {
        print!("{}", report.human());
    }
    Ok(report.ok)
}

//! The `cairn` binary: parse the configuration, set up logging, run the
//! server until SIGINT or SIGTERM (SIGHUP rereads the config file).

use anyhow::Context;
use cairn_server::{Args, Config, Shutdown};
use clap::Parser;

/// The system allocator, counted, so INFO `used_memory` and `maxmemory` see
/// the bytes the dataset holds (see `cairn_server::used_memory`).
#[global_allocator]
static ALLOCATOR: cairn_server::used_memory::CountingAllocator = cairn_server::used_memory::CountingAllocator;

fn main() -> anyhow::Result<()> {
    if std::env::args().nth(1).as_deref() == Some("check") {
        return check(CheckArgs::parse_from(std::env::args().skip(1)));
    }
    let args = Args::parse();
    let message_path = args.termination_message_path.clone();
    let result = serve(args);
    if let (Err(error), Some(path)) = (&result, &message_path) {
        if let Err(e) = cairn_server::termination_message::write(path, &one_line(error)) {
            eprintln!("cannot write the termination message to {}: {e}", path.display());
        }
    }
    result
}

/// The error and its causes on one line, `a: b: c`, skipping a cause that
/// the message before it already ends with (errors that print their source).
fn one_line(error: &anyhow::Error) -> String {
    let mut line = String::new();
    for cause in error.chain().map(|c| c.to_string()) {
        if line.is_empty() {
            line = cause;
        } else if !line.ends_with(&cause) {
            line = format!("{line}: {cause}");
        }
    }
    line
}

/// Runs the server until SIGINT, SIGTERM or its own shutdown.
fn serve(args: Args) -> anyhow::Result<()> {
    let config = Config::resolve(args).context("invalid configuration")?;
    init_logging(&config)?;
    let shutdown = Shutdown::new();
    let running = cairn_server::start(config, shutdown.clone()).context("cannot start the server")?;
    wait_for_signal(&shutdown, || {
        running.reload_config();
    })?;
    tracing::info!("shutting down");
    running.stop();
    tracing::info!("bye");
    Ok(())
}

/// `cairn check DATA_DIR`: verify snapshots and the write-ahead log.
#[derive(Debug, Parser)]
#[command(name = "cairn check", about = "Verify (and optionally repair) a Cairn data directory")]
struct CheckArgs {
    /// The data directory to check.
    data_dir: std::path::PathBuf,
    /// Truncate the log at the first corruption (loses what follows it).
    #[arg(long)]
    repair: bool,
    /// Confirms --repair.
    #[arg(long)]
    yes_truncate: bool,
}

fn check(args: CheckArgs) -> anyhow::Result<()> {
    if args.repair && !args.yes_truncate {
        anyhow::bail!(
            "--repair truncates the log at the first corruption and loses what follows; add --yes-truncate to confirm"
        );
    }
    if !args.data_dir.is_dir() {
        anyhow::bail!("{} is not a directory", args.data_dir.display());
    }
    let report = cairn_server::persistence::check::check(&args.data_dir, args.repair);
    print!("{}", report.text);
    if !report.healthy {
        std::process::exit(1);
    }
    Ok(())
}

fn init_logging(config: &Config) -> anyhow::Result<()> {
    cairn_server::logging::init(config).context("cannot set up logging")
}

/// Blocks until SIGINT/SIGTERM arrives or the server shuts itself down;
/// SIGHUP calls `reload` (rereads the config file) and keeps waiting.
fn wait_for_signal(shutdown: &Shutdown, reload: impl Fn()) -> anyhow::Result<()> {
    use tokio::signal::unix::{signal, SignalKind};
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().context("signal runtime")?;
    runtime.block_on(async {
        let mut interrupt = signal(SignalKind::interrupt()).context("cannot listen for SIGINT")?;
        let mut term = signal(SignalKind::terminate()).context("cannot listen for SIGTERM")?;
        let mut hangup = signal(SignalKind::hangup()).context("cannot listen for SIGHUP")?;
        loop {
            tokio::select! {
                _ = interrupt.recv() => break,
                _ = term.recv() => break,
                _ = shutdown.wait() => break,
                _ = hangup.recv() => {
                    tracing::info!("SIGHUP: rereading the config file");
                    reload();
                }
            }
        }
        anyhow::Ok(())
    })?;
    shutdown.trigger();
    Ok(())
}

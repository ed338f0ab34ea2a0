//! The `cairn` binary: parse the configuration, set up logging, run the
//! server until SIGINT or SIGTERM.

use anyhow::Context;
use cairn_server::config::LogFormat;
use cairn_server::{Args, Config, Shutdown};
use clap::Parser;

fn main() -> anyhow::Result<()> {
    let config = Config::resolve(Args::parse()).context("invalid configuration")?;
    init_logging(&config)?;
    let shutdown = Shutdown::new();
    let running = cairn_server::start(config, shutdown.clone()).context("cannot start the server")?;
    wait_for_signal(&shutdown)?;
    tracing::info!("shutting down");
    running.stop();
    tracing::info!("bye");
    Ok(())
}

fn init_logging(config: &Config) -> anyhow::Result<()> {
    let filter = tracing_subscriber::EnvFilter::try_new(&config.log_level)
        .with_context(|| format!("invalid log level '{}'", config.log_level))?;
    let ansi = std::io::IsTerminal::is_terminal(&std::io::stderr());
    let builder = tracing_subscriber::fmt().with_env_filter(filter).with_writer(std::io::stderr).with_ansi(ansi);
    match config.log_format {
        LogFormat::Json => builder.json().init(),
        LogFormat::Text => builder.init(),
    }
    Ok(())
}

/// Blocks until SIGINT/SIGTERM arrives or the server shuts itself down.
fn wait_for_signal(shutdown: &Shutdown) -> anyhow::Result<()> {
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().context("signal runtime")?;
    runtime.block_on(async {
        let mut term = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())
            .context("cannot listen for SIGTERM")?;
        tokio::select! {
            _ = tokio::signal::ctrl_c() => {}
            _ = term.recv() => {}
            _ = shutdown.wait() => {}
        }
        anyhow::Ok(())
    })?;
    shutdown.trigger();
    Ok(())
}

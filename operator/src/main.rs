//! `cairn-operator`: the Kubernetes operator of Cairn.
//!
//! # Layout
//!
//! This binary parses flags, sets up logging, the metrics endpoint, the Kubernetes client and
//! optional leader election, then runs the controllers of the `cairn_operator` library until
//! SIGTERM or Ctrl-C. `cairn-operator render -f FILE...` prints the builders' output instead.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;

use anyhow::Context as _;
use cairn_operator::leader::Elector;
use cairn_operator::metrics::{self, Metrics};
use cairn_operator::run::{controllers, Scope};
use clap::{Parser, Subcommand};
use k8s_openapi::api::coordination::v1::Lease;
use kube::{Api, Client};

#[derive(Parser, Debug)]
#[command(name = "cairn-operator", version, about = "Kubernetes operator of the Cairn key-value store")]
struct Cli {
    #[command(subcommand)]
    command: Option<Command>,
    /// Address of the /metrics, /healthz and /readyz endpoint.
    #[arg(long, env = "CAIRN_OPERATOR_METRICS_ADDR", default_value = "0.0.0.0:8080")]
    metrics_addr: SocketAddr,
    /// Watch only this namespace (default: all namespaces).
    #[arg(long, env = "CAIRN_OPERATOR_WATCH_NAMESPACE")]
    watch_namespace: Option<String>,
    /// Run only while holding the Lease (for several replicas).
    #[arg(long, env = "CAIRN_OPERATOR_LEADER_ELECTION")]
    leader_election: bool,
    /// Namespace of the Lease (default: the client's namespace).
    #[arg(long, env = "CAIRN_OPERATOR_LEASE_NAMESPACE")]
    lease_namespace: Option<String>,
    /// Name of the Lease.
    #[arg(long, env = "CAIRN_OPERATOR_LEASE_NAME", default_value = "cairn-operator")]
    lease_name: String,
    /// Log format.
    #[arg(long, env = "CAIRN_OPERATOR_LOG_FORMAT", default_value = "json", value_parser = ["json", "text"])]
    log_format: String,
    /// Seconds in-flight reconciles may take after SIGTERM before the process stops anyway.
    #[arg(long, env = "CAIRN_OPERATOR_SHUTDOWN_TIMEOUT", default_value_t = cairn_operator::run::SHUTDOWN_TIMEOUT.as_secs())]
    shutdown_timeout: u64,
    /// Log filter, e.g. `info` or `cairn_operator=debug,kube=info`.
    #[arg(long, env = "CAIRN_OPERATOR_LOG", default_value = "info")]
    log_level: String,
}

#[derive(Subcommand, Debug)]
enum Command {
    /// Print the objects the operator would create for the KVStore / KVStoreBenchmark manifests
    /// in FILE (`-` for stdin), as YAML.
    Render {
        /// Manifest files (repeatable; `-` for stdin).
        #[arg(short = 'f', long = "filename", required = true)]
        files: Vec<PathBuf>,
    },
}

fn main() -> anyhow::Result<()> {
    let cli = Cli::parse();
    if let Some(Command::Render { files }) = &cli.command {
        let mut yaml = String::new();
        for file in files {
            let text = if file.as_os_str() == "-" {
                std::io::read_to_string(std::io::stdin()).context("reading stdin")?
            } else {
                std::fs::read_to_string(file).with_context(|| format!("reading {}", file.display()))?
            };
            yaml.push_str("\n---\n");
            yaml.push_str(&text);
        }
        print!("{}", cairn_operator::render::render(&yaml)?);
        return Ok(());
    }
    init_logging(&cli)?;
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .context("starting the tokio runtime")?
        .block_on(serve(cli))
}

fn init_logging(cli: &Cli) -> anyhow::Result<()> {
    let filter = tracing_subscriber::EnvFilter::try_new(&cli.log_level)
        .with_context(|| format!("bad log filter {:?}", cli.log_level))?;
    let builder = tracing_subscriber::fmt().with_env_filter(filter).with_writer(std::io::stderr);
    if cli.log_format == "json" {
        builder.json().init();
    } else {
        builder.init();
    }
    Ok(())
}

async fn shutdown_signal() {
    #[cfg(unix)]
    {
        use tokio::signal::unix::{signal, SignalKind};
        match signal(SignalKind::terminate()) {
            Ok(mut term) => {
                tokio::select! {
                    _ = term.recv() => {}
                    _ = tokio::signal::ctrl_c() => {}
                }
            }
            Err(_) => {
                let _ = tokio::signal::ctrl_c().await;
            }
        }
    }
    #[cfg(not(unix))]
    {
        let _ = tokio::signal::ctrl_c().await;
    }
}

async fn serve(cli: Cli) -> anyhow::Result<()> {
    let metrics = Arc::new(Metrics::default());
    let listener = tokio::net::TcpListener::bind(cli.metrics_addr)
        .await
        .with_context(|| format!("binding the metrics endpoint {}", cli.metrics_addr))?;
    tracing::info!(addr = %cli.metrics_addr, "serving /metrics");
    tokio::spawn(metrics::serve(listener, metrics.clone()));

    let client = Client::try_default().await.context("configuring the Kubernetes client (in-cluster or KUBECONFIG)")?;
    let scope = match cli.watch_namespace.clone() {
        Some(ns) if !ns.is_empty() => Scope::Namespace(ns),
        _ => Scope::All,
    };
    tracing::info!(?scope, "starting controllers");
    let shutdown_timeout = std::time::Duration::from_secs(cli.shutdown_timeout);

    if cli.leader_election {
        let namespace = cli.lease_namespace.clone().unwrap_or_else(|| client.default_namespace().to_string());
        let identity = std::env::var("POD_NAME")
            .or_else(|_| std::env::var("HOSTNAME"))
            .unwrap_or_else(|_| format!("cairn-operator-{}", std::process::id()));
        let elector = Elector::new(Api::<Lease>::namespaced(client.clone(), &namespace), &cli.lease_name, &identity);
        tokio::select! {
            acquired = elector.acquire() => acquired.context("acquiring the lease")?,
            _ = shutdown_signal() => return Ok(()),
        }
        tokio::select! {
            _ = controllers(client, scope, metrics, shutdown_signal(), shutdown_timeout) => {}
            lost = elector.keep() => {
                // Exit so that Kubernetes restarts us as a follower; never run two leaders.
                return Err(anyhow::anyhow!(lost)).context("leader election");
            }
        }
        // Stopped gracefully: hand the Lease over at once.
        if let Err(e) = elector.release().await {
            tracing::warn!(error = %e, "releasing the lease failed; a follower takes over when it expires");
        }
    } else {
        controllers(client, scope, metrics, shutdown_signal(), shutdown_timeout).await;
    }
    tracing::info!("stopped");
    Ok(())
}

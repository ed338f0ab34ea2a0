//! The command line: `run` (the load), `verify` (the durability audit) and `matrix`.

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand};

use crate::config::{fresh_prefix, RunConfig, Stop};
use crate::keys::KeyNamer;
use crate::stream::Io;
use crate::tls::{host_of, ClientIdentity, TlsClient, TlsError, TlsSettings};
use crate::workload::{parse_duration, KeyPattern, OpMix, Shape, WorkloadError};

#[derive(Debug, Parser)]
#[command(name = "cairn-bench", version, about = "A verifying load driver for Redis-compatible servers")]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Apply load, check every reply and the final state.
    Run(RunArgs),
    /// Check every write of an ack log against a server (after a restart).
    Verify(VerifyArgs),
    /// Start Redis, Valkey and Cairn and run a matrix of cells against each (TOML config).
    Matrix(crate::matrix::MatrixArgs),
}

/// Where the server is.
#[derive(Debug, Clone, Args)]
pub struct ServerArgs {
    /// `host:port` of the server (overrides --host/--port).
    #[arg(long)]
    pub target: Option<String>,
    #[arg(long, default_value = "127.0.0.1")]
    pub host: String,
    #[arg(long, short = 'p', default_value_t = 6379)]
    pub port: u16,
    /// AUTH password.
    #[arg(long, env = "CAIRN_BENCH_PASSWORD", hide_env_values = true)]
    pub password: Option<String>,
    #[command(flatten)]
    pub tls: TlsArgs,
}

impl ServerArgs {
    pub fn addr(&self) -> String {
        self.target.clone().unwrap_or_else(|| format!("{}:{}", self.host, self.port))
    }

    /// What `--tls` and its files say, if TLS is on (no file is read here).
    pub fn tls_settings(&self) -> Option<TlsSettings> {
        self.tls.settings(&self.addr())
    }

    /// The loaded TLS client configuration, if TLS is on: a missing or bad file is an error here,
    /// before any connection.
    pub fn tls_client(&self) -> Result<Option<TlsClient>, TlsError> {
        self.tls_settings().as_ref().map(TlsClient::new).transpose()
    }
}

/// RESP over TLS (the server's `--tls-port`).
#[derive(Debug, Clone, Default, Args)]
pub struct TlsArgs {
    /// Connect with TLS (RESP only: the native protocol has no TLS).
    #[arg(long, requires = "tls_ca_cert")]
    pub tls: bool,
    /// PEM bundle of the CA certificates that verify the server's certificate (required with --tls).
    #[arg(long, value_name = "FILE", requires = "tls")]
    pub tls_ca_cert: Option<PathBuf>,
    /// Client certificate chain (PEM), for servers that ask for one (--tls-auth-clients yes|optional).
    #[arg(long, value_name = "FILE", requires_all = ["tls", "tls_key"])]
    pub tls_cert: Option<PathBuf>,
    /// Private key of --tls-cert (PEM).
    #[arg(long, value_name = "FILE", requires_all = ["tls", "tls_cert"])]
    pub tls_key: Option<PathBuf>,
    /// Name sent as SNI and checked against the server's certificate (default: the host part of
    /// the target address).
    #[arg(long, value_name = "NAME", requires = "tls")]
    pub tls_server_name: Option<String>,
}

impl TlsArgs {
    /// The settings for a server at `addr`, if `--tls` is on.
    pub fn settings(&self, addr: &str) -> Option<TlsSettings> {
        if !self.tls {
            return None;
        }
        let identity = match (&self.tls_cert, &self.tls_key) {
            (Some(cert), Some(key)) => Some(ClientIdentity { cert: cert.clone(), key: key.clone() }),
            _ => None,
        };
        Some(TlsSettings {
            ca_cert: self.tls_ca_cert.clone().unwrap_or_default(),
            identity,
            server_name: self.tls_server_name.clone().unwrap_or_else(|| host_of(addr).to_string()),
        })
    }
}

/// The wire protocol of `run`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Protocol {
    /// RESP2 (any Redis-compatible server).
    Resp,
    /// Cairn's native protocol; the requests of one flush (-P) go in one BATCH frame.
    Native,
    /// Cairn's native protocol; one REQUEST frame per request, pipelined (-P) in one write.
    NativePipeline,
}

#[derive(Debug, Clone, Args)]
pub struct RunArgs {
    #[command(flatten)]
    pub server: ServerArgs,
    /// Wire protocol (the native protocol listens on Cairn's --native-port, 7379 by default).
    #[arg(long, value_enum, default_value_t = Protocol::Resp)]
    pub protocol: Protocol,
    /// Operation mix: set,get,incr,lpush,hset with optional weights (set:1,get:9), or `mix`.
    #[arg(long, short = 't', default_value = "set,get")]
    pub ops: String,
    /// Connections (1..=1024).
    #[arg(long, short = 'c', visible_alias = "connections", default_value_t = 50,
          value_parser = clap::value_parser!(u32).range(1..=1024))]
    pub clients: u32,
    /// Driver threads (tokio workers).
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..=256))]
    pub threads: u32,
    /// Socket I/O: `blocking` gives each connection a thread of its own and waits in plain
    /// system calls; `evented` runs every connection on the tokio event loop; `auto` is blocking
    /// when there are no more connections than --threads.
    #[arg(long, value_enum, default_value_t = Io::Auto)]
    pub io: Io,
    /// Requests in flight per connection.
    #[arg(long, short = 'P', default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..=1024))]
    pub pipeline: u32,
    /// Measured requests in total (default 100000 unless --duration is given).
    #[arg(long, short = 'n', conflicts_with = "duration")]
    pub requests: Option<u64>,
    /// Measured duration (e.g. 10s, 500ms).
    #[arg(long)]
    pub duration: Option<String>,
    /// Warm-up before measuring (not counted).
    #[arg(long, default_value = "1s")]
    pub warmup: String,
    /// Value size in bytes (values carry a small header, so tiny sizes grow to fit it).
    #[arg(long, short = 'd', default_value_t = 32, value_parser = clap::value_parser!(u64).range(1..=16_777_216))]
    pub value_size: u64,
    /// Keys in total, split evenly among the connections (each owns its own).
    #[arg(long, short = 'r', default_value_t = 100_000, value_parser = clap::value_parser!(u64).range(1..=100_000_000))]
    pub keyspace: u64,
    #[arg(long, value_enum, default_value_t = KeyPattern::Random)]
    pub key_pattern: KeyPattern,
    #[arg(long, value_enum, default_value_t = Shape::ClosedLoop)]
    pub shape: Shape,
    /// Mean think time of agent-shaped writers (each sleeps uniformly 0..2x before a request).
    #[arg(long, default_value = "5ms")]
    pub think_time: String,
    /// Seed of the per-connection generators (connection i uses a mix of seed and i).
    #[arg(long, default_value_t = 0)]
    pub seed: u64,
    /// Key prefix (default: a fresh run id, so runs never share keys).
    #[arg(long)]
    pub key_prefix: Option<String>,
    /// Do not write the string keys before the warm-up (GETs then mostly miss).
    #[arg(long)]
    pub no_prefill: bool,
    /// Skip reading back every key at the end.
    #[arg(long)]
    pub no_final_check: bool,
    /// Record every acknowledged write here (for `cairn-bench verify`).
    #[arg(long)]
    pub ack_log: Option<PathBuf>,
    /// Print the full report as JSON on stdout instead of text.
    #[arg(long)]
    pub json: bool,
    /// Write the summary (at most 4 KiB of JSON) here, e.g. /dev/termination-log.
    #[arg(long)]
    pub summary_json: Option<PathBuf>,
    /// Never show a progress bar (it only shows on a terminal, and never when CI is set).
    #[arg(long)]
    pub no_progress: bool,
}

impl RunArgs {
    /// The loaded TLS client configuration if `--tls` is on; refuses the native protocol (it has
    /// no TLS) and blocking sockets (a TLS session needs an evented one).
    pub fn tls_client(&self) -> Result<Option<TlsClient>, TlsError> {
        if !self.server.tls.tls {
            return Ok(None);
        }
        if self.protocol != Protocol::Resp {
            return Err(TlsError::NativeProtocol);
        }
        if self.io == Io::Blocking {
            return Err(TlsError::BlockingIo);
        }
        self.server.tls_client()
    }

    /// The socket mode asked for; TLS connections are always evented.
    fn io(&self) -> Io {
        if self.server.tls.tls {
            Io::Evented
        } else {
            self.io
        }
    }

    pub fn config(&self) -> Result<RunConfig, WorkloadError> {
        let stop = match (&self.duration, self.requests) {
            (Some(d), _) => Stop::Duration(parse_duration(d)?),
            (None, Some(n)) => Stop::Requests(n),
            (None, None) => Stop::Requests(100_000),
        };
        Ok(RunConfig {
            mix: OpMix::parse(&self.ops)?,
            clients: self.clients,
            pipeline: self.pipeline,
            threads: self.threads as usize,
            io: self.io(),
            stop,
            warmup: parse_duration(&self.warmup)?,
            keyspace: self.keyspace,
            key_pattern: self.key_pattern,
            shape: self.shape,
            think_time: parse_duration(&self.think_time)?,
            seed: self.seed,
            namer: KeyNamer {
                prefix: self.key_prefix.clone().unwrap_or_else(fresh_prefix),
                value_size: self.value_size as usize,
            },
            prefill: !self.no_prefill,
            final_check: !self.no_final_check,
            max_reported_mismatches: 10,
        }
        .resolve_io())
    }
}

#[derive(Debug, Clone, Args)]
pub struct VerifyArgs {
    #[command(flatten)]
    pub server: ServerArgs,
    /// The ack log written by `run --ack-log`.
    #[arg(long)]
    pub ack_log: PathBuf,
    /// Print the report as JSON.
    #[arg(long)]
    pub json: bool,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn accepts_the_operator_job_command_line() {
        // As operator/src/builders/job.rs builds it.
        let cli = Cli::try_parse_from([
            "cairn-bench",
            "run",
            "--target",
            "demo.default.svc:6379",
            "--ops",
            "set,get",
            "--clients",
            "50",
            "--pipeline",
            "1",
            "--duration",
            "30s",
            "--value-size",
            "32",
            "--shape",
            "agent-shaped",
            "--think-time",
            "50ms",
            "--summary-json",
            "/dev/termination-log",
        ])
        .unwrap();
        let Command::Run(args) = cli.command else { panic!("not run") };
        assert_eq!(args.server.addr(), "demo.default.svc:6379");
        let config = args.config().unwrap();
        assert_eq!(config.stop, Stop::Duration(std::time::Duration::from_secs(30)));
        assert_eq!(config.shape, Shape::AgentShaped);
        assert_eq!(config.think_time, std::time::Duration::from_millis(50));
    }

    #[test]
    fn rejects_out_of_range_flags() {
        assert!(Cli::try_parse_from(["cairn-bench", "run", "--clients", "1025"]).is_err());
        assert!(Cli::try_parse_from(["cairn-bench", "run", "--clients", "0"]).is_err());
        assert!(Cli::try_parse_from(["cairn-bench", "run", "-n", "5", "--duration", "1s"]).is_err());
        let cli = Cli::try_parse_from(["cairn-bench", "run", "--ops", "nope"]).unwrap();
        let Command::Run(args) = cli.command else { panic!("not run") };
        assert!(args.config().is_err());
    }

    fn run_args(extra: &[&str]) -> Result<RunArgs, clap::Error> {
        let mut argv = vec!["cairn-bench", "run", "--target", "demo.default.svc:6379"];
        argv.extend_from_slice(extra);
        match Cli::try_parse_from(argv)?.command {
            Command::Run(args) => Ok(args),
            other => panic!("not run: {other:?}"),
        }
    }

    #[test]
    fn tls_flags_name_the_files_and_default_the_server_name_to_the_target_host() {
        let args = run_args(&["--tls", "--tls-ca-cert", "/t/ca.crt"]).unwrap();
        let settings = args.server.tls_settings().expect("TLS on");
        assert_eq!(settings.ca_cert, PathBuf::from("/t/ca.crt"));
        assert_eq!((settings.identity, settings.server_name.as_str()), (None, "demo.default.svc"));

        let args = run_args(&[
            "--tls",
            "--tls-ca-cert",
            "/t/ca.crt",
            "--tls-cert",
            "/t/tls.crt",
            "--tls-key",
            "/t/tls.key",
            "--tls-server-name",
            "cairn.example",
        ])
        .unwrap();
        let settings = args.server.tls_settings().expect("TLS on");
        let identity = settings.identity.expect("client identity");
        assert_eq!((identity.cert, identity.key), (PathBuf::from("/t/tls.crt"), PathBuf::from("/t/tls.key")));
        assert_eq!(settings.server_name, "cairn.example");
        assert!(run_args(&[]).unwrap().server.tls_settings().is_none());
    }

    #[test]
    fn tls_flags_that_cannot_work_are_usage_errors() {
        for extra in [
            &["--tls"][..],
            &["--tls-ca-cert", "/t/ca.crt"],
            &["--tls", "--tls-ca-cert", "/t/ca.crt", "--tls-cert", "/t/tls.crt"],
            &["--tls", "--tls-ca-cert", "/t/ca.crt", "--tls-key", "/t/tls.key"],
            &["--tls-server-name", "x"],
        ] {
            assert!(run_args(extra).is_err(), "{extra:?} was accepted");
        }
    }

    #[test]
    fn tls_refuses_the_native_protocol_and_blocking_sockets_and_makes_auto_evented() {
        let tls = ["--tls", "--tls-ca-cert", "/nonexistent/ca.crt"];
        for protocol in ["native", "native-pipeline"] {
            let args = run_args(&[&tls[..], &["--protocol", protocol]].concat()).unwrap();
            assert!(matches!(args.tls_client(), Err(TlsError::NativeProtocol)), "{protocol}");
        }
        let args = run_args(&[&tls[..], &["--io", "blocking"]].concat()).unwrap();
        assert!(matches!(args.tls_client(), Err(TlsError::BlockingIo)));
        // One connection on one thread would be blocking without TLS.
        let args = run_args(&[&tls[..], &["--clients", "1"]].concat()).unwrap();
        assert_eq!(args.config().unwrap().io, Io::Evented);
        assert!(matches!(args.tls_client(), Err(TlsError::Read { .. })), "the CA file is read up front");
        assert_eq!(run_args(&["--clients", "1"]).unwrap().config().unwrap().io, Io::Blocking);
    }
}

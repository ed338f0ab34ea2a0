//! `cairn-crashfs mount MOUNTPOINT --control SOCKET` mounts the power-cut filesystem and serves
//! its control socket until `stop`; `cairn-crashfs ctl SOCKET COMMAND...` sends one command.
//!
//! # Layout
//! Command-line edges only; the filesystem lives in the library (`lib.rs`).

use anyhow::Context;
use cairn_crashfs::{control, fuse::CrashFs, model::Fs, model::Metadata};
use clap::{Parser, Subcommand};
use std::os::unix::net::UnixListener;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};

#[derive(Parser, Debug)]
#[command(name = "cairn-crashfs", about = "FUSE filesystem that loses unsynced data on a simulated power cut")]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand, Debug)]
enum Command {
    /// Mount (foreground) and serve the control socket until `stop`.
    Mount {
        mountpoint: PathBuf,
        #[arg(long)]
        control: PathBuf,
        /// `strict`: a directory's entries are durable after that directory's fsync (POSIX);
        /// `journal`: any fsync commits all directory changes made before it (ext4-like).
        #[arg(long, default_value = "strict", value_parser = ["strict", "journal"])]
        metadata: String,
    },
    /// Send one command to a mounted crashfs: cut, cut-torn SEED, sync, stats, stop.
    Ctl {
        control: PathBuf,
        #[arg(required = true)]
        command: Vec<String>,
    },
}

fn main() -> anyhow::Result<()> {
    match Cli::parse().command {
        Command::Mount { mountpoint, control, metadata } => {
            let metadata = if metadata == "journal" { Metadata::Journal } else { Metadata::Strict };
            mount(&mountpoint, &control, metadata)
        }
        Command::Ctl { control, command } => {
            println!("{}", control::request(&control, &command.join(" "))?);
            Ok(())
        }
    }
}

fn mount(mountpoint: &PathBuf, control_path: &PathBuf, metadata: Metadata) -> anyhow::Result<()> {
    let model = Arc::new(Mutex::new(Fs::new(metadata)));
    let mut config = fuser::Config::default();
    config.mount_options = vec![fuser::MountOption::FSName("cairn-crashfs".into()), fuser::MountOption::RW];
    let session = fuser::spawn_mount(CrashFs::new(model.clone()), mountpoint, &config)
        .with_context(|| format!("cannot mount crashfs on {}", mountpoint.display()))?;
    let _ = std::fs::remove_file(control_path);
    let listener = UnixListener::bind(control_path)
        .with_context(|| format!("cannot bind control socket {}", control_path.display()))?;
    eprintln!(
        "crashfs mounted on {} ({metadata:?} metadata), control socket {}",
        mountpoint.display(),
        control_path.display()
    );
    control::serve(&listener, &model);
    drop(session);
    let _ = std::fs::remove_file(control_path);
    Ok(())
}

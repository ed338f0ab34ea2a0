//! `cairn-crashfs mount MOUNTPOINT --control SOCKET` mounts the power-cut filesystem and serves
//! its control socket until `stop`; `cairn-crashfs ctl SOCKET COMMAND...` sends one command.
//!
//! # Layout
//! Command-line edges only; the filesystem lives in the library (`lib.rs`).

use anyhow::Context;
use cairn_crashfs::{control, fuse::CrashFs, model::Fs};
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
        Command::Mount { mountpoint, control } => mount(&mountpoint, &control),
        Command::Ctl { control, command } => {
            println!("{}", control::request(&control, &command.join(" "))?);
            Ok(())
        }
    }
}

fn mount(mountpoint: &PathBuf, control_path: &PathBuf) -> anyhow::Result<()> {
    let model = Arc::new(Mutex::new(Fs::default()));
    let mut config = fuser::Config::default();
    config.mount_options = vec![fuser::MountOption::FSName("cairn-crashfs".into()), fuser::MountOption::RW];
    let session = fuser::spawn_mount(CrashFs::new(model.clone()), mountpoint, &config)
        .with_context(|| format!("cannot mount crashfs on {}", mountpoint.display()))?;
    let _ = std::fs::remove_file(control_path);
    let listener = UnixListener::bind(control_path)
        .with_context(|| format!("cannot bind control socket {}", control_path.display()))?;
    eprintln!("crashfs mounted on {}, control socket {}", mountpoint.display(), control_path.display());
    control::serve(&listener, &model);
    drop(session);
    let _ = std::fs::remove_file(control_path);
    Ok(())
}

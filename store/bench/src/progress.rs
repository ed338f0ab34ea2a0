//! A progress bar on stderr, for people at a terminal (never in CI, never when piped).

use std::io::IsTerminal;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use indicatif::{ProgressBar, ProgressStyle};
use tokio::task::JoinHandle;

use crate::config::Stop;
use crate::driver::Shared;

/// Whether a progress bar makes sense here: stderr is a terminal and `CI` is not set.
pub fn wanted() -> bool {
    std::io::stderr().is_terminal() && std::env::var_os("CI").is_none()
}

/// The ticking bar; [`Progress::finish`] clears it.
#[derive(Debug)]
pub struct Progress {
    stop: Arc<AtomicBool>,
    task: JoinHandle<()>,
}

impl Progress {
    pub fn start(shared: Arc<Shared>, started: Instant) -> Progress {
        let stop = Arc::new(AtomicBool::new(false));
        let task = tokio::spawn(tick(shared, started, stop.clone()));
        Progress { stop, task }
    }

    pub async fn finish(self) {
        self.stop.store(true, Ordering::Relaxed);
        let _ = self.task.await;
    }
}

async fn tick(shared: Arc<Shared>, started: Instant, stop: Arc<AtomicBool>) {
    let warmup = shared.config.warmup;
    let (len, by_time) = match shared.config.stop {
        Stop::Duration(d) => ((warmup + d).as_millis() as u64, true),
        Stop::Requests(n) => (n, false),
    };
    let bar = ProgressBar::new(len);
    let template = if by_time { "{bar:40} {elapsed} {msg}" } else { "{bar:40} {pos}/{len} {msg}" };
    if let Ok(style) = ProgressStyle::with_template(template) {
        bar.set_style(style);
    }
    let mut last = (Instant::now(), 0u64);
    while !stop.load(Ordering::Relaxed) {
        tokio::time::sleep(Duration::from_millis(250)).await;
        let now = Instant::now();
        let replies = shared.replies.load(Ordering::Relaxed);
        let rate = (replies - last.1) as f64 / now.duration_since(last.0).as_secs_f64().max(1e-3);
        last = (now, replies);
        let position = if by_time {
            now.duration_since(started).as_millis() as u64
        } else {
            shared.claimed.load(Ordering::Relaxed).min(len)
        };
        bar.set_position(position.min(len));
        let phase = if now < started + warmup { "warm-up" } else { "measuring" };
        bar.set_message(format!("{phase} {rate:.0} ops/s"));
    }
    bar.finish_and_clear();
}

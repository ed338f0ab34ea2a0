//! The control socket: one line in, one line out, per connection.
//!
//! | command | effect |
//! |---|---|
//! | `cut` | power cut: everything unsynced is lost |
//! | `cut-torn SEED` | power cut where the last unsynced write of each file lands partially |
//! | `sync` | write everything back (as the kernel would, given time) |
//! | `stats` | counters and resident bytes |
//! | `stop` | unmount and exit |

use crate::model::Fs;
use std::io::{BufRead, BufReader, Write};
use std::os::unix::net::{UnixListener, UnixStream};
use std::path::Path;
use std::sync::{Arc, Mutex};

#[derive(Debug, thiserror::Error)]
pub enum ControlError {
    #[error("control socket {path}: {source}")]
    Io { path: String, source: std::io::Error },
    #[error("crashfs refused '{command}': {reply}")]
    Refused { command: String, reply: String },
}

/// Serves commands until `stop`.
pub fn serve(listener: &UnixListener, model: &Arc<Mutex<Fs>>) {
    for stream in listener.incoming() {
        let Ok(stream) = stream else { continue };
        if handle(stream, model) {
            return;
        }
    }
}

/// Answers one connection; true when it asked to stop.
fn handle(stream: UnixStream, model: &Arc<Mutex<Fs>>) -> bool {
    let mut line = String::new();
    let Ok(reader) = stream.try_clone() else { return false };
    if BufReader::new(reader).read_line(&mut line).is_err() {
        return false;
    }
    let words: Vec<&str> = line.split_whitespace().collect();
    let (reply, stop) = execute(&words, model);
    let mut stream = stream;
    let _ = writeln!(stream, "{reply}");
    stop
}

fn execute(words: &[&str], model: &Arc<Mutex<Fs>>) -> (String, bool) {
    let mut fs = model.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
    match words {
        ["cut"] => {
            let before = fs.stats.pages_dropped;
            fs.cut(None);
            (format!("ok pages_dropped={}", fs.stats.pages_dropped - before), false)
        }
        ["cut-torn", seed] => match seed.parse() {
            Ok(seed) => {
                let (before, torn) = (fs.stats.pages_dropped, fs.stats.torn_bytes_kept);
                fs.cut(Some(seed));
                let dropped = fs.stats.pages_dropped - before;
                (format!("ok pages_dropped={dropped} torn_bytes_kept={}", fs.stats.torn_bytes_kept - torn), false)
            }
            Err(_) => (format!("err bad seed '{seed}'"), false),
        },
        ["sync"] => {
            fs.sync_all();
            ("ok".to_string(), false)
        }
        ["stats"] => {
            let s = &fs.stats;
            let (live, disk) = fs.resident();
            let line = format!(
                "ok writes={} bytes_written={} file_syncs={} dir_syncs={} cuts={} pages_dropped={} \
                 torn_bytes_kept={} live_bytes={live} disk_bytes={disk}",
                s.writes, s.bytes_written, s.file_syncs, s.dir_syncs, s.cuts, s.pages_dropped, s.torn_bytes_kept
            );
            (line, false)
        }
        ["stop"] => ("ok".to_string(), true),
        _ => (format!("err unknown command '{}'", words.join(" ")), false),
    }
}

/// Sends one command and returns the reply line (an `err` reply is an error).
pub fn request(path: &Path, command: &str) -> Result<String, ControlError> {
    let io = |source| ControlError::Io { path: path.display().to_string(), source };
    let mut stream = UnixStream::connect(path).map_err(io)?;
    writeln!(stream, "{command}").map_err(io)?;
    let mut reply = String::new();
    BufReader::new(stream).read_line(&mut reply).map_err(io)?;
    let reply = reply.trim_end().to_string();
    if reply.starts_with("ok") {
        Ok(reply)
    } else {
        Err(ControlError::Refused { command: command.to_string(), reply })
    }
}

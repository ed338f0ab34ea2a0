//! The per-writer ack log: one line per acknowledged write, plus at most one last line for the
//! write whose outcome the writer never learnt (sent, but no complete reply).
//!
//! ```text
//! # writer 3 started 1764685507000000
//! A <seq> <ack time µs> <op fields> <reply>      acknowledged: the reply was fully read
//! U <seq> <send time µs> <op fields> <reason>    uncertain: may or may not have been applied
//! ```

use crate::ops::Op;
use anyhow::{bail, Context};
use std::fs::File;
use std::io::{BufRead, BufReader, BufWriter, Write};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

/// How often a writer pushes its buffered log lines to the file.
const FLUSH_EVERY: Duration = Duration::from_millis(50);

/// What the writer knows about one write it sent.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Outcome {
    Acked { reply: String },
    Uncertain { reason: String },
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Entry {
    pub seq: u64,
    pub time_us: u64,
    pub op: Op,
    pub outcome: Outcome,
}

impl Entry {
    pub fn is_acked(&self) -> bool {
        matches!(self.outcome, Outcome::Acked { .. })
    }
}

/// Everything one writer logged.
#[derive(Debug, Clone, Default)]
pub struct WriterLog {
    pub name: String,
    pub started_us: u64,
    pub entries: Vec<Entry>,
}

/// Microseconds since the Unix epoch.
pub fn now_us() -> u64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map(|d| d.as_micros() as u64).unwrap_or(0)
}

pub fn log_path(dir: &Path, writer: usize) -> PathBuf {
    dir.join(format!("w{writer:03}.log"))
}

/// Appends log lines, flushing at least every `FLUSH_EVERY`.
pub struct AckLogWriter {
    out: BufWriter<File>,
    last_flush: Instant,
}

impl AckLogWriter {
    pub fn create(path: &Path, writer: usize) -> anyhow::Result<AckLogWriter> {
        let file = File::create(path).with_context(|| format!("cannot create ack log {}", path.display()))?;
        let mut log = AckLogWriter { out: BufWriter::new(file), last_flush: Instant::now() };
        writeln!(log.out, "# writer {writer} started {}", now_us())?;
        Ok(log)
    }

    pub fn acked(&mut self, seq: u64, op: &Op, reply: &str) -> anyhow::Result<()> {
        writeln!(self.out, "A {seq} {} {op} {reply}", now_us())?;
        self.maybe_flush()
    }

    pub fn uncertain(&mut self, seq: u64, sent_us: u64, op: &Op, reason: &str) -> anyhow::Result<()> {
        writeln!(self.out, "U {seq} {sent_us} {op} {}", reason.replace([' ', '\n'], "_"))?;
        self.flush()
    }

    fn maybe_flush(&mut self) -> anyhow::Result<()> {
        if self.last_flush.elapsed() >= FLUSH_EVERY {
            self.flush()?;
        }
        Ok(())
    }

    pub fn flush(&mut self) -> anyhow::Result<()> {
        self.out.flush()?;
        self.last_flush = Instant::now();
        Ok(())
    }
}

/// Reads every `w*.log` in `dir`, sorted by name.
pub fn read_dir(dir: &Path) -> anyhow::Result<Vec<WriterLog>> {
    let mut paths: Vec<PathBuf> = std::fs::read_dir(dir)
        .with_context(|| format!("cannot list ack log dir {}", dir.display()))?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "log"))
        .collect();
    paths.sort();
    paths.iter().map(|p| read_file(p)).collect()
}

/// Reads one ack log. A last line without a newline (a writer that died mid-line) is dropped:
/// the write it describes then counts as not acknowledged, which only makes the check weaker.
pub fn read_file(path: &Path) -> anyhow::Result<WriterLog> {
    let file = File::open(path).with_context(|| format!("cannot open ack log {}", path.display()))?;
    let mut log = WriterLog { name: path.display().to_string(), ..WriterLog::default() };
    let mut reader = BufReader::new(file);
    let mut line = String::new();
    let mut number = 0;
    loop {
        line.clear();
        if reader.read_line(&mut line)? == 0 || !line.ends_with('\n') {
            break;
        }
        number += 1;
        parse_line(line.trim_end(), &mut log).with_context(|| format!("{}:{number}", path.display()))?;
    }
    Ok(log)
}

fn parse_line(line: &str, log: &mut WriterLog) -> anyhow::Result<()> {
    let fields: Vec<&str> = line.split(' ').collect();
    match fields.first().copied() {
        Some("#") => {
            if let Some(pos) = fields.iter().position(|f| *f == "started") {
                log.started_us = fields.get(pos + 1).and_then(|t| t.parse().ok()).unwrap_or(0);
            }
            Ok(())
        }
        Some(tag @ ("A" | "U")) => {
            log.entries.push(parse_entry(tag, &fields)?);
            Ok(())
        }
        _ => bail!("unrecognised ack log line '{line}'"),
    }
}

fn parse_entry(tag: &str, fields: &[&str]) -> anyhow::Result<Entry> {
    let (Some(seq), Some(time_us), Some(op_tag)) = (fields.get(1), fields.get(2), fields.get(3)) else {
        bail!("short ack log line");
    };
    let count = Op::field_count(op_tag).context("unknown operation tag")?;
    let op_fields = fields.get(3..3 + count).context("short operation")?;
    let op = Op::parse(op_fields).context("bad operation")?;
    let last = fields.get(3 + count).context("missing reply or reason")?.to_string();
    let outcome = if tag == "A" { Outcome::Acked { reply: last } } else { Outcome::Uncertain { reason: last } };
    Ok(Entry { seq: seq.parse().context("bad seq")?, time_us: time_us.parse().context("bad time")?, op, outcome })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn written_logs_read_back() {
        let dir = std::env::temp_dir().join(format!("crashtest-acklog-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = log_path(&dir, 2);
        let mut log = AckLogWriter::create(&path, 2).unwrap();
        let set = Op::Set { key: "k".into(), value: "v".into() };
        let hset = Op::Hset { key: "h".into(), field: "f".into(), value: "v2".into() };
        log.acked(1, &set, "OK").unwrap();
        log.uncertain(2, 99, &hset, "connection reset").unwrap();
        drop(log);
        std::fs::OpenOptions::new().append(true).open(&path).unwrap().write_all(b"A 3 1 I c").unwrap();
        let read = read_dir(&dir).unwrap();
        std::fs::remove_dir_all(&dir).unwrap();
        assert_eq!(read.len(), 1);
        let entries = &read[0].entries;
        assert_eq!(entries.len(), 2, "the torn last line is dropped");
        assert_eq!(entries[0].op, set);
        assert_eq!(entries[0].outcome, Outcome::Acked { reply: "OK".into() });
        assert_eq!(entries[1].op, hset);
        assert_eq!(entries[1].outcome, Outcome::Uncertain { reason: "connection_reset".into() });
        assert!(read[0].started_us > 0);
    }
}

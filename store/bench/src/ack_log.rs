//! The ack log: every write the server acknowledged (and whose reply verified), one short text
//! line each, appended by a writer thread that flushes in batches.
//!
//! ```text
//! # cairn-bench ack-log v1 prefix=cb5f3a value_size=32
//! s 3 17 5        <- family tag, connection, key index, version (counter value, list length)
//! ```

use std::collections::HashMap;
use std::fs::File;
use std::io::{BufRead, BufReader, BufWriter, Write};
use std::path::{Path, PathBuf};
use std::sync::mpsc;
use std::thread::JoinHandle;
use std::time::Duration;

use crate::keys::Family;
use crate::model::Ack;

const MAGIC: &str = "# cairn-bench ack-log v1";
/// The writer flushes when no batch arrived for this long (and whenever its buffer fills).
const FLUSH_IDLE: Duration = Duration::from_millis(50);

/// Problems with an ack log.
#[derive(Debug, thiserror::Error)]
pub enum AckLogError {
    #[error("ack log {path}: {source}")]
    Io { path: PathBuf, source: std::io::Error },
    #[error("ack log {path} line {line}: {message}")]
    Format { path: PathBuf, line: usize, message: String },
}

/// Appends one ack's line to `out`.
pub fn push_line(out: &mut Vec<u8>, ack: &Ack) {
    let _ = writeln!(out, "{} {} {} {}", ack.family.tag() as char, ack.conn, ack.k, ack.version);
}

/// The sending side: connections send the lines of one batch at a time.
#[derive(Debug, Clone)]
pub struct AckSink(mpsc::Sender<Vec<u8>>);

impl AckSink {
    pub fn send(&self, lines: Vec<u8>) {
        // The writer only stops early after an I/O error, which `AckWriter::finish` reports.
        let _ = self.0.send(lines);
    }
}

/// The writer thread; [`AckWriter::finish`] waits for it after every sink is dropped.
#[derive(Debug)]
pub struct AckWriter {
    path: PathBuf,
    thread: JoinHandle<std::io::Result<()>>,
}

impl AckWriter {
    /// Creates (truncates) `path`, writes the header, and starts the writer thread.
    pub fn create(path: &Path, prefix: &str, value_size: usize) -> Result<(AckSink, AckWriter), AckLogError> {
        let io = |source| AckLogError::Io { path: path.to_path_buf(), source };
        let mut file = BufWriter::with_capacity(256 * 1024, File::create(path).map_err(io)?);
        writeln!(file, "{MAGIC} prefix={prefix} value_size={value_size}").map_err(io)?;
        file.flush().map_err(io)?;
        let (tx, rx) = mpsc::channel::<Vec<u8>>();
        let thread =
            std::thread::Builder::new().name("ack-log".into()).spawn(move || write_batches(file, rx)).map_err(io)?;
        Ok((AckSink(tx), AckWriter { path: path.to_path_buf(), thread }))
    }

    /// Waits for the writer to drain, flush and fsync.
    pub fn finish(self) -> Result<(), AckLogError> {
        let path = self.path.clone();
        match self.thread.join() {
            Ok(result) => result.map_err(|source| AckLogError::Io { path, source }),
            Err(_) => Err(AckLogError::Io { path, source: std::io::Error::other("ack-log writer panicked") }),
        }
    }
}

fn write_batches(mut file: BufWriter<File>, rx: mpsc::Receiver<Vec<u8>>) -> std::io::Result<()> {
    loop {
        match rx.recv_timeout(FLUSH_IDLE) {
            Ok(lines) => file.write_all(&lines)?,
            Err(mpsc::RecvTimeoutError::Timeout) => file.flush()?,
            Err(mpsc::RecvTimeoutError::Disconnected) => break,
        }
    }
    file.flush()?;
    file.get_ref().sync_all()
}

/// A parsed ack log: for each key, the versions acknowledged.
#[derive(Debug, Default)]
pub struct AckLogContents {
    pub prefix: String,
    pub value_size: usize,
    /// `(family, conn, k)` → acknowledged versions, in log order.
    pub keys: HashMap<(Family, u32, u64), Vec<u64>>,
    pub acks: u64,
}

/// Reads an ack log written by [`AckWriter`].
pub fn read(path: &Path) -> Result<AckLogContents, AckLogError> {
    let io = |source| AckLogError::Io { path: path.to_path_buf(), source };
    let format = |line: usize, message: String| AckLogError::Format { path: path.to_path_buf(), line, message };
    let mut lines = BufReader::new(File::open(path).map_err(io)?).lines();
    let header = lines.next().transpose().map_err(io)?.unwrap_or_default();
    let mut contents = parse_header(&header).ok_or_else(|| format(1, format!("not an ack log header: {header:?}")))?;
    for (i, line) in lines.enumerate() {
        let line = line.map_err(io)?;
        let number = i + 2;
        let (family, conn, k, version) =
            parse_line(&line).ok_or_else(|| format(number, format!("not an ack record: {line:?}")))?;
        contents.keys.entry((family, conn, k)).or_default().push(version);
        contents.acks += 1;
    }
    Ok(contents)
}

fn parse_header(line: &str) -> Option<AckLogContents> {
    let rest = line.strip_prefix(MAGIC)?;
    let mut contents = AckLogContents::default();
    for word in rest.split_whitespace() {
        match word.split_once('=')? {
            ("prefix", p) => contents.prefix = p.to_string(),
            ("value_size", v) => contents.value_size = v.parse().ok()?,
            _ => {}
        }
    }
    (!contents.prefix.is_empty()).then_some(contents)
}

fn parse_line(line: &str) -> Option<(Family, u32, u64, u64)> {
    let mut words = line.split(' ');
    let tag = words.next().filter(|t| t.len() == 1)?;
    let family = Family::from_tag(tag.as_bytes()[0])?;
    let conn = words.next()?.parse().ok()?;
    let k = words.next()?.parse().ok()?;
    let version = words.next()?.parse().ok()?;
    words.next().is_none().then_some((family, conn, k, version))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn temp(name: &str) -> PathBuf {
        std::env::temp_dir().join(format!("cairn-bench-{}-{name}", std::process::id()))
    }

    #[test]
    fn round_trips_through_the_writer_thread() {
        let path = temp("ack-roundtrip");
        let (sink, writer) = AckWriter::create(&path, "cbx", 64).unwrap();
        let mut batch = Vec::new();
        push_line(&mut batch, &Ack { family: Family::Strings, conn: 1, k: 2, version: 3 });
        push_line(&mut batch, &Ack { family: Family::Strings, conn: 1, k: 2, version: 4 });
        sink.send(batch);
        let mut batch = Vec::new();
        push_line(&mut batch, &Ack { family: Family::Lists, conn: 0, k: 9, version: 1 });
        sink.clone().send(batch);
        drop(sink);
        writer.finish().unwrap();
        let log = read(&path).unwrap();
        assert_eq!(log.prefix, "cbx");
        assert_eq!(log.value_size, 64);
        assert_eq!(log.acks, 3);
        assert_eq!(log.keys[&(Family::Strings, 1, 2)], vec![3, 4]);
        assert_eq!(log.keys[&(Family::Lists, 0, 9)], vec![1]);
        let _ = std::fs::remove_file(path);
    }

    #[test]
    fn reports_the_line_of_a_bad_record() {
        let path = temp("ack-bad");
        std::fs::write(&path, format!("{MAGIC} prefix=p value_size=8\ns 1 2 3\nq 1 2\n")).unwrap();
        let err = read(&path).unwrap_err().to_string();
        assert!(err.contains("line 3"), "{err}");
        std::fs::write(&path, "hello\n").unwrap();
        assert!(read(&path).unwrap_err().to_string().contains("header"));
        let _ = std::fs::remove_file(path);
    }
}

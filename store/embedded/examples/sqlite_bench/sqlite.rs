//! The SQLite side: one connection per writer thread, WAL journal,
//! `synchronous=FULL`, busy timeout, one INSERT per transaction (autocommit).

use std::path::Path;
use std::time::Duration;

use anyhow::Context;
use per_thread::PerThread;
use rusqlite::Connection;

use crate::run::{key, measure, Measured, Target};
use crate::Args;

const BUSY_TIMEOUT: Duration = Duration::from_secs(30);

fn connect(path: &Path) -> anyhow::Result<Connection> {
    let conn = Connection::open(path).with_context(|| format!("open {}", path.display()))?;
    conn.busy_timeout(BUSY_TIMEOUT)?;
    let mode: String = conn.query_row("PRAGMA journal_mode=WAL", [], |row| row.get(0))?;
    anyhow::ensure!(mode.eq_ignore_ascii_case("wal"), "SQLite refused WAL mode ({mode})");
    conn.execute_batch("PRAGMA synchronous=FULL")?;
    Ok(conn)
}

struct Sqlite(PerThread<Connection>);

impl Target for Sqlite {
    fn append(&self, writer: usize, n: usize, value: &[u8]) -> anyhow::Result<()> {
        self.0.with(writer, |conn| {
            let mut insert = conn.prepare_cached("INSERT INTO kv(k, v) VALUES (?1, ?2)")?;
            insert.execute(rusqlite::params![key(writer, n), value])?;
            Ok(())
        })
    }
}

pub fn run(args: &Args, dir: &Path, writers: usize) -> anyhow::Result<Measured> {
    std::fs::create_dir_all(dir)?;
    let path = dir.join("bench.sqlite");
    connect(&path)?.execute_batch("CREATE TABLE kv (k TEXT PRIMARY KEY, v BLOB NOT NULL)")?;
    let connections = (0..writers).map(|_| connect(&path)).collect::<anyhow::Result<Vec<_>>>()?;
    measure(args, writers, &Sqlite(PerThread::new(connections)))
}

/// One connection per writer, each used only by its own thread.
mod per_thread {
    use std::sync::Mutex;

    pub struct PerThread<T>(Vec<Mutex<T>>);

    impl<T> PerThread<T> {
        pub fn new(items: Vec<T>) -> Self {
            PerThread(items.into_iter().map(Mutex::new).collect())
        }

        /// Runs `f` on item `index` (its lock is never contended: one writer each).
        pub fn with<R>(&self, index: usize, f: impl FnOnce(&mut T) -> anyhow::Result<R>) -> anyhow::Result<R> {
            let mut item = self.0[index].lock().map_err(|_| anyhow::anyhow!("connection lock poisoned"))?;
            f(&mut item)
        }
    }
}

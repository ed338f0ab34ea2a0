//! [`Db`]: an open data directory, its lifecycle (open: lock, recover,
//! start the background threads; close: stop them, sync and close the log,
//! unlock), handles on its other databases ([`Db::select`]) and the generic
//! command call every typed call goes through.

use std::path::{Path, PathBuf};
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::thread::JoinHandle;

use cairn_server::persistence::lock::DirLock;
use cairn_server::persistence::Persistence;
use cairn_server::server::Server;
use cairn_server::Shutdown;
use parking_lot::Mutex;

use crate::error::{Error, Result};
use crate::options::{DbOptions, Tier};
use crate::reply::{self, Reply};
use crate::session::{Pool, Session};

/// An open Cairn data directory, in this process, and one of its databases
/// (0 from [`Db::open`], another from [`Db::select`]). `Send + Sync`: share
/// it between threads by reference or in an `Arc`; concurrent writers share
/// group commit in the `sync` tier.
pub struct Db {
    shared: Arc<Shared>,
    /// The database (SELECT index) every call of this handle runs in.
    index: usize,
}

/// What every handle on one open directory shares; the directory closes
/// when [`Db::close`] is called or the last handle is dropped.
struct Shared {
    server: Arc<Server>,
    sessions: Pool,
    threads: Mutex<Vec<JoinHandle<()>>>,
    /// Released last, after the log is closed; `None` once closed.
    lock: Mutex<Option<DirLock>>,
    path: PathBuf,
}

impl std::fmt::Debug for Db {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Db")
            .field("path", &self.shared.path)
            .field("database", &self.index)
            .field("durability", &self.durability())
            .finish()
    }
}

impl Db {
    /// Opens (creating it if needed) the data directory at `path`: takes its
    /// lock file, rebuilds the keyspace from the newest snapshot and the log
    /// after it, and opens the log for appending, exactly as the server does.
    pub fn open(path: impl AsRef<Path>, options: DbOptions) -> Result<Db> {
        let path = path.as_ref().to_path_buf();
        std::fs::create_dir_all(&path).map_err(|source| Error::Open { path: path.clone(), source })?;
        let lock = DirLock::acquire(&path).map_err(Error::from_lock)?;
        let config = options.to_config(&path);
        let mut persistence = Persistence::new(&config);
        // Callers wait for their own writes on their own threads (`Session::await_durable`).
        persistence.caller_rounds = true;
        let server = Arc::new(Server::with_persistence(config, 0, 1, Shutdown::new(), persistence));
        let recovered = cairn_server::persistence::recover::recover(&server)?;
        server.persistence.loading.store(false, Ordering::Release);
        server.health.set_recovering(false);
        tracing::info!(
            path = %path.display(),
            snapshot_lsn = recovered.snapshot_lsn,
            log_records = recovered.log.records_replayed,
            replay_errors = recovered.replay_errors,
            durability = %server.persistence.tier(),
            "embedded database open"
        );
        let shared = Shared {
            server: server.clone(),
            sessions: Pool::default(),
            threads: Mutex::new(Vec::new()),
            lock: Mutex::new(Some(lock)),
            path,
        };
        // On failure `shared` is dropped, which closes the log and unlocks.
        *shared.threads.lock() = crate::background::spawn(&server).map_err(Error::Thread)?;
        Ok(Db { shared: Arc::new(shared), index: 0 })
    }

    /// A handle on database `index` (SELECT) of the same open directory:
    /// its calls and batches run there. [`Error::Server`] with Redis's
    /// message when `index` is not below `DbOptions::databases`.
    pub fn select(&self, index: usize) -> Result<Db> {
        if index >= self.shared.server.config.databases {
            return Err(Error::Server("ERR DB index is out of range".to_string()));
        }
        Ok(Db { shared: self.shared.clone(), index })
    }

    /// The database this handle's calls run in.
    pub fn index(&self) -> usize {
        self.index
    }

    /// The data directory.
    pub fn path(&self) -> &Path {
        &self.shared.path
    }

    pub fn durability(&self) -> Tier {
        self.shared.server.persistence.tier()
    }

    /// Stops the background threads, syncs and closes the log (in the
    /// `none` tier, saves a snapshot) and releases the lock, reporting a log
    /// that failed. Dropping the last handle does the same without the
    /// report. With other handles of the directory still open (from
    /// [`Db::select`]) only this handle goes, and the call returns
    /// [`Error::InUse`]: the directory closes when the last one is dropped.
    pub fn close(self) -> Result<()> {
        let shared = Arc::try_unwrap(self.shared).map_err(|shared| Error::InUse(Arc::strong_count(&shared) - 1))?;
        shared.shutdown();
        match shared.server.persistence.wal().and_then(|w| w.health_message()) {
            Some(message) => Err(Error::NotDurable(message)),
            None => Ok(()),
        }
    }

    /// Runs any command (`args[0]` is its name) through the command table,
    /// as a connection would, and returns its reply; an error reply is
    /// returned as [`Error`]. Each call runs on a fresh connection state:
    /// SELECT, MULTI, WATCH, SUBSCRIBE or HELLO have no effect on later
    /// calls (use [`Db::batch`] for transactions); blocking commands do not
    /// block.
    pub fn command(&self, args: &[&[u8]]) -> Result<Reply> {
        self.with_session(|session, server| {
            session.run(server, args)?;
            match reply::decode(&session.out)? {
                Reply::Error(message) => Err(Error::from_reply(&message)),
                reply => Ok(reply),
            }
        })
    }

    /// Runs `f` with a session from the pool, in this handle's database.
    pub(crate) fn with_session<T>(&self, f: impl FnOnce(&mut Session, &Server) -> Result<T>) -> Result<T> {
        let shared = &self.shared;
        let mut session = shared.sessions.take(&shared.server);
        session.client.select(self.index);
        let result = f(&mut session, &shared.server);
        if session.client.db == self.index {
            // Pristine again; a call that selected another database is not.
            session.client.select(0);
        }
        shared.sessions.put(&shared.server, session);
        result
    }

    /// The shared server state (for tests and tools: INFO, metrics).
    pub fn server(&self) -> &Arc<Server> {
        &self.shared.server
    }
}

impl Shared {
    fn shutdown(&self) {
        let Some(lock) = self.lock.lock().take() else { return };
        crate::background::stop(&self.server, std::mem::take(&mut *self.threads.lock()));
        self.sessions.clear(&self.server);
        self.server.health.set_shutting_down();
        self.server.persistence.close(&self.server.keyspace, true);
        drop(lock);
    }
}

impl Drop for Shared {
    fn drop(&mut self) {
        self.shutdown();
    }
}

//! In-process clients: the command layer runs every command for a
//! [`cairn_server::client::Client`], as it does for a connection. A [`Session`]
//! is such a client with its reply buffer; the database keeps idle sessions
//! in a pool, so a call costs no allocation once warm and many threads can
//! run commands at once (each on its own session).

use std::net::SocketAddr;
use std::sync::atomic::Ordering;
use std::sync::Arc;

use cairn_protocol::{ProtocolVersion, ReplyWriter};
use cairn_server::blocking::BlockState;
use cairn_server::client::{Client, ClientHandle, ReplyMode};
use cairn_server::commands::{dispatch, Ctx};
use cairn_server::server::Server;
use parking_lot::Mutex;

use crate::error::{Error, Result};

/// Idle sessions kept for reuse; more are dropped when returned.
const MAX_IDLE_SESSIONS: usize = 256;

/// The address CLIENT LIST shows for an in-process client.
const IN_PROCESS: SocketAddr = SocketAddr::new(std::net::IpAddr::V4(std::net::Ipv4Addr::LOCALHOST), 0);

/// One in-process client and its reply buffer.
pub(crate) struct Session {
    pub(crate) client: Client,
    pub(crate) out: Vec<u8>,
}

impl Session {
    fn new(server: &Server) -> Session {
        let now = cairn_engine::clock::now_ms();
        let handle = Arc::new(ClientHandle::new(server.clients.next_id(), IN_PROCESS, IN_PROCESS, -1, 0, now));
        // An in-process call reads its own reply only: no pushes.
        handle.accepts_pushes.store(false, std::sync::atomic::Ordering::Relaxed);
        let mut client = Client::new(handle, false, cairn_server::acl::internal_user());
        // Nothing could ever serve a blocked in-process call: BLPOP and
        // friends act as their non-blocking forms, as inside MULTI.
        client.block = BlockState::Denied;
        Session { client, out: Vec::with_capacity(256) }
    }

    /// Runs one command; its reply is left in `self.out`. In the `sync`
    /// tier, returns once the write it logged (if any) is durable.
    pub(crate) fn run(&mut self, server: &Server, args: &[&[u8]]) -> Result<()> {
        self.out.clear();
        if args.is_empty() {
            return Err(Error::Server("ERR empty command".to_string()));
        }
        let stats = &server.workers[0];
        let protocol = self.client.protocol;
        let now_ms = cairn_engine::clock::now_ms();
        let mut ctx = Ctx::new(server, &mut self.client, ReplyWriter::new(&mut self.out, protocol), stats, now_ms);
        dispatch(&mut ctx, args);
        server.blocking.serve_ready(server, stats);
        if let Some(wait) = self.client.wait_aof.take() {
            self.finish_waitaof(server, wait);
        }
        if std::mem::take(&mut self.client.close_after_reply) {
            // Only a transaction whose record could not be logged asks this.
            return Err(Error::NotDurable("the transaction could not be logged".to_string()));
        }
        self.await_durable(server)
    }

    /// In the `sync` tier, blocks until this session's last write is
    /// durable, with group commit among the calling threads
    /// (`Wal::sync_through`): when no round is running this thread runs one
    /// (write everything buffered, fdatasync, wake the threads it covers),
    /// with no hand-off to the syncer thread and back; otherwise it parks
    /// until the running round, or the next one, covers its write.
    fn await_durable(&self, server: &Server) -> Result<()> {
        let p = &server.persistence;
        let lsn = self.client.last_lsn;
        let Some(wal) = p.wal_opened() else { return Ok(()) };
        if !p.acks_wait_for(lsn) || wal.durable_lsn() >= lsn {
            return Ok(());
        }
        wal.sync_through(lsn).map_err(|e| Error::NotDurable(e.to_string()))
    }

    /// WAITAOF: waits here (the server's connection loop waits for it).
    fn finish_waitaof(&mut self, server: &Server, wait: cairn_server::persistence::WaitAof) {
        let deadline = (wait.deadline_ms != 0).then(|| {
            let left = wait.deadline_ms.saturating_sub(cairn_engine::clock::now_ms());
            std::time::Instant::now() + std::time::Duration::from_millis(left)
        });
        let local = matches!(server.persistence.wait_durable_blocking(wait.lsn, deadline), Ok(true));
        let mut out = ReplyWriter::new(&mut self.out, self.client.protocol);
        out.array(2);
        out.int(i64::from(local));
        out.int(0);
    }

    /// Whether the session is as new (connection state such as SELECT,
    /// MULTI, WATCH, SUBSCRIBE, CLIENT REPLY or HELLO 3 is not carried from
    /// one call to the next).
    fn is_pristine(&self) -> bool {
        let c = &self.client;
        c.db == 0
            && c.multi.is_none()
            && c.watched.is_empty()
            && c.pubsub.is_none()
            && c.reply_mode == ReplyMode::On
            && c.protocol == ProtocolVersion::Resp2
            && matches!(c.block, BlockState::Denied)
            && c.txn_log.is_none()
            && !c.watch_dirty.load(Ordering::Relaxed)
    }

    /// Releases what the server tracks for this client (as a closing connection does).
    fn release(mut self, server: &Server) {
        let watched: Vec<(usize, Vec<u8>)> = self.client.watched.drain(..).map(|w| (w.db, w.key)).collect();
        server.watches.forget(self.client.id(), &watched);
        if let Some(subscriptions) = self.client.pubsub.take() {
            server.pubsub.forget(&subscriptions);
        }
    }
}

/// Idle sessions.
#[derive(Default)]
pub(crate) struct Pool {
    idle: Mutex<Vec<Session>>,
}

impl Pool {
    pub(crate) fn take(&self, server: &Server) -> Session {
        self.idle.lock().pop().unwrap_or_else(|| Session::new(server))
    }

    /// Gives a session back; one left in some connection state is dropped.
    pub(crate) fn put(&self, server: &Server, mut session: Session) {
        if !session.is_pristine() {
            session.release(server);
            return;
        }
        if session.out.capacity() > 1 << 20 {
            session.out = Vec::with_capacity(256);
        }
        let mut idle = self.idle.lock();
        if idle.len() < MAX_IDLE_SESSIONS {
            idle.push(session);
        }
    }

    pub(crate) fn clear(&self, server: &Server) {
        for session in std::mem::take(&mut *self.idle.lock()) {
            session.release(server);
        }
    }
}

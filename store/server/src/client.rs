//! Client connections: the state a connection keeps for itself, and the
//! shared handle other connections see (CLIENT LIST, CLIENT KILL).

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, AtomicU16, AtomicU64, AtomicU8, AtomicUsize, Ordering};
use std::sync::Arc;

use cairn_protocol::ProtocolVersion;
use parking_lot::Mutex;
use tokio::sync::Notify;

/// Who issues a client's commands (MONITOR shows connections' and scripts'
/// commands, not the server's own).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Origin {
    /// A network connection.
    Connection,
    /// A Lua script's `redis.call`.
    Script,
    /// The server itself: log replay, serving a blocked client again.
    Internal,
}

/// What CLIENT REPLY set.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ReplyMode {
    On,
    Off,
    /// Skip the reply of the next command only.
    Skip,
}

/// The part of a client that other connections may read or signal.
#[derive(Debug)]
pub struct ClientHandle {
    pub id: u64,
    pub addr: SocketAddr,
    pub local_addr: SocketAddr,
    pub fd: i32,
    pub created_ms: u64,
    /// The worker serving the connection (it changes when the connection
    /// moves, see [`crate::rebalance`]).
    pub worker: AtomicUsize,
    pub name: Mutex<Option<Vec<u8>>>,
    pub lib_name: Mutex<Option<Vec<u8>>>,
    pub lib_version: Mutex<Option<Vec<u8>>>,
    pub db: AtomicUsize,
    pub resp: AtomicU8,
    pub last_interaction_ms: AtomicU64,
    /// Index in the command table of the last command run.
    pub last_command: AtomicU16,
    /// Its subcommand, for a container command such as CLIENT or CONFIG
    /// (see [`crate::commands::table::subcommand_slot`]); 0 for none.
    pub last_subcommand: AtomicU8,
    pub no_evict: AtomicBool,
    /// Pub/sub channels, patterns and shard channels subscribed (CLIENT
    /// LIST sub=, psub=, ssub=).
    pub sub_channels: AtomicUsize,
    pub sub_patterns: AtomicUsize,
    pub sub_shard_channels: AtomicUsize,
    /// Whether the connection can carry pushes it did not ask for (false
    /// for the native protocol and in-process sessions): client-side
    /// caching is refused there, and nothing is redirected to it.
    pub accepts_pushes: AtomicBool,
    /// Client-side caching messages (invalidations) queued for this
    /// connection by any worker; written after its current command's reply,
    /// or at once when it is idle (see [`crate::tracking`]).
    pub inbox: crate::tracking::inbox::Inbox,
    /// Its buffers' sizes, published by the connection (CLIENT LIST `qbuf`,
    /// `qbuf-free`, `rbs`, `rbp`; see [`crate::client_buffers`]).
    pub buffers: crate::client_buffers::BufferGauges,
    killed: AtomicBool,
    /// The ACL user this connection authenticated as (set at admission and
    /// by AUTH/HELLO; `None` only before admission).
    user: Mutex<Option<Arc<crate::acl::User>>>,
    /// Wakes the connection: a kill, or a message in the inbox.
    wake: Notify,
}

impl ClientHandle {
    pub fn new(id: u64, addr: SocketAddr, local_addr: SocketAddr, fd: i32, worker: usize, now_ms: u64) -> Self {
        ClientHandle {
            id,
            addr,
            local_addr,
            fd,
            created_ms: now_ms,
            worker: AtomicUsize::new(worker),
            name: Mutex::new(None),
            lib_name: Mutex::new(None),
            lib_version: Mutex::new(None),
            db: AtomicUsize::new(0),
            resp: AtomicU8::new(2),
            last_interaction_ms: AtomicU64::new(now_ms),
            last_command: AtomicU16::new(u16::MAX),
            last_subcommand: AtomicU8::new(0),
            no_evict: AtomicBool::new(false),
            sub_channels: AtomicUsize::new(0),
            sub_patterns: AtomicUsize::new(0),
            sub_shard_channels: AtomicUsize::new(0),
            accepts_pushes: AtomicBool::new(true),
            inbox: crate::tracking::inbox::Inbox::default(),
            buffers: crate::client_buffers::BufferGauges::default(),
            killed: AtomicBool::new(false),
            user: Mutex::new(None),
            wake: Notify::new(),
        }
    }

    /// The ACL user of this connection.
    pub fn user(&self) -> Option<Arc<crate::acl::User>> {
        self.user.lock().clone()
    }

    /// The ACL user's name (`default` before admission).
    pub fn user_name(&self) -> String {
        self.user.lock().as_ref().map_or_else(|| crate::acl::DEFAULT_USER.to_string(), |u| u.name.clone())
    }

    pub fn set_user(&self, user: Arc<crate::acl::User>) {
        *self.user.lock() = Some(user);
    }

    /// Asks the connection to close (CLIENT KILL).
    pub fn kill(&self) {
        self.killed.store(true, Ordering::SeqCst);
        self.wake.notify_one();
    }

    /// Queues an encoded push message (an invalidation) for this connection
    /// and wakes it; a connection over the pub/sub output limit is killed.
    pub fn push(&self, frame: &[u8]) {
        if !self.inbox.append(frame) {
            if !self.is_killed() {
                tracing::warn!(client = self.id, "closing client over the push output buffer limit");
                self.kill();
            }
            return;
        }
        self.wake.notify_one();
    }

    /// Whether the client has pub/sub subscriptions (CLIENT LIST/KILL TYPE pubsub).
    pub fn is_subscriber(&self) -> bool {
        self.sub_channels.load(Ordering::Relaxed)
            + self.sub_patterns.load(Ordering::Relaxed)
            + self.sub_shard_channels.load(Ordering::Relaxed)
            > 0
    }

    /// Wakes the connection without a message: it looks at what it was
    /// asked to do (a buffer tune, see [`crate::client_buffers::cron`]).
    pub fn nudge(&self) {
        self.wake.notify_one();
    }

    pub fn is_killed(&self) -> bool {
        self.killed.load(Ordering::SeqCst)
    }

    /// Resolves when [`ClientHandle::kill`] is called or a message was
    /// [pushed](ClientHandle::push): the caller checks [`ClientHandle::is_killed`]
    /// and, if not, takes the inbox and waits on a new future. One wake-up
    /// for both, so an idle connection polls nothing more for tracking. A
    /// kill before the future is first polled still wakes it (the notify
    /// keeps a permit).
    pub fn signalled(&self) -> tokio::sync::futures::Notified<'_> {
        self.wake.notified()
    }
}

/// All connected clients, by id. Touched on connect, disconnect and by the
/// CLIENT command, never per request.
#[derive(Debug, Default)]
pub struct ClientRegistry {
    clients: Mutex<BTreeMap<u64, Arc<ClientHandle>>>,
    next_id: AtomicU64,
    /// The connections whose buffers the sweep looks at (see
    /// [`crate::client_buffers::sweep_list`]); a client leaves it when
    /// it is unregistered.
    pub buffer_sweep: crate::client_buffers::SweepList,
}

impl ClientRegistry {
    pub fn next_id(&self) -> u64 {
        self.next_id.fetch_add(1, Ordering::Relaxed) + 1
    }

    pub fn register(&self, handle: Arc<ClientHandle>) {
        self.clients.lock().insert(handle.id, handle);
    }

    pub fn unregister(&self, id: u64) {
        self.clients.lock().remove(&id);
        self.buffer_sweep.leave(id);
    }

    pub fn len(&self) -> usize {
        self.clients.lock().len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// A copy of the current list, in id order.
    pub fn snapshot(&self) -> Vec<Arc<ClientHandle>> {
        self.clients.lock().values().cloned().collect()
    }

    pub fn get(&self, id: u64) -> Option<Arc<ClientHandle>> {
        self.clients.lock().get(&id).cloned()
    }
}

/// Commands queued between MULTI and EXEC.
#[derive(Debug, Default)]
pub struct MultiState {
    pub queued: Vec<Vec<Vec<u8>>>,
    /// A command was refused while queueing: EXEC answers EXECABORT.
    pub aborted: bool,
}

/// A key this client WATCHes.
#[derive(Debug, Clone)]
pub struct WatchedKey {
    pub db: usize,
    pub key: Vec<u8>,
    /// Whether the key existed (unexpired) when WATCH ran.
    pub live_at_watch: bool,
}

/// The state a connection keeps for itself.
#[derive(Debug)]
pub struct Client {
    pub handle: Arc<ClientHandle>,
    /// The ACL user its commands are checked against (the handle keeps it
    /// for the other threads: CLIENT LIST, ACL DELUSER, scripts).
    pub user: Arc<crate::acl::User>,
    pub db: usize,
    pub protocol: ProtocolVersion,
    pub authenticated: bool,
    pub reply_mode: ReplyMode,
    /// Close the connection once the pending replies are written (QUIT, protocol errors).
    pub close_after_reply: bool,
    /// Inside MULTI: the queued commands.
    pub multi: Option<MultiState>,
    pub watched: Vec<WatchedKey>,
    /// Set by writers of a watched key (through the server's watch registry).
    pub watch_dirty: Arc<AtomicBool>,
    /// Whether blocking commands may block, and whether one did.
    pub block: crate::blocking::BlockState,
    /// LSN of this client's last logged write: in the `sync` tier its
    /// replies wait until this LSN is durable.
    pub last_lsn: u64,
    /// Inside EXEC: the commands logged so far, written as one record at the end.
    pub txn_log: Option<Vec<(u32, Vec<Vec<u8>>)>>,
    /// WAITAOF in progress: the connection answers once the LSN is durable.
    pub wait_aof: Option<crate::persistence::WaitAof>,
    /// Pub/sub subscriptions: `Some` exactly while in subscribed mode.
    pub pubsub: Option<Box<crate::pubsub::Subscriptions>>,
    /// Set by a write handler that changed nothing (SETBIT of the bit already
    /// there, ...): the write path then logs no record, as Redis leaves
    /// `dirty` alone, and no WATCHer is touched (Redis signals no modified
    /// key). Cleared by the dispatcher after every command.
    pub write_was_noop: bool,
    /// Set by a write handler whose arguments would not replay the same
    /// (XADD/XTRIM's approximate trim): what to log instead, as Redis's
    /// `rewriteClientCommandArgument`. Taken by the write path after each
    /// write command (`persistence::logging::run`).
    pub log_as: Option<Vec<Vec<u8>>>,
    /// Scripts EVAL and FCALL left here, in order: the connection runs them
    /// off the event loop and puts each reply where the command's would
    /// have gone (see `scripting::run::PendingScript`).
    pub pending_scripts: Vec<crate::scripting::run::PendingScript>,
    /// A command arrived while a script runs: the connection waits for it to
    /// end (or to pass `busy-reply-threshold`) before going on.
    pub wait_script: bool,
    /// EXEC of a transaction that calls a script: the connection runs it on a
    /// blocking thread (`scripting::offload`).
    pub pending_exec: bool,
    /// The client runs on a blocking thread, not on its worker: a script it
    /// calls runs right here.
    pub off_worker: bool,
    /// EXEC is running this client's queued commands (it holds their shards).
    pub in_exec: bool,
    /// CLIENT PAUSE holds the next command: the connection waits for the
    /// pause to end, then runs it. `Some(held_by_write)`: whether a `WRITE`
    /// pause holds it (an `ALL` pause holds every command).
    pub wait_pause: Option<bool>,
    /// Who issues this client's commands.
    pub origin: Origin,
    /// After MONITOR: the queue the server's command feed goes to.
    pub monitor: Option<Arc<crate::pubsub::Subscriber>>,
    /// Bytes of input from the command being run to the end of what has been
    /// read (CLIENT LIST/INFO `qbuf` of the calling client).
    pub query_pending: usize,
    /// CLIENT TRACKING ON in the default mode: the keys this client reads
    /// are remembered (for a script's client: its caller's tracking).
    pub tracking: Option<Arc<crate::tracking::tracker::Tracker>>,
    /// A script's declared keys, remembered for its tracking caller when the
    /// script runs a read command (as Redis does).
    pub script_keys: Vec<Vec<u8>>,
    /// A MIGRATE whose keys are serialized: the connection runs its transfer
    /// off the worker, then answers (see [`crate::migrate`]).
    pub pending_migrate: Option<Box<crate::migrate::Pending>>,
    /// The keys a MIGRATE moved, read by its deletes (`migrate::removal`).
    pub migrated: Vec<crate::migrate::removal::Sent>,
    /// REPLCONF's settings and a SYNC to serve (`redis-cli --rdb`, see
    /// [`crate::rdb_file::sync`]).
    pub repl: crate::rdb_file::replconf::ReplState,
}

impl Client {
    pub fn new(handle: Arc<ClientHandle>, needs_auth: bool, user: Arc<crate::acl::User>) -> Self {
        Client {
            handle,
            user,
            db: 0,
            protocol: ProtocolVersion::Resp2,
            authenticated: !needs_auth,
            reply_mode: ReplyMode::On,
            close_after_reply: false,
            multi: None,
            watched: Vec::new(),
            watch_dirty: Arc::new(AtomicBool::new(false)),
            block: crate::blocking::BlockState::Allowed,
            last_lsn: 0,
            txn_log: None,
            wait_aof: None,
            pubsub: None,
            write_was_noop: false,
            log_as: None,
            pending_scripts: Vec::new(),
            wait_script: false,
            pending_exec: false,
            off_worker: false,
            in_exec: false,
            wait_pause: None,
            origin: Origin::Connection,
            monitor: None,
            query_pending: 0,
            tracking: None,
            script_keys: Vec::new(),
            pending_migrate: None,
            repl: Default::default(),
            migrated: Vec::new(),
        }
    }

    pub fn id(&self) -> u64 {
        self.handle.id
    }

    pub fn select(&mut self, db: usize) {
        self.db = db;
        self.handle.db.store(db, Ordering::Relaxed);
    }

    pub fn set_protocol(&mut self, protocol: ProtocolVersion) {
        self.protocol = protocol;
        let n = if protocol == ProtocolVersion::Resp3 { 3 } else { 2 };
        self.handle.resp.store(n, Ordering::Relaxed);
    }
}

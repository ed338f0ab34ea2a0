//! An in-process server on a simulated disk, driven without sockets
//! (crash_sim, tier_switch).

#![allow(clippy::expect_used)]

use std::path::PathBuf;
use std::sync::Arc;

use cairn_engine::durability::sim::SimStorage;
use cairn_engine::durability::{Storage, Tier};
use cairn_protocol::{ProtocolVersion, ReplyWriter};
use cairn_server::client::{Client, ClientHandle};
use cairn_server::commands::{dispatch, table, Ctx};
use cairn_server::persistence::Persistence;
use cairn_server::server::Server;
use cairn_server::stats::WorkerStats;
use cairn_server::{Config, Shutdown};

/// A server driven without sockets, on a simulated disk (power cuts:
/// `SimStorage::crash`), its log synced only when the test says so.
pub struct SimNode {
    pub server: Server,
    pub client: Client,
    /// A second client for DEBUG DIGEST (outside the workload's MULTI/SELECT).
    observer: Client,
    stats: WorkerStats,
}

impl SimNode {
    pub fn new(disk: &SimStorage, tier: Tier) -> SimNode {
        let mut config = Config::for_tests(&PathBuf::from("/data"));
        config.durability = tier;
        config.shards = 8;
        config.databases = 4;
        // Small segments: rotation and recycling happen within a short workload.
        config.wal_segment_bytes = 16 << 10;
        let storage: Arc<dyn Storage> = Arc::new(disk.clone());
        let mut persistence = Persistence::with_storage(&config, storage);
        persistence.background_sync = false;
        let server = Server::with_persistence(config, 0, 1, Shutdown::new(), persistence);
        cairn_server::persistence::recover::recover(&server).expect("recovery");
        server.persistence.loading.store(false, std::sync::atomic::Ordering::Release);
        let addr = std::net::SocketAddr::from(([127, 0, 0, 1], 0));
        let mut client = Client::new(
            Arc::new(ClientHandle::new(1, addr, addr, -1, 0, 0)),
            false,
            cairn_server::acl::internal_user(),
        );
        // No connection here to wait on a blocked command: blocking commands
        // act as their non-blocking forms (as inside MULTI).
        client.block = cairn_server::blocking::BlockState::Denied;
        let observer = Client::new(
            Arc::new(ClientHandle::new(2, addr, addr, -1, 0, 0)),
            false,
            cairn_server::acl::internal_user(),
        );
        SimNode { server, client, observer, stats: WorkerStats::new(table::stat_count()) }
    }

    pub fn run(&mut self, args: &[&[u8]]) -> Vec<u8> {
        let mut out = Vec::new();
        let mut ctx = Ctx::new(
            &self.server,
            &mut self.client,
            ReplyWriter::new(&mut out, ProtocolVersion::Resp2),
            &self.stats,
            cairn_engine::clock::now_ms(),
        );
        dispatch(&mut ctx, args);
        out
    }

    pub fn digest(&mut self) -> Vec<u8> {
        std::mem::swap(&mut self.client, &mut self.observer);
        let d = self.run(&[b"DEBUG", b"DIGEST"]);
        std::mem::swap(&mut self.client, &mut self.observer);
        d
    }

    pub fn durable(&self) -> u64 {
        self.server.persistence.wal_opened().map_or(0, |w| w.durable_lsn())
    }

    pub fn sync_round(&self, force: bool) {
        if let Some(wal) = self.server.persistence.wal_opened() {
            wal.sync_round(force);
        }
    }
}

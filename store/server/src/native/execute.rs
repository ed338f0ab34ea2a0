//! Executing a frame's operations through the dispatcher, exactly as a RESP
//! connection would run the equivalent commands.

use cairn_native::encode;
use cairn_native::reply::put_error;
use cairn_native::{DecodedOp, Kind, Op, OpList, Status};
use cairn_protocol::{ProtocolVersion, ReplyWriter};

use super::argv::{self, NumberText};
use super::refused;
use super::session::Session;
use super::translate::write_outcome;
use crate::blocking::BlockState;
use crate::client::Client;
use crate::commands::timing::CommandClock;
use crate::commands::{dispatch, Ctx};
use crate::server::Server;
use crate::stats::WorkerStats;

/// What executing a request needs.
pub struct Exec<'a> {
    pub server: &'a Server,
    pub client: &'a mut Client,
    pub stats: &'a WorkerStats,
    pub session: &'a mut Session,
    /// Wall clock when the batch of frames was read, Unix milliseconds.
    pub now_ms: u64,
    /// Where the next command's run time starts.
    pub clock: CommandClock,
}

impl Exec<'_> {
    /// Runs one command; its RESP3 reply is left in `session.scratch`.
    /// Blocking commands do not block: a command that would block answers
    /// as if its timeout had expired at once (null).
    pub fn run_args(&mut self, args: &[&[u8]]) {
        self.session.scratch.clear();
        let mut ctx = Ctx {
            server: self.server,
            client: self.client,
            out: ReplyWriter::new(&mut self.session.scratch, ProtocolVersion::Resp3),
            stats: self.stats,
            now_ms: self.now_ms,
            clock: self.clock,
            scripts_here: None,
        };
        if !crate::scripting::gate::refused_while_busy(&mut ctx, args) {
            dispatch(&mut ctx, args);
        }
        self.clock = ctx.clock;
        self.server.blocking.serve_ready(self.server, self.stats);
        if let BlockState::Blocked(waiter) = std::mem::take(&mut self.client.block) {
            self.server.blocking.cancel(&waiter);
            self.session.scratch.extend_from_slice(b"_\r\n");
        }
    }

    /// Runs one command for the handshake; Err holds the error line.
    pub fn run_checked(&mut self, args: &[&[u8]]) -> Result<(), Vec<u8>> {
        self.run_args(args);
        match self.session.scratch.first() {
            Some(b'-') => {
                let line = &self.session.scratch[1..];
                let end = line.iter().position(|&b| b == b'\r').unwrap_or(line.len());
                Err(line[..end].to_vec())
            }
            _ => Ok(()),
        }
    }
}

/// Answers a REQUEST frame with a REPLY frame.
pub fn request(exec: &mut Exec<'_>, id: u32, durable: bool, op: &DecodedOp<'_>, out: &mut Vec<u8>) {
    let start = encode::begin(out, Kind::Reply, 0, id);
    outcome(exec, op, durable, out);
    encode::finish(out, start);
}

/// Answers a BATCH frame with a BATCH_REPLY frame: one outcome per
/// operation, in order. After QUIT the remaining operations are not run.
pub fn batch(exec: &mut Exec<'_>, id: u32, durable: bool, ops: &OpList<'_>, out: &mut Vec<u8>) {
    let start = encode::begin(out, Kind::BatchReply, 0, id);
    out.extend_from_slice(&(ops.len() as u32).to_le_bytes());
    for op in ops.iter() {
        if exec.client.close_after_reply {
            put_error(out, Status::Err, b"ERR not executed: the connection is closing (QUIT)");
        } else {
            outcome(exec, &op, durable, out);
        }
    }
    encode::finish(out, start);
}

/// Runs one operation and appends its outcome.
fn outcome(exec: &mut Exec<'_>, op: &DecodedOp<'_>, durable: bool, out: &mut Vec<u8>) {
    if durable {
        if let Some((status, message)) = durability_refusal(exec.server) {
            put_error(out, status, message);
            return;
        }
    }
    if let Op::Get { key } = *op {
        if super::typed::get(exec, key, out) {
            return;
        }
    }
    let generic = matches!(op, Op::Command { .. });
    if let Op::Command { args } = op {
        if args.iter().next().is_some_and(refused::is_refused) {
            put_error(out, Status::Unsupported, refused::MESSAGE);
            return;
        }
    }
    let mut number = NumberText::new();
    let mut args: Vec<&[u8]> = std::mem::take(&mut exec.session.spare);
    argv::build(op, &mut number, &mut args);
    exec.run_args(&args);
    exec.session.spare = crate::connection::recycle(args);
    write_outcome(out, &exec.session.scratch, generic);
}

/// Why a durable request cannot be honoured, if it cannot: there is no log
/// (tier `none`), or it is not open yet (loading). The request is not run.
fn durability_refusal(server: &Server) -> Option<(Status, &'static [u8])> {
    let p = &server.persistence;
    if p.tier() == cairn_engine::durability::Tier::None {
        return Some((
            Status::DurabilityUnavailable,
            b"ERR durable flag needs the write-ahead log, and this server runs with durability none",
        ));
    }
    if p.wal().is_none() {
        return Some((Status::Loading, b"LOADING Cairn is loading the dataset in memory"));
    }
    None
}

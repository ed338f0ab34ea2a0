//! WAITAOF numlocal numreplicas timeout: blocks the client until its writes
//! so far are durable on this server (in any tier that logs), or the timeout
//! passes; replies `[local, replicas]` (replicas are always 0: Cairn has no
//! replication yet).

use std::time::Duration;

use cairn_protocol::{ProtocolVersion, ReplyWriter};

use super::WaitAof;
use crate::commands::{int_arg, CmdError, CmdResult, Ctx};
use crate::server::Server;

pub fn waitaof(ctx: &mut Ctx<'_>, args: &[&[u8]]) -> CmdResult {
    let numlocal = int_arg(args[1])?;
    let numreplicas = int_arg(args[2])?;
    let timeout = int_arg(args[3])?;
    if numlocal < 0 || numreplicas < 0 {
        return Err(CmdError::Static("ERR value is out of range, must be positive"));
    }
    if timeout < 0 {
        return Err(CmdError::Static("ERR timeout is negative"));
    }
    let Some(wal) = ctx.server.persistence.wal() else {
        if numlocal > 0 {
            return Err(CmdError::Static(
                "ERR WAITAOF cannot be used when numlocal is set but appendonly is disabled.",
            ));
        }
        reply(&mut ctx.out, 0);
        return Ok(());
    };
    let lsn = ctx.client.last_lsn;
    let inside_transaction = ctx.client.txn_log.is_some() || ctx.client.multi.is_some();
    if inside_transaction || wal.durable_lsn() >= lsn || (numlocal == 0 && numreplicas == 0) {
        reply(&mut ctx.out, u64::from(wal.durable_lsn() >= lsn));
        return Ok(());
    }
    wal.request_sync(lsn);
    let deadline_ms = if timeout == 0 { 0 } else { ctx.now_ms.saturating_add(timeout as u64) };
    ctx.client.wait_aof = Some(WaitAof { lsn, deadline_ms });
    Ok(())
}

fn reply(out: &mut ReplyWriter<'_>, local: u64) {
    out.array(2);
    out.int(local as i64);
    out.int(0);
}

/// Waits for a WAITAOF and returns its reply bytes.
pub async fn wait(server: &Server, wait: &WaitAof, protocol: ProtocolVersion) -> Vec<u8> {
    let p = &server.persistence;
    let durable = async {
        match p.wait_durable(wait.lsn).await {
            Ok(()) => 1,
            Err(_) => 0,
        }
    };
    let local = if wait.deadline_ms == 0 {
        durable.await
    } else {
        let left = wait.deadline_ms.saturating_sub(cairn_engine::clock::now_ms());
        tokio::time::timeout(Duration::from_millis(left), durable).await.unwrap_or(0)
    };
    let mut buf = Vec::with_capacity(16);
    reply(&mut ReplyWriter::new(&mut buf, protocol), local);
    buf
}

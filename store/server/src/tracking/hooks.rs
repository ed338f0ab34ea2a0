//! Where commands meet tracking: the dispatcher calls [`before_read`] for a
//! read command of a tracking client, and [`after_command`] after every
//! command while some client tracks.

use std::sync::atomic::Ordering;

use crate::client::Origin;
use crate::commands::{is, table, Ctx};

/// Remembers the keys a read command of a tracking (default mode) client is
/// about to read; inside a script, the script's declared keys (Redis
/// tracks a script's keys once it runs a read command).
pub fn before_read(ctx: &Ctx<'_>, spec: &table::CommandSpec, args: &[&[u8]]) {
    let Some(tracker) = ctx.client.tracking.as_ref() else { return };
    let max_keys = ctx.server.runtime.tracking_table_max_keys.load(Ordering::Relaxed);
    let tracking = &ctx.server.tracking;
    if ctx.client.origin == Origin::Script {
        tracking.remember(tracker, ctx.client.script_keys.iter().map(Vec::as_slice), max_keys);
    } else {
        tracking.remember(tracker, read_keys(spec, args).into_iter().map(|p| args[p]), max_keys);
    }
}

/// The key positions of a read command.
fn read_keys(spec: &table::CommandSpec, args: &[&[u8]]) -> Vec<usize> {
    if spec.name == "xread" {
        return xread_keys(args);
    }
    spec.key_positions(args.len())
}

/// XREAD's keys: the first half of what follows STREAMS.
fn xread_keys(args: &[&[u8]]) -> Vec<usize> {
    let Some(streams) = args.iter().position(|a| is(a, "streams")) else { return Vec::new() };
    let rest = args.len() - streams - 1;
    (streams + 1..streams + 1 + rest / 2).collect()
}

/// After a command, while some client tracks. At the top level (a
/// connection's own command, not one inside EXEC or a script): ends a
/// CLIENT CACHING choice (it covers one command or one transaction), sends
/// the BCAST changes, and appends the connection's queued invalidations
/// after the command's reply.
pub fn after_command(ctx: &mut Ctx<'_>, spec: &table::CommandSpec) {
    if ctx.client.origin != Origin::Connection || ctx.client.in_exec {
        return;
    }
    if let Some(tracker) = ctx.client.tracking.as_ref() {
        let keeps_choice =
            spec.name == "client" || ctx.client.multi.is_some() || !ctx.client.pending_scripts.is_empty();
        if !keeps_choice {
            tracker.state.lock().caching = false;
        }
    }
    ctx.server.tracking.broadcast();
    ctx.client.handle.inbox.take_into(ctx.out.buffer());
}

/// After a script the connection ran off its worker: the CLIENT CACHING
/// choice ends there.
pub fn after_script(client: &crate::client::Client) {
    if let Some(tracker) = client.tracking.as_ref() {
        tracker.state.lock().caching = false;
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn xread_keys_are_the_first_half_after_streams() {
        let args: Vec<&[u8]> = vec![b"XREAD", b"COUNT", b"2", b"STREAMS", b"a", b"b", b"0", b"0"];
        assert_eq!(super::xread_keys(&args), vec![4, 5]);
    }
}

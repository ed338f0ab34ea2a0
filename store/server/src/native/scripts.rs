//! Which frames call a script: the connection runs those on a blocking thread
//! (see `scripting::offload`), since a worker must never wait for a script.

use cairn_native::{Body, DecodedOp, Op};

use crate::client::Client;
use crate::commands::table;
use crate::commands::transactions;

/// Whether running the frame would start a script: an EVAL-like command, or
/// an EXEC of a transaction that queued one.
pub fn calls_script(body: &Body<'_>, client: &Client) -> bool {
    match body {
        Body::Request(op) => op_calls_script(op, client),
        Body::Batch(ops) => ops.has_generic() && ops.iter().any(|op| op_calls_script(&op, client)),
        _ => false,
    }
}

fn op_calls_script(op: &DecodedOp<'_>, client: &Client) -> bool {
    let Op::Command { args } = op else { return false };
    let Some(name) = args.iter().next() else { return false };
    table::names_script(name) || (crate::commands::is(name, "exec") && transactions::queued_script(client))
}

//! Appending frames to a `Vec<u8>`. A frame is written as [`begin`], its
//! body, then [`finish`], which fills in the length: no intermediate buffer.

use crate::frame::{Kind, HEADER_LEN};
use crate::hello::MAGIC;
use crate::list::Strings;
use crate::op::{encode_op, put_bytes, put_list, Op};
use crate::reply::{put_error, put_ok, Status, Value};

/// Where a frame started, for [`finish`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[must_use = "a frame must be finished"]
pub struct FrameStart(usize);

/// Appends a header with a placeholder length.
pub fn begin(out: &mut Vec<u8>, kind: Kind, flags: u8, id: u32) -> FrameStart {
    let start = out.len();
    out.extend_from_slice(&[0, 0, 0, 0, kind as u8, flags, 0, 0]);
    out.extend_from_slice(&id.to_le_bytes());
    FrameStart(start)
}

/// Fills in the length of the frame begun at `start`.
pub fn finish(out: &mut [u8], start: FrameStart) {
    let len = (out.len() - start.0 - 4) as u32;
    out[start.0..start.0 + 4].copy_from_slice(&len.to_le_bytes());
}

/// Whether the frame begun at `start` holds nothing after its header.
pub fn body_len(out: &[u8], start: FrameStart) -> usize {
    out.len() - start.0 - HEADER_LEN
}

/// A HELLO frame.
pub fn hello(out: &mut Vec<u8>, min_version: u16, max_version: u16, options: &[(&[u8], &[u8])]) {
    let start = begin(out, Kind::Hello, 0, 0);
    out.extend_from_slice(&MAGIC);
    out.extend_from_slice(&min_version.to_le_bytes());
    out.extend_from_slice(&max_version.to_le_bytes());
    out.extend_from_slice(&((options.len() * 2) as u32).to_le_bytes());
    for (name, value) in options {
        put_bytes(out, name);
        put_bytes(out, value);
    }
    finish(out, start);
}

/// A HELLO_OK frame.
pub fn hello_ok(out: &mut Vec<u8>, version: u16, client_id: u64, server: &[u8]) {
    let start = begin(out, Kind::HelloOk, 0, 0);
    out.extend_from_slice(&version.to_le_bytes());
    out.extend_from_slice(&client_id.to_le_bytes());
    put_bytes(out, server);
    finish(out, start);
}

/// A REQUEST frame of one operation.
pub fn request<L: Strings>(out: &mut Vec<u8>, id: u32, flags: u8, op: &Op<'_, L>) {
    let start = begin(out, Kind::Request, flags, id);
    encode_op(out, op);
    finish(out, start);
}

/// A BATCH frame of `ops` (at least one).
pub fn batch<L: Strings>(out: &mut Vec<u8>, id: u32, flags: u8, ops: &[Op<'_, L>]) {
    let start = begin(out, Kind::Batch, flags, id);
    out.extend_from_slice(&(ops.len() as u32).to_le_bytes());
    for op in ops {
        encode_op(out, op);
    }
    finish(out, start);
}

/// A REPLY frame with a value.
pub fn reply_ok(out: &mut Vec<u8>, id: u32, value: &Value<'_>) {
    let start = begin(out, Kind::Reply, 0, id);
    put_ok(out, value);
    finish(out, start);
}

/// A REPLY frame with an error.
pub fn reply_error(out: &mut Vec<u8>, id: u32, status: Status, message: &[u8]) {
    let start = begin(out, Kind::Reply, 0, id);
    put_error(out, status, message);
    finish(out, start);
}

/// An ERROR frame (fatal: the sender closes the connection after it).
pub fn fatal(out: &mut Vec<u8>, id: u32, status: Status, message: &[u8]) {
    let start = begin(out, Kind::Error, 0, id);
    put_error(out, status, message);
    finish(out, start);
}

/// A COMMAND operation's list, for callers that build argv on the fly.
pub fn put_args<L: Strings>(out: &mut Vec<u8>, args: &L) {
    put_list(out, args);
}

//! Cairn's wire protocols: turning request bytes into argument vectors and
//! replies into bytes. No sockets, no runtime.
//!
//! # Layout
//!
//! - [`request`]: the RESP request parser (multibulk and inline commands). It
//!   is hand-written because it returns slices into the read buffer with no
//!   allocation; the `redis-protocol` crate is its differential-test oracle
//!   (see the tests in `request.rs`).
//! - [`reply`]: [`ReplyWriter`], which encodes replies straight into the
//!   connection's output buffer as RESP2 or RESP3.
//! - [`limits`]: the protocol limits (bulk length, multibulk length, inline size).
//! - `number` (re-exported from the engine): Redis's number rules.

pub mod limits;
pub use cairn_engine::number;
pub mod reply;
pub mod request;

pub use limits::Limits;
pub use reply::{ErrorCode, ProtocolVersion, ReplyWriter};
pub use request::{parse_request, Argv, ParseError, Parsed};

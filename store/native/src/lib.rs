//! Cairn's native binary protocol as a pure codec: no I/O, no async, no
//! allocation while decoding. The byte-level specification is
//! `docs/native-protocol.md`; this crate is its reference implementation.
//!
//! # Layout
//!
//! - [`frame`]: the 12-byte frame header, frame kinds and flags, and
//!   [`decode_frame`], which turns the front of a buffer into a [`Frame`]
//!   borrowing from it (or says the frame is still [`Decoded::Incomplete`]).
//! - [`op`]: the operations a request carries (GET, SET, ..., COMMAND).
//! - [`list`]: validated lists of byte strings and of operations, iterated
//!   without allocation.
//! - [`reply`]: status codes, reply values and per-request results.
//! - [`hello`]: the handshake (magic, version, options) and its answer.
//! - [`encode`]: appending frames to a `Vec<u8>` (both directions).
//! - [`cursor`]: bounds-checked little-endian reads; [`error`]: why bytes
//!   are not a valid frame; [`limits`]: the sizes the decoder enforces.
//!
//! Malformed input is a [`DecodeError`], never a panic; a partial frame is a
//! normal result.
//!
//! ```
//! use cairn_native::{decode_frame, encode, Body, Decoded, Limits, Op, OpRef};
//!
//! let mut wire = Vec::new();
//! encode::request(&mut wire, 7, 0, &OpRef::Get { key: b"k" });
//! let Ok(Decoded::Complete { frame, consumed }) = decode_frame(&wire, &Limits::default()) else {
//!     panic!("a whole frame");
//! };
//! assert_eq!((frame.id, consumed), (7, wire.len()));
//! assert!(matches!(frame.body, Body::Request(Op::Get { key: b"k" })));
//! ```

pub mod cursor;
pub mod encode;
pub mod error;
pub mod frame;
pub mod hello;
pub mod limits;
pub mod list;
pub mod op;
pub mod reply;

pub use error::DecodeError;
pub use frame::{decode_frame, Body, Decoded, Frame, Kind, FLAG_DURABLE, HEADER_LEN};
pub use hello::{Hello, HelloOk, MAGIC, VERSION};
pub use limits::Limits;
pub use list::{ByteList, OpList, Strings};
pub use op::{DecodedOp, Op, OpCode, OpRef, SetCondition};
pub use reply::{ArrayItems, Outcome, OutcomeList, Status, Value};

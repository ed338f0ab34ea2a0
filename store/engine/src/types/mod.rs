//! Collection value types, one file each, and the encoding limits (Redis's
//! `*-max-listpack-*` parameters) that decide what OBJECT ENCODING reports.
//! `hll` holds the HyperLogLog algorithm, whose sketches are plain strings.
//!
//! Each type offers the same small surface used by generic code:
//! `encoding()`, `heap_bytes()`, `digest()` (DEBUG DIGEST), `len()`.

pub mod encoding;
pub mod hash;
pub mod hll;
pub mod list;
pub mod set;
pub mod stream;
pub mod zset;

pub use hash::Hash;
pub use list::List;
pub use set::Set;
pub use stream::Stream;
pub use zset::ZSet;

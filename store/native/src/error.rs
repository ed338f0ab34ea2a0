//! Why bytes are not a valid frame. Any of these ends the connection: the
//! stream can no longer be trusted to be at a frame boundary.

/// Malformed input.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum DecodeError {
    #[error("frame of {len} bytes exceeds the limit of {max} bytes")]
    FrameTooLarge { len: usize, max: usize },
    #[error("frame length {0} is shorter than the 8 header bytes after it")]
    FrameTooShort(u32),
    #[error("unknown frame kind 0x{0:02x}")]
    UnknownKind(u8),
    #[error("flags 0x{flags:02x} are not defined for frame kind 0x{kind:02x}")]
    UnknownFlags { kind: u8, flags: u8 },
    #[error("reserved header field is 0x{0:04x}, must be 0")]
    Reserved(u16),
    #[error("unknown operation code {0}")]
    UnknownOp(u8),
    #[error("unknown SET option bits 0x{0:02x}")]
    UnknownSetBits(u8),
    #[error("SET with both NX and XX")]
    ConflictingSetConditions,
    #[error("frame body ends inside {0}")]
    Truncated(&'static str),
    #[error("{0} bytes left over after the frame body")]
    Trailing(usize),
    #[error("batch of {count} operations is outside 1..={max}")]
    BatchSize { count: u64, max: usize },
    #[error("list of {count} strings is outside {min}..={max}")]
    ListSize { count: u64, min: usize, max: usize },
    #[error("{0} needs an even number of strings (key-value pairs)")]
    OddPairs(&'static str),
    #[error("handshake does not start with the protocol magic")]
    BadMagic,
    #[error("unknown value tag {0}")]
    UnknownValueTag(u8),
    #[error("array item presence byte is {0}, must be 0 or 1")]
    BadPresence(u8),
}

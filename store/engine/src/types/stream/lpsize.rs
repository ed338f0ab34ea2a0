//! Byte sizes of Redis listpack elements, so that a stream node knows how big
//! the listpack Redis would have built for it is. Redis closes a node when it
//! reaches `stream-node-max-bytes`; computing the same size makes nodes split
//! where Redis's do, which `MAXLEN ~`, `MINID ~` and `XINFO STREAM` expose.

/// Listpack header (total bytes, element count) plus the end marker.
pub const LISTPACK_OVERHEAD: usize = 6 + 1;

/// Size of the back-length that follows an element whose encoding takes `len` bytes.
fn backlen_size(len: usize) -> usize {
    match len {
        0..=127 => 1,
        128..=16382 => 2,
        16383..=2_097_150 => 3,
        2_097_151..=268_435_454 => 4,
        _ => 5,
    }
}

/// Encoded size of an integer element, excluding its back-length.
fn int_encoding_size(v: i64) -> usize {
    match v {
        0..=127 => 1,
        -4096..=4095 => 2,
        -32768..=32767 => 3,
        -8_388_608..=8_388_607 => 4,
        _ if i32::try_from(v).is_ok() => 5,
        _ => 9,
    }
}

/// Size of an integer element, including its back-length.
pub fn int_size(v: i64) -> usize {
    let enc = int_encoding_size(v);
    enc + backlen_size(enc)
}

/// Size of a string element, including its back-length. Strings that read as
/// canonical integers are stored as integers, as listpack does.
pub fn str_size(s: &[u8]) -> usize {
    if let Some(v) = crate::number::parse_i64(s) {
        return int_size(v);
    }
    let enc = match s.len() {
        0..=63 => 1 + s.len(),
        64..=4095 => 2 + s.len(),
        _ => 5 + s.len(),
    };
    enc + backlen_size(enc)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes() {
        assert_eq!(int_size(0), 2);
        assert_eq!(int_size(127), 2);
        assert_eq!(int_size(128), 3);
        assert_eq!(int_size(-1), 3);
        assert_eq!(int_size(1 << 20), 5);
        assert_eq!(int_size(1 << 40), 10);
        assert_eq!(str_size(b"item"), 6);
        assert_eq!(str_size(b"42"), 2);
        assert_eq!(str_size(b"042"), 5);
        assert_eq!(str_size(&[b'x'; 100]), 103);
        assert_eq!(str_size(&[b'x'; 200]), 204);
    }
}

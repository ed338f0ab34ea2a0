//! How many nodes Redis's radix tree would have for the stream's node keys
//! (XINFO STREAM's `radix-tree-nodes`).
//!
//! Keys are 16-byte big-endian IDs. A radix tree over keys of equal length
//! has a canonical shape: a run of bytes shared by every key below a point is
//! one compressed node, a point where keys diverge is one branching node, and
//! every key ends in a leaf; an empty tree is its head node alone.

use super::id::StreamId;

/// Node count of a radix tree holding `keys` (sorted, distinct).
pub fn node_count(keys: &[StreamId]) -> usize {
    if keys.is_empty() {
        return 1;
    }
    let encoded: Vec<[u8; 16]> = keys.iter().map(|k| k.to_be_bytes()).collect();
    count(&encoded, 0)
}

fn count(keys: &[[u8; 16]], depth: usize) -> usize {
    let (first, last) = (&keys[0], &keys[keys.len() - 1]);
    let common = (depth..16).take_while(|&i| first[i] == last[i]).count();
    let compressed = usize::from(common > 0);
    let at = depth + common;
    if at == 16 {
        return compressed + 1;
    }
    let mut total = compressed + 1;
    let mut rest = keys;
    while let Some(head) = rest.first() {
        let byte = head[at];
        let split = rest.partition_point(|k| k[at] == byte);
        total += count(&rest[..split], at + 1);
        rest = &rest[split..];
    }
    total
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shapes() {
        assert_eq!(node_count(&[]), 1);
        assert_eq!(node_count(&[StreamId::new(1, 0)]), 2);
        // Shared 15-byte prefix, then a branch with two one-byte children.
        assert_eq!(node_count(&[StreamId::new(1, 0), StreamId::new(1, 1)]), 4);
    }
}

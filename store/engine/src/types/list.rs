//! PLACEHOLDER: the List type. Its owner replaces this file; keep the
//! surface (`encoding`, `heap_bytes`, `digest`, `len`, `is_empty`) that
//! generic code (OBJECT, MEMORY, DEBUG DIGEST, COPY) uses.

use std::hash::Hasher;

/// A list value.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct List {
    items: std::collections::VecDeque<Vec<u8>>,
}

impl List {
    pub fn len(&self) -> usize {
        self.items.len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// What OBJECT ENCODING reports.
    pub fn encoding(&self) -> &'static str {
        "listpack"
    }

    /// Approximate heap bytes.
    pub fn heap_bytes(&self) -> usize {
        0
    }

    /// Feeds the contents to a digest (DEBUG DIGEST); order-independent
    /// collections must digest in a canonical order.
    pub fn digest(&self, h: &mut dyn Hasher) {
        h.write_usize(self.len());
    }
}

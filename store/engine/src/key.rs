//! [`Key`]: a stored key. Keys of up to [`INLINE_CAPACITY`] bytes live inline,
//! next to their entry in the one allocation a table slot points to, so a
//! lookup follows one pointer and finds key and entry together (no second
//! allocation per key); longer keys are boxed.

use std::borrow::Borrow;
use std::cmp::Ordering;
use std::fmt;
use std::hash::{Hash, Hasher};
use std::ops::Deref;

/// Longest key stored inline (the enum stays 24 bytes, as a `Vec` would be).
pub const INLINE_CAPACITY: usize = 22;

/// An owned key. Behaves as `[u8]` for hashing, equality and order, so
/// tables are looked up with plain byte slices.
#[derive(Clone)]
pub enum Key {
    Inline { len: u8, bytes: [u8; INLINE_CAPACITY] },
    Heap(Box<[u8]>),
}

const _: () = assert!(std::mem::size_of::<Key>() == 24);

impl Key {
    pub fn as_bytes(&self) -> &[u8] {
        match self {
            Key::Inline { len, bytes } => &bytes[..usize::from(*len)],
            Key::Heap(b) => b,
        }
    }
}

impl From<&[u8]> for Key {
    fn from(data: &[u8]) -> Key {
        match u8::try_from(data.len()) {
            Ok(len) if data.len() <= INLINE_CAPACITY => {
                let mut bytes = [0u8; INLINE_CAPACITY];
                bytes[..data.len()].copy_from_slice(data);
                Key::Inline { len, bytes }
            }
            _ => Key::Heap(data.into()),
        }
    }
}

impl From<Vec<u8>> for Key {
    fn from(data: Vec<u8>) -> Key {
        if data.len() <= INLINE_CAPACITY {
            Key::from(data.as_slice())
        } else {
            Key::Heap(data.into_boxed_slice())
        }
    }
}

impl Deref for Key {
    type Target = [u8];
    fn deref(&self) -> &[u8] {
        self.as_bytes()
    }
}

impl AsRef<[u8]> for Key {
    fn as_ref(&self) -> &[u8] {
        self.as_bytes()
    }
}

impl Borrow<[u8]> for Key {
    fn borrow(&self) -> &[u8] {
        self.as_bytes()
    }
}

impl Hash for Key {
    /// Hashes exactly as the byte slice does (required by `Borrow<[u8]>`).
    fn hash<H: Hasher>(&self, state: &mut H) {
        self.as_bytes().hash(state);
    }
}

impl PartialEq for Key {
    fn eq(&self, other: &Key) -> bool {
        self.as_bytes() == other.as_bytes()
    }
}

impl Eq for Key {}

impl PartialOrd for Key {
    fn partial_cmp(&self, other: &Key) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for Key {
    fn cmp(&self, other: &Key) -> Ordering {
        self.as_bytes().cmp(other.as_bytes())
    }
}

impl fmt::Debug for Key {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Key({:?})", String::from_utf8_lossy(self.as_bytes()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::hash_map::DefaultHasher;

    fn hash_of<T: Hash + ?Sized>(value: &T) -> u64 {
        let mut h = DefaultHasher::new();
        value.hash(&mut h);
        h.finish()
    }

    #[test]
    fn short_keys_are_inline_and_long_keys_boxed() {
        assert!(matches!(Key::from(&b"key:000000012345"[..]), Key::Inline { len: 16, .. }));
        assert!(matches!(Key::from(&[7u8; INLINE_CAPACITY][..]), Key::Inline { .. }));
        assert!(matches!(Key::from(&[7u8; INLINE_CAPACITY + 1][..]), Key::Heap(_)));
        assert!(matches!(Key::from(vec![1u8; 100]), Key::Heap(_)));
        assert!(matches!(Key::from(Vec::new()), Key::Inline { len: 0, .. }));
    }

    #[test]
    fn behaves_as_its_bytes() {
        for data in [&b""[..], b"a", b"key:1", &[0xffu8; 22], &[b'x'; 23], &[3u8; 300]] {
            let key = Key::from(data);
            assert_eq!(&*key, data);
            assert_eq!(hash_of(&key), hash_of(data), "hash must match the slice's");
            assert_eq!(key, Key::from(data.to_vec()));
        }
        assert!(Key::from(&b"ab"[..]) < Key::from(&b"abc"[..]));
        assert!(Key::from(&[b'b'; 30][..]) > Key::from(&b"a"[..]));
    }

    #[test]
    fn table_lookups_by_slice_find_inline_and_boxed_keys() {
        let mut map: hashbrown::HashMap<Key, u32> = hashbrown::HashMap::new();
        map.insert(Key::from(&b"short"[..]), 1);
        map.insert(Key::from(&[b'l'; 40][..]), 2);
        assert_eq!(map.get(&b"short"[..]), Some(&1));
        assert_eq!(map.get(&[b'l'; 40][..]), Some(&2));
        assert_eq!(map.get(&b"shor"[..]), None);
    }
}

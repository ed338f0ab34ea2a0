//! Redis's CRC-64 (`src/crc64.c`, "Jones"): polynomial 0xad93d23594c935a9,
//! reflected input and output, initial value 0, no final xor. It seals a
//! DUMP payload.

/// The polynomial, bit-reversed for the reflected (LSB-first) algorithm.
const POLY_REFLECTED: u64 = 0xad93d23594c935a9u64.reverse_bits();

/// The byte-at-a-time lookup table.
const TABLE: [u64; 256] = build_table();

const fn build_table() -> [u64; 256] {
    let mut table = [0u64; 256];
    let mut byte = 0;
    while byte < 256 {
        let mut crc = byte as u64;
        let mut bit = 0;
        while bit < 8 {
            crc = if crc & 1 != 0 { (crc >> 1) ^ POLY_REFLECTED } else { crc >> 1 };
            bit += 1;
        }
        table[byte] = crc;
        byte += 1;
    }
    table
}

/// Continues `crc` over `data` (start with 0), as Redis's `crc64(crc, s, l)`.
pub fn crc64(mut crc: u64, data: &[u8]) -> u64 {
    for &b in data {
        crc = TABLE[((crc ^ b as u64) & 0xff) as usize] ^ (crc >> 8);
    }
    crc
}

#[cfg(test)]
mod tests {
    use super::crc64;

    /// The vectors of `crc64Test` in Redis's `src/crc64.c`.
    #[test]
    fn redis_test_vectors() {
        assert_eq!(crc64(0, b"123456789"), 0xe9c6d914c4b8d9ca);
        let lorem = "Lorem ipsum dolor sit amet, consectetur adipiscing elit, sed \
                     do eiusmod tempor incididunt ut labore et dolore magna \
                     aliqua. Ut enim ad minim veniam, quis nostrud exercitation \
                     ullamco laboris nisi ut aliquip ex ea commodo consequat. Duis \
                     aute irure dolor in reprehenderit in voluptate velit esse \
                     cillum dolore eu fugiat nulla pariatur. Excepteur sint \
                     occaecat cupidatat non proident, sunt in culpa qui officia \
                     deserunt mollit anim id est laborum.";
        // `sizeof(li)` in C counts the terminating NUL.
        let mut with_nul = lorem.as_bytes().to_vec();
        with_nul.push(0);
        assert_eq!(crc64(0, &with_nul), 0xc7794709e69683b3);
    }

    #[test]
    fn continues_across_chunks() {
        let whole = crc64(0, b"123456789");
        assert_eq!(crc64(crc64(0, b"1234"), b"56789"), whole);
        assert_eq!(crc64(0, b""), 0);
    }
}

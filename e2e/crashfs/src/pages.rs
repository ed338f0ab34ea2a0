//! File contents as a sparse map of 4 KiB pages, so that preallocated or sparse files cost
//! nothing and syncing copies only the pages that changed.

use std::collections::BTreeMap;

pub const PAGE: u64 = 4096;

/// A file's bytes: `size` plus the pages that hold data (absent pages read as zeros).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct FileData {
    size: u64,
    pages: BTreeMap<u64, Box<[u8]>>,
}

impl FileData {
    pub fn size(&self) -> u64 {
        self.size
    }

    /// Bytes held in pages (what the model costs in memory).
    pub fn resident_bytes(&self) -> u64 {
        self.pages.len() as u64 * PAGE
    }

    /// Up to `len` bytes from `offset`, short at end of file.
    pub fn read(&self, offset: u64, len: u64) -> Vec<u8> {
        let end = self.size.min(offset.saturating_add(len));
        if offset >= end {
            return Vec::new();
        }
        let mut out = vec![0; (end - offset) as usize];
        for (page, range) in page_spans(offset, end) {
            if let Some(bytes) = self.pages.get(&page) {
                let start = (page * PAGE + range.start - offset) as usize;
                out[start..start + (range.end - range.start) as usize]
                    .copy_from_slice(&bytes[range.start as usize..range.end as usize]);
            }
        }
        out
    }

    /// Writes `data` at `offset`, growing the file; returns the pages touched.
    pub fn write(&mut self, offset: u64, data: &[u8]) -> Vec<u64> {
        let end = offset + data.len() as u64;
        let mut touched = Vec::new();
        for (page, range) in page_spans(offset, end) {
            let bytes = self.pages.entry(page).or_insert_with(|| vec![0; PAGE as usize].into_boxed_slice());
            let src = (page * PAGE + range.start - offset) as usize;
            bytes[range.start as usize..range.end as usize]
                .copy_from_slice(&data[src..src + (range.end - range.start) as usize]);
            touched.push(page);
        }
        self.size = self.size.max(end);
        touched
    }

    /// Sets the size; shrinking drops whole pages past the end and zeroes the tail of the last one.
    /// Returns the pages whose contents changed.
    pub fn set_size(&mut self, size: u64) -> Vec<u64> {
        let mut touched = Vec::new();
        if size < self.size {
            let dropped: Vec<u64> = self.pages.range(size.div_ceil(PAGE)..).map(|(p, _)| *p).collect();
            for page in dropped {
                self.pages.remove(&page);
                touched.push(page);
            }
            if size % PAGE != 0 {
                if let Some(bytes) = self.pages.get_mut(&(size / PAGE)) {
                    bytes[(size % PAGE) as usize..].fill(0);
                    touched.push(size / PAGE);
                }
            }
        }
        self.size = size;
        touched
    }

    /// Zeroes `[offset, offset+len)` within the file (hole punching); returns the pages touched.
    pub fn zero_range(&mut self, offset: u64, len: u64) -> Vec<u64> {
        let end = self.size.min(offset.saturating_add(len));
        let mut touched = Vec::new();
        for (page, range) in page_spans(offset, end) {
            if let Some(bytes) = self.pages.get_mut(&page) {
                bytes[range.start as usize..range.end as usize].fill(0);
                touched.push(page);
            }
        }
        touched
    }

    /// Makes `page` of `self` equal to the same page of `other` (used to sync and to tear).
    pub fn copy_page_from(&mut self, other: &FileData, page: u64) {
        match other.pages.get(&page) {
            Some(bytes) => {
                self.pages.insert(page, bytes.clone());
            }
            None => {
                self.pages.remove(&page);
            }
        }
    }

    /// Drops pages wholly past `size` (after the size was copied from another version).
    pub fn set_size_from(&mut self, size: u64) {
        self.set_size(size);
    }
}

/// The pages covering `[start, end)`, each with the byte range inside the page.
fn page_spans(start: u64, end: u64) -> Vec<(u64, std::ops::Range<u64>)> {
    let mut spans = Vec::new();
    let mut pos = start;
    while pos < end {
        let page = pos / PAGE;
        let in_page_end = ((page + 1) * PAGE).min(end);
        spans.push((page, pos - page * PAGE..in_page_end - page * PAGE));
        pos = in_page_end;
    }
    spans
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn write_and_read_across_pages() {
        let mut f = FileData::default();
        let data: Vec<u8> = (0..10_000u32).map(|i| (i % 251) as u8).collect();
        assert_eq!(f.write(100, &data), vec![0, 1, 2]);
        assert_eq!(f.size(), 10_100);
        assert_eq!(f.read(100, 10_000), data);
        assert_eq!(f.read(0, 100), vec![0; 100]);
        assert_eq!(f.read(10_000, 500).len(), 100, "short read at end of file");
    }

    #[test]
    fn sparse_growth_costs_nothing_and_reads_zeros() {
        let mut f = FileData::default();
        f.set_size(64 << 20);
        assert_eq!(f.resident_bytes(), 0);
        assert_eq!(f.read(5 << 20, 8), vec![0; 8]);
    }

    #[test]
    fn shrinking_zeroes_the_tail() {
        let mut f = FileData::default();
        f.write(0, &[7; 5000]);
        f.set_size(10);
        f.set_size(5000);
        assert_eq!(f.read(0, 5000), [vec![7; 10], vec![0; 4990]].concat());
    }

    #[test]
    fn zero_range_punches_a_hole() {
        let mut f = FileData::default();
        f.write(0, &[1; 100]);
        f.zero_range(10, 20);
        assert_eq!(f.read(0, 40), [vec![1; 10], vec![0; 20], vec![1; 10]].concat());
    }
}

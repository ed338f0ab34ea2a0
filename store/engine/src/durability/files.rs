//! The WAL's segment files as the syncer sees them: the active segment it
//! writes into, the sealed ones before it, and zero-filled spares ready to
//! become the next active segment.
//!
//! Rotation: when the next record does not fit, the active segment is
//! fdatasynced, a spare is renamed to the next segment's name, its header is
//! written and fdatasynced, and the directory is fsynced, so no record in the
//! new segment can be acknowledged before its name is durable. Segments
//! whose records are all covered by a durable snapshot become spares again
//! (renamed, not deleted: reuse keeps `fdatasync` free of metadata work).

use std::collections::VecDeque;
use std::io;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use super::record::{self, Lsn};
use super::segment::{self, SegmentHeader, HEADER_LEN};
use super::storage::{Storage, StorageFile};

/// Spares kept ready (a new one is made when one is used).
const SPARES_WANTED: usize = 1;
/// Zero-fill chunk when preparing a spare.
const FILL_CHUNK: usize = 1 << 20;

/// How a new spare segment gets its blocks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SpareFill {
    /// Write zeros through the whole file and fsync: later overwrites in place
    /// change no metadata, so each fdatasync flushes data only (the `sync`
    /// tier, where every acknowledgement waits for one).
    Zeros,
    /// Reserve the blocks with `posix_fallocate` (unwritten extents, no data
    /// written): no zero-fill traffic, but the first fdatasync over each new
    /// block also commits its extent conversion. For the tiers whose
    /// acknowledgements do not wait for fdatasync.
    Allocate,
}

/// A file handle one syncer fdatasyncs through, outside the files lock.
pub type SyncHandle = Arc<parking_lot::Mutex<Box<dyn StorageFile>>>;

/// The segment being written.
#[derive(Debug)]
pub struct Active {
    pub file: Box<dyn StorageFile>,
    pub base: Lsn,
    pub offset: u64,
    pub size: u64,
    /// The segment's file name.
    pub name: String,
    /// One handle per syncer, opened on first use. Each is its own open file
    /// description: the kernel reports a writeback error once per open file,
    /// so syncers sharing one could miss an error another one consumed.
    pub sync_handles: Vec<Option<SyncHandle>>,
}

impl Active {
    fn new(file: Box<dyn StorageFile>, name: String, base: Lsn, offset: u64, size: u64) -> Active {
        Active { file, base, offset, size, name, sync_handles: Vec::new() }
    }
}

/// A preallocated (see [`SpareFill`]), fsynced file under a spare name.
#[derive(Debug)]
pub struct Spare {
    pub name: String,
    pub file: Box<dyn StorageFile>,
    pub size: u64,
}

/// What the syncer owns.
#[derive(Debug)]
pub struct Files {
    pub storage: Arc<dyn Storage>,
    pub dir: PathBuf,
    pub segment_size: u64,
    pub fill: SpareFill,
    pub active: Option<Active>,
    /// Segments before the active one, oldest first: (base LSN, name).
    pub sealed: VecDeque<(Lsn, String)>,
    pub spares: Vec<Spare>,
    next_spare_id: u64,
}

/// Why the log could not be written.
#[derive(Debug)]
pub enum WriteError {
    /// No space for a new segment: retry later.
    NoSpace(io::Error),
    /// Anything else: the log is unusable.
    Failed(String),
}

impl Files {
    pub fn new(storage: Arc<dyn Storage>, dir: &Path, segment_size: u64, fill: SpareFill) -> Files {
        Files {
            storage,
            dir: dir.to_path_buf(),
            segment_size,
            fill,
            active: None,
            sealed: VecDeque::new(),
            spares: Vec::new(),
            next_spare_id: 0,
        }
    }

    fn path(&self, name: &str) -> PathBuf {
        self.dir.join(name)
    }

    /// Continues writing an existing segment after recovery.
    pub fn resume(&mut self, base: Lsn, name: &str, offset: u64) -> io::Result<()> {
        let file = self.storage.open(&self.path(name))?;
        let size = file.len()?;
        self.active = Some(Active::new(file, name.to_string(), base, offset, size));
        Ok(())
    }

    /// Adopts spare files found at startup (their content is irrelevant).
    pub fn adopt_spare(&mut self, name: &str) -> io::Result<()> {
        let file = self.storage.open(&self.path(name))?;
        let size = file.len()?;
        if let Ok(id) = name.trim_start_matches("wal-spare-").trim_end_matches(".tmp").parse::<u64>() {
            self.next_spare_id = self.next_spare_id.max(id + 1);
        }
        self.spares.push(Spare { name: name.to_string(), file, size });
        Ok(())
    }

    /// Makes sure a segment is ready for the record with LSN `base`, so the
    /// first writes after a start never wait for a segment to be prepared.
    pub fn ensure_active(&mut self, base: Lsn) -> Result<(), WriteError> {
        if self.active.is_some() {
            return Ok(());
        }
        self.rotate(base, 0)
    }

    /// Whether a spare is wanted.
    pub fn wants_spare(&self) -> bool {
        self.spares.len() < SPARES_WANTED
    }

    /// A name for a new spare.
    pub fn next_spare_name(&mut self) -> String {
        let name = segment::spare_name(self.next_spare_id);
        self.next_spare_id += 1;
        name
    }

    /// Writes `records` (whole records back to back) into the log, rotating
    /// as needed. On error, returns how many bytes were written.
    pub fn write(&mut self, records: &[u8]) -> Result<(), (usize, WriteError)> {
        let mut pos = 0;
        while pos < records.len() {
            let chunk = self.fitting_prefix(&records[pos..]);
            if chunk == 0 {
                let first = record::peek_lsn(&records[pos..]).unwrap_or(0);
                let need = record::claimed_len(&records[pos..]).unwrap_or(0) + record::PREFIX_LEN;
                self.rotate(first, need as u64).map_err(|e| (pos, e))?;
                continue;
            }
            let active = self.active.as_mut().ok_or((pos, WriteError::Failed("no active segment".into())))?;
            active.file.write_at(active.offset, &records[pos..pos + chunk]).map_err(|e| {
                (pos, WriteError::Failed(format!("write to WAL segment {}: {e}", segment::name(active.base))))
            })?;
            active.offset += chunk as u64;
            pos += chunk;
        }
        Ok(())
    }

    /// fdatasync of the active segment.
    pub fn sync(&mut self) -> Result<(), WriteError> {
        match self.active.as_mut() {
            Some(a) => a
                .file
                .sync_data()
                .map_err(|e| WriteError::Failed(format!("fdatasync of WAL segment {}: {e}", segment::name(a.base)))),
            None => Ok(()),
        }
    }

    /// The handle syncer `syncer` fdatasyncs the active segment through
    /// (opened on first use for each segment).
    pub fn sync_handle(&mut self, syncer: usize) -> Result<SyncHandle, WriteError> {
        let storage = self.storage.clone();
        let dir = self.dir.clone();
        let Some(active) = self.active.as_mut() else { return Err(WriteError::Failed("no active segment".into())) };
        if active.sync_handles.len() <= syncer {
            active.sync_handles.resize(syncer + 1, None);
        }
        if let Some(handle) = &active.sync_handles[syncer] {
            return Ok(handle.clone());
        }
        let file = storage
            .open(&dir.join(&active.name))
            .map_err(|e| WriteError::Failed(format!("cannot open WAL segment {} for syncing: {e}", active.name)))?;
        let handle: SyncHandle = Arc::new(parking_lot::Mutex::new(file));
        active.sync_handles[syncer] = Some(handle.clone());
        Ok(handle)
    }

    /// How many leading bytes of `records` (whole records) fit in the active segment.
    fn fitting_prefix(&self, records: &[u8]) -> usize {
        let Some(active) = &self.active else { return 0 };
        let room = active.size.saturating_sub(active.offset) as usize;
        let mut len = 0;
        while len < records.len() {
            let Some(body) = record::claimed_len(&records[len..]) else { break };
            let total = record::PREFIX_LEN + body;
            if len + total > room {
                break;
            }
            len += total;
        }
        len
    }

    /// Makes the next segment, starting at `base`, the active one.
    fn rotate(&mut self, base: Lsn, need: u64) -> Result<(), WriteError> {
        if let Some(active) = self.active.as_mut() {
            active.file.sync_data().map_err(|e| {
                WriteError::Failed(format!("fdatasync of WAL segment {}: {e}", segment::name(active.base)))
            })?;
        }
        let spare = self.take_spare(need + HEADER_LEN as u64)?;
        let name = segment::name(base);
        let failed = |what: &str, e: io::Error| WriteError::Failed(format!("{what} WAL segment {name}: {e}"));
        self.storage.rename(&self.path(&spare.name), &self.path(&name)).map_err(|e| failed("rename to", e))?;
        let mut file = spare.file;
        let header = SegmentHeader { base_lsn: base, size: spare.size };
        file.write_at(0, &header.encode()).map_err(|e| failed("write header of", e))?;
        file.sync_data().map_err(|e| failed("fdatasync of", e))?;
        self.storage.sync_dir(&self.dir).map_err(|e| failed("fsync of the directory after creating", e))?;
        if let Some(old) = self.active.take() {
            self.sealed.push_back((old.base, segment::name(old.base)));
        }
        self.active = Some(Active::new(file, name, base, HEADER_LEN as u64, spare.size));
        Ok(())
    }

    /// A spare at least `min_size` bytes long: a ready one, or one made now.
    fn take_spare(&mut self, min_size: u64) -> Result<Spare, WriteError> {
        if let Some(i) = self.spares.iter().position(|s| s.size >= min_size) {
            return Ok(self.spares.swap_remove(i));
        }
        let name = self.next_spare_name();
        let size = self.segment_size.max(min_size);
        prepare_spare(self.storage.as_ref(), &self.dir, &name, size, self.fill).map_err(|e| {
            if e.raw_os_error() == Some(28) {
                WriteError::NoSpace(e)
            } else {
                WriteError::Failed(format!("cannot prepare WAL segment {name}: {e}"))
            }
        })
    }

    /// Sealed segments whose records are all at or below `lsn` become spares
    /// (or are removed when enough spares exist). The directory is fsynced.
    pub fn recycle_through(&mut self, lsn: Lsn) -> io::Result<usize> {
        let mut recycled = 0;
        loop {
            let next_base = self.sealed.get(1).map(|s| s.0).or_else(|| self.active.as_ref().map(|a| a.base));
            let Some((_, name)) = self.sealed.front() else { break };
            if next_base.is_none_or(|b| b > lsn + 1) {
                break;
            }
            let name = name.clone();
            if self.spares.len() < SPARES_WANTED + 1 {
                let spare = self.next_spare_name();
                self.storage.rename(&self.path(&name), &self.path(&spare))?;
                let file = self.storage.open(&self.path(&spare))?;
                let size = file.len()?;
                self.spares.push(Spare { name: spare, file, size });
            } else {
                self.storage.remove(&self.path(&name))?;
            }
            self.sealed.pop_front();
            recycled += 1;
        }
        if recycled > 0 {
            self.storage.sync_dir(&self.dir)?;
        }
        Ok(recycled)
    }

    /// Number of segment files (sealed, active and spare).
    pub fn segment_count(&self) -> usize {
        self.sealed.len() + usize::from(self.active.is_some()) + self.spares.len()
    }
}

/// Creates a preallocated (see [`SpareFill`]), fsynced file of `size` bytes
/// under `name`, and fsyncs the directory.
pub fn prepare_spare(storage: &dyn Storage, dir: &Path, name: &str, size: u64, fill: SpareFill) -> io::Result<Spare> {
    let path = dir.join(name);
    let result = (|| {
        let mut file = storage.create(&path)?;
        match fill {
            SpareFill::Zeros => zero_fill(file.as_mut(), size)?,
            SpareFill::Allocate => file.allocate(size)?,
        }
        file.sync_all()?;
        storage.sync_dir(dir)?;
        Ok(Spare { name: name.to_string(), file, size })
    })();
    if result.is_err() {
        let _ = storage.remove(&path);
    }
    result
}

/// The zeros a spare is filled from: a static in `.bss`, so filling a
/// segment allocates nothing (a heap buffer would count against
/// `maxmemory` for as long as the fill takes, and evict keys).
static ZEROS: [u8; FILL_CHUNK] = [0; FILL_CHUNK];

fn zero_fill(file: &mut dyn StorageFile, size: u64) -> io::Result<()> {
    let zeros = &ZEROS;
    let mut offset = 0;
    while offset < size {
        let n = (size - offset).min(FILL_CHUNK as u64) as usize;
        file.write_at(offset, &zeros[..n])?;
        offset += n as u64;
    }
    Ok(())
}

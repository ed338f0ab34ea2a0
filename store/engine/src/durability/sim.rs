//! A simulated disk for crash tests: it keeps, per file, what is durable and
//! what was only written, and per directory, which names are durable.
//!
//! [`SimStorage::crash`] models a power cut: every file reverts to its
//! durable bytes plus, optionally, a prefix of its unsynced writes in order
//! with the last kept one torn at a random byte (the disk may persist some
//! unsynced writes, in any prefix, and tear the one in flight); every
//! directory reverts to its durable names. Files whose creation or rename was
//! never made durable by a directory fsync disappear or get their old name
//! back. Handles opened before the crash keep working on orphaned copies, as
//! a dead process's descriptors would, without touching the new state.
//!
//! Faults on command: failing fsyncs, failing writes, and a full disk (a
//! write that would grow a file or a new file fails with ENOSPC; overwriting
//! preallocated bytes still works).

use std::collections::BTreeMap;
use std::io;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;

use parking_lot::Mutex;
use rand::Rng;

use super::storage::{Storage, StorageFile};

#[derive(Debug, Default, Clone)]
struct FileData {
    durable: Vec<u8>,
    current: Vec<u8>,
    /// Writes since the last sync, in order: (offset, bytes).
    unsynced: Vec<(u64, Vec<u8>)>,
    /// The length changed since the last full sync (fdatasync still covers
    /// it here, as ext4 does for size changes; kept for inspection).
    len_dirty: bool,
}

type Shared = Arc<Mutex<FileData>>;

#[derive(Debug, Default)]
struct Namespace {
    current: BTreeMap<PathBuf, Shared>,
    durable: BTreeMap<PathBuf, Shared>,
}

/// The simulated disk. Cloning shares it.
#[derive(Debug, Default, Clone)]
pub struct SimStorage {
    ns: Arc<Mutex<Namespace>>,
    faults: Arc<Faults>,
}

#[derive(Debug, Default)]
struct Faults {
    fail_sync: AtomicBool,
    fail_write: AtomicBool,
    disk_full: AtomicBool,
    syncs: AtomicU64,
}

fn eio() -> io::Error {
    io::Error::from_raw_os_error(5)
}

fn enospc() -> io::Error {
    io::Error::from_raw_os_error(28)
}

fn enoent(path: &Path) -> io::Error {
    io::Error::new(io::ErrorKind::NotFound, format!("{}: no such file", path.display()))
}

impl SimStorage {
    pub fn new() -> Self {
        Self::default()
    }

    /// Fsyncs fail with EIO from now on (until cleared).
    pub fn set_fail_sync(&self, on: bool) {
        self.faults.fail_sync.store(on, Ordering::SeqCst);
    }

    /// Writes fail with EIO from now on (until cleared).
    pub fn set_fail_write(&self, on: bool) {
        self.faults.fail_write.store(on, Ordering::SeqCst);
    }

    /// Growing files fails with ENOSPC from now on (until cleared).
    pub fn set_disk_full(&self, on: bool) {
        self.faults.disk_full.store(on, Ordering::SeqCst);
    }

    /// Number of successful fsync/fdatasync calls so far.
    pub fn syncs(&self) -> u64 {
        self.faults.syncs.load(Ordering::SeqCst)
    }

    /// A power cut. With `tear`, each file keeps a random prefix of its
    /// unsynced writes, the last of them cut at a random byte; without, all
    /// unsynced writes are lost.
    pub fn crash(&self, tear: bool, rng: &mut impl Rng) {
        let mut ns = self.ns.lock();
        let mut rebuilt: BTreeMap<PathBuf, Shared> = BTreeMap::new();
        let mut copies: Vec<(*const Mutex<FileData>, Shared)> = Vec::new();
        for (path, file) in ns.durable.iter() {
            let ptr = Arc::as_ptr(file);
            let copy = match copies.iter().find(|(p, _)| *p == ptr) {
                Some((_, c)) => c.clone(),
                None => {
                    let data = file.lock();
                    let mut content = data.durable.clone();
                    if tear && !data.unsynced.is_empty() {
                        let kept = rng.gen_range(0..=data.unsynced.len());
                        for (i, (offset, bytes)) in data.unsynced.iter().take(kept).enumerate() {
                            let take = if i + 1 == kept { rng.gen_range(0..=bytes.len()) } else { bytes.len() };
                            apply_write(&mut content, *offset, &bytes[..take]);
                        }
                    }
                    let c = Arc::new(Mutex::new(FileData {
                        durable: content.clone(),
                        current: content,
                        unsynced: Vec::new(),
                        len_dirty: false,
                    }));
                    copies.push((ptr, c.clone()));
                    c
                }
            };
            rebuilt.insert(path.clone(), copy);
        }
        ns.current = rebuilt.clone();
        ns.durable = rebuilt;
    }

    /// The current (not necessarily durable) bytes of a file, if it exists.
    pub fn contents(&self, path: &Path) -> Option<Vec<u8>> {
        self.ns.lock().current.get(path).map(|f| f.lock().current.clone())
    }

    /// Overwrites bytes of a file as durable (corruption tests).
    pub fn corrupt(&self, path: &Path, offset: u64, bytes: &[u8]) -> bool {
        let ns = self.ns.lock();
        let Some(file) = ns.current.get(path) else { return false };
        let mut data = file.lock();
        apply_write(&mut data.current, offset, bytes);
        let current = data.current.clone();
        data.durable = current;
        true
    }
}

fn apply_write(content: &mut Vec<u8>, offset: u64, bytes: &[u8]) {
    let end = offset as usize + bytes.len();
    if content.len() < end {
        content.resize(end, 0);
    }
    content[offset as usize..end].copy_from_slice(bytes);
}

#[derive(Debug)]
struct SimFile {
    data: Shared,
    faults: Arc<Faults>,
}

impl StorageFile for SimFile {
    fn write_at(&mut self, offset: u64, data: &[u8]) -> io::Result<()> {
        if self.faults.fail_write.load(Ordering::SeqCst) {
            return Err(eio());
        }
        let mut file = self.data.lock();
        let end = offset + data.len() as u64;
        if end > file.current.len() as u64 && self.faults.disk_full.load(Ordering::SeqCst) {
            return Err(enospc());
        }
        if end > file.current.len() as u64 {
            file.len_dirty = true;
        }
        apply_write(&mut file.current, offset, data);
        file.unsynced.push((offset, data.to_vec()));
        Ok(())
    }

    fn read_at(&self, offset: u64, buf: &mut [u8]) -> io::Result<usize> {
        let file = self.data.lock();
        let start = (offset as usize).min(file.current.len());
        let n = buf.len().min(file.current.len() - start);
        buf[..n].copy_from_slice(&file.current[start..start + n]);
        Ok(n)
    }

    fn len(&self) -> io::Result<u64> {
        Ok(self.data.lock().current.len() as u64)
    }

    fn sync_data(&mut self) -> io::Result<()> {
        if self.faults.fail_sync.load(Ordering::SeqCst) {
            return Err(eio());
        }
        let mut file = self.data.lock();
        file.durable = file.current.clone();
        file.unsynced.clear();
        file.len_dirty = false;
        self.faults.syncs.fetch_add(1, Ordering::SeqCst);
        Ok(())
    }

    fn sync_all(&mut self) -> io::Result<()> {
        self.sync_data()
    }

    fn set_len(&mut self, len: u64) -> io::Result<()> {
        let mut file = self.data.lock();
        if len > file.current.len() as u64 && self.faults.disk_full.load(Ordering::SeqCst) {
            return Err(enospc());
        }
        file.current.resize(len as usize, 0);
        let current = file.current.clone();
        // A size change is an unsynced "write" of the whole new image tail.
        file.unsynced.push((0, current));
        file.len_dirty = true;
        Ok(())
    }
}

impl Storage for SimStorage {
    fn create(&self, path: &Path) -> io::Result<Box<dyn StorageFile>> {
        if self.faults.disk_full.load(Ordering::SeqCst) {
            return Err(enospc());
        }
        let data: Shared = Arc::default();
        self.ns.lock().current.insert(path.to_path_buf(), data.clone());
        Ok(Box::new(SimFile { data, faults: self.faults.clone() }))
    }

    fn open(&self, path: &Path) -> io::Result<Box<dyn StorageFile>> {
        let data = self.ns.lock().current.get(path).cloned().ok_or_else(|| enoent(path))?;
        Ok(Box::new(SimFile { data, faults: self.faults.clone() }))
    }

    fn rename(&self, from: &Path, to: &Path) -> io::Result<()> {
        let mut ns = self.ns.lock();
        let data = ns.current.remove(from).ok_or_else(|| enoent(from))?;
        ns.current.insert(to.to_path_buf(), data);
        Ok(())
    }

    fn remove(&self, path: &Path) -> io::Result<()> {
        self.ns.lock().current.remove(path).map(|_| ()).ok_or_else(|| enoent(path))
    }

    fn list(&self, dir: &Path) -> io::Result<Vec<String>> {
        let ns = self.ns.lock();
        Ok(ns
            .current
            .keys()
            .filter(|p| p.parent() == Some(dir))
            .filter_map(|p| p.file_name().and_then(|n| n.to_str()).map(str::to_string))
            .collect())
    }

    fn sync_dir(&self, dir: &Path) -> io::Result<()> {
        if self.faults.fail_sync.load(Ordering::SeqCst) {
            return Err(eio());
        }
        let mut ns = self.ns.lock();
        ns.durable.retain(|p, _| p.parent() != Some(dir));
        let entries: Vec<(PathBuf, Shared)> =
            ns.current.iter().filter(|(p, _)| p.parent() == Some(dir)).map(|(p, f)| (p.clone(), f.clone())).collect();
        ns.durable.extend(entries);
        Ok(())
    }

    fn create_dir_all(&self, _dir: &Path) -> io::Result<()> {
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::SeedableRng;

    #[test]
    fn unsynced_writes_and_names_are_lost() {
        let disk = SimStorage::new();
        let dir = Path::new("/d");
        let mut f = disk.create(&dir.join("a")).unwrap();
        f.write_at(0, b"hello").unwrap();
        f.sync_data().unwrap();
        // The name is not durable yet: a crash loses the file.
        let mut rng = rand::rngs::StdRng::seed_from_u64(1);
        disk.crash(false, &mut rng);
        assert!(disk.list(dir).unwrap().is_empty());

        let mut f = disk.create(&dir.join("a")).unwrap();
        f.write_at(0, b"hello").unwrap();
        f.sync_data().unwrap();
        disk.sync_dir(dir).unwrap();
        f.write_at(5, b" world").unwrap();
        disk.crash(false, &mut rng);
        assert_eq!(disk.contents(&dir.join("a")).unwrap(), b"hello");
    }

    #[test]
    fn torn_writes_keep_a_prefix() {
        let disk = SimStorage::new();
        let dir = Path::new("/d");
        let path = dir.join("a");
        let mut f = disk.create(&path).unwrap();
        f.sync_data().unwrap();
        disk.sync_dir(dir).unwrap();
        f.write_at(0, b"0123456789").unwrap();
        let mut seen_partial = false;
        for seed in 0..50 {
            let disk2 = disk.clone();
            let mut rng = rand::rngs::StdRng::seed_from_u64(seed);
            // Crash a copy of the state each time: rebuild the same history.
            let d = SimStorage::new();
            let mut g = d.create(&path).unwrap();
            g.sync_data().unwrap();
            d.sync_dir(dir).unwrap();
            g.write_at(0, b"0123456789").unwrap();
            d.crash(true, &mut rng);
            let c = d.contents(&path).unwrap();
            assert!(b"0123456789".starts_with(&c), "{c:?}");
            seen_partial |= !c.is_empty() && c.len() < 10;
            drop(disk2);
        }
        assert!(seen_partial);
    }

    #[test]
    fn faults() {
        let disk = SimStorage::new();
        let mut f = disk.create(Path::new("/d/a")).unwrap();
        f.set_len(100).unwrap();
        disk.set_disk_full(true);
        assert!(f.write_at(10, b"x").is_ok(), "preallocated bytes can be overwritten");
        assert_eq!(f.write_at(100, b"x").unwrap_err().raw_os_error(), Some(28));
        assert!(disk.create(Path::new("/d/b")).is_err());
        disk.set_fail_sync(true);
        assert!(f.sync_data().is_err());
    }
}

//! The filesystem model: what processes see (`live`) and what survives a power cut (`disk`).
//!
//! Rules (POSIX taken at its word, no ext4 journal favours):
//! - `write`, `truncate`, `fallocate` change only the live file; its changed pages and its size
//!   reach the disk when the file is fsynced or fdatasynced (both are treated alike: data + size),
//!   or at once for a file opened with O_DSYNC or O_SYNC (the FUSE layer syncs after each write).
//! - `create`, `mkdir`, `rename`, `unlink`, `rmdir` change only the live directory; the directory's
//!   entries reach the disk when *that directory* is fsynced. A file whose name is not on disk is
//!   gone after a power cut even if its data was synced; a name on disk whose file was never
//!   synced comes back as an empty file. A rename between two directories is durable in each
//!   directory when that directory is fsynced (in between, both or neither name may survive).
//! - `cut` (a power cut) makes the live state equal to the disk, dropping files no longer reachable
//!   from the root. With `torn`, the last unsynced write of each file first reaches the disk
//!   partially: a random number of its leading 512-byte sectors (possibly none, possibly all),
//!   when it starts within the file's durable size (an append right after synced data, or an
//!   overwrite of a preallocated segment); a write past lost earlier writes is simply lost.
//!
//! - With `Metadata::Journal` (ext4-like, opt-in), an fsync or fdatasync of *any* file or
//!   directory also makes every directory change made so far durable, as a journaling filesystem
//!   commits all pending metadata in one transaction. File data still needs the file's own sync.
//!   Redis 7.0 needs this mode: it never fsyncs the data directory after `mkdir appendonlydir`.
//!
//! Inode numbers are never reused, so the kernel's cached inodes cannot alias a new file.

use crate::pages::FileData;
use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};
use std::ffi::{OsStr, OsString};
use std::time::SystemTime;

pub const ROOT: u64 = 1;
const SECTOR: u64 = 512;

/// Errors the model returns; the FUSE layer turns them into errno values.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum FsError {
    #[error("no such file or directory")]
    NotFound,
    #[error("file exists")]
    Exists,
    #[error("not a directory")]
    NotDir,
    #[error("is a directory")]
    IsDir,
    #[error("directory not empty")]
    NotEmpty,
    #[error("invalid argument")]
    Invalid,
    #[error("operation not supported")]
    NotSupported,
}

impl FsError {
    pub fn errno(self) -> i32 {
        match self {
            FsError::NotFound => libc::ENOENT,
            FsError::Exists => libc::EEXIST,
            FsError::NotDir => libc::ENOTDIR,
            FsError::IsDir => libc::EISDIR,
            FsError::NotEmpty => libc::ENOTEMPTY,
            FsError::Invalid => libc::EINVAL,
            FsError::NotSupported => libc::EOPNOTSUPP,
        }
    }
}

pub type FsResult<T> = Result<T, FsError>;

/// How directory entries become durable.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Metadata {
    /// POSIX: a directory's entries are durable once that directory is fsynced.
    #[default]
    Strict,
    /// ext4-like: any fsync also commits every directory change made before it.
    Journal,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    File,
    Dir,
}

/// What `stat` shows.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Attr {
    pub ino: u64,
    pub kind: Kind,
    pub size: u64,
    pub mode: u32,
    pub nlink: u32,
    pub mtime: SystemTime,
}

#[derive(Debug, Clone)]
enum Body {
    File(FileData),
    Dir(BTreeMap<OsString, u64>),
}

#[derive(Debug, Clone)]
struct Node {
    body: Body,
    mode: u32,
    mtime: SystemTime,
}

impl Node {
    fn new(kind: Kind, mode: u32) -> Node {
        let body = match kind {
            Kind::File => Body::File(FileData::default()),
            Kind::Dir => Body::Dir(BTreeMap::new()),
        };
        Node { body, mode: mode & 0o7777, mtime: SystemTime::now() }
    }

    fn kind(&self) -> Kind {
        match self.body {
            Body::File(_) => Kind::File,
            Body::Dir(_) => Kind::Dir,
        }
    }
}

/// A file's changes not yet on disk.
#[derive(Debug, Default)]
struct Unsynced {
    pages: BTreeSet<u64>,
    last_write: Option<(u64, Vec<u8>)>,
}

/// Counters shown by the control socket's `stats`.
#[derive(Debug, Default, Clone)]
pub struct Stats {
    pub writes: u64,
    pub bytes_written: u64,
    pub file_syncs: u64,
    pub dir_syncs: u64,
    pub cuts: u64,
    pub pages_dropped: u64,
    pub torn_bytes_kept: u64,
}

/// The whole filesystem: live view, disk image, and what separates them.
#[derive(Debug)]
pub struct Fs {
    live: HashMap<u64, Node>,
    disk: HashMap<u64, Node>,
    unsynced: HashMap<u64, Unsynced>,
    open: HashMap<u64, u32>,
    orphans: HashSet<u64>,
    next_ino: u64,
    metadata: Metadata,
    pub stats: Stats,
}

impl Default for Fs {
    fn default() -> Fs {
        let root = Node::new(Kind::Dir, 0o755);
        Fs {
            live: HashMap::from([(ROOT, root.clone())]),
            disk: HashMap::from([(ROOT, root)]),
            unsynced: HashMap::new(),
            open: HashMap::new(),
            orphans: HashSet::new(),
            next_ino: ROOT + 1,
            metadata: Metadata::Strict,
            stats: Stats::default(),
        }
    }
}

impl Fs {
    pub fn new(metadata: Metadata) -> Fs {
        Fs { metadata, ..Fs::default() }
    }

    fn node(&self, ino: u64) -> FsResult<&Node> {
        self.live.get(&ino).ok_or(FsError::NotFound)
    }

    fn dir(&self, ino: u64) -> FsResult<&BTreeMap<OsString, u64>> {
        match &self.node(ino)?.body {
            Body::Dir(entries) => Ok(entries),
            Body::File(_) => Err(FsError::NotDir),
        }
    }

    fn dir_mut(&mut self, ino: u64) -> FsResult<&mut BTreeMap<OsString, u64>> {
        match &mut self.live.get_mut(&ino).ok_or(FsError::NotFound)?.body {
            Body::Dir(entries) => Ok(entries),
            Body::File(_) => Err(FsError::NotDir),
        }
    }

    fn file_mut(&mut self, ino: u64) -> FsResult<&mut Node> {
        let node = self.live.get_mut(&ino).ok_or(FsError::NotFound)?;
        match node.body {
            Body::File(_) => Ok(node),
            Body::Dir(_) => Err(FsError::IsDir),
        }
    }

    pub fn getattr(&self, ino: u64) -> FsResult<Attr> {
        let node = self.node(ino)?;
        let (size, nlink) = match &node.body {
            Body::File(data) => (data.size(), u32::from(!self.orphans.contains(&ino))),
            Body::Dir(entries) => {
                let subdirs = entries.values().filter(|c| matches!(self.node(**c).map(Node::kind), Ok(Kind::Dir)));
                (entries.len() as u64, 2 + subdirs.count() as u32)
            }
        };
        Ok(Attr { ino, kind: node.kind(), size, mode: node.mode, nlink, mtime: node.mtime })
    }

    pub fn lookup(&self, parent: u64, name: &OsStr) -> FsResult<Attr> {
        let ino = *self.dir(parent)?.get(name).ok_or(FsError::NotFound)?;
        self.getattr(ino)
    }

    pub fn readdir(&self, ino: u64) -> FsResult<Vec<(u64, Kind, OsString)>> {
        let entries = self.dir(ino)?;
        Ok(entries.iter().filter_map(|(name, c)| Some((*c, self.node(*c).ok()?.kind(), name.clone()))).collect())
    }

    /// Creates a file or directory in the live parent (durable once the parent is fsynced).
    pub fn make(&mut self, parent: u64, name: &OsStr, kind: Kind, mode: u32) -> FsResult<Attr> {
        if self.dir(parent)?.contains_key(name) {
            return Err(FsError::Exists);
        }
        let ino = self.next_ino;
        self.next_ino += 1;
        self.live.insert(ino, Node::new(kind, mode));
        self.dir_mut(parent)?.insert(name.to_os_string(), ino);
        self.touch(parent);
        self.getattr(ino)
    }

    pub fn unlink(&mut self, parent: u64, name: &OsStr) -> FsResult<()> {
        let ino = *self.dir(parent)?.get(name).ok_or(FsError::NotFound)?;
        if self.node(ino)?.kind() == Kind::Dir {
            return Err(FsError::IsDir);
        }
        self.dir_mut(parent)?.remove(name);
        self.touch(parent);
        self.drop_link(ino);
        Ok(())
    }

    pub fn rmdir(&mut self, parent: u64, name: &OsStr) -> FsResult<()> {
        let ino = *self.dir(parent)?.get(name).ok_or(FsError::NotFound)?;
        if !self.dir(ino)?.is_empty() {
            return Err(FsError::NotEmpty);
        }
        self.dir_mut(parent)?.remove(name);
        self.touch(parent);
        self.live.remove(&ino);
        Ok(())
    }

    /// `rename(2)`, replacing a file or an empty directory at the target; `no_replace` is
    /// RENAME_NOREPLACE.
    pub fn rename(&mut self, parent: u64, name: &OsStr, to: u64, to_name: &OsStr, no_replace: bool) -> FsResult<()> {
        let ino = *self.dir(parent)?.get(name).ok_or(FsError::NotFound)?;
        self.dir(to)?;
        if parent == to && name == to_name {
            return Ok(());
        }
        if let Some(&old) = self.dir(to)?.get(to_name) {
            if no_replace {
                return Err(FsError::Exists);
            }
            match (self.node(ino)?.kind(), self.node(old)?.kind()) {
                (Kind::File, Kind::Dir) => return Err(FsError::IsDir),
                (Kind::Dir, Kind::File) => return Err(FsError::NotDir),
                (Kind::Dir, Kind::Dir) if !self.dir(old)?.is_empty() => return Err(FsError::NotEmpty),
                _ => {}
            }
            if self.is_ancestor(ino, to) {
                return Err(FsError::Invalid);
            }
            self.drop_link(old);
        } else if self.is_ancestor(ino, to) {
            return Err(FsError::Invalid);
        }
        self.dir_mut(parent)?.remove(name);
        self.dir_mut(to)?.insert(to_name.to_os_string(), ino);
        self.touch(parent);
        self.touch(to);
        Ok(())
    }

    /// Whether `dir` is `ino` or lies below it (a directory cannot move into itself).
    fn is_ancestor(&self, ino: u64, dir: u64) -> bool {
        if self.node(ino).map(Node::kind) != Ok(Kind::Dir) {
            return false;
        }
        let mut stack = vec![ino];
        while let Some(d) = stack.pop() {
            if d == dir {
                return true;
            }
            if let Ok(entries) = self.dir(d) {
                stack.extend(entries.values().copied());
            }
        }
        false
    }

    /// The last name of `ino` went away: drop it now, or at its last close.
    fn drop_link(&mut self, ino: u64) {
        if self.open.get(&ino).copied().unwrap_or(0) > 0 {
            self.orphans.insert(ino);
        } else {
            self.forget_live(ino);
        }
    }

    fn forget_live(&mut self, ino: u64) {
        if let Some(Node { body: Body::Dir(_), .. }) = self.live.get(&ino) {
            return; // directories are removed by rmdir only
        }
        self.live.remove(&ino);
        self.unsynced.remove(&ino);
        self.orphans.remove(&ino);
    }

    fn touch(&mut self, ino: u64) {
        if let Some(node) = self.live.get_mut(&ino) {
            node.mtime = SystemTime::now();
        }
    }

    pub fn open(&mut self, ino: u64) -> FsResult<()> {
        self.node(ino)?;
        *self.open.entry(ino).or_default() += 1;
        Ok(())
    }

    pub fn release(&mut self, ino: u64) {
        let count = self.open.entry(ino).or_default();
        *count = count.saturating_sub(1);
        if *count == 0 {
            self.open.remove(&ino);
            if self.orphans.contains(&ino) {
                self.forget_live(ino);
            }
        }
    }

    pub fn read(&self, ino: u64, offset: u64, len: u64) -> FsResult<Vec<u8>> {
        match &self.node(ino)?.body {
            Body::File(data) => Ok(data.read(offset, len)),
            Body::Dir(_) => Err(FsError::IsDir),
        }
    }

    pub fn write(&mut self, ino: u64, offset: u64, bytes: &[u8]) -> FsResult<usize> {
        let node = self.file_mut(ino)?;
        node.mtime = SystemTime::now();
        let Body::File(data) = &mut node.body else { return Err(FsError::IsDir) };
        let touched = data.write(offset, bytes);
        let unsynced = self.unsynced.entry(ino).or_default();
        unsynced.pages.extend(touched);
        unsynced.last_write = Some((offset, bytes.to_vec()));
        self.stats.writes += 1;
        self.stats.bytes_written += bytes.len() as u64;
        Ok(bytes.len())
    }

    pub fn set_size(&mut self, ino: u64, size: u64) -> FsResult<()> {
        let node = self.file_mut(ino)?;
        node.mtime = SystemTime::now();
        let Body::File(data) = &mut node.body else { return Err(FsError::IsDir) };
        let touched = data.set_size(size);
        self.unsynced.entry(ino).or_default().pages.extend(touched);
        Ok(())
    }

    pub fn set_mode(&mut self, ino: u64, mode: u32) -> FsResult<()> {
        self.live.get_mut(&ino).ok_or(FsError::NotFound)?.mode = mode & 0o7777;
        Ok(())
    }

    /// `fallocate(2)`: mode 0 grows the file (zeros), KEEP_SIZE does nothing visible, PUNCH_HOLE
    /// zeroes a range; anything else is not supported.
    pub fn fallocate(&mut self, ino: u64, offset: u64, len: u64, mode: i32) -> FsResult<()> {
        let node = self.file_mut(ino)?;
        let Body::File(data) = &mut node.body else { return Err(FsError::IsDir) };
        let touched = match mode {
            0 => {
                let end = offset.saturating_add(len);
                if end > data.size() {
                    data.set_size(end)
                } else {
                    Vec::new()
                }
            }
            libc::FALLOC_FL_KEEP_SIZE => Vec::new(),
            m if m == libc::FALLOC_FL_PUNCH_HOLE | libc::FALLOC_FL_KEEP_SIZE => data.zero_range(offset, len),
            _ => return Err(FsError::NotSupported),
        };
        self.unsynced.entry(ino).or_default().pages.extend(touched);
        Ok(())
    }

    /// fsync/fdatasync of a file (data and size) or of a directory (its entries).
    pub fn fsync(&mut self, ino: u64) -> FsResult<()> {
        let kind = self.node(ino)?.kind();
        if self.metadata == Metadata::Journal {
            self.commit_all_directories();
        }
        match kind {
            Kind::File => self.sync_file(ino),
            Kind::Dir => self.sync_dir(ino),
        }
        Ok(())
    }

    /// The journal commit of `Metadata::Journal`: every live directory's entries reach the disk.
    fn commit_all_directories(&mut self) {
        let dirs: Vec<u64> = self.live.iter().filter(|(_, n)| n.kind() == Kind::Dir).map(|(ino, _)| *ino).collect();
        let syncs = self.stats.dir_syncs;
        for dir in dirs {
            self.sync_dir(dir);
        }
        self.stats.dir_syncs = syncs;
    }

    fn sync_file(&mut self, ino: u64) {
        self.stats.file_syncs += 1;
        let Some(node) = self.live.get(&ino) else { return };
        let Body::File(live) = &node.body else { return };
        let (mode, mtime) = (node.mode, node.mtime);
        let disk = self.disk.entry(ino).or_insert_with(|| Node::new(Kind::File, mode));
        disk.mode = mode;
        disk.mtime = mtime;
        let Body::File(durable) = &mut disk.body else { return };
        if let Some(unsynced) = self.unsynced.remove(&ino) {
            for page in unsynced.pages {
                durable.copy_page_from(live, page);
            }
        }
        durable.set_size_from(live.size());
    }

    fn sync_dir(&mut self, ino: u64) {
        self.stats.dir_syncs += 1;
        let Some(Node { body: Body::Dir(entries), mode, .. }) = self.live.get(&ino) else { return };
        let (entries, mode) = (entries.clone(), *mode);
        for child in entries.values() {
            if !self.disk.contains_key(child) {
                let kind = self.live.get(child).map_or(Kind::File, Node::kind);
                let child_mode = self.live.get(child).map_or(0o644, |n| n.mode);
                self.disk.insert(*child, Node::new(kind, child_mode));
            }
        }
        let disk = self.disk.entry(ino).or_insert_with(|| Node::new(Kind::Dir, mode));
        disk.body = Body::Dir(entries);
    }

    /// Syncs everything, as if the kernel had written back all dirty data and metadata.
    pub fn sync_all(&mut self) {
        let inos: Vec<u64> = self.live.keys().copied().collect();
        for ino in inos {
            let _ = self.fsync(ino);
        }
    }

    /// A power cut: the live state becomes the disk state. With `torn_seed`, the last unsynced
    /// write of each file first lands partially (a seeded random count of its leading sectors).
    pub fn cut(&mut self, torn_seed: Option<u64>) {
        self.stats.cuts += 1;
        if let Some(seed) = torn_seed {
            self.tear_last_writes(seed);
        }
        self.stats.pages_dropped += self.unsynced.values().map(|u| u.pages.len() as u64).sum::<u64>();
        self.collect_unreachable_disk_nodes();
        self.live = self.disk.clone();
        self.unsynced.clear();
        self.open.clear();
        self.orphans.clear();
    }

    fn tear_last_writes(&mut self, seed: u64) {
        let mut rng = seed | 1;
        let mut inos: Vec<u64> = self.unsynced.keys().copied().collect();
        inos.sort_unstable();
        for ino in inos {
            let Some((offset, bytes)) = self.unsynced.get(&ino).and_then(|u| u.last_write.clone()) else { continue };
            let Some(Node { body: Body::File(durable), .. }) = self.disk.get_mut(&ino) else { continue };
            if offset > durable.size() {
                continue; // landing alone, past lost earlier writes, it would leave a hole: not torn
            }
            rng ^= rng << 13;
            rng ^= rng >> 7;
            rng ^= rng << 17;
            let sectors = (bytes.len() as u64).div_ceil(SECTOR);
            let keep = ((rng % (sectors + 1)) * SECTOR).min(bytes.len() as u64) as usize;
            if keep > 0 {
                durable.write(offset, &bytes[..keep]);
                self.stats.torn_bytes_kept += keep as u64;
            }
        }
    }

    fn collect_unreachable_disk_nodes(&mut self) {
        let mut reachable = HashSet::from([ROOT]);
        let mut stack = vec![ROOT];
        while let Some(ino) = stack.pop() {
            if let Some(Node { body: Body::Dir(entries), .. }) = self.disk.get(&ino) {
                for child in entries.values() {
                    if reachable.insert(*child) {
                        stack.push(*child);
                    }
                }
            }
        }
        self.disk.retain(|ino, _| reachable.contains(ino));
    }

    /// Bytes held by the live view and by the disk (pages actually stored).
    pub fn resident(&self) -> (u64, u64) {
        let sum = |nodes: &HashMap<u64, Node>| {
            nodes.values().map(|n| if let Body::File(d) = &n.body { d.resident_bytes() } else { 0 }).sum()
        };
        (sum(&self.live), sum(&self.disk))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn name(s: &str) -> &OsStr {
        OsStr::new(s)
    }

    /// A file `f` in a directory `d`, both made durable (names and empty contents).
    fn fs_with_durable_file() -> (Fs, u64, u64) {
        let mut fs = Fs::default();
        let d = fs.make(ROOT, name("d"), Kind::Dir, 0o755).unwrap().ino;
        let f = fs.make(d, name("f"), Kind::File, 0o644).unwrap().ino;
        fs.fsync(ROOT).unwrap();
        fs.fsync(d).unwrap();
        fs.fsync(f).unwrap();
        (fs, d, f)
    }

    fn contents(fs: &Fs, dir: u64, file: &str) -> Vec<u8> {
        let ino = fs.lookup(dir, name(file)).unwrap().ino;
        fs.read(ino, 0, u64::MAX).unwrap()
    }

    #[test]
    fn an_unsynced_write_is_lost() {
        let (mut fs, d, f) = fs_with_durable_file();
        fs.write(f, 0, b"hello").unwrap();
        assert_eq!(contents(&fs, d, "f"), b"hello");
        fs.cut(None);
        assert_eq!(contents(&fs, d, "f"), b"");
    }

    #[test]
    fn an_fdatasynced_write_is_kept_and_later_ones_are_not() {
        let (mut fs, d, f) = fs_with_durable_file();
        fs.write(f, 0, b"hello").unwrap();
        fs.fsync(f).unwrap();
        fs.write(f, 5, b" world").unwrap();
        fs.write(f, 0, b"J").unwrap();
        fs.cut(None);
        assert_eq!(contents(&fs, d, "f"), b"hello");
    }

    #[test]
    fn a_created_file_needs_its_directory_synced() {
        let (mut fs, d, _) = fs_with_durable_file();
        let g = fs.make(d, name("g"), Kind::File, 0o644).unwrap().ino;
        fs.write(g, 0, b"data").unwrap();
        fs.fsync(g).unwrap();
        fs.cut(None);
        assert_eq!(fs.lookup(d, name("g")), Err(FsError::NotFound), "file synced, directory not");

        let g = fs.make(d, name("g"), Kind::File, 0o644).unwrap().ino;
        fs.write(g, 0, b"data").unwrap();
        fs.fsync(d).unwrap();
        fs.cut(None);
        assert_eq!(contents(&fs, d, "g"), b"", "name synced, data not: an empty file");
    }

    #[test]
    fn a_rename_is_durable_only_after_the_directory_sync() {
        let (mut fs, d, f) = fs_with_durable_file();
        fs.write(f, 0, b"v1").unwrap();
        fs.fsync(f).unwrap();
        fs.rename(d, name("f"), d, name("g"), false).unwrap();
        fs.cut(None);
        assert_eq!(contents(&fs, d, "f"), b"v1");
        assert!(fs.lookup(d, name("g")).is_err());

        fs.rename(d, name("f"), d, name("g"), false).unwrap();
        fs.fsync(d).unwrap();
        fs.cut(None);
        assert_eq!(contents(&fs, d, "g"), b"v1");
        assert!(fs.lookup(d, name("f")).is_err());
    }

    #[test]
    fn an_unlink_is_undone_by_a_cut_before_the_directory_sync() {
        let (mut fs, d, f) = fs_with_durable_file();
        fs.write(f, 0, b"keep").unwrap();
        fs.fsync(f).unwrap();
        fs.unlink(d, name("f")).unwrap();
        fs.cut(None);
        assert_eq!(contents(&fs, d, "f"), b"keep");
        fs.unlink(d, name("f")).unwrap();
        fs.fsync(d).unwrap();
        fs.cut(None);
        assert!(fs.lookup(d, name("f")).is_err());
        assert_eq!(fs.resident().1, 0, "the unreachable file is collected");
    }

    #[test]
    fn an_unlinked_open_file_lives_until_closed() {
        let (mut fs, d, f) = fs_with_durable_file();
        fs.open(f).unwrap();
        fs.unlink(d, name("f")).unwrap();
        fs.write(f, 0, b"x").unwrap();
        assert_eq!(fs.getattr(f).unwrap().nlink, 0);
        fs.release(f);
        assert!(fs.getattr(f).is_err());
    }

    #[test]
    fn truncation_is_durable_only_after_sync() {
        let (mut fs, d, f) = fs_with_durable_file();
        fs.write(f, 0, &[9; 10_000]).unwrap();
        fs.fsync(f).unwrap();
        fs.set_size(f, 100).unwrap();
        fs.cut(None);
        assert_eq!(contents(&fs, d, "f").len(), 10_000);
        fs.set_size(f, 100).unwrap();
        fs.fsync(f).unwrap();
        fs.cut(None);
        assert_eq!(contents(&fs, d, "f"), vec![9; 100]);
    }

    #[test]
    fn a_preallocated_file_keeps_synced_pages_only() {
        let (mut fs, d, f) = fs_with_durable_file();
        fs.fallocate(f, 0, 1 << 20, 0).unwrap();
        fs.fsync(f).unwrap();
        fs.write(f, 0, &[1; 100]).unwrap();
        fs.fsync(f).unwrap();
        fs.write(f, 100, &[2; 100]).unwrap();
        fs.cut(None);
        let data = contents(&fs, d, "f");
        assert_eq!(data.len(), 1 << 20);
        assert_eq!(&data[..200], [vec![1; 100], vec![0; 100]].concat());
    }

    #[test]
    fn a_torn_cut_keeps_a_sector_prefix_of_the_last_write() {
        let mut seen = BTreeSet::new();
        for seed in 0..64 {
            let (mut fs, d, f) = fs_with_durable_file();
            fs.write(f, 0, &[7; 2048]).unwrap();
            fs.fsync(f).unwrap();
            fs.write(f, 2048, &[8; 2000]).unwrap();
            fs.cut(Some(seed));
            let data = contents(&fs, d, "f");
            assert_eq!(&data[..2048], &[7; 2048][..]);
            let kept = data.len() - 2048;
            assert!(kept == 2000 || kept % 512 == 0, "kept {kept} bytes");
            assert!(data[2048..].iter().all(|b| *b == 8));
            seen.insert(kept);
        }
        assert!(seen.len() > 2, "tearing varies with the seed: {seen:?}");
    }

    #[test]
    fn a_torn_cut_leaves_no_hole_after_lost_writes() {
        for seed in 0..16 {
            let (mut fs, d, f) = fs_with_durable_file();
            fs.write(f, 0, &[7; 100]).unwrap();
            fs.fsync(f).unwrap();
            fs.write(f, 100, &[8; 100]).unwrap();
            fs.write(f, 200, &[9; 2000]).unwrap();
            fs.cut(Some(seed));
            assert_eq!(contents(&fs, d, "f"), vec![7; 100]);
        }
    }

    #[test]
    fn in_journal_mode_any_fsync_commits_all_directory_changes() {
        let mut fs = Fs::new(Metadata::Journal);
        let d = fs.make(ROOT, name("d"), Kind::Dir, 0o755).unwrap().ino;
        let f = fs.make(d, name("f"), Kind::File, 0o644).unwrap().ino;
        let g = fs.make(d, name("g"), Kind::File, 0o644).unwrap().ino;
        fs.write(f, 0, b"synced").unwrap();
        fs.write(g, 0, b"not synced").unwrap();
        fs.fsync(f).unwrap();
        fs.cut(None);
        assert_eq!(contents(&fs, d, "f"), b"synced", "mkdir and create committed by the fsync of f");
        assert_eq!(contents(&fs, d, "g"), b"", "g's name was committed, its data was not");
        let h = fs.make(d, name("h"), Kind::File, 0o644).unwrap().ino;
        fs.write(h, 0, b"x").unwrap();
        fs.cut(None);
        assert!(fs.lookup(d, name("h")).is_err(), "no fsync at all: nothing committed");
    }

    #[test]
    fn in_strict_mode_the_same_sequence_loses_the_new_directory() {
        let mut fs = Fs::new(Metadata::Strict);
        let d = fs.make(ROOT, name("d"), Kind::Dir, 0o755).unwrap().ino;
        let f = fs.make(d, name("f"), Kind::File, 0o644).unwrap().ino;
        fs.write(f, 0, b"synced").unwrap();
        fs.fsync(f).unwrap();
        fs.fsync(d).unwrap();
        fs.cut(None);
        assert!(fs.lookup(ROOT, name("d")).is_err(), "the root was never fsynced after mkdir d");
    }

    #[test]
    fn sync_all_makes_everything_durable() {
        let mut fs = Fs::default();
        let d = fs.make(ROOT, name("d"), Kind::Dir, 0o755).unwrap().ino;
        let f = fs.make(d, name("f"), Kind::File, 0o644).unwrap().ino;
        fs.write(f, 0, b"abc").unwrap();
        fs.sync_all();
        fs.cut(None);
        assert_eq!(contents(&fs, d, "f"), b"abc");
    }

    #[test]
    fn rename_refuses_what_posix_refuses() {
        let (mut fs, d, _) = fs_with_durable_file();
        fs.make(d, name("sub"), Kind::Dir, 0o755).unwrap();
        assert_eq!(fs.rename(d, name("f"), d, name("sub"), false), Err(FsError::IsDir));
        assert_eq!(fs.rename(ROOT, name("d"), d, name("x"), false), Err(FsError::Invalid));
        fs.make(d, name("g"), Kind::File, 0o644).unwrap();
        assert_eq!(fs.rename(d, name("f"), d, name("g"), true), Err(FsError::Exists));
        fs.rename(d, name("f"), d, name("g"), false).unwrap();
        assert_eq!(fs.readdir(d).unwrap().len(), 2);
    }
}

//! All file I/O of the durability layer goes through [`Storage`], so tests can
//! swap the real filesystem ([`OsStorage`]) for a simulated disk that crashes,
//! tears writes and fails on command ([`super::sim::SimStorage`]).
//!
//! The trait is deliberately small: positional writes and reads, `fdatasync`,
//! `fsync`, and the directory operations whose durability matters (create,
//! rename, remove, and fsync of the directory itself).

use std::fmt::Debug;
use std::fs::{File, OpenOptions};
use std::io;
use std::os::fd::AsRawFd;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};

/// An open file.
pub trait StorageFile: Send + Debug {
    /// Writes all of `data` at `offset`.
    fn write_at(&mut self, offset: u64, data: &[u8]) -> io::Result<()>;
    /// Reads up to `buf.len()` bytes at `offset`; returns how many were read.
    fn read_at(&self, offset: u64, buf: &mut [u8]) -> io::Result<usize>;
    /// Current length in bytes.
    fn len(&self) -> io::Result<u64>;
    /// Whether the file is empty.
    fn is_empty(&self) -> io::Result<bool> {
        Ok(self.len()? == 0)
    }
    /// Makes written data durable (`fdatasync`): enough when the file size
    /// did not change.
    fn sync_data(&mut self) -> io::Result<()>;
    /// Makes data and metadata durable (`fsync`).
    fn sync_all(&mut self) -> io::Result<()>;
    /// Changes the file's length.
    fn set_len(&mut self, len: u64) -> io::Result<()>;
    /// Reserves disk blocks for the first `len` bytes and makes the file at
    /// least that long, without writing data (reads return zeros). Later
    /// writes inside it cannot fail for lack of space. The default sets the
    /// length only (enough for simulated disks).
    fn allocate(&mut self, len: u64) -> io::Result<()> {
        if self.len()? < len {
            self.set_len(len)?;
        }
        Ok(())
    }
}

/// A filesystem.
pub trait Storage: Send + Sync + Debug {
    /// Creates a new file (truncating any existing one) for reading and writing.
    fn create(&self, path: &Path) -> io::Result<Box<dyn StorageFile>>;
    /// Opens an existing file for reading and writing.
    fn open(&self, path: &Path) -> io::Result<Box<dyn StorageFile>>;
    fn rename(&self, from: &Path, to: &Path) -> io::Result<()>;
    fn remove(&self, path: &Path) -> io::Result<()>;
    /// File names (not paths) in `dir`.
    fn list(&self, dir: &Path) -> io::Result<Vec<String>>;
    /// Makes the directory's entries (creates, renames, removes) durable.
    fn sync_dir(&self, dir: &Path) -> io::Result<()>;
    fn create_dir_all(&self, dir: &Path) -> io::Result<()>;
}

/// Reads a whole file.
pub fn read_all(file: &dyn StorageFile) -> io::Result<Vec<u8>> {
    let len = file.len()? as usize;
    let mut buf = vec![0u8; len];
    let mut done = 0;
    while done < len {
        let n = file.read_at(done as u64, &mut buf[done..])?;
        if n == 0 {
            buf.truncate(done);
            break;
        }
        done += n;
    }
    Ok(buf)
}

/// The real filesystem.
#[derive(Debug, Default, Clone, Copy)]
pub struct OsStorage;

#[derive(Debug)]
struct OsFile {
    file: File,
}

impl StorageFile for OsFile {
    fn write_at(&mut self, offset: u64, data: &[u8]) -> io::Result<()> {
        self.file.write_all_at(data, offset)
    }

    fn read_at(&self, offset: u64, buf: &mut [u8]) -> io::Result<usize> {
        FileExt::read_at(&self.file, buf, offset)
    }

    fn len(&self) -> io::Result<u64> {
        Ok(self.file.metadata()?.len())
    }

    fn sync_data(&mut self) -> io::Result<()> {
        self.file.sync_data()
    }

    fn sync_all(&mut self) -> io::Result<()> {
        self.file.sync_all()
    }

    fn set_len(&mut self, len: u64) -> io::Result<()> {
        self.file.set_len(len)
    }

    fn allocate(&mut self, len: u64) -> io::Result<()> {
        let len = libc::off_t::try_from(len).map_err(|_| io::Error::from(io::ErrorKind::InvalidInput))?;
        // SAFETY: plain syscall on a file descriptor this struct owns.
        let rc = unsafe { libc::posix_fallocate(self.file.as_raw_fd(), 0, len) };
        match rc {
            0 => Ok(()),
            errno => Err(io::Error::from_raw_os_error(errno)),
        }
    }
}

impl Storage for OsStorage {
    fn create(&self, path: &Path) -> io::Result<Box<dyn StorageFile>> {
        let file = OpenOptions::new().read(true).write(true).create(true).truncate(true).open(path)?;
        Ok(Box::new(OsFile { file }))
    }

    fn open(&self, path: &Path) -> io::Result<Box<dyn StorageFile>> {
        let file = OpenOptions::new().read(true).write(true).open(path)?;
        Ok(Box::new(OsFile { file }))
    }

    fn rename(&self, from: &Path, to: &Path) -> io::Result<()> {
        std::fs::rename(from, to)
    }

    fn remove(&self, path: &Path) -> io::Result<()> {
        std::fs::remove_file(path)
    }

    fn list(&self, dir: &Path) -> io::Result<Vec<String>> {
        let mut names = Vec::new();
        for entry in std::fs::read_dir(dir)? {
            let entry = entry?;
            if let Some(name) = entry.file_name().to_str() {
                names.push(name.to_string());
            }
        }
        names.sort();
        Ok(names)
    }

    fn sync_dir(&self, dir: &Path) -> io::Result<()> {
        File::open(dir)?.sync_all()
    }

    fn create_dir_all(&self, dir: &Path) -> io::Result<()> {
        std::fs::create_dir_all(dir)
    }
}

/// `dir/name`.
pub fn join(dir: &Path, name: &str) -> PathBuf {
    dir.join(name)
}

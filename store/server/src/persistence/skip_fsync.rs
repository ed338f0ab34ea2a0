//! A storage wrapper that turns every fsync into a no-op. It exists only to
//! show that the crash tests catch a server that skips fsync
//! (`--unsafe-skip-fsync`); never use it for data you want to keep.

use std::io;
use std::path::Path;

use cairn_engine::durability::{Storage, StorageFile};

#[derive(Debug)]
pub struct SkipFsync<S>(pub S);

#[derive(Debug)]
struct NoSyncFile(Box<dyn StorageFile>);

impl StorageFile for NoSyncFile {
    fn write_at(&mut self, offset: u64, data: &[u8]) -> io::Result<()> {
        self.0.write_at(offset, data)
    }
    fn read_at(&self, offset: u64, buf: &mut [u8]) -> io::Result<usize> {
        self.0.read_at(offset, buf)
    }
    fn len(&self) -> io::Result<u64> {
        self.0.len()
    }
    fn sync_data(&mut self) -> io::Result<()> {
        Ok(())
    }
    fn sync_all(&mut self) -> io::Result<()> {
        Ok(())
    }
    fn set_len(&mut self, len: u64) -> io::Result<()> {
        self.0.set_len(len)
    }
}

impl<S: Storage> Storage for SkipFsync<S> {
    fn create(&self, path: &Path) -> io::Result<Box<dyn StorageFile>> {
        Ok(Box::new(NoSyncFile(self.0.create(path)?)))
    }
    fn open(&self, path: &Path) -> io::Result<Box<dyn StorageFile>> {
        Ok(Box::new(NoSyncFile(self.0.open(path)?)))
    }
    fn rename(&self, from: &Path, to: &Path) -> io::Result<()> {
        self.0.rename(from, to)
    }
    fn remove(&self, path: &Path) -> io::Result<()> {
        self.0.remove(path)
    }
    fn list(&self, dir: &Path) -> io::Result<Vec<String>> {
        self.0.list(dir)
    }
    fn sync_dir(&self, _dir: &Path) -> io::Result<()> {
        Ok(())
    }
    fn create_dir_all(&self, dir: &Path) -> io::Result<()> {
        self.0.create_dir_all(dir)
    }
}

//! The data directory's lock file, `DATA_DIR/LOCK`: the server (at start,
//! before recovery) and an embedded `Db` (at open) take an exclusive
//! `flock` on it and hold it while they run, so two processes (or two opens
//! in one process) never write one log. The kernel drops the lock when the
//! holder exits, however it exits (`kill -9` included), so a stale file is
//! harmless. The file holds the holder's pid, for the error message only.
//!
//! A filesystem without `flock` support (ENOLCK, EOPNOTSUPP, ENOSYS) runs
//! unlocked, with a warning: the lock is a guard against mistakes, not part
//! of the on-disk format.

use std::fs::{File, OpenOptions};
use std::io::{Read, Seek, SeekFrom, Write};
use std::os::fd::AsRawFd;
use std::path::{Path, PathBuf};

/// The lock file's name inside the data directory.
pub const LOCK_FILE: &str = "LOCK";

/// Why the lock could not be taken.
#[derive(Debug, thiserror::Error)]
pub enum LockError {
    #[error("data directory is in use: {path} is locked by another process or database handle{holder}")]
    Held { path: PathBuf, holder: String },
    #[error("cannot lock {path}: {source}")]
    Io { path: PathBuf, source: std::io::Error },
}

/// A held lock; dropping it releases the lock (the file stays).
#[derive(Debug)]
pub struct DirLock {
    path: PathBuf,
    /// `None` when the filesystem does not support `flock`.
    _file: Option<File>,
}

impl DirLock {
    /// Takes the lock of `dir` without waiting.
    pub fn acquire(dir: &Path) -> Result<DirLock, LockError> {
        let path = dir.join(LOCK_FILE);
        let io_error = |source| LockError::Io { path: path.clone(), source };
        let mut file =
            OpenOptions::new().read(true).write(true).create(true).truncate(false).open(&path).map_err(io_error)?;
        match flock_exclusive(&file) {
            Ok(()) => {}
            Err(e) if e.raw_os_error() == Some(libc::EWOULDBLOCK) => {
                return Err(LockError::Held { holder: holder(&mut file), path });
            }
            Err(e) if unsupported(&e) => {
                tracing::warn!(path = %path.display(), error = %e, "the filesystem does not support flock: running without the data directory lock");
                return Ok(DirLock { path, _file: None });
            }
            Err(e) => return Err(io_error(e)),
        }
        // Best effort: the pid only improves the message another opener sees.
        let _ = write_pid(&mut file);
        Ok(DirLock { path, _file: Some(file) })
    }

    pub fn path(&self) -> &Path {
        &self.path
    }
}

fn flock_exclusive(file: &File) -> std::io::Result<()> {
    loop {
        // SAFETY: flock on a descriptor this function borrows; no memory is passed.
        let rc = unsafe { libc::flock(file.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) };
        if rc == 0 {
            return Ok(());
        }
        let e = std::io::Error::last_os_error();
        if e.kind() != std::io::ErrorKind::Interrupted {
            return Err(e);
        }
    }
}

fn unsupported(e: &std::io::Error) -> bool {
    matches!(e.raw_os_error(), Some(libc::ENOLCK) | Some(libc::EOPNOTSUPP) | Some(libc::ENOSYS))
}

fn write_pid(file: &mut File) -> std::io::Result<()> {
    file.set_len(0)?;
    file.seek(SeekFrom::Start(0))?;
    writeln!(file, "{}", std::process::id())
}

/// " (pid N)" from the file, or nothing.
fn holder(file: &mut File) -> String {
    let mut text = String::new();
    if file.read_to_string(&mut text).is_err() {
        return String::new();
    }
    match text.trim().parse::<u32>() {
        Ok(pid) => format!(" (pid {pid})"),
        Err(_) => String::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_second_lock_fails_until_the_first_is_dropped() {
        let dir = std::env::temp_dir().join(format!("cairn-lock-{}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("dir");
        let first = DirLock::acquire(&dir).expect("first lock");
        match DirLock::acquire(&dir) {
            Err(LockError::Held { path, holder }) => {
                assert_eq!(path, dir.join(LOCK_FILE));
                assert_eq!(holder, format!(" (pid {})", std::process::id()));
            }
            other => panic!("expected Held, got {other:?}"),
        }
        drop(first);
        let again = DirLock::acquire(&dir).expect("lock after release");
        assert_eq!(again.path(), dir.join(LOCK_FILE));
        drop(again);
        let _ = std::fs::remove_dir_all(&dir);
    }
}

//! The FUSE face of the model: every request locks the model, applies one operation, replies.
//! Attributes and entries are given a zero TTL and files are opened with direct I/O, so the
//! kernel caches nothing that a power cut could make stale.

use crate::model::{Attr, Fs, FsError, Kind};
use fuser::{
    Errno, FileAttr, FileHandle, FileType, Filesystem, FopenFlags, Generation, INodeNo, LockOwner, OpenFlags,
    RenameFlags, ReplyAttr, ReplyCreate, ReplyData, ReplyDirectory, ReplyEmpty, ReplyEntry, ReplyOpen, ReplyStatfs,
    ReplyWrite, Request, TimeOrNow, WriteFlags,
};
use std::ffi::OsStr;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, SystemTime};

const TTL: Duration = Duration::ZERO;

/// The mounted filesystem; the control socket shares the same model.
pub struct CrashFs {
    model: Arc<Mutex<Fs>>,
}

impl CrashFs {
    pub fn new(model: Arc<Mutex<Fs>>) -> CrashFs {
        CrashFs { model }
    }

    fn fs(&self) -> MutexGuard<'_, Fs> {
        self.model.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
    }
}

fn errno(e: FsError) -> Errno {
    Errno::from_i32(e.errno())
}

fn file_attr(attr: &Attr) -> FileAttr {
    let kind = match attr.kind {
        Kind::File => FileType::RegularFile,
        Kind::Dir => FileType::Directory,
    };
    FileAttr {
        ino: INodeNo(attr.ino),
        size: attr.size,
        blocks: attr.size.div_ceil(512),
        atime: attr.mtime,
        mtime: attr.mtime,
        ctime: attr.mtime,
        crtime: attr.mtime,
        kind,
        perm: attr.mode as u16,
        nlink: attr.nlink,
        uid: 0,
        gid: 0,
        rdev: 0,
        blksize: 4096,
        flags: 0,
    }
}

fn reply_entry(result: Result<Attr, FsError>, reply: ReplyEntry) {
    match result {
        Ok(attr) => reply.entry(&TTL, &file_attr(&attr), Generation(0)),
        Err(e) => reply.error(errno(e)),
    }
}

fn reply_attr(result: Result<Attr, FsError>, reply: ReplyAttr) {
    match result {
        Ok(attr) => reply.attr(&TTL, &file_attr(&attr)),
        Err(e) => reply.error(errno(e)),
    }
}

fn reply_empty(result: Result<(), FsError>, reply: ReplyEmpty) {
    match result {
        Ok(()) => reply.ok(),
        Err(e) => reply.error(errno(e)),
    }
}

impl Filesystem for CrashFs {
    fn lookup(&self, _req: &Request, parent: INodeNo, name: &OsStr, reply: ReplyEntry) {
        reply_entry(self.fs().lookup(parent.0, name), reply);
    }

    fn getattr(&self, _req: &Request, ino: INodeNo, _fh: Option<FileHandle>, reply: ReplyAttr) {
        reply_attr(self.fs().getattr(ino.0), reply);
    }

    fn setattr(
        &self,
        _req: &Request,
        ino: INodeNo,
        mode: Option<u32>,
        _uid: Option<u32>,
        _gid: Option<u32>,
        size: Option<u64>,
        _atime: Option<TimeOrNow>,
        _mtime: Option<TimeOrNow>,
        _ctime: Option<SystemTime>,
        _fh: Option<FileHandle>,
        _crtime: Option<SystemTime>,
        _chgtime: Option<SystemTime>,
        _bkuptime: Option<SystemTime>,
        _flags: Option<fuser::BsdFileFlags>,
        reply: ReplyAttr,
    ) {
        let mut fs = self.fs();
        let result = (|| {
            if let Some(size) = size {
                fs.set_size(ino.0, size)?;
            }
            if let Some(mode) = mode {
                fs.set_mode(ino.0, mode)?;
            }
            fs.getattr(ino.0)
        })();
        reply_attr(result, reply);
    }

    fn mknod(
        &self,
        _req: &Request,
        parent: INodeNo,
        name: &OsStr,
        mode: u32,
        umask: u32,
        _rdev: u32,
        reply: ReplyEntry,
    ) {
        if mode & libc::S_IFMT != libc::S_IFREG {
            return reply.error(Errno::EPERM);
        }
        reply_entry(self.fs().make(parent.0, name, Kind::File, mode & !umask), reply);
    }

    fn mkdir(&self, _req: &Request, parent: INodeNo, name: &OsStr, mode: u32, umask: u32, reply: ReplyEntry) {
        reply_entry(self.fs().make(parent.0, name, Kind::Dir, mode & !umask), reply);
    }

    fn unlink(&self, _req: &Request, parent: INodeNo, name: &OsStr, reply: ReplyEmpty) {
        reply_empty(self.fs().unlink(parent.0, name), reply);
    }

    fn rmdir(&self, _req: &Request, parent: INodeNo, name: &OsStr, reply: ReplyEmpty) {
        reply_empty(self.fs().rmdir(parent.0, name), reply);
    }

    fn rename(
        &self,
        _req: &Request,
        parent: INodeNo,
        name: &OsStr,
        newparent: INodeNo,
        newname: &OsStr,
        flags: RenameFlags,
        reply: ReplyEmpty,
    ) {
        if flags.intersects(RenameFlags::RENAME_EXCHANGE | RenameFlags::RENAME_WHITEOUT) {
            return reply.error(Errno::EINVAL);
        }
        let no_replace = flags.contains(RenameFlags::RENAME_NOREPLACE);
        reply_empty(self.fs().rename(parent.0, name, newparent.0, newname, no_replace), reply);
    }

    fn open(&self, _req: &Request, ino: INodeNo, _flags: OpenFlags, reply: ReplyOpen) {
        match self.fs().open(ino.0) {
            Ok(()) => reply.opened(FileHandle(0), FopenFlags::FOPEN_DIRECT_IO),
            Err(e) => reply.error(errno(e)),
        }
    }

    fn create(
        &self,
        _req: &Request,
        parent: INodeNo,
        name: &OsStr,
        mode: u32,
        umask: u32,
        _flags: i32,
        reply: ReplyCreate,
    ) {
        let mut fs = self.fs();
        let result = fs.make(parent.0, name, Kind::File, mode & !umask).and_then(|a| fs.open(a.ino).map(|()| a));
        match result {
            Ok(attr) => {
                reply.created(&TTL, &file_attr(&attr), Generation(0), FileHandle(0), FopenFlags::FOPEN_DIRECT_IO)
            }
            Err(e) => reply.error(errno(e)),
        }
    }

    fn read(
        &self,
        _req: &Request,
        ino: INodeNo,
        _fh: FileHandle,
        offset: u64,
        size: u32,
        _flags: OpenFlags,
        _lock_owner: Option<LockOwner>,
        reply: ReplyData,
    ) {
        match self.fs().read(ino.0, offset, u64::from(size)) {
            Ok(data) => reply.data(&data),
            Err(e) => reply.error(errno(e)),
        }
    }

    fn write(
        &self,
        _req: &Request,
        ino: INodeNo,
        _fh: FileHandle,
        offset: u64,
        data: &[u8],
        _write_flags: WriteFlags,
        flags: OpenFlags,
        _lock_owner: Option<LockOwner>,
        reply: ReplyWrite,
    ) {
        let mut fs = self.fs();
        let result = fs.write(ino.0, offset, data);
        // O_DSYNC (and O_SYNC, which includes it): each write is durable when it returns.
        let result = match result {
            Ok(n) if flags.0 & libc::O_DSYNC != 0 => fs.fsync(ino.0).map(|()| n),
            other => other,
        };
        match result {
            Ok(n) => reply.written(n as u32),
            Err(e) => reply.error(errno(e)),
        }
    }

    fn flush(&self, _req: &Request, _ino: INodeNo, _fh: FileHandle, _lock_owner: LockOwner, reply: ReplyEmpty) {
        reply.ok();
    }

    fn release(
        &self,
        _req: &Request,
        ino: INodeNo,
        _fh: FileHandle,
        _flags: OpenFlags,
        _lock_owner: Option<LockOwner>,
        _flush: bool,
        reply: ReplyEmpty,
    ) {
        self.fs().release(ino.0);
        reply.ok();
    }

    fn fsync(&self, _req: &Request, ino: INodeNo, _fh: FileHandle, _datasync: bool, reply: ReplyEmpty) {
        reply_empty(self.fs().fsync(ino.0), reply);
    }

    fn readdir(&self, _req: &Request, ino: INodeNo, _fh: FileHandle, offset: u64, mut reply: ReplyDirectory) {
        let entries = match self.fs().readdir(ino.0) {
            Ok(entries) => entries,
            Err(e) => return reply.error(errno(e)),
        };
        let dots = [(ino.0, Kind::Dir, ".".into()), (ino.0, Kind::Dir, "..".into())];
        for (i, (child, kind, name)) in dots.into_iter().chain(entries).enumerate().skip(offset as usize) {
            let kind = if kind == Kind::Dir { FileType::Directory } else { FileType::RegularFile };
            if reply.add(INodeNo(child), i as u64 + 1, kind, &name) {
                break;
            }
        }
        reply.ok();
    }

    fn fsyncdir(&self, _req: &Request, ino: INodeNo, _fh: FileHandle, _datasync: bool, reply: ReplyEmpty) {
        reply_empty(self.fs().fsync(ino.0), reply);
    }

    fn statfs(&self, _req: &Request, _ino: INodeNo, reply: ReplyStatfs) {
        let blocks = 1 << 22; // 16 GiB of 4 KiB blocks: room enough, never full
        reply.statfs(blocks, blocks, blocks, 1 << 20, 1 << 20, 4096, 255, 4096);
    }

    fn access(&self, _req: &Request, _ino: INodeNo, _mask: fuser::AccessFlags, reply: ReplyEmpty) {
        reply.ok();
    }

    fn fallocate(
        &self,
        _req: &Request,
        ino: INodeNo,
        _fh: FileHandle,
        offset: u64,
        length: u64,
        mode: i32,
        reply: ReplyEmpty,
    ) {
        reply_empty(self.fs().fallocate(ino.0, offset, length, mode), reply);
    }
}

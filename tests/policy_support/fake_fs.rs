//! `FsView` fakes for the task-file tests: one that changes a fact once the content has been
//! read, and one in-memory file with arbitrary bytes.

use std::cell::Cell;
use std::fs;
use std::io;
use std::path::{Path, PathBuf};

use slate::policy::fs_view::{FileKind, FileMeta, FsView};
use slate::store::fs::RealFs;

#[derive(Clone, Copy, Debug)]
pub enum Change {
    Nothing,
    Mtime,
    Ctime,
    Size,
    Inode,
    Device,
    Kind,
    Retarget,
    Vanish,
    ShortRead,
    LongRead,
    RealAppend,
    RealReplace,
    /// The read itself fails (permission denied), as a hook-free stand-in for `chmod 000`
    /// when the tests run as root.
    Unreadable,
}

/// `RealFs`, except that once the content has been read, the chosen fact changes.
pub struct ChangingFs {
    change: Change,
    read: Cell<bool>,
}

impl ChangingFs {
    pub fn new(change: Change) -> Self {
        Self {
            change,
            read: Cell::new(false),
        }
    }
}

impl FsView for ChangingFs {
    fn canonicalize(&self, path: &Path) -> io::Result<PathBuf> {
        let canonical = RealFs.canonicalize(path)?;
        if self.read.get() {
            match self.change {
                Change::Retarget => return Ok(canonical.with_file_name("other.txt")),
                Change::Vanish => return Err(io::ErrorKind::NotFound.into()),
                _ => {}
            }
        }
        Ok(canonical)
    }

    fn metadata(&self, path: &Path) -> io::Result<FileMeta> {
        let mut meta = RealFs.metadata(path)?;
        if self.read.get() {
            match self.change {
                Change::Mtime => meta.mtime_ns += 1,
                Change::Ctime => meta.ctime_ns += 1,
                Change::Size => meta.len += 1,
                Change::Inode => meta.ino += 1,
                Change::Device => meta.dev += 1,
                Change::Kind => meta.kind = FileKind::Other,
                _ => {}
            }
        }
        Ok(meta)
    }

    fn symlink_metadata(&self, path: &Path) -> io::Result<FileMeta> {
        RealFs.symlink_metadata(path)
    }

    fn can_read(&self, path: &Path) -> bool {
        RealFs.can_read(path)
    }

    fn read(&self, path: &Path) -> io::Result<Vec<u8>> {
        self.read_at_most(path, u64::MAX)
    }

    fn read_at_most(&self, path: &Path, limit: u64) -> io::Result<Vec<u8>> {
        if let Change::Unreadable = self.change {
            return Err(io::ErrorKind::PermissionDenied.into());
        }
        let mut bytes = RealFs.read_at_most(path, limit)?;
        self.read.set(true);
        match self.change {
            Change::ShortRead => {
                bytes.pop();
            }
            Change::LongRead => bytes.push(b'x'),
            Change::RealAppend => {
                use std::io::Write;
                let mut file = fs::OpenOptions::new().append(true).open(path)?;
                file.write_all(b"appended during preflight\n")?;
            }
            Change::RealReplace => {
                let fresh = path.with_extension("fresh");
                fs::write(&fresh, &bytes)?;
                fs::rename(&fresh, path)?;
            }
            _ => {}
        }
        Ok(bytes)
    }
}

/// One file at `/ws/t.txt` holding arbitrary bytes, in memory.
pub struct MemFs {
    pub bytes: Vec<u8>,
}

impl MemFs {
    fn meta(&self, path: &Path) -> io::Result<FileMeta> {
        let kind = match path.to_str() {
            Some("/ws") => FileKind::Dir,
            Some("/ws/t.txt") => FileKind::File,
            _ => return Err(io::ErrorKind::NotFound.into()),
        };
        Ok(FileMeta {
            kind,
            len: self.bytes.len() as u64,
            dev: 1,
            ino: 2,
            mtime_ns: 3,
            ctime_ns: 4,
        })
    }
}

impl FsView for MemFs {
    fn canonicalize(&self, path: &Path) -> io::Result<PathBuf> {
        self.meta(path).map(|_| path.to_path_buf())
    }
    fn metadata(&self, path: &Path) -> io::Result<FileMeta> {
        self.meta(path)
    }
    fn symlink_metadata(&self, path: &Path) -> io::Result<FileMeta> {
        self.meta(path)
    }
    fn can_read(&self, path: &Path) -> bool {
        self.meta(path).is_ok()
    }
    fn read(&self, _path: &Path) -> io::Result<Vec<u8>> {
        Ok(self.bytes.clone())
    }
}

//! `FsView` over `std::fs`.

use std::io::{self, Read};
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

use crate::policy::fs_view::{FileKind, FileMeta, FsView};

/// The real file system.
#[derive(Clone, Copy, Debug, Default)]
pub struct RealFs;

fn meta(m: &std::fs::Metadata) -> FileMeta {
    let ft = m.file_type();
    let kind = if ft.is_symlink() {
        FileKind::Symlink
    } else if ft.is_file() {
        FileKind::File
    } else if ft.is_dir() {
        FileKind::Dir
    } else {
        FileKind::Other
    };
    FileMeta {
        kind,
        len: m.len(),
        dev: m.dev(),
        ino: m.ino(),
        mtime_ns: i128::from(m.mtime()) * 1_000_000_000 + i128::from(m.mtime_nsec()),
        ctime_ns: i128::from(m.ctime()) * 1_000_000_000 + i128::from(m.ctime_nsec()),
    }
}

impl FsView for RealFs {
    fn canonicalize(&self, path: &Path) -> io::Result<PathBuf> {
        std::fs::canonicalize(path)
    }

    fn metadata(&self, path: &Path) -> io::Result<FileMeta> {
        std::fs::metadata(path).map(|m| meta(&m))
    }

    fn symlink_metadata(&self, path: &Path) -> io::Result<FileMeta> {
        std::fs::symlink_metadata(path).map(|m| meta(&m))
    }

    fn can_read(&self, path: &Path) -> bool {
        std::fs::File::open(path).is_ok()
    }

    fn read(&self, path: &Path) -> io::Result<Vec<u8>> {
        std::fs::read(path)
    }

    fn read_at_most(&self, path: &Path, limit: u64) -> io::Result<Vec<u8>> {
        let file = std::fs::File::open(path)?;
        // The caller checked the path was a regular file; refuse anything swapped in since
        // (reading a directory errors anyway, a device could stream forever).
        if !file.metadata()?.is_file() {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                "not a regular file",
            ));
        }
        let mut bytes = Vec::new();
        file.take(limit).read_to_end(&mut bytes)?;
        Ok(bytes)
    }
}

//! The file-system facts policy needs, behind a trait so the rules stay pure and testable.
//! `crate::store::fs::RealFs` implements it with `std::fs`; tests may fake it.

use std::io;
use std::path::{Path, PathBuf};

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FileKind {
    File,
    Dir,
    Symlink,
    Other,
}

/// Identity and change facts of one path (as `lstat`/`stat` report them).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FileMeta {
    pub kind: FileKind,
    pub len: u64,
    pub dev: u64,
    pub ino: u64,
    /// Nanoseconds since the epoch.
    pub mtime_ns: i128,
    pub ctime_ns: i128,
}

pub trait FsView {
    /// Resolve every symlink and `..` (the path must exist).
    fn canonicalize(&self, path: &Path) -> io::Result<PathBuf>;
    /// Facts about `path`, following symlinks.
    fn metadata(&self, path: &Path) -> io::Result<FileMeta>;
    /// Facts about `path` itself (a symlink reports `Symlink`).
    fn symlink_metadata(&self, path: &Path) -> io::Result<FileMeta>;
    /// This process can open the file for reading (tried, not guessed from mode bits).
    fn can_read(&self, path: &Path) -> bool;
    /// The whole content of a file.
    fn read(&self, path: &Path) -> io::Result<Vec<u8>>;
    /// At most `limit` bytes from the start of a file, so a file that grew after its size was
    /// checked cannot make the caller read an unbounded amount. Callers that must tell "exactly
    /// `n`" from "more than `n`" ask for `n + 1`. The default reads everything and cuts.
    fn read_at_most(&self, path: &Path, limit: u64) -> io::Result<Vec<u8>> {
        let mut bytes = self.read(path)?;
        bytes.truncate(usize::try_from(limit).unwrap_or(usize::MAX));
        Ok(bytes)
    }
}

//! A unique temporary directory for policy tests, removed on drop, and small file helpers.
//! Included by several test crates; each uses a subset.
#![allow(dead_code)]

use std::fs;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::{SystemTime, UNIX_EPOCH};

pub struct TempDir(PathBuf);

impl TempDir {
    /// A fresh directory under the system temp dir, canonical (so `/tmp` symlinks on some
    /// systems do not disturb path comparisons).
    pub fn new(tag: &str) -> Self {
        static NEXT: AtomicU32 = AtomicU32::new(0);
        let n = NEXT.fetch_add(1, Ordering::Relaxed);
        let nanos = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| d.subsec_nanos());
        let dir = std::env::temp_dir().join(format!(
            "slate-test-{tag}-{}-{n}-{nanos}",
            std::process::id()
        ));
        fs::create_dir(&dir).expect("create temp dir");
        Self(fs::canonicalize(&dir).expect("canonical temp dir"))
    }

    pub fn path(&self) -> &Path {
        &self.0
    }

    pub fn join(&self, rel: impl AsRef<Path>) -> PathBuf {
        self.0.join(rel)
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = fs::remove_dir_all(&self.0);
    }
}

/// Write `bytes` to `path`, creating parent directories.
pub fn write(path: &Path, bytes: impl AsRef<[u8]>) {
    if let Some(parent) = path.parent() {
        fs::create_dir_all(parent).expect("create parent dirs");
    }
    fs::write(path, bytes).expect("write file");
}

/// `link` → `target` (target spelled as given, relative or absolute).
pub fn symlink(target: impl AsRef<Path>, link: &Path) {
    if let Some(parent) = link.parent() {
        fs::create_dir_all(parent).expect("create parent dirs");
    }
    std::os::unix::fs::symlink(target, link).expect("create symlink");
}

/// A FIFO at `path` (via `mkfifo`, which std does not offer).
pub fn fifo(path: &Path) {
    let status = std::process::Command::new("mkfifo")
        .arg(path)
        .status()
        .expect("run mkfifo");
    assert!(status.success(), "mkfifo {}", path.display());
}

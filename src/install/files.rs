//! The installed extension: `<data dir>/slate/slate/` (pi lists it by that name), holding the embedded extension
//! files ([`crate::worker::pi::extension::FILES`], the same table workers get) and
//! `install.json` ([`Manifest`]).
//!
//! The directory is 0700 and ours, each file 0600, written to a temporary sibling and renamed
//! into place. A file already there with the same bytes and mode is left alone, so a second
//! install writes nothing; anything else in the directory (a file a previous Slate shipped) is
//! removed, so pi never loads a stale module beside the current ones.

use std::fs;
use std::io;
use std::os::unix::fs::MetadataExt as _;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use super::InstallError;
use crate::worker::pi::extension::{FILES, content_hash, hash_files, private_dir};

/// The generated file beside the extension's own.
pub const MANIFEST: &str = "install.json";

/// `install.json`: which binary installed the extension, and which extension it is.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Manifest {
    /// The absolute path of the `slate` binary the extension runs (tests and development
    /// override it with `SLATE_BIN`).
    pub slate: PathBuf,
    /// The content hash of the embedded extension files (`extension::content_hash`, the name
    /// of the worker cache directory too).
    pub extension: String,
    /// The crate version of that binary.
    pub version: String,
}

impl Manifest {
    /// The manifest this binary writes for itself at `slate`.
    pub fn current(slate: &Path) -> Self {
        Self {
            slate: slate.to_owned(),
            extension: content_hash().to_owned(),
            version: env!("CARGO_PKG_VERSION").to_owned(),
        }
    }

    /// Reads `dir/install.json`.
    pub fn read(dir: &Path) -> Result<Self, String> {
        let path = dir.join(MANIFEST);
        let bytes = fs::read(&path).map_err(|e| format!("{}: {e}", path.display()))?;
        serde_json::from_slice(&bytes).map_err(|e| format!("{}: {e}", path.display()))
    }

    fn to_bytes(&self) -> Vec<u8> {
        let mut bytes = crate::json::to_vec_pretty(self).unwrap_or_default();
        bytes.push(b'\n');
        bytes
    }
}

/// What happened to one file of the directory.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum FileChange {
    Written,
    Unchanged,
    /// Not part of this install (left by an earlier one): removed.
    Removed,
}

impl FileChange {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Written => "written",
            Self::Unchanged => "unchanged",
            Self::Removed => "removed",
        }
    }
}

/// One file and what happened to it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct FileReport {
    pub name: String,
    pub change: FileChange,
}

/// Every file the directory holds after an install for the binary at `slate`, in order.
fn expected(slate: &Path) -> Vec<(String, Vec<u8>)> {
    let mut files: Vec<(String, Vec<u8>)> = FILES
        .iter()
        .map(|(name, content)| ((*name).to_owned(), content.as_bytes().to_vec()))
        .collect();
    files.push((MANIFEST.to_owned(), Manifest::current(slate).to_bytes()));
    files
}

/// Whether `path` is a regular file of ours, mode 0600, holding exactly `content`.
fn is_current(path: &Path, content: &[u8]) -> bool {
    let uid = nix::unistd::geteuid().as_raw();
    fs::symlink_metadata(path).is_ok_and(|m| {
        m.is_file()
            && m.uid() == uid
            && m.mode() & 0o777 == 0o600
            && m.len() == content.len() as u64
    }) && fs::read(path).is_ok_and(|bytes| bytes == content)
}

/// Writes the directory for the binary at `slate` (see the module docs), reporting every file.
pub fn write_dir(dir: &Path, slate: &Path) -> Result<Vec<FileReport>, InstallError> {
    let io_error = |path: &Path, action: &'static str| {
        let path = path.to_owned();
        move |source| InstallError::Io {
            path,
            action,
            source,
        }
    };
    private_dir(dir).map_err(io_error(dir, "create"))?;
    let files = expected(slate);
    let mut report = Vec::with_capacity(files.len() + 1);
    for (name, content) in &files {
        let path = dir.join(name);
        let change = if is_current(&path, content) {
            FileChange::Unchanged
        } else {
            write_file(dir, name, content).map_err(io_error(&path, "write"))?;
            FileChange::Written
        };
        report.push(FileReport {
            name: name.clone(),
            change,
        });
    }
    for name in extra_entries(dir).map_err(io_error(dir, "list"))? {
        let path = dir.join(&name);
        let removed = match fs::symlink_metadata(&path) {
            Ok(m) if m.is_dir() => fs::remove_dir_all(&path),
            _ => fs::remove_file(&path),
        };
        removed.map_err(io_error(&path, "remove"))?;
        report.push(FileReport {
            name,
            change: FileChange::Removed,
        });
    }
    Ok(report)
}

/// Names in `dir` that an install does not put there.
fn extra_entries(dir: &Path) -> io::Result<Vec<String>> {
    let mut extra = Vec::new();
    for entry in fs::read_dir(dir)? {
        let name = entry?.file_name().to_string_lossy().into_owned();
        let ours = name == MANIFEST || FILES.iter().any(|(n, _)| *n == name);
        if !ours {
            extra.push(name);
        }
    }
    extra.sort();
    Ok(extra)
}

/// `dir/name` := `content`, exactly 0600, replaced whole.
fn write_file(dir: &Path, name: &str, content: &[u8]) -> io::Result<()> {
    crate::store::replace::replace(&dir.join(name), content, 0o600)
}

/// Removes the directory; `false` when there was none.
pub fn remove_dir(dir: &Path) -> Result<bool, InstallError> {
    match fs::symlink_metadata(dir) {
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(false),
        Ok(m) if !m.is_dir() => Err(InstallError::Io {
            path: dir.to_owned(),
            action: "remove (it is not a directory)",
            source: io::ErrorKind::InvalidData.into(),
        }),
        _ => fs::remove_dir_all(dir)
            .map(|()| true)
            .map_err(|source| InstallError::Io {
                path: dir.to_owned(),
                action: "remove",
                source,
            }),
    }
}

/// What is installed in a directory, compared with this binary's extension.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Inspection {
    /// The directory exists.
    pub present: bool,
    /// Hash of the extension files on disk (read in the table's order), when all are there.
    pub installed_hash: Option<String>,
    /// This binary's embedded extension hash.
    pub binary_hash: String,
    /// Files of the table that are missing, differ or are not private (0600, ours).
    pub differing: Vec<String>,
    /// Files that are not part of an install.
    pub extra: Vec<String>,
    /// `install.json`, or why it cannot be read.
    pub manifest: Result<Manifest, String>,
}

impl Inspection {
    /// The files are exactly this binary's extension (the manifest is checked on its own).
    pub fn is_current(&self) -> bool {
        self.present && self.differing.is_empty() && self.extra.is_empty()
    }
}

/// Reads what is installed in `dir`.
pub fn inspect(dir: &Path) -> Inspection {
    let present = fs::symlink_metadata(dir).is_ok_and(|m| m.is_dir());
    let mut differing = Vec::new();
    let mut on_disk = Vec::with_capacity(FILES.len());
    for (name, content) in FILES {
        let path = dir.join(name);
        match fs::read(&path) {
            Ok(bytes) => {
                if !is_current(&path, content.as_bytes()) {
                    differing.push((*name).to_owned());
                }
                on_disk.push(((*name).to_owned(), bytes));
            }
            Err(_) => differing.push((*name).to_owned()),
        }
    }
    let installed_hash = (on_disk.len() == FILES.len())
        .then(|| hash_files(on_disk.iter().map(|(n, b)| (n.as_str(), b.as_slice()))));
    Inspection {
        present,
        installed_hash,
        binary_hash: content_hash().to_owned(),
        differing,
        extra: if present {
            extra_entries(dir).unwrap_or_default()
        } else {
            Vec::new()
        },
        manifest: Manifest::read(dir),
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, reason = "test fixtures fail loudly")]

    use super::{FileChange, MANIFEST, Manifest, inspect, remove_dir, write_dir};
    use crate::worker::pi::extension::{FILES, content_hash};
    use std::fs;
    use std::os::unix::fs::{MetadataExt as _, PermissionsExt as _};
    use std::path::Path;

    fn changes(report: &[super::FileReport], change: FileChange) -> Vec<&str> {
        report
            .iter()
            .filter(|f| f.change == change)
            .map(|f| f.name.as_str())
            .collect()
    }

    #[test]
    fn a_second_write_changes_nothing_and_a_tampered_file_is_rewritten() {
        let temp = tempfile::tempdir().unwrap();
        let dir = temp.path().join("data/slate/pi-extension");
        let slate = Path::new("/opt/slate/bin/slate");
        let first = write_dir(&dir, slate).unwrap();
        assert_eq!(first.len(), FILES.len() + 1);
        assert!(first.iter().all(|f| f.change == FileChange::Written));
        assert_eq!(fs::metadata(&dir).unwrap().mode() & 0o777, 0o700);
        for (name, content) in FILES {
            let path = dir.join(name);
            assert_eq!(fs::read_to_string(&path).unwrap(), *content);
            assert_eq!(fs::metadata(&path).unwrap().mode() & 0o777, 0o600);
        }
        assert_eq!(Manifest::read(&dir).unwrap(), Manifest::current(slate));
        let manifest: serde_json::Value =
            serde_json::from_slice(&fs::read(dir.join(MANIFEST)).unwrap()).unwrap();
        assert_eq!(manifest["slate"], "/opt/slate/bin/slate");
        assert_eq!(manifest["extension"], content_hash());
        assert_eq!(manifest["version"], env!("CARGO_PKG_VERSION"));

        let second = write_dir(&dir, slate).unwrap();
        assert!(second.iter().all(|f| f.change == FileChange::Unchanged));
        assert!(inspect(&dir).is_current());

        fs::write(dir.join("index.ts"), "tampered").unwrap();
        fs::set_permissions(dir.join("control.ts"), fs::Permissions::from_mode(0o644)).unwrap();
        fs::write(dir.join("old-module.ts"), "left by an older Slate").unwrap();
        let seen = inspect(&dir);
        assert!(!seen.is_current());
        assert_eq!(seen.differing, ["control.ts", "index.ts"]);
        assert_eq!(seen.extra, ["old-module.ts"]);
        assert_ne!(seen.installed_hash.as_deref(), Some(content_hash()));

        let third = write_dir(&dir, Path::new("/elsewhere/slate")).unwrap();
        assert_eq!(
            changes(&third, FileChange::Written),
            ["control.ts", "index.ts", MANIFEST]
        );
        assert_eq!(changes(&third, FileChange::Removed), ["old-module.ts"]);
        let seen = inspect(&dir);
        assert!(seen.is_current());
        assert_eq!(seen.installed_hash.as_deref(), Some(content_hash()));
        assert_eq!(seen.manifest.unwrap().slate, Path::new("/elsewhere/slate"));

        assert!(remove_dir(&dir).unwrap());
        assert!(!dir.exists());
        assert!(!remove_dir(&dir).unwrap());
        let gone = inspect(&dir);
        assert!(!gone.present && !gone.is_current() && gone.manifest.is_err());
    }

    #[test]
    fn a_symlink_in_place_of_the_directory_is_refused() {
        let temp = tempfile::tempdir().unwrap();
        let elsewhere = temp.path().join("elsewhere");
        fs::create_dir(&elsewhere).unwrap();
        let dir = temp.path().join("pi-extension");
        std::os::unix::fs::symlink(&elsewhere, &dir).unwrap();
        let error = write_dir(&dir, Path::new("/s")).unwrap_err();
        assert!(error.to_string().contains("pi-extension"), "{error}");
        assert!(fs::read_dir(&elsewhere).unwrap().next().is_none());
    }
}

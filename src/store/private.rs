//! Private entries: directories made exclusively with mode 0700, files with 0600, and a
//! check of the mode the kernel actually gave them.
//!
//! The mode is passed to `mkdir(2)`/`open(2)` itself, never applied by a later `chmod`, so
//! there is no moment where the entry is more open than requested. The kernel removes the
//! umask bits (or applies a default ACL) from that mode; both can only take permissions away.
//! The check therefore cannot find "too open", only "owner lost access", which would make
//! later steps fail in confusing ways, so it is reported at once instead.

use std::fs::{self, DirBuilder, File, OpenOptions};
use std::io;
use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt, PermissionsExt};
use std::path::Path;

use super::error::StoreError;

pub(crate) const DIR_MODE: u32 = 0o700;
pub(crate) const FILE_MODE: u32 = 0o600;

/// Creates exactly `path` (whose parent must exist) with mode 0700. Anything already at
/// `path`, even an empty directory, is an error and is left as it was.
pub(crate) fn create_private_dir(path: &Path) -> Result<(), StoreError> {
    match DirBuilder::new().mode(DIR_MODE).create(path) {
        Ok(()) => verify_new_dir(path),
        Err(e) if e.kind() == io::ErrorKind::AlreadyExists => Err(StoreError::Exists {
            path: path.to_owned(),
        }),
        Err(source) => Err(StoreError::CreateDir {
            path: path.to_owned(),
            source,
        }),
    }
}

/// Makes sure `path` is a directory, creating each missing component with mode 0700.
/// Components that already exist (symlinks to directories included: a session dir may live
/// elsewhere) are used as they are and never chmod-ed.
pub(crate) fn ensure_private_dir_chain(path: &Path) -> Result<(), StoreError> {
    match fs::metadata(path) {
        Ok(meta) if meta.is_dir() => return Ok(()),
        Ok(_) => {
            return Err(StoreError::NotADirectory {
                path: path.to_owned(),
            });
        }
        Err(e) if e.kind() == io::ErrorKind::NotFound => {}
        Err(source) => {
            return Err(StoreError::Inspect {
                path: path.to_owned(),
                source,
            });
        }
    }
    if let Some(parent) = path.parent().filter(|p| !p.as_os_str().is_empty()) {
        ensure_private_dir_chain(parent)?;
    }
    match DirBuilder::new().mode(DIR_MODE).create(path) {
        Ok(()) => verify_new_dir(path),
        // Another creator won the race; its directory is as good as ours and stays unchanged.
        Err(e) if e.kind() == io::ErrorKind::AlreadyExists => match fs::metadata(path) {
            Ok(meta) if meta.is_dir() => Ok(()),
            _ => Err(StoreError::NotADirectory {
                path: path.to_owned(),
            }),
        },
        Err(source) => Err(StoreError::CreateDir {
            path: path.to_owned(),
            source,
        }),
    }
}

/// Opens a new file for writing with mode 0600; fails if any entry (a dangling symlink too)
/// already has that name (`O_CREAT|O_EXCL`).
pub(crate) fn create_private_file(path: &Path, append: bool) -> io::Result<File> {
    let mut options = OpenOptions::new();
    if append {
        options.append(true);
    } else {
        options.write(true);
    }
    options.create_new(true).mode(FILE_MODE).open(path)
}

/// Checks an open file's permission bits (via `fstat`, so it is the file we created).
pub(crate) fn verify_file_mode(file: &File, path: &Path) -> Result<(), StoreError> {
    let meta = file.metadata().map_err(|source| StoreError::Inspect {
        path: path.to_owned(),
        source,
    })?;
    check_mode(path, meta.permissions().mode(), FILE_MODE)
}

fn verify_new_dir(path: &Path) -> Result<(), StoreError> {
    // lstat: inside a parent only we can write, nobody can have swapped in a symlink, but a
    // symlink here would be a bug worth reporting rather than following.
    let meta = fs::symlink_metadata(path).map_err(|source| StoreError::Inspect {
        path: path.to_owned(),
        source,
    })?;
    if !meta.file_type().is_dir() {
        return Err(StoreError::NotADirectory {
            path: path.to_owned(),
        });
    }
    check_mode(path, meta.permissions().mode(), DIR_MODE)
}

fn check_mode(path: &Path, mode: u32, expected: u32) -> Result<(), StoreError> {
    // Only the rwx bits: a setgid parent directory legitimately passes on its S_ISGID bit.
    let found = mode & 0o777;
    if found == expected {
        Ok(())
    } else {
        Err(StoreError::UnexpectedMode {
            path: path.to_owned(),
            expected,
            found,
        })
    }
}

//! `StoreError`: every storage failure names the path involved and keeps the OS error.

use std::io;
use std::path::PathBuf;

/// A storage operation that did not happen. Display strings are what the snapshot's
/// `artifacts.error` and the status line show, so each one names the path and the OS error.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    /// The current directory was needed to resolve a relative path and could not be read.
    #[error("cannot resolve the relative path {}: current directory unavailable: {source}", path.display())]
    CurrentDir { path: PathBuf, source: io::Error },

    /// Exclusive creation found something already there; it was left untouched.
    #[error("{} already exists; existing files and directories are never reused or changed", path.display())]
    Exists { path: PathBuf },

    #[error("cannot create directory {}: {source}", path.display())]
    CreateDir { path: PathBuf, source: io::Error },

    /// Something in the way is not a directory (checked without following a symlink).
    #[error("{} exists but is not a directory", path.display())]
    NotADirectory { path: PathBuf },

    /// A freshly created entry does not carry the requested mode. The creation mode can only
    /// lose bits to the umask (or a default ACL), so this means the owner lost access, never
    /// that others gained it.
    #[error(
        "{} was created with mode {found:04o} instead of {expected:04o} (a umask or default ACL removed owner permissions)",
        path.display()
    )]
    UnexpectedMode {
        path: PathBuf,
        expected: u32,
        found: u32,
    },

    #[error("cannot inspect {}: {source}", path.display())]
    Inspect { path: PathBuf, source: io::Error },

    /// An artifact reference must be an exact absolute path string.
    #[error("{} is not valid UTF-8, so it cannot be referenced exactly", path.display())]
    NonUtf8Path { path: PathBuf },

    /// A fixed runtime file name failed its check (never expected; names are constants).
    #[error("refusing file name {name:?}: fixed names must be one plain path component")]
    InvalidFixedName { name: String },

    /// One step of temp-file-plus-hard-link publication failed.
    #[error("could not publish {}: {step} {}: {source}", target.display(), temp.display())]
    Publish {
        target: PathBuf,
        step: PublishStep,
        temp: PathBuf,
        source: io::Error,
    },

    #[error("could not serialize {} as JSON: {source}", target.display())]
    Serialize {
        target: PathBuf,
        source: serde_json::Error,
    },

    #[error("cannot create event log {}: {source}", path.display())]
    CreateLog { path: PathBuf, source: io::Error },

    #[error("cannot append to event log {}: {source}", path.display())]
    AppendLog { path: PathBuf, source: io::Error },

    #[error("cannot encode a registry event for {}: {source}", path.display())]
    EncodeEvent {
        path: PathBuf,
        source: serde_json::Error,
    },

    #[error("cannot read event log {}: {source}", path.display())]
    ReadLog { path: PathBuf, source: io::Error },

    /// An earlier runtime's log could not be set aside for a new runtime of the same parent.
    #[error("cannot set the earlier event log {} aside as {}: {source}", path.display(), to.display())]
    RetireLog {
        path: PathBuf,
        to: PathBuf,
        source: io::Error,
    },
}

/// Which step of a publication failed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PublishStep {
    CreateTemp,
    WriteTemp,
    Link,
    RemoveTemp,
}

impl std::fmt::Display for PublishStep {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            PublishStep::CreateTemp => "creating temporary file",
            PublishStep::WriteTemp => "writing temporary file",
            PublishStep::Link => "hard-linking (destination must not exist) from temporary file",
            PublishStep::RemoveTemp => "published, but removing temporary file",
        })
    }
}

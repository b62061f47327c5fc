//! Where coordinators' sockets live and how a command finds the right one.
//!
//! ```text
//! $XDG_RUNTIME_DIR/slate/           (else /tmp/slate-<uid>/), mode 0700, owned by us
//!   <parent-id>.sock                one coordinator's control socket, mode 0600
//!   <parent-id>.json                its metadata {pid, cwd, parentId, startedAt, version, socket, events?}
//! ```
//!
//! A command with no selector talks to the newest live coordinator whose metadata `cwd` is the
//! canonical current directory; `--parent ID` and `SLATE_SOCKET` select another. A socket whose
//! connect is refused (or that is gone) is stale: it and its metadata are removed then, and only
//! then. A pid that looks dead proves nothing (pid namespaces, reuse), so it is never a reason.

use std::fs::{self, DirBuilder};
use std::io;
use std::os::unix::fs::{DirBuilderExt, MetadataExt, PermissionsExt};
use std::os::unix::net::UnixStream;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use uuid::Uuid;

use crate::core::Millis;

/// The variable that names a socket directly.
pub const SOCKET_ENV: &str = "SLATE_SOCKET";
/// Directory name under `$XDG_RUNTIME_DIR`.
const XDG_SUBDIR: &str = "slate";
pub const SOCKET_EXT: &str = "sock";
pub const METADATA_EXT: &str = "json";
const DIR_MODE: u32 = 0o700;
const FILE_MODE: u32 = 0o600;

/// What a running coordinator says about itself, beside its socket.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Metadata {
    pub pid: u32,
    /// The canonical directory it serves.
    pub cwd: PathBuf,
    pub parent_id: Uuid,
    /// Epoch milliseconds.
    pub started_at: Millis,
    /// The crate version, e.g. `"0.1.0"`.
    pub version: String,
    pub socket: PathBuf,
    /// Its registry event log (`<sessionDir>/delegation/<parent-id>/events.jsonl`), when it
    /// keeps one (`slate serve` does).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub events: Option<PathBuf>,
}

/// A coordinator to connect to.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Endpoint {
    pub socket: PathBuf,
    /// Absent when `SLATE_SOCKET` names a socket without a readable metadata file.
    pub metadata: Option<Metadata>,
}

/// A coordinator found live, with the connection that showed it: a client speaks on it
/// instead of connecting a second time.
#[derive(Debug)]
pub struct Located {
    pub endpoint: Endpoint,
    pub stream: UnixStream,
}

#[derive(Debug, thiserror::Error)]
pub enum DiscoveryError {
    #[error(
        "no coordinator is serving {}; start one there with `slate serve`, or select one with --parent ID or {SOCKET_ENV}",
        cwd.display()
    )]
    NoCoordinator { cwd: PathBuf },
    #[error(
        "no running coordinator has parent id {id} (looked in {}); start one with `slate serve`",
        dir.display()
    )]
    UnknownParent { id: String, dir: PathBuf },
    #[error("--parent: {0:?} is not a parent id (a UUID)")]
    InvalidParent(String),
    #[error(
        "{SOCKET_ENV}: no coordinator is listening on {} ({source}); start one with `slate serve`",
        path.display()
    )]
    SocketUnreachable { path: PathBuf, source: io::Error },
    #[error("{}: {reason}; refusing to use it for control sockets", path.display())]
    InsecureDir { path: PathBuf, reason: String },
    #[error("{}: {source}", path.display())]
    Io { path: PathBuf, source: io::Error },
}

impl DiscoveryError {
    /// True when the cause is simply that no coordinator is reachable (the CLI's exit 3).
    pub fn is_unreachable(&self) -> bool {
        matches!(
            self,
            Self::NoCoordinator { .. }
                | Self::UnknownParent { .. }
                | Self::SocketUnreachable { .. }
        )
    }
}

fn io_error(path: &Path) -> impl FnOnce(io::Error) -> DiscoveryError + '_ {
    move |source| DiscoveryError::Io {
        path: path.to_owned(),
        source,
    }
}

/// Our real uid.
pub fn current_uid() -> u32 {
    nix::unistd::getuid().as_raw()
}

/// The directory holding every coordinator socket of this user.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RuntimeDir {
    path: PathBuf,
}

impl RuntimeDir {
    pub fn new(path: impl Into<PathBuf>) -> Self {
        Self { path: path.into() }
    }

    /// `$XDG_RUNTIME_DIR/slate` when that variable is an absolute path, else `/tmp/slate-<uid>`.
    pub fn from_env() -> Self {
        let xdg = std::env::var_os("XDG_RUNTIME_DIR")
            .map(PathBuf::from)
            .filter(|p| p.is_absolute());
        match xdg {
            Some(base) => Self::new(base.join(XDG_SUBDIR)),
            None => Self::new(PathBuf::from(format!("/tmp/slate-{}", current_uid()))),
        }
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    pub fn socket_path(&self, parent_id: Uuid) -> PathBuf {
        self.path.join(format!("{parent_id}.{SOCKET_EXT}"))
    }

    /// Creates the directory (mode 0700) if it is missing, then checks it is private.
    pub fn ensure(&self) -> Result<(), DiscoveryError> {
        ensure_private_dir(&self.path)
    }

    /// Every readable `<parent-id>.json`, newest first. Unreadable or misnamed files are
    /// skipped.
    pub fn list(&self) -> Result<Vec<Metadata>, DiscoveryError> {
        match check_private_dir(&self.path) {
            Err(DiscoveryError::Io { source, .. }) if source.kind() == io::ErrorKind::NotFound => {
                return Ok(Vec::new());
            }
            checked => checked?,
        }
        let entries = fs::read_dir(&self.path).map_err(io_error(&self.path))?;
        let mut found: Vec<Metadata> = entries
            .flatten()
            .map(|entry| entry.path())
            .filter(|path| path.extension().is_some_and(|e| e == METADATA_EXT))
            .filter_map(|path| {
                let meta = read_metadata(&path).ok()?;
                // `<parent-id>.json` only: the file name and the id inside must agree.
                let stem = path.file_stem()?.to_str()?;
                (Uuid::parse_str(stem).ok()? == meta.parent_id).then_some(meta)
            })
            .collect();
        found.sort_by(|a, b| {
            b.started_at
                .cmp(&a.started_at)
                .then_with(|| b.parent_id.cmp(&a.parent_id))
        });
        Ok(found)
    }

    /// The newest live coordinator serving exactly `cwd` (canonicalized here). Candidates
    /// whose connect is refused are removed on the way.
    pub fn find(&self, cwd: &Path) -> Result<Option<Endpoint>, DiscoveryError> {
        Ok(self.find_connected(cwd)?.map(|found| found.endpoint))
    }

    /// [`RuntimeDir::find`], keeping the connection that found it live.
    pub fn find_connected(&self, cwd: &Path) -> Result<Option<Located>, DiscoveryError> {
        let cwd = fs::canonicalize(cwd).map_err(io_error(cwd))?;
        for meta in self.list()? {
            if meta.cwd != cwd {
                continue;
            }
            // Only sockets in this directory named after their id are trusted: metadata
            // cannot point a client elsewhere.
            let socket = self.socket_path(meta.parent_id);
            if let Probe::Live(stream) = probe(&socket) {
                let endpoint = Endpoint {
                    socket,
                    metadata: Some(meta),
                };
                return Ok(Some(Located { endpoint, stream }));
            }
        }
        Ok(None)
    }

    /// The coordinator with exactly this parent id (ids are never prefix-matched).
    pub fn find_parent(&self, id: &str) -> Result<Option<Endpoint>, DiscoveryError> {
        Ok(self.find_parent_connected(id)?.map(|found| found.endpoint))
    }

    /// [`RuntimeDir::find_parent`], keeping the connection that found it live.
    pub fn find_parent_connected(&self, id: &str) -> Result<Option<Located>, DiscoveryError> {
        let parent_id =
            Uuid::parse_str(id).map_err(|_| DiscoveryError::InvalidParent(id.to_owned()))?;
        match check_private_dir(&self.path) {
            Err(DiscoveryError::Io { source, .. }) if source.kind() == io::ErrorKind::NotFound => {
                return Ok(None);
            }
            checked => checked?,
        }
        let socket = self.socket_path(parent_id);
        let Probe::Live(stream) = probe(&socket) else {
            return Ok(None);
        };
        let metadata = read_metadata(&socket.with_extension(METADATA_EXT)).ok();
        let endpoint = Endpoint { socket, metadata };
        Ok(Some(Located { endpoint, stream }))
    }
}

/// How a command chose its coordinator.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Selector {
    /// `--parent ID`.
    pub parent: Option<String>,
    /// `SLATE_SOCKET`.
    pub socket: Option<PathBuf>,
}

impl Selector {
    /// `--parent` as given, `SLATE_SOCKET` from the environment when set and non-empty.
    pub fn from_env(parent: Option<String>) -> Self {
        let socket = std::env::var_os(SOCKET_ENV)
            .filter(|v| !v.is_empty())
            .map(PathBuf::from);
        Self { parent, socket }
    }
}

/// Resolves a selector: `--parent` first, then `SLATE_SOCKET`, then the coordinator serving
/// `cwd`.
pub fn locate(
    dir: &RuntimeDir,
    selector: &Selector,
    cwd: &Path,
) -> Result<Endpoint, DiscoveryError> {
    locate_connected(dir, selector, cwd).map(|found| found.endpoint)
}

/// [`locate`], keeping the connection that found the coordinator live (a client speaks on
/// it: one connect per command, not two).
pub fn locate_connected(
    dir: &RuntimeDir,
    selector: &Selector,
    cwd: &Path,
) -> Result<Located, DiscoveryError> {
    if let Some(id) = &selector.parent {
        return dir
            .find_parent_connected(id)?
            .ok_or_else(|| DiscoveryError::UnknownParent {
                id: id.clone(),
                dir: dir.path().to_owned(),
            });
    }
    if let Some(socket) = &selector.socket {
        // A socket named explicitly is never removed: the user pointed at it.
        let stream =
            UnixStream::connect(socket).map_err(|source| DiscoveryError::SocketUnreachable {
                path: socket.clone(),
                source,
            })?;
        let metadata = read_metadata(&socket.with_extension(METADATA_EXT)).ok();
        let endpoint = Endpoint {
            socket: socket.clone(),
            metadata,
        };
        return Ok(Located { endpoint, stream });
    }
    dir.find_connected(cwd)?
        .ok_or_else(|| DiscoveryError::NoCoordinator {
            cwd: fs::canonicalize(cwd).unwrap_or_else(|_| cwd.to_owned()),
        })
}

#[derive(Debug)]
enum Probe {
    /// Connected: the connection is the caller's to use or drop.
    Live(UnixStream),
    /// Removed (or already gone) after a refused connect.
    Stale,
    /// Could not tell (permissions, a full backlog, …): left alone.
    Unknown,
}

/// Connects once. A refused connect or a missing socket makes the pair stale and removes it.
fn probe(socket: &Path) -> Probe {
    match UnixStream::connect(socket) {
        Ok(stream) => Probe::Live(stream),
        Err(e)
            if matches!(
                e.kind(),
                io::ErrorKind::ConnectionRefused | io::ErrorKind::NotFound
            ) =>
        {
            remove_stale(socket);
            Probe::Stale
        }
        Err(_) => Probe::Unknown,
    }
}

/// Removes a socket whose connect failed, and its metadata. Both may already be gone.
pub(crate) fn remove_stale(socket: &Path) {
    let _ = fs::remove_file(socket);
    let _ = fs::remove_file(socket.with_extension(METADATA_EXT));
}

pub fn read_metadata(path: &Path) -> Result<Metadata, DiscoveryError> {
    let bytes = fs::read(path).map_err(io_error(path))?;
    serde_json::from_slice(&bytes).map_err(|e| DiscoveryError::Io {
        path: path.to_owned(),
        source: io::Error::new(io::ErrorKind::InvalidData, e),
    })
}

/// Writes `path` atomically, 0600 (`store::replace`).
pub fn write_metadata(path: &Path, metadata: &Metadata) -> Result<(), DiscoveryError> {
    let mut bytes = crate::json::to_vec_pretty(metadata).map_err(|e| DiscoveryError::Io {
        path: path.to_owned(),
        source: io::Error::other(e),
    })?;
    bytes.push(b'\n');
    crate::store::replace::replace(path, &bytes, FILE_MODE).map_err(|source| DiscoveryError::Io {
        path: path.to_owned(),
        source,
    })
}

/// Creates `path` with mode 0700 when it is missing (parents too), then checks it.
pub fn ensure_private_dir(path: &Path) -> Result<(), DiscoveryError> {
    match DirBuilder::new()
        .recursive(true)
        .mode(DIR_MODE)
        .create(path)
    {
        Ok(()) => check_private_dir(path),
        Err(e) => Err(io_error(path)(e)),
    }
}

/// The directory must be a real directory (not a symlink someone planted), owned by us, and
/// closed to group and others: anyone who can write it could swap sockets.
pub fn check_private_dir(path: &Path) -> Result<(), DiscoveryError> {
    let meta = fs::symlink_metadata(path).map_err(io_error(path))?;
    let insecure = |reason: String| DiscoveryError::InsecureDir {
        path: path.to_owned(),
        reason,
    };
    if !meta.file_type().is_dir() {
        return Err(insecure("not a directory".to_owned()));
    }
    let uid = current_uid();
    if meta.uid() != uid {
        return Err(insecure(format!(
            "owned by uid {}, not by us (uid {uid})",
            meta.uid()
        )));
    }
    let mode = meta.permissions().mode() & 0o777;
    if mode & 0o077 != 0 {
        return Err(insecure(format!(
            "mode {mode:04o} lets group or others in (expected 0700)"
        )));
    }
    Ok(())
}

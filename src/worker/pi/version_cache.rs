//! `pi --version`, remembered across runs while the installed pi has not changed.
//!
//! The version gate (`policy::version`, stable ≥ 1.5.2) must pass before any identity exists,
//! but running `pi --version` costs a whole Node start (about as long as the work of a small
//! task). So a successful check is remembered under a [`Fingerprint`] of the files that make
//! up the pi command, and a later run with the same fingerprint reuses it. Any change of a key
//! (another program on `PATH`, a re-pointed symlink, an upgrade rewriting the file) misses the
//! cache and runs `pi --version` again. A remembered version is re-checked by the gate on
//! every use, so a newer Slate with a higher minimum still fails closed. Failures are never
//! remembered. Any cache error (unreadable, malformed, unwritable) falls back to running pi.
//!
//! The fingerprint holds, for each file: its canonical path, size, modification time (ns),
//! inode and device. The files are
//!
//! * the program, resolved on `PATH` like `execvp` does, then canonicalized;
//! * every leading argument that names an existing file (the `cli.js` of `node cli.js`);
//! * for a small script program (a `#!` file of at most [`SCRIPT_BYTES`]), every existing
//!   absolute path it names: a wrapper such as `ci/install-pi.sh`'s `exec '/x/node'
//!   '/x/cli.js' "$@"` is keyed by the node and `cli.js` it runs, not only by itself.
//!
//! A wrapper that finds pi some other way (a `PATH` lookup of its own, a relative path) is
//! keyed by itself only: replacing pi behind it is not noticed until the wrapper changes.
//! Deleting the cache file forgets everything.
//!
//! The file is `<cache dir>/pi-version.json` (mode 0600 in a 0700 directory), written to an
//! exclusive temporary file and renamed over the old one, so a reader never sees half a file;
//! it keeps the [`ENTRIES`] most recent fingerprints.
//!
//! Slate's cache directory comes from the `directories` crate (`ProjectDirs::from("", "",
//! "slate")`): `$XDG_CACHE_HOME/slate`, else `~/.cache/slate` on Linux, `~/Library/Caches/slate`
//! on macOS. Chosen over a hand-written `XDG_CACHE_HOME` lookup because it also gets the
//! platform conventions and the passwd fallback for a missing `HOME` right, and it adds only
//! `dirs-sys` and `option-ext` (its `libc` is already a dependency through `nix`).

use std::ffi::OsStr;
use std::fs;
use std::os::unix::fs::{DirBuilderExt, MetadataExt};
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::policy::version::check_host_version;
use crate::worker::pi::PiCommand;

/// How many fingerprints the cache file keeps (most recent first).
pub const ENTRIES: usize = 8;
/// Scripts up to this size are scanned for the absolute paths they name.
pub const SCRIPT_BYTES: u64 = 8 * 1024;
const FILE_NAME: &str = "pi-version.json";

/// One file of the pi command, as the cache keys it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct FileKey {
    pub path: PathBuf,
    pub size: u64,
    pub mtime_ns: i128,
    pub ino: u64,
    pub dev: u64,
}

impl FileKey {
    fn of(path: &Path) -> Option<Self> {
        let path = fs::canonicalize(path).ok()?;
        let meta = fs::metadata(&path).ok()?;
        if !meta.is_file() {
            return None;
        }
        Some(Self {
            size: meta.len(),
            mtime_ns: i128::from(meta.mtime()) * 1_000_000_000 + i128::from(meta.mtime_nsec()),
            ino: meta.ino(),
            dev: meta.dev(),
            path,
        })
    }
}

/// The files that make up a pi command, with their identities (see the module docs).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Fingerprint {
    /// The leading arguments as given (they are part of the command).
    pub leading: Vec<String>,
    pub files: Vec<FileKey>,
}

impl Fingerprint {
    /// `None` when the program cannot be found (then pi is run, and fails, as without a cache).
    pub fn of(pi: &PiCommand) -> Option<Self> {
        let program = resolve_program(&pi.program)?;
        let first = FileKey::of(&program)?;
        let mut files = vec![first];
        for arg in &pi.leading {
            let path = Path::new(arg);
            if path.is_absolute() || path.exists() {
                files.extend(FileKey::of(path));
            }
        }
        for named in script_paths(&files[0].path) {
            files.extend(FileKey::of(&named));
        }
        files.dedup();
        Some(Self {
            leading: pi
                .leading
                .iter()
                .map(|a| a.to_string_lossy().into_owned())
                .collect(),
            files,
        })
    }
}

/// `program` as `execvp` finds it: a name with a `/` as is, else the first executable file
/// of that name on `PATH`.
fn resolve_program(program: &OsStr) -> Option<PathBuf> {
    let as_path = Path::new(program);
    if program.as_encoded_bytes().contains(&b'/') {
        return Some(as_path.to_path_buf());
    }
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .map(|dir| dir.join(program))
        .find(|candidate| {
            fs::metadata(candidate).is_ok_and(|m| m.is_file() && m.mode() & 0o111 != 0)
        })
}

/// The existing absolute paths a small `#!` script names (one level, no recursion).
fn script_paths(program: &Path) -> Vec<PathBuf> {
    let Ok(meta) = fs::metadata(program) else {
        return Vec::new();
    };
    if meta.len() > SCRIPT_BYTES {
        return Vec::new();
    }
    let Ok(bytes) = fs::read(program) else {
        return Vec::new();
    };
    if !bytes.starts_with(b"#!") {
        return Vec::new();
    }
    let text = String::from_utf8_lossy(&bytes);
    // The interpreter line names the shell; the rest names what it runs.
    let body = text.split_once('\n').map_or("", |(_, rest)| rest);
    body.split(|c: char| c.is_whitespace() || matches!(c, '\'' | '"' | ';' | '=' | '(' | ')'))
        .filter(|word| word.starts_with('/'))
        .map(PathBuf::from)
        .filter(|p| p.is_file())
        .collect()
}

#[derive(Debug, Default, Serialize, Deserialize)]
struct CacheFile {
    entries: Vec<Entry>,
}

#[derive(Debug, Serialize, Deserialize)]
struct Entry {
    fingerprint: Fingerprint,
    /// The version line pi printed, as the gate accepted it.
    version: String,
}

/// The version cache in one directory.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct VersionCache {
    dir: PathBuf,
}

impl VersionCache {
    pub fn new(dir: impl Into<PathBuf>) -> Self {
        Self { dir: dir.into() }
    }

    /// Slate's own cache directory (see the module docs); `None` when no home is known.
    pub fn user() -> Option<Self> {
        directories::ProjectDirs::from("", "", "slate").map(|d| Self::new(d.cache_dir()))
    }

    pub fn file(&self) -> PathBuf {
        self.dir.join(FILE_NAME)
    }

    fn read(&self) -> CacheFile {
        fs::read(self.file())
            .ok()
            .and_then(|bytes| serde_json::from_slice(&bytes).ok())
            .unwrap_or_default()
    }

    /// The remembered version for `fingerprint`, if any.
    pub fn lookup(&self, fingerprint: &Fingerprint) -> Option<String> {
        self.read()
            .entries
            .into_iter()
            .find(|e| &e.fingerprint == fingerprint)
            .map(|e| e.version)
    }

    /// Remember `version` for `fingerprint` (most recent first, at most [`ENTRIES`]).
    pub fn store(&self, fingerprint: Fingerprint, version: String) -> std::io::Result<()> {
        let mut file = self.read();
        file.entries.retain(|e| e.fingerprint != fingerprint);
        file.entries.insert(
            0,
            Entry {
                fingerprint,
                version,
            },
        );
        file.entries.truncate(ENTRIES);
        fs::DirBuilder::new()
            .recursive(true)
            .mode(0o700)
            .create(&self.dir)?;
        let bytes = serde_json::to_vec(&file).map_err(std::io::Error::other)?;
        crate::store::replace::replace(&self.file(), &bytes, 0o600)
    }
}

/// Where a checked version came from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Source {
    /// The cache had it for this exact fingerprint.
    Cache,
    /// `pi --version` ran.
    Pi,
}

/// The version gate with the cache: a remembered version for the same fingerprint (re-checked
/// by the gate), else `pi --version` (remembered when it passes). Fails closed like
/// [`PiBackend::check_version`](super::PiBackend::check_version).
pub async fn check_version(
    pi: &PiCommand,
    cache: Option<&VersionCache>,
) -> Result<(String, Source), String> {
    let fingerprint = cache.and(Fingerprint::of(pi));
    if let (Some(cache), Some(fingerprint)) = (cache, fingerprint.as_ref())
        && let Some(version) = cache.lookup(fingerprint)
    {
        return check_host_version(&version)
            .map(|v| (v.to_string(), Source::Cache))
            .map_err(|e| e.to_string());
    }
    let version = super::PiBackend::check_version(pi).await?;
    if let (Some(cache), Some(fingerprint)) = (cache, fingerprint) {
        // A cache that cannot be written only costs the next run a `pi --version`.
        let _ = cache.store(fingerprint, version.clone());
    }
    Ok((version, Source::Pi))
}

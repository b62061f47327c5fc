//! Slate's pi extension (`extension/` in the repository), shipped inside the binary: the same
//! files serve a worker (written here for each launch) and the user's main session (written by
//! `slate pi install`).
//!
//! pi loads an extension from files (`-e <abs path>/worker_entry.ts` for a worker, the
//! directory's `index.ts` for the main session; `.ts` straight from source, no build step), so every file of it is compiled in with `include_str!` ([`FILES`]) and written
//! out when a worker is launched, to a private content-addressed directory:
//! `<Slate's cache dir>/extension/<hash>/` (`$XDG_CACHE_HOME/slate`, else `~/.cache/slate`, as
//! the pi version cache). The directory is 0700 and its files 0600, owned by the current user.
//!
//! * A new directory is written whole under a temporary sibling name and renamed into place, so
//!   concurrent launches and crashes never leave a half-written extension under the final name
//!   (a crash leaves at most a `.tmp-*` sibling, removed by a later install once it is an hour
//!   old).
//! * An existing directory is used only after it is verified byte for byte: exactly these files,
//!   regular, ours, no group or other permission bits, the same content. Anything else (a file
//!   edited, added, removed, re-moded, the directory swapped for a symlink, empty files after a
//!   crash without fsync) is repaired by writing a fresh copy and swapping it in. Verification
//!   is why no fsync is needed: what a crash could leave is found and replaced.
//! * The `<hash>` is the first 128 bits of SHA-256 over the table (names, lengths, contents), in
//!   hex: two Slate builds with the same extension share a directory, different ones never do.
//!   `sha2` (`RustCrypto`, pure Rust, `default-features = false`, a few small crates) was chosen
//!   over a non-cryptographic hash because a stable, collision-free name is the point, and over
//!   a hand-written digest because SHA-256 is not something to write by hand.
//!
//! [`installed_extension`] does this once per process and remembers the path (a later call
//! installs again only if the worker entry has disappeared meanwhile).

use std::fs;
use std::io::{self, Write as _};
use std::os::unix::fs::{DirBuilderExt, MetadataExt, OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Mutex, OnceLock, PoisonError};
use std::time::{Duration, SystemTime};

use sha2::{Digest, Sha256};

/// The main session's entry: the file pi loads from the directory `slate pi install` lists.
pub const ENTRY: &str = "index.ts";

/// The file a worker's pi is given with `-e`: the worker's own entry, which loads only the
/// worker's part of the extension (issue 23: a lean worker extension), from the same verified
/// directory.
pub const WORKER_ENTRY: &str = "worker_entry.ts";

/// Every file of `extension/` that pi loads, by name (`extension/test/` is not shipped). A test
/// compares this table with the directory, so a new file cannot be forgotten.
pub const FILES: &[(&str, &str)] = &[
    ("cli.ts", include_str!("../../../extension/cli.ts")),
    (
        "commands.ts",
        include_str!("../../../extension/commands.ts"),
    ),
    ("control.ts", include_str!("../../../extension/control.ts")),
    (
        "coordinator.ts",
        include_str!("../../../extension/coordinator.ts"),
    ),
    ("guards.ts", include_str!("../../../extension/guards.ts")),
    ("handoff.ts", include_str!("../../../extension/handoff.ts")),
    (
        "host_extensions.ts",
        include_str!("../../../extension/host_extensions.ts"),
    ),
    (
        "hub_frames.ts",
        include_str!("../../../extension/hub_frames.ts"),
    ),
    (
        "hub_overlay.ts",
        include_str!("../../../extension/hub_overlay.ts"),
    ),
    (
        "identity.ts",
        include_str!("../../../extension/identity.ts"),
    ),
    ("index.ts", include_str!("../../../extension/index.ts")),
    ("install.ts", include_str!("../../../extension/install.ts")),
    (
        "main_session.ts",
        include_str!("../../../extension/main_session.ts"),
    ),
    (
        "own_hash.ts",
        include_str!("../../../extension/own_hash.ts"),
    ),
    (
        "protocol.gen.ts",
        include_str!("../../../extension/protocol.gen.ts"),
    ),
    (
        "protocol.ts",
        include_str!("../../../extension/protocol.ts"),
    ),
    ("render.ts", include_str!("../../../extension/render.ts")),
    (
        "reservation.ts",
        include_str!("../../../extension/reservation.ts"),
    ),
    ("runtime.ts", include_str!("../../../extension/runtime.ts")),
    ("tools.ts", include_str!("../../../extension/tools.ts")),
    ("version.ts", include_str!("../../../extension/version.ts")),
    ("widget.ts", include_str!("../../../extension/widget.ts")),
    ("worker.ts", include_str!("../../../extension/worker.ts")),
    (
        "worker_entry.ts",
        include_str!("../../../extension/worker_entry.ts"),
    ),
];

/// Name of the directory under the cache dir that holds the content-addressed copies.
pub const CACHE_SUBDIR: &str = "extension";

/// Leftover temporary directories older than this are removed by the next install.
const STALE_AFTER: Duration = Duration::from_secs(3600);
/// Attempts to put a fresh copy in place while other processes race for the same name.
const ATTEMPTS: usize = 4;

/// The content hash naming the directory (32 hex digits).
pub fn content_hash() -> &'static str {
    static HASH: OnceLock<String> = OnceLock::new();
    HASH.get_or_init(|| {
        hash_files(
            FILES
                .iter()
                .map(|(name, content)| (*name, content.as_bytes())),
        )
    })
}

/// The content hash of a table of files, as [`content_hash`] computes it for [`FILES`] (so a
/// copy on disk read back in the table's order hashes the same exactly when it is the same).
pub fn hash_files<'a>(files: impl IntoIterator<Item = (&'a str, &'a [u8])>) -> String {
    let mut hasher = Sha256::new();
    for (name, content) in files {
        // Length-prefixed fields: no two tables hash the same input.
        hasher.update((name.len() as u64).to_le_bytes());
        hasher.update(name.as_bytes());
        hasher.update((content.len() as u64).to_le_bytes());
        hasher.update(content);
    }
    hasher.finalize()[..16]
        .iter()
        .fold(String::with_capacity(32), |mut hex, byte| {
            use std::fmt::Write as _;
            let _ = write!(hex, "{byte:02x}");
            hex
        })
}

/// The absolute path of the installed worker entry ([`WORKER_ENTRY`]), installing it on first use (see the module
/// docs).
pub fn installed_extension() -> io::Result<PathBuf> {
    static INSTALLED: Mutex<Option<PathBuf>> = Mutex::new(None);
    let mut installed = INSTALLED.lock().unwrap_or_else(PoisonError::into_inner);
    if let Some(path) = installed.as_ref().filter(|p| p.is_file()) {
        return Ok(path.clone());
    }
    let cache = directories::ProjectDirs::from("", "", "slate").ok_or_else(|| {
        io::Error::new(
            io::ErrorKind::NotFound,
            "no home directory, so no cache directory for Slate's pi extension",
        )
    })?;
    let path = install_into(&cache.cache_dir().join(CACHE_SUBDIR))?;
    *installed = Some(path.clone());
    Ok(path)
}

/// Install the extension under `base` (created 0700 if missing) and return the absolute path
/// of its worker entry ([`WORKER_ENTRY`]). Idempotent and safe to run concurrently from
/// several processes.
pub fn install_into(base: &Path) -> io::Result<PathBuf> {
    let base = std::path::absolute(base)?;
    private_dir(&base)?;
    let hash = content_hash();
    let target = base.join(hash);
    if !is_intact(&target) {
        put_in_place(&base, &target, hash)?;
    }
    remove_stale(&base);
    Ok(target.join(WORKER_ENTRY))
}

/// `dir` exists as a directory of ours with mode 0700 (created with parents if missing).
pub fn private_dir(dir: &Path) -> io::Result<()> {
    fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(dir)?;
    let meta = fs::symlink_metadata(dir)?;
    if !meta.is_dir() || meta.uid() != nix::unistd::geteuid().as_raw() {
        return Err(io::Error::new(
            io::ErrorKind::PermissionDenied,
            format!(
                "{} is not a directory owned by this user; Slate will not put its pi extension there",
                dir.display()
            ),
        ));
    }
    if meta.mode() & 0o777 != 0o700 {
        fs::set_permissions(dir, fs::Permissions::from_mode(0o700))?;
    }
    Ok(())
}

/// Whether `dir` holds exactly [`FILES`], byte for byte, privately (see the module docs).
pub fn is_intact(dir: &Path) -> bool {
    let uid = nix::unistd::geteuid().as_raw();
    let private = |meta: &fs::Metadata, mode: u32| meta.uid() == uid && meta.mode() & 0o777 == mode;
    let Ok(meta) = fs::symlink_metadata(dir) else {
        return false;
    };
    if !meta.is_dir() || !private(&meta, 0o700) {
        return false;
    }
    let Ok(entries) = fs::read_dir(dir) else {
        return false;
    };
    let mut names = Vec::new();
    for entry in entries {
        let Ok(entry) = entry else { return false };
        names.push(entry.file_name());
    }
    if names.len() != FILES.len() {
        return false;
    }
    FILES.iter().all(|(name, content)| {
        let path = dir.join(name);
        fs::symlink_metadata(&path).is_ok_and(|m| m.is_file() && private(&m, 0o600))
            && fs::read(&path).is_ok_and(|bytes| bytes == content.as_bytes())
    })
}

/// Write a fresh copy next to `target` and rename it into place, replacing whatever is there.
/// (A whole directory swapped in one rename, with a damaged one moved aside: not the one-file
/// `store::replace`.)
fn put_in_place(base: &Path, target: &Path, hash: &str) -> io::Result<()> {
    let temp = write_copy(base, hash)?;
    let result = swap_in(base, &temp, target, hash);
    if temp.exists() {
        let _ = fs::remove_dir_all(&temp);
    }
    result
}

fn swap_in(base: &Path, temp: &Path, target: &Path, hash: &str) -> io::Result<()> {
    let mut last = None;
    for _ in 0..ATTEMPTS {
        match fs::rename(temp, target) {
            Ok(()) => return Ok(()),
            // Something is at `target`: another launch's good copy, or a bad one to move aside.
            Err(e) if fs::symlink_metadata(target).is_ok() => {
                if is_intact(target) {
                    return Ok(());
                }
                let aside = unique_sibling(base, ".old", hash);
                match fs::rename(target, &aside) {
                    Ok(()) => remove_any(&aside),
                    Err(e) if e.kind() == io::ErrorKind::NotFound => {} // someone else moved it
                    Err(e) => return Err(e),
                }
                last = Some(e);
            }
            Err(e) => return Err(e),
        }
    }
    Err(last.unwrap_or_else(|| io::Error::other("could not put the pi extension in place")))
}

/// A complete private copy of [`FILES`] in a new temporary directory under `base`.
fn write_copy(base: &Path, hash: &str) -> io::Result<PathBuf> {
    let temp = unique_sibling(base, ".tmp", hash);
    fs::DirBuilder::new().mode(0o700).create(&temp)?;
    let written = (|| {
        fs::set_permissions(&temp, fs::Permissions::from_mode(0o700))?;
        for (name, content) in FILES {
            let path = temp.join(name);
            let mut file = fs::OpenOptions::new()
                .write(true)
                .create_new(true)
                .mode(0o600)
                .open(&path)?;
            file.write_all(content.as_bytes())?;
            // Exactly 0600 whatever the umask.
            file.set_permissions(fs::Permissions::from_mode(0o600))?;
        }
        Ok(())
    })();
    match written {
        Ok(()) => Ok(temp),
        Err(e) => {
            let _ = fs::remove_dir_all(&temp);
            Err(e)
        }
    }
}

/// `<base>/<prefix>-<hash>-<pid>-<n>`: unique among this process's calls and other processes.
fn unique_sibling(base: &Path, prefix: &str, hash: &str) -> PathBuf {
    static NEXT: AtomicU64 = AtomicU64::new(0);
    let n = NEXT.fetch_add(1, Ordering::Relaxed);
    base.join(format!("{prefix}-{hash}-{}-{n}", std::process::id()))
}

fn remove_any(path: &Path) {
    let removed = match fs::symlink_metadata(path) {
        Ok(meta) if meta.is_dir() => fs::remove_dir_all(path),
        Ok(_) => fs::remove_file(path),
        Err(_) => Ok(()),
    };
    let _ = removed;
}

/// Remove `.tmp-*` / `.old-*` leftovers (of crashed installs) older than [`STALE_AFTER`].
fn remove_stale(base: &Path) {
    let Ok(entries) = fs::read_dir(base) else {
        return;
    };
    let now = SystemTime::now();
    for entry in entries.flatten() {
        let name = entry.file_name();
        let name = name.to_string_lossy();
        if !(name.starts_with(".tmp-") || name.starts_with(".old-")) {
            continue;
        }
        let old = entry
            .metadata()
            .and_then(|m| m.modified())
            .is_ok_and(|t| now.duration_since(t).is_ok_and(|age| age > STALE_AFTER));
        if old {
            remove_any(&entry.path());
        }
    }
}

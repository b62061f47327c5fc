//! Task directories and artifact publication (contract "Full output artifacts and previews").
//!
//! A task directory and its `agent/` and `transcripts/` are created exclusively with mode
//! 0700: an existing entry is an error and stays untouched. `result.txt` and
//! `structured.json` are published by writing a new 0600 file with no name (`O_TMPFILE`)
//! and linking it to the fixed name; `linkat(2)` refuses an existing destination, so nothing
//! is ever overwritten, a reader never sees a partly written artifact under the fixed name,
//! and a runtime killed mid-publication leaves no temporary file behind. Where the file
//! system has no `O_TMPFILE`, a named `.<name>.<hex>.tmp` (`O_EXCL`) is written and
//! hard-linked instead, and [`sweep_leftovers`] removes what a killed runtime left of those.
//! No fsync: this is atomic publication, not a crash-durability promise.

use std::fs::{self, File};
use std::hash::{BuildHasher, Hasher, RandomState};
use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{SystemTime, UNIX_EPOCH};

use super::error::{PublishStep, StoreError};
use super::paths::{self, AGENT_DIR, RESULT_TEXT, STRUCTURED_JSON, TRANSCRIPTS_DIR};
use super::private::{
    create_private_dir, create_private_file, ensure_private_dir_chain, verify_file_mode,
};
use crate::core::ids::ChildRef;
use crate::core::snapshot::Artifacts;

/// How many fresh temporary names to try when one is taken before giving up.
const TEMP_NAME_ATTEMPTS: u32 = 8;

/// A task directory this runtime created, with its private `agent/` and `transcripts/`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TaskDir {
    child: ChildRef,
    path: PathBuf,
}

impl TaskDir {
    pub fn child(&self) -> ChildRef {
        self.child
    }

    /// Absolute path of `<task-id>[-g<N>]`.
    pub fn path(&self) -> &Path {
        &self.path
    }

    pub fn agent_dir(&self) -> PathBuf {
        self.path.join(AGENT_DIR)
    }

    /// What the worker gets as `--session-dir`.
    pub fn transcripts_dir(&self) -> PathBuf {
        self.path.join(TRANSCRIPTS_DIR)
    }

    pub fn result_path(&self) -> PathBuf {
        self.path.join(RESULT_TEXT)
    }

    pub fn structured_path(&self) -> PathBuf {
        self.path.join(STRUCTURED_JSON)
    }
}

/// Creates `<parent_dir>/<task-id>[-g<N>]/{agent,transcripts}`, each exclusively with mode
/// 0700. `parent_dir` is `delegation/<parent-id>`; it and any missing ancestor are created
/// with 0700, while existing ones are used unchanged. If a later step fails, the empty
/// directories this call made are removed again (best effort) and the error is returned.
/// Create `delegation/<parent-id>/` (and missing ancestors) with mode 0700; existing
/// directories are left exactly as they are.
pub fn ensure_delegation_dir(dir: &Path) -> Result<(), StoreError> {
    ensure_private_dir_chain(&paths::resolve(dir)?)
}

pub fn create_task_dir(parent_dir: &Path, child: ChildRef) -> Result<TaskDir, StoreError> {
    let parent_dir = paths::resolve(parent_dir)?;
    let path = paths::task_dir(&parent_dir, child);
    let agent = paths::fixed_child(&path, AGENT_DIR)?;
    let transcripts = paths::fixed_child(&path, TRANSCRIPTS_DIR)?;

    ensure_private_dir_chain(&parent_dir)?;
    create_private_dir(&path)?;
    let mut created = vec![path.clone()];
    for dir in [agent, transcripts] {
        if let Err(e) = create_private_dir(&dir) {
            // Only directories made just now, and only while empty: nothing else is touched.
            for made in created.iter().rev() {
                let _ = fs::remove_dir(made);
            }
            return Err(e);
        }
        created.push(dir);
    }
    Ok(TaskDir { child, path })
}

/// What a publication produced: references to fully written files only, plus every failure.
#[derive(Debug, Default)]
pub struct PublishResult {
    /// `text`/`structured` hold absolute paths of complete files; `error` joins the failures.
    pub artifacts: Artifacts,
    pub errors: Vec<StoreError>,
}

impl PublishResult {
    /// True when every requested artifact was published without any error.
    pub fn is_complete(&self) -> bool {
        self.errors.is_empty()
    }
}

/// Publishes `result.txt` (the exact bytes of `text`, even when empty) and, when given,
/// `structured.json` (`serde_json`'s compact serialization of the value). The two are
/// independent: a text artifact that was written stays referenced when the structured one
/// fails, and the failure is recorded in `artifacts.error`.
pub fn publish(
    task_dir: &TaskDir,
    text: &str,
    structured: Option<&serde_json::Value>,
) -> PublishResult {
    let mut result = PublishResult::default();

    let text_outcome = publish_file(task_dir.path(), RESULT_TEXT, |_| {
        Ok(text.as_bytes().to_vec())
    });
    result.artifacts.text = text_outcome.reference;
    result.errors.extend(text_outcome.error);

    if let Some(value) = structured {
        let outcome = publish_file(task_dir.path(), STRUCTURED_JSON, |target| {
            crate::json::to_vec(value).map_err(|source| StoreError::Serialize {
                target: target.to_owned(),
                source,
            })
        });
        result.artifacts.structured = outcome.reference;
        result.errors.extend(outcome.error);
    }

    if !result.errors.is_empty() {
        let messages: Vec<String> = result.errors.iter().map(ToString::to_string).collect();
        result.artifacts.error = Some(messages.join("; "));
    }
    result
}

/// One artifact: the reference exists only if the file under its fixed name is complete.
/// A leftover temporary name after a successful link is reported as an error too.
struct Outcome {
    reference: Option<String>,
    error: Option<StoreError>,
}

impl Outcome {
    fn failed(error: StoreError) -> Self {
        Self {
            reference: None,
            error: Some(error),
        }
    }
}

fn publish_file(
    dir: &Path,
    name: &str,
    contents: impl FnOnce(&Path) -> Result<Vec<u8>, StoreError>,
) -> Outcome {
    let target = match paths::fixed_child(dir, name) {
        Ok(target) => target,
        Err(e) => return Outcome::failed(e),
    };
    let Some(reference) = target.to_str().map(str::to_owned) else {
        return Outcome::failed(StoreError::NonUtf8Path { path: target });
    };
    let bytes = match contents(&target) {
        Ok(bytes) => bytes,
        Err(e) => return Outcome::failed(e),
    };
    let failure = |step, temp: &Path, source| StoreError::Publish {
        target: target.clone(),
        step,
        temp: temp.to_owned(),
        source,
    };

    // First choice: an anonymous file in the directory (`O_TMPFILE`), given its name only
    // by the link. A crash (kill -9) at any moment before the link leaves nothing behind:
    // the kernel frees an unlinked file when its last descriptor closes.
    match publish_anonymous(dir, &target, &bytes, |step, source| {
        failure(step, dir, source)
    }) {
        Ok(Anonymous::Published) => {
            return Outcome {
                reference: Some(reference),
                error: None,
            };
        }
        Err(e) => return Outcome::failed(e),
        Ok(Anonymous::Unsupported) => {}
    }

    // Fallback (a file system without `O_TMPFILE`, or no `/proc`): a named temporary file.
    // A crash can leave it; [`sweep_leftovers`] removes such files when a runtime of the
    // same parent starts again.
    let (temp, mut file) = match create_temp(dir, name) {
        Ok(created) => created,
        Err((temp, source)) => {
            return Outcome::failed(failure(PublishStep::CreateTemp, &temp, source));
        }
    };
    let written = file
        .write_all(&bytes)
        .map_err(|source| failure(PublishStep::WriteTemp, &temp, source))
        .and_then(|()| verify_file_mode(&file, &temp));
    drop(file);
    if let Err(e) = written {
        let _ = fs::remove_file(&temp);
        return Outcome::failed(e);
    }
    if let Err(source) = fs::hard_link(&temp, &target) {
        let _ = fs::remove_file(&temp);
        return Outcome::failed(failure(PublishStep::Link, &temp, source));
    }
    let error = fs::remove_file(&temp)
        .err()
        .map(|source| failure(PublishStep::RemoveTemp, &temp, source));
    Outcome {
        reference: Some(reference),
        error,
    }
}

/// How the anonymous-file publication went when it did not fail (a real failure — the
/// destination exists, the disk is full — is reported as it is, with no fallback).
enum Anonymous {
    Published,
    /// This file system or process cannot do it; the named temporary file is used instead.
    Unsupported,
}

/// Writes `bytes` to an `O_TMPFILE` file of mode 0600 in `dir` and links it to `target`
/// with `linkat(AT_FDCWD, "/proc/self/fd/N", AT_FDCWD, target, AT_SYMLINK_FOLLOW)` (the
/// unprivileged form; `AT_EMPTY_PATH` needs `CAP_DAC_READ_SEARCH`). `linkat` refuses an
/// existing destination exactly as `link(2)` does. A failure names the directory as its
/// temporary file (the file has no name of its own).
fn publish_anonymous(
    dir: &Path,
    target: &Path,
    bytes: &[u8],
    failure: impl Fn(PublishStep, io::Error) -> StoreError,
) -> Result<Anonymous, StoreError> {
    use std::os::fd::AsRawFd as _;
    use std::os::unix::fs::OpenOptionsExt as _;

    let opened = fs::OpenOptions::new()
        .write(true)
        .custom_flags(nix::fcntl::OFlag::O_TMPFILE.bits())
        .mode(super::private::FILE_MODE)
        .open(dir);
    // EOPNOTSUPP: the file system has no O_TMPFILE; EISDIR/EINVAL: the kernel or libc does
    // not know the flag. Anything else (no space, no permission) would fail the named file
    // too, but trying it costs nothing and keeps one failure report.
    let Ok(mut file) = opened else {
        return Ok(Anonymous::Unsupported);
    };
    file.write_all(bytes)
        .map_err(|source| failure(PublishStep::WriteTemp, source))?;
    verify_file_mode(&file, dir)?;
    let proc_path = format!("/proc/self/fd/{}", file.as_raw_fd());
    match nix::unistd::linkat(
        nix::fcntl::AT_FDCWD,
        proc_path.as_str(),
        nix::fcntl::AT_FDCWD,
        target,
        nix::fcntl::AtFlags::AT_SYMLINK_FOLLOW,
    ) {
        Ok(()) => Ok(Anonymous::Published),
        // No /proc mounted: the anonymous file cannot be named this way.
        Err(nix::errno::Errno::ENOENT) if !Path::new("/proc/self/fd").is_dir() => {
            Ok(Anonymous::Unsupported)
        }
        Err(errno) => Err(failure(PublishStep::Link, io::Error::from(errno))),
    }
}

/// Whether `name` is one of this module's named temporary files: `.<artifact>.<16 hex>.tmp`.
fn is_leftover_temp(name: &str) -> bool {
    [RESULT_TEXT, STRUCTURED_JSON].iter().any(|artifact| {
        name.strip_prefix('.')
            .and_then(|rest| rest.strip_prefix(artifact))
            .and_then(|rest| rest.strip_prefix('.'))
            .and_then(|rest| rest.strip_suffix(".tmp"))
            .is_some_and(|hex| hex.len() == 16 && hex.bytes().all(|b| b.is_ascii_hexdigit()))
    })
}

/// Removes the named temporary files an earlier runtime of this parent left in its task
/// directories when it was killed mid-publication (only with the fallback of
/// [`publish`]). The caller must be the only runtime of the parent (it holds the parent's
/// control socket), so no such file is still being written. Only regular files with exactly
/// the temporary name pattern, directly inside a task directory, are removed. Returns how
/// many were removed; unreadable directories are skipped.
pub fn sweep_leftovers(delegation_dir: &Path) -> usize {
    let Ok(tasks) = fs::read_dir(delegation_dir) else {
        return 0;
    };
    let mut removed = 0;
    for task in tasks.flatten() {
        if !task.file_type().is_ok_and(|t| t.is_dir()) {
            continue;
        }
        let Ok(entries) = fs::read_dir(task.path()) else {
            continue;
        };
        for entry in entries.flatten() {
            let leftover = entry.file_name().to_str().is_some_and(is_leftover_temp)
                && entry.file_type().is_ok_and(|t| t.is_file());
            if leftover && fs::remove_file(entry.path()).is_ok() {
                removed += 1;
            }
        }
    }
    removed
}

/// A new 0600 file named `.<final name>.<16 hex digits>.tmp` in `dir`. The suffix comes from
/// the standard library's randomly keyed `SipHash` over the pid, the clock and a counter, so
/// another local user cannot guess it in advance; `O_EXCL` makes a guessed or colliding name
/// cost a retry, never a write through someone else's file or symlink.
fn create_temp(dir: &Path, final_name: &str) -> Result<(PathBuf, File), (PathBuf, io::Error)> {
    let mut attempt = 1;
    loop {
        let temp = dir.join(format!(".{final_name}.{:016x}.tmp", temp_suffix()));
        match create_private_file(&temp, false) {
            Ok(file) => return Ok((temp, file)),
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists && attempt < TEMP_NAME_ATTEMPTS => {
                attempt += 1;
            }
            Err(e) => return Err((temp, e)),
        }
    }
}

fn temp_suffix() -> u64 {
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let mut hasher = RandomState::new().build_hasher();
    hasher.write_u64(COUNTER.fetch_add(1, Ordering::Relaxed));
    hasher.write_u32(std::process::id());
    let nanos = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos());
    hasher.write_u128(nanos);
    hasher.finish()
}

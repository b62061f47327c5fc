//! Task directories and artifact publication (contract "Full output artifacts and previews").
//!
//! A task directory and its `agent/` and `transcripts/` are created exclusively with mode
//! 0700: an existing entry is an error and stays untouched. `result.txt` and
//! `structured.json` are published by writing a new 0600 temporary file (`O_EXCL`) and
//! hard-linking it to the fixed name; `link(2)` refuses an existing destination, so nothing
//! is ever overwritten, and a reader never sees a partly written artifact under the fixed
//! name. No fsync: this is atomic publication, not a crash-durability promise.

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

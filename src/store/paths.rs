//! Where delegation data lives (DESIGN.md §6).
//!
//! ```text
//! <agentDir>/sessions/--<encoded cwd>--/        parent session dir (pi's), unless configured
//!   delegation/<parent-id>/                     one parent runtime
//!     events.jsonl                              registry events, evidence only
//!     <task-id>[-g<N>]/                         one generation
//!       agent/  transcripts/  result.txt  structured.json
//! ```
//!
//! The session-dir encoding follows pi 1.6.0 (`getDefaultSessionDirPath` in
//! `dist/core/session-manager.js`): resolve the cwd to an absolute, lexically normalized path,
//! drop one leading `/` or `\`, replace every `/`, `\` and `:` with `-`, and wrap the result in
//! `--`. Nothing else is escaped: spaces, dots, dashes and non-ASCII text stay as they are, so
//! `/a-b` and `/a/b` share a directory in pi too.

use std::path::{Component, Path, PathBuf};

use uuid::Uuid;

use super::error::StoreError;
use crate::core::ids::ChildRef;

/// `<agentDir>/sessions`.
pub const SESSIONS_DIR: &str = "sessions";
/// `<sessionDir>/delegation`.
pub const DELEGATION_DIR: &str = "delegation";
/// Per-task directory handed to the worker as its agent directory.
pub const AGENT_DIR: &str = "agent";
/// Per-task directory given to pi as `--session-dir`.
pub const TRANSCRIPTS_DIR: &str = "transcripts";
/// The worker's session file (its transcript) inside [`TRANSCRIPTS_DIR`].
pub const SESSION_FILE: &str = "session.jsonl";
/// Exact text of the last assistant message.
pub const RESULT_TEXT: &str = "result.txt";
/// The first accepted structured value.
pub const STRUCTURED_JSON: &str = "structured.json";
/// Append-only registry events of one parent runtime.
pub const EVENT_LOG: &str = "events.jsonl";

/// pi's directory name for a working directory, for example `/home/me/my proj` becomes
/// `--home-me-my proj--`. `resolved_cwd` must already be absolute and normalized
/// (see [`resolve`]). Non-UTF-8 bytes become U+FFFD, as they do when Node reads the cwd.
pub fn encode_cwd(resolved_cwd: &Path) -> String {
    let text = resolved_cwd.to_string_lossy();
    let without_root = text
        .strip_prefix('/')
        .or_else(|| text.strip_prefix('\\'))
        .unwrap_or(&text);
    let body: String = without_root
        .chars()
        .map(|c| {
            if matches!(c, '/' | '\\' | ':') {
                '-'
            } else {
                c
            }
        })
        .collect();
    format!("--{body}--")
}

/// pi's default session directory for `cwd`: `<agentDir>/sessions/--<encoded cwd>--`.
/// Both paths are resolved as pi resolves them (absolute against the current directory,
/// `.`/`..` removed lexically, symlinks not followed). Nothing is created.
pub fn default_session_dir(agent_dir: &Path, cwd: &Path) -> Result<PathBuf, StoreError> {
    let agent_dir = resolve(agent_dir)?;
    let cwd = resolve(cwd)?;
    Ok(agent_dir.join(SESSIONS_DIR).join(encode_cwd(&cwd)))
}

/// The parent session directory: the configured one when given, else pi's default.
pub fn parent_session_dir(
    configured: Option<&Path>,
    agent_dir: &Path,
    cwd: &Path,
) -> Result<PathBuf, StoreError> {
    match configured {
        Some(dir) => resolve(dir),
        None => default_session_dir(agent_dir, cwd),
    }
}

/// `<sessionDir>/delegation/<parent-id>`: everything one parent runtime writes.
pub fn delegation_dir(session_dir: &Path, parent_id: Uuid) -> PathBuf {
    session_dir
        .join(DELEGATION_DIR)
        .join(parent_id.hyphenated().to_string())
}

/// `<delegationDir>/<task-id>` for generation 1, `<task-id>-g<N>` after.
pub fn task_dir(delegation_dir: &Path, child: ChildRef) -> PathBuf {
    delegation_dir.join(child.directory_name())
}

/// `<delegationDir>/events.jsonl`.
pub fn event_log_path(delegation_dir: &Path) -> PathBuf {
    delegation_dir.join(EVENT_LOG)
}

/// `dir/name` for one of the fixed names above, checked at runtime to be a single plain
/// component so no name can ever walk out of its directory.
pub fn fixed_child(dir: &Path, name: &str) -> Result<PathBuf, StoreError> {
    let mut components = Path::new(name).components();
    let plain = matches!(components.next(), Some(Component::Normal(c)) if c == name)
        && components.next().is_none()
        && !name.contains('/')
        && !name.contains('\0');
    if plain {
        Ok(dir.join(name))
    } else {
        Err(StoreError::InvalidFixedName {
            name: name.to_owned(),
        })
    }
}

/// Node's `path.resolve` for one argument: relative paths are joined to the current
/// directory, then `.`, `..`, repeated and trailing separators are removed without touching
/// the file system (`..` at the root stays at the root).
pub fn resolve(path: &Path) -> Result<PathBuf, StoreError> {
    if path.is_absolute() {
        return Ok(normalize_lexically(path));
    }
    let base = std::env::current_dir().map_err(|source| StoreError::CurrentDir {
        path: path.to_owned(),
        source,
    })?;
    Ok(normalize_lexically(&base.join(path)))
}

fn normalize_lexically(path: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for component in path.components() {
        match component {
            Component::Prefix(_) | Component::RootDir | Component::Normal(_) => {
                out.push(component);
            }
            Component::CurDir => {}
            Component::ParentDir => {
                // `pop` refuses to remove the root, matching `path.resolve("/..") == "/"`.
                out.pop();
            }
        }
    }
    out
}

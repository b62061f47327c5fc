//! pi session files (`*.jsonl`, format version 3): read them, find the newest one for a
//! directory, append entries in pi's exact format, and create a successor file.
//!
//! # What pi 1.6 does (read from `dist/core/session-manager.js`)
//! * Line 1 is the header `{"type":"session","version":3,"id","timestamp","cwd",
//!   "parentSession"?}`; every other line is one entry with `type`, an 8-hex `id`, `parentId`
//!   (`null` for a root) and an ISO `timestamp`.
//! * Reading splits on `\n`, skips blank and malformed lines, and requires the first parsed
//!   line to be a `session` header with a string `id`. Invalid UTF-8 is replaced (Node's
//!   `StringDecoder`). The leaf after loading is the **last** entry of the file.
//! * Writing appends `JSON.stringify(entry) + "\n"` per entry; a file that does not end in a
//!   newline is repaired by appending one. `custom` entries are written with the keys
//!   `type, customType, data, id, parentId, timestamp`; `custom_message` entries with
//!   `type, customType, content, display, details?, id, parentId, timestamp`.
//! * pi holds **no lock** and keeps no descriptor open between writes (`appendFileSync`), so
//!   another process's liveness has to be inferred: see [`live`].
//!
//! # What this module guarantees
//! * Unknown entry types and unknown fields are kept as raw JSON and never rewritten.
//! * The header and earlier lines are never rewritten: appends use `O_APPEND`, one `write` of
//!   whole lines, then `fsync`. A failed write is rolled back to the previous length, so the
//!   file keeps every original byte and gains no torn line.
//! * An append refuses a file that changed size since it was read (someone else wrote).

mod append;
pub mod live;
mod time;

use std::fs;
use std::io;
use std::path::{Path, PathBuf};

use serde_json::Value;

pub use append::{NewEntry, append_entries, create_session, new_session_id};
pub use time::iso_timestamp;

/// The only format version Slate appends to (pi migrates older files by rewriting them).
pub const SESSION_VERSION: u64 = 3;
/// Larger files are refused rather than read without bound.
pub const MAX_SESSION_BYTES: u64 = 256 * 1024 * 1024;

/// A session-file failure; each names the file.
#[derive(Debug, thiserror::Error)]
pub enum SessionError {
    #[error("cannot read session file {}: {source}", path.display())]
    Read { path: PathBuf, source: io::Error },
    #[error("session file {} is larger than {MAX_SESSION_BYTES} bytes", path.display())]
    TooLarge { path: PathBuf },
    /// pi's own rule: the first parsed line must be a `session` header with a string `id`.
    #[error("{} is not a pi session file: {reason}", path.display())]
    NotASession { path: PathBuf, reason: String },
    #[error(
        "{} has session format version {found}; Slate appends only to version {SESSION_VERSION} \
         (open it once with pi 1.6, which migrates it)",
        path.display()
    )]
    Version { path: PathBuf, found: String },
    #[error("cannot write session file {}: {source}", path.display())]
    Write { path: PathBuf, source: io::Error },
    #[error(
        "session file {} changed since it was read ({expected} bytes then, {found} now); \
         nothing was appended — read it again",
        path.display()
    )]
    Changed {
        path: PathBuf,
        expected: u64,
        found: u64,
    },
    #[error("no pi session for {} in {}", cwd.display(), dir.display())]
    NoSession { dir: PathBuf, cwd: PathBuf },
    #[error(
        "session file {} is open in a live pi process (pid {pid}: {why}); Slate never writes \
         a session that pi may append to — finish or quit that pi first",
        path.display()
    )]
    Live {
        path: PathBuf,
        pid: u32,
        why: String,
    },
    /// Another `slate handoff` or `slate resume` holds the session's lock ([`lock`]).
    #[error(
        "session file {} is being handed off or resumed by another slate process; nothing \
         was written — run the command again once that one has finished",
        path.display()
    )]
    Busy { path: PathBuf },
    #[error("{0}")]
    Store(#[from] crate::store::StoreError),
}

/// An exclusive advisory lock (`flock`) on a session file, held by one `slate handoff` or
/// `slate resume` from before it reads the session until its last write: a handoff is
/// several writes (attempt, successor, consumed purpose), and a second one reading in
/// between would take the pending attempt for a failed one and write another successor.
/// Released when dropped (or when the process ends). pi takes no lock, so this orders Slate's
/// own writers only; a live pi is refused by the [`live`] probe instead.
#[derive(Debug)]
pub struct SessionLock(
    #[allow(dead_code, reason = "held for its drop")] nix::fcntl::Flock<fs::File>,
);

/// Take [`SessionLock`] on `path` without waiting: a held lock is [`SessionError::Busy`].
pub fn lock(path: &Path) -> Result<SessionLock, SessionError> {
    use nix::fcntl::{Flock, FlockArg};
    let file = fs::File::open(path).map_err(|source| SessionError::Read {
        path: path.to_owned(),
        source,
    })?;
    match Flock::lock(file, FlockArg::LockExclusiveNonblock) {
        Ok(locked) => Ok(SessionLock(locked)),
        Err((_, nix::errno::Errno::EWOULDBLOCK)) => Err(SessionError::Busy {
            path: path.to_owned(),
        }),
        Err((_, errno)) => Err(SessionError::Read {
            path: path.to_owned(),
            source: io::Error::from(errno),
        }),
    }
}

/// The header line.
#[derive(Clone, Debug, PartialEq)]
pub struct Header {
    pub id: String,
    /// `version` as written (absent means 1 to pi).
    pub version: Option<u64>,
    pub timestamp: Option<String>,
    pub cwd: Option<String>,
    pub parent_session: Option<String>,
    pub raw: Value,
}

/// One entry line, kept whole.
#[derive(Clone, Debug, PartialEq)]
pub struct Entry {
    /// 1-based line number in the file.
    pub line: usize,
    pub kind: String,
    pub id: Option<String>,
    pub parent_id: Option<String>,
    pub raw: Value,
}

impl Entry {
    /// `customType` of a `custom` or `custom_message` entry.
    pub fn custom_type(&self) -> Option<&str> {
        match self.kind.as_str() {
            "custom" | "custom_message" => self.raw.get("customType").and_then(Value::as_str),
            _ => None,
        }
    }

    /// `data` of a `custom` entry with this `customType`.
    pub fn custom_data(&self, custom_type: &str) -> Option<&Value> {
        (self.kind == "custom" && self.custom_type() == Some(custom_type))
            .then(|| self.raw.get("data"))
            .flatten()
    }
}

/// A parsed session file.
#[derive(Clone, Debug, PartialEq)]
pub struct Session {
    pub path: PathBuf,
    pub header: Header,
    pub entries: Vec<Entry>,
    /// Byte length of what was parsed (appends check it is unchanged).
    pub len: u64,
    /// Whether the last byte is `\n` (else the next append starts with one, as pi repairs).
    pub ends_with_newline: bool,
    /// Lines pi would skip (blank or malformed), 1-based.
    pub skipped_lines: Vec<usize>,
}

impl Session {
    /// pi's leaf after loading: the id of the last entry.
    pub fn leaf(&self) -> Option<&str> {
        self.entries.last().and_then(|e| e.id.as_deref())
    }

    /// Entries from the root to `leaf` along `parentId` (cycles and dangling parents stop
    /// the walk). A repeated id resolves to its last occurrence, as pi's index does.
    pub fn branch(&self) -> Vec<&Entry> {
        let index: std::collections::HashMap<&str, &Entry> = self
            .entries
            .iter()
            .filter_map(|e| Some((e.id.as_deref()?, e)))
            .collect();
        let mut out = Vec::new();
        let mut seen = std::collections::HashSet::new();
        let mut next = self.entries.last();
        while let Some(entry) = next {
            if let Some(id) = entry.id.as_deref()
                && !seen.insert(id)
            {
                break;
            }
            out.push(entry);
            next = entry
                .parent_id
                .as_deref()
                .and_then(|p| index.get(p).copied());
        }
        out.reverse();
        out
    }

    /// The latest `model_change` on the branch as `provider/id`.
    pub fn model(&self) -> Option<String> {
        self.branch().iter().rev().find_map(|e| {
            (e.kind == "model_change").then_some(())?;
            let provider = e.raw.get("provider")?.as_str()?;
            let id = e.raw.get("modelId")?.as_str()?;
            Some(format!("{provider}/{id}"))
        })
    }

    /// The latest `thinking_level_change` on the branch.
    pub fn thinking_level(&self) -> Option<String> {
        self.branch().iter().rev().find_map(|e| {
            (e.kind == "thinking_level_change").then_some(())?;
            Some(e.raw.get("thinkingLevel")?.as_str()?.to_owned())
        })
    }

    /// Every entry id in the file (new ids must differ from all of them).
    pub fn ids(&self) -> std::collections::HashSet<&str> {
        self.entries
            .iter()
            .filter_map(|e| e.id.as_deref())
            .collect()
    }

    /// Refuse to append unless the header says version 3.
    pub fn check_appendable(&self) -> Result<(), SessionError> {
        match self.header.version {
            Some(SESSION_VERSION) => Ok(()),
            other => Err(SessionError::Version {
                path: self.path.clone(),
                found: other.map_or_else(|| "1 (absent)".to_owned(), |v| v.to_string()),
            }),
        }
    }
}

/// Parse session bytes the way pi 1.6 loads them. Never panics, whatever the bytes.
pub fn parse(path: &Path, bytes: &[u8]) -> Result<Session, SessionError> {
    let not_a_session = |reason: &str| SessionError::NotASession {
        path: path.to_owned(),
        reason: reason.to_owned(),
    };
    let mut header: Option<Header> = None;
    let mut entries = Vec::new();
    let mut skipped_lines = Vec::new();
    let lines: Vec<&[u8]> = bytes.split(|b| *b == b'\n').collect();
    let count = lines.len();
    for (index, line) in lines.into_iter().enumerate() {
        let number = index + 1;
        // The empty piece after a final newline is not a line.
        if index + 1 == count && line.is_empty() {
            continue;
        }
        let text = String::from_utf8_lossy(line);
        if text.trim().is_empty() {
            skipped_lines.push(number);
            continue;
        }
        let Ok(value) = serde_json::from_str::<Value>(&text) else {
            skipped_lines.push(number);
            continue;
        };
        let kind = value.get("type").and_then(Value::as_str).map(str::to_owned);
        if header.is_none() {
            let id = value.get("id").and_then(Value::as_str);
            return_if_not_header(kind.as_deref(), id).map_err(|r| not_a_session(&r))?;
            header = Some(Header {
                id: id.unwrap_or_default().to_owned(),
                version: value.get("version").and_then(Value::as_u64),
                timestamp: text_field(&value, "timestamp"),
                cwd: text_field(&value, "cwd"),
                parent_session: text_field(&value, "parentSession"),
                raw: value,
            });
            continue;
        }
        entries.push(Entry {
            line: number,
            kind: kind.unwrap_or_default(),
            id: text_field(&value, "id"),
            parent_id: text_field(&value, "parentId"),
            raw: value,
        });
    }
    let header = header.ok_or_else(|| not_a_session("it holds no JSON line"))?;
    Ok(Session {
        path: path.to_owned(),
        header,
        entries,
        len: u64::try_from(bytes.len()).unwrap_or(u64::MAX),
        ends_with_newline: bytes.last().is_none_or(|b| *b == b'\n'),
        skipped_lines,
    })
}

fn return_if_not_header(kind: Option<&str>, id: Option<&str>) -> Result<(), String> {
    match (kind, id) {
        (Some("session"), Some(_)) => Ok(()),
        (Some("session"), None) => {
            Err("the first line is a session header without a string `id`".to_owned())
        }
        _ => Err("the first JSON line is not a `session` header".to_owned()),
    }
}

fn text_field(value: &Value, key: &str) -> Option<String> {
    value.get(key).and_then(Value::as_str).map(str::to_owned)
}

/// Read and parse one session file.
pub fn read(path: &Path) -> Result<Session, SessionError> {
    let meta = fs::metadata(path).map_err(|source| SessionError::Read {
        path: path.to_owned(),
        source,
    })?;
    if meta.len() > MAX_SESSION_BYTES {
        return Err(SessionError::TooLarge {
            path: path.to_owned(),
        });
    }
    let bytes = fs::read(path).map_err(|source| SessionError::Read {
        path: path.to_owned(),
        source,
    })?;
    parse(path, &bytes)
}

/// pi's `--continue` choice in `dir`, filtered to sessions whose header `cwd` is `cwd` (pi
/// filters so only for a `--session-dir` other than the default one): see
/// [`most_recent_session`].
pub fn newest_for_cwd(dir: &Path, cwd: &Path) -> Result<PathBuf, SessionError> {
    most_recent_session(dir, cwd, true)
}

/// pi 1.6's `--continue` choice, exactly. From `findMostRecentSession(sessionDir, cwd)` in
/// `dist/core/session-manager.js` (called by `SessionManager.continueRecent`):
///
/// ```js
/// readdirSync(dir).filter(f => f.endsWith(".jsonl")).map(f => join(dir, f))
///     .map(path => ({ path, mtime: statSync(path).mtimeMs }))
///     .sort((a, b) => b.mtime - a.mtime);
/// // then the first whose header reads (and, with a cwd, whose resolved header cwd equals it)
/// ```
///
/// * **Newest `mtimeMs` first**, where `mtimeMs` is Node's double `sec * 1e3 + nsec / 1e6`
///   (compared as that double, not as nanoseconds).
/// * **Ties keep directory order**: JavaScript's sort is stable, and Node's `readdirSync`
///   returns names sorted by byte value (libuv's `scandir` sorts with `strcmp`), so of two
///   sessions with the same mtime the one whose *name sorts first* wins — for pi's
///   `<timestamp>_<id>.jsonl` names, the *older* file.
/// * A `.jsonl` that cannot be `stat`ed throws inside pi's `try`, and pi then continues no
///   session at all (it starts a new one); so does this.
/// * `filter_cwd`: pi filters by the header's `cwd` only when given a session directory other
///   than the default for the cwd (`continueRecent`'s `filterCwd`); in the default directory
///   any readable header is taken.
pub fn most_recent_session(
    dir: &Path,
    cwd: &Path,
    filter_cwd: bool,
) -> Result<PathBuf, SessionError> {
    let none = || SessionError::NoSession {
        dir: dir.to_owned(),
        cwd: cwd.to_owned(),
    };
    let Ok(listing) = fs::read_dir(dir) else {
        return Err(none());
    };
    let mut files: Vec<(f64, PathBuf)> = Vec::new();
    for entry in listing {
        let Ok(entry) = entry else {
            return Err(none());
        };
        let path = entry.path();
        if !entry.file_name().as_encoded_bytes().ends_with(b".jsonl") {
            continue;
        }
        let Some(mtime) = fs::metadata(&path).ok().and_then(|m| mtime_ms(&m)) else {
            return Err(none());
        };
        files.push((mtime, path));
    }
    files.sort_by(|a, b| {
        b.0.total_cmp(&a.0)
            .then_with(|| a.1.as_os_str().cmp(b.1.as_os_str()))
    });
    let wanted = crate::store::paths::resolve(cwd)?;
    for (_, path) in files {
        let Ok(head) = read_header(&path) else {
            continue;
        };
        let matches = !filter_cwd
            || head.cwd.as_deref().is_some_and(|c| {
                !c.is_empty()
                    && crate::store::paths::resolve(Path::new(c)).is_ok_and(|c| c == wanted)
            });
        if matches {
            return Ok(path);
        }
    }
    Err(none())
}

/// Node's `Stats.mtimeMs`: `sec * 1e3 + nsec / 1e6` as a double.
#[allow(
    clippy::cast_precision_loss,
    reason = "the same double arithmetic as Node, precision loss included"
)]
fn mtime_ms(meta: &fs::Metadata) -> Option<f64> {
    use std::os::unix::fs::MetadataExt as _;
    let _ = meta.modified().ok()?;
    Some(meta.mtime() as f64 * 1e3 + meta.mtime_nsec() as f64 / 1e6)
}

/// Makes `path` the session pi's `--continue` (and [`most_recent_session`]) takes in its
/// directory: when another `*.jsonl` there has an mtime at least as new (files written in the
/// same clock tick share an mtime, and pi then takes the one whose name sorts first — the
/// older session), `path`'s mtime is set one millisecond past the newest of them. Returns
/// whether it had to change anything.
pub fn make_most_recent(path: &Path) -> io::Result<bool> {
    let dir = path.parent().unwrap_or(Path::new("."));
    let own = fs::metadata(path)?;
    let own_ms = mtime_ms(&own).unwrap_or(f64::NEG_INFINITY);
    let mut newest: Option<(f64, std::time::SystemTime)> = None;
    for entry in fs::read_dir(dir)?.flatten() {
        let other = entry.path();
        if other == path || !entry.file_name().as_encoded_bytes().ends_with(b".jsonl") {
            continue;
        }
        let Ok(meta) = fs::metadata(&other) else {
            continue;
        };
        if let (Some(ms), Ok(at)) = (mtime_ms(&meta), meta.modified())
            && newest.is_none_or(|(n, _)| ms > n)
        {
            newest = Some((ms, at));
        }
    }
    let Some((_, newest_at)) = newest.filter(|(ms, _)| *ms >= own_ms) else {
        return Ok(false);
    };
    let file = fs::OpenOptions::new().append(true).open(path)?;
    file.set_modified(newest_at + std::time::Duration::from_millis(1))?;
    Ok(true)
}

/// The header only (first parsed line), reading at most 1 MiB like pi's discovery.
fn read_header(path: &Path) -> Result<Header, SessionError> {
    use std::io::Read as _;
    let file = fs::File::open(path).map_err(|source| SessionError::Read {
        path: path.to_owned(),
        source,
    })?;
    let mut bytes = Vec::new();
    file.take(1024 * 1024)
        .read_to_end(&mut bytes)
        .map_err(|source| SessionError::Read {
            path: path.to_owned(),
            source,
        })?;
    let first = bytes
        .split(|b| *b == b'\n')
        .find(|l| !String::from_utf8_lossy(l).trim().is_empty())
        .unwrap_or_default();
    parse(path, first).map(|s| s.header)
}

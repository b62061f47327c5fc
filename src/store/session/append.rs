//! Writing session entries exactly as pi 1.6 writes them.

use std::collections::HashSet;
use std::fs::{File, OpenOptions};
use std::io::Write as _;
use std::path::{Path, PathBuf};

use serde_json::Value;

use super::{Entry, SESSION_VERSION, Session, SessionError, iso_timestamp};
use crate::store::private::{create_private_file, ensure_private_dir_chain};

/// One entry to append; ids, `parentId` and `timestamp` are filled in when written.
#[derive(Clone, Debug, PartialEq)]
pub enum NewEntry {
    /// Extension state; not part of the model's context.
    Custom {
        custom_type: String,
        data: Value,
    },
    /// An extension message in the model's context; `display: false` hides it in pi's TUI.
    CustomMessage {
        custom_type: String,
        content: String,
        display: bool,
        details: Option<Value>,
    },
    ModelChange {
        provider: String,
        model_id: String,
    },
    ThinkingLevelChange {
        level: String,
    },
}

impl NewEntry {
    pub fn custom(custom_type: &str, data: Value) -> Self {
        Self::Custom {
            custom_type: custom_type.to_owned(),
            data,
        }
    }

    /// The line pi would write (keys in pi's order), without the newline.
    fn line(&self, id: &str, parent: Option<&str>, timestamp: &str) -> String {
        let id = j(&id);
        let parent = j(&parent);
        let ts = j(&timestamp);
        match self {
            Self::Custom { custom_type, data } => format!(
                r#"{{"type":"custom","customType":{},"data":{},"id":{id},"parentId":{parent},"timestamp":{ts}}}"#,
                j(&custom_type),
                j(data)
            ),
            Self::CustomMessage {
                custom_type,
                content,
                display,
                details,
            } => {
                let details = details
                    .as_ref()
                    .map(|d| format!(r#","details":{}"#, j(d)))
                    .unwrap_or_default();
                format!(
                    r#"{{"type":"custom_message","customType":{},"content":{},"display":{display}{details},"id":{id},"parentId":{parent},"timestamp":{ts}}}"#,
                    j(&custom_type),
                    j(&content),
                )
            }
            Self::ModelChange { provider, model_id } => format!(
                r#"{{"type":"model_change","id":{id},"parentId":{parent},"timestamp":{ts},"provider":{},"modelId":{}}}"#,
                j(&provider),
                j(&model_id)
            ),
            Self::ThinkingLevelChange { level } => format!(
                r#"{{"type":"thinking_level_change","id":{id},"parentId":{parent},"timestamp":{ts},"thinkingLevel":{}}}"#,
                j(&level)
            ),
        }
    }
}

/// One JSON value as text, escaped like every JSON Slate writes (`crate::json`).
fn j<T: serde::Serialize + ?Sized>(value: &T) -> String {
    crate::json::to_string(value).unwrap_or_else(|_| "null".to_owned())
}

/// A fresh session id (a UUID, which pi accepts: `[A-Za-z0-9][A-Za-z0-9._-]*[A-Za-z0-9]`).
pub fn new_session_id() -> String {
    uuid::Uuid::new_v4().hyphenated().to_string()
}

/// pi's `generateId`: the first 8 hex digits of a random UUID, unique within the file.
fn entry_id(taken: &HashSet<String>) -> String {
    loop {
        let id: String = uuid::Uuid::new_v4().simple().to_string()[..8].to_owned();
        if !taken.contains(&id) {
            return id;
        }
    }
}

/// Lines for `entries`, chained from `leaf`; returns the text and the new entries.
fn render(
    entries: &[NewEntry],
    mut leaf: Option<String>,
    taken: &mut HashSet<String>,
    now_ms: u64,
    first_line: usize,
) -> (String, Vec<Entry>) {
    let timestamp = iso_timestamp(now_ms);
    let mut text = String::new();
    let mut parsed = Vec::new();
    for (n, entry) in entries.iter().enumerate() {
        let id = entry_id(taken);
        taken.insert(id.clone());
        let line = entry.line(&id, leaf.as_deref(), &timestamp);
        let raw: Value = serde_json::from_str(&line).unwrap_or(Value::Null);
        parsed.push(Entry {
            line: first_line + n,
            kind: raw
                .get("type")
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_owned(),
            id: Some(id.clone()),
            parent_id: leaf.clone(),
            raw,
        });
        text.push_str(&line);
        text.push('\n');
        leaf = Some(id);
    }
    (text, parsed)
}

/// Append `entries` to `session`'s file as pi would: `parentId` = the current leaf, then each
/// new entry; one `write` of whole lines through `O_APPEND`, then `fsync`. The file must
/// still have the length it had when read. On failure the file is cut back to that length.
/// On success `session` is updated to include the new entries. Returns the new ids.
pub fn append_entries(
    session: &mut Session,
    entries: &[NewEntry],
    now_ms: u64,
) -> Result<Vec<String>, SessionError> {
    session.check_appendable()?;
    if entries.is_empty() {
        return Ok(Vec::new());
    }
    let path = session.path.clone();
    let write_error = |source| SessionError::Write {
        path: path.clone(),
        source,
    };
    let mut file = OpenOptions::new()
        .append(true)
        .open(&path)
        .map_err(write_error)?;
    let found = file.metadata().map_err(write_error)?.len();
    if found != session.len {
        return Err(SessionError::Changed {
            path: path.clone(),
            expected: session.len,
            found,
        });
    }
    let mut taken: HashSet<String> = session.ids().into_iter().map(str::to_owned).collect();
    let repair = !session.ends_with_newline;
    let next_line = session.entries.last().map_or(2, |e| e.line + 1) + usize::from(repair);
    let (text, parsed) = render(
        entries,
        session.leaf().map(str::to_owned),
        &mut taken,
        now_ms,
        next_line,
    );
    let mut bytes = Vec::with_capacity(text.len() + 1);
    if repair {
        bytes.push(b'\n');
    }
    bytes.extend_from_slice(text.as_bytes());
    if let Err(source) = file.write_all(&bytes).and_then(|()| file.sync_all()) {
        // Put the file back as it was: no torn line, every original byte kept.
        let _ = file.set_len(session.len);
        let _ = file.sync_all();
        return Err(write_error(source));
    }
    session.len += u64::try_from(bytes.len()).unwrap_or(u64::MAX);
    session.ends_with_newline = true;
    let ids = parsed.iter().filter_map(|e| e.id.clone()).collect();
    session.entries.extend(parsed);
    Ok(ids)
}

/// Create a new session file in `dir` (made 0700 where missing), named as pi names them
/// (`<timestamp with - for : and .>_<id>.jsonl`), mode 0600, created exclusively, holding the
/// version-3 header (with `parentSession` when given) and `entries` chained from a root.
pub fn create_session(
    dir: &Path,
    id: &str,
    cwd: &str,
    parent_session: Option<&Path>,
    entries: &[NewEntry],
    now_ms: u64,
) -> Result<Session, SessionError> {
    let timestamp = iso_timestamp(now_ms);
    let name = format!("{}_{id}.jsonl", timestamp.replace([':', '.'], "-"));
    ensure_private_dir_chain(dir)?;
    let path: PathBuf = dir.join(name);
    let write_error = |source| SessionError::Write {
        path: path.clone(),
        source,
    };
    // pi's key order: type, version, id, timestamp, cwd, parentSession.
    let mut text = format!(
        r#"{{"type":"session","version":{SESSION_VERSION},"id":{},"timestamp":{},"cwd":{}"#,
        j(&id),
        j(&timestamp),
        j(&cwd)
    );
    if let Some(parent) = parent_session {
        text.push_str(r#","parentSession":"#);
        text.push_str(&j(&parent.to_string_lossy()));
    }
    text.push_str("}\n");
    let (body, _) = render(entries, None, &mut HashSet::new(), now_ms, 2);
    text.push_str(&body);
    let mut file: File = create_private_file(&path, false).map_err(write_error)?;
    if let Err(source) = file
        .write_all(text.as_bytes())
        .and_then(|()| file.sync_all())
    {
        drop(file);
        let _ = std::fs::remove_file(&path);
        return Err(write_error(source));
    }
    if let Ok(d) = File::open(dir) {
        let _ = d.sync_all();
    }
    super::parse(&path, text.as_bytes())
}

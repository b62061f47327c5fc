//! Checked task-file input (contract: "Checked task-file input").
//!
//! A task may give `taskFile` instead of `assignment`: a path relative to the task's
//! **workspace** (its resolved `cwd`, see [`super::workspace`]), never the session or
//! transcript directory. [`check_task_file`] applies every rule, in this order, and returns
//! the accepted text as an in-memory snapshot ([`TaskText`]); later edits of the file never
//! reach a queued task.
//!
//! 1. **Spelling**: non-empty, relative, no `~`/`@` shorthand or look-alike spaces, and no
//!    `..` (traversal), `.`, hidden (leading `.`) or `node_modules` component. Refused
//!    spellings never touch the file system.
//! 2. **Resolved target**: the canonical path must lie inside the canonical workspace
//!    (symlinks that escape fail; aliases that stay inside are fine), and its
//!    workspace-relative components obey the same hidden/`node_modules` rule, so an
//!    ordinary-looking symlink cannot alias `.git/…` or `node_modules/…`.
//! 3. **Metadata**: a regular file of `TASK_FILE_MIN_BYTES..=TASK_FILE_MAX_BYTES` bytes.
//! 4. **Read**: at most `TASK_FILE_MAX_BYTES + 1` bytes, then the canonical path and the
//!    file's identity (dev, ino), size, mtime and ctime are taken again and must equal the
//!    values from before the read, and the byte count must equal the size; otherwise the
//!    file "changed during preflight". This catches ordinary edits, not hostile races.
//! 5. **Content**: one complete block of text, exactly what pi's `read` would return
//!    untruncated: not an image, valid UTF-8, no NUL, no U+FFFD (so a literal replacement
//!    character is refused too), not empty or whitespace-only, at most [`MAX_LINES`] lines.
//!
//! `node_modules` is matched ASCII-case-insensitively, so `Node_Modules` on a
//! case-insensitive file system cannot alias it.
//!
//! # Lines
//! Lines are counted as pi's `read` counts them before its native truncation: the text split
//! at every `\n` (a lone `\r` is not a break, `\r\n` is one), i.e. `1 + count('\n')`. A final
//! newline therefore starts one more, empty, line: 2000 newline-terminated lines are 2001
//! lines to pi, whose `read` would show 2000 and add a "Showing lines 1-2000 of 2001"
//! notice — truncated, so refused here. At most 1999 `\n` are accepted. pi's byte limit
//! (`PREVIEW_BYTES`, 50 KiB) cannot be reached by a file within `TASK_FILE_MAX_BYTES`; a
//! compile-time assertion keeps it that way.
//!
//! # Content comes through `FsView`, not a root read dispatcher
//! The contract's extension obtains the text through the root's builtin `read` tool
//! (`ctx.executeTool("read")`) so that pi's path validation, permission denials and result
//! hooks apply. Slate has no such dispatcher: the coordinator *is* the parent runtime, not an
//! extension inside a pi process, and no hook chain or tool-level permission layer exists
//! between it and the file system. It reads in its own process through [`FsView`] (the real
//! `store::fs::RealFs`), which is equivalent for every rule the contract derives from the
//! read: the accept/refuse decision on the bytes (truncation, lines, images, NUL, U+FFFD,
//! blank text) is reproduced exactly, reading happens only after all path and metadata rules
//! passed, it is bounded to one byte over the size limit, and OS read permission is that of
//! the same user pi would run as. What Slate does not reproduce is hook transformation of the
//! text (there are no hooks) and the tool-budget charge of the read; the read-grant checks of
//! the initiator and its ancestors are admission's job before it calls this function.

use std::path::{Component, Path, PathBuf};

use crate::core::bounds::{PREVIEW_BYTES, PREVIEW_LINES, TASK_FILE_MAX_BYTES, TASK_FILE_MIN_BYTES};
use crate::policy::Problem;
use crate::policy::fs_view::{FileKind, FileMeta, FsView};
use crate::policy::workspace::shorthand_problems;

/// pi's native `read` line limit (`DEFAULT_MAX_LINES`); see the module doc for how lines
/// are counted.
pub const MAX_LINES: usize = PREVIEW_LINES;

// pi's byte truncation (`DEFAULT_MAX_BYTES`) must be unreachable for an accepted size, or a
// byte-limit check would be needed here too.
const _: () = assert!(TASK_FILE_MAX_BYTES < PREVIEW_BYTES as u64);

/// An accepted task file: its canonical path and the text read at admission.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TaskText {
    pub path: PathBuf,
    pub text: String,
}

/// Lines as pi's `read` counts them: `1 + count('\n')`.
pub fn line_count(text: &str) -> usize {
    1 + text.bytes().filter(|&b| b == b'\n').count()
}

/// Check `spelling` (the task's `taskFile`) against `workspace` (the task's canonical
/// workspace) and read it. `path` is the JSON path of the field, e.g. `$.tasks[0].taskFile`.
///
/// # Errors
/// Every problem of the first failing stage (spelling, target, metadata, read, content),
/// each naming `path`, the spelling and the rule.
pub fn check_task_file(
    spelling: &str,
    workspace: &Path,
    fs: &dyn FsView,
    path: &str,
) -> Result<TaskText, Vec<Problem>> {
    let problem = |rule: String| Problem::new(path, rule).value(spelling);
    let one = |rule: String| vec![problem(rule)];

    let spelled = spelling_problems(spelling);
    if !spelled.is_empty() {
        return Err(spelled.into_iter().map(problem).collect());
    }

    let workspace = fs.canonicalize(workspace).map_err(|err| {
        one(format!(
            "the task workspace {} cannot be resolved: {err}",
            workspace.display()
        ))
    })?;
    let joined = workspace.join(spelling);
    let target = locate(&joined, &workspace, fs)
        .map_err(|rules| rules.into_iter().map(problem).collect::<Vec<_>>())?;

    // One byte over the limit tells "grew past the limit" from "exactly at the limit".
    let bytes = fs
        .read_at_most(&target.canonical, TASK_FILE_MAX_BYTES + 1)
        .map_err(|err| {
            one(format!(
                "{} cannot be read: {err}",
                target.canonical.display()
            ))
        })?;

    let changes = changes_since(&target, &joined, bytes.len(), fs);
    if !changes.is_empty() {
        return Err(one(format!(
            "changed during preflight ({}); do not edit or swap task files while a batch is \
             admitted",
            changes.join(", ")
        )));
    }

    match content_text(bytes) {
        Ok(text) => Ok(TaskText {
            path: target.canonical,
            text,
        }),
        Err(rules) => Err(rules.into_iter().map(problem).collect()),
    }
}

/// The rules a spelling breaks (each distinct rule once), before any file-system access.
fn spelling_problems(spelling: &str) -> Vec<String> {
    if spelling.is_empty() {
        return vec!["must be a non-empty path relative to the task workspace".to_owned()];
    }
    let mut rules = Vec::new();
    if spelling.starts_with('/') {
        rules.push(
            "must be relative to the task workspace; absolute paths are not allowed".to_owned(),
        );
    }
    rules.extend(shorthand_problems(spelling));
    for component in spelling.split('/').filter(|c| !c.is_empty()) {
        let rule = match component {
            ".." => "`..` traversal is not allowed".to_owned(),
            "." => {
                "`.` components are not allowed; spell the path from the workspace root".to_owned()
            }
            c if c.starts_with('.') => format!("hidden component `{c}` is not allowed"),
            c if is_node_modules(c.as_bytes()) => {
                format!("`{c}` components are not allowed")
            }
            _ => continue,
        };
        if !rules.contains(&rule) {
            rules.push(rule);
        }
    }
    rules
}

fn is_node_modules(name: &[u8]) -> bool {
    name.eq_ignore_ascii_case(b"node_modules")
}

/// The target as found before reading.
struct Target {
    canonical: PathBuf,
    meta: FileMeta,
}

/// Resolve `joined` and apply the target and metadata rules.
fn locate(joined: &Path, workspace: &Path, fs: &dyn FsView) -> Result<Target, Vec<String>> {
    let canonical = fs.canonicalize(joined).map_err(|err| {
        vec![match err.kind() {
            std::io::ErrorKind::NotFound => {
                format!(
                    "must be an existing file; {} does not exist",
                    joined.display()
                )
            }
            std::io::ErrorKind::NotADirectory => format!(
                "must be an existing file; a component of {} is not a directory",
                joined.display()
            ),
            _ => format!("{} cannot be resolved: {err}", joined.display()),
        }]
    })?;
    let Ok(relative) = canonical.strip_prefix(workspace) else {
        return Err(vec![format!(
            "resolves to {}, outside the task workspace {} (a symlink escapes it)",
            canonical.display(),
            workspace.display()
        )]);
    };
    let mut rules = Vec::new();
    for component in relative.components() {
        if let Component::Normal(name) = component {
            use std::os::unix::ffi::OsStrExt;
            let bytes = name.as_bytes();
            let shown = name.to_string_lossy();
            if bytes.starts_with(b".") {
                rules.push(format!(
                    "resolves to {}, whose component `{shown}` is hidden; an alias cannot reach \
                     hidden resources",
                    canonical.display()
                ));
            } else if is_node_modules(bytes) {
                rules.push(format!(
                    "resolves to {}, inside `{shown}`; an alias cannot reach node_modules",
                    canonical.display()
                ));
            }
        }
    }
    if !rules.is_empty() {
        return Err(rules);
    }
    let meta = fs.metadata(&canonical).map_err(|err| {
        vec![format!(
            "{} cannot be inspected: {err}",
            canonical.display()
        )]
    })?;
    match meta.kind {
        FileKind::File => {}
        FileKind::Dir => {
            return Err(vec![format!(
                "must be a regular file; {} is a directory",
                canonical.display()
            )]);
        }
        FileKind::Symlink | FileKind::Other => {
            return Err(vec![format!(
                "must be a regular file; {} is a special file (FIFO, socket or device)",
                canonical.display()
            )]);
        }
    }
    if !(TASK_FILE_MIN_BYTES..=TASK_FILE_MAX_BYTES).contains(&meta.len) {
        let has = if meta.len == 0 {
            "it is empty (0 bytes)".to_owned()
        } else {
            format!("it has {} bytes", meta.len)
        };
        return Err(vec![format!(
            "must hold {TASK_FILE_MIN_BYTES}–{TASK_FILE_MAX_BYTES} bytes; {has}"
        )]);
    }
    Ok(Target { canonical, meta })
}

/// What differs after the read from what was checked before it.
fn changes_since(
    before: &Target,
    joined: &Path,
    read_len: usize,
    fs: &dyn FsView,
) -> Vec<&'static str> {
    let mut changes = Vec::new();
    match fs.canonicalize(joined) {
        Ok(canonical) if canonical == before.canonical => {}
        Ok(_) => changes.push("it now resolves to another path"),
        Err(_) => changes.push("it can no longer be resolved"),
    }
    match fs.metadata(&before.canonical) {
        Ok(after) => {
            let was = before.meta;
            if (after.dev, after.ino) != (was.dev, was.ino) || after.kind != was.kind {
                changes.push("identity");
            }
            if after.len != was.len {
                changes.push("size");
            }
            if after.mtime_ns != was.mtime_ns {
                changes.push("mtime");
            }
            if after.ctime_ns != was.ctime_ns {
                changes.push("ctime");
            }
        }
        Err(_) => changes.push("it can no longer be inspected"),
    }
    if u64::try_from(read_len) != Ok(before.meta.len) {
        changes.push("the bytes read differ from its size");
    }
    changes
}

/// The image formats pi's `read` returns as image blocks, by signature.
fn image_kind(bytes: &[u8]) -> Option<&'static str> {
    if bytes.starts_with(b"\x89PNG\r\n\x1a\n") {
        Some("PNG")
    } else if bytes.starts_with(b"\xff\xd8\xff") {
        Some("JPEG")
    } else if bytes.starts_with(b"GIF87a") || bytes.starts_with(b"GIF89a") {
        Some("GIF")
    } else if bytes.len() >= 12 && bytes.starts_with(b"RIFF") && &bytes[8..12] == b"WEBP" {
        Some("WebP")
    } else {
        None
    }
}

/// The content rules: every one the bytes break, or the text.
fn content_text(bytes: Vec<u8>) -> Result<String, Vec<String>> {
    let mut rules = Vec::new();
    if let Some(kind) = image_kind(&bytes) {
        rules.push(format!(
            "is a {kind} image; a task file must be one block of text"
        ));
    }
    if let Some(at) = bytes.iter().position(|&b| b == 0) {
        rules.push(format!("contains a NUL byte (at byte {at})"));
    }
    let text = match String::from_utf8(bytes) {
        Ok(text) => text,
        Err(err) => {
            rules.push(format!(
                "is not valid UTF-8 (first invalid byte at {})",
                err.utf8_error().valid_up_to()
            ));
            return Err(rules);
        }
    };
    if let Some(at) = text.find('\u{FFFD}') {
        rules.push(format!(
            "contains U+FFFD REPLACEMENT CHARACTER (at byte {at}); it is refused even when \
             literal"
        ));
    }
    if text.chars().all(|c| c.is_whitespace() || c == '\u{FEFF}') {
        rules.push("has no text besides whitespace".to_owned());
    }
    let lines = line_count(&text);
    if lines > MAX_LINES {
        rules.push(format!(
            "has {lines} lines; pi's read shows at most {MAX_LINES} (lines are the pieces \
             between `\\n`, so a final newline starts one more)"
        ));
    }
    if rules.is_empty() {
        Ok(text)
    } else {
        Err(rules)
    }
}

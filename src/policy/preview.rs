//! Model-facing previews of child outcomes.
//!
//! A preview is built in three steps:
//!
//! 1. **References header**, in the order of the given snapshots: for each child its
//!    `UUID@generation`, status (with limit or pause reason), profile, artifact paths and
//!    transcript path, one path per line. Paths are JSON-quoted so spaces, quotes and newlines
//!    in them stay unambiguous. The header comes first so locations stay discoverable however
//!    long the prose below is.
//! 2. **Bodies**: `result`, the structured value (compact JSON), validation errors, `error`,
//!    the artifact persistence error and (while there is no result) `progress`. Each field is
//!    clipped on its own to [`PREVIEW_CHARS`] characters (Unicode scalar values, so a UTF-8
//!    character is never split) and followed by a label saying how much was kept and where the
//!    whole is, e.g. `… [truncated: 2048 of 10000 characters shown; full text in "/…/result.txt"]`.
//!    A field of exactly 2048 characters is kept whole and unlabelled.
//! 3. **Native truncation** of the whole preview, as pi truncates tool output: whole lines from
//!    the head within [`PREVIEW_LINES`] lines and [`PREVIEW_BYTES`] bytes, lines counted like pi
//!    (a trailing newline ends the last line rather than starting an empty one). Unlike pi, the
//!    label is counted inside the limits — the result including its label never exceeds 2000
//!    lines or 51200 bytes — so a consumer that truncates again natively cannot cut the label
//!    off. Only when not even the first line fits is a line cut, at a character boundary, and
//!    the label says so.

use std::fmt::Write as _;

use serde_json::Value;

use crate::core::bounds::{PREVIEW_BYTES, PREVIEW_CHARS, PREVIEW_LINES};
use crate::core::ids::ChildRef;
use crate::core::lifecycle::{LimitReason, PauseReason};
use crate::core::snapshot::{ChildSnapshot, Validation};

/// The model-facing preview of `children`, in their order.
pub fn preview(children: &[ChildSnapshot]) -> String {
    let mut out = String::new();
    references(children, &mut out);
    for (n, child) in children.iter().enumerate() {
        bodies(n + 1, child, &mut out);
    }
    truncate_native(&out)
}

/// Where the whole of a clipped field can be found.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FullAt<'a> {
    /// A published artifact file.
    Artifact(&'a str),
    /// Only in the detached snapshot.
    Snapshot(ChildRef),
}

/// What a clipped field holds, for its label.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FieldKind {
    Text,
    Json,
}

/// `text` clipped to [`PREVIEW_CHARS`] characters, with a label when anything was cut.
pub fn clip_field(text: &str, kind: FieldKind, full: FullAt<'_>) -> String {
    let Some((cut, _)) = text.char_indices().nth(PREVIEW_CHARS) else {
        return text.to_owned();
    };
    let total = text.chars().count();
    let (unit, noun) = match kind {
        FieldKind::Text => ("characters", "text"),
        FieldKind::Json => ("characters of JSON", "value"),
    };
    let whole = match full {
        FullAt::Artifact(path) => format!("full {noun} in {}", quote(path)),
        FullAt::Snapshot(child) => format!("full {noun}: subagent-status {child}"),
    };
    format!(
        "{}… [truncated: {PREVIEW_CHARS} of {total} {unit} shown; {whole}]",
        &text[..cut]
    )
}

/// pi's native head truncation to [`PREVIEW_LINES`] lines and [`PREVIEW_BYTES`] bytes, label
/// included (see the module docs).
pub fn truncate_native(text: &str) -> String {
    let lines = count_lines(text);
    if lines <= PREVIEW_LINES && text.len() <= PREVIEW_BYTES {
        return text.to_owned();
    }
    let budget_bytes = PREVIEW_BYTES - 1 - max_label_len();
    let budget_lines = PREVIEW_LINES - 1;
    let mut used = 0;
    let mut kept = 0;
    for line in text.split('\n').take(budget_lines.min(lines)) {
        let add = line.len() + usize::from(kept > 0);
        if used + add > budget_bytes {
            break;
        }
        used += add;
        kept += 1;
    }
    let (shown, label) = if kept == 0 {
        let first = text.split('\n').next().unwrap_or_default();
        let cut = floor_char_boundary(first, budget_bytes);
        let label = partial_label(cut, first.len(), lines, text.len());
        (&first[..cut], label)
    } else {
        (&text[..used], lines_label(kept, lines, used, text.len()))
    };
    format!("{shown}\n{label}")
}

/// Lines as pi counts them: none for empty text, and a trailing newline ends the last line.
pub fn count_lines(text: &str) -> usize {
    if text.is_empty() {
        return 0;
    }
    let newlines = text.bytes().filter(|&b| b == b'\n').count();
    if text.ends_with('\n') {
        newlines
    } else {
        newlines + 1
    }
}

const SNAPSHOTS: &str = "full snapshots: subagent-status <UUID>@<generation>";

fn lines_label(kept: usize, lines: usize, bytes: usize, total_bytes: usize) -> String {
    format!(
        "[preview truncated to the native {PREVIEW_LINES}-line / {PREVIEW_BYTES}-byte limit: \
         showing lines 1-{kept} of {lines} ({bytes} of {total_bytes} bytes); {SNAPSHOTS}]"
    )
}

fn partial_label(bytes: usize, line_bytes: usize, lines: usize, total_bytes: usize) -> String {
    format!(
        "[preview truncated to the native {PREVIEW_LINES}-line / {PREVIEW_BYTES}-byte limit: \
         showing the first {bytes} of {line_bytes} bytes of line 1 of {lines}, cut at a character \
         boundary ({total_bytes} bytes in all); {SNAPSHOTS}]"
    )
}

fn max_label_len() -> usize {
    let n = usize::MAX;
    lines_label(n, n, n, n)
        .len()
        .max(partial_label(n, n, n, n).len())
}

fn floor_char_boundary(text: &str, max: usize) -> usize {
    let mut cut = max.min(text.len());
    while !text.is_char_boundary(cut) {
        cut -= 1;
    }
    cut
}

fn quote(text: &str) -> String {
    Value::String(text.to_owned()).to_string()
}

fn references(children: &[ChildSnapshot], out: &mut String) {
    let noun = if children.len() == 1 {
        "child"
    } else {
        "children"
    };
    let _ = writeln!(
        out,
        "Subagent preview: {} {noun}. References first, in call order; clipped output follows.",
        children.len()
    );
    for (n, child) in children.iter().enumerate() {
        let _ = write!(out, "[{}] {} {}", n + 1, child.child_ref(), child.status);
        if let Some(reason) = child.limit_reason {
            let _ = write!(out, " (limit: {})", limit_name(reason));
        }
        if let Some(reason) = child.pause_reason {
            let _ = write!(out, " (paused: {})", pause_name(reason));
        }
        let _ = writeln!(out, " profile={}", child.profile);
        let artifacts = child.artifacts.as_ref();
        let text = artifacts.and_then(|a| a.text.as_deref());
        let structured = artifacts.and_then(|a| a.structured.as_deref());
        if let Some(path) = text {
            let _ = writeln!(out, "    text artifact: {}", quote(path));
        }
        if let Some(path) = structured {
            let _ = writeln!(out, "    structured artifact: {}", quote(path));
        }
        if text.is_none() && structured.is_none() {
            let _ = writeln!(out, "    artifacts: none");
        }
        match &child.transcript {
            Some(path) => {
                let _ = writeln!(out, "    transcript: {}", quote(path));
            }
            None => {
                let _ = writeln!(out, "    transcript: none");
            }
        }
    }
    let _ = writeln!(
        out,
        "Full detached snapshots: subagent-status <UUID>@<generation>."
    );
}

fn bodies(n: usize, child: &ChildSnapshot, out: &mut String) {
    let reference = child.child_ref();
    let artifacts = child.artifacts.as_ref();
    let snapshot = FullAt::Snapshot(reference);
    let mut any = false;
    let mut section = |title: &str, body: &str, out: &mut String| {
        let _ = write!(out, "\n--- [{n}] {reference} {title} ---\n{body}\n");
        any = true;
    };
    if let Some(result) = &child.result {
        let full = artifacts
            .and_then(|a| a.text.as_deref())
            .map_or(snapshot, FullAt::Artifact);
        let body = if result.is_empty() {
            "(empty)".to_owned()
        } else {
            clip_field(result, FieldKind::Text, full)
        };
        section("result", &body, out);
    }
    if let Some(outcome) = &child.outcome {
        let title = format!(
            "structured result ({}, {} attempt{}, {})",
            validation_name(outcome.validation),
            outcome.attempts,
            if outcome.attempts == 1 { "" } else { "s" },
            if outcome.finalized {
                "finalized"
            } else {
                "not finalized"
            }
        );
        let body = match &outcome.value {
            Some(value) => {
                let full = artifacts
                    .and_then(|a| a.structured.as_deref())
                    .map_or(snapshot, FullAt::Artifact);
                clip_field(&value.to_string(), FieldKind::Json, full)
            }
            None => "(no value submitted)".to_owned(),
        };
        section(&title, &body, out);
        if !outcome.errors.is_empty() {
            let errors = outcome.errors.join("\n");
            section(
                "validation errors",
                &clip_field(&errors, FieldKind::Text, snapshot),
                out,
            );
        }
    }
    if let Some(error) = &child.error {
        section("error", &clip_field(error, FieldKind::Text, snapshot), out);
    }
    if let Some(error) = artifacts.and_then(|a| a.error.as_deref()) {
        section(
            "artifact error",
            &clip_field(error, FieldKind::Text, snapshot),
            out,
        );
    }
    if let Some(progress) = child.progress.as_ref().filter(|_| child.result.is_none()) {
        section(
            "progress",
            &clip_field(progress, FieldKind::Text, snapshot),
            out,
        );
    }
    if !any {
        let _ = write!(out, "\n--- [{n}] {reference}: no output yet ---\n");
    }
}

fn limit_name(reason: LimitReason) -> &'static str {
    match reason {
        LimitReason::Requests => "requests",
        LimitReason::Tools => "tools",
    }
}

fn pause_name(reason: PauseReason) -> &'static str {
    match reason {
        PauseReason::Deadline => "deadline",
        PauseReason::AncestorDeadline => "ancestor deadline",
    }
}

fn validation_name(validation: Validation) -> &'static str {
    match validation {
        Validation::Awaiting => "awaiting",
        Validation::Invalid => "invalid",
        Validation::Submitted => "submitted",
    }
}

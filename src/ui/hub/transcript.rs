//! The `transcript` messages of one generation (pi session `message` entries) turned into
//! cleaned rows for the thread and tools panes. Everything untrusted passes `SafeText`
//! here, before it can reach a buffer. Image data and thinking signatures are never shown;
//! image omission is explicit.

use std::borrow::Cow;

use serde_json::Value;

use crate::text::SafeText;

/// What a row is, for styling.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RowKind {
    User,
    Assistant,
    Tool,
    ToolError,
    Body,
    Dim,
    Marker,
    Error,
    /// A line an `edit` adds.
    Added,
    /// A line an `edit` removes.
    Removed,
}

/// One logical line (it may still wrap when drawn).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Line {
    pub kind: RowKind,
    pub text: SafeText,
}

impl Line {
    fn new(kind: RowKind, text: &str) -> Self {
        Self {
            kind,
            text: SafeText::line(text),
        }
    }
}

/// Longest tool result text shown in full, in bytes; the rest is cut and labelled.
pub const TOOL_TEXT_CAP: usize = 256 * 1024;
/// Rows of a tool result shown in the thread; the tools pane has them all.
pub const THREAD_TOOL_ROWS: usize = 12;

/// The two documents built from one transcript.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Documents {
    pub thread: Vec<Line>,
    pub tools: Vec<Line>,
}

fn push_text(out: &mut Vec<Line>, kind: RowKind, text: &str) {
    let clean = SafeText::lines(text);
    out.extend(clean.split_lines().map(|text| Line { kind, text }));
}

/// Cuts text at [`TOOL_TEXT_CAP`] (on a char boundary), saying how much was cut.
fn capped(text: &str) -> (&str, Option<usize>) {
    if text.len() <= TOOL_TEXT_CAP {
        return (text, None);
    }
    let mut end = TOOL_TEXT_CAP;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    (&text[..end], Some(text.len() - end))
}

/// A message's content blocks, borrowed (a long transcript is not copied to be shown): pi's
/// array as it is, a plain string content as one text block.
fn blocks(message: &Value) -> Vec<Cow<'_, Value>> {
    match message.get("content") {
        Some(Value::String(s)) => vec![Cow::Owned(serde_json::json!({"type": "text", "text": s}))],
        Some(Value::Array(items)) => items.iter().map(Cow::Borrowed).collect(),
        _ => Vec::new(),
    }
}

fn str_of<'a>(v: &'a Value, key: &str) -> &'a str {
    v.get(key).and_then(Value::as_str).unwrap_or("")
}

fn image_marker(block: &Value) -> String {
    let mime = str_of(block, "mimeType");
    if mime.is_empty() {
        "[image omitted]".to_owned()
    } else {
        format!("[image omitted: {mime}]")
    }
}

/// One argument value: strings as their own lines, anything else as pretty JSON.
fn push_value(out: &mut Vec<Line>, key: &str, value: &Value) {
    match value {
        Value::String(s) if !s.contains('\n') => {
            out.push(Line::new(RowKind::Body, &format!("  {key}: {s}")));
        }
        Value::String(s) => {
            out.push(Line::new(RowKind::Dim, &format!("  {key}:")));
            let (shown, cut) = capped(s);
            for line in SafeText::lines(shown).as_str().split('\n') {
                out.push(Line::new(RowKind::Body, &format!("    {line}")));
            }
            if let Some(cut) = cut {
                out.push(Line::new(
                    RowKind::Marker,
                    &format!("    … [truncated: {cut} more bytes not shown]"),
                ));
            }
        }
        other => {
            let pretty = serde_json::to_string_pretty(&clean_json(other)).unwrap_or_default();
            let (shown, cut) = capped(&pretty);
            for (i, line) in SafeText::lines(shown).as_str().split('\n').enumerate() {
                let text = if i == 0 {
                    format!("  {key}: {line}")
                } else {
                    format!("  {line}")
                };
                out.push(Line::new(RowKind::Body, &text));
            }
            if let Some(cut) = cut {
                out.push(Line::new(
                    RowKind::Marker,
                    &format!("  … [truncated: {cut} more bytes not shown]"),
                ));
            }
        }
    }
}

/// A copy of `value` whose keys and strings are cleaned, so that escaped control
/// sequences cannot show up as text either.
pub(super) fn clean_json(value: &Value) -> Value {
    match value {
        Value::String(s) => Value::String(SafeText::lines(s).into_string()),
        Value::Array(items) => Value::Array(items.iter().map(clean_json).collect()),
        Value::Object(map) => Value::Object(
            map.iter()
                .map(|(k, v)| (SafeText::line(k).into_string(), clean_json(v)))
                .collect(),
        ),
        other => other.clone(),
    }
}

fn push_arguments(out: &mut Vec<Line>, arguments: Option<&Value>) {
    match arguments {
        Some(Value::Object(map)) if !map.is_empty() => {
            for (k, v) in map {
                push_value(out, k, v);
            }
        }
        Some(Value::Object(_) | Value::Null) | None => {
            out.push(Line::new(RowKind::Dim, "  (no arguments)"));
        }
        Some(other) => push_value(out, "arguments", other),
    }
}

/// The result text of a `toolResult` message, and its images as markers.
fn result_lines(message: &Value, error: bool) -> Vec<Line> {
    let kind = if error { RowKind::Error } else { RowKind::Body };
    let mut out = Vec::new();
    for block in blocks(message) {
        match str_of(&block, "type") {
            "text" => {
                let (shown, cut) = capped(str_of(&block, "text"));
                push_text(&mut out, kind, shown);
                if let Some(cut) = cut {
                    out.push(Line::new(
                        RowKind::Marker,
                        &format!("… [truncated: {cut} more bytes not shown]"),
                    ));
                }
            }
            "image" => out.push(Line::new(RowKind::Marker, &image_marker(&block))),
            other => out.push(Line::new(
                RowKind::Marker,
                &format!("[{other} content omitted]"),
            )),
        }
    }
    if out.is_empty() {
        out.push(Line::new(RowKind::Dim, "(no output)"));
    }
    out
}

/// The assistant message that is still streaming (the snapshot's `progress` while
/// `streaming` is `assistant`), as it ends the thread until the final message replaces it.
pub fn partial_assistant(text: &str) -> Vec<Line> {
    let mut out = vec![Line::new(RowKind::Assistant, "▌ assistant · streaming")];
    push_text(&mut out, RowKind::Body, text);
    out
}

/// The `(oldText, newText)` replacements of an `edit` call: pi's `edits: [{oldText,
/// newText}]`, or the top-level pair older sessions recorded. `None` when the arguments are
/// not an edit's (then they are shown as they are).
fn edit_pair(v: &Value) -> Option<(&str, &str)> {
    Some((v.get("oldText")?.as_str()?, v.get("newText")?.as_str()?))
}

fn edit_pairs(arguments: &Value) -> Option<Vec<(&str, &str)>> {
    match arguments.get("edits") {
        Some(Value::Array(edits)) if !edits.is_empty() => edits.iter().map(edit_pair).collect(),
        Some(_) => None,
        None => edit_pair(arguments).map(|p| vec![p]),
    }
}

/// A compact line diff of one replacement: the lines both sides share at the start and the
/// end are left out but for one line of context each side, then `- ` removed and `+ ` added
/// lines. Returns (added, removed).
fn push_diff(out: &mut Vec<Line>, old: &str, new: &str, indent: &str) -> (usize, usize) {
    let (old, old_cut) = capped(old);
    let (new, new_cut) = capped(new);
    let old_clean = SafeText::lines(old);
    let new_clean = SafeText::lines(new);
    let a: Vec<&str> = old_clean.as_str().split('\n').collect();
    let b: Vec<&str> = new_clean.as_str().split('\n').collect();
    let prefix = a.iter().zip(&b).take_while(|(x, y)| x == y).count();
    let max_suffix = a.len().min(b.len()) - prefix;
    let suffix = a
        .iter()
        .rev()
        .zip(b.iter().rev())
        .take(max_suffix)
        .take_while(|(x, y)| x == y)
        .count();
    let context = |out: &mut Vec<Line>, line: &str| {
        out.push(Line::new(RowKind::Dim, &format!("{indent}  {line}")));
    };
    if prefix > 0 {
        context(out, a[prefix - 1]);
    }
    let removed = &a[prefix..a.len() - suffix];
    let added = &b[prefix..b.len() - suffix];
    for line in removed {
        out.push(Line::new(RowKind::Removed, &format!("{indent}- {line}")));
    }
    for line in added {
        out.push(Line::new(RowKind::Added, &format!("{indent}+ {line}")));
    }
    if suffix > 0 {
        context(out, a[a.len() - suffix]);
    }
    for cut in [old_cut, new_cut].into_iter().flatten() {
        out.push(Line::new(
            RowKind::Marker,
            &format!("{indent}… [truncated: {cut} more bytes not shown]"),
        ));
    }
    (added.len(), removed.len())
}

/// An `edit` call as the change it makes: a heading with the path and counts for the
/// thread (and at most [`THREAD_TOOL_ROWS`] diff rows), the whole diff for the tools pane.
fn push_edit(
    thread: &mut Vec<Line>,
    tools: &mut Vec<Line>,
    arguments: &Value,
    pairs: &[(&str, &str)],
) {
    let path = str_of(arguments, "path");
    let mut diff = Vec::new();
    let (mut added, mut removed) = (0, 0);
    for (i, (old, new)) in pairs.iter().enumerate() {
        if pairs.len() > 1 {
            diff.push(Line::new(
                RowKind::Dim,
                &format!("  change {} of {}", i + 1, pairs.len()),
            ));
        }
        let (a, r) = push_diff(&mut diff, old, new, "  ");
        added += a;
        removed += r;
    }
    let changes = if pairs.len() == 1 {
        "1 change".to_owned()
    } else {
        format!("{} changes", pairs.len())
    };
    thread.push(Line::new(
        RowKind::Tool,
        &format!("→ edit {path} · {changes} · +{added} −{removed}"),
    ));
    let more = diff.len().saturating_sub(THREAD_TOOL_ROWS);
    thread.extend(diff.iter().take(THREAD_TOOL_ROWS).cloned());
    if more > 0 {
        thread.push(Line::new(
            RowKind::Marker,
            &format!("  … {more} more lines (Tab to tools for the whole change)"),
        ));
    }
    tools.push(Line::new(RowKind::Body, &format!("  path: {path}")));
    tools.extend(diff.into_iter().map(|mut l| {
        l.text = SafeText::line(&format!("  {}", l.text));
        l
    }));
}

/// Builds the thread and tools documents from the messages of exactly one generation.
pub fn documents(messages: &[Value]) -> Documents {
    let mut docs = Documents::default();
    append(&mut docs, messages);
    docs
}

/// Adds the rows of messages recorded after those `docs` was built from (a message's rows
/// depend on that message alone, so appending equals rebuilding).
pub fn append(docs: &mut Documents, messages: &[Value]) {
    let Documents { thread, tools } = docs;
    for message in messages {
        let role = str_of(message, "role");
        match role {
            "user" => {
                thread.push(Line::new(RowKind::User, "▌ user"));
                for block in blocks(message) {
                    match str_of(&block, "type") {
                        "text" => push_text(thread, RowKind::Body, str_of(&block, "text")),
                        "image" => thread.push(Line::new(RowKind::Marker, &image_marker(&block))),
                        _ => {}
                    }
                }
            }
            "assistant" => {
                thread.push(Line::new(RowKind::Assistant, "▌ assistant"));
                for block in blocks(message) {
                    match str_of(&block, "type") {
                        "text" => push_text(thread, RowKind::Body, str_of(&block, "text")),
                        // The thinking text is public; its signature is an opaque payload.
                        "thinking" => {
                            push_text(thread, RowKind::Dim, str_of(&block, "thinking"));
                        }
                        "toolCall"
                            if str_of(&block, "name") == "edit"
                                && block.get("arguments").and_then(edit_pairs).is_some() =>
                        {
                            let arguments = block.get("arguments").unwrap_or(&Value::Null);
                            tools.push(Line::new(
                                RowKind::Tool,
                                &format!("● edit  call {}", str_of(&block, "id")),
                            ));
                            let pairs = edit_pairs(arguments).unwrap_or_default();
                            push_edit(thread, tools, arguments, &pairs);
                        }
                        "toolCall" => {
                            let name = str_of(&block, "name");
                            let args = block
                                .get("arguments")
                                .map(|a| clean_json(a).to_string())
                                .unwrap_or_default();
                            thread.push(Line::new(RowKind::Tool, &format!("→ {name} {args}")));
                            tools.push(Line::new(
                                RowKind::Tool,
                                &format!("● {name}  call {}", str_of(&block, "id")),
                            ));
                            push_arguments(tools, block.get("arguments"));
                        }
                        "image" => thread.push(Line::new(RowKind::Marker, &image_marker(&block))),
                        _ => {}
                    }
                }
                if str_of(message, "stopReason") == "error" {
                    let error = str_of(message, "errorMessage");
                    thread.push(Line::new(RowKind::Error, &format!("error: {error}")));
                }
            }
            "toolResult" => {
                let error = message.get("isError").and_then(Value::as_bool) == Some(true);
                let name = str_of(message, "toolName");
                let label = if error { " · error" } else { "" };
                let kind = if error {
                    RowKind::ToolError
                } else {
                    RowKind::Tool
                };
                thread.push(Line::new(kind, &format!("▌ tool {name}{label}")));
                let lines = result_lines(message, error);
                let more = lines.len().saturating_sub(THREAD_TOOL_ROWS);
                thread.extend(lines.iter().take(THREAD_TOOL_ROWS).cloned());
                if more > 0 {
                    thread.push(Line::new(
                        RowKind::Marker,
                        &format!("… {more} more lines (Tab to tools for the full result)"),
                    ));
                }
                tools.push(Line::new(
                    kind,
                    &format!("  result{label} (call {})", str_of(message, "toolCallId")),
                ));
                tools.extend(lines.into_iter().map(|mut l| {
                    l.text = SafeText::line(&format!("    {}", l.text));
                    l
                }));
            }
            _ => {
                thread.push(Line::new(RowKind::Dim, &format!("▌ {role}")));
                for block in blocks(message) {
                    if str_of(&block, "type") == "text" {
                        push_text(thread, RowKind::Dim, str_of(&block, "text"));
                    }
                }
            }
        }
    }
}

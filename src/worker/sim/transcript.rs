//! The simulated worker's session file, in pi's format, so every reader of transcripts (the
//! `transcript` control method, the Hub's thread and tools panes) sees the same shapes for
//! simulated and real workers: a version-3 `session` header, then `message` entries with an
//! 8-hex `id`, the `parentId` chain and an ISO timestamp.

use std::fs::OpenOptions;
use std::io::Write as _;
use std::path::PathBuf;

use serde_json::{Value, json};

use crate::core::ChildRef;
use crate::store::session::iso_timestamp;

pub struct Transcript {
    path: PathBuf,
    child: ChildRef,
    cwd: String,
    leaf: Option<String>,
    entries: u32,
    tool_calls: u32,
    /// The first failed write, reported once as the worker's activity is not the place.
    failed: bool,
}

impl Transcript {
    pub fn new(path: PathBuf, child: ChildRef, cwd: String) -> Self {
        Self {
            path,
            child,
            cwd,
            leaf: None,
            entries: 0,
            tool_calls: 0,
            failed: false,
        }
    }

    /// The header, written once before the first message (pi creates the file lazily too).
    fn header(&self, now: u64) -> Value {
        json!({
            "type": "session",
            "version": 3,
            "id": self.child.id,
            "timestamp": iso_timestamp(now),
            "cwd": self.cwd,
        })
    }

    fn next_id(&mut self) -> String {
        self.entries += 1;
        // Unique within the file: the identity's low bits mixed with the entry counter.
        let low = self.child.id.as_u64_pair().1.to_le_bytes();
        let low = u32::from_le_bytes([low[0], low[1], low[2], low[3]]);
        format!(
            "{:08x}",
            low.rotate_left(7) ^ self.entries.wrapping_mul(0x9E37_79B9)
        )
    }

    pub fn user(&mut self, text: &str, now: u64) {
        self.append(
            json!({"role": "user", "content": [{"type": "text", "text": text}], "timestamp": now}),
            now,
        );
    }

    pub fn assistant(&mut self, text: &str, usage: Option<&crate::core::Usage>, now: u64) {
        let mut message = json!({
            "role": "assistant",
            "content": [{"type": "text", "text": text}],
            "provider": "sim",
            "model": "scripted",
            "stopReason": "stop",
            "timestamp": now,
        });
        if let Some(u) = usage {
            message["usage"] = json!({
                "input": u.tokens.input,
                "output": u.tokens.output,
                "cacheRead": u.tokens.cache_read,
                "cacheWrite": u.tokens.cache_write,
                "totalTokens": u.tokens.total,
                "cost": {"total": u.cost},
            });
        }
        self.append(message, now);
    }

    /// The assistant's tool call; returns its call id for the result.
    pub fn tool_call(&mut self, name: &str, args: &Value, now: u64) -> String {
        self.tool_calls += 1;
        let id = format!("call_sim_{}", self.tool_calls);
        self.append(
            json!({
                "role": "assistant",
                "content": [{"type": "toolCall", "id": id, "name": name, "arguments": args}],
                "provider": "sim",
                "model": "scripted",
                "stopReason": "toolUse",
                "timestamp": now,
            }),
            now,
        );
        id
    }

    pub fn tool_result(&mut self, call: &str, name: &str, output: &str, error: bool, now: u64) {
        self.append(
            json!({
                "role": "toolResult",
                "toolCallId": call,
                "toolName": name,
                "content": [{"type": "text", "text": output}],
                "isError": error,
                "timestamp": now,
            }),
            now,
        );
    }

    #[allow(clippy::needless_pass_by_value)] // every caller builds the message for this call
    fn append(&mut self, message: Value, now: u64) {
        if self.failed {
            return;
        }
        let mut lines = String::new();
        if self.entries == 0 {
            if let Ok(existing) = std::fs::read_to_string(&self.path) {
                // A resumed conversation continues the chain from the file's last entry, and
                // the id counter continues past the existing entries.
                self.entries = u32::try_from(existing.lines().count()).unwrap_or(u32::MAX);
                self.leaf = existing
                    .lines()
                    .rev()
                    .filter_map(|l| serde_json::from_str::<Value>(l).ok())
                    .find_map(|e| e.get("id").and_then(Value::as_str).map(str::to_owned))
                    .filter(|id| id.len() == 8);
            } else {
                lines.push_str(&crate::json::to_string(&self.header(now)).unwrap_or_default());
                lines.push('\n');
            }
        }
        let id = self.next_id();
        let entry = json!({
            "type": "message",
            "id": id,
            "parentId": self.leaf,
            "timestamp": iso_timestamp(now),
            "message": message,
        });
        lines.push_str(&crate::json::to_string(&entry).unwrap_or_default());
        lines.push('\n');
        self.leaf = Some(id);
        // One write of whole lines: a reader never sees half an entry.
        let written = OpenOptions::new()
            .create(true)
            .append(true)
            .open(&self.path)
            .and_then(|mut f| f.write_all(lines.as_bytes()));
        if written.is_err() {
            // The simulated worker keeps running: its transcript is a convenience for viewers,
            // and a missing file reads as an empty transcript.
            self.failed = true;
        }
    }
}

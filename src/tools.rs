//! One tool layer, owned by Rust (issue 21): for each caller (the root, or a child generation
//! with its grants) the model tools Slate offers (`defs`) and one [`call`] that runs a tool and
//! answers `{text, details, isError}` (`call`, with the model-facing wording in `text`).
//!
//! It is served on the control socket: `tools` lists the caller's tools, `callTool` runs one.
//! The pi extension (main session and worker) and `slate mcp` are transports of it: they
//! register what `tools` lists with their host and forward each call, so no description,
//! action table, parser or shape exists twice.
//!
//! While a delegation's window runs, the connection that made the call gets `toolUpdate`
//! notifications (one row per child, at most every [`UPDATE_EVERY`]); a background call's
//! answer names its window (`pending`), and that same connection gets one `toolOutcome`
//! notification when the window drains.

pub mod call;
pub mod defs;
pub mod text;

use std::time::Duration;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;

pub use call::{Backend, Watch, call, serve_call};
pub use defs::tools_for;

/// The least time between two `toolUpdate` notifications of one call.
pub const UPDATE_EVERY: Duration = Duration::from_millis(250);

/// Who calls: the root, or a child generation with the Slate tools it was granted.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Caller {
    Root,
    Child(Grants),
}

/// A child's Slate tools (`worker::pi::args::tool_names` names the same to pi).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Grants {
    /// `submit_result`: the task has a `resultSchema`.
    pub submit: bool,
    /// `delegate_task`: the task may spawn.
    pub delegate: bool,
    /// `delegate_coordinate`: the task has coordination actions.
    pub coordinate: bool,
}

impl Grants {
    pub fn of(spec: &crate::core::TaskSpec) -> Self {
        Self {
            submit: spec.result_schema.is_some(),
            delegate: !spec.spawn.is_empty(),
            coordinate: !spec.coordination.is_empty(),
        }
    }
}

/// One tool as a host registers it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ToolSpec {
    pub name: String,
    /// A short title for people.
    pub label: String,
    /// What the model reads about the tool.
    pub description: String,
    /// One line for the host's system prompt.
    pub prompt_snippet: String,
    /// Extra guidance lines for the host's system prompt.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub prompt_guidelines: Vec<String>,
    /// The input schema to register: an object whose properties carry descriptions (with
    /// their type and bounds) and no types, so the host coerces nothing; Slate validates
    /// the input strictly.
    #[schemars(with = "serde_json::Map<String, Value>")]
    pub parameters: Value,
}

/// `tools`: the caller's tools.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ToolsResult {
    pub tools: Vec<ToolSpec>,
}

/// `callTool`: one tool call of the caller.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct CallToolParams {
    /// One of the caller's tools (`tools`).
    pub tool: String,
    /// The tool's input exactly as the model wrote it.
    pub input: Value,
    /// The host's id of this call (pi's `toolCallId`), echoed in its notifications.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub call_id: Option<String>,
    /// A root's foreground delegation is cancelled when this connection closes before its
    /// outcome (`delegate`'s `cancelOnClose`); a child's always is.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub cancel_on_close: bool,
}

/// `callTool`: what the tool answers.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ToolAnswer {
    /// What the model reads (terminal controls removed).
    pub text: String,
    /// The structured answer (snapshots, replies), for renderers and programs.
    pub details: Value,
    pub is_error: bool,
    /// A background window this call started: its outcome follows as one `toolOutcome`
    /// notification on this connection.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pending: Option<u64>,
}

/// One child of a running tool call, as a live line shows it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ToolRow {
    /// `UUID@generation`.
    pub target: String,
    /// The short handle people read (8 hex digits, `@N` after the first generation).
    pub handle: String,
    pub role: String,
    pub status: String,
    /// Milliseconds since the generation was created (to its end once it ended).
    pub elapsed_ms: u64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tokens: Option<u64>,
    /// US dollars.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cost: Option<f64>,
    /// The latest activity (one line, sanitized).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub activity: Option<String>,
    /// Once ended: the result's first line, or the error (one line, sanitized).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub headline: Option<String>,
    /// Published artifact paths, relative to the coordinator's directory where inside it.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub artifacts: Vec<String>,
    /// The row as one line of text: status mark, role, handle, elapsed, tokens, cost, then
    /// the headline once ended or the latest activity.
    pub line: String,
}

/// `toolUpdate` notification: the live rows of a running call.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ToolUpdate {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub call_id: Option<String>,
    /// The window's call number.
    pub call: u64,
    /// One line per child, as [`ToolRow`]s say it.
    pub text: String,
    pub rows: Vec<ToolRow>,
}

/// `toolOutcome` notification: a background call's window drained.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ToolOutcome {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub call_id: Option<String>,
    /// The window's call number (the answer's `pending`).
    pub call: u64,
    /// The model-facing preview of the outcomes.
    pub text: String,
    /// The window outcome.
    pub details: Value,
    pub rows: Vec<ToolRow>,
}

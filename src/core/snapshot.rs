//! The public data model every surface shows: `ChildSnapshot`, telemetry, outcomes, events.

use serde::{Deserialize, Serialize};
use uuid::Uuid;

use crate::core::ids::{ChildRef, Millis};
use crate::core::lifecycle::{LimitReason, PauseReason, Presence, Status};
use crate::core::task::{BuiltinTool, CapabilityDenial, Limits, Prewalk, Role};

/// Token counts as the worker reports them.
#[derive(
    Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema,
)]
#[serde(rename_all = "camelCase")]
pub struct Tokens {
    pub input: u64,
    pub output: u64,
    pub cache_read: u64,
    pub cache_write: u64,
    pub total: u64,
}

impl Tokens {
    #[must_use]
    pub fn plus(self, other: Tokens) -> Tokens {
        Tokens {
            input: self.input.saturating_add(other.input),
            output: self.output.saturating_add(other.output),
            cache_read: self.cache_read.saturating_add(other.cache_read),
            cache_write: self.cache_write.saturating_add(other.cache_write),
            total: self.total.saturating_add(other.total),
        }
    }
}

/// Context-window usage reported by the worker (never synthesized).
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ContextUsage {
    pub tokens: Option<u64>,
    pub context_window: u64,
    pub percent: Option<f64>,
}

/// Direct telemetry of one generation. `null` means unavailable; a reported zero stays zero.
/// No subtree total is ever synthesized.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Telemetry {
    pub requests: Option<u32>,
    pub tokens: Option<Tokens>,
    /// US dollars.
    pub cost: Option<f64>,
    pub context: Option<ContextUsage>,
    /// How the worker's process started: bound from the pre-started pool or started cold
    /// (pi workers only; absent before the process exists and for simulated workers).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub launch: Option<Launch>,
}

/// How a pi worker's process started (issue 23).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub enum Launch {
    /// A pre-started process was bound to this generation.
    Pooled,
    /// A process was started for this generation.
    Cold,
}

impl Launch {
    /// In words, for `slate status UUID@GEN` and the Hub's details.
    pub fn words(self) -> &'static str {
        match self {
            Self::Pooled => "pre-started (bound from the pool)",
            Self::Cold => "started cold",
        }
    }
}

/// Structured-result protocol state (`resultSchema` tasks only).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct StructuredOutcome {
    pub validation: Validation,
    pub attempts: u32,
    pub errors: Vec<String>,
    /// The accepted value, `null` included: a submitted `null` is `"value": null` wherever
    /// the outcome is written or read back. Absent while no value was accepted.
    #[serde(
        default,
        deserialize_with = "present_value",
        skip_serializing_if = "Option::is_none"
    )]
    pub value: Option<serde_json::Value>,
    pub finalized: bool,
}

/// A member that is present is `Some`, whatever its JSON value, `null` included (serde's
/// own `Option<Value>` reads `null` as absent); an absent member is `None` by `default`.
fn present_value<'de, D>(deserializer: D) -> Result<Option<serde_json::Value>, D::Error>
where
    D: serde::Deserializer<'de>,
{
    serde_json::Value::deserialize(deserializer).map(Some)
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum Validation {
    Awaiting,
    Invalid,
    Submitted,
}

/// References to fully written artifacts only.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Artifacts {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub text: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub structured: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

/// pi's automatic retry of a failed model request, while it is under way (set from the
/// worker's `auto_retry_start`, cleared by `auto_retry_end` or when the prompt resolves).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Retry {
    pub attempt: u32,
    pub max_attempts: u32,
    pub delay_ms: u64,
    /// The failed request was answered with HTTP 429 (pi's error message starts with the
    /// status code).
    pub rate_limited: bool,
}

/// What a changing `progress` holds while a worker streams.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub enum Streaming {
    /// The assistant message being streamed: `progress` is its text so far (the newest
    /// 4096 characters). It is replaced by the final message when the message ends.
    Assistant,
    /// A running tool: `progress` is its partial output so far (the newest 4096 characters).
    Tool,
}

/// The execution window: admission or an explicit resume starts a new one.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Window {
    /// 1 for the admission window, +1 per resume.
    pub number: u32,
    pub started_at: Millis,
    /// When the deadline pauses this window (`startedAt + limits.deadlineMs`).
    pub deadline_at: Millis,
}

/// The logical action of a generation: what was asked for and which logical model the latest
/// accepted route serves.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct LogicalSnapshot {
    /// The logical model the task named.
    pub model: String,
    pub reason: String,
    /// Admission order in the session (preference freshness).
    pub admission: u64,
    /// The logical model of the latest accepted route (differs from `model` after recovery
    /// moved to another logical model).
    pub route_model: String,
    /// The provider of the latest accepted route (what a success publishes).
    pub route_provider: String,
    /// Route switches made by recovery so far.
    pub switches: u32,
}

/// A detached, immutable view of one generation.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ChildSnapshot {
    pub id: Uuid,
    pub generation: u32,
    /// The real parent: the root runtime's id for depth 1, the parent identity otherwise.
    pub parent_id: Uuid,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub parent_generation: Option<u32>,
    pub depth: u32,
    pub status: Status,
    pub profile: Role,
    pub cwd: String,
    pub assignment: String,
    pub activity: Option<String>,
    /// At most 4096 characters: a worker's progress note, or (see `streaming`) the newest
    /// streamed output.
    pub progress: Option<String>,
    /// Set while `progress` is streamed output that is still growing; absent otherwise.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub streaming: Option<Streaming>,
    /// Final assistant text (trimmed), once the prompt resolved.
    pub result: Option<String>,
    /// The latest accepted route, `provider/id` (recovery can change it).
    pub model: Option<String>,
    pub effort: Option<String>,
    /// The initial physical pair, before any failover.
    #[serde(default)]
    pub requested_model: Option<String>,
    #[serde(default)]
    pub requested_effort: Option<String>,
    /// The logical action, when the task named a logical model.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub logical: Option<LogicalSnapshot>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prewalk: Option<Prewalk>,
    pub telemetry: Telemetry,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub transcript: Option<String>,
    pub limits: Limits,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub limit_reason: Option<LimitReason>,
    /// Cumulative executable tool invocations of this generation.
    pub tool_calls: u32,
    /// Cumulative admitted direct children of this generation.
    pub spawns: u32,
    pub writer_lease: bool,
    pub disposed: bool,
    pub created_at: Millis,
    pub ended_at: Option<Millis>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub outcome: Option<StructuredOutcome>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub artifacts: Option<Artifacts>,
    pub tools: Vec<BuiltinTool>,
    pub leaf_tools: Vec<String>,
    pub skills: Vec<String>,
    pub capability_denials: Vec<CapabilityDenial>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pause_reason: Option<PauseReason>,
    /// True while a paused generation keeps its conversation for `resume`.
    pub retained_context: bool,
    pub window: Window,
    /// When the outcome of this generation's latest window reached its parent: the waiting
    /// caller of a foreground call was answered, or the parent session acknowledged a
    /// background outcome (`outcomeDelivered`). Absent until then, and again once a new
    /// window opens (`resume`). A followup's or revive's window is delivered by the same rule:
    /// its outcome goes to the call that started it (a tool call's session acknowledges it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub delivered_at: Option<Millis>,
    /// A retry in progress, as the worker reported it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub retry: Option<Retry>,
}

impl ChildSnapshot {
    pub fn child_ref(&self) -> ChildRef {
        ChildRef::new(self.id, self.generation)
    }
}

/// Current presence of one identity (its current generation).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct AgentPresence {
    pub id: Uuid,
    pub generation: u32,
    pub presence: Presence,
}

/// `{type:"changed"|"sdk", child, event?}` — detached snapshots for observers.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct RegistryEvent {
    #[serde(rename = "type")]
    pub kind: RegistryEventKind,
    pub child: ChildSnapshot,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub event: Option<serde_json::Value>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum RegistryEventKind {
    Changed,
    Sdk,
}

/// What a `wait` on a target returns: identity and status only, no peer result or transcript.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct WaitOutcome {
    pub id: Uuid,
    pub generation: u32,
    pub status: Status,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub limit_reason: Option<LimitReason>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pause_reason: Option<PauseReason>,
}

/// Root `status`: the pinned snapshot, its identity's generations and current presence.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct StatusView {
    pub snapshot: ChildSnapshot,
    pub generations: Vec<ChildSnapshot>,
    pub agents: Vec<AgentPresence>,
}

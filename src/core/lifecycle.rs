//! Lifecycle status, presence, and the reasons that end or pause a window.

use serde::{Deserialize, Serialize};

/// Execution status of one generation.
///
/// `queued → setup → running → settled | failed | cancelled`, plus `pausing → paused → queued`
/// for deadline continuation and `draining` while cancellation or publication drains.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum Status {
    Queued,
    Setup,
    Running,
    Pausing,
    Paused,
    Draining,
    Settled,
    Failed,
    Cancelled,
}

impl Status {
    pub fn as_str(self) -> &'static str {
        match self {
            Status::Queued => "queued",
            Status::Setup => "setup",
            Status::Running => "running",
            Status::Pausing => "pausing",
            Status::Paused => "paused",
            Status::Draining => "draining",
            Status::Settled => "settled",
            Status::Failed => "failed",
            Status::Cancelled => "cancelled",
        }
    }

    /// Settled, failed or cancelled: the generation's assignment is over.
    pub fn is_terminal(self) -> bool {
        matches!(self, Status::Settled | Status::Failed | Status::Cancelled)
    }
}

impl std::fmt::Display for Status {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Presence of an identity's current generation, kept apart from its status.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum Presence {
    /// queued, setup, running or draining.
    Active,
    Pausing,
    Paused,
    /// Disposed after a non-cancelled assignment; may receive a followup.
    Idle,
    /// Explicitly parked idle identity; may be revived.
    Parked,
    /// Cancelled, stopped or closed by its parent: can never be renewed.
    Stopped,
}

impl Presence {
    pub fn as_str(self) -> &'static str {
        match self {
            Presence::Active => "active",
            Presence::Pausing => "pausing",
            Presence::Paused => "paused",
            Presence::Idle => "idle",
            Presence::Parked => "parked",
            Presence::Stopped => "stopped",
        }
    }
}

impl std::fmt::Display for Presence {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize, schemars::JsonSchema)]
pub enum PauseReason {
    #[serde(rename = "deadline")]
    Deadline,
    #[serde(rename = "ancestor deadline")]
    AncestorDeadline,
}

/// The hard limit that cancelled a generation (the first one committed is kept).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum LimitReason {
    Requests,
    Tools,
}

/// Why active work is being cancelled. The first committed cause is kept.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub enum CancelCause {
    /// `stop` / `stopMany` on this generation or an ancestor.
    Stop,
    /// A hard limit of this generation.
    Limit(LimitReason),
    /// An ancestor was cancelled (stop, limit, shutdown) or completed.
    Ancestor,
    /// The parent runtime is shutting down.
    Shutdown,
    /// The caller of the foreground call that admitted it cancelled that call (a child whose
    /// `delegate_task` was aborted while it waited).
    CallerCancelled,
}

impl CancelCause {
    pub fn explanation(self, limits: &crate::core::task::Limits) -> String {
        match self {
            CancelCause::Stop => "stopped by the parent runtime".to_owned(),
            CancelCause::Limit(LimitReason::Requests) => format!(
                "request limit reached: {} requests used (limits.requests is a hard limit)",
                limits.requests
            ),
            CancelCause::Limit(LimitReason::Tools) => format!(
                "tool limit reached: {} tool calls used (limits.tools is a hard limit)",
                limits.tools
            ),
            CancelCause::Ancestor => "an ancestor was cancelled, so its subtree was too".to_owned(),
            CancelCause::Shutdown => "the parent runtime shut down".to_owned(),
            CancelCause::CallerCancelled => {
                "the delegating parent cancelled the foreground call that started it".to_owned()
            }
        }
    }
}

/// Abort reasons sent to a worker.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub enum AbortReason {
    Cancel(CancelCause),
    Pause(PauseReason),
}

//! `targets` and `outcomeDelivered`: what a person's completion offers, and the parent
//! session's word that a background outcome reached it.
//!
//! `targets` lists the current generation of every identity with its short handle, role,
//! status and assignment headline, for pi's argument completion of `/subagent-stop`,
//! `/subagent-steer` and `/subagent-status`. A completion inserts `target`, the full
//! `UUID@generation`; the handle is only for reading (nothing accepts it as a target).

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::control::methods::Target;
use crate::core::{CallId, ChildSnapshot, Role, Status};
use crate::text::{SafeText, fit};

/// At most this many columns of an assignment's first line in a [`TargetRow`].
pub const HEADLINE_MAX: usize = 60;

/// One current generation, as completion shows it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct TargetRow {
    /// The exact identity a completion inserts.
    pub target: Target,
    /// The first 8 hex digits of the id, `@N` after a first generation: display only.
    pub handle: String,
    pub role: Role,
    pub status: Status,
    /// The assignment's first line, sanitized, at most [`HEADLINE_MAX`] columns.
    pub headline: String,
}

impl TargetRow {
    pub fn of(s: &ChildSnapshot) -> Self {
        let first = s.assignment.trim().lines().next().unwrap_or("");
        Self {
            target: Target(s.child_ref()),
            handle: s.child_ref().handle(),
            role: s.profile,
            status: s.status,
            headline: fit(SafeText::line(first).as_str(), HEADLINE_MAX),
        }
    }
}

/// `targets`: the current generations in admission order.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct TargetsResult {
    pub targets: Vec<TargetRow>,
}

/// `outcomeDelivered`: the outcome of window `call` (an `outcome` event's `outcome.call`)
/// reached the caller, who started it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct OutcomeDeliveredParams {
    pub call: CallId,
}

/// How many generations were marked delivered now (0 for another party's call, a call
/// marked before, or one that is unknown).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct OutcomeDeliveredResult {
    pub generations: u32,
}

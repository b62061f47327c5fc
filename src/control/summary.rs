//! The fleet table's rows: what `status {summary: true}` returns for each current
//! generation. Typed on both ends so the server writes rows straight from snapshots and the
//! client reads them straight from the response text, with no intermediate JSON tree.
//!
//! The text fields borrow from the text they are read from (`#[serde(borrow)]`: a string
//! without escapes is not copied), so a client reading 1,000 rows allocates only the rows'
//! vector. The protocol's own result ([`crate::control::methods::StatusResult`]) owns its rows:
//! it reads the same type and then [`FleetSummary::into_owned`].

use std::borrow::Cow;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use uuid::Uuid;

use crate::policy::scheduling::SchedulingPolicy;

use crate::control::methods::FleetStats;
use crate::core::{ChildSnapshot, Presence, Role, Status, clip_chars};

/// Long text in a row is clipped to this many characters (the table shows less).
pub const SUMMARY_CHARS: usize = 120;

/// `status {summary: true}`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct FleetSummary<'a> {
    pub parent_id: Uuid,
    #[serde(borrow)]
    pub children: Vec<SummaryRow<'a>>,
    /// The coordinator's counters, as in the full status answer.
    pub stats: FleetStats,
    pub policy: SchedulingPolicy,
}

/// One generation as the fleet table shows it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct SummaryRow<'a> {
    pub id: Uuid,
    pub generation: u32,
    /// The real parent: the root's id at depth 1.
    pub parent_id: Uuid,
    pub depth: u32,
    pub profile: Role,
    pub status: Status,
    /// Clipped to [`SUMMARY_CHARS`].
    #[serde(borrow)]
    pub assignment: Cow<'a, str>,
    /// Newest activity, clipped to [`SUMMARY_CHARS`].
    #[serde(borrow)]
    pub activity: Option<Cow<'a, str>>,
    pub telemetry: SummaryTelemetry,
    pub writer_lease: bool,
    pub disposed: bool,
    pub created_at: u64,
    pub ended_at: Option<u64>,
    /// When the outcome of the generation's latest window reached its parent
    /// ([`ChildSnapshot::delivered_at`]); absent until then.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub delivered_at: Option<u64>,
    /// The identity's presence (rows are current generations); absent in read-only history.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub presence: Option<Presence>,
}

/// Direct usage of the generation; `null` means unavailable (never shown as zero).
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct SummaryTelemetry {
    pub requests: Option<u32>,
    pub tokens: Option<TokenTotal>,
    pub cost: Option<f64>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct TokenTotal {
    pub total: u64,
}

impl<'a> SummaryRow<'a> {
    /// The row of a snapshot, borrowing its text where nothing is clipped.
    pub fn of(s: &'a ChildSnapshot) -> Self {
        Self {
            id: s.id,
            generation: s.generation,
            parent_id: s.parent_id,
            depth: s.depth,
            profile: s.profile,
            status: s.status,
            assignment: clip(&s.assignment),
            activity: s.activity.as_deref().map(clip),
            telemetry: SummaryTelemetry {
                requests: s.telemetry.requests,
                tokens: s.telemetry.tokens.map(|t| TokenTotal { total: t.total }),
                cost: s.telemetry.cost,
            },
            writer_lease: s.writer_lease,
            disposed: s.disposed,
            created_at: s.created_at,
            ended_at: s.ended_at,
            delivered_at: s.delivered_at,
            presence: None,
        }
    }
}

impl FleetSummary<'_> {
    /// The answer with every row's text owned.
    pub fn into_owned(self) -> FleetSummary<'static> {
        FleetSummary {
            parent_id: self.parent_id,
            children: self
                .children
                .into_iter()
                .map(SummaryRow::into_owned)
                .collect(),
            stats: self.stats,
            policy: self.policy,
        }
    }

    /// Reads an owned answer from any deserializer (the protocol's result type must not
    /// borrow from the text it was read from).
    pub fn deserialize_owned<'de, D: serde::Deserializer<'de>>(
        deserializer: D,
    ) -> Result<FleetSummary<'static>, D::Error> {
        FleetSummary::deserialize(deserializer).map(FleetSummary::into_owned)
    }
}

impl SummaryRow<'_> {
    /// The row with its text owned (rows leave the coordinator's actor this way).
    pub fn into_owned(self) -> SummaryRow<'static> {
        SummaryRow {
            assignment: Cow::Owned(self.assignment.into_owned()),
            activity: self.activity.map(|a| Cow::Owned(a.into_owned())),
            ..self
        }
    }
}

fn clip(text: &str) -> Cow<'_, str> {
    if text.len() <= SUMMARY_CHARS {
        Cow::Borrowed(text)
    } else {
        Cow::Owned(clip_chars(text, SUMMARY_CHARS))
    }
}

//! The fleet table's answer (`status {table: true}`): exactly the columns `slate status` and
//! `subagent-status` print, one JSON array per row.
//!
//! A script polling `subagent-status` pays for every byte of the answer twice (the coordinator
//! writes it, the command reads it) and for every JSON value once more (each costs the reader
//! about as much as a few dozen bytes). A [`crate::control::summary::SummaryRow`] object of a
//! settled scout is about 390 bytes in 16 named members; the same row here is about 150 bytes
//! with no member names, and the root parent (every depth-1 row's) is `null`. `--json` keeps
//! printing summary rows, which name their fields.
//!
//! The text fields borrow from the text they are read from, as summary rows do; the protocol's
//! own result owns them ([`FleetTable::deserialize_owned`]).

use std::borrow::Cow;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use uuid::Uuid;

use crate::control::summary::SummaryRow;
use crate::core::{Presence, Role, Status};

/// `status {table: true}`: the current generations in admission order.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct FleetTable<'a> {
    pub parent_id: Uuid,
    #[serde(borrow, deserialize_with = "rows_with_room")]
    pub rows: Vec<TableRow<'a>>,
}

/// Rows read into a vector with room for [`ROWS_ROOM`] of them from the start: reserved
/// memory costs only as it is filled, while growing by doubling copies every row into fresh
/// pages at each step (a page fault is the largest cost of a one-shot read).
const ROWS_ROOM: usize = 1024;

fn rows_with_room<'de: 'a, 'a, D: serde::Deserializer<'de>>(
    deserializer: D,
) -> Result<Vec<TableRow<'a>>, D::Error> {
    struct Rows<'a>(std::marker::PhantomData<TableRow<'a>>);
    impl<'de: 'a, 'a> serde::de::Visitor<'de> for Rows<'a> {
        type Value = Vec<TableRow<'a>>;
        fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
            f.write_str("an array of table rows")
        }
        fn visit_seq<A: serde::de::SeqAccess<'de>>(
            self,
            mut seq: A,
        ) -> Result<Self::Value, A::Error> {
            let mut rows = Vec::with_capacity(seq.size_hint().unwrap_or(ROWS_ROOM));
            while let Some(row) = seq.next_element()? {
                rows.push(row);
            }
            Ok(rows)
        }
    }
    deserializer.deserialize_seq(Rows(std::marker::PhantomData))
}

/// One current generation as the table shows it: a JSON array of these fifteen values, in
/// this order (`[id, generation, parent, depth, profile, status, assignment, activity,
/// requests, tokens, cost, createdAt, endedAt, writerLease, presence]`). Its text is clipped
/// like a summary row's.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct TableRow<'a>(
    /// id
    pub Uuid,
    /// generation
    pub u32,
    /// parent: the real parent's id, `null` for the root (every depth-1 row)
    pub Option<Uuid>,
    /// depth
    pub u32,
    /// profile
    pub Role,
    /// status
    pub Status,
    /// assignment, clipped to `SUMMARY_CHARS`
    #[serde(borrow)]
    pub Cow<'a, str>,
    /// newest activity, clipped to `SUMMARY_CHARS`
    #[serde(borrow)]
    pub Option<Cow<'a, str>>,
    /// requests (`null`: unavailable, never shown as zero)
    pub Option<u32>,
    /// total tokens (`null`: unavailable)
    pub Option<u64>,
    /// cost (`null`: unavailable)
    pub Option<f64>,
    /// createdAt (epoch milliseconds)
    pub u64,
    /// endedAt (`null` until disposal)
    pub Option<u64>,
    /// writerLease
    pub bool,
    /// the identity's presence; `null` in read-only history
    pub Option<Presence>,
);

/// A table row by name: what [`TableRow`]'s positions mean, for the code that reads them.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Cells<'r> {
    pub id: Uuid,
    pub generation: u32,
    /// `None`: the root.
    pub parent: Option<Uuid>,
    pub depth: u32,
    pub profile: Role,
    pub status: Status,
    pub assignment: &'r str,
    pub activity: Option<&'r str>,
    pub requests: Option<u32>,
    pub tokens: Option<u64>,
    pub cost: Option<f64>,
    pub created_at: u64,
    pub ended_at: Option<u64>,
    pub writer_lease: bool,
    pub presence: Option<Presence>,
}

impl<'a> TableRow<'a> {
    /// The table's columns of a summary row of the fleet whose root is `root`, borrowing its
    /// text.
    pub fn of(row: &'a SummaryRow<'_>, root: Uuid) -> Self {
        let t = &row.telemetry;
        Self(
            row.id,
            row.generation,
            (row.parent_id != root).then_some(row.parent_id),
            row.depth,
            row.profile,
            row.status,
            Cow::Borrowed(&row.assignment),
            row.activity.as_deref().map(Cow::Borrowed),
            t.requests,
            t.tokens.map(|t| t.total),
            t.cost,
            row.created_at,
            row.ended_at,
            row.writer_lease,
            row.presence,
        )
    }

    /// The row by name.
    pub fn cells(&self) -> Cells<'_> {
        let Self(
            id,
            generation,
            parent,
            depth,
            profile,
            status,
            assignment,
            activity,
            requests,
            tokens,
            cost,
            created_at,
            ended_at,
            writer_lease,
            presence,
        ) = self;
        Cells {
            id: *id,
            generation: *generation,
            parent: *parent,
            depth: *depth,
            profile: *profile,
            status: *status,
            assignment,
            activity: activity.as_deref(),
            requests: *requests,
            tokens: *tokens,
            cost: *cost,
            created_at: *created_at,
            ended_at: *ended_at,
            writer_lease: *writer_lease,
            presence: *presence,
        }
    }

    /// The row with its text owned.
    pub fn into_owned(self) -> TableRow<'static> {
        let Self(
            id,
            generation,
            parent,
            depth,
            profile,
            status,
            assignment,
            activity,
            requests,
            tokens,
            cost,
            created_at,
            ended_at,
            writer_lease,
            presence,
        ) = self;
        TableRow(
            id,
            generation,
            parent,
            depth,
            profile,
            status,
            Cow::Owned(assignment.into_owned()),
            activity.map(|a| Cow::Owned(a.into_owned())),
            requests,
            tokens,
            cost,
            created_at,
            ended_at,
            writer_lease,
            presence,
        )
    }
}

impl FleetTable<'_> {
    /// Reads an owned answer from any deserializer (the protocol's result type must not
    /// borrow from the text it was read from).
    pub fn deserialize_owned<'de, D: serde::Deserializer<'de>>(
        deserializer: D,
    ) -> Result<FleetTable<'static>, D::Error> {
        let table = FleetTable::deserialize(deserializer)?;
        Ok(FleetTable {
            parent_id: table.parent_id,
            rows: table.rows.into_iter().map(TableRow::into_owned).collect(),
        })
    }
}

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
use std::fmt::Write as _;

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

/// `status {text: true}`: the fleet table exactly as `slate status` and `subagent-status`
/// print it (header line, rows in tree order, each line ending in a newline).
///
/// The coordinator writes it with the same [`write_fleet_table`] the command would run on
/// table rows, and keeps it while nothing changes (a table whose every row has ended has no
/// clock in it). The command then only copies it to stdout: reading 1,000 compact rows and
/// writing their lines was most of a poll's own work.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct FleetText<'a> {
    pub parent_id: Uuid,
    /// The lines, already sanitized for a terminal (untrusted text went through
    /// [`crate::text::SafeText`] as it was fitted to its column).
    #[serde(borrow)]
    pub text: Cow<'a, str>,
}

impl FleetText<'_> {
    /// Reads an owned answer (the protocol's result type must not borrow).
    pub fn deserialize_owned<'de, D: serde::Deserializer<'de>>(
        deserializer: D,
    ) -> Result<FleetText<'static>, D::Error> {
        let text = FleetText::deserialize(deserializer)?;
        Ok(FleetText {
            parent_id: text.parent_id,
            text: Cow::Owned(text.text.into_owned()),
        })
    }
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

    /// The row with its text owned (only the two text cells change).
    pub fn into_owned(self) -> TableRow<'static> {
        TableRow(
            self.0,
            self.1,
            self.2,
            self.3,
            self.4,
            self.5,
            Cow::Owned(self.6.into_owned()),
            self.7.map(|a| Cow::Owned(a.into_owned())),
            self.8,
            self.9,
            self.10,
            self.11,
            self.12,
            self.13,
            self.14,
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

/// The fleet table (`status` without a target) from typed table rows, written to `out` a
/// few dozen kilobytes at a time (a 1,000-row table is never held whole).
pub fn write_fleet_table(
    out: &mut impl std::io::Write,
    parent_id: uuid::Uuid,
    rows: &[TableRow<'_>],
) -> std::io::Result<()> {
    write_fleet_table_at(out, parent_id, rows, crate::runtime::now_ms())
}

/// [`write_fleet_table`] with rows that have not ended counted up to `now`.
pub fn write_fleet_table_at(
    out: &mut impl std::io::Write,
    parent_id: uuid::Uuid,
    rows: &[TableRow<'_>],
    now: u64,
) -> std::io::Result<()> {
    const CHUNK: usize = 32 * 1024;
    let count = |status: Status| rows.iter().filter(|r| r.5 == status).count();
    let mut text = String::with_capacity(CHUNK + 1024);
    let _ = writeln!(
        text,
        "parent {} · {} current generations · running {} · queued {} · settled {} · failed {} · cancelled {} · paused {}",
        parent_id,
        rows.len(),
        count(Status::Running),
        count(Status::Queued),
        count(Status::Settled),
        count(Status::Failed),
        count(Status::Cancelled),
        count(Status::Paused),
    );
    for row in tree_order(rows) {
        let c = row.cells();
        // The short handle first, for the eye (`UUID@generation` is what commands take).
        let handle = crate::core::ChildRef::new(c.id, c.generation).handle();
        push_padded(&mut text, &handle, HANDLE_COLUMN);
        text.push(' ');
        row_line(&mut text, &c, now);
        text.push_str("  [");
        text.push_str(c.presence.map_or("", Presence::as_str));
        text.push_str("]\n");
        if text.len() >= CHUNK {
            out.write_all(text.as_bytes())?;
            text.clear();
        }
    }
    out.write_all(text.as_bytes())
}

/// The fleet table fitted to `width` columns (`slate status --width`, what pi's
/// `/subagent-status` asks for): the counts line broken between its ` · ` parts, and one line
/// per generation with the handle (not the full identity: completion and `--json` give that),
/// role, status, elapsed time and lease, then, as room allows, presence, requests, tokens and
/// cost, and the activity (or the assignment) cut with `…`. No line is wider than `width`
/// (at least [`MIN_FITTED_WIDTH`]).
pub fn write_fitted_table_at(
    out: &mut String,
    parent_id: uuid::Uuid,
    rows: &[TableRow<'_>],
    now: u64,
    width: usize,
) {
    let width = width.max(MIN_FITTED_WIDTH);
    let count = |status: Status| rows.iter().filter(|r| r.5 == status).count();
    let parts = [
        format!(
            "parent {}",
            parent_id.simple().to_string().get(..8).unwrap_or_default()
        ),
        format!("{} current", rows.len()),
        format!("running {}", count(Status::Running)),
        format!("queued {}", count(Status::Queued)),
        format!("settled {}", count(Status::Settled)),
        format!("failed {}", count(Status::Failed)),
        format!("cancelled {}", count(Status::Cancelled)),
        format!("paused {}", count(Status::Paused)),
    ];
    let mut line_len = 0;
    for part in &parts {
        if line_len > 0 && line_len + 3 + part.len() > width {
            out.push('\n');
            line_len = 0;
        }
        if line_len > 0 {
            out.push_str(" · ");
            line_len += 3;
        }
        out.push_str(part);
        line_len += part.len();
    }
    out.push('\n');
    let with_counts = width >= 100;
    for row in tree_order(rows) {
        let c = row.cells();
        let start = out.len();
        push_padded(
            out,
            &crate::core::ChildRef::new(c.id, c.generation).handle(),
            HANDLE_COLUMN,
        );
        out.push(' ');
        // Two columns per level below the root's children, as far as the width allows.
        let levels = (c.depth.saturating_sub(1) as usize).min((width - FITTED_FIXED) / 2);
        pad_to(out, 2 * levels);
        push_padded(out, c.profile.as_str(), 14);
        out.push(' ');
        push_padded(out, c.status.as_str(), 9);
        push_elapsed_column(out, &c, now);
        out.push_str(if c.writer_lease { " W" } else { "  " });
        if with_counts {
            out.push(' ');
            push_padded(out, c.presence.map_or("", Presence::as_str), 7);
            out.push_str(" req ");
            push_padded(
                out,
                &c.requests.map_or("—".to_owned(), |n| n.to_string()),
                3,
            );
            out.push_str(" tok ");
            push_padded(
                out,
                &c.tokens.map_or("—".to_owned(), crate::text::compact_count),
                6,
            );
            match c.cost {
                Some(cost) => {
                    out.push_str(" $");
                    crate::text::push_fixed4(out, cost);
                }
                None => out.push_str(" —      "),
            }
        }
        // Everything so far is ASCII but the dashes: count columns, not bytes.
        let used = crate::text::width(&out[start..]);
        let room = width.saturating_sub(used + 2);
        if room >= 8 {
            out.push_str("  ");
            let text = c.activity.filter(|a| !a.is_empty()).unwrap_or(c.assignment);
            crate::text::push_line_fit(out, text, room);
        }
        out.push('\n');
    }
}

/// The narrowest width [`write_fitted_table_at`] lays out for: the fixed columns and a few
/// columns of text.
pub const MIN_FITTED_WIDTH: usize = 56;

/// The fixed columns of a fitted row: handle, role, status, elapsed, lease.
const FITTED_FIXED: usize = HANDLE_COLUMN + 1 + 14 + 1 + 9 + 6 + 2;

/// Admission to disposal, or to now while it lasts, right-aligned in 6 columns (ASCII).
fn push_elapsed_column(out: &mut String, c: &Cells<'_>, now: u64) {
    let elapsed = c.ended_at.unwrap_or(now).saturating_sub(c.created_at);
    let start = out.len();
    crate::text::push_elapsed(out, elapsed);
    let short = 6usize.saturating_sub(out.len() - start);
    out.insert_str(start, &"      "[..short]);
}

/// The handle column's width: 8 hex digits and `@N` up to generation 99.
const HANDLE_COLUMN: usize = 11;

/// Rows in tree order: each child right under its parent, siblings in admission order.
/// Rows whose parent is not listed (the root's children, or a parent outside the selection)
/// are roots.
fn tree_order<'r, 'a>(rows: &'r [TableRow<'a>]) -> Vec<&'r TableRow<'a>> {
    // Every row a child of the root: all roots, as listed.
    if rows.iter().all(|r| r.2.is_none()) {
        return rows.iter().collect();
    }
    let listed: std::collections::HashSet<uuid::Uuid> = rows.iter().map(|r| r.0).collect();
    let mut children: std::collections::HashMap<uuid::Uuid, Vec<&'r TableRow<'a>>> =
        std::collections::HashMap::new();
    let mut roots = Vec::new();
    for r in rows {
        match r.2 {
            Some(parent) if listed.contains(&parent) && parent != r.0 => {
                children.entry(parent).or_default().push(r);
            }
            _ => roots.push(r),
        }
    }
    let mut out = Vec::with_capacity(rows.len());
    let mut stack: Vec<&'r TableRow<'a>> = roots.into_iter().rev().collect();
    while let Some(r) = stack.pop() {
        out.push(r);
        if let Some(kids) = children.remove(&r.0) {
            stack.extend(kids.into_iter().rev());
        }
    }
    out
}

/// One row, without a line end: the same columns as [`snapshot_line`].
pub(crate) fn row_line(out: &mut String, c: &Cells<'_>, now: u64) {
    // Written straight into `out` (no string per cell, no formatting machinery): this runs
    // for every row of the table.
    use crate::text::push_u64;
    for _ in 1..c.depth {
        out.push_str("  ");
    }
    out.push_str(
        c.id.hyphenated()
            .encode_lower(&mut uuid::Uuid::encode_buffer()),
    );
    out.push('@');
    push_u64(out, u64::from(c.generation));
    out.push(' ');
    push_padded(out, c.profile.as_str(), 14);
    out.push(' ');
    push_padded(out, c.status.as_str(), 9);
    out.push(' ');
    let written = crate::text::push_line_fit(out, c.assignment, 36);
    pad_to(out, 36usize.saturating_sub(written));
    out.push_str(" req ");
    match c.requests {
        Some(n) => push_u64(out, u64::from(n)),
        None => out.push('—'),
    }
    out.push_str(" tok ");
    match c.tokens {
        Some(n) => push_u64(out, n),
        None => out.push('—'),
    }
    match c.cost {
        Some(cost) => {
            out.push_str(" $");
            crate::text::push_fixed4(out, cost);
            out.push(' ');
        }
        None => out.push_str(" — "),
    }
    push_elapsed_column(out, c, now);
    if c.writer_lease {
        out.push_str(" W");
    }
    out.push_str("  ");
    let _ = crate::text::push_line_fit(out, c.activity.unwrap_or_default(), 40);
}

/// An ASCII word (a profile, a status) left-aligned in `columns`, as `{:<columns}` writes it.
fn push_padded(out: &mut String, word: &str, columns: usize) {
    out.push_str(word);
    pad_to(out, columns.saturating_sub(word.len()));
}

fn pad_to(out: &mut String, spaces: usize) {
    const SPACES: &str = "                                                ";
    let mut left = spaces;
    while left > 0 {
        let n = left.min(SPACES.len());
        out.push_str(&SPACES[..n]);
        left -= n;
    }
}

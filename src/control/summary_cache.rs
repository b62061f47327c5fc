//! The summary and table answers (`status {summary: true}`, `status {table: true}`) kept
//! between changes.
//!
//! Scripts poll `subagent-status`; between two polls of a large fleet usually nothing changed.
//! The server keeps the rows it last read and the answers it wrote from them, with the
//! registry epoch they were read at (`RuntimeHandle::registry_epoch`: one more after every
//! input the coordinator applies). While the epoch has not moved, the kept text is the
//! answer without asking the actor at all. After inputs, the actor compares the fleet as it
//! stands with the kept rows (borrowed, field by field, nothing allocated or serialized), and
//! the kept text still answers when they are equal. So a kept text is only ever served for
//! exactly the [`FleetSummary`] it was written from (the table answer is a function of the
//! same rows): correctness does not depend on knowing which inputs change what.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock, PoisonError};

use serde_json::value::RawValue;

use crate::control::methods::FleetStats;
use crate::control::summary::{FleetSummary, SummaryRow};
use crate::control::table::{FleetTable, FleetText, TableRow, write_fleet_table_at};
use crate::core::Coordinator;

/// The last summary answer read from the registry, and its texts once written.
#[derive(Default)]
pub struct SummaryCache {
    last: Mutex<Option<Arc<Written>>>,
}

/// The fleet as it was read, and its answers' texts, each written the first time it is asked
/// for.
pub struct Written {
    summary: FleetSummary<'static>,
    /// The registry epoch these rows are known to be the fleet of
    /// (`RuntimeHandle::registry_epoch`).
    epoch: AtomicU64,
    /// The summary answer (`status {summary: true}`).
    text: OnceLock<Arc<RawValue>>,
    /// The table answer (`status {table: true}`).
    table: OnceLock<Arc<RawValue>>,
    /// The text answer (`status {text: true}`), kept only when no row's elapsed time is
    /// still counting (every row has ended).
    rendered: OnceLock<Arc<RawValue>>,
}

/// What the actor read.
pub enum Summary {
    /// Nothing changed since this was read.
    Unchanged(Arc<Written>),
    /// The answer as it stands, to be kept ([`SummaryCache::keep`]).
    Changed(FleetSummary<'static>),
}

impl SummaryCache {
    /// Outside the actor: what was kept, if no input was applied since it was read (the
    /// registry is still at `epoch`). Nothing of the registry is touched: the answer to a
    /// poll of an unchanged fleet costs no trip through the actor.
    pub fn fresh(&self, epoch: u64) -> Option<Arc<Written>> {
        let last = self.last.lock().unwrap_or_else(PoisonError::into_inner);
        last.as_ref()
            .filter(|last| last.epoch.load(Ordering::Acquire) == epoch)
            .cloned()
    }

    /// Inside the actor, with the registry at `epoch`: what was kept, if the fleet (`c`,
    /// with `stats`) still is what it was read from, else the rows as they stand (owned, to
    /// leave the actor). Inputs that changed nothing a row shows (a streamed text delta)
    /// keep the answer: the rows are compared field by field.
    pub fn read(&self, c: &Coordinator, stats: FleetStats, epoch: u64) -> Summary {
        let last = self
            .last
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone();
        if let Some(last) = last {
            let same = last.epoch.load(Ordering::Acquire) == epoch
                || (last.summary.parent_id == c.root_id()
                    && last.summary.stats == stats
                    && last.summary.policy == *c.policy()
                    && unchanged(&last.summary.children, c));
            if same {
                last.epoch.store(epoch, Ordering::Release);
                return Summary::Unchanged(last);
            }
        }
        let children = c.iter_current().map(|row| current(row).into_owned());
        Summary::Changed(FleetSummary {
            parent_id: c.root_id(),
            children: children.collect(),
            stats,
            policy: *c.policy(),
        })
    }

    /// Outside the actor: keeps a changed answer read at `epoch` (its texts are written when
    /// asked for).
    pub fn keep(&self, summary: FleetSummary<'static>, epoch: u64) -> Arc<Written> {
        let written = Arc::new(Written {
            summary,
            epoch: AtomicU64::new(epoch),
            text: OnceLock::new(),
            table: OnceLock::new(),
            rendered: OnceLock::new(),
        });
        *self.last.lock().unwrap_or_else(PoisonError::into_inner) = Some(Arc::clone(&written));
        written
    }
}

impl Written {
    /// The scheduling policy the rows were read under.
    pub fn policy(&self) -> &crate::policy::scheduling::SchedulingPolicy {
        &self.summary.policy
    }

    /// The summary answer's text.
    pub fn summary_text(&self) -> serde_json::Result<Arc<RawValue>> {
        once(&self.text, || crate::json::to_raw_value(&self.summary))
    }

    /// The table answer's text: the same rows, as the table's compact arrays.
    pub fn table_text(&self) -> serde_json::Result<Arc<RawValue>> {
        once(&self.table, || {
            let parent_id = self.summary.parent_id;
            let rows = self.summary.children.iter();
            crate::json::to_raw_value(&FleetTable {
                parent_id,
                rows: rows.map(|row| TableRow::of(row, parent_id)).collect(),
            })
        })
    }

    /// The text answer at `now` (epoch milliseconds): the table's lines as `slate status`
    /// prints them. A row that has not ended shows its elapsed time up to `now`, so such a
    /// table is written for each answer; one whose rows have all ended is written once.
    pub fn rendered_text(&self, now: u64) -> serde_json::Result<Arc<RawValue>> {
        let write = || {
            let parent_id = self.summary.parent_id;
            let rows: Vec<TableRow<'_>> = self
                .summary
                .children
                .iter()
                .map(|row| TableRow::of(row, parent_id))
                .collect();
            let mut text = Vec::with_capacity(160 * (rows.len() + 1));
            // Writing into memory cannot fail.
            let _ = write_fleet_table_at(&mut text, parent_id, &rows, now);
            crate::json::to_raw_value(&FleetText {
                parent_id,
                text: String::from_utf8_lossy(&text),
            })
        };
        if self
            .summary
            .children
            .iter()
            .all(|row| row.ended_at.is_some())
        {
            once(&self.rendered, write)
        } else {
            write().map(Arc::from)
        }
    }
}

/// The text in `slot`, written by `write` the first time (two callers at once may both write
/// it; they write the same text).
fn once(
    slot: &OnceLock<Arc<RawValue>>,
    write: impl FnOnce() -> serde_json::Result<Box<RawValue>>,
) -> serde_json::Result<Arc<RawValue>> {
    if let Some(text) = slot.get() {
        return Ok(Arc::clone(text));
    }
    let text: Arc<RawValue> = write()?.into();
    Ok(Arc::clone(slot.get_or_init(|| text)))
}

/// A current generation's row, borrowing from its snapshot.
fn current(
    (snapshot, presence): (&crate::core::ChildSnapshot, crate::core::Presence),
) -> SummaryRow<'_> {
    SummaryRow {
        presence: Some(presence),
        ..SummaryRow::of(snapshot)
    }
}

/// Whether the current generations are, in order, exactly `rows`.
fn unchanged(rows: &[SummaryRow<'static>], c: &Coordinator) -> bool {
    let mut now = c.iter_current();
    rows.iter()
        .all(|row| now.next().is_some_and(|s| current(s) == *row))
        && now.next().is_none()
}

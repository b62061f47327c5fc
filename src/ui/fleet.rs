//! The fleet widget: a bounded, semantic tree of the current registry for an inline
//! viewport (`slate watch`, foreground `slate delegate`).
//!
//! [`Fleet`] is the widget's copy of the registry's current generations, fed by `status`
//! reads and `changed` events; it is never a second authority. [`FleetView`] borrows it with
//! the render time `now` and lays rows out inside a height budget:
//!
//! * no rows at all while the registry is empty;
//! * a header with current counts, then the tree: indentation by real `depth`, role,
//!   assignment headline, actual status, elapsed, direct stats, newest activity;
//! * queued entries collapsed into one count line;
//! * live subtrees first (admission order), paused next, then terminal ones, newest first;
//!   whatever does not fit is counted in a `+N more` line;
//! * unknown usage (`null`) is omitted, requests are `req` (never turns), no context
//!   percentage is computed, elapsed is `createdAt` → `endedAt` or `now`;
//! * the writer mark comes only from the snapshot's actual `writerLease`.
//!
//! A row is *finished* once its status is terminal **and** it is disposed (`endedAt` set):
//! [`Fleet::take_finished`] hands each finished generation out exactly once, for a record line
//! ([`finished_line`]) inserted above the inline viewport, where it scrolls away.

mod fit;
mod plain;
mod row;

use std::collections::{HashMap, HashSet};

use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::text::Line;
use ratatui::widgets::Widget;
use uuid::Uuid;

use crate::core::{ChildRef, ChildSnapshot, Millis, Status};

pub use fit::{fit_spans, line_width, wrap};
pub use plain::{buffer_rows, plain_lines};
pub use row::{elapsed, finished_line, glyph, stats};

/// The widget's copy of the registry's current generations.
#[derive(Clone, Debug, Default)]
pub struct Fleet {
    /// The current generation of each identity.
    current: HashMap<Uuid, ChildSnapshot>,
    /// Finished generations already handed out by [`Fleet::take_finished`].
    scrolled: HashSet<ChildRef>,
}

impl Fleet {
    pub fn new() -> Self {
        Self::default()
    }

    /// Replaces everything with a full read of the registry (`status` children). Identities
    /// that are gone (a runtime reset) disappear.
    pub fn replace(&mut self, snapshots: Vec<ChildSnapshot>) {
        self.current.clear();
        for s in snapshots {
            self.apply(s);
        }
    }

    /// One `changed` event: a newer (or the same) generation of an identity replaces the
    /// stored one; an older generation's late event is ignored.
    pub fn apply(&mut self, snapshot: ChildSnapshot) {
        match self.current.get(&snapshot.id) {
            Some(old) if old.generation > snapshot.generation => {}
            _ => {
                self.current.insert(snapshot.id, snapshot);
            }
        }
    }

    /// Marks everything already finished as shown: rows that finished before the widget
    /// attached stay in the widget but are not printed again above it.
    pub fn baseline(&mut self) {
        let finished: Vec<ChildRef> = self
            .current
            .values()
            .filter(|s| is_finished(s))
            .map(ChildSnapshot::child_ref)
            .collect();
        self.scrolled.extend(finished);
    }

    /// Finished generations not handed out before, in the order they ended. Each one is
    /// returned exactly once for the lifetime of this `Fleet`.
    pub fn take_finished(&mut self) -> Vec<ChildSnapshot> {
        let mut out: Vec<ChildSnapshot> = self
            .current
            .values()
            .filter(|s| is_finished(s) && !self.scrolled.contains(&s.child_ref()))
            .cloned()
            .collect();
        out.sort_by_key(|s| (s.ended_at, s.created_at, s.id));
        self.scrolled
            .extend(out.iter().map(ChildSnapshot::child_ref));
        out
    }

    pub fn is_empty(&self) -> bool {
        self.current.is_empty()
    }

    pub fn len(&self) -> usize {
        self.current.len()
    }

    /// The current generations in admission order.
    pub fn snapshots(&self) -> Vec<&ChildSnapshot> {
        let mut all: Vec<&ChildSnapshot> = self.current.values().collect();
        all.sort_by_key(|s| (s.created_at, s.id));
        all
    }
}

/// Terminal and disposed: the row's line can be printed for good.
pub fn is_finished(s: &ChildSnapshot) -> bool {
    s.status.is_terminal() && s.disposed && s.ended_at.is_some()
}

/// Live resources first, then paused work, then terminal rows.
fn rank(status: Status) -> u8 {
    match status {
        Status::Queued | Status::Setup | Status::Running | Status::Pausing | Status::Draining => 0,
        Status::Paused => 1,
        Status::Settled | Status::Failed | Status::Cancelled => 2,
    }
}

/// What the view lays out for one height budget.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Layout {
    /// The rows shown, in order (queued entries excluded).
    pub shown: Vec<ChildRef>,
    /// Queued entries, collapsed into one line (0 when the line does not fit; the header
    /// still counts them).
    pub queued: usize,
    /// Rows that did not fit.
    pub overflow: usize,
}

/// A borrowed view of the fleet at render time `now` (epoch milliseconds).
pub struct FleetView<'a> {
    fleet: &'a Fleet,
    now: Millis,
}

impl<'a> FleetView<'a> {
    pub fn new(fleet: &'a Fleet, now: Millis) -> Self {
        Self { fleet, now }
    }

    /// Rows in tree order: live subtrees first (admission order), then paused, then terminal
    /// subtrees (newest end first); queued entries are left out (they are counted).
    fn ordered(&self) -> (Vec<&'a ChildSnapshot>, usize) {
        let all = self.fleet.snapshots();
        let ids: HashSet<Uuid> = all.iter().map(|s| s.id).collect();
        let mut children: HashMap<Uuid, Vec<&ChildSnapshot>> = HashMap::new();
        let mut roots = Vec::new();
        for s in &all {
            if s.parent_id != s.id && ids.contains(&s.parent_id) {
                children.entry(s.parent_id).or_default().push(s);
            } else {
                roots.push(*s);
            }
        }
        // The best rank in each subtree decides where the subtree goes.
        let mut subtree_rank: HashMap<Uuid, u8> = HashMap::new();
        for s in &all {
            subtree_rank.insert(s.id, best_rank(s, &children, &mut HashSet::new()));
        }
        let key = |s: &ChildSnapshot| {
            let r = subtree_rank.get(&s.id).copied().unwrap_or(2);
            // Terminal subtrees: newest end first; everything else in admission order.
            let when = if r == 2 {
                u64::MAX - s.ended_at.unwrap_or(s.created_at)
            } else {
                s.created_at
            };
            (r, when, s.id)
        };
        roots.sort_by_key(|s| key(s));
        for list in children.values_mut() {
            list.sort_by_key(|s| key(s));
        }
        let mut out = Vec::with_capacity(all.len());
        let mut queued = 0;
        let mut seen = HashSet::new();
        let mut stack: Vec<&ChildSnapshot> = roots.into_iter().rev().collect();
        while let Some(s) = stack.pop() {
            if !seen.insert(s.id) {
                continue;
            }
            if s.status == Status::Queued {
                queued += 1;
            } else {
                out.push(s);
            }
            if let Some(kids) = children.get(&s.id) {
                stack.extend(kids.iter().rev());
            }
        }
        (out, queued)
    }

    /// Which rows fit in `height` lines (header, rows, queued count, overflow count).
    pub fn layout(&self, height: u16) -> Layout {
        if self.fleet.is_empty() || height == 0 {
            return Layout::default();
        }
        let (rows, queued) = self.ordered();
        let room = usize::from(height) - 1; // the header
        // The queue line goes first when space is short: the header still counts the queue,
        // and live rows are the priority.
        let queue_line = queued > 0 && rows.len() < room;
        let shown = if rows.len() <= room {
            rows.len()
        } else {
            room.saturating_sub(1) // the "+N more" line
        };
        Layout {
            shown: rows.iter().take(shown).map(|s| s.child_ref()).collect(),
            queued: if queue_line { queued } else { 0 },
            overflow: rows.len() - shown,
        }
    }

    /// True when a visible row's elapsed time is still running (the 1 s tick is needed).
    pub fn ticking(&self, height: u16) -> bool {
        let layout = self.layout(height);
        layout.shown.iter().any(|r| {
            self.fleet
                .current
                .get(&r.id)
                .is_some_and(|s| s.ended_at.is_none())
        })
    }

    /// The lines for a `width` × `height` area; every line fits `width`.
    pub fn lines(&self, width: u16, height: u16) -> Vec<Line<'static>> {
        let layout = self.layout(height);
        if self.fleet.is_empty() || height == 0 {
            return Vec::new();
        }
        let width = usize::from(width);
        let mut lines = Vec::with_capacity(usize::from(height));
        lines.push(row::header(&self.fleet.snapshots(), width));
        if height == 1 {
            return lines;
        }
        for r in &layout.shown {
            if let Some(s) = self.fleet.current.get(&r.id) {
                lines.push(row::tree_row(s, self.now, width));
            }
        }
        if layout.queued > 0 {
            let queued: Vec<&ChildSnapshot> = self
                .fleet
                .snapshots()
                .into_iter()
                .filter(|s| s.status == Status::Queued)
                .collect();
            lines.push(row::queued_line(&queued, width));
        }
        if layout.overflow > 0 && lines.len() < usize::from(height) {
            lines.push(row::overflow_line(layout.overflow, width));
        }
        lines.truncate(usize::from(height));
        lines
    }

    /// How many lines the widget wants at most for `max` rows of room (0 when empty).
    pub fn wanted_height(&self, max: u16) -> u16 {
        if self.fleet.is_empty() {
            return 0;
        }
        let (rows, queued) = self.ordered();
        let want = 1 + rows.len() + usize::from(queued > 0);
        u16::try_from(want).unwrap_or(u16::MAX).min(max)
    }
}

fn best_rank(
    s: &ChildSnapshot,
    children: &HashMap<Uuid, Vec<&ChildSnapshot>>,
    seen: &mut HashSet<Uuid>,
) -> u8 {
    if !seen.insert(s.id) {
        return 2;
    }
    let mut best = rank(s.status);
    if let Some(kids) = children.get(&s.id) {
        for k in kids {
            best = best.min(best_rank(k, children, seen));
        }
    }
    best
}

impl Widget for &FleetView<'_> {
    fn render(self, area: Rect, buf: &mut Buffer) {
        for (i, line) in self.lines(area.width, area.height).iter().enumerate() {
            let Ok(dy) = u16::try_from(i) else { break };
            let row = Rect::new(area.x, area.y + dy, area.width, 1);
            line.render(row, buf);
        }
    }
}

/// One frame of the inline widget: every newly finished generation is printed once above
/// the viewport (where it scrolls away into the normal scrollback), then the widget is
/// drawn once at render time `now`.
pub fn draw<B: ratatui::backend::Backend>(
    terminal: &mut ratatui::Terminal<B>,
    fleet: &mut Fleet,
    now: Millis,
) -> std::io::Result<()> {
    let finished = fleet.take_finished();
    if !finished.is_empty() {
        let width = usize::from(terminal.size()?.width);
        let lines: Vec<Line<'static>> = finished.iter().map(|s| finished_line(s, width)).collect();
        let height = u16::try_from(lines.len()).unwrap_or(u16::MAX);
        terminal.insert_before(height, |buf| {
            let area = buf.area;
            for (i, line) in lines.iter().enumerate() {
                let Ok(dy) = u16::try_from(i) else { break };
                if dy >= area.height {
                    break;
                }
                line.render(Rect::new(area.x, area.y + dy, area.width, 1), buf);
            }
        })?;
    }
    terminal.draw(|frame| {
        let area = frame.area();
        frame.render_widget(&FleetView::new(fleet, now), area);
    })?;
    Ok(())
}

//! The roster: every generation the registry reported, ordered as a tree by real depth (or
//! by a `:sort` key), filtered by `/`. It only mirrors registry snapshots; nothing here is
//! decided by the Hub.

use std::collections::{BTreeMap, HashMap};

use uuid::Uuid;

use crate::core::{AgentPresence, ChildRef, ChildSnapshot, Millis, Presence, Status};
use crate::text::SafeText;

/// One generation as the registry last reported it, plus when the Hub observed that report.
#[derive(Clone, Debug)]
pub struct Entry {
    pub snapshot: ChildSnapshot,
    /// Lower-cased searchable text: identity, role, status, assignment, activity, progress,
    /// result, model, error.
    haystack: String,
    /// The assignment's first non-empty line, cleaned.
    pub headline: SafeText,
    /// When the Hub last received a registry change for this generation (epoch ms, the
    /// Hub's clock). `stalled` is measured from here.
    pub observed_at: Millis,
}

impl Entry {
    fn new(snapshot: ChildSnapshot, observed_at: Millis) -> Self {
        let s = &snapshot;
        let mut haystack = format!(
            "{} {} {}",
            s.child_ref(),
            s.profile.as_str(),
            s.status.as_str()
        );
        for part in [
            Some(s.assignment.as_str()),
            s.activity.as_deref(),
            s.progress.as_deref(),
            s.result.as_deref(),
            s.model.as_deref(),
            s.error.as_deref(),
        ]
        .into_iter()
        .flatten()
        {
            haystack.push(' ');
            haystack.push_str(part);
        }
        let headline = s
            .assignment
            .lines()
            .map(str::trim)
            .find(|l| !l.is_empty())
            .unwrap_or("");
        Self {
            headline: SafeText::line(headline),
            haystack: haystack.to_lowercase(),
            snapshot,
            observed_at,
        }
    }

    pub fn child_ref(&self) -> ChildRef {
        self.snapshot.child_ref()
    }
}

/// How the roster is ordered (`:sort KEY`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum SortKey {
    /// Parents before children, by real depth; generations of one identity together.
    #[default]
    Tree,
    /// Live work first (queued, setup, running, pausing, paused, draining), then terminal.
    Status,
    /// Newest admission first.
    Newest,
    /// Highest reported cost first; unknown cost last.
    Cost,
}

impl SortKey {
    pub const NAMES: &'static str = "tree, status, newest, cost";

    pub fn parse(name: &str) -> Option<Self> {
        match name.trim() {
            "tree" => Some(Self::Tree),
            "status" => Some(Self::Status),
            "newest" => Some(Self::Newest),
            "cost" => Some(Self::Cost),
            _ => None,
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Self::Tree => "tree",
            Self::Status => "status",
            Self::Newest => "newest",
            Self::Cost => "cost",
        }
    }
}

/// A `/` filter: case-insensitive substring; a leading `!` inverts it.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Filter {
    pub text: String,
}

impl Filter {
    pub fn is_active(&self) -> bool {
        !self.needle().is_empty()
    }

    pub fn inverse(&self) -> bool {
        self.text.starts_with('!')
    }

    fn needle(&self) -> String {
        self.text
            .strip_prefix('!')
            .unwrap_or(&self.text)
            .trim()
            .to_lowercase()
    }
}

/// Counts of current generations (old generations excluded) by status.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct FleetCounts {
    pub by_status: BTreeMap<&'static str, usize>,
    pub current: usize,
    pub history: usize,
}

/// Every known generation and the visible, ordered rows.
#[derive(Debug, Default)]
pub struct Roster {
    entries: HashMap<ChildRef, Entry>,
    /// Newest generation the registry reported per identity.
    current: HashMap<Uuid, u32>,
    presence: HashMap<Uuid, AgentPresence>,
    /// Order in which identities were first reported. The registry lists and announces
    /// identities in admission order, so this breaks ties between siblings admitted in the
    /// same millisecond (one batch) the way the coordinator ordered them.
    arrival: HashMap<Uuid, usize>,
    /// Visible rows in order.
    rows: Vec<ChildRef>,
    stale: bool,
    /// A generation was added, or the filter or sort changed: the order must be recomputed.
    /// (The tree order depends only on fields a snapshot never changes.)
    order_stale: bool,
    counts: FleetCounts,
}

fn live_rank(status: Status) -> u8 {
    match status {
        Status::Running => 0,
        Status::Setup => 1,
        Status::Draining => 2,
        Status::Pausing => 3,
        Status::Paused => 4,
        Status::Queued => 5,
        Status::Failed => 6,
        Status::Cancelled => 7,
        Status::Settled => 8,
    }
}

impl Roster {
    /// Inserts or replaces one generation's snapshot. Returns true when it is new.
    pub fn upsert(&mut self, snapshot: ChildSnapshot, observed_at: Millis) -> bool {
        let r = snapshot.child_ref();
        let next = self.arrival.len();
        self.arrival.entry(r.id).or_insert(next);
        let newest = self.current.entry(r.id).or_insert(r.generation);
        if r.generation > *newest {
            *newest = r.generation;
        }
        self.stale = true;
        let new = self
            .entries
            .insert(r, Entry::new(snapshot, observed_at))
            .is_none();
        self.order_stale |= new;
        new
    }

    pub fn set_presence(&mut self, agents: Vec<AgentPresence>) {
        self.presence = agents.into_iter().map(|a| (a.id, a)).collect();
    }

    pub fn get(&self, r: ChildRef) -> Option<&Entry> {
        self.entries.get(&r)
    }

    pub fn len(&self) -> usize {
        self.entries.len()
    }

    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// True when `r` is an older generation than its identity's newest.
    pub fn is_history(&self, r: ChildRef) -> bool {
        self.current.get(&r.id).is_some_and(|&g| g > r.generation)
    }

    pub fn current_generation(&self, id: Uuid) -> Option<u32> {
        self.current.get(&id).copied()
    }

    /// The registry's presence of `r`'s identity, when `r` is its current generation.
    pub fn presence(&self, r: ChildRef) -> Option<Presence> {
        self.presence
            .get(&r.id)
            .filter(|a| a.generation == r.generation)
            .map(|a| a.presence)
    }

    pub fn rows(&self) -> &[ChildRef] {
        &self.rows
    }

    pub fn counts(&self) -> &FleetCounts {
        &self.counts
    }

    /// The filter or the sort changed.
    pub fn mark_stale(&mut self) {
        self.stale = true;
        self.order_stale = true;
    }

    pub fn is_stale(&self) -> bool {
        self.stale
    }

    /// Recomputes the visible rows and the counts when something changed.
    pub fn rebuild(&mut self, filter: &Filter, sort: SortKey) {
        if !self.stale {
            return;
        }
        self.stale = false;
        self.recount();
        // A changed snapshot moves no row in the unfiltered tree: only the counts change.
        if !self.order_stale && !filter.is_active() && sort == SortKey::Tree {
            return;
        }
        self.order_stale = false;
        let needle = filter.needle();
        let inverse = filter.inverse();
        let keep = |e: &Entry| needle.is_empty() || (e.haystack.contains(&needle) != inverse);
        self.rows = if sort == SortKey::Tree {
            self.tree_order()
        } else {
            {
                let mut refs: Vec<ChildRef> = self.entries.keys().copied().collect();
                let e = &self.entries;
                match sort {
                    SortKey::Status => refs.sort_by_key(|r| {
                        let s = &e[r].snapshot;
                        (live_rank(s.status), s.created_at, *r)
                    }),
                    SortKey::Newest => {
                        refs.sort_by_key(|r| (std::cmp::Reverse(e[r].snapshot.created_at), *r));
                    }
                    SortKey::Cost | SortKey::Tree => refs.sort_by(|a, b| {
                        let ca = e[a].snapshot.telemetry.cost;
                        let cb = e[b].snapshot.telemetry.cost;
                        match (ca, cb) {
                            (Some(x), Some(y)) => y.total_cmp(&x).then(a.cmp(b)),
                            (Some(_), None) => std::cmp::Ordering::Less,
                            (None, Some(_)) => std::cmp::Ordering::Greater,
                            (None, None) => a.cmp(b),
                        }
                    }),
                }
                refs
            }
        };
        self.rows.retain(|r| self.entries.get(r).is_some_and(keep));
    }

    fn recount(&mut self) {
        let mut counts = FleetCounts::default();
        for (r, e) in &self.entries {
            if self.is_history(*r) {
                counts.history += 1;
            } else {
                counts.current += 1;
                *counts
                    .by_status
                    .entry(e.snapshot.status.as_str())
                    .or_default() += 1;
            }
        }
        self.counts = counts;
    }

    /// Parents before their children (attached to the exact parent generation); siblings by
    /// their identity's first admission (then the registry's order within one batch),
    /// generations of one identity together.
    fn tree_order(&self) -> Vec<ChildRef> {
        let mut first_created: HashMap<Uuid, Millis> = HashMap::new();
        for e in self.entries.values() {
            let c = first_created.entry(e.snapshot.id).or_insert(u64::MAX);
            *c = (*c).min(e.snapshot.created_at);
        }
        let key = |r: &ChildRef| {
            (
                first_created.get(&r.id).copied().unwrap_or(0),
                self.arrival.get(&r.id).copied().unwrap_or(usize::MAX),
                *r,
            )
        };
        let mut children: HashMap<ChildRef, Vec<ChildRef>> = HashMap::new();
        let mut roots = Vec::new();
        for (r, e) in &self.entries {
            let s = &e.snapshot;
            let parent = s
                .parent_generation
                .map(|g| ChildRef::new(s.parent_id, g))
                .filter(|p| self.entries.contains_key(p));
            match parent {
                Some(p) => children.entry(p).or_default().push(*r),
                None => roots.push(*r),
            }
        }
        roots.sort_by_key(&key);
        for list in children.values_mut() {
            list.sort_by_key(&key);
        }
        let mut out = Vec::with_capacity(self.entries.len());
        let mut stack: Vec<ChildRef> = roots.into_iter().rev().collect();
        while let Some(r) = stack.pop() {
            out.push(r);
            if let Some(list) = children.get(&r) {
                stack.extend(list.iter().rev().copied());
            }
        }
        out
    }
}

/// Why a live generation looks unhealthy: only what the registry reported (a retry in
/// progress) or what the Hub observed itself (no registry change for a while).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Liveness {
    /// The worker reported an automatic retry of a failed request.
    Retrying {
        attempt: u32,
        max_attempts: u32,
        delay_ms: u64,
    },
    /// The same, for a request answered with HTTP 429.
    RateLimited {
        attempt: u32,
        max_attempts: u32,
        delay_ms: u64,
    },
    /// Running, and no registry change for this generation reached the Hub for this long.
    Stalled { for_ms: Millis },
}

impl Liveness {
    pub fn of(entry: &Entry, now: Millis, stall_after_ms: Millis) -> Option<Self> {
        let s = &entry.snapshot;
        if s.disposed || s.status.is_terminal() {
            return None;
        }
        if let Some(r) = s.retry {
            let (attempt, max_attempts, delay_ms) = (r.attempt, r.max_attempts, r.delay_ms);
            return Some(if r.rate_limited {
                Self::RateLimited {
                    attempt,
                    max_attempts,
                    delay_ms,
                }
            } else {
                Self::Retrying {
                    attempt,
                    max_attempts,
                    delay_ms,
                }
            });
        }
        if s.status != Status::Running {
            return None;
        }
        let quiet = now.saturating_sub(entry.observed_at);
        (quiet >= stall_after_ms).then_some(Self::Stalled { for_ms: quiet })
    }

    pub fn label(self) -> String {
        use super::format::duration;
        match self {
            Self::Retrying {
                attempt,
                max_attempts,
                delay_ms,
            } => {
                format!(
                    "retrying {attempt}/{max_attempts} after {}",
                    duration(delay_ms)
                )
            }
            Self::RateLimited {
                attempt,
                max_attempts,
                delay_ms,
            } => format!(
                "rate-limited, retry {attempt}/{max_attempts} after {}",
                duration(delay_ms)
            ),
            Self::Stalled { for_ms } => format!("stalled {}", duration(for_ms)),
        }
    }
}

//! The Hub's state machine: `update(msg) -> Vec<UiEffect>`, no IO. The shell
//! (`event_loop.rs`) turns effects into control calls and feeds results back as messages.

use std::collections::BTreeSet;

use ratatui::layout::Rect;
use serde_json::Value;

use super::details;
use super::keys::Key;
use super::layout::{Areas, Kind};
use super::roster::{Filter, Roster, SortKey};
use super::transcript::{Documents, Line, RowKind, append, documents, partial_assistant};
use super::wrapped::Wrapped;
use crate::control::Method as _;
use crate::control::methods::{
    MessageParams, Request, SteerParams, StopManyParams, Target, TargetParams, WaitParams, method,
};
use crate::core::{AgentPresence, ChildRef, ChildSnapshot, MessageMode, Millis, Reply, Streaming};
use crate::store::event_log::CoordinatorEnd;
use crate::text::SafeText;

/// The `w` wait bound.
pub const WAIT_MS: u64 = 1000;
/// Default for [`HubOptions::stall_after_ms`].
pub const STALL_AFTER_MS: Millis = 60_000;

/// How the Hub behaves; the shell passes it in.
#[derive(Clone, Debug)]
pub struct HubOptions {
    /// A running generation with no registry change reaching the Hub for this long is
    /// shown as `stalled`.
    pub stall_after_ms: Millis,
    /// Shown in the header (e.g. the parent id, or "demo").
    pub title: String,
    /// Clock times in UTC instead of the terminal's zone (tests pin it).
    pub utc: bool,
}

impl Default for HubOptions {
    fn default() -> Self {
        Self {
            stall_after_ms: STALL_AFTER_MS,
            title: String::new(),
            utc: false,
        }
    }
}

/// A control the Hub asks the shell to send, always on exact `UUID@generation` targets.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Action {
    Steer {
        target: ChildRef,
        text: String,
    },
    /// Root `message` (inbox mode) to the target.
    Message {
        target: ChildRef,
        text: String,
    },
    Wait {
        target: ChildRef,
    },
    Stop {
        target: ChildRef,
    },
    StopMany {
        targets: Vec<ChildRef>,
    },
    Park {
        target: ChildRef,
    },
}

impl Action {
    pub fn method(&self) -> &'static str {
        match self {
            Self::Steer { .. } => method::Steer::NAME,
            Self::Message { .. } => method::Message::NAME,
            Self::Wait { .. } => method::Wait::NAME,
            Self::Stop { .. } => method::Stop::NAME,
            Self::StopMany { .. } => method::StopMany::NAME,
            Self::Park { .. } => method::Park::NAME,
        }
    }

    /// The typed request this action sends.
    pub fn request(&self) -> Request {
        match self {
            Self::Steer { target, text } => Request::Steer(SteerParams {
                target: Target(*target),
                text: text.clone(),
            }),
            Self::Message { target, text } => Request::Message(MessageParams {
                target: Some(Target(*target)),
                text: text.clone(),
                mode: MessageMode::Inbox,
            }),
            Self::Wait { target } => Request::Wait(WaitParams {
                timeout_ms: WAIT_MS,
                target: Some(Target(*target)),
                message_id: None,
            }),
            Self::Stop { target } => Request::Stop(TargetParams {
                target: Target(*target),
            }),
            Self::Park { target } => Request::Park(TargetParams {
                target: Target(*target),
            }),
            Self::StopMany { targets } => Request::StopMany(StopManyParams {
                targets: targets.iter().copied().map(Target).collect(),
            }),
        }
    }

    /// The request's params as JSON (what goes on the wire).
    pub fn params(&self) -> Value {
        self.request().params().unwrap_or_default()
    }

    pub(super) fn label(&self) -> String {
        match self {
            Self::StopMany { targets } => format!("stop {} targets", targets.len()),
            Self::Steer { target, .. }
            | Self::Message { target, .. }
            | Self::Wait { target }
            | Self::Stop { target }
            | Self::Park { target } => format!("{} {target}", self.method()),
        }
    }
}

/// A refused or failed control call.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Failure {
    /// The coordinator's rule code, when it refused.
    pub code: Option<String>,
    pub message: String,
}

/// One `transcript` answer for the selection: every message, or those after a cursor.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct TranscriptPart {
    /// The cursor the read continued from; `None` for a read from the start.
    pub after: Option<u64>,
    pub messages: Vec<Value>,
    /// Where the next read continues.
    pub cursor: u64,
    /// The coordinator read from the start because `after` no longer matched the file.
    pub restarted: bool,
}

/// Every message of a generation (a read from the start that returned no cursor).
impl From<Vec<Value>> for TranscriptPart {
    fn from(messages: Vec<Value>) -> Self {
        Self {
            after: None,
            messages,
            cursor: 0,
            restarted: false,
        }
    }
}

/// Everything that can happen to the Hub.
#[derive(Clone, Debug)]
pub enum Msg {
    /// A key, already in the Hub's vocabulary (releases and unused keys never get here).
    Key(Key),
    /// A bracketed paste: text for the open input, never keys.
    Paste(String),
    Resize(u16, u16),
    /// The clock (epoch ms).
    Tick(Millis),
    /// A full read of the registry; `at` is when the read started, so registry changes
    /// received after that are kept over the read's older copies.
    Loaded {
        snapshots: Vec<ChildSnapshot>,
        agents: Vec<AgentPresence>,
        at: Millis,
    },
    /// One registry change.
    Registry {
        child: Box<ChildSnapshot>,
        at: Millis,
    },
    Agents(Vec<AgentPresence>),
    /// The subscription dropped this many events.
    Lagged(u64),
    Transcript {
        target: ChildRef,
        result: Result<TranscriptPart, String>,
    },
    ControlDone {
        id: u64,
        result: Result<Reply, Failure>,
    },
    Disconnected(String),
    /// The coordinator's connection ended: it shut down (its notice came first) or died.
    CoordinatorStopped(CoordinatorEnd),
}

/// What the shell should do.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum UiEffect {
    /// Read the target's transcript: from the start (`after: None`), or only what was
    /// recorded after the cursor of the last read.
    FetchTranscript {
        target: ChildRef,
        after: Option<u64>,
    },
    RefreshAgents,
    /// Re-read the whole registry (after `lagged`).
    Reload,
    Control {
        id: u64,
        action: Action,
    },
}

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Pane {
    #[default]
    Thread,
    Details,
    Tools,
}

impl Pane {
    pub const ALL: [Pane; 3] = [Pane::Thread, Pane::Details, Pane::Tools];

    pub fn name(self) -> &'static str {
        match self {
            Pane::Thread => "thread",
            Pane::Details => "details",
            Pane::Tools => "tools",
        }
    }

    pub(super) fn index(self) -> usize {
        match self {
            Pane::Thread => 0,
            Pane::Details => 1,
            Pane::Tools => 2,
        }
    }
}

/// What a bulk confirmation will do.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Bulk {
    Stop,
    Steer(String),
}

/// An open prompt. Its target is pinned when it opens and shown with it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Prompt {
    Steer {
        target: ChildRef,
        input: String,
    },
    Message {
        target: ChildRef,
        input: String,
    },
    Stop {
        target: ChildRef,
    },
    Bulk {
        action: Bulk,
        targets: Vec<ChildRef>,
        offset: usize,
    },
}

#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub enum Mode {
    #[default]
    Browse,
    Filter {
        previous: String,
    },
    Command {
        input: String,
    },
    Prompt(Prompt),
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum NoticeKind {
    Info,
    Refusal,
    Error,
}

/// The footer's one-line message.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Notice {
    pub kind: NoticeKind,
    pub text: SafeText,
}

/// A pane's scroll position. `follow` (thread only) keeps the newest output in view.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Scroll {
    pub offset: usize,
    pub follow: bool,
}

/// The transcript of the selected generation, fetched lazily.
#[derive(Debug, Default)]
pub(super) struct TranscriptState {
    /// What the shell is fetching now (one at a time).
    in_flight: Option<ChildRef>,
    /// The selection changed, or it changed in the registry, since the last fetch.
    stale: bool,
    loaded_for: Option<ChildRef>,
    /// Where the next read of `loaded_for` continues.
    cursor: Option<u64>,
    docs: Documents,
    error: Option<String>,
    /// Bumped when the documents are replaced (selection, first read, a restarted read).
    epoch: u64,
    /// Bumped on every change (appends and the streamed tail too).
    version: u64,
    /// The selection's assistant message while it streams: its text and its rows, shown
    /// after the transcript's messages.
    partial: Option<(String, Vec<Line>)>,
    /// The streamed message ended: `partial` goes when a transcript fetched after that
    /// arrives (it has the final message), so the thread never shows neither.
    partial_ended: bool,
    /// The fetch in flight was asked for after the streamed message ended.
    partial_replaced: bool,
}

impl TranscriptState {
    /// Follows the selected snapshot's streamed assistant text.
    fn follow_stream(&mut self, snapshot: &ChildSnapshot) {
        match (snapshot.streaming, snapshot.progress.as_deref()) {
            (Some(Streaming::Assistant), Some(text)) => {
                self.partial_ended = false;
                self.partial_replaced = false;
                if self.partial.as_ref().is_none_or(|(shown, _)| shown != text) {
                    self.partial = Some((text.to_owned(), partial_assistant(text)));
                    self.version += 1;
                }
            }
            _ => {
                if self.partial.is_some() {
                    self.partial_ended = true;
                }
            }
        }
    }
}

/// `new` differs from `old` only in what streaming changes (`progress`, `activity`) while it
/// still streams: the transcript (completed messages only) cannot have changed.
fn stream_only_change(old: &ChildSnapshot, new: &ChildSnapshot) -> bool {
    if new.streaming.is_none()
        || old.streaming != new.streaming
        || (old.progress == new.progress && old.activity == new.activity)
    {
        return false;
    }
    let mut masked = old.clone();
    masked.progress.clone_from(&new.progress);
    masked.activity.clone_from(&new.activity);
    masked == *new
}

/// The Hub.
#[derive(Debug)]
#[allow(clippy::struct_excessive_bools)] // independent flags, not a state enum
pub struct Hub {
    pub(super) options: HubOptions,
    pub(super) now: Millis,
    pub(super) size: Rect,
    pub(super) roster: Roster,
    pub(super) filter: Filter,
    pub(super) sort: SortKey,
    pub(super) selected: Option<ChildRef>,
    pub(super) roster_offset: usize,
    pub(super) marks: BTreeSet<ChildRef>,
    pub(super) pane: Pane,
    pub(super) scroll: [Scroll; 3],
    pub(super) mode: Mode,
    pub(super) notice: Option<Notice>,
    pub(super) transcript: TranscriptState,
    pub(super) thread: Wrapped,
    pub(super) tools: Wrapped,
    pub(super) details: Wrapped,
    /// The selection's details as last built (by `prepare`).
    pub(super) details_lines: Vec<Line>,
    pub(super) details_version: u64,
    pub(super) agents_in_flight: bool,
    pub(super) agents_stale: bool,
    pub(super) loaded: bool,
    pub(super) next_id: u64,
    pub(super) pending: Vec<(u64, Action)>,
    pub(super) dirty: bool,
    pub(super) quit: bool,
    /// Set once the coordinator is gone: from then on the roster is its last known states,
    /// and the clock stands still at [`CoordinatorEnd::at`].
    pub(super) coordinator_end: Option<CoordinatorEnd>,
}

impl Hub {
    pub fn new(options: HubOptions, now: Millis) -> Self {
        Self {
            options,
            now,
            size: Rect::new(0, 0, 80, 24),
            roster: Roster::default(),
            filter: Filter::default(),
            sort: SortKey::default(),
            selected: None,
            roster_offset: 0,
            marks: BTreeSet::new(),
            pane: Pane::Thread,
            scroll: [
                Scroll {
                    offset: 0,
                    follow: true,
                },
                Scroll::default(),
                Scroll::default(),
            ],
            mode: Mode::Browse,
            notice: None,
            transcript: TranscriptState {
                stale: true,
                ..TranscriptState::default()
            },
            thread: Wrapped::default(),
            tools: Wrapped::default(),
            details: Wrapped::default(),
            details_lines: Vec::new(),
            details_version: 0,
            agents_in_flight: false,
            agents_stale: false,
            loaded: false,
            next_id: 1,
            pending: Vec::new(),
            dirty: true,
            quit: false,
            coordinator_end: None,
        }
    }

    // ----- read access for the view and tests -------------------------------------------

    pub fn selected(&self) -> Option<ChildRef> {
        self.selected
    }

    pub fn pane(&self) -> Pane {
        self.pane
    }

    pub fn mode(&self) -> &Mode {
        &self.mode
    }

    pub fn notice(&self) -> Option<&Notice> {
        self.notice.as_ref()
    }

    pub fn marks(&self) -> &BTreeSet<ChildRef> {
        &self.marks
    }

    pub fn filter_text(&self) -> &str {
        &self.filter.text
    }

    pub fn sort(&self) -> SortKey {
        self.sort
    }

    pub fn roster(&self) -> &Roster {
        &self.roster
    }

    /// True when the thread follows the newest output (LIVE).
    pub fn is_live(&self) -> bool {
        self.scroll[0].follow
    }

    pub fn scroll_of(&self, pane: Pane) -> Scroll {
        self.scroll[pane.index()]
    }

    pub fn should_quit(&self) -> bool {
        self.quit
    }

    pub fn transcript_error(&self) -> Option<&str> {
        self.transcript.error.as_deref()
    }

    pub(super) fn transcript_loaded(&self) -> bool {
        self.selected.is_some() && self.transcript.loaded_for == self.selected
    }

    /// Returns and clears "something visible changed".
    pub fn take_dirty(&mut self) -> bool {
        std::mem::take(&mut self.dirty)
    }

    /// The size the state was last told about.
    pub fn areas_size(&self) -> (u16, u16) {
        (self.size.width, self.size.height)
    }

    pub fn areas(&self) -> Areas {
        Areas::of(self.size, self.roster.rows().len())
    }

    /// The coordinator is gone: the roster becomes its last known states, and the clock
    /// stops at the moment it stopped (ticks are ignored from here on).
    fn coordinator_stopped(&mut self, end: CoordinatorEnd) {
        self.agents_in_flight = false;
        self.coordinator_end = Some(end);
        self.now = end.at();
        self.dirty = true;
    }

    /// The header's word on a coordinator that is gone (one place, for every layout), e.g.
    /// `⚠ coordinator died · no answer since 18:10:05 UTC · last known states`.
    pub fn coordinator_banner(&self) -> Option<String> {
        let end = self.coordinator_end?;
        let at = crate::store::session::iso_timestamp(end.at());
        let clock = at.get(11..19).unwrap_or(&at).to_owned();
        Some(match end {
            CoordinatorEnd::Died { .. } => {
                format!("⚠ coordinator died · no answer since {clock} UTC · last known states")
            }
            CoordinatorEnd::ShutDown { .. } => {
                format!("coordinator shut down at {clock} UTC · final states")
            }
        })
    }

    /// Whether the 1 s clock matters: an active (undisposed, still counting) generation is
    /// on screen, so its elapsed time or liveness changes.
    pub fn wants_tick(&self) -> bool {
        if self.coordinator_end.is_some() {
            return false;
        }
        let active = |r: &ChildRef| {
            self.roster
                .get(*r)
                .is_some_and(|e| e.snapshot.ended_at.is_none())
        };
        match self.areas().kind {
            Kind::Tiny => false,
            Kind::Compact | Kind::Wide => {
                self.visible_rows().iter().any(active)
                    || (self.pane == Pane::Details && self.selected.as_ref().is_some_and(active))
            }
        }
    }

    /// The roster rows on screen.
    pub fn visible_rows(&self) -> &[ChildRef] {
        let rows = self.roster.rows();
        let height = self.areas().roster.map_or(0, |r| usize::from(r.height));
        let start = self.roster_offset.min(rows.len());
        let end = (start + height).min(rows.len());
        &rows[start..end]
    }

    // ----- update --------------------------------------------------------------------

    pub fn update(&mut self, msg: Msg) -> Vec<UiEffect> {
        let mut effects = Vec::new();
        match msg {
            Msg::Key(key) => {
                self.prepare();
                self.key(key, &mut effects);
                self.dirty = true;
            }
            Msg::Paste(text) => {
                self.prepare();
                self.paste(&text);
                self.dirty = true;
            }
            Msg::Resize(w, h) => {
                self.size = Rect::new(0, 0, w, h);
                self.dirty = true;
            }
            // A stopped coordinator's rows do not count on.
            Msg::Tick(_) if self.coordinator_end.is_some() => {}
            Msg::Tick(now) => {
                let before = self.wants_tick();
                self.now = now;
                if before {
                    self.dirty = true;
                }
            }
            Msg::Loaded {
                snapshots,
                agents,
                at,
            } => {
                self.now = self.now.max(at);
                for s in snapshots {
                    // A change that arrived after the read started is newer than the read.
                    if self
                        .roster
                        .get(s.child_ref())
                        .is_some_and(|e| e.observed_at >= at)
                    {
                        continue;
                    }
                    self.roster.upsert(s, at);
                }
                self.roster.set_presence(agents);
                self.loaded = true;
                if let Some(e) = self.selected.and_then(|r| self.roster.get(r)) {
                    self.transcript.follow_stream(&e.snapshot);
                }
                self.details_version += 1;
                self.dirty = true;
            }
            Msg::Registry { child, at } => self.registry_changed(*child, at),
            Msg::Agents(agents) => {
                self.agents_in_flight = false;
                self.roster.set_presence(agents);
                self.details_version += 1;
                self.dirty = true;
            }
            Msg::Lagged(missed) => {
                self.set_notice(
                    NoticeKind::Error,
                    &format!("the Hub fell behind by {missed} events; re-reading the registry"),
                );
                effects.push(UiEffect::Reload);
            }
            Msg::Transcript { target, result } => self.transcript_read(target, result),
            Msg::ControlDone { id, result } => {
                self.control_done(id, result, &mut effects);
                self.dirty = true;
            }
            Msg::CoordinatorStopped(end) => self.coordinator_stopped(end),
            Msg::Disconnected(reason) => {
                self.agents_in_flight = false;
                self.set_notice(
                    NoticeKind::Error,
                    &format!("the coordinator connection closed: {reason}"),
                );
                self.dirty = true;
            }
        }
        effects
    }

    /// A `transcript` answer: the selection's documents are replaced by a read from the
    /// start and appended to by a read after their cursor; an answer for another selection
    /// or cursor is dropped (and read again).
    fn transcript_read(&mut self, target: ChildRef, result: Result<TranscriptPart, String>) {
        if self.transcript.in_flight == Some(target) {
            self.transcript.in_flight = None;
        }
        if Some(target) != self.selected {
            return;
        }
        let t = &mut self.transcript;
        if std::mem::take(&mut t.partial_replaced) {
            t.partial = None;
            t.version += 1;
        }
        match result {
            Ok(part) if part.after.is_none() || part.restarted => {
                t.docs = documents(&part.messages);
                t.error = None;
                t.cursor = Some(part.cursor);
                t.loaded_for = Some(target);
                t.epoch += 1;
                t.version += 1;
            }
            Ok(part) if t.loaded_for == Some(target) && part.after == t.cursor => {
                if !part.messages.is_empty() {
                    append(&mut t.docs, &part.messages);
                    t.version += 1;
                }
                t.cursor = Some(part.cursor);
            }
            Ok(_) => {
                // Continues a read this state no longer has: read from the start.
                t.loaded_for = None;
                t.cursor = None;
                t.stale = true;
                t.epoch += 1;
                t.version += 1;
            }
            Err(e) => {
                t.docs = Documents::default();
                t.error = Some(SafeText::line(&e).into_string());
                t.cursor = None;
                t.loaded_for = Some(target);
                t.epoch += 1;
                t.version += 1;
            }
        }
        self.dirty = true;
    }

    /// One registry change. A change of the selection refetches its transcript unless only
    /// streamed output changed.
    fn registry_changed(&mut self, child: ChildSnapshot, at: Millis) {
        self.now = self.now.max(at);
        let r = child.child_ref();
        if Some(r) == self.selected {
            let stream_only = self
                .roster
                .get(r)
                .is_some_and(|e| stream_only_change(&e.snapshot, &child));
            // Streamed text is shown from the snapshot; only other changes can
            // change the transcript.
            if !stream_only {
                self.transcript.stale = true;
            }
            self.transcript.follow_stream(&child);
            self.details_version += 1;
        }
        self.roster.upsert(child, at);
        self.agents_stale = true;
        self.dirty = true;
    }

    /// After a batch of messages: rebuild the roster once, keep a selection, and ask for
    /// what the selection needs. The shell calls this once per drained batch.
    pub fn settle(&mut self) -> Vec<UiEffect> {
        let mut effects = Vec::new();
        self.prepare();
        if let Some(r) = self.selected
            && self.transcript.stale
            && self.transcript.in_flight != Some(r)
        {
            self.transcript.stale = false;
            self.transcript.in_flight = Some(r);
            if std::mem::take(&mut self.transcript.partial_ended) {
                self.transcript.partial_replaced = true;
            }
            let after = if self.transcript.loaded_for == Some(r) {
                self.transcript.cursor
            } else {
                None
            };
            effects.push(UiEffect::FetchTranscript { target: r, after });
        }
        if self.agents_stale && !self.agents_in_flight {
            self.agents_stale = false;
            self.agents_in_flight = true;
            effects.push(UiEffect::RefreshAgents);
        }
        effects
    }

    /// Brings derived state up to date: rows, selection, roster scroll, wrapped panes.
    pub fn prepare(&mut self) {
        if self.roster.is_stale() {
            self.roster.rebuild(&self.filter, self.sort);
            self.dirty = true;
        }
        let rows = self.roster.rows();
        if !self.selected.is_some_and(|r| rows.contains(&r)) {
            // A filtered-out (or first) selection moves to the first visible row.
            let first = rows.first().copied();
            self.select(first);
        }
        self.keep_selection_visible();
        let areas = self.areas();
        let columns = usize::from(areas.pane.width);
        let (epoch, v) = (self.transcript.epoch, self.transcript.version);
        let (thread, tools) = if self.transcript_loaded() {
            (
                &self.transcript.docs.thread[..],
                &self.transcript.docs.tools[..],
            )
        } else {
            (&[][..], &[][..])
        };
        let partial = match &self.transcript.partial {
            Some((_, rows)) if self.transcript_loaded() => &rows[..],
            _ => &[][..],
        };
        self.thread.refresh(thread, partial, columns, epoch, v);
        self.tools.refresh(tools, &[], columns, epoch, v);
        self.details_lines = self
            .selected
            .and_then(|r| self.roster.get(r).map(|e| (r, e)))
            .map(|(r, e)| {
                let cx = details::Context {
                    history_of: self
                        .roster
                        .is_history(r)
                        .then(|| self.roster.current_generation(r.id))
                        .flatten(),
                    presence: self.roster.presence(r),
                    now: self.now,
                    stall_after_ms: self.options.stall_after_ms,
                    utc: self.options.utc,
                };
                details::lines(e, &cx)
            })
            .unwrap_or_default();
        // Details change with the clock (elapsed), so they are rebuilt every time; one
        // snapshot is cheap.
        self.details_version += 1;
        self.details.refresh(
            &self.details_lines,
            &[],
            columns,
            self.details_version,
            self.details_version,
        );
    }

    /// The document shown in `pane`: its lines, the tail drawn after them (the streamed
    /// message) and where their rows are.
    fn document(&self, pane: Pane) -> (&[Line], &[Line], &Wrapped) {
        let loaded = self.transcript_loaded();
        let docs = &self.transcript.docs;
        match pane {
            Pane::Details => (&self.details_lines, &[], &self.details),
            Pane::Thread if loaded => {
                let tail = match &self.transcript.partial {
                    Some((_, rows)) => &rows[..],
                    None => &[][..],
                };
                (&docs.thread, tail, &self.thread)
            }
            Pane::Tools if loaded => (&docs.tools, &[], &self.tools),
            Pane::Thread | Pane::Tools => (&[], &[], &self.thread),
        }
    }

    /// How many rows `pane` has at the pane's width.
    pub(super) fn pane_len(&self, pane: Pane) -> usize {
        match pane {
            Pane::Details => self.details.len(),
            Pane::Thread => self.thread.len(),
            Pane::Tools => self.tools.len(),
        }
    }

    /// The rows of `pane` from `offset`, at most `count`: only these are wrapped.
    pub(super) fn pane_rows(
        &self,
        pane: Pane,
        offset: usize,
        count: usize,
    ) -> Vec<(RowKind, String)> {
        let (lines, tail, wrapped) = self.document(pane);
        if wrapped.is_empty() {
            return Vec::new();
        }
        wrapped.window(lines, tail, offset, count)
    }

    pub(super) fn keep_selection_visible(&mut self) {
        let height = self
            .areas()
            .roster
            .map_or(1, |r| usize::from(r.height).max(1));
        let Some(index) = self
            .selected
            .and_then(|r| self.roster.rows().iter().position(|x| *x == r))
        else {
            self.roster_offset = 0;
            return;
        };
        if index < self.roster_offset {
            self.roster_offset = index;
        } else if index >= self.roster_offset + height {
            self.roster_offset = index + 1 - height;
        }
        let max = self.roster.rows().len().saturating_sub(height);
        self.roster_offset = self.roster_offset.min(max);
    }

    pub(super) fn select(&mut self, r: Option<ChildRef>) {
        if self.selected == r {
            return;
        }
        self.selected = r;
        // The thread opens LIVE; details and tools open at the top.
        self.scroll = [
            Scroll {
                offset: 0,
                follow: true,
            },
            Scroll::default(),
            Scroll::default(),
        ];
        self.transcript.stale = true;
        self.transcript.error = None;
        self.transcript.docs = Documents::default();
        self.transcript.loaded_for = None;
        self.transcript.cursor = None;
        self.transcript.epoch += 1;
        self.transcript.partial = None;
        self.transcript.partial_ended = false;
        self.transcript.partial_replaced = false;
        if let Some(e) = r.and_then(|r| self.roster.get(r)) {
            self.transcript.follow_stream(&e.snapshot);
        }
        self.transcript.version += 1;
        self.details_version += 1;
        self.dirty = true;
    }

    pub(super) fn set_notice(&mut self, kind: NoticeKind, text: &str) {
        self.notice = Some(Notice {
            kind,
            text: SafeText::line(text),
        });
        self.dirty = true;
    }
}

//! The Hub's state machine: `update(msg) -> Vec<UiEffect>`, no IO. The shell
//! (`event_loop.rs`) turns effects into control calls and feeds results back as messages.

use std::fmt::Write as _;

use std::collections::BTreeSet;

use ratatui::crossterm::event::{KeyCode, KeyEvent, KeyEventKind, KeyModifiers};
use ratatui::layout::Rect;
use serde_json::{Value, json};

use super::details;
use super::format::wrap;
use super::layout::{Areas, Kind};
use super::roster::{Filter, Roster, SortKey};
use super::transcript::{Documents, Line, RowKind, documents};
use crate::core::{AgentPresence, ChildRef, ChildSnapshot, Millis, Presence, Status};
use crate::text::{SafeText, width};

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
}

impl Default for HubOptions {
    fn default() -> Self {
        Self {
            stall_after_ms: STALL_AFTER_MS,
            title: String::new(),
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
            Self::Steer { .. } => "steer",
            Self::Message { .. } => "message",
            Self::Wait { .. } => "wait",
            Self::Stop { .. } => "stop",
            Self::StopMany { .. } => "stopMany",
            Self::Park { .. } => "park",
        }
    }

    pub fn params(&self) -> Value {
        match self {
            Self::Steer { target, text } => json!({"target": target.to_string(), "text": text}),
            Self::Message { target, text } => {
                json!({"target": target.to_string(), "text": text, "mode": "inbox"})
            }
            Self::Wait { target } => json!({"target": target.to_string(), "timeoutMs": WAIT_MS}),
            Self::Stop { target } | Self::Park { target } => json!({"target": target.to_string()}),
            Self::StopMany { targets } => {
                json!({"targets": targets.iter().map(ToString::to_string).collect::<Vec<_>>()})
            }
        }
    }

    fn label(&self) -> String {
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

/// Everything that can happen to the Hub.
#[derive(Clone, Debug)]
pub enum Msg {
    Key(KeyEvent),
    Resize(u16, u16),
    /// The clock (epoch ms).
    Tick(Millis),
    /// A full read of the registry.
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
        result: Result<Vec<Value>, String>,
    },
    ControlDone {
        id: u64,
        result: Result<Value, Failure>,
    },
    Disconnected(String),
}

/// What the shell should do.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum UiEffect {
    FetchTranscript(ChildRef),
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

    fn index(self) -> usize {
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

/// Wrapped rows of one document at one width.
#[derive(Debug, Default)]
pub(super) struct Wrapped {
    width: usize,
    version: u64,
    pub rows: Vec<(RowKind, String)>,
}

impl Wrapped {
    fn refresh(&mut self, lines: &[Line], width: usize, version: u64) {
        if self.width == width && self.version == version {
            return;
        }
        self.width = width;
        self.version = version;
        self.rows.clear();
        let mut buf = Vec::new();
        for line in lines {
            buf.clear();
            wrap(line.text.as_str(), width, &mut buf);
            self.rows.extend(buf.drain(..).map(|t| (line.kind, t)));
        }
    }
}

/// The transcript of the selected generation, fetched lazily.
#[derive(Debug, Default)]
struct TranscriptState {
    /// What the shell is fetching now (one at a time).
    in_flight: Option<ChildRef>,
    /// The selection changed, or it changed in the registry, since the last fetch.
    stale: bool,
    loaded_for: Option<ChildRef>,
    docs: Documents,
    error: Option<String>,
    version: u64,
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
    transcript: TranscriptState,
    pub(super) thread: Wrapped,
    pub(super) tools: Wrapped,
    pub(super) details: Wrapped,
    details_version: u64,
    agents_in_flight: bool,
    agents_stale: bool,
    pub(super) loaded: bool,
    next_id: u64,
    pending: Vec<(u64, Action)>,
    dirty: bool,
    quit: bool,
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
            details_version: 0,
            agents_in_flight: false,
            agents_stale: false,
            loaded: false,
            next_id: 1,
            pending: Vec::new(),
            dirty: true,
            quit: false,
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
        Areas::of(self.size)
    }

    /// Whether the 1 s clock matters: an active (undisposed, still counting) generation is
    /// on screen, so its elapsed time or liveness changes.
    pub fn wants_tick(&self) -> bool {
        let active = |r: &ChildRef| {
            self.roster
                .get(*r)
                .is_some_and(|e| e.snapshot.ended_at.is_none())
        };
        match self.areas().kind {
            Kind::Tiny => false,
            Kind::Compact => self.selected.as_ref().is_some_and(active),
            Kind::Wide => {
                self.visible_rows().iter().any(active)
                    || (self.pane == Pane::Details && self.selected.as_ref().is_some_and(active))
            }
        }
    }

    /// The roster rows on screen (wide layout).
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
                if key.kind != KeyEventKind::Release {
                    self.prepare();
                    self.key(key, &mut effects);
                    self.dirty = true;
                }
            }
            Msg::Resize(w, h) => {
                self.size = Rect::new(0, 0, w, h);
                self.dirty = true;
            }
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
                    self.roster.upsert(s, at);
                }
                self.roster.set_presence(agents);
                self.loaded = true;
                self.details_version += 1;
                self.dirty = true;
            }
            Msg::Registry { child, at } => {
                self.now = self.now.max(at);
                let r = child.child_ref();
                self.roster.upsert(*child, at);
                self.agents_stale = true;
                if Some(r) == self.selected {
                    self.transcript.stale = true;
                    self.details_version += 1;
                }
                self.dirty = true;
            }
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
            Msg::Transcript { target, result } => {
                if self.transcript.in_flight == Some(target) {
                    self.transcript.in_flight = None;
                }
                if Some(target) == self.selected {
                    match result {
                        Ok(messages) => {
                            self.transcript.docs = documents(&messages);
                            self.transcript.error = None;
                        }
                        Err(e) => {
                            self.transcript.docs = Documents::default();
                            self.transcript.error = Some(SafeText::line(&e).into_string());
                        }
                    }
                    self.transcript.loaded_for = Some(target);
                    self.transcript.version += 1;
                    self.dirty = true;
                }
            }
            Msg::ControlDone { id, result } => {
                self.control_done(id, result, &mut effects);
                self.dirty = true;
            }
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
            effects.push(UiEffect::FetchTranscript(r));
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
        let v = self.transcript.version;
        let (thread, tools) = if self.transcript_loaded() {
            (
                &self.transcript.docs.thread[..],
                &self.transcript.docs.tools[..],
            )
        } else {
            (&[][..], &[][..])
        };
        self.thread.refresh(thread, columns, v);
        self.tools.refresh(tools, columns, v);
        let lines = self
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
                };
                details::lines(e, &cx)
            })
            .unwrap_or_default();
        // Details change with the clock (elapsed), so they are rebuilt every time; one
        // snapshot is cheap.
        self.details_version += 1;
        self.details.refresh(&lines, columns, self.details_version);
    }

    fn keep_selection_visible(&mut self) {
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

    fn select(&mut self, r: Option<ChildRef>) {
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
        self.transcript.version += 1;
        self.details_version += 1;
        self.dirty = true;
    }

    fn set_notice(&mut self, kind: NoticeKind, text: &str) {
        self.notice = Some(Notice {
            kind,
            text: SafeText::line(text),
        });
        self.dirty = true;
    }

    // ----- eligibility, checked against the latest snapshot --------------------------

    fn describe(&self, r: ChildRef) -> Result<&ChildSnapshot, String> {
        let entry = self
            .roster
            .get(r)
            .ok_or_else(|| format!("{r} is not in the registry"))?;
        if let Some(current) = self
            .roster
            .current_generation(r.id)
            .filter(|&g| g > r.generation)
        {
            return Err(format!(
                "{r} is a historical generation (the current one is {current})"
            ));
        }
        Ok(&entry.snapshot)
    }

    /// `None` when stop may be sent now: queued, setup, running or paused current targets.
    pub fn stop_refusal(&self, r: ChildRef) -> Option<String> {
        let s = match self.describe(r) {
            Ok(s) => s,
            Err(e) => return Some(e),
        };
        if s.disposed {
            return Some(format!("{r} is disposed; there is nothing to stop"));
        }
        match s.status {
            Status::Queued | Status::Setup | Status::Running | Status::Paused => None,
            Status::Pausing | Status::Draining => Some(format!(
                "{r} is {}; stop is refused until it settles",
                s.status
            )),
            Status::Settled | Status::Failed | Status::Cancelled => {
                Some(format!("{r} has ended ({})", s.status))
            }
        }
    }

    /// `None` when steer may be sent now: running current targets only.
    pub fn steer_refusal(&self, r: ChildRef) -> Option<String> {
        let s = match self.describe(r) {
            Ok(s) => s,
            Err(e) => return Some(e),
        };
        (s.status != Status::Running || s.disposed)
            .then(|| format!("steer takes a running generation; {r} is {}", s.status))
    }

    /// `None` when park may be sent now: the disposed idle current generation.
    pub fn park_refusal(&self, r: ChildRef) -> Option<String> {
        let s = match self.describe(r) {
            Ok(s) => s,
            Err(e) => return Some(e),
        };
        let presence = self.roster.presence(r);
        if s.disposed && presence == Some(Presence::Idle) {
            return None;
        }
        let what = presence.map_or_else(
            || format!("{} (presence unknown)", s.status),
            |p| format!("{} and {p}", s.status),
        );
        Some(format!(
            "park takes a disposed idle identity; {r} is {what}{}",
            if s.disposed { "" } else { ", not disposed" }
        ))
    }

    // ----- keys ------------------------------------------------------------------------

    fn key(&mut self, key: KeyEvent, effects: &mut Vec<UiEffect>) {
        let mode = std::mem::take(&mut self.mode);
        match mode {
            Mode::Browse => self.browse_key(key, effects),
            Mode::Filter { previous } => self.filter_key(key, previous),
            Mode::Command { input } => self.command_key(key, input, effects),
            Mode::Prompt(prompt) => self.prompt_key(key, prompt, effects),
        }
    }

    fn browse_key(&mut self, key: KeyEvent, effects: &mut Vec<UiEffect>) {
        let ctrl = key.modifiers.contains(KeyModifiers::CONTROL);
        if self.areas().kind == Kind::Tiny {
            // The placeholder offers nothing but closing (and resizing).
            if matches!(key.code, KeyCode::Esc | KeyCode::Char('q')) {
                self.quit = true;
            }
            return;
        }
        if !matches!(key.code, KeyCode::Char('f' | 'r')) {
            self.notice = None;
        }
        match key.code {
            KeyCode::Esc | KeyCode::Char('q') => self.quit = true,
            KeyCode::Char('c') if ctrl => self.quit = true,
            KeyCode::Tab => self.cycle_pane(1),
            KeyCode::BackTab => self.cycle_pane(2),
            KeyCode::Up => self.move_selection(-1),
            KeyCode::Down => self.move_selection(1),
            KeyCode::Char('u') if ctrl => self.scroll_by(-self.page()),
            KeyCode::Char('d') if ctrl => self.scroll_by(self.page()),
            KeyCode::PageUp => self.scroll_by(-self.page()),
            KeyCode::PageDown => self.scroll_by(self.page()),
            KeyCode::Char('k') => self.scroll_by(-1),
            KeyCode::Char('j') => self.scroll_by(1),
            KeyCode::Home => self.scroll_home(),
            KeyCode::End => self.scroll_end(),
            KeyCode::Char('/') => {
                self.mode = Mode::Filter {
                    previous: self.filter.text.clone(),
                };
            }
            KeyCode::Char(':') => {
                self.mode = Mode::Command {
                    input: String::new(),
                };
            }
            KeyCode::Char(' ') => {
                if let Some(r) = self.selected
                    && !self.marks.remove(&r)
                {
                    self.marks.insert(r);
                }
            }
            KeyCode::Char('s') => self.open_steer(),
            KeyCode::Char('m') => {
                if let Some(target) = self.selected {
                    self.mode = Mode::Prompt(Prompt::Message {
                        target,
                        input: String::new(),
                    });
                }
            }
            KeyCode::Char('w') => {
                if let Some(target) = self.selected {
                    effects.push(self.dispatch(Action::Wait { target }));
                }
            }
            KeyCode::Char('x') => self.open_stop(),
            KeyCode::Char('p') => {
                if let Some(target) = self.selected {
                    match self.park_refusal(target) {
                        None => effects.push(self.dispatch(Action::Park { target })),
                        Some(why) => {
                            self.set_notice(NoticeKind::Refusal, &format!("refused: {why}"));
                        }
                    }
                }
            }
            KeyCode::Char(c @ ('f' | 'r')) => {
                let what = if c == 'f' { "followup" } else { "revive" };
                self.set_notice(
                    NoticeKind::Refusal,
                    &format!(
                        "{what} is refused here and nothing was sent: the Hub has no tool-execution context, so it cannot safely start a generation. A model-issued delegate_coordinate (or `slate {what} UUID@GEN TEXT`) starts one."
                    ),
                );
            }
            _ => {}
        }
    }

    fn open_steer(&mut self) {
        let Some(target) = self.selected else { return };
        match self.steer_refusal(target) {
            None => {
                self.mode = Mode::Prompt(Prompt::Steer {
                    target,
                    input: String::new(),
                });
            }
            Some(why) => self.set_notice(NoticeKind::Refusal, &format!("refused: {why}")),
        }
    }

    fn open_stop(&mut self) {
        let Some(target) = self.selected else { return };
        match self.stop_refusal(target) {
            None => self.mode = Mode::Prompt(Prompt::Stop { target }),
            Some(why) => self.set_notice(NoticeKind::Refusal, &format!("refused: {why}")),
        }
    }

    fn cycle_pane(&mut self, step: usize) {
        let next = (self.pane.index() + step) % 3;
        self.pane = Pane::ALL[next];
        if self.pane != Pane::Thread {
            // Details and tools open at the top without following.
            self.scroll[next] = Scroll::default();
        }
    }

    fn move_selection(&mut self, delta: isize) {
        let rows = self.roster.rows();
        if rows.is_empty() {
            return;
        }
        let index = self
            .selected
            .and_then(|r| rows.iter().position(|x| *x == r))
            .unwrap_or(0);
        let next = index.saturating_add_signed(delta).min(rows.len() - 1);
        let r = rows[next];
        self.select(Some(r));
        self.keep_selection_visible();
    }

    fn page(&self) -> isize {
        isize::try_from(self.areas().pane.height.max(1)).unwrap_or(1)
    }

    /// The largest offset that still fills the pane.
    pub(super) fn max_offset(&self, pane: Pane) -> usize {
        let rows = match pane {
            Pane::Thread => self.thread.rows.len(),
            Pane::Details => self.details.rows.len(),
            Pane::Tools => self.tools.rows.len(),
        };
        rows.saturating_sub(usize::from(self.areas().pane.height))
    }

    /// The first row drawn in `pane`.
    pub(super) fn offset(&self, pane: Pane) -> usize {
        let s = self.scroll[pane.index()];
        let max = self.max_offset(pane);
        if s.follow { max } else { s.offset.min(max) }
    }

    fn scroll_by(&mut self, delta: isize) {
        let pane = self.pane;
        let max = self.max_offset(pane);
        let next = self.offset(pane).saturating_add_signed(delta).min(max);
        let s = &mut self.scroll[pane.index()];
        s.offset = next;
        if pane == Pane::Thread {
            // Up detaches (READING); reaching the bottom resumes LIVE.
            s.follow = delta > 0 && next >= max;
        }
    }

    fn scroll_home(&mut self) {
        self.scroll[self.pane.index()] = Scroll::default();
    }

    fn scroll_end(&mut self) {
        let pane = self.pane;
        let max = self.max_offset(pane);
        self.scroll[pane.index()] = Scroll {
            offset: max,
            follow: pane == Pane::Thread,
        };
    }

    fn filter_key(&mut self, key: KeyEvent, previous: String) {
        match key.code {
            KeyCode::Enter => {}
            KeyCode::Esc => {
                self.filter.text = previous;
                self.roster.mark_stale();
            }
            KeyCode::Backspace => {
                self.filter.text.pop();
                self.roster.mark_stale();
                self.mode = Mode::Filter { previous };
            }
            KeyCode::Char(c) if !c.is_control() => {
                self.filter.text.push(c);
                self.roster.mark_stale();
                self.mode = Mode::Filter { previous };
            }
            _ => self.mode = Mode::Filter { previous },
        }
        self.prepare();
    }

    fn command_key(&mut self, key: KeyEvent, mut input: String, effects: &mut Vec<UiEffect>) {
        match key.code {
            KeyCode::Esc => {}
            KeyCode::Enter => self.run_command(input.trim(), effects),
            KeyCode::Backspace => {
                if input.pop().is_some() {
                    self.mode = Mode::Command { input };
                }
            }
            KeyCode::Char(c) if !c.is_control() => {
                input.push(c);
                self.mode = Mode::Command { input };
            }
            _ => self.mode = Mode::Command { input },
        }
    }

    fn run_command(&mut self, line: &str, effects: &mut Vec<UiEffect>) {
        let (name, rest) = line.split_once(' ').unwrap_or((line, ""));
        let rest = rest.trim();
        match name {
            "stop" => {
                if self.marks.is_empty() {
                    self.open_stop();
                } else {
                    self.mode = Mode::Prompt(Prompt::Bulk {
                        action: Bulk::Stop,
                        targets: self.marks.iter().copied().collect(),
                        offset: 0,
                    });
                }
            }
            "steer" if rest.is_empty() => {
                self.set_notice(NoticeKind::Refusal, "usage: :steer TEXT");
            }
            "steer" => {
                if self.marks.is_empty() {
                    let Some(target) = self.selected else { return };
                    match self.steer_refusal(target) {
                        None => effects.push(self.dispatch(Action::Steer {
                            target,
                            text: rest.to_owned(),
                        })),
                        Some(why) => {
                            self.set_notice(NoticeKind::Refusal, &format!("refused: {why}"));
                        }
                    }
                } else {
                    self.mode = Mode::Prompt(Prompt::Bulk {
                        action: Bulk::Steer(rest.to_owned()),
                        targets: self.marks.iter().copied().collect(),
                        offset: 0,
                    });
                }
            }
            "filter" => {
                rest.clone_into(&mut self.filter.text);
                self.roster.mark_stale();
                self.prepare();
            }
            "sort" => match SortKey::parse(rest) {
                Some(key) => {
                    self.sort = key;
                    self.roster.mark_stale();
                    self.prepare();
                }
                None => self.set_notice(
                    NoticeKind::Refusal,
                    &format!("usage: :sort KEY where KEY is one of {}", SortKey::NAMES),
                ),
            },
            "unmark" => self.marks.clear(),
            "q" | "quit" => self.quit = true,
            "" => {}
            other => self.set_notice(
                NoticeKind::Refusal,
                &format!(
                    "unknown command :{other} (try :stop, :steer TEXT, :filter TEXT, :sort KEY, :unmark)"
                ),
            ),
        }
    }

    /// True when the pinned prompt (with its full identity) fits the footer; otherwise the
    /// view shows the resize/Escape placeholder and the prompt takes no action keys.
    pub fn prompt_fits(&self) -> bool {
        match &self.mode {
            Mode::Prompt(prompt) => self.fits(prompt),
            _ => self.areas().kind != Kind::Tiny,
        }
    }

    fn fits(&self, prompt: &Prompt) -> bool {
        let areas = self.areas();
        if areas.kind == Kind::Tiny {
            return false;
        }
        let needed = match prompt {
            Prompt::Bulk { .. } => 30,
            Prompt::Steer { .. } | Prompt::Message { .. } | Prompt::Stop { .. } => {
                width(&super::view::prompt_head(self, prompt)) + 1
            }
        };
        usize::from(areas.footer.width) >= needed
    }

    fn prompt_key(&mut self, key: KeyEvent, prompt: Prompt, effects: &mut Vec<UiEffect>) {
        if key.code == KeyCode::Esc {
            return;
        }
        if !self.fits(&prompt) {
            // Not actionable while the identity cannot be shown.
            self.mode = Mode::Prompt(prompt);
            return;
        }
        match prompt {
            Prompt::Steer { target, mut input } => match key.code {
                KeyCode::Enter if !input.trim().is_empty() => match self.steer_refusal(target) {
                    None => effects.push(self.dispatch(Action::Steer {
                        target,
                        text: input,
                    })),
                    Some(why) => {
                        self.set_notice(NoticeKind::Refusal, &format!("refused: {why}"));
                    }
                },
                code => {
                    edit(&mut input, code);
                    self.mode = Mode::Prompt(Prompt::Steer { target, input });
                }
            },
            Prompt::Message { target, mut input } => match key.code {
                KeyCode::Enter if !input.trim().is_empty() => {
                    effects.push(self.dispatch(Action::Message {
                        target,
                        text: input,
                    }));
                }
                code => {
                    edit(&mut input, code);
                    self.mode = Mode::Prompt(Prompt::Message { target, input });
                }
            },
            Prompt::Stop { target } => match key.code {
                KeyCode::Char('y' | 'Y') => match self.stop_refusal(target) {
                    // Checked now, against the latest snapshot: the target may have changed
                    // state while the prompt was open.
                    None => effects.push(self.dispatch(Action::Stop { target })),
                    Some(why) => {
                        self.set_notice(NoticeKind::Refusal, &format!("refused: {why}"));
                    }
                },
                KeyCode::Char('n' | 'N') => {}
                _ => self.mode = Mode::Prompt(Prompt::Stop { target }),
            },
            Prompt::Bulk {
                action,
                targets,
                offset,
            } => match key.code {
                KeyCode::Char('y' | 'Y') => self.confirm_bulk(&action, &targets, effects),
                KeyCode::Char('n' | 'N') => {}
                KeyCode::Char('j') | KeyCode::Down => {
                    self.mode = Mode::Prompt(Prompt::Bulk {
                        offset: (offset + 1).min(targets.len().saturating_sub(1)),
                        action,
                        targets,
                    });
                }
                KeyCode::Char('k') | KeyCode::Up => {
                    self.mode = Mode::Prompt(Prompt::Bulk {
                        offset: offset.saturating_sub(1),
                        action,
                        targets,
                    });
                }
                _ => {
                    self.mode = Mode::Prompt(Prompt::Bulk {
                        action,
                        targets,
                        offset,
                    });
                }
            },
        }
    }

    /// Whether a bulk target would be refused, checked against the latest snapshot.
    pub fn bulk_refusal(&self, action: &Bulk, r: ChildRef) -> Option<String> {
        match action {
            Bulk::Stop => self.stop_refusal(r),
            Bulk::Steer(_) => self.steer_refusal(r),
        }
    }

    fn confirm_bulk(&mut self, action: &Bulk, targets: &[ChildRef], effects: &mut Vec<UiEffect>) {
        let mut eligible = Vec::new();
        let mut refused = Vec::new();
        for r in targets {
            match self.bulk_refusal(action, *r) {
                None => eligible.push(*r),
                Some(why) => refused.push(why),
            }
        }
        if !eligible.is_empty() {
            match action {
                Bulk::Stop => effects.push(self.dispatch(Action::StopMany {
                    targets: eligible.clone(),
                })),
                Bulk::Steer(text) => {
                    for target in &eligible {
                        effects.push(self.dispatch(Action::Steer {
                            target: *target,
                            text: text.clone(),
                        }));
                    }
                }
            }
        }
        let verb = match action {
            Bulk::Stop => "stop",
            Bulk::Steer(_) => "steer",
        };
        let mut text = format!("{verb}: sent to {} of {}", eligible.len(), targets.len());
        if !refused.is_empty() {
            let _ = write!(text, "; refused: {}", refused.join("; "));
        }
        let kind = if refused.is_empty() {
            NoticeKind::Info
        } else {
            NoticeKind::Refusal
        };
        self.set_notice(kind, &text);
        self.marks.clear();
    }

    fn dispatch(&mut self, action: Action) -> UiEffect {
        let id = self.next_id;
        self.next_id += 1;
        let label = action.label();
        let note = match &action {
            Action::Wait { .. } => format!("{label}: waiting up to {WAIT_MS} ms…"),
            _ => format!("{label}: sent, waiting for the coordinator…"),
        };
        self.set_notice(NoticeKind::Info, &note);
        self.pending.push((id, action.clone()));
        UiEffect::Control { id, action }
    }

    fn control_done(
        &mut self,
        id: u64,
        result: Result<Value, Failure>,
        effects: &mut Vec<UiEffect>,
    ) {
        let Some(index) = self.pending.iter().position(|(i, _)| *i == id) else {
            return;
        };
        let (_, action) = self.pending.remove(index);
        let label = action.label();
        let value = match result {
            Ok(v) => v,
            Err(f) => {
                let code = f.code.map(|c| format!(" [{c}]")).unwrap_or_default();
                self.set_notice(
                    NoticeKind::Refusal,
                    &format!("{label}: refused{code}: {}", f.message),
                );
                return;
            }
        };
        let s = |v: &Value| match v {
            Value::String(s) => s.clone(),
            Value::Null => "?".to_owned(),
            other => other.to_string(),
        };
        let text = match &action {
            Action::Steer { .. } | Action::Message { .. } => {
                let m = &value["message"];
                let mut text = format!("{label}: receipt {} is {}", s(&m["id"]), s(&m["status"]));
                if let Some(e) = m.get("error").and_then(Value::as_str) {
                    let _ = write!(text, " ({e})");
                }
                text.push_str(" — the receipt state, not a model acknowledgement");
                text
            }
            Action::Wait { .. } => {
                let r = &value["result"];
                match r["kind"].as_str() {
                    Some("outcome") => format!("{label}: outcome {}", s(&r["outcome"]["status"])),
                    Some("timeout") => format!("{label}: no outcome within {WAIT_MS} ms"),
                    Some(other) => format!("{label}: {other}"),
                    None => format!("{label}: {}", s(r)),
                }
            }
            Action::Stop { .. } | Action::Park { .. } => {
                let c = &value["child"];
                format!(
                    "{label}: the registry reports it {}{}",
                    s(&c["status"]),
                    if c["disposed"].as_bool() == Some(true) {
                        ", disposed"
                    } else {
                        ""
                    }
                )
            }
            Action::StopMany { .. } => {
                let n = value["children"].as_array().map_or(0, Vec::len);
                format!("{label}: the registry reports {n} generations marked")
            }
        };
        if matches!(action, Action::Park { .. }) {
            effects.push(UiEffect::RefreshAgents);
            self.agents_in_flight = true;
        }
        self.set_notice(NoticeKind::Info, &text);
    }
}

/// Single-line editing at the end of the input.
fn edit(input: &mut String, code: KeyCode) {
    match code {
        KeyCode::Backspace => {
            input.pop();
        }
        KeyCode::Char(c) if !c.is_control() => input.push(c),
        _ => {}
    }
}

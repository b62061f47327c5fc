//! The Subagent Hub: screens (insta, `TestBackend`), fitting at every width, key-sequence
//! tests of every binding and refusal, and a terminal-injection corpus.

use ratatui::Terminal;
use ratatui::backend::TestBackend;
use ratatui::buffer::Buffer;
use ratatui::crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use ratatui::layout::Rect;
use ratatui::widgets::Widget;
use serde_json::{Value, json};
use uuid::Uuid;

use slate::core::task::{Limits, Role};
use slate::core::{
    AgentPresence, ChildRef, ChildSnapshot, Message, MessageId, MessageMode, Party, Presence,
    ReceiptStatus, Reply, Status, Telemetry, Tokens, WaitResult, Window,
};
use slate::ui::hub::{
    Action, Failure, Hub, HubOptions, HubView, Key, Mode, Msg, NoticeKind, Pane, Prompt,
    TranscriptPart, UiEffect, step,
};

const NOW: u64 = 1_700_000_000_000;

fn id(n: u128) -> Uuid {
    Uuid::from_u128(0x1000_0000_0000_4000_8000_0000_0000_0000 + n)
}

fn r(n: u128, generation: u32) -> ChildRef {
    ChildRef::new(id(n), generation)
}

fn root() -> Uuid {
    Uuid::from_u128(0xffff_0000_0000_4000_8000_0000_0000_0000)
}

fn snap(n: u128, generation: u32, status: Status, assignment: &str) -> ChildSnapshot {
    ChildSnapshot {
        id: id(n),
        generation,
        parent_id: root(),
        parent_generation: None,
        depth: 1,
        status,
        profile: Role::Scout,
        cwd: "/work/project".to_owned(),
        assignment: assignment.to_owned(),
        activity: None,
        progress: None,
        result: None,
        model: Some("anthropic/claude-sonnet-4".to_owned()),
        effort: Some("medium".to_owned()),
        requested_model: None,
        requested_effort: None,
        logical: None,
        prewalk: None,
        telemetry: Telemetry::default(),
        error: None,
        transcript: None,
        limits: Limits {
            deadline_ms: 600_000,
            requests: 40,
            tools: 80,
            depth: 2,
            spawns: 4,
        },
        limit_reason: None,
        tool_calls: 0,
        spawns: 0,
        writer_lease: false,
        disposed: status.is_terminal(),
        created_at: NOW - 90_000 + u64::try_from(n).unwrap_or(0) * 1000,
        ended_at: status.is_terminal().then_some(NOW - 10_000),
        outcome: None,
        artifacts: None,
        tools: Vec::new(),
        leaf_tools: Vec::new(),
        skills: Vec::new(),
        capability_denials: Vec::new(),
        pause_reason: None,
        retained_context: false,
        streaming: None,
        retry: None,
        delivered_at: None,
        window: Window {
            number: 1,
            started_at: NOW - 90_000,
            deadline_at: NOW + 510_000,
        },
    }
}

/// A fleet with every kind of row: running with stats, a nested queued child, an identity
/// with a history generation, idle, draining, cancelled.
#[allow(clippy::many_single_char_names)]
fn fleet() -> (Vec<ChildSnapshot>, Vec<AgentPresence>) {
    let mut a = snap(
        1,
        1,
        Status::Running,
        "Map the storage layer\nand list every writer",
    );
    a.telemetry = Telemetry {
        requests: Some(3),
        tokens: Some(Tokens {
            input: 9000,
            output: 3400,
            cache_read: 0,
            cache_write: 0,
            total: 12_400,
        }),
        cost: Some(0.0123),
        context: None,
        launch: None,
    };
    a.activity = Some("reading src/store.rs".to_owned());
    a.tool_calls = 2;
    a.spawns = 1;
    let mut b = snap(2, 1, Status::Queued, "Patch the retry loop");
    b.depth = 2;
    b.parent_id = id(1);
    b.parent_generation = Some(1);
    b.profile = Role::Implementation;
    let c1 = snap(3, 1, Status::Settled, "Survey the CLI flags");
    let mut c2 = snap(3, 2, Status::Paused, "Continue the CLI survey");
    c2.created_at = NOW - 30_000;
    c2.disposed = false;
    c2.ended_at = None;
    let mut d = snap(4, 1, Status::Settled, "Review the parser");
    d.profile = Role::Review;
    d.result = Some("All parser tests pass; two edge cases noted".to_owned());
    d.progress = Some("checked 14 files".to_owned());
    let e = snap(5, 1, Status::Draining, "Write the changelog");
    let f = snap(6, 1, Status::Cancelled, "Benchmark the codec");
    let agents = vec![
        AgentPresence {
            id: id(1),
            generation: 1,
            presence: Presence::Active,
        },
        AgentPresence {
            id: id(2),
            generation: 1,
            presence: Presence::Active,
        },
        AgentPresence {
            id: id(3),
            generation: 2,
            presence: Presence::Paused,
        },
        AgentPresence {
            id: id(4),
            generation: 1,
            presence: Presence::Idle,
        },
        AgentPresence {
            id: id(5),
            generation: 1,
            presence: Presence::Active,
        },
        AgentPresence {
            id: id(6),
            generation: 1,
            presence: Presence::Stopped,
        },
    ];
    (vec![a, b, c1, c2, d, e, f], agents)
}

fn transcript() -> Vec<Value> {
    vec![
        json!({"role": "user", "content": "Map the storage layer and list every writer"}),
        json!({"role": "assistant", "content": [
            {"type": "thinking", "thinking": "Start with the store module.", "thinkingSignature": "OPAQUE-SIGNATURE"},
            {"type": "text", "text": "I'll read the store first."},
            {"type": "toolCall", "id": "call-1", "name": "read", "arguments": {"path": "src/store.rs", "limit": 200}}
        ], "stopReason": "toolUse"}),
        json!({"role": "toolResult", "toolCallId": "call-1", "toolName": "read", "isError": false, "content": [
            {"type": "text", "text": "pub mod paths;\npub mod events;\n\nfn write() {}"},
            {"type": "image", "data": "iVBORw0KGgoAAAANSUhEUg", "mimeType": "image/png"}
        ]}),
        json!({"role": "assistant", "content": [
            {"type": "text", "text": "Writers: events.rs appends, paths.rs creates directories."}
        ], "stopReason": "stop"}),
    ]
}

/// A receipt as the coordinator answers a steer or message.
fn receipt(n: u128, status: ReceiptStatus) -> Reply {
    Reply::Message {
        message: Message {
            id: MessageId(id(n)),
            sender: Party::Root,
            recipient: Party::Child(r(1, 1)),
            text: "focus".to_owned(),
            mode: MessageMode::Inbox,
            status,
            error: None,
        },
    }
}

/// A terminal key event as the input thread turns it into the Hub's own key.
fn event(code: KeyCode, modifiers: KeyModifiers) -> Msg {
    Msg::Key(Key::from_event(&KeyEvent::new(code, modifiers)).expect("a key the Hub uses"))
}

fn press(code: KeyCode) -> Msg {
    event(code, KeyModifiers::NONE)
}

fn ctrl(c: char) -> Msg {
    event(KeyCode::Char(c), KeyModifiers::CONTROL)
}

fn chars(text: &str) -> Vec<Msg> {
    text.chars().map(|c| press(KeyCode::Char(c))).collect()
}

/// Whether `effects` read `target`'s transcript (from the start or after a cursor).
fn fetches(effects: &[UiEffect], target: ChildRef) -> bool {
    effects
        .iter()
        .any(|e| matches!(e, UiEffect::FetchTranscript { target: t, .. } if *t == target))
}

struct Rig {
    hub: Hub,
    term: Terminal<TestBackend>,
    effects: Vec<UiEffect>,
    draws: usize,
}

impl Rig {
    fn new(w: u16, h: u16) -> Self {
        let (snapshots, agents) = fleet();
        Self::with(w, h, snapshots, agents)
    }

    fn with(w: u16, h: u16, snapshots: Vec<ChildSnapshot>, agents: Vec<AgentPresence>) -> Self {
        let mut rig = Self {
            hub: Hub::new(
                HubOptions {
                    stall_after_ms: 60_000,
                    title: "test".to_owned(),
                    utc: true,
                },
                NOW,
            ),
            term: Terminal::new(TestBackend::new(w, h)).expect("terminal"),
            effects: Vec::new(),
            draws: 0,
        };
        rig.send(vec![Msg::Loaded {
            snapshots,
            agents,
            at: NOW,
        }]);
        rig
    }

    fn send(&mut self, msgs: Vec<Msg>) -> &mut Self {
        let s = step(&mut self.hub, msgs, &mut self.term).expect("step");
        self.draws += usize::from(s.drew);
        self.effects.extend(s.effects);
        self
    }

    fn key(&mut self, code: KeyCode) -> &mut Self {
        self.send(vec![press(code)])
    }

    fn text(&mut self, text: &str) -> &mut Self {
        self.send(chars(text))
    }

    /// Answers the pending transcript fetch of the selection.
    fn answer_transcript(&mut self, messages: Vec<Value>) -> &mut Self {
        let target = self.hub.selected().expect("selection");
        assert!(
            fetches(&self.effects, target),
            "no fetch for {target}: {:?}",
            self.effects
        );
        self.effects.clear();
        self.send(vec![Msg::Transcript {
            target,
            result: Ok(messages.into()),
        }])
    }

    fn take_controls(&mut self) -> Vec<(u64, Action)> {
        let out = self
            .effects
            .iter()
            .filter_map(|e| match e {
                UiEffect::Control { id, action } => Some((*id, action.clone())),
                _ => None,
            })
            .collect();
        self.effects.clear();
        out
    }

    fn screen(&self) -> String {
        buffer_text(self.term.backend().buffer())
    }

    fn notice(&self) -> String {
        self.hub
            .notice()
            .map(|n| n.text.as_str().to_owned())
            .unwrap_or_default()
    }

    fn select(&mut self, target: ChildRef) -> &mut Self {
        for _ in 0..20 {
            self.key(KeyCode::Up);
        }
        for _ in 0..20 {
            if self.hub.selected() == Some(target) {
                return self;
            }
            self.key(KeyCode::Down);
        }
        panic!("{target} not reachable; at {:?}", self.hub.selected());
    }
}

fn buffer_text(buf: &Buffer) -> String {
    let area = buf.area;
    let mut out = String::new();
    for y in 0..area.height {
        let mut line = String::new();
        for x in 0..area.width {
            line.push_str(buf[(x, y)].symbol());
        }
        out.push_str(line.trim_end());
        out.push('\n');
    }
    out
}

// ----- screens ----------------------------------------------------------------------------

#[test]
fn wide_thread_details_and_tools() {
    let mut rig = Rig::new(120, 24);
    rig.answer_transcript(transcript());
    insta::assert_snapshot!("wide_thread", rig.screen());
    rig.key(KeyCode::Tab);
    assert_eq!(rig.hub.pane(), Pane::Details);
    insta::assert_snapshot!("wide_details", rig.screen());
    rig.key(KeyCode::Tab);
    assert_eq!(rig.hub.pane(), Pane::Tools);
    insta::assert_snapshot!("wide_tools", rig.screen());
    rig.key(KeyCode::Tab);
    assert_eq!(rig.hub.pane(), Pane::Thread);
}

#[test]
fn compact_thread_details_and_tools() {
    let mut rig = Rig::new(80, 20);
    rig.answer_transcript(transcript());
    insta::assert_snapshot!("compact_thread", rig.screen());
    rig.key(KeyCode::Tab);
    insta::assert_snapshot!("compact_details", rig.screen());
    rig.key(KeyCode::Tab);
    insta::assert_snapshot!("compact_tools", rig.screen());
}

#[test]
fn tiny_shows_only_the_resize_placeholder() {
    let mut rig = Rig::new(30, 6);
    insta::assert_snapshot!("tiny", rig.screen());
    let screen = rig.screen();
    assert!(!screen.contains('─'), "no rule in tiny layouts");
    // No actionable controls: x/s/p do nothing, Esc closes.
    rig.key(KeyCode::Char('x'));
    assert_eq!(rig.hub.mode(), &Mode::Browse);
    assert!(rig.take_controls().is_empty());
    rig.key(KeyCode::Esc);
    assert!(rig.hub.should_quit());
}

#[test]
fn the_roster_marks_only_the_actual_writer_lease_and_keeps_batch_order() {
    let mut holder = snap(1, 1, Status::Running, "Holds the lease");
    holder.profile = Role::Implementation;
    holder.writer_lease = true;
    let mut waiting = snap(2, 1, Status::Queued, "Waits for the lease");
    waiting.profile = Role::Implementation;
    // Same admission millisecond (one batch): the registry's order decides, not the UUIDs.
    let mut first = snap(9, 1, Status::Running, "First of the batch");
    let mut second = snap(3, 1, Status::Running, "Second of the batch");
    first.created_at = 5;
    second.created_at = 5;
    holder.created_at = 1;
    waiting.created_at = 2;
    let rig = Rig::with(140, 12, vec![holder, waiting, first, second], Vec::new());
    let screen = rig.screen();
    let row = |text: &str| {
        screen
            .lines()
            .find(|l| l.contains(text))
            .unwrap_or_else(|| panic!("no row for {text}:\n{screen}"))
            .to_owned()
    };
    assert!(row("Holds the lease").contains('✎'), "{screen}");
    assert!(!row("Waits for the lease").contains('✎'), "{screen}");
    let at = |text: &str| screen.find(text).unwrap();
    assert!(
        at("First of the batch") < at("Second of the batch"),
        "{screen}"
    );
}

#[test]
fn empty_registry_renders_no_rows() {
    let mut rig = Rig::with(120, 12, Vec::new(), Vec::new());
    insta::assert_snapshot!("wide_empty", rig.screen());
    rig.key(KeyCode::Char('x'));
    assert!(rig.take_controls().is_empty());
}

#[test]
fn prompts_and_overlays_at_every_size() {
    for (w, h, name) in [
        (120u16, 24u16, "wide"),
        (80, 20, "compact"),
        (30, 6, "tiny"),
    ] {
        let mut rig = Rig::new(w, h);
        rig.key(KeyCode::Char('/')).text("stor");
        insta::assert_snapshot!(format!("{name}_filter"), rig.screen());
        rig.key(KeyCode::Esc);
        rig.key(KeyCode::Char(':')).text("sort status");
        insta::assert_snapshot!(format!("{name}_command"), rig.screen());
        rig.key(KeyCode::Esc);
        rig.key(KeyCode::Char('s')).text("focus on writers");
        insta::assert_snapshot!(format!("{name}_steer_prompt"), rig.screen());
        rig.key(KeyCode::Esc);
        rig.key(KeyCode::Char('m')).text("status please");
        insta::assert_snapshot!(format!("{name}_message_prompt"), rig.screen());
        rig.key(KeyCode::Esc);
        rig.key(KeyCode::Char('x'));
        insta::assert_snapshot!(format!("{name}_stop_prompt"), rig.screen());
        rig.key(KeyCode::Esc);
        rig.key(KeyCode::Char(' '));
        rig.key(KeyCode::Down).key(KeyCode::Char(' '));
        rig.key(KeyCode::Char(':')).text("stop").key(KeyCode::Enter);
        insta::assert_snapshot!(format!("{name}_bulk_stop"), rig.screen());
        rig.key(KeyCode::Esc);
        rig.key(KeyCode::Char('f'));
        insta::assert_snapshot!(format!("{name}_followup_refused"), rig.screen());
    }
}

#[test]
fn a_pinned_prompt_that_cannot_show_its_identity_is_not_actionable() {
    // 60 columns: compact, too narrow for "stop UUID@1 (running) and its subtree? …".
    let mut rig = Rig::new(60, 20);
    rig.key(KeyCode::Char('x'));
    assert!(matches!(rig.hub.mode(), Mode::Prompt(Prompt::Stop { .. })));
    assert!(!rig.hub.prompt_fits());
    assert!(rig.screen().contains("enlarge the terminal"));
    rig.key(KeyCode::Char('y'));
    assert!(
        rig.take_controls().is_empty(),
        "y is ignored while the target is hidden"
    );
    rig.key(KeyCode::Esc);
    assert_eq!(rig.hub.mode(), &Mode::Browse);
}

// ----- fitting ------------------------------------------------------------------------------

/// Renders into a buffer wider than the area: nothing may be written right of it.
#[test]
fn every_line_fits_its_area_at_every_width() {
    for w in [1u16, 4, 40, 80, 200] {
        for h in [1u16, 6, 24, 60] {
            for setup in 0..6 {
                let (snapshots, agents) = fleet();
                let mut hub = Hub::new(HubOptions::default(), NOW);
                hub.update(Msg::Resize(w, h));
                hub.update(Msg::Loaded {
                    snapshots,
                    agents,
                    at: NOW,
                });
                hub.settle();
                let target = hub.selected().expect("selection");
                hub.update(Msg::Transcript {
                    target,
                    result: Ok(transcript().into()),
                });
                let keys: Vec<Msg> = match setup {
                    0 => vec![],
                    1 => vec![press(KeyCode::Tab)],
                    2 => vec![press(KeyCode::Tab), press(KeyCode::Tab)],
                    3 => chars("/storage layer and more text than fits"),
                    4 => chars("sfocus on the writers please, all of them"),
                    _ => {
                        let mut k = chars(" ");
                        k.push(press(KeyCode::Down));
                        k.extend(chars(" :stop"));
                        k.push(press(KeyCode::Enter));
                        k
                    }
                };
                for k in keys {
                    hub.update(k);
                }
                hub.prepare();
                let mut buf = Buffer::empty(Rect::new(0, 0, w + 8, h));
                (&HubView::new(&hub)).render(Rect::new(0, 0, w, h), &mut buf);
                for y in 0..h {
                    for x in w..w + 8 {
                        assert_eq!(
                            buf[(x, y)].symbol(),
                            " ",
                            "width {w} height {h} setup {setup}: row {y} overflows at column {x}:\n{}",
                            buffer_text(&buf)
                        );
                    }
                }
            }
        }
    }
}

// ----- key sequences ------------------------------------------------------------------------

#[test]
fn arrows_move_the_selection_through_history_rows_and_refetch() {
    let mut rig = Rig::new(120, 24);
    assert_eq!(rig.hub.selected(), Some(r(1, 1)));
    rig.effects.clear();
    rig.key(KeyCode::Down);
    assert_eq!(
        rig.hub.selected(),
        Some(r(2, 1)),
        "the nested child follows its parent"
    );
    assert!(fetches(&rig.effects, r(2, 1)));
    rig.key(KeyCode::Down);
    assert_eq!(
        rig.hub.selected(),
        Some(r(3, 1)),
        "a history row is selectable"
    );
    rig.key(KeyCode::Down);
    assert_eq!(rig.hub.selected(), Some(r(3, 2)));
    rig.key(KeyCode::Up)
        .key(KeyCode::Up)
        .key(KeyCode::Up)
        .key(KeyCode::Up);
    assert_eq!(rig.hub.selected(), Some(r(1, 1)));
    // Current fleet counts exclude the old generation.
    let counts = rig.hub.roster().counts();
    assert_eq!(counts.current, 6);
    assert_eq!(counts.history, 1);
}

#[test]
fn thread_opens_live_detaches_on_scroll_up_and_resumes_at_the_bottom() {
    let mut rig = Rig::new(120, 12);
    let long: Vec<Value> = (0..60)
        .map(|i| json!({"role": "assistant", "content": [{"type": "text", "text": format!("line {i}")}]}))
        .collect();
    rig.answer_transcript(long);
    assert!(rig.hub.is_live());
    assert!(rig.screen().contains("line 59"));
    rig.key(KeyCode::Char('k'));
    assert!(!rig.hub.is_live(), "k detaches");
    assert!(rig.screen().contains("READING"));
    rig.key(KeyCode::Char('j'));
    assert!(rig.hub.is_live(), "reaching the bottom resumes");
    rig.key(KeyCode::Home);
    assert!(!rig.hub.is_live());
    assert_eq!(rig.hub.scroll_of(Pane::Thread).offset, 0);
    assert!(rig.screen().contains("line 0"));
    rig.send(vec![ctrl('d')]);
    assert!(rig.hub.scroll_of(Pane::Thread).offset > 0);
    rig.send(vec![ctrl('u')]);
    assert_eq!(rig.hub.scroll_of(Pane::Thread).offset, 0);
    rig.key(KeyCode::PageDown);
    assert!(rig.hub.scroll_of(Pane::Thread).offset > 0);
    rig.key(KeyCode::PageUp);
    rig.key(KeyCode::End);
    assert!(rig.hub.is_live());
    // A READING thread does not follow appended output.
    rig.key(KeyCode::Char('k'));
    let before = rig.hub.scroll_of(Pane::Thread).offset;
    let target = rig.hub.selected().expect("selection");
    let more: Vec<Value> = (0..80)
        .map(|i| json!({"role": "assistant", "content": [{"type": "text", "text": format!("line {i}")}]}))
        .collect();
    rig.send(vec![Msg::Transcript {
        target,
        result: Ok(more.into()),
    }]);
    assert_eq!(rig.hub.scroll_of(Pane::Thread).offset, before);
    assert!(!rig.hub.is_live());
}

#[test]
fn details_show_the_requested_pair_when_recovery_moved_the_route() {
    let mut moved = snap(1, 1, Status::Running, "Recovered task");
    moved.model = Some("fake/fake-model".into());
    moved.effort = Some("off".into());
    moved.requested_model = Some("fake-b/fake-down".into());
    moved.requested_effort = Some("off".into());
    moved.logical = Some(slate::core::snapshot::LogicalSnapshot {
        model: "fake-test".into(),
        reason: "cheap and fast".into(),
        admission: 1,
        route_model: "fake-test".into(),
        route_provider: "fake".into(),
        switches: 1,
    });
    let mut same = snap(2, 1, Status::Running, "Unmoved task");
    same.model = Some("fake/fake-model".into());
    same.requested_model = Some("fake/fake-model".into());
    same.requested_effort.clone_from(&same.effort);
    let mut rig = Rig::with(160, 40, vec![moved, same], Vec::new());
    rig.key(KeyCode::Tab);
    let screen = rig.screen();
    assert!(
        screen.contains("requested   fake-b/fake-down · effort off"),
        "{screen}"
    );
    assert!(
        screen.contains("route fake-test via fake, 1 switch(es)"),
        "{screen}"
    );
    rig.key(KeyCode::Down);
    let screen = rig.screen();
    assert!(
        !screen.contains("requested   "),
        "same pair: no requested line\n{screen}"
    );
}

#[test]
fn details_and_tools_open_at_the_top_without_following() {
    let mut rig = Rig::new(120, 12);
    rig.answer_transcript(transcript());
    rig.key(KeyCode::Tab);
    assert_eq!(rig.hub.scroll_of(Pane::Details).offset, 0);
    assert!(rig.screen().contains("identity"));
    rig.key(KeyCode::End);
    assert!(rig.hub.scroll_of(Pane::Details).offset > 0);
    rig.key(KeyCode::Tab).key(KeyCode::Tab).key(KeyCode::Tab);
    assert_eq!(rig.hub.pane(), Pane::Details);
    assert_eq!(
        rig.hub.scroll_of(Pane::Details).offset,
        0,
        "reopens at the top"
    );
    rig.key(KeyCode::Tab);
    assert_eq!(rig.hub.pane(), Pane::Tools);
    assert_eq!(rig.hub.scroll_of(Pane::Tools).offset, 0);
    rig.send(vec![event(KeyCode::BackTab, KeyModifiers::SHIFT)]);
    assert_eq!(rig.hub.pane(), Pane::Details);
}

#[test]
fn filter_searches_result_progress_and_identity_and_inverts() {
    let mut rig = Rig::new(120, 24);
    rig.key(KeyCode::Char('/')).text("edge cases");
    assert_eq!(rig.hub.roster().rows(), &[r(4, 1)], "result text matches");
    rig.key(KeyCode::Enter);
    assert_eq!(rig.hub.selected(), Some(r(4, 1)));
    // Editing starts at the end of the prefilled filter.
    rig.key(KeyCode::Char('/'));
    rig.key(KeyCode::Backspace)
        .key(KeyCode::Backspace)
        .key(KeyCode::Backspace);
    assert_eq!(rig.hub.filter_text(), "edge ca");
    rig.key(KeyCode::Esc);
    assert_eq!(
        rig.hub.filter_text(),
        "edge cases",
        "Esc restores the filter"
    );
    rig.send(vec![press(KeyCode::Char(':'))])
        .text("filter checked 14")
        .key(KeyCode::Enter);
    assert_eq!(rig.hub.roster().rows(), &[r(4, 1)], "progress matches");
    let identity = r(3, 2).to_string();
    rig.key(KeyCode::Char(':'))
        .text(&format!("filter {identity}"))
        .key(KeyCode::Enter);
    assert_eq!(
        rig.hub.roster().rows(),
        &[r(3, 2)],
        "exact identity matches"
    );
    rig.key(KeyCode::Char(':'))
        .text("filter !settled")
        .key(KeyCode::Enter);
    assert!(
        rig.hub
            .roster()
            .rows()
            .iter()
            .all(|x| *x != r(4, 1) && *x != r(3, 1))
    );
    assert_eq!(rig.hub.roster().rows().len(), 5);
    rig.key(KeyCode::Char('/'));
    for _ in 0.."!settled".len() {
        rig.key(KeyCode::Backspace);
    }
    rig.text("!").key(KeyCode::Enter);
    assert_eq!(rig.hub.roster().rows().len(), 7, "a bare ! filters nothing");
}

#[test]
fn sort_command_orders_and_refuses_unknown_keys() {
    let mut rig = Rig::new(120, 24);
    rig.key(KeyCode::Char(':'))
        .text("sort newest")
        .key(KeyCode::Enter);
    assert_eq!(rig.hub.roster().rows()[0], r(3, 2));
    rig.key(KeyCode::Char(':'))
        .text("sort cost")
        .key(KeyCode::Enter);
    assert_eq!(
        rig.hub.roster().rows()[0],
        r(1, 1),
        "the only known cost first"
    );
    rig.key(KeyCode::Char(':'))
        .text("sort status")
        .key(KeyCode::Enter);
    assert_eq!(rig.hub.roster().rows()[0], r(1, 1), "running first");
    rig.key(KeyCode::Char(':'))
        .text("sort size")
        .key(KeyCode::Enter);
    assert!(rig.notice().contains("usage: :sort"));
    rig.key(KeyCode::Char(':'))
        .text("frobnicate")
        .key(KeyCode::Enter);
    assert!(rig.notice().contains("unknown command"));
}

#[test]
fn steer_is_pinned_to_a_running_target() {
    let mut rig = Rig::new(120, 24);
    rig.key(KeyCode::Char('s'));
    assert!(
        rig.screen().contains(&format!("steer {}", r(1, 1))),
        "identity shown"
    );
    rig.text("focus").key(KeyCode::Enter);
    let sent = rig.take_controls();
    assert_eq!(
        sent.iter().map(|(_, a)| a.clone()).collect::<Vec<_>>(),
        vec![Action::Steer {
            target: r(1, 1),
            text: "focus".to_owned()
        }]
    );
    assert_eq!(sent[0].1.params()["target"], r(1, 1).to_string());
    // The receipt shows its real state.
    rig.send(vec![Msg::ControlDone {
        id: sent[0].0,
        result: Ok(receipt(7, ReceiptStatus::Queued)),
    }]);
    assert!(
        rig.notice()
            .contains(&format!("receipt {} is queued", id(7))),
        "{}",
        rig.notice()
    );
    assert!(rig.notice().contains("not a model acknowledgement"));
    // Queued, history, paused targets refuse without dispatching.
    for target in [r(2, 1), r(3, 1), r(3, 2)] {
        rig.select(target).key(KeyCode::Char('s'));
        assert_eq!(rig.hub.mode(), &Mode::Browse);
        assert!(
            rig.notice().starts_with("refused"),
            "{target}: {}",
            rig.notice()
        );
        assert!(rig.take_controls().is_empty());
    }
}

#[test]
fn a_multi_line_paste_stays_in_the_steer_prompt_and_is_never_read_as_keys_8() {
    let mut rig = Rig::new(120, 24);
    let pasted = "line one\r\nx\ny\np\nq\n";
    rig.key(KeyCode::Char('s'))
        .send(vec![Msg::Paste(pasted.to_owned())]);
    assert!(!rig.hub.should_quit(), "a pasted q is text");
    assert!(rig.take_controls().is_empty(), "nothing sent by the paste");
    assert_eq!(
        rig.hub.mode(),
        &Mode::Prompt(Prompt::Steer {
            target: r(1, 1),
            input: "line one\nx\ny\np\nq\n".to_owned()
        })
    );
    let screen = rig.screen();
    assert!(screen.contains("line one↵x↵y↵p↵q↵▏"), "{screen}");
    // Enter sends the whole text as one steer.
    rig.key(KeyCode::Enter);
    assert_eq!(
        rig.take_controls()
            .into_iter()
            .map(|(_, a)| a)
            .collect::<Vec<_>>(),
        vec![Action::Steer {
            target: r(1, 1),
            text: "line one\nx\ny\np\nq\n".to_owned()
        }]
    );
    // Outside a prompt a paste does nothing but say so; in a stop prompt a pasted y confirms
    // nothing.
    rig.send(vec![Msg::Paste("xyq".to_owned())]);
    assert_eq!(rig.hub.mode(), &Mode::Browse);
    assert!(!rig.hub.should_quit());
    assert!(rig.notice().contains("paste ignored"), "{}", rig.notice());
    rig.key(KeyCode::Char('x'))
        .send(vec![Msg::Paste("y".to_owned())]);
    assert!(matches!(rig.hub.mode(), Mode::Prompt(Prompt::Stop { .. })));
    assert!(rig.take_controls().is_empty());
    rig.key(KeyCode::Esc);
    // A filter takes a paste as one line.
    rig.key(KeyCode::Char('/'))
        .send(vec![Msg::Paste("edge\ncases".to_owned())]);
    assert_eq!(rig.hub.filter_text(), "edge cases");
    assert_eq!(rig.hub.roster().rows(), &[r(4, 1)]);
}

#[test]
fn keys_the_hub_has_no_use_for_are_dropped_at_the_edge() {
    use ratatui::crossterm::event::KeyEventKind;
    let mut release = KeyEvent::new(KeyCode::Char('q'), KeyModifiers::NONE);
    release.kind = KeyEventKind::Release;
    assert_eq!(Key::from_event(&release), None);
    assert_eq!(
        Key::from_event(&KeyEvent::new(KeyCode::Char('x'), KeyModifiers::ALT)),
        None
    );
    assert_eq!(
        Key::from_event(&KeyEvent::new(KeyCode::F(1), KeyModifiers::NONE)),
        None
    );
    assert_eq!(
        Key::from_event(&KeyEvent::new(KeyCode::Char('Y'), KeyModifiers::SHIFT)),
        Some(Key::Char('Y'))
    );
}

#[test]
fn steer_refuses_when_the_target_stops_running_while_the_prompt_is_open() {
    let mut rig = Rig::new(120, 24);
    rig.key(KeyCode::Char('s')).text("focus");
    let mut changed = fleet().0.remove(0);
    changed.status = Status::Draining;
    rig.send(vec![Msg::Registry {
        child: Box::new(changed),
        at: NOW + 1,
    }]);
    rig.key(KeyCode::Enter);
    assert!(rig.take_controls().is_empty());
    assert!(rig.notice().contains("draining"), "{}", rig.notice());
}

#[test]
fn message_goes_to_the_root_message_authority_and_shows_the_receipt() {
    let mut rig = Rig::new(120, 24);
    rig.key(KeyCode::Char('m'));
    assert!(
        rig.screen()
            .contains(&format!("message {} (root inbox)", r(1, 1)))
    );
    rig.text("status?").key(KeyCode::Enter);
    let sent = rig.take_controls();
    assert_eq!(sent.len(), 1);
    assert_eq!(sent[0].1.method(), "message");
    assert_eq!(sent[0].1.params()["mode"], "inbox");
    rig.send(vec![Msg::ControlDone {
        id: sent[0].0,
        result: Ok(receipt(9, ReceiptStatus::Accepted)),
    }]);
    assert!(
        rig.notice()
            .contains(&format!("receipt {} is accepted", id(9)))
    );
    // A refusal keeps the coordinator's code.
    rig.key(KeyCode::Char('m'))
        .text("again")
        .key(KeyCode::Enter);
    let sent = rig.take_controls();
    rig.send(vec![Msg::ControlDone {
        id: sent[0].0,
        result: Err(Failure {
            code: Some("not-addressable".to_owned()),
            message: "target: not a direct child".to_owned(),
        }),
    }]);
    assert!(rig.notice().contains("refused [not-addressable]"));
    // An empty message is not sent.
    rig.key(KeyCode::Char('m')).key(KeyCode::Enter);
    assert!(rig.take_controls().is_empty());
}

#[test]
fn wait_is_bounded_to_one_second() {
    let mut rig = Rig::new(120, 24);
    rig.key(KeyCode::Char('w'));
    let sent = rig.take_controls();
    assert_eq!(sent[0].1, Action::Wait { target: r(1, 1) });
    assert_eq!(sent[0].1.params()["timeoutMs"], 1000);
    rig.send(vec![Msg::ControlDone {
        id: sent[0].0,
        result: Ok(Reply::Wait {
            result: WaitResult::Timeout,
        }),
    }]);
    assert!(rig.notice().contains("no outcome within 1000 ms"));
}

#[test]
fn stop_needs_y_and_refuses_historical_pausing_draining_and_disposed_targets() {
    let mut rig = Rig::new(120, 24);
    rig.key(KeyCode::Char('x'));
    assert!(matches!(rig.hub.mode(), Mode::Prompt(Prompt::Stop { target }) if *target == r(1, 1)));
    assert!(rig.take_controls().is_empty(), "nothing before y");
    rig.key(KeyCode::Char('n'));
    assert_eq!(rig.hub.mode(), &Mode::Browse);
    rig.key(KeyCode::Char('x')).key(KeyCode::Char('y'));
    assert_eq!(rig.take_controls()[0].1, Action::Stop { target: r(1, 1) });
    // Queued and paused targets are accepted.
    for target in [r(2, 1), r(3, 2)] {
        rig.select(target)
            .key(KeyCode::Char('x'))
            .key(KeyCode::Char('y'));
        assert_eq!(rig.take_controls()[0].1, Action::Stop { target });
    }
    // History, disposed (settled), draining, cancelled refuse at once.
    rig.key(KeyCode::Up).key(KeyCode::Up);
    for target in [r(3, 1), r(4, 1), r(5, 1), r(6, 1)] {
        rig.select(target).key(KeyCode::Char('x'));
        assert_eq!(rig.hub.mode(), &Mode::Browse, "{target}");
        assert!(
            rig.notice().starts_with("refused"),
            "{target}: {}",
            rig.notice()
        );
        assert!(rig.take_controls().is_empty());
    }
}

#[test]
fn stop_refuses_when_the_target_changes_state_while_the_prompt_is_open() {
    for later in [Status::Pausing, Status::Draining, Status::Settled] {
        let mut rig = Rig::new(120, 24);
        rig.key(KeyCode::Char('x'));
        let mut changed = fleet().0.remove(0);
        changed.status = later;
        changed.disposed = later.is_terminal();
        rig.send(vec![Msg::Registry {
            child: Box::new(changed),
            at: NOW + 5,
        }]);
        assert!(rig.screen().contains("y will refuse"), "{later}");
        rig.key(KeyCode::Char('y'));
        assert!(rig.take_controls().is_empty(), "{later}");
        assert!(
            rig.notice().starts_with("refused"),
            "{later}: {}",
            rig.notice()
        );
    }
    // A newer generation makes the pinned one historical.
    let mut rig = Rig::new(120, 24);
    rig.key(KeyCode::Char('x'));
    let mut newer = snap(1, 2, Status::Queued, "Map again");
    newer.created_at = NOW;
    rig.send(vec![Msg::Registry {
        child: Box::new(newer),
        at: NOW + 5,
    }]);
    rig.key(KeyCode::Char('y'));
    assert!(rig.take_controls().is_empty());
    assert!(rig.notice().contains("historical generation"));
}

#[test]
fn park_takes_only_the_disposed_idle_current_identity() {
    let mut rig = Rig::new(120, 24);
    rig.select(r(4, 1)).key(KeyCode::Char('p'));
    let sent = rig.take_controls();
    assert_eq!(sent[0].1, Action::Park { target: r(4, 1) });
    rig.send(vec![Msg::ControlDone {
        id: sent[0].0,
        result: Ok(Reply::Snapshot {
            child: Box::new(ChildSnapshot {
                disposed: true,
                ..snap(4, 1, Status::Settled, "parked")
            }),
        }),
    }]);
    assert!(
        rig.effects.contains(&UiEffect::RefreshAgents),
        "presence re-read after park"
    );
    for target in [r(1, 1), r(3, 1), r(3, 2), r(6, 1)] {
        rig.select(target).key(KeyCode::Char('p'));
        assert!(rig.take_controls().is_empty(), "{target}");
        assert!(
            rig.notice().starts_with("refused"),
            "{target}: {}",
            rig.notice()
        );
    }
}

#[test]
fn followup_and_revive_explain_and_dispatch_nothing() {
    let mut rig = Rig::new(120, 24);
    rig.select(r(4, 1));
    rig.effects.clear();
    for c in ['f', 'r'] {
        rig.key(KeyCode::Char(c));
        assert!(
            rig.effects.is_empty(),
            "{c} allocates and dispatches nothing"
        );
        assert_eq!(rig.hub.notice().map(|n| n.kind), Some(NoticeKind::Refusal));
        assert!(rig.notice().contains("nothing was sent"));
    }
}

#[test]
fn marks_and_bulk_stop_list_every_target_before_confirming() {
    let mut rig = Rig::new(120, 24);
    rig.key(KeyCode::Char(' '));
    rig.select(r(2, 1)).key(KeyCode::Char(' '));
    rig.select(r(5, 1)).key(KeyCode::Char(' '));
    assert_eq!(rig.hub.marks().len(), 3);
    rig.key(KeyCode::Char(':')).text("stop").key(KeyCode::Enter);
    let screen = rig.screen();
    for target in [r(1, 1), r(2, 1), r(5, 1)] {
        assert!(
            screen.contains(&target.to_string()),
            "{target} listed:\n{screen}"
        );
    }
    assert!(
        screen.contains("will be refused"),
        "the draining one is flagged"
    );
    assert!(rig.take_controls().is_empty());
    rig.key(KeyCode::Char('y'));
    let sent = rig.take_controls();
    assert_eq!(
        sent[0].1,
        Action::StopMany {
            targets: vec![r(1, 1), r(2, 1)]
        }
    );
    assert!(rig.notice().contains("refused"));
    assert!(rig.hub.marks().is_empty());
    // Space toggles a mark off; :unmark clears all.
    rig.key(KeyCode::Char(' ')).key(KeyCode::Char(' '));
    assert!(rig.hub.marks().is_empty());
    rig.key(KeyCode::Char(' '));
    rig.key(KeyCode::Char(':'))
        .text("unmark")
        .key(KeyCode::Enter);
    assert!(rig.hub.marks().is_empty());
}

#[test]
fn bulk_steer_sends_one_steer_per_running_target() {
    let mut rig = Rig::new(120, 24);
    rig.key(KeyCode::Char(' '));
    rig.select(r(2, 1)).key(KeyCode::Char(' '));
    rig.key(KeyCode::Char(':'))
        .text("steer wrap up")
        .key(KeyCode::Enter);
    assert!(rig.take_controls().is_empty());
    rig.key(KeyCode::Char('y'));
    let sent: Vec<Action> = rig.take_controls().into_iter().map(|(_, a)| a).collect();
    assert_eq!(
        sent,
        vec![Action::Steer {
            target: r(1, 1),
            text: "wrap up".to_owned()
        }]
    );
    // :steer without marks steers the selection; without text it explains.
    rig.select(r(1, 1));
    rig.key(KeyCode::Char(':'))
        .text("steer now")
        .key(KeyCode::Enter);
    assert_eq!(rig.take_controls().len(), 1);
    rig.key(KeyCode::Char(':'))
        .text("steer")
        .key(KeyCode::Enter);
    assert!(rig.notice().contains("usage"));
    // :stop without marks opens the pinned stop prompt.
    rig.key(KeyCode::Char(':')).text("stop").key(KeyCode::Enter);
    assert!(matches!(rig.hub.mode(), Mode::Prompt(Prompt::Stop { .. })));
}

#[test]
fn q_and_esc_close() {
    let mut rig = Rig::new(120, 24);
    rig.key(KeyCode::Char('q'));
    assert!(rig.hub.should_quit());
    let mut rig = Rig::new(120, 24);
    rig.key(KeyCode::Char('/')).key(KeyCode::Esc);
    assert!(!rig.hub.should_quit(), "Esc closes the filter first");
    rig.key(KeyCode::Esc);
    assert!(rig.hub.should_quit());
}

#[test]
fn stalled_only_from_observed_registry_timing() {
    let mut rig = Rig::new(120, 24);
    rig.send(vec![Msg::Tick(NOW + 59_000)]);
    assert!(!rig.screen().contains("stalled"));
    rig.send(vec![Msg::Tick(NOW + 61_000)]);
    assert!(rig.screen().contains("stalled 1m01s"), "{}", rig.screen());
    // A registry change resets it.
    let a = fleet().0.remove(0);
    rig.send(vec![Msg::Registry {
        child: Box::new(a),
        at: NOW + 61_500,
    }]);
    assert!(!rig.screen().contains("stalled"));
}

#[test]
fn retrying_and_rate_limited_come_from_the_snapshot() {
    let (mut snapshots, agents) = fleet();
    snapshots[0].retry = Some(slate::core::Retry {
        attempt: 1,
        max_attempts: 3,
        delay_ms: 2000,
        rate_limited: false,
    });
    snapshots[5].retry = Some(slate::core::Retry {
        attempt: 2,
        max_attempts: 3,
        delay_ms: 4000,
        rate_limited: true,
    });
    let mut rig = Rig::with(200, 24, snapshots, agents);
    let screen = rig.screen();
    assert!(screen.contains("retrying 1/3 after 2.0s"), "{screen}");
    assert!(
        screen.contains("rate-limited, retry 2/3 after 4.0s"),
        "{screen}"
    );
    rig.key(KeyCode::Tab);
    assert!(rig.screen().contains("status      running · retrying 1/3"));
    // Without a reported retry nothing of the kind is shown, whatever the text says.
    let (mut snapshots, agents) = fleet();
    snapshots[0].activity = Some("retrying after 429 rate limit".to_owned());
    let rig = Rig::with(200, 24, snapshots, agents);
    assert!(!rig.screen().contains("rate-limited"));
}

#[test]
fn a_registry_change_received_during_the_initial_read_is_not_overwritten() {
    let mut hub = Hub::new(HubOptions::default(), NOW);
    let mut newer = fleet().0.remove(0);
    newer.status = Status::Draining;
    hub.update(Msg::Registry {
        child: Box::new(newer),
        at: NOW + 10,
    });
    let (snapshots, agents) = fleet();
    hub.update(Msg::Loaded {
        snapshots,
        agents,
        at: NOW,
    });
    hub.settle();
    let entry = hub.roster().get(r(1, 1)).expect("entry");
    assert_eq!(entry.snapshot.status, Status::Draining);
    assert_eq!(hub.roster().len(), 7);
}

#[test]
fn idle_draws_nothing_and_the_clock_ticks_only_with_an_active_row_visible() {
    // Only terminal rows: ticks change nothing, so nothing is drawn.
    let (snapshots, agents) = fleet();
    let done: Vec<ChildSnapshot> = snapshots
        .into_iter()
        .filter(|s| s.status.is_terminal())
        .collect();
    let mut rig = Rig::with(120, 24, done, agents.clone());
    let before = rig.draws;
    assert!(!rig.hub.wants_tick());
    for s in 1..=60 {
        rig.send(vec![Msg::Tick(NOW + s * 1000)]);
    }
    assert_eq!(rig.draws, before);
    // An active row on screen: one draw per tick.
    let mut rig = Rig::new(120, 24);
    assert!(rig.hub.wants_tick());
    let before = rig.draws;
    for s in 1..=10 {
        rig.send(vec![Msg::Tick(NOW + s * 1000)]);
    }
    assert_eq!(rig.draws, before + 10);
    // Many messages in one batch draw once.
    let before = rig.draws;
    let a = fleet().0.remove(0);
    let burst: Vec<Msg> = (0..100)
        .map(|i| Msg::Registry {
            child: Box::new(a.clone()),
            at: NOW + 20_000 + i,
        })
        .collect();
    rig.send(burst);
    assert_eq!(rig.draws, before + 1);
}

#[test]
fn a_changed_selected_generation_refetches_its_transcript_one_at_a_time() {
    let mut rig = Rig::new(120, 24);
    rig.answer_transcript(transcript());
    let a = fleet().0.remove(0);
    rig.send(vec![Msg::Registry {
        child: Box::new(a.clone()),
        at: NOW + 1,
    }]);
    assert!(fetches(&rig.effects, r(1, 1)));
    rig.effects.clear();
    rig.send(vec![Msg::Registry {
        child: Box::new(a),
        at: NOW + 2,
    }]);
    assert!(
        !fetches(&rig.effects, r(1, 1)),
        "one fetch in flight at a time"
    );
    rig.send(vec![Msg::Transcript {
        target: r(1, 1),
        result: Ok(transcript().into()),
    }]);
    assert!(fetches(&rig.effects, r(1, 1)), "then refetched");
}

#[test]
#[allow(clippy::too_many_lines)] // one scenario, step by step
fn a_changed_transcript_is_read_after_its_cursor_and_appended_not_rebuilt_10() {
    let mut rig = Rig::new(120, 24);
    let target = r(1, 1);
    assert!(rig.effects.contains(&UiEffect::FetchTranscript {
        target,
        after: None
    }));
    rig.effects.clear();
    rig.send(vec![Msg::Transcript {
        target,
        result: Ok(TranscriptPart {
            after: None,
            messages: transcript(),
            cursor: 900,
            restarted: false,
        }),
    }]);
    let a = fleet().0.remove(0);
    rig.send(vec![Msg::Registry {
        child: Box::new(a.clone()),
        at: NOW + 1,
    }]);
    assert!(
        rig.effects.contains(&UiEffect::FetchTranscript {
            target,
            after: Some(900)
        }),
        "only what was recorded after the cursor: {:?}",
        rig.effects
    );
    rig.effects.clear();
    let new = json!({"role": "assistant", "content": [
        {"type": "text", "text": "Appended: a fifth message."}
    ], "stopReason": "stop"});
    rig.send(vec![Msg::Transcript {
        target,
        result: Ok(TranscriptPart {
            after: Some(900),
            messages: vec![new.clone()],
            cursor: 1000,
            restarted: false,
        }),
    }]);
    // The same screen as a Hub that read all five messages at once.
    let mut all = transcript();
    all.push(new.clone());
    let mut fresh = Rig::new(120, 24);
    fresh.answer_transcript(all.clone());
    assert_eq!(rig.screen(), fresh.screen());
    assert!(rig.screen().contains("Appended: a fifth message."));
    // The next read continues from the new cursor; an empty answer changes nothing.
    rig.send(vec![Msg::Registry {
        child: Box::new(a.clone()),
        at: NOW + 2,
    }]);
    assert!(
        rig.effects.contains(&UiEffect::FetchTranscript {
            target,
            after: Some(1000)
        }),
        "only what was recorded after the cursor: {:?}",
        rig.effects
    );
    rig.effects.clear();
    rig.send(vec![Msg::Transcript {
        target,
        result: Ok(TranscriptPart {
            after: Some(1000),
            messages: Vec::new(),
            cursor: 1000,
            restarted: false,
        }),
    }]);
    assert_eq!(rig.screen(), fresh.screen());
    // A restarted read replaces everything.
    rig.send(vec![Msg::Registry {
        child: Box::new(a.clone()),
        at: NOW + 3,
    }]);
    rig.effects.clear();
    rig.send(vec![Msg::Transcript {
        target,
        result: Ok(TranscriptPart {
            after: Some(1000),
            messages: vec![new],
            cursor: 100,
            restarted: true,
        }),
    }]);
    let screen = rig.screen();
    assert!(screen.contains("Appended: a fifth message."), "{screen}");
    assert!(!screen.contains("I'll read the store first."), "{screen}");
    // An answer continuing a cursor the Hub no longer has is dropped and read again from
    // the start.
    rig.send(vec![Msg::Transcript {
        target,
        result: Ok(TranscriptPart {
            after: Some(5),
            messages: transcript(),
            cursor: 6,
            restarted: false,
        }),
    }]);
    assert!(rig.effects.contains(&UiEffect::FetchTranscript {
        target,
        after: None
    }));
}

// ----- readable at a glance (issue 14, item 12) ------------------------------------------------

#[test]
fn details_show_clock_times_and_relative_durations_never_raw_epochs_12() {
    let mut rig = Rig::new(200, 40);
    rig.answer_transcript(transcript()).key(KeyCode::Tab);
    let screen = rig.screen();
    assert!(
        screen.contains(
            "window      #1 · started 22:11:50 UTC, 1 m 30 s ago · deadline in 8 m 30 s (22:21:50 UTC)"
        ),
        "{screen}"
    );
    assert!(
        screen.contains("admitted    22:11:51 UTC, 1 m 29 s ago"),
        "{screen}"
    );
    assert!(!screen.contains("1699999"), "no raw epoch: {screen}");
    assert!(!screen.contains("1700000"), "no raw epoch: {screen}");
}

/// Every cell's foreground in `buf` that is plain ANSI blue.
fn blue_cells(buf: &Buffer) -> Vec<String> {
    use ratatui::style::Color;
    buf.content()
        .iter()
        .filter(|c| matches!(c.fg, Color::Blue | Color::LightBlue) && c.symbol() != " ")
        .map(|c| c.symbol().to_owned())
        .collect()
}

#[test]
fn tool_headings_calls_and_statuses_are_never_drawn_in_ansi_blue_12() {
    let (mut snapshots, agents) = fleet();
    snapshots[1].status = Status::Setup;
    let mut rig = Rig::with(160, 45, snapshots, agents);
    rig.answer_transcript(transcript());
    for pane in 0..3 {
        let buf = rig.term.backend().buffer().clone();
        assert!(
            blue_cells(&buf).is_empty(),
            "pane {pane}: blue text {:?}",
            blue_cells(&buf)
        );
        rig.key(KeyCode::Tab);
    }
    if slate::ui::theme::colour() {
        // The tool lines are coloured, just not blue.
        let buf = rig.term.backend().buffer().clone();
        let text = buffer_text(&buf);
        let y = text
            .lines()
            .position(|l| l.contains("→ read"))
            .expect("a tool call line");
        let x = text
            .lines()
            .nth(y)
            .and_then(|l| l.split('│').next())
            .map_or(0, |left| {
                u16::try_from(unicode_width::UnicodeWidthStr::width(left) + 1).unwrap_or(0)
            });
        let fg = buf[(x, u16::try_from(y).unwrap_or(0))].fg;
        assert_ne!(fg, ratatui::style::Color::Reset, "tool lines keep a colour");
    }
}

#[test]
fn the_wide_roster_gives_the_headline_the_room_it_needs_12() {
    let (mut snapshots, agents) = fleet();
    snapshots[0].assignment = "Map the config loader and every caller of it".to_owned();
    snapshots[0].telemetry.requests = Some(123);
    snapshots[0].telemetry.cost = Some(12.3456);
    let mut rig = Rig::with(160, 45, snapshots, agents);
    rig.answer_transcript(transcript());
    let screen = rig.screen();
    let row = screen
        .lines()
        .find(|l| l.contains("Map the config"))
        .and_then(|l| l.split('│').next())
        .expect("the row");
    assert!(
        row.contains("Map the config loader and every caller of it"),
        "the whole headline: {row:?}"
    );
    // Beside its handle (issue 21): at 160 columns the roster has room for both.
    assert!(row.contains(&r(1, 1).handle()), "the handle: {row:?}");
    // The stats that did not fit are in the details.
    rig.key(KeyCode::Tab);
    let screen = rig.screen();
    assert!(screen.contains("requests 123"), "{screen}");
    assert!(screen.contains("$12.3456"), "{screen}");
    // A short headline keeps its stats beside it.
    let screen = Rig::new(160, 45).screen();
    let row = screen
        .lines()
        .find(|l| l.contains("Map the storage layer"))
        .expect("the row");
    assert!(row.contains("3 req") && row.contains("$0.012"), "{row:?}");
}

#[test]
fn an_edit_call_is_shown_as_a_compact_diff_not_raw_json_12() {
    let mut messages = transcript();
    messages.push(json!({"role": "assistant", "content": [
        {"type": "toolCall", "id": "call-2", "name": "edit", "arguments": {
            "path": "src/cli.rs",
            "edits": [{
                "oldText": "struct Args {\n    pub retries: Option<u32>,\n}",
                "newText": "struct Args {\n    pub retries: Option<u32>,\n    #[arg(long)]\n    pub retry_max: Option<u32>,\n}"
            }]
        }}
    ], "stopReason": "toolUse"}));
    let mut rig = Rig::new(140, 45);
    rig.answer_transcript(messages);
    let screen = rig.screen();
    assert!(
        screen.contains("→ edit src/cli.rs · 1 change · +2 −0"),
        "{screen}"
    );
    assert!(
        screen.contains("      pub retries: Option<u32>,"),
        "context: {screen}"
    );
    assert!(screen.contains("+     #[arg(long)]"), "{screen}");
    assert!(
        screen.contains("+     pub retry_max: Option<u32>,"),
        "{screen}"
    );
    assert!(
        !screen.contains("oldText") && !screen.contains("\\n"),
        "{screen}"
    );
    let buf = rig.term.backend().buffer().clone();
    let text = buffer_text(&buf);
    if slate::ui::theme::colour() {
        let (y, line) = text
            .lines()
            .enumerate()
            .find(|(_, l)| l.contains("+     #[arg(long)]"))
            .expect("added line");
        let x = line
            .find('+')
            .map_or(0, |b| unicode_width::UnicodeWidthStr::width(&line[..b]));
        assert_eq!(
            buf[(u16::try_from(x).unwrap_or(0), u16::try_from(y).unwrap_or(0))].fg,
            ratatui::style::Color::Green
        );
    }
    // The tools pane has the whole change with its path.
    rig.key(KeyCode::Tab).key(KeyCode::Tab);
    let screen = rig.screen();
    assert!(screen.contains("● edit  call call-2"), "{screen}");
    assert!(screen.contains("path: src/cli.rs"), "{screen}");
    assert!(
        screen.contains("+     pub retry_max: Option<u32>,"),
        "{screen}"
    );
    // The older top-level pair reads the same way.
    let old_style = vec![json!({"role": "assistant", "content": [
        {"type": "toolCall", "id": "c", "name": "edit", "arguments": {
            "path": "a.txt", "oldText": "one\ntwo", "newText": "one\nthree"}}
    ]})];
    let mut rig = Rig::new(140, 30);
    rig.answer_transcript(old_style);
    let screen = rig.screen();
    assert!(
        screen.contains("→ edit a.txt · 1 change · +1 −1"),
        "{screen}"
    );
    assert!(
        screen.contains("- two") && screen.contains("+ three"),
        "{screen}"
    );
}

// ----- live streaming ---------------------------------------------------------------------

fn streaming(progress: &str, at_offset: u64) -> Msg {
    let mut a = fleet().0.remove(0);
    a.streaming = Some(slate::core::Streaming::Assistant);
    a.progress = Some(progress.to_owned());
    a.activity = progress.lines().last().map(str::to_owned);
    Msg::Registry {
        child: Box::new(a),
        at: NOW + at_offset,
    }
}

#[test]
fn a_streaming_assistant_message_ends_the_live_thread_until_the_final_one_replaces_it() {
    let mut rig = Rig::new(100, 20);
    rig.answer_transcript(transcript());
    assert!(rig.hub.is_live());
    rig.send(vec![streaming("Checking the", 1)]);
    // The change into streaming may have changed the transcript: fetched once.
    rig.answer_transcript(transcript());
    rig.send(vec![streaming(
        "Checking the callers of\nwrite(): two in",
        2,
    )]);
    assert!(
        !fetches(&rig.effects, r(1, 1)),
        "streamed text comes with the snapshot, not the transcript: {:?}",
        rig.effects
    );
    insta::assert_snapshot!("wide_thread_streaming", rig.screen());
    let screen = rig.screen();
    assert!(screen.contains("assistant · streaming"), "{screen}");
    assert!(screen.contains("write(): two in"), "{screen}");

    // Nothing changed: nothing is drawn.
    let draws = rig.draws;
    rig.send(vec![]);
    assert_eq!(rig.draws, draws);

    // The message ends: the partial stays until the transcript with the final one arrives.
    let mut ended = fleet().0.remove(0);
    ended.progress = Some("Checking the callers of\nwrite(): two in events.rs.".to_owned());
    rig.send(vec![Msg::Registry {
        child: Box::new(ended),
        at: NOW + 3,
    }]);
    assert!(rig.screen().contains("assistant · streaming"));
    let mut messages = transcript();
    messages.push(json!({"role": "assistant", "content": [
        {"type": "text", "text": "Checking the callers of\nwrite(): two in events.rs."}
    ], "stopReason": "stop"}));
    rig.answer_transcript(messages);
    let screen = rig.screen();
    assert!(!screen.contains("streaming"), "{screen}");
    assert!(screen.contains("write(): two in events.rs."), "{screen}");
}

#[test]
fn streamed_text_is_cleaned_and_fits_every_width() {
    let hostile = "safe \u{1b}]52;c;ZXZpbA==\u{7}text \u{1b}[2Jmore\u{202e}";
    for w in [1, 4, 40, 80, 200] {
        let mut rig = Rig::new(w, 12);
        rig.send(vec![streaming(hostile, 1)]);
        if rig
            .effects
            .iter()
            .any(|e| matches!(e, UiEffect::FetchTranscript { .. }))
        {
            rig.answer_transcript(transcript());
        }
        let screen = rig.screen();
        assert!(
            !screen.contains('\u{1b}') && !screen.contains('\u{202e}'),
            "{screen:?}"
        );
        for line in screen.lines() {
            assert!(
                unicode_width::UnicodeWidthStr::width(line) <= usize::from(w),
                "{w}: {line:?}"
            );
        }
    }
}

// ----- terminal injection -------------------------------------------------------------------

const CORPUS: &[&str] = &[
    "\u{1b}[2J\u{1b}[31mCSI\u{1b}[0m",
    "\u{1b}]52;c;ZXZpbA==\u{7}",
    "\u{1b}]8;;https://evil.example\u{1b}\\link\u{1b}]8;;\u{1b}\\",
    "\u{1b}Pq#0;2;0;0;0\u{1b}\\",
    "\u{9b}6n\u{9d}0;title\u{9c}\u{85}",
    "\u{202e}txt.exe\u{2066}",
    "\u{1b}c",
    "\u{7}\u{8}\u{7f}",
];

fn hostile() -> String {
    format!("payload {}", CORPUS.concat())
}

#[test]
fn injection_corpus_never_reaches_the_buffer() {
    let (mut snapshots, agents) = fleet();
    snapshots[0].assignment = hostile();
    snapshots[0].activity = Some(hostile());
    snapshots[0].result = Some(hostile());
    snapshots[0].error = Some(hostile());
    let messages = vec![
        json!({"role": "user", "content": hostile()}),
        json!({"role": "assistant", "content": [
            {"type": "text", "text": hostile()},
            {"type": "toolCall", "id": hostile(), "name": hostile(), "arguments": {hostile(): hostile(), "n": [hostile()]}}
        ]}),
        json!({"role": "toolResult", "toolCallId": "x", "toolName": hostile(), "isError": true,
               "content": [{"type": "text", "text": hostile()}]}),
    ];
    for (w, h) in [(200u16, 60u16), (80, 24), (40, 10)] {
        let mut rig = Rig::with(w, h, snapshots.clone(), agents.clone());
        rig.answer_transcript(messages.clone());
        for pane in 0..3 {
            let buf = rig.term.backend().buffer().clone();
            for cell in buf.content() {
                for c in cell.symbol().chars() {
                    assert!(
                        !c.is_control()
                            && !matches!(c, '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}' | '\u{200e}' | '\u{200f}' | '\u{61c}'),
                        "pane {pane} at {w}x{h}: control {c:?} in the buffer"
                    );
                }
            }
            let text = buffer_text(&buf);
            for leaked in ["52;c", "evil.example", "#0;2", "6n", "0;title"] {
                assert!(
                    !text.contains(leaked),
                    "{leaked} leaked in pane {pane}:\n{text}"
                );
            }
            rig.key(KeyCode::Tab);
        }
        // The steer prompt and a refusal notice carry the same cleaning.
        rig.key(KeyCode::Char('s')).text("x");
        let text = rig.screen();
        assert!(!text.lines().any(|l| l.chars().any(char::is_control)));
    }
}

// ----- the command ---------------------------------------------------------------------------

#[test]
fn slate_hub_without_a_terminal_is_a_usage_error() {
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_slate"))
        .arg("hub")
        .stdin(std::process::Stdio::null())
        .output()
        .expect("run slate hub");
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("needs a terminal"));
}

/// Issue 14, item 4: "a dead coordinator looks alive". When the coordinator's connection
/// closes without its shutdown notice, the header says it died and since when, and the rows
/// are its last known states: the clock stops, so nothing counts on, however many ticks come.
#[test]
fn a_dead_coordinator_looks_dead_in_the_hub_4() {
    use slate::store::event_log::CoordinatorEnd;
    let mut rig = Rig::new(120, 30);
    let died = NOW + 2_000;
    rig.send(vec![Msg::CoordinatorStopped(CoordinatorEnd::Died {
        last_sign_of_life: died,
    })]);
    let frozen = rig.screen();
    let header = frozen.lines().next().unwrap_or_default().to_owned();
    assert!(
        header.contains("coordinator died") && header.contains("last known states"),
        "{header}"
    );
    assert!(header.contains("22:13:22 UTC"), "{header}");
    assert!(!rig.hub.wants_tick(), "no clock for a dead coordinator");
    rig.send(vec![Msg::Tick(NOW + 60_000), Msg::Tick(NOW + 120_000)]);
    assert_eq!(rig.screen(), frozen, "the elapsed times do not move");

    // A coordinator that shut down says that instead.
    let mut rig = Rig::new(120, 30);
    rig.send(vec![Msg::CoordinatorStopped(CoordinatorEnd::ShutDown {
        at: died,
    })]);
    let header = rig.screen().lines().next().unwrap_or_default().to_owned();
    assert!(header.contains("coordinator shut down"), "{header}");
    assert!(!header.contains("died"), "{header}");
}

/// Issue 21: the wide roster shows every row's 8-character handle (`@N` after a first
/// generation) at the widths the wide layout starts at, and the headline still shows.
#[test]
fn the_wide_roster_shows_handles_and_headlines_21() {
    for w in [100, 120, 160, 200] {
        let screen = Rig::new(w, 45).screen();
        for (handle, headline) in [
            (r(1, 1).handle(), "Map the storage"),
            (r(3, 2).handle(), "Continue the CLI"),
        ] {
            let row = screen
                .lines()
                .filter_map(|l| l.split('│').next())
                .find(|l| l.contains(&handle) && l.contains(&headline[..8]))
                .unwrap_or_else(|| panic!("{w}: no row with {handle} and {headline}:\n{screen}"));
            if w >= 160 {
                assert!(row.contains(headline), "{w}: {row:?}");
            }
        }
    }
}

/// Issue 23: a 100,000-line transcript is drawn from the rows on screen only, yet it shows
/// its newest line LIVE, counts every row (a line wider than the pane makes several) and
/// shows its first line at the top.
#[test]
fn a_long_transcript_shows_its_end_its_row_count_and_its_start_23() {
    let mut lines: Vec<String> = (0..100_000)
        .map(|i| format!("line {i} of the long one"))
        .collect();
    lines[5] = "wide ".repeat(40);
    let mut rig = Rig::new(160, 45);
    rig.answer_transcript(vec![json!({"role": "assistant", "content": [
        {"type": "text", "text": lines.join("\n")}
    ]})]);
    let screen = rig.screen();
    assert!(screen.contains("line 99999 of the long one"), "{screen}");
    // The heading, 99,999 lines of one row and one of 200 columns (three rows at 80); the
    // first of the 41 rows shown is row 99,963.
    assert!(screen.contains("LIVE · row 99963/100003"), "{screen}");
    rig.key(KeyCode::Home);
    let screen = rig.screen();
    assert!(
        screen.contains("▌ assistant") && screen.contains("line 0 of the long one"),
        "{screen}"
    );
    assert!(!screen.contains("line 99999"), "{screen}");
    let wide_rows = screen.lines().filter(|l| l.contains("wide wide")).count();
    assert_eq!(wide_rows, 3, "{screen}");
}

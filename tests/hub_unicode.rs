//! Issue 14, item 9: text a terminal may draw at another width than the buffer assumed
//! (zero-width, combining, bidi, wide, control characters) never leaves residue.
//!
//! The Hub draws through ratatui's diff: only changed cells are written, and the cursor is
//! moved only when the next changed cell is not the one after the last written. A terminal
//! that draws a symbol wider or narrower than the buffer counted shifts the rest of that run,
//! and the shifted cells stay on screen until something rewrites them. [`ModelTerminal`] is
//! such a terminal: it receives exactly what the crossterm backend would send and draws every
//! default-ignorable character (zero-width space and joiners, byte order mark, variation
//! selectors, …) as a one-column placeholder, as some terminals do.

#![allow(clippy::unwrap_used, reason = "test fixtures fail loudly")]

use std::io;

use proptest::prelude::*;
use ratatui::Terminal;
use ratatui::backend::{Backend, ClearType, WindowSize};
use ratatui::buffer::{Buffer, Cell};
use ratatui::crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use ratatui::layout::{Position, Size};
use serde_json::{Value, json};
use unicode_width::{UnicodeWidthChar, UnicodeWidthStr};
use uuid::Uuid;

use slate::core::task::{Limits, Role};
use slate::core::{ChildSnapshot, Status, Telemetry, Window};
use slate::text::is_unreliable_width;
use slate::ui::hub::{Hub, HubOptions, HubView, Key, Msg, step};

const NOW: u64 = 1_700_000_000_000;

/// A terminal screen fed the way the crossterm backend feeds a real one.
struct ModelTerminal {
    width: u16,
    height: u16,
    /// What each cell shows; `None` is the right half of a wide character.
    grid: Vec<Vec<Option<String>>>,
}

/// How wide the model terminal draws `symbol`.
fn drawn_width(symbol: &str) -> usize {
    symbol
        .chars()
        .map(|c| {
            if is_unreliable_width(c) {
                1
            } else {
                c.width().unwrap_or(0)
            }
        })
        .sum()
}

impl ModelTerminal {
    fn new(width: u16, height: u16) -> Self {
        let mut t = Self {
            width,
            height,
            grid: Vec::new(),
        };
        t.blank();
        t
    }

    fn blank(&mut self) {
        self.grid =
            vec![vec![Some(" ".to_owned()); usize::from(self.width)]; usize::from(self.height)];
    }

    fn put(&mut self, x: usize, y: usize, symbol: &str) -> usize {
        let w = drawn_width(symbol);
        let row = &mut self.grid[y];
        if w == 0 {
            // Combines with whatever is left of the cursor.
            if let Some(Some(prev)) = x.checked_sub(1).and_then(|p| row.get_mut(p)) {
                prev.push_str(symbol);
            }
            return 0;
        }
        if x >= row.len() {
            return w;
        }
        // Overwriting either half of a wide character erases the other half.
        if row[x].is_none() && x > 0 {
            row[x - 1] = Some(" ".to_owned());
        }
        for i in x..(x + w).min(row.len()) {
            if i + 1 < row.len() && row[i + 1].is_none() && i + 1 >= x + w {
                row[i + 1] = Some(" ".to_owned());
            }
            row[i] = None;
        }
        row[x] = Some(symbol.to_owned());
        w
    }

    /// Each row as text, the right half of a wide character as nothing.
    fn screen(&self) -> Vec<String> {
        self.grid
            .iter()
            .map(|row| row.iter().flatten().map(String::as_str).collect::<String>())
            .collect()
    }
}

impl Backend for ModelTerminal {
    fn draw<'a, I>(&mut self, content: I) -> io::Result<()>
    where
        I: Iterator<Item = (u16, u16, &'a Cell)>,
    {
        let mut last: Option<(u16, u16)> = None;
        let mut cursor = (0usize, 0usize);
        for (x, y, cell) in content {
            if !matches!(last, Some((lx, ly)) if x == lx + 1 && y == ly) {
                cursor = (usize::from(x), usize::from(y));
            }
            last = Some((x, y));
            let w = self.put(cursor.0, cursor.1, cell.symbol());
            cursor.0 += w;
        }
        Ok(())
    }
    fn hide_cursor(&mut self) -> io::Result<()> {
        Ok(())
    }
    fn show_cursor(&mut self) -> io::Result<()> {
        Ok(())
    }
    fn get_cursor_position(&mut self) -> io::Result<Position> {
        Ok(Position::ORIGIN)
    }
    fn set_cursor_position<P: Into<Position>>(&mut self, _: P) -> io::Result<()> {
        Ok(())
    }
    fn clear(&mut self) -> io::Result<()> {
        self.blank();
        Ok(())
    }
    fn clear_region(&mut self, _: ClearType) -> io::Result<()> {
        self.blank();
        Ok(())
    }
    fn size(&self) -> io::Result<Size> {
        Ok(Size::new(self.width, self.height))
    }
    fn window_size(&mut self) -> io::Result<WindowSize> {
        Ok(WindowSize {
            columns_rows: Size::new(self.width, self.height),
            pixels: Size::new(0, 0),
        })
    }
    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

/// What the buffer says is on screen, row by row, in the model's terms.
fn buffer_screen(buf: &Buffer) -> Vec<String> {
    let area = buf.area;
    (0..area.height)
        .map(|y| {
            let mut row = String::new();
            let mut skip = 0;
            for x in 0..area.width {
                let s = buf[(x, y)].symbol();
                if skip > 0 {
                    skip -= 1;
                    continue;
                }
                row.push_str(s);
                skip = s.width().saturating_sub(1);
            }
            row
        })
        .collect()
}

fn snap(n: u128, status: Status, assignment: &str) -> ChildSnapshot {
    ChildSnapshot {
        id: Uuid::from_u128(0x1000_0000_0000_4000_8000_0000_0000_0000 + n),
        generation: 1,
        parent_id: Uuid::from_u128(0xffff_0000_0000_4000_8000_0000_0000_0000),
        parent_generation: None,
        depth: 1,
        status,
        profile: Role::Scout,
        cwd: "/work/project".to_owned(),
        assignment: assignment.to_owned(),
        activity: Some(assignment.to_owned()),
        progress: None,
        result: None,
        model: Some("anthropic/claude-sonnet-4".to_owned()),
        effort: None,
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
        disposed: false,
        created_at: NOW - 90_000,
        ended_at: None,
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

fn messages(text: &str) -> Vec<Value> {
    vec![
        json!({"role": "user", "content": text}),
        json!({"role": "assistant", "content": [
            {"type": "text", "text": text},
            {"type": "toolCall", "id": "c1", "name": "read", "arguments": {"path": text}}
        ]}),
        json!({"role": "toolResult", "toolCallId": "c1", "toolName": "read", "isError": false,
               "content": [{"type": "text", "text": text}]}),
    ]
}

fn press(code: KeyCode) -> Msg {
    Msg::Key(Key::from_event(&KeyEvent::new(code, KeyModifiers::NONE)).unwrap())
}

struct Rig {
    hub: Hub,
    term: Terminal<ModelTerminal>,
}

impl Rig {
    fn new(w: u16, h: u16, snapshots: Vec<ChildSnapshot>) -> Self {
        let mut rig = Self {
            hub: Hub::new(HubOptions::default(), NOW),
            term: Terminal::new(ModelTerminal::new(w, h)).unwrap(),
        };
        rig.send(vec![Msg::Loaded {
            snapshots,
            agents: Vec::new(),
            at: NOW,
        }]);
        rig
    }

    fn send(&mut self, msgs: Vec<Msg>) {
        step(&mut self.hub, msgs, &mut self.term).unwrap();
    }

    fn answer(&mut self, text: &str) {
        let target = self.hub.selected().unwrap();
        self.send(vec![Msg::Transcript {
            target,
            result: Ok(messages(text).into()),
        }]);
    }

    /// The frame of the current state, as the buffer holds it.
    fn frame(&mut self) -> Buffer {
        let size = self.term.size().unwrap();
        let area = ratatui::layout::Rect::new(0, 0, size.width, size.height);
        let mut buf = Buffer::empty(area);
        self.hub.prepare();
        ratatui::widgets::Widget::render(&HubView::new(&self.hub), area, &mut buf);
        buf
    }

    /// The model terminal agrees with the buffer, and with a fresh terminal drawing the
    /// same state from scratch.
    fn assert_no_residue(&mut self, what: &str) {
        let shown = self.term.backend().screen();
        let size = self.term.size().unwrap();
        let buffer = buffer_screen(&self.frame());
        let mut fresh = Terminal::new(ModelTerminal::new(size.width, size.height)).unwrap();
        self.hub.prepare();
        fresh
            .draw(|f| f.render_widget(&HubView::new(&self.hub), f.area()))
            .unwrap();
        let fresh = fresh.backend().screen();
        for (y, ((s, b), f)) in shown.iter().zip(&buffer).zip(&fresh).enumerate() {
            assert_eq!(s, b, "{what}: row {y} is not what the buffer holds");
            assert_eq!(s, f, "{what}: row {y} differs from a fresh render");
            assert!(
                drawn_width(s) <= usize::from(size.width),
                "{what}: row {y} is wider than the terminal: {s:?}"
            );
        }
    }
}

#[test]
fn zero_width_characters_leave_no_residue_after_selecting_a_clean_task_9() {
    let dirty = "Map\u{200b} the\u{200d} config\u{feff} loader\u{200d}\u{200d} and \u{1f468}\u{200d}\u{1f469}\u{200d}\u{1f467} \u{2764}\u{fe0f} it";
    for (w, h) in [(160, 45), (80, 24), (200, 50)] {
        let mut rig = Rig::new(
            w,
            h,
            vec![
                snap(1, Status::Running, dirty),
                snap(2, Status::Running, "Audit the lockfile"),
            ],
        );
        rig.answer(dirty);
        rig.assert_no_residue("the zero-width task selected");
        for c in rig.frame().content() {
            assert!(
                !c.symbol().chars().any(is_unreliable_width),
                "{:?} reached the buffer",
                c.symbol()
            );
        }
        rig.send(vec![press(KeyCode::Down)]);
        rig.answer("clean text");
        rig.assert_no_residue("a clean task selected");
        rig.send(vec![press(KeyCode::Tab)]);
        rig.assert_no_residue("details of the clean task");
    }
}

/// Control, zero-width, combining, bidi and wide characters, and plain text around them.
const CORPUS: &[&str] = &[
    "a",
    "b",
    "word",
    " ",
    "  ",
    "\n",
    "\t",
    "\r",
    "\u{1b}[31m",
    "\u{1b}]0;t\u{7}",
    "\u{7}",
    "\u{8}",
    "\u{7f}",
    "\u{9b}",
    "\u{85}",
    "\u{0}",
    "\u{200b}",
    "\u{200c}",
    "\u{200d}",
    "\u{2060}",
    "\u{feff}",
    "\u{ad}",
    "\u{fe0f}",
    "\u{fe0e}",
    "\u{e0041}",
    "\u{180e}",
    "\u{301}",
    "\u{308}",
    "\u{20e3}",
    "\u{34f}",
    "e\u{301}",
    "\u{202e}",
    "\u{202a}",
    "\u{2066}",
    "\u{2069}",
    "\u{200e}",
    "\u{200f}",
    "\u{61c}",
    "日",
    "本語",
    "ｗｉｄｅ",
    "\u{1f600}",
    "\u{1f468}\u{200d}\u{1f469}",
    "\u{1f44d}\u{1f3fd}",
    "\u{2764}\u{fe0f}",
    "\u{1f1fa}\u{1f1f8}",
    "한국어",
    "\u{2028}",
    "…",
];

fn corpus_text() -> impl Strategy<Value = String> {
    proptest::collection::vec(proptest::sample::select(CORPUS), 0..40).prop_map(|v| v.concat())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    #[test]
    fn any_text_renders_within_its_area_and_leaves_no_residue_when_it_changes(
        first in corpus_text(),
        second in corpus_text(),
        w in 40u16..200,
        h in 8u16..40,
        pane in 0usize..3,
    ) {
        let mut rig = Rig::new(w, h, vec![
            snap(1, Status::Running, &first),
            snap(2, Status::Queued, "plain"),
        ]);
        rig.answer(&first);
        for _ in 0..pane {
            rig.send(vec![press(KeyCode::Tab)]);
        }
        rig.assert_no_residue("the first text");
        // The text changes in place: a registry change and a new transcript.
        rig.send(vec![Msg::Registry {
            child: Box::new(snap(1, Status::Running, &second)),
            at: NOW + 1,
        }]);
        rig.answer(&second);
        rig.assert_no_residue("the changed text");
        // And another row's selection.
        rig.send(vec![press(KeyCode::Down)]);
        rig.answer(&second);
        rig.assert_no_residue("another row selected");
    }
}

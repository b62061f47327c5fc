//! Keys: the top layer (prompt, filter, command line) takes them first, then browsing.
//! Each handler changes state and may return effects; nothing here does IO.

use ratatui::crossterm::event::{KeyCode, KeyEvent, KeyEventKind, KeyModifiers};

use super::layout::Kind;
use super::roster::SortKey;
use super::state::{Action, Bulk, Hub, Mode, NoticeKind, Pane, Prompt, Scroll, UiEffect};
use crate::text::width;

/// The Hub's own key vocabulary. The terminal's events become these at the edge
/// ([`Key::from_event`]); a paste never does (it arrives whole, as [`super::Msg::Paste`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Key {
    /// A printable character (shifted or not).
    Char(char),
    /// A letter with Control held.
    Ctrl(char),
    Enter,
    Esc,
    Backspace,
    Tab,
    BackTab,
    Up,
    Down,
    PageUp,
    PageDown,
    Home,
    End,
}

impl Key {
    /// The key a terminal event means to the Hub; `None` for releases and for keys the Hub
    /// has no use for (function keys, Alt chords, …), which are dropped at the edge.
    pub fn from_event(event: &KeyEvent) -> Option<Self> {
        if event.kind == KeyEventKind::Release {
            return None;
        }
        let m = event.modifiers;
        if m.intersects(KeyModifiers::ALT | KeyModifiers::SUPER | KeyModifiers::META) {
            return None;
        }
        Some(match event.code {
            KeyCode::Char(c) if m.contains(KeyModifiers::CONTROL) => Self::Ctrl(c),
            KeyCode::Char(c) if !c.is_control() => Self::Char(c),
            KeyCode::Enter => Self::Enter,
            KeyCode::Esc => Self::Esc,
            KeyCode::Backspace => Self::Backspace,
            KeyCode::Tab if m.contains(KeyModifiers::SHIFT) => Self::BackTab,
            KeyCode::Tab => Self::Tab,
            KeyCode::BackTab => Self::BackTab,
            KeyCode::Up => Self::Up,
            KeyCode::Down => Self::Down,
            KeyCode::PageUp => Self::PageUp,
            KeyCode::PageDown => Self::PageDown,
            KeyCode::Home => Self::Home,
            KeyCode::End => Self::End,
            _ => return None,
        })
    }
}

impl Key {
    /// The key a host's key identifier means to the Hub: pi's vocabulary (`"up"`,
    /// `"pageDown"`, `"shift+tab"`, `"ctrl+c"`, `"escape"`, `"space"`, or one printable
    /// character such as `"x"` or `"/"`). `None` for identifiers the Hub has no use for
    /// (function keys, Alt chords, …), which are dropped like [`Key::from_event`] drops them.
    pub fn from_id(id: &str) -> Option<Self> {
        let mut chars = id.chars();
        if let (Some(c), None) = (chars.next(), chars.next()) {
            return (!c.is_control()).then_some(Self::Char(c));
        }
        if let Some(letter) = id.strip_prefix("ctrl+") {
            let mut chars = letter.chars();
            return match (chars.next(), chars.next()) {
                (Some(c), None) if c.is_ascii_alphabetic() => {
                    Some(Self::Ctrl(c.to_ascii_lowercase()))
                }
                _ => None,
            };
        }
        if let Some(rest) = id.strip_prefix("shift+") {
            // A shifted printable arrives as its character; only Tab changes meaning.
            return match rest {
                "tab" => Some(Self::BackTab),
                "space" => Some(Self::Char(' ')),
                "enter" | "return" => Some(Self::Enter),
                _ => None,
            };
        }
        Some(match id {
            "space" => Self::Char(' '),
            "enter" | "return" => Self::Enter,
            "escape" | "esc" => Self::Esc,
            "backspace" => Self::Backspace,
            "tab" => Self::Tab,
            "up" => Self::Up,
            "down" => Self::Down,
            "pageUp" => Self::PageUp,
            "pageDown" => Self::PageDown,
            "home" => Self::Home,
            "end" => Self::End,
            _ => return None,
        })
    }
}

/// Pasted text for a one-line input (filter, command): controls go, line breaks become spaces.
fn one_line(text: &str) -> String {
    text.chars()
        .map(|c| {
            if matches!(c, '\n' | '\r' | '\t') {
                ' '
            } else {
                c
            }
        })
        .filter(|c| !c.is_control())
        .collect()
}

/// Pasted text for a message prompt: line breaks (`\r\n`, `\r`) stay as `\n`, tabs stay,
/// other controls go.
fn multi_line(text: &str) -> String {
    text.replace("\r\n", "\n")
        .replace('\r', "\n")
        .chars()
        .filter(|c| matches!(c, '\n' | '\t') || !c.is_control())
        .collect()
}

impl Hub {
    // ----- paste -----------------------------------------------------------------------

    /// A bracketed paste: text for the open input, never keys. Outside an input nothing
    /// happens except a notice saying so.
    pub(super) fn paste(&mut self, text: &str) {
        let mode = std::mem::take(&mut self.mode);
        self.mode = match mode {
            Mode::Prompt(mut prompt) => {
                // A stop or bulk confirmation takes no text: a pasted `y` confirms nothing.
                if self.fits(&prompt)
                    && let Prompt::Steer { input, .. } | Prompt::Message { input, .. } = &mut prompt
                {
                    input.push_str(&multi_line(text));
                }
                Mode::Prompt(prompt)
            }
            Mode::Filter { previous } => {
                self.filter.text.push_str(&one_line(text));
                self.roster.mark_stale();
                Mode::Filter { previous }
            }
            Mode::Command { mut input } => {
                input.push_str(&one_line(text));
                Mode::Command { input }
            }
            Mode::Browse if self.areas().kind != Kind::Tiny => {
                self.set_notice(
                    NoticeKind::Info,
                    "paste ignored: a paste is text, never keys (open a prompt with s, m, / or : first)",
                );
                Mode::Browse
            }
            other @ Mode::Browse => other,
        };
        self.prepare();
    }

    // ----- keys ------------------------------------------------------------------------

    pub(super) fn key(&mut self, key: Key, effects: &mut Vec<UiEffect>) {
        let mode = std::mem::take(&mut self.mode);
        match mode {
            Mode::Browse => self.browse_key(key, effects),
            Mode::Filter { previous } => self.filter_key(key, previous),
            Mode::Command { input } => self.command_key(key, input, effects),
            Mode::Prompt(prompt) => self.prompt_key(key, prompt, effects),
        }
    }

    pub(super) fn browse_key(&mut self, key: Key, effects: &mut Vec<UiEffect>) {
        if self.areas().kind == Kind::Tiny {
            // The placeholder offers nothing but closing (and resizing).
            if matches!(key, Key::Esc | Key::Char('q')) {
                self.quit = true;
            }
            return;
        }
        if !matches!(key, Key::Char('f' | 'r')) {
            self.notice = None;
        }
        match key {
            Key::Esc | Key::Char('q') | Key::Ctrl('c') => self.quit = true,
            Key::Tab => self.cycle_pane(1),
            Key::BackTab => self.cycle_pane(2),
            Key::Up => self.move_selection(-1),
            Key::Down => self.move_selection(1),
            Key::Ctrl('u') | Key::PageUp => self.scroll_by(-self.page()),
            Key::Ctrl('d') | Key::PageDown => self.scroll_by(self.page()),
            Key::Char('k') => self.scroll_by(-1),
            Key::Char('j') => self.scroll_by(1),
            Key::Home => self.scroll_home(),
            Key::End => self.scroll_end(),
            Key::Char('/') => {
                self.mode = Mode::Filter {
                    previous: self.filter.text.clone(),
                };
            }
            Key::Char(':') => {
                self.mode = Mode::Command {
                    input: String::new(),
                };
            }
            Key::Char(' ') => {
                if let Some(r) = self.selected
                    && !self.marks.remove(&r)
                {
                    self.marks.insert(r);
                }
            }
            Key::Char('s') => self.open_steer(),
            Key::Char('m') => {
                if let Some(target) = self.selected {
                    self.mode = Mode::Prompt(Prompt::Message {
                        target,
                        input: String::new(),
                    });
                }
            }
            Key::Char('w') => {
                if let Some(target) = self.selected {
                    effects.push(self.dispatch(Action::Wait { target }));
                }
            }
            Key::Char('x') => self.open_stop(),
            Key::Char('p') => {
                if let Some(target) = self.selected {
                    match self.park_refusal(target) {
                        None => effects.push(self.dispatch(Action::Park { target })),
                        Some(why) => {
                            self.set_notice(NoticeKind::Refusal, &format!("refused: {why}"));
                        }
                    }
                }
            }
            Key::Char(c @ ('f' | 'r')) => {
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

    pub(super) fn open_steer(&mut self) {
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

    pub(super) fn open_stop(&mut self) {
        let Some(target) = self.selected else { return };
        match self.stop_refusal(target) {
            None => self.mode = Mode::Prompt(Prompt::Stop { target }),
            Some(why) => self.set_notice(NoticeKind::Refusal, &format!("refused: {why}")),
        }
    }

    pub(super) fn cycle_pane(&mut self, step: usize) {
        let next = (self.pane.index() + step) % 3;
        self.pane = Pane::ALL[next];
        if self.pane != Pane::Thread {
            // Details and tools open at the top without following.
            self.scroll[next] = Scroll::default();
        }
    }

    pub(super) fn move_selection(&mut self, delta: isize) {
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

    pub(super) fn page(&self) -> isize {
        isize::try_from(self.areas().pane.height.max(1)).unwrap_or(1)
    }

    /// The largest offset that still fills the pane.
    pub(super) fn max_offset(&self, pane: Pane) -> usize {
        self.pane_len(pane)
            .saturating_sub(usize::from(self.areas().pane.height))
    }

    /// The first row drawn in `pane`.
    pub(super) fn offset(&self, pane: Pane) -> usize {
        let s = self.scroll[pane.index()];
        let max = self.max_offset(pane);
        if s.follow { max } else { s.offset.min(max) }
    }

    pub(super) fn scroll_by(&mut self, delta: isize) {
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

    pub(super) fn scroll_home(&mut self) {
        self.scroll[self.pane.index()] = Scroll::default();
    }

    pub(super) fn scroll_end(&mut self) {
        let pane = self.pane;
        let max = self.max_offset(pane);
        self.scroll[pane.index()] = Scroll {
            offset: max,
            follow: pane == Pane::Thread,
        };
    }

    pub(super) fn filter_key(&mut self, key: Key, previous: String) {
        match key {
            Key::Enter => {}
            Key::Esc => {
                self.filter.text = previous;
                self.roster.mark_stale();
            }
            Key::Backspace => {
                self.filter.text.pop();
                self.roster.mark_stale();
                self.mode = Mode::Filter { previous };
            }
            Key::Char(c) if !c.is_control() => {
                self.filter.text.push(c);
                self.roster.mark_stale();
                self.mode = Mode::Filter { previous };
            }
            _ => self.mode = Mode::Filter { previous },
        }
        self.prepare();
    }

    pub(super) fn command_key(&mut self, key: Key, mut input: String, effects: &mut Vec<UiEffect>) {
        match key {
            Key::Esc => {}
            Key::Enter => self.run_command(input.trim(), effects),
            Key::Backspace => {
                if input.pop().is_some() {
                    self.mode = Mode::Command { input };
                }
            }
            Key::Char(c) if !c.is_control() => {
                input.push(c);
                self.mode = Mode::Command { input };
            }
            _ => self.mode = Mode::Command { input },
        }
    }

    pub(super) fn run_command(&mut self, line: &str, effects: &mut Vec<UiEffect>) {
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

    pub(super) fn fits(&self, prompt: &Prompt) -> bool {
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

    pub(super) fn prompt_key(&mut self, key: Key, prompt: Prompt, effects: &mut Vec<UiEffect>) {
        if key == Key::Esc {
            return;
        }
        if !self.fits(&prompt) {
            // Not actionable while the identity cannot be shown.
            self.mode = Mode::Prompt(prompt);
            return;
        }
        match prompt {
            Prompt::Steer { target, mut input } => match key {
                Key::Enter if !input.trim().is_empty() => match self.steer_refusal(target) {
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
            Prompt::Message { target, mut input } => match key {
                Key::Enter if !input.trim().is_empty() => {
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
            Prompt::Stop { target } => match key {
                Key::Char('y' | 'Y') => match self.stop_refusal(target) {
                    // Checked now, against the latest snapshot: the target may have changed
                    // state while the prompt was open.
                    None => effects.push(self.dispatch(Action::Stop { target })),
                    Some(why) => {
                        self.set_notice(NoticeKind::Refusal, &format!("refused: {why}"));
                    }
                },
                Key::Char('n' | 'N') => {}
                _ => self.mode = Mode::Prompt(Prompt::Stop { target }),
            },
            Prompt::Bulk {
                action,
                targets,
                offset,
            } => match key {
                Key::Char('y' | 'Y') => self.confirm_bulk(&action, &targets, effects),
                Key::Char('n' | 'N') => {}
                Key::Char('j') | Key::Down => {
                    self.mode = Mode::Prompt(Prompt::Bulk {
                        offset: (offset + 1).min(targets.len().saturating_sub(1)),
                        action,
                        targets,
                    });
                }
                Key::Char('k') | Key::Up => {
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
}

/// Single-line editing at the end of the input.
fn edit(input: &mut String, code: Key) {
    match code {
        Key::Backspace => {
            input.pop();
        }
        Key::Char(c) if !c.is_control() => input.push(c),
        _ => {}
    }
}

//! Keys: the top layer (prompt, filter, command line) takes them first, then browsing.
//! Each handler changes state and may return effects; nothing here does IO.

use ratatui::crossterm::event::{KeyCode, KeyEvent, KeyModifiers};

use super::layout::Kind;
use super::roster::SortKey;
use super::state::{Action, Bulk, Hub, Mode, NoticeKind, Pane, Prompt, Scroll, UiEffect};
use crate::text::width;

impl Hub {
    // ----- keys ------------------------------------------------------------------------

    pub(super) fn key(&mut self, key: KeyEvent, effects: &mut Vec<UiEffect>) {
        let mode = std::mem::take(&mut self.mode);
        match mode {
            Mode::Browse => self.browse_key(key, effects),
            Mode::Filter { previous } => self.filter_key(key, previous),
            Mode::Command { input } => self.command_key(key, input, effects),
            Mode::Prompt(prompt) => self.prompt_key(key, prompt, effects),
        }
    }

    pub(super) fn browse_key(&mut self, key: KeyEvent, effects: &mut Vec<UiEffect>) {
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

    pub(super) fn filter_key(&mut self, key: KeyEvent, previous: String) {
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

    pub(super) fn command_key(
        &mut self,
        key: KeyEvent,
        mut input: String,
        effects: &mut Vec<UiEffect>,
    ) {
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

    pub(super) fn prompt_key(
        &mut self,
        key: KeyEvent,
        prompt: Prompt,
        effects: &mut Vec<UiEffect>,
    ) {
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

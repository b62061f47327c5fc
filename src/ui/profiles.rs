//! The profiles overlay (`slate profiles` in a terminal): a read-only list of the resolved
//! roles and the details of the selected one, or every problem of an invalid configuration.
//!
//! Keys: ↑↓ select; j/k line, PgUp/PgDn page, Home/End scroll the details; Esc, q or Ctrl+C
//! close. Wide layouts put the list left of the details, narrow layouts stack the list over
//! the details, tiny layouts ask for a resize. The overlay shows ceilings and instructions,
//! not guaranteed session rights.

mod details;

use std::io;
use std::time::Duration;

use ratatui::Terminal;
use ratatui::backend::Backend;
use ratatui::buffer::Buffer;
use ratatui::crossterm::event::{self, Event, KeyCode, KeyEvent, KeyEventKind, KeyModifiers};
use ratatui::layout::Rect;
use ratatui::style::Style;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Borders, Clear, Widget};

use crate::config::ProfilesView;
use crate::policy::Problem;
use crate::text::SafeText;
use crate::ui::fleet::{fit_spans, wrap};
use crate::ui::terminal::{Mode, TerminalGuard};
use crate::ui::theme;

/// Narrower or lower than this, the overlay only asks for a resize.
pub const MIN_WIDTH: u16 = 24;
pub const MIN_HEIGHT: u16 = 8;
/// At least this wide, the list sits left of the details.
pub const WIDE_WIDTH: u16 = 72;
const LIST_WIDTH: u16 = 18;

/// What the overlay shows: the resolved policy, or why it could not be resolved.
#[derive(Clone, Debug)]
pub enum Content {
    Profiles(Box<ProfilesView>),
    Invalid(Vec<Problem>),
}

/// What a key asks the caller to do.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Action {
    /// Nothing changed.
    None,
    /// State changed: draw again.
    Redraw,
    Close,
}

/// The overlay's state: selection and details scroll. Scrolling is clamped when drawn,
/// because only the renderer knows the details' height.
#[derive(Clone, Debug)]
pub struct ProfilesOverlay {
    content: Content,
    selected: usize,
    scroll: usize,
    /// The details height of the last layout (for paging), at least 1.
    page: usize,
    /// The number of details lines of the last layout (for End and clamping).
    total: usize,
}

/// How the area is split.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Shape {
    Wide,
    Stacked,
    Tiny,
}

pub fn shape(area: Rect) -> Shape {
    if area.width < MIN_WIDTH || area.height < MIN_HEIGHT {
        Shape::Tiny
    } else if area.width >= WIDE_WIDTH {
        Shape::Wide
    } else {
        Shape::Stacked
    }
}

impl ProfilesOverlay {
    pub fn new(content: Content) -> Self {
        Self {
            content,
            selected: 0,
            scroll: 0,
            page: 10,
            total: usize::MAX,
        }
    }

    pub fn content(&self) -> &Content {
        &self.content
    }

    pub fn selected(&self) -> usize {
        self.selected
    }

    pub fn scroll(&self) -> usize {
        self.scroll
    }

    fn entries(&self) -> usize {
        match &self.content {
            Content::Profiles(view) => view.profiles.len(),
            Content::Invalid(_) => 0,
        }
    }

    fn max_scroll(&self) -> usize {
        self.total.saturating_sub(self.page)
    }

    /// One key. Release events (some terminals report them) are ignored.
    pub fn handle_key(&mut self, key: KeyEvent) -> Action {
        if key.kind == KeyEventKind::Release {
            return Action::None;
        }
        let before = (self.selected, self.scroll);
        match key.code {
            KeyCode::Esc | KeyCode::Char('q') => return Action::Close,
            KeyCode::Char('c') if key.modifiers.contains(KeyModifiers::CONTROL) => {
                return Action::Close;
            }
            KeyCode::Up => {
                if self.entries() == 0 {
                    self.scroll = self.scroll.saturating_sub(1);
                } else if self.selected > 0 {
                    self.selected -= 1;
                    self.scroll = 0;
                }
            }
            KeyCode::Down => {
                if self.entries() == 0 {
                    self.scroll = (self.scroll + 1).min(self.max_scroll());
                } else if self.selected + 1 < self.entries() {
                    self.selected += 1;
                    self.scroll = 0;
                }
            }
            KeyCode::Char('k') => self.scroll = self.scroll.saturating_sub(1),
            KeyCode::Char('j') => self.scroll = (self.scroll + 1).min(self.max_scroll()),
            KeyCode::PageUp => self.scroll = self.scroll.saturating_sub(self.page),
            KeyCode::PageDown => self.scroll = (self.scroll + self.page).min(self.max_scroll()),
            KeyCode::Home => self.scroll = 0,
            KeyCode::End => self.scroll = self.max_scroll(),
            _ => {}
        }
        if (self.selected, self.scroll) == before {
            Action::None
        } else {
            Action::Redraw
        }
    }

    /// Lays out for `area`: remembers the details height and length so paging and End are
    /// exact, and clamps the scroll. Call before rendering (the run loop does).
    pub fn prepare(&mut self, area: Rect) {
        let Some(details) = self.details_area(area) else {
            return;
        };
        let lines = self.details_lines(details.width);
        self.page = usize::from(details.height).max(1);
        self.total = lines.len();
        self.scroll = self.scroll.min(self.max_scroll());
    }

    /// The inner area the details (or problems) text is drawn in.
    fn details_area(&self, area: Rect) -> Option<Rect> {
        match (shape(area), &self.content) {
            (Shape::Tiny, _) => None,
            (_, Content::Invalid(_)) => Some(inner(area)),
            (Shape::Wide, Content::Profiles(_)) => {
                let list = LIST_WIDTH.min(area.width / 3);
                Some(inner(Rect::new(
                    area.x + list,
                    area.y,
                    area.width - list,
                    area.height - 1,
                )))
            }
            (Shape::Stacked, Content::Profiles(_)) => {
                let list = self.stacked_list_height();
                Some(inner(Rect::new(
                    area.x,
                    area.y + list,
                    area.width,
                    area.height - list - 1,
                )))
            }
        }
    }

    fn stacked_list_height(&self) -> u16 {
        u16::try_from(self.entries()).unwrap_or(4).min(4) + 2
    }

    /// Details (or problems) as lines hard-wrapped to `width`.
    fn details_lines(&self, width: u16) -> Vec<Line<'static>> {
        let width = usize::from(width);
        let logical = match &self.content {
            Content::Profiles(view) => view
                .profiles
                .get(self.selected)
                .map(|p| details::profile(p, view))
                .unwrap_or_default(),
            Content::Invalid(problems) => details::problems(problems),
        };
        let mut out = Vec::with_capacity(logical.len());
        for (text, style) in logical {
            for piece in wrap(&text, width) {
                out.push(Line::from(Span::styled(piece, style)));
            }
        }
        out
    }
}

fn inner(area: Rect) -> Rect {
    Block::default().borders(Borders::ALL).inner(area)
}

fn footer(area: Rect, buf: &mut Buffer, text: &str) {
    let line = fit_spans(
        vec![Span::styled(text.to_owned(), theme::dim())],
        usize::from(area.width),
    );
    line.render(area, buf);
}

fn block(title: &str, width: u16) -> Block<'static> {
    let title = crate::text::fit(title, usize::from(width.saturating_sub(2)));
    Block::default()
        .borders(Borders::ALL)
        .border_style(theme::border())
        .title(Span::styled(title, theme::title()))
}

impl Widget for &ProfilesOverlay {
    fn render(self, area: Rect, buf: &mut Buffer) {
        Clear.render(area, buf);
        let shape = shape(area);
        if shape == Shape::Tiny {
            render_tiny(area, buf);
            return;
        }
        let footer_area = Rect::new(area.x, area.y + area.height - 1, area.width, 1);
        let keys = match &self.content {
            Content::Profiles(_) => "↑↓ select · j/k PgUp/PgDn Home/End scroll · Esc/q close",
            Content::Invalid(_) => "↑↓ j/k PgUp/PgDn Home/End scroll · Esc/q close",
        };
        footer(footer_area, buf, keys);
        let Some(details) = self.details_area(area) else {
            return;
        };
        let lines = self.details_lines(details.width);
        let scroll = self
            .scroll
            .min(lines.len().saturating_sub(usize::from(details.height)));
        match &self.content {
            Content::Invalid(problems) => {
                let title = format!(
                    " Invalid delegation configuration: {} ",
                    match problems.len() {
                        1 => "1 problem".to_owned(),
                        n => format!("{n} problems"),
                    }
                );
                let outer = Rect::new(area.x, area.y, area.width, area.height - 1);
                block(&title, outer.width)
                    .border_style(theme::error())
                    .render(outer, buf);
            }
            Content::Profiles(view) => {
                let (list_area, details_outer) = if shape == Shape::Wide {
                    let list = LIST_WIDTH.min(area.width / 3);
                    (
                        Rect::new(area.x, area.y, list, area.height - 1),
                        Rect::new(area.x + list, area.y, area.width - list, area.height - 1),
                    )
                } else {
                    let list = self.stacked_list_height();
                    (
                        Rect::new(area.x, area.y, area.width, list),
                        Rect::new(area.x, area.y + list, area.width, area.height - list - 1),
                    )
                };
                render_list(self, view, list_area, buf);
                let name = view
                    .profiles
                    .get(self.selected)
                    .map_or("", |p| p.name.as_str());
                let position = if lines.len() > usize::from(details.height) {
                    format!(" {}/{} ", scroll + 1, lines.len())
                } else {
                    String::new()
                };
                block(&format!(" {name} {position}"), details_outer.width)
                    .render(details_outer, buf);
            }
        }
        for (i, line) in lines
            .iter()
            .skip(scroll)
            .take(usize::from(details.height))
            .enumerate()
        {
            let Ok(dy) = u16::try_from(i) else { break };
            line.render(Rect::new(details.x, details.y + dy, details.width, 1), buf);
        }
    }
}

fn render_list(overlay: &ProfilesOverlay, view: &ProfilesView, area: Rect, buf: &mut Buffer) {
    let title = format!(" Profiles ({}) ", view.profiles.len());
    let b = block(&title, area.width);
    let list = b.inner(area);
    b.render(area, buf);
    let height = usize::from(list.height);
    // Keep the selection visible.
    let first = overlay.selected.saturating_sub(height.saturating_sub(1));
    for (i, p) in view.profiles.iter().enumerate().skip(first).take(height) {
        let Ok(dy) = u16::try_from(i - first) else {
            break;
        };
        let style = if i == overlay.selected {
            theme::selected()
        } else {
            Style::default()
        };
        let marker = if i == overlay.selected { "▸ " } else { "  " };
        let line = fit_spans(
            vec![Span::styled(format!("{marker}{}", p.name.as_str()), style)],
            usize::from(list.width),
        );
        line.render(Rect::new(list.x, list.y + dy, list.width, 1), buf);
    }
}

fn render_tiny(area: Rect, buf: &mut Buffer) {
    let lines = [
        "Terminal too small for the profiles overlay.",
        "Resize it, or press Esc to close.",
    ];
    let mut y = area.y;
    for text in lines {
        for piece in wrap(text, usize::from(area.width)) {
            if y >= area.y + area.height {
                return;
            }
            Line::from(Span::styled(piece, theme::warning()))
                .render(Rect::new(area.x, y, area.width, 1), buf);
            y += 1;
        }
    }
}

/// Untrusted configuration text, cleaned for one line.
pub(crate) fn safe(raw: &str) -> String {
    SafeText::line(raw).into_string()
}

/// Draws the overlay once.
pub fn draw<B: Backend>(
    terminal: &mut Terminal<B>,
    overlay: &mut ProfilesOverlay,
) -> io::Result<()> {
    terminal.draw(|frame| {
        let area = frame.area();
        overlay.prepare(area);
        frame.render_widget(&*overlay, area);
    })?;
    Ok(())
}

/// The overlay's loop: draw, take every pending input batch from `next`, apply it, draw
/// once if anything changed. Returns when a key closes the overlay or `next` runs dry
/// (`Ok(None)`). Tests feed key sequences through `next`; the terminal run reads crossterm.
pub fn event_loop<B: Backend>(
    terminal: &mut Terminal<B>,
    overlay: &mut ProfilesOverlay,
    mut next: impl FnMut() -> io::Result<Option<Vec<Event>>>,
) -> io::Result<()> {
    draw(terminal, overlay)?;
    while let Some(batch) = next()? {
        let mut dirty = false;
        for event in batch {
            match event {
                Event::Key(key) => match overlay.handle_key(key) {
                    Action::Close => return Ok(()),
                    Action::Redraw => dirty = true,
                    Action::None => {}
                },
                Event::Resize(..) => dirty = true,
                _ => {}
            }
        }
        if dirty {
            draw(terminal, overlay)?;
        }
    }
    Ok(())
}

/// Opens the overlay fullscreen on the real terminal until it is closed; the terminal is
/// restored on return, error and panic.
pub fn run(content: Content) -> io::Result<()> {
    let mut guard = TerminalGuard::enter(Mode::Fullscreen)?;
    let mut overlay = ProfilesOverlay::new(content);
    event_loop(guard.terminal(), &mut overlay, || {
        // Block for one input, then drain whatever else is pending: one draw per batch.
        let mut batch = vec![event::read()?];
        while event::poll(Duration::ZERO)? {
            batch.push(event::read()?);
        }
        Ok(Some(batch))
    })
}

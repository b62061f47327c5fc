//! Where everything goes at a given terminal size. The state machine uses the same numbers
//! (page size, wrap width) as the view, so scrolling and drawing agree.

use ratatui::layout::Rect;

/// Narrower than this (or lower than [`TINY_HEIGHT`]) is the tiny placeholder.
pub const TINY_WIDTH: u16 = 40;
pub const TINY_HEIGHT: u16 = 8;
/// From this width the roster sits beside the pane (narrower, it sits above it).
pub const WIDE_WIDTH: u16 = 100;
/// The roster never takes more than this many columns.
pub const ROSTER_MAX: u16 = 80;
/// The roster takes two fifths of a wide frame, or more when that leaves the pane over this
/// many columns (a thread reads well at a classic terminal's width): at 160 columns the
/// roster has 79, room for the handle, status, role and a headline.
pub const PANE_READING_WIDTH: u16 = 80;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    Tiny,
    Compact,
    Wide,
}

/// The areas of one frame.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Areas {
    pub kind: Kind,
    /// Fleet counts.
    pub header: Rect,
    /// Wide: beside the pane, full height. Compact: above it, one line per roster row up to
    /// a third of the body (at least one line, for "no subagents yet").
    pub roster: Option<Rect>,
    /// Compact only: the selected generation with its full identity, below the roster.
    pub selection: Option<Rect>,
    /// The vertical separator between roster and pane (wide only).
    pub separator: Option<Rect>,
    /// Pane tabs and the LIVE/READING state.
    pub tabs: Rect,
    pub pane: Rect,
    /// The full-width border-coloured rule above the footer.
    pub rule: Rect,
    pub footer: Rect,
}

impl Areas {
    /// The areas at `area` for a roster of `rows` rows.
    pub fn of(area: Rect, rows: usize) -> Self {
        let (w, h) = (area.width, area.height);
        let row = |y: u16, height: u16| Rect::new(area.x, area.y + y, w, height);
        if w < TINY_WIDTH || h < TINY_HEIGHT {
            let empty = Rect::new(area.x, area.y, 0, 0);
            return Self {
                kind: Kind::Tiny,
                header: area,
                roster: None,
                selection: None,
                separator: None,
                tabs: empty,
                pane: empty,
                rule: empty,
                footer: empty,
            };
        }
        let rule = row(h - 2, 1);
        let footer = row(h - 1, 1);
        let header = row(0, 1);
        if w < WIDE_WIDTH {
            // Header, selection, tabs, rule and footer take a row each.
            let body = h - 5;
            let cap = (body / 3).max(1);
            let roster_h = u16::try_from(rows).unwrap_or(u16::MAX).clamp(1, cap);
            return Self {
                kind: Kind::Compact,
                header,
                roster: Some(row(1, roster_h)),
                selection: Some(row(1 + roster_h, 1)),
                separator: None,
                tabs: row(2 + roster_h, 1),
                pane: row(3 + roster_h, body - roster_h),
                rule,
                footer,
            };
        }
        let body = h - 3;
        let roster_w = (w * 2 / 5)
            .max(w.saturating_sub(PANE_READING_WIDTH + 1))
            .min(ROSTER_MAX);
        let pane_x = area.x + roster_w + 1;
        let pane_w = w - roster_w - 1;
        Self {
            kind: Kind::Wide,
            header,
            roster: Some(Rect::new(area.x, area.y + 1, roster_w, body)),
            selection: None,
            separator: Some(Rect::new(area.x + roster_w, area.y + 1, 1, body)),
            tabs: Rect::new(pane_x, area.y + 1, pane_w, 1),
            pane: Rect::new(pane_x, area.y + 2, pane_w, body - 1),
            rule,
            footer,
        }
    }
}

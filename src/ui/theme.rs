//! Colours and styles shared by the views. Status colours carry meaning; everything else
//! stays in the terminal's own palette. No text is drawn in ANSI blue, which most dark
//! themes render nearly invisible; the colours used read on dark and light backgrounds. With `NO_COLOR` set (to anything non-empty, see
//! no-color.org) no colour is used at all: only bold, dim and reverse remain.

use std::sync::OnceLock;

use ratatui::style::{Color, Modifier, Style};

use crate::core::Status;

pub const BORDER: Color = Color::DarkGray;
pub const ACCENT: Color = Color::Cyan;

/// False when `NO_COLOR` is set to a non-empty value.
pub fn colour() -> bool {
    static COLOUR: OnceLock<bool> = OnceLock::new();
    *COLOUR.get_or_init(|| std::env::var_os("NO_COLOR").is_none_or(|v| v.is_empty()))
}

/// `c` as the foreground, or `without` when colour is off.
fn fg_or(c: Color, without: Style) -> Style {
    if colour() {
        Style::default().fg(c)
    } else {
        without
    }
}

pub fn border() -> Style {
    fg_or(BORDER, Style::default())
}

pub fn title() -> Style {
    Style::default().add_modifier(Modifier::BOLD)
}

pub fn dim() -> Style {
    fg_or(
        Color::DarkGray,
        Style::default().add_modifier(Modifier::DIM),
    )
}

pub fn selected() -> Style {
    Style::default().add_modifier(Modifier::REVERSED)
}

pub fn warning() -> Style {
    fg_or(Color::Yellow, Style::default().add_modifier(Modifier::BOLD))
}

/// A tool call or result line. Not ANSI blue, which most dark themes draw nearly
/// invisible; magenta reads on dark and light backgrounds alike.
pub fn tool() -> Style {
    fg_or(Color::Magenta, Style::default())
}

/// A line an `edit` adds.
pub fn added() -> Style {
    fg_or(Color::Green, Style::default())
}

/// A line an `edit` removes.
pub fn removed() -> Style {
    fg_or(Color::Red, Style::default())
}

/// A pane that follows new output.
pub fn live() -> Style {
    fg_or(Color::Green, Style::default().add_modifier(Modifier::BOLD))
}

pub fn error() -> Style {
    fg_or(Color::Red, Style::default().add_modifier(Modifier::BOLD))
}

/// The colour of a lifecycle status.
pub fn status(status: Status) -> Style {
    let fg = match status {
        Status::Queued => Color::DarkGray,
        // Not ANSI blue (unreadable on most dark themes).
        Status::Setup => Color::Cyan,
        Status::Running => Color::Green,
        Status::Pausing | Status::Paused => Color::Yellow,
        Status::Draining => Color::Magenta,
        Status::Settled => return Style::default(),
        Status::Failed => Color::Red,
        Status::Cancelled => Color::LightRed,
    };
    fg_or(fg, Style::default())
}

//! Colours and styles shared by the views. Status colours carry meaning; everything else
//! stays in the terminal's own palette.

use ratatui::style::{Color, Modifier, Style};

use crate::core::Status;

pub const BORDER: Color = Color::DarkGray;
pub const ACCENT: Color = Color::Cyan;

pub fn border() -> Style {
    Style::default().fg(BORDER)
}

pub fn title() -> Style {
    Style::default().add_modifier(Modifier::BOLD)
}

pub fn dim() -> Style {
    Style::default().fg(Color::DarkGray)
}

pub fn selected() -> Style {
    Style::default().add_modifier(Modifier::REVERSED)
}

pub fn warning() -> Style {
    Style::default().fg(Color::Yellow)
}

pub fn error() -> Style {
    Style::default().fg(Color::Red)
}

/// The colour of a lifecycle status.
pub fn status(status: Status) -> Style {
    let fg = match status {
        Status::Queued => Color::DarkGray,
        Status::Setup => Color::Blue,
        Status::Running => Color::Green,
        Status::Pausing | Status::Paused => Color::Yellow,
        Status::Draining => Color::Magenta,
        Status::Settled => Color::Cyan,
        Status::Failed => Color::Red,
        Status::Cancelled => Color::LightRed,
    };
    Style::default().fg(fg)
}

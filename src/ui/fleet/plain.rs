//! The fleet widget as text rows for a host that draws it (`slate watch --lines`, pi's widget
//! above its editor): the same [`FleetView`] rendered into a ratatui buffer, read back cell by
//! cell, plain ([`plain_lines`]) or with the view's colours as SGR ([`styled_lines`]).

use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::widgets::Widget as _;
use unicode_width::UnicodeWidthStr as _;

use super::{Fleet, FleetView};
use crate::core::Millis;
use crate::text::SafeText;

/// The widget's rows at `now` for `width` columns, at most `max_rows` of them (none for an
/// empty registry), trailing blanks trimmed, each cleaned as [`SafeText`].
pub fn plain_lines(fleet: &Fleet, now: Millis, width: u16, max_rows: u16) -> Vec<String> {
    let view = FleetView::new(fleet, now);
    let height = u16::try_from(view.lines(width, max_rows).len()).unwrap_or(max_rows);
    if height == 0 || width == 0 {
        return Vec::new();
    }
    let area = Rect::new(0, 0, width, height);
    let mut buffer = Buffer::empty(area);
    (&view).render(area, &mut buffer);
    buffer_rows(&buffer)
}

/// The widget's rows as [`plain_lines`], with the view's styles as SGR sequences
/// ([`crate::ui::ansi::styled_rows`]): the colours `slate watch` shows in a terminal. Every
/// line is at most `width` columns; its text is the view's, where anything untrusted is
/// [`SafeText`] already.
pub fn styled_lines(fleet: &Fleet, now: Millis, width: u16, max_rows: u16) -> Vec<String> {
    let view = FleetView::new(fleet, now);
    let height = u16::try_from(view.lines(width, max_rows).len()).unwrap_or(max_rows);
    if height == 0 || width == 0 {
        return Vec::new();
    }
    let area = Rect::new(0, 0, width, height);
    let mut buffer = Buffer::empty(area);
    (&view).render(area, &mut buffer);
    crate::ui::ansi::styled_rows(&buffer)
}

/// Each row of `buffer` as text: a wide grapheme once (the cells it covers are skipped, as
/// ratatui's own diff skips them), trailing blanks trimmed.
pub fn buffer_rows(buffer: &Buffer) -> Vec<String> {
    let area = buffer.area;
    (area.top()..area.bottom())
        .map(|y| {
            let mut row = String::with_capacity(usize::from(area.width));
            let mut hidden = 0usize;
            for x in area.left()..area.right() {
                let symbol = buffer[(x, y)].symbol();
                if hidden > 0 {
                    hidden -= 1;
                    continue;
                }
                row.push_str(symbol);
                hidden = symbol.width().saturating_sub(1);
            }
            SafeText::line(row.trim_end()).into_string()
        })
        .collect()
}

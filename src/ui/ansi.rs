//! A rendered ratatui buffer as lines of text with SGR styling, for hosts that draw Slate's
//! views themselves: pi's widget above its editor and the Hub inside a pi overlay. The same
//! view code draws the same cells as in Slate's own terminal; only the last step differs (a
//! terminal gets cursor moves and a diff, a host gets whole lines).
//!
//! Each line is self-contained: it starts unstyled, changes style only where a cell's style
//! changes, and ends with a reset when anything was styled, so a host may place, clip or
//! concatenate lines freely. Only SGR (`ESC [ … m`) is ever written; cell text is the view's,
//! which holds only [`crate::text::SafeText`] for anything untrusted, so no other control
//! reaches the host. A wide grapheme is written once (the cells it covers are skipped, as
//! ratatui's own diff skips them). Trailing blank, unstyled cells are trimmed.

use std::fmt::Write as _;

use ratatui::buffer::{Buffer, Cell};
use ratatui::style::{Color, Modifier};
use unicode_width::UnicodeWidthStr as _;

/// Every row of `buffer`, styled.
pub fn styled_rows(buffer: &Buffer) -> Vec<String> {
    let area = buffer.area;
    (area.top()..area.bottom())
        .map(|y| {
            let cells: Vec<&Cell> = (area.left()..area.right())
                .map(|x| &buffer[(x, y)])
                .collect();
            styled_row(&cells)
        })
        .collect()
}

/// One row of cells as a line.
fn styled_row(cells: &[&Cell]) -> String {
    // Trailing cells that draw nothing visible are left out.
    let end = cells
        .iter()
        .rposition(|c| !is_blank(c))
        .map_or(0, |i| i + 1);
    let mut line = String::new();
    let mut current = Sgr::default();
    let mut hidden = 0usize;
    for cell in &cells[..end] {
        if hidden > 0 {
            hidden -= 1;
            continue;
        }
        let wanted = Sgr::of(cell);
        if wanted != current {
            wanted.write_from(&current, &mut line);
            current = wanted;
        }
        let symbol = cell.symbol();
        line.push_str(if symbol.is_empty() { " " } else { symbol });
        hidden = symbol.width().saturating_sub(1);
    }
    if current != Sgr::default() {
        line.push_str("\x1b[0m");
    }
    line
}

/// A cell that shows nothing: a space with no background and no visible attribute.
fn is_blank(cell: &Cell) -> bool {
    let symbol = cell.symbol();
    (symbol.is_empty() || symbol == " ")
        && matches!(cell.bg, Color::Reset)
        && !cell
            .modifier
            .intersects(Modifier::REVERSED | Modifier::UNDERLINED | Modifier::CROSSED_OUT)
}

/// The SGR state of a cell.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
struct Sgr {
    fg: Option<Color>,
    bg: Option<Color>,
    modifier: Modifier,
}

impl Sgr {
    fn of(cell: &Cell) -> Self {
        let set = |c: Color| (c != Color::Reset).then_some(c);
        Self {
            fg: set(cell.fg),
            bg: set(cell.bg),
            modifier: cell.modifier,
        }
    }

    /// The sequence that turns `from` into `self`: a reset first whenever something must be
    /// switched off (simpler and as short as the individual "off" codes).
    fn write_from(&self, from: &Self, out: &mut String) {
        let mut codes: Vec<String> = Vec::new();
        let removed = !from.modifier.difference(self.modifier).is_empty()
            || (from.fg.is_some() && self.fg.is_none())
            || (from.bg.is_some() && self.bg.is_none());
        let base = if removed {
            codes.push("0".to_owned());
            Self::default()
        } else {
            *from
        };
        for (flag, code) in [
            (Modifier::BOLD, "1"),
            (Modifier::DIM, "2"),
            (Modifier::ITALIC, "3"),
            (Modifier::UNDERLINED, "4"),
            (Modifier::SLOW_BLINK, "5"),
            (Modifier::RAPID_BLINK, "6"),
            (Modifier::REVERSED, "7"),
            (Modifier::HIDDEN, "8"),
            (Modifier::CROSSED_OUT, "9"),
        ] {
            if self.modifier.contains(flag) && !base.modifier.contains(flag) {
                codes.push(code.to_owned());
            }
        }
        if self.fg != base.fg
            && let Some(c) = self.fg
        {
            codes.push(colour_code(c, false));
        }
        if self.bg != base.bg
            && let Some(c) = self.bg
        {
            codes.push(colour_code(c, true));
        }
        if !codes.is_empty() {
            let _ = write!(out, "\x1b[{}m", codes.join(";"));
        }
    }
}

/// The SGR parameters of a colour, as crossterm writes them for ratatui.
fn colour_code(colour: Color, background: bool) -> String {
    let (base, bright) = if background { (40, 100) } else { (30, 90) };
    let named = |n: u8| base + u16::from(n);
    let light = |n: u8| bright + u16::from(n);
    let code = match colour {
        Color::Reset => return if background { "49" } else { "39" }.to_owned(),
        Color::Black => named(0),
        Color::Red => named(1),
        Color::Green => named(2),
        Color::Yellow => named(3),
        Color::Blue => named(4),
        Color::Magenta => named(5),
        Color::Cyan => named(6),
        Color::Gray => named(7),
        Color::DarkGray => light(0),
        Color::LightRed => light(1),
        Color::LightGreen => light(2),
        Color::LightYellow => light(3),
        Color::LightBlue => light(4),
        Color::LightMagenta => light(5),
        Color::LightCyan => light(6),
        Color::White => light(7),
        Color::Indexed(n) => {
            return format!("{};5;{n}", if background { 48 } else { 38 });
        }
        Color::Rgb(r, g, b) => {
            return format!("{};2;{r};{g};{b}", if background { 48 } else { 38 });
        }
    };
    code.to_string()
}

#[cfg(test)]
mod tests {
    use ratatui::buffer::Buffer;
    use ratatui::layout::Rect;
    use ratatui::style::{Color, Style};

    use super::styled_rows;

    #[test]
    fn styles_change_only_where_cells_change_and_each_line_resets_at_its_end() {
        let mut buffer = Buffer::empty(Rect::new(0, 0, 12, 2));
        buffer.set_string(0, 0, "ok", Style::default().fg(Color::Green));
        buffer.set_string(2, 0, " done", Style::default());
        buffer.set_string(
            0,
            1,
            "界x",
            Style::default()
                .fg(Color::Indexed(200))
                .add_modifier(ratatui::style::Modifier::BOLD),
        );
        let rows = styled_rows(&buffer);
        assert_eq!(rows[0], "\x1b[32mok\x1b[0m done");
        assert_eq!(
            rows[1], "\x1b[1;38;5;200m界x\x1b[0m",
            "a wide grapheme once"
        );
    }

    #[test]
    fn plain_text_stays_plain_and_trailing_blanks_are_trimmed() {
        let mut buffer = Buffer::empty(Rect::new(0, 0, 10, 1));
        buffer.set_string(0, 0, "abc", Style::default());
        assert_eq!(styled_rows(&buffer), vec!["abc".to_owned()]);
    }
}

//! Fitting styled spans into a width: grapheme by grapheme, by display width, with `…`
//! marking the cut. Shared by the fleet widget and the profiles overlay.

use ratatui::text::{Line, Span};
use unicode_segmentation::UnicodeSegmentation;

use crate::text::width;

/// The spans cut to at most `max` columns; a cut ends with `…`.
pub fn fit_spans(spans: Vec<Span<'static>>, max: usize) -> Line<'static> {
    let total: usize = spans.iter().map(|s| width(&s.content)).sum();
    if total <= max {
        return Line::from(spans);
    }
    if max == 0 {
        return Line::default();
    }
    let budget = max - 1;
    let mut used = 0;
    let mut out = Vec::with_capacity(spans.len());
    let mut last_style = ratatui::style::Style::default();
    'spans: for span in spans {
        let mut kept = String::new();
        for g in span.content.graphemes(true) {
            let w = width(g);
            if used + w > budget {
                if !kept.is_empty() {
                    out.push(Span::styled(kept, span.style));
                }
                last_style = span.style;
                break 'spans;
            }
            kept.push_str(g);
            used += w;
        }
        last_style = span.style;
        out.push(Span::styled(kept, span.style));
    }
    out.push(Span::styled("…", last_style));
    Line::from(out)
}

/// Display width of a line.
pub fn line_width(line: &Line<'_>) -> usize {
    line.spans.iter().map(|s| width(&s.content)).sum()
}

/// Hard-wraps one line of (already safe) text into pieces of at most `max` columns, at
/// grapheme boundaries. An empty line stays one empty piece.
pub fn wrap(text: &str, max: usize) -> Vec<String> {
    let max = max.max(1);
    let mut out = Vec::new();
    let mut current = String::new();
    let mut used = 0;
    for g in text.graphemes(true) {
        let w = width(g);
        if used + w > max && !current.is_empty() {
            out.push(std::mem::take(&mut current));
            used = 0;
        }
        if w > max {
            // A wide grapheme in a one-column area cannot be shown: mark it.
            out.push("…".to_owned());
            continue;
        }
        current.push_str(g);
        used += w;
    }
    if !current.is_empty() || out.is_empty() {
        out.push(current);
    }
    out
}

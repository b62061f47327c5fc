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

/// Wraps one line of (already safe) text into pieces of at most `max` columns: at the last
/// space when there is one, otherwise at a grapheme boundary. An empty line stays one empty
/// piece; a grapheme wider than the whole area becomes `…`.
pub fn wrap(text: &str, max: usize) -> Vec<String> {
    let max = max.max(1);
    let mut out = Vec::new();
    let mut current = String::new();
    let mut used = 0;
    for g in text.graphemes(true) {
        let w = width(g);
        if w > max {
            if !current.is_empty() {
                out.push(std::mem::take(&mut current));
                used = 0;
            }
            out.push("…".to_owned());
            continue;
        }
        if used + w > max {
            if g == " " {
                // The break falls on a space: it is dropped.
                out.push(std::mem::take(&mut current));
                used = 0;
                continue;
            }
            match current.rfind(' ') {
                Some(at) if at > 0 => {
                    let rest = current[at + 1..].to_owned();
                    current.truncate(at);
                    out.push(std::mem::replace(&mut current, rest));
                    used = width(&current);
                }
                _ => {
                    out.push(std::mem::take(&mut current));
                    used = 0;
                }
            }
        }
        current.push_str(g);
        used += w;
    }
    if !current.is_empty() || out.is_empty() {
        out.push(current);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::{fit_spans, line_width, wrap};
    use crate::text::width;
    use ratatui::text::Span;

    #[test]
    fn wrapping_breaks_at_spaces_and_never_exceeds_the_width() {
        assert_eq!(wrap("the quick brown fox", 10), ["the quick", "brown fox"]);
        assert_eq!(wrap("abcdefghij", 4), ["abcd", "efgh", "ij"]);
        assert_eq!(wrap("", 5), [""]);
        assert_eq!(wrap("日本語", 1), ["…", "…", "…"]);
        for max in [1, 2, 3, 7, 40] {
            for piece in wrap(
                "日本語 mixed text, with   spaces and longwordsthatneverend",
                max,
            ) {
                assert!(width(&piece) <= max, "{piece:?} > {max}");
            }
        }
    }

    #[test]
    fn fitting_spans_marks_the_cut() {
        let line = fit_spans(vec![Span::raw("abc"), Span::raw("def")], 4);
        assert_eq!(line_width(&line), 4);
        assert_eq!(line.to_string(), "abc…");
        assert_eq!(fit_spans(vec![Span::raw("日本")], 3).to_string(), "日…");
        assert_eq!(line_width(&fit_spans(vec![Span::raw("abc")], 0)), 0);
    }
}

//! Small formatting helpers: durations, stats, and wrapping cleaned text to a width.

use unicode_segmentation::UnicodeSegmentation;

use crate::core::{ChildSnapshot, Millis};
use crate::text::width;

/// `850ms`, `4.2s`, `3m07s`, `2h05m`.
pub fn duration(ms: Millis) -> String {
    if ms < 1000 {
        format!("{ms}ms")
    } else if ms < 60_000 {
        format!("{}.{}s", ms / 1000, ms % 1000 / 100)
    } else if ms < 3_600_000 {
        format!("{}m{:02}s", ms / 60_000, ms % 60_000 / 1000)
    } else {
        format!("{}h{:02}m", ms / 3_600_000, ms % 3_600_000 / 60_000)
    }
}

pub use crate::text::compact_count as count;

/// Elapsed: admission to disposal, or to `now` while the generation lasts.
pub fn elapsed(s: &ChildSnapshot, now: Millis) -> Millis {
    s.ended_at.unwrap_or(now).saturating_sub(s.created_at)
}

/// Direct stats the worker reported: requests, tokens, cost. Unknown values are omitted,
/// never shown as zero; requests are never called turns.
pub fn stats(s: &ChildSnapshot) -> String {
    let t = &s.telemetry;
    let mut parts = Vec::new();
    if let Some(r) = t.requests {
        parts.push(format!("{r} req"));
    }
    if let Some(tokens) = t.tokens {
        parts.push(format!("{} tok", count(tokens.total)));
    }
    if let Some(cost) = t.cost {
        parts.push(format!("${cost:.3}"));
    }
    parts.join(" ")
}

/// Splits cleaned text into rows of at most `columns` columns, at grapheme boundaries,
/// preferring the last space. Every `\n` starts a row. `columns == 0` yields no rows.
pub fn wrap(text: &str, columns: usize, out: &mut Vec<String>) {
    if columns == 0 {
        return;
    }
    for line in text.split('\n') {
        if width(line) <= columns {
            out.push(line.to_owned());
            continue;
        }
        let mut row = String::new();
        let mut used = 0;
        let mut last_space: Option<usize> = None;
        for g in line.graphemes(true) {
            // A grapheme wider than the whole row cannot be shown: mark it instead.
            let (g, w) = if width(g) > columns {
                ("…", 1)
            } else {
                (g, width(g))
            };
            if used + w > columns {
                if let Some(byte) = last_space.filter(|&b| b > 0) {
                    let rest = row.split_off(byte);
                    out.push(std::mem::take(&mut row).trim_end().to_owned());
                    rest.trim_start().clone_into(&mut row);
                    used = width(&row);
                } else {
                    out.push(std::mem::take(&mut row));
                    used = 0;
                }
                last_space = None;
            }
            if g == " " {
                last_space = Some(row.len());
            }
            row.push_str(g);
            used += w;
        }
        out.push(row);
    }
}

#[cfg(test)]
mod tests {
    use super::{duration, wrap};
    use crate::text::width;

    #[test]
    fn wrapping_never_exceeds_the_width() {
        for columns in [1, 2, 4, 7, 40] {
            let mut rows = Vec::new();
            wrap(
                "the quick brown fox 日本語テキスト jumps over\nthe lazy dog",
                columns,
                &mut rows,
            );
            assert!(
                rows.iter().all(|r| width(r) <= columns),
                "{columns}: {rows:?}"
            );
        }
    }

    #[test]
    fn durations_read_naturally() {
        assert_eq!(duration(850), "850ms");
        assert_eq!(duration(4_200), "4.2s");
        assert_eq!(duration(187_000), "3m07s");
    }
}

//! Small formatting helpers: durations, stats, and wrapping cleaned text to a width.

use unicode_segmentation::UnicodeSegmentation;

use crate::core::{ChildSnapshot, Millis};
use crate::text::{printable_ascii, width};

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

/// A span for reading at a glance: `850 ms`, `12 s`, `29 m 48 s`, `2 h 05 m`, `3 d 4 h`.
pub fn span(ms: Millis) -> String {
    let s = ms / 1000;
    if ms < 1000 {
        format!("{ms} ms")
    } else if s < 60 {
        format!("{s} s")
    } else if s < 3600 {
        format!("{} m {} s", s / 60, s % 60)
    } else if s < 86_400 {
        format!("{} h {:02} m", s / 3600, s % 3600 / 60)
    } else {
        format!("{} d {} h", s / 86_400, s % 86_400 / 3600)
    }
}

/// `at` relative to `now`: `12 s ago`, `in 29 m 48 s`, `now`.
pub fn relative(at: Millis, now: Millis) -> String {
    if at.abs_diff(now) < 1000 {
        "now".to_owned()
    } else if at < now {
        format!("{} ago", span(now - at))
    } else {
        format!("in {}", span(at - now))
    }
}

/// The terminal's time zone (`TZ`, else `/etc/localtime`), read once. `jiff` reads and
/// applies the system's tz database in safe code, which std cannot do and `time` refuses in
/// a multi-threaded process; when the zone cannot be determined the clock is UTC and says so.
fn zone() -> &'static (jiff::tz::TimeZone, &'static str) {
    static ZONE: std::sync::OnceLock<(jiff::tz::TimeZone, &'static str)> =
        std::sync::OnceLock::new();
    ZONE.get_or_init(|| match jiff::tz::TimeZone::try_system() {
        Ok(tz) => (tz, ""),
        Err(_) => (jiff::tz::TimeZone::UTC, " UTC"),
    })
}

/// A wall-clock time in the local zone (or UTC, saying so): `08:17:30`, with the date when
/// it is not `now`'s day (`2026-11-30 08:17:30`).
pub fn clock(at: Millis, now: Millis, utc: bool) -> String {
    let utc_zone = (jiff::tz::TimeZone::UTC, " UTC");
    let (tz, label) = if utc { &utc_zone } else { zone() };
    let zoned = |ms: Millis| {
        i64::try_from(ms)
            .ok()
            .and_then(|ms| jiff::Timestamp::from_millisecond(ms).ok())
            .map(|t| t.to_zoned(tz.clone()))
    };
    match (zoned(at), zoned(now)) {
        (Some(a), Some(n)) if a.date() == n.date() => format!("{}{label}", a.strftime("%H:%M:%S")),
        (Some(a), _) => format!("{}{label}", a.strftime("%Y-%m-%d %H:%M:%S")),
        (None, _) => format!("{at} ms after the epoch"),
    }
}

/// `08:17:30, 12 s ago` (clock time and how long from now).
pub fn moment(at: Millis, now: Millis, utc: bool) -> String {
    format!("{}, {}", clock(at, now, utc), relative(at, now))
}

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
        // Printable ASCII is one grapheme and one column per byte: no segmentation.
        let ascii = printable_ascii(line);
        let graphemes: Box<dyn Iterator<Item = &str>> = if ascii {
            Box::new((0..line.len()).map(|i| &line[i..=i]))
        } else {
            Box::new(line.graphemes(true))
        };
        let mut row = String::new();
        let mut used = 0;
        let mut last_space: Option<usize> = None;
        for g in graphemes {
            let w = if ascii { 1 } else { width(g) };
            // A grapheme wider than the whole row cannot be shown: mark it instead.
            let (g, w) = if w > columns { ("…", 1) } else { (g, w) };
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

/// How many rows [`wrap`] makes of `text` at `columns`, without keeping them when the text
/// fits in one row (the common case: a row count for every line of a long transcript).
pub fn row_count(text: &str, columns: usize, scratch: &mut Vec<String>) -> usize {
    if columns == 0 {
        return 0;
    }
    // No character is wider than its UTF-8 bytes: text of at most `columns` bytes fits.
    if !text.contains('\n') && (text.len() <= columns || width(text) <= columns) {
        return 1;
    }
    scratch.clear();
    wrap(text, columns, scratch);
    scratch.len()
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
    fn spans_and_moments_read_at_a_glance_12() {
        use super::{clock, moment, relative, span};
        assert_eq!(span(12_400), "12 s");
        assert_eq!(span(1_788_000), "29 m 48 s");
        assert_eq!(span(7_500_000), "2 h 05 m");
        assert_eq!(relative(1_000, 13_000), "12 s ago");
        assert_eq!(relative(1_801_000, 13_000), "in 29 m 48 s");
        let now = 1_796_112_681_488;
        let at = 1_796_112_669_488;
        let m = moment(at, now, true);
        assert_eq!(m, "08:11:09 UTC, 12 s ago");
        let c = clock(at, now, false);
        assert!(!c.contains("1796112669"), "{c}");
        let hms = c.trim_end_matches(" UTC");
        assert_eq!(hms.len(), 8, "{c}");
        assert!(hms.chars().filter(|&ch| ch == ':').count() == 2, "{c}");
        // Another day shows its date.
        assert_eq!(
            clock(at - 3 * 86_400_000, now, true),
            "2026-11-28 08:11:09 UTC"
        );
    }

    #[test]
    fn durations_read_naturally() {
        assert_eq!(duration(850), "850ms");
        assert_eq!(duration(4_200), "4.2s");
        assert_eq!(duration(187_000), "3m07s");
    }
}

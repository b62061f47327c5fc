//! A document's rows at one width, wrapped only where they are drawn: for each line, how
//! many rows it makes (counted once per width, and only for new lines after an append);
//! the rows on screen are wrapped from their lines at draw time.

use super::format::{row_count, wrap};
use super::transcript::{Line, RowKind};

/// Where each line of a document lands among its rows wrapped at one width. Only the row
/// counts are kept: the rows themselves are wrapped when drawn, and only those on screen
/// (a 100,000-line transcript costs a row count per line, which for a line that fits is
/// one length check, and a screenful of wrapping).
#[derive(Debug, Default)]
pub(super) struct Wrapped {
    width: usize,
    /// Changes when the document was replaced (not only appended to).
    epoch: u64,
    version: u64,
    /// How many of the document's lines are counted in `ends` (the tail's counts follow).
    lines_done: usize,
    /// `ends[i]`: the rows of lines `0..=i` (the document's lines, then the tail's).
    ends: Vec<usize>,
}

impl Wrapped {
    /// Counts the rows of `lines`, then `tail`, at `width`. A new width or epoch recounts
    /// everything; a new version within one epoch means lines were appended (or the tail
    /// changed): only the new lines and the tail are counted.
    pub(super) fn refresh(
        &mut self,
        lines: &[Line],
        tail: &[Line],
        width: usize,
        epoch: u64,
        version: u64,
    ) {
        if self.width == width && self.epoch == epoch && self.version == version {
            return;
        }
        if self.width != width || self.epoch != epoch || lines.len() < self.lines_done {
            self.ends.clear();
            self.lines_done = 0;
        }
        self.width = width;
        self.epoch = epoch;
        self.version = version;
        self.ends.truncate(self.lines_done);
        let mut total = self.ends.last().copied().unwrap_or(0);
        let mut scratch = Vec::new();
        for line in lines[self.lines_done..].iter().chain(tail) {
            total += row_count(line.text.as_str(), width, &mut scratch);
            self.ends.push(total);
        }
        self.lines_done = lines.len();
    }

    /// How many rows the document and its tail make.
    pub(super) fn len(&self) -> usize {
        self.ends.last().copied().unwrap_or(0)
    }

    pub(super) fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// At most `count` rows from row `offset`, wrapped now from the lines they come from
    /// (`lines` and `tail` as last counted).
    pub(super) fn window(
        &self,
        lines: &[Line],
        tail: &[Line],
        offset: usize,
        count: usize,
    ) -> Vec<(RowKind, String)> {
        let first = self.ends.partition_point(|&end| end <= offset);
        let mut skip = offset - first.checked_sub(1).map_or(0, |i| self.ends[i]);
        let mut out = Vec::with_capacity(count);
        let mut buf = Vec::new();
        for line in lines.iter().chain(tail).skip(first) {
            if out.len() >= count {
                break;
            }
            buf.clear();
            wrap(line.text.as_str(), self.width, &mut buf);
            let taken = buf.len().saturating_sub(skip).min(count - out.len());
            out.extend(buf.drain(..).skip(skip).take(taken).map(|t| (line.kind, t)));
            skip = 0;
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::Wrapped;
    use crate::text::SafeText;
    use crate::ui::hub::format::wrap;
    use crate::ui::hub::transcript::{Line, RowKind};

    fn line(text: &str) -> Line {
        Line {
            kind: RowKind::Body,
            text: SafeText::line(text),
        }
    }

    /// Every row, wrapped eagerly (what the Hub kept before it wrapped lazily).
    fn eager(lines: &[Line], width: usize) -> Vec<(RowKind, String)> {
        let mut out = Vec::new();
        for l in lines {
            let mut rows = Vec::new();
            wrap(l.text.as_str(), width, &mut rows);
            out.extend(rows.into_iter().map(|r| (l.kind, r)));
        }
        out
    }

    #[test]
    fn any_window_of_the_lazy_rows_is_that_window_of_every_row_23() {
        let texts = [
            "short",
            "",
            "the quick brown fox jumps over the lazy dog and keeps running past the fence",
            "日本語テキストの長い行はここで折り返される必要があります",
            "e\u{301}te\u{301} ✓ résumé with a long tail of words to wrap around",
            "averyveryverylongwordwithnospacesatallthatmustbecutsomewhere",
        ];
        let lines: Vec<Line> = (0..60).map(|i| line(texts[i % texts.len()])).collect();
        let (base, tail) = lines.split_at(50);
        for width in [1, 4, 13, 40, 80, 200] {
            let mut wrapped = Wrapped::default();
            wrapped.refresh(base, tail, width, 1, 1);
            let all = eager(&lines, width);
            assert_eq!(wrapped.len(), all.len(), "width {width}");
            for offset in [
                0,
                1,
                7,
                all.len() / 2,
                all.len().saturating_sub(3),
                all.len(),
            ] {
                for count in [0, 1, 5, 30] {
                    let want: Vec<_> = all.iter().skip(offset).take(count).cloned().collect();
                    assert_eq!(
                        wrapped.window(base, tail, offset, count),
                        want,
                        "width {width} offset {offset} count {count}"
                    );
                }
            }
        }
    }

    #[test]
    fn appending_counts_only_the_new_lines_and_agrees_with_a_recount_23() {
        let lines: Vec<Line> = (0..40)
            .map(|i| line(&format!("line {i} {}", "word ".repeat(i % 9))))
            .collect();
        let mut appended = Wrapped::default();
        appended.refresh(&lines[..25], &lines[38..], 17, 1, 1);
        appended.refresh(&lines[..38], &lines[38..], 17, 1, 2);
        let mut whole = Wrapped::default();
        whole.refresh(&lines[..38], &lines[38..], 17, 2, 1);
        assert_eq!(appended.len(), whole.len());
        assert_eq!(appended.len(), eager(&lines, 17).len());
        assert_eq!(
            appended.window(&lines[..38], &lines[38..], 5, 100),
            whole.window(&lines[..38], &lines[38..], 5, 100)
        );
    }
}

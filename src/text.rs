//! Untrusted text (assignments, model and tool output, file names) is cleaned once, where
//! it enters a terminal-facing surface, into [`SafeText`].
//!
//! Removed: escape sequences (CSI, OSC, DCS, SOS, PM, APC, and their 8-bit C1 forms), every
//! other C0/C1 control and DEL, and bidirectional controls. Tabs become spaces. Newlines are
//! kept only where the caller allows multi-line text.
//!
//! Also removed, because terminals disagree about their width (one draws a zero-width joiner
//! as nothing, another joins it with the next character, a third draws a box) and every
//! disagreement with the width the buffer assumed leaves stray fragments on screen: the
//! Unicode default-ignorable code points (zero-width space/joiners, word joiner, byte order
//! mark, soft hyphen, variation selectors, tags, fillers), emoji skin-tone modifiers, and a
//! combining mark with nothing to combine with (a grapheme of width 0 on its own). Combining
//! marks on a base character and wide characters are kept; [`width`] counts them the way the
//! buffer does.

use std::fmt;

/// Text that is safe to write to a terminal.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash)]
pub struct SafeText(String);

impl SafeText {
    /// One line: newlines and carriage returns become spaces.
    pub fn line(raw: &str) -> Self {
        Self(clean(raw, false))
    }

    /// Several lines: `\n` is kept, everything else is cleaned.
    pub fn lines(raw: &str) -> Self {
        Self(clean(raw, true))
    }

    /// One line shown to be read exactly (an error naming a path): nothing is removed;
    /// every control, bidi control and character of unreliable width is written as a
    /// visible escape (`\x1b`, `\u{9d}`, `\n`, `\t`), so the reader sees which bytes the
    /// text holds and none of them acts on the terminal.
    pub fn escaped_line(raw: &str) -> Self {
        Self(escape_visibly(raw, false))
    }

    /// [`SafeText::escaped_line`] that keeps `\n` as a line break.
    pub fn escaped_lines(raw: &str) -> Self {
        Self(escape_visibly(raw, true))
    }

    /// Its lines, each exactly as [`SafeText::line`] cleans it. Printable ASCII pieces are
    /// taken as they are (there is nothing in them to clean), so a long transcript's lines
    /// are not scanned twice.
    pub fn split_lines(&self) -> impl Iterator<Item = SafeText> + '_ {
        let ascii = printable_ascii_lines(&self.0);
        self.0.split('\n').map(move |piece| {
            if ascii {
                Self(piece.to_owned())
            } else {
                Self::line(piece)
            }
        })
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }

    pub fn into_string(self) -> String {
        self.0
    }
}

impl fmt::Display for SafeText {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl AsRef<str> for SafeText {
    fn as_ref(&self) -> &str {
        &self.0
    }
}

const TAB_WIDTH: usize = 4;

fn is_bidi_control(c: char) -> bool {
    matches!(c, '\u{061C}' | '\u{200E}' | '\u{200F}' | '\u{202A}'..='\u{202E}' | '\u{2066}'..='\u{2069}')
}

/// Characters whose drawn width differs between terminals: Unicode's default-ignorable code
/// points (DerivedCoreProperties.txt) and the emoji skin-tone modifiers.
pub fn is_unreliable_width(c: char) -> bool {
    matches!(c,
        '\u{00AD}' | '\u{034F}' | '\u{061C}' | '\u{115F}' | '\u{1160}' | '\u{17B4}' | '\u{17B5}'
        | '\u{180B}'..='\u{180F}' | '\u{200B}'..='\u{200F}' | '\u{202A}'..='\u{202E}'
        | '\u{2060}'..='\u{206F}' | '\u{3164}' | '\u{FE00}'..='\u{FE0F}' | '\u{FEFF}'
        | '\u{FFA0}' | '\u{FFF0}'..='\u{FFF8}' | '\u{1BCA0}'..='\u{1BCA3}'
        | '\u{1D173}'..='\u{1D17A}' | '\u{1F3FB}'..='\u{1F3FF}' | '\u{E0000}'..='\u{E0FFF}')
}

/// Drops every grapheme the buffer would count as width 0 on its own (a combining mark at
/// the start of a line, or after a newline): the terminal would put it on whatever cell
/// came before.
fn drop_zero_width_graphemes(text: String) -> String {
    use unicode_segmentation::UnicodeSegmentation;
    let lone = |g: &str| g != "\n" && unicode_width::UnicodeWidthStr::width(g) == 0;
    if !text.graphemes(true).any(lone) {
        return text;
    }
    text.graphemes(true).filter(|g| !lone(g)).collect()
}

/// The text of [`SafeText::escaped_line`] / [`SafeText::escaped_lines`].
fn escape_visibly(raw: &str, keep_newlines: bool) -> String {
    use std::fmt::Write as _;
    use unicode_segmentation::UnicodeSegmentation;
    if printable_ascii(raw) {
        return raw.to_owned();
    }
    let mut out = String::with_capacity(raw.len() + 16);
    // A grapheme of width 0 on its own (a combining mark at the start of a line) would
    // land on the cell before it: it is escaped too.
    let mut line_start = true;
    for grapheme in raw.graphemes(true) {
        let lone =
            grapheme != "\n" && line_start && unicode_width::UnicodeWidthStr::width(grapheme) == 0;
        for c in grapheme.chars() {
            match c {
                '\n' if keep_newlines => out.push('\n'),
                '\n' => out.push_str("\\n"),
                '\r' => out.push_str("\\r"),
                '\t' => out.push_str("\\t"),
                c if c.is_ascii_control() => {
                    let _ = write!(out, "\\x{:02x}", u32::from(c));
                }
                c if lone || c.is_control() || is_bidi_control(c) || is_unreliable_width(c) => {
                    let _ = write!(out, "\\u{{{:x}}}", u32::from(c));
                }
                c => out.push(c),
            }
        }
        line_start = grapheme == "\n" && keep_newlines;
    }
    out
}

/// Where an escape sequence ends. Returns how many chars (after the introducer) to skip.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Escape {
    /// CSI: parameters and intermediates, then one final byte 0x40..=0x7E.
    Csi,
    /// OSC, DCS, SOS, PM, APC: a string terminated by ST (ESC \, or U+009C when a C1
    /// character introduced it: after `ESC ]` a UTF-8 terminal reads U+009C as text of the
    /// string, as the `strip-ansi-escapes` oracle does, so the string goes on), and an OSC
    /// also by BEL (a BEL inside DCS, SOS, PM or APC is part of the string).
    String { c1: bool, osc: bool },
}

/// Printable ASCII only: nothing to clean, one column per byte, one grapheme per byte.
pub fn printable_ascii(text: &str) -> bool {
    all_bytes(text, |b| b.wrapping_sub(0x20) < 0x5f)
}

/// Printable ASCII and `\n` only: what a transcript's plain text is, nothing to clean.
fn printable_ascii_lines(text: &str) -> bool {
    all_bytes(text, |b| b == b'\n' || b.wrapping_sub(0x20) < 0x5f)
}

/// Whether every byte of `text` passes `ok`, tested 32 bytes at a time without an early exit
/// inside a block (so the compiler turns each block into a few vector compares: the Hub scans
/// every line of a transcript it is shown, issue 23).
#[inline]
fn all_bytes(text: &str, ok: impl Fn(u8) -> bool) -> bool {
    let mut blocks = text.as_bytes().chunks_exact(32);
    let whole = blocks.all(|block| block.iter().fold(true, |all, &b| all & ok(b)));
    whole && blocks.remainder().iter().all(|&b| ok(b))
}

fn clean(raw: &str, keep_newlines: bool) -> String {
    let nothing_to_clean = if keep_newlines {
        printable_ascii_lines(raw)
    } else {
        printable_ascii(raw)
    };
    if nothing_to_clean {
        return raw.to_owned();
    }
    clean_slow(raw, keep_newlines)
}

/// [`clean`] without its fast path (the tests compare the two).
fn clean_slow(raw: &str, keep_newlines: bool) -> String {
    let mut out = String::with_capacity(raw.len());
    let mut chars = raw.chars().peekable();
    let mut column = 0usize;
    // An ESC that ended a string sequence starts the next one (as terminals parse it).
    let mut escape_again = false;
    while let Some(c) = if std::mem::take(&mut escape_again) {
        Some('\u{1b}')
    } else {
        chars.next()
    } {
        let escape = match c {
            '\u{1b}' => {
                // Terminals ignore (or execute) anything but printable ASCII inside an escape
                // and stay in it (`ESC é a`, `ESC ( é a`, `ESC DEL a` drop it all); an ESC
                // there ends it and starts the next one.
                let ignored = |n: &char| *n != '\u{1b}' && !('\u{20}'..='\u{7e}').contains(n);
                while chars.next_if(ignored).is_some() {}
                match chars.peek().copied() {
                    Some('[') => {
                        chars.next();
                        Some(Escape::Csi)
                    }
                    Some(kind @ (']' | 'P' | 'X' | '^' | '_')) => {
                        chars.next();
                        Some(Escape::String {
                            c1: false,
                            osc: kind == ']',
                        })
                    }
                    Some(next) if ('\u{20}'..='\u{7e}').contains(&next) => {
                        // Two-character escapes (ESC 7, ESC c, ESC ( B …): drop the
                        // intermediates, anything ignored among them, and the final byte.
                        while chars
                            .next_if(|n| ('\u{20}'..='\u{2f}').contains(n) || ignored(n))
                            .is_some()
                        {}
                        chars.next_if(|&n| n != '\u{1b}');
                        continue;
                    }
                    _ => continue,
                }
            }
            '\u{9b}' => Some(Escape::Csi),
            '\u{9d}' | '\u{90}' | '\u{98}' | '\u{9e}' | '\u{9f}' => Some(Escape::String {
                c1: true,
                osc: c == '\u{9d}',
            }),
            _ => None,
        };
        match escape {
            Some(Escape::Csi) => {
                // An ESC inside ends the sequence and starts another (`ESC [ ESC [31m`).
                while let Some(n) = chars.next_if(|&n| n != '\u{1b}') {
                    if ('\u{40}'..='\u{7e}').contains(&n) {
                        break;
                    }
                }
                continue;
            }
            Some(Escape::String { c1, osc }) => {
                while let Some(n) = chars.next() {
                    if (osc && n == '\u{7}') || (c1 && n == '\u{9c}') {
                        break;
                    }
                    if n == '\u{1b}' {
                        // ST (`ESC \`) ends the string; any other ESC ends it and starts
                        // the next sequence.
                        if chars.next_if_eq(&'\\').is_none() {
                            escape_again = true;
                        }
                        break;
                    }
                }
                continue;
            }
            None => {}
        }
        match c {
            '\n' | '\u{2028}' | '\u{2029}' if keep_newlines => {
                out.push('\n');
                column = 0;
            }
            '\n' | '\r' | '\u{2028}' | '\u{2029}' => {
                if !out.ends_with(' ') && !out.is_empty() {
                    out.push(' ');
                    column += 1;
                }
            }
            '\t' => {
                let spaces = TAB_WIDTH - column % TAB_WIDTH;
                out.extend(std::iter::repeat_n(' ', spaces));
                column += spaces;
            }
            c if c.is_control() || is_bidi_control(c) || is_unreliable_width(c) => {}
            c => {
                out.push(c);
                column += 1;
            }
        }
    }
    // Printable ASCII has no grapheme of width 0 (every control is gone by now): only
    // text with something else in it needs segmenting.
    if out.is_ascii() {
        out
    } else {
        drop_zero_width_graphemes(out)
    }
}

/// Display width in terminal columns, as the ratatui buffer counts it: the sum of each
/// grapheme's width (East Asian wide characters count 2, a combining mark on its base 0).
pub fn width(text: &str) -> usize {
    use unicode_segmentation::UnicodeSegmentation;
    if printable_ascii(text) {
        return text.len();
    }
    text.graphemes(true)
        .map(unicode_width::UnicodeWidthStr::width)
        .sum()
}

/// Fit `text` into `max` columns, cutting at a grapheme boundary and marking the cut with `…`.
pub fn fit(text: &str, max: usize) -> String {
    use unicode_segmentation::UnicodeSegmentation;
    if width(text) <= max {
        return text.to_owned();
    }
    if max == 0 {
        return String::new();
    }
    if printable_ascii(text) {
        let mut out = String::with_capacity(max + 2);
        out.push_str(&text[..max - 1]);
        out.push('…');
        return out;
    }
    let mut out = String::new();
    let mut used = 0;
    for g in text.graphemes(true) {
        let w = width(g);
        if used + w > max - 1 {
            break;
        }
        out.push_str(g);
        used += w;
    }
    out.push('…');
    out
}

/// Appends untrusted one-line `raw` to `out`, cleaned like [`SafeText::line`] and fitted
/// like [`fit`]; printable ASCII (the common case) is copied without intermediate strings.
/// Returns the columns written.
pub fn push_line_fit(out: &mut String, raw: &str, max: usize) -> usize {
    if printable_ascii(raw) {
        if raw.len() <= max {
            out.push_str(raw);
            return raw.len();
        } else if max > 0 {
            out.push_str(&raw[..max - 1]);
            out.push('…');
            return max;
        }
        return 0;
    }
    let fitted = fit(&clean(raw, false), max);
    out.push_str(&fitted);
    width(&fitted)
}

/// A count for a narrow column: `950`, `12.3k`, `4.1M`.
pub fn compact_count(n: u64) -> String {
    #[allow(clippy::cast_precision_loss, reason = "one decimal shown")]
    let f = n as f64;
    if n < 1000 {
        n.to_string()
    } else if n < 1_000_000 {
        format!("{:.1}k", f / 1000.0)
    } else {
        format!("{:.1}M", f / 1_000_000.0)
    }
}

/// An elapsed time: `4.2s`, `3m07s`, `2h05m`.
pub fn elapsed_text(ms: u64) -> String {
    let mut out = String::with_capacity(8);
    push_elapsed(&mut out, ms);
    out
}

/// Appends [`elapsed_text`] to `out`.
pub fn push_elapsed(out: &mut String, ms: u64) {
    if ms >= 3_600_000 {
        push_u64(out, ms / 3_600_000);
        out.push('h');
        push_two_digits(out, ms % 3_600_000 / 60_000);
        out.push('m');
    } else if ms >= 60_000 {
        push_u64(out, ms / 60_000);
        out.push('m');
        push_two_digits(out, ms % 60_000 / 1000);
        out.push('s');
    } else {
        push_u64(out, ms / 1000);
        out.push('.');
        push_u64(out, ms % 1000 / 100);
        out.push('s');
    }
}

/// Appends `n` in decimal (what `{n}` writes, without the formatting machinery: the fleet
/// table writes several numbers per row).
pub fn push_u64(out: &mut String, mut n: u64) {
    let mut digits = [0_u8; 20];
    let mut at = digits.len();
    loop {
        at -= 1;
        digits[at] = b'0' + u8::try_from(n % 10).unwrap_or(0);
        n /= 10;
        if n == 0 {
            break;
        }
    }
    out.push_str(std::str::from_utf8(&digits[at..]).unwrap_or_default());
}

/// Appends `x` with four decimals, exactly as `{x:.4}` writes it (the exact binary value
/// rounded half to even), computed in integers for the values a cost takes (finite, `0 ≤ x <
/// 2^50`); anything else goes through the formatter.
pub fn push_fixed4(out: &mut String, x: f64) {
    const SCALE: u128 = 10_000;
    if !(x.is_finite() && x.is_sign_positive() && x < 1e15) {
        let _ = std::fmt::Write::write_fmt(out, format_args!("{x:.4}"));
        return;
    }
    // x = mantissa · 2^-shift exactly; below 2^50 the exponent is always negative.
    let bits = x.to_bits();
    let biased = (bits >> 52) & 0x7ff;
    let fraction = bits & ((1 << 52) - 1);
    let (mantissa, shift) = if biased == 0 {
        (fraction, 1074)
    } else {
        (fraction | (1 << 52), 1075 - biased)
    };
    // x · 10^4 = scaled / 2^shift; scaled < 2^67, so from 2^68 on it rounds to 0.
    let scaled = u128::from(mantissa) * SCALE;
    let units = if shift >= 68 {
        0
    } else {
        let whole = scaled >> shift;
        let rest = scaled - (whole << shift);
        let half = 1_u128 << (shift - 1);
        whole + u128::from(rest > half || (rest == half && whole % 2 == 1))
    };
    push_u64(out, u64::try_from(units / SCALE).unwrap_or(u64::MAX));
    out.push('.');
    let decimals = units % SCALE;
    for place in [1000, 100, 10, 1] {
        out.push(char::from(
            b'0' + u8::try_from(decimals / place % 10).unwrap_or(0),
        ));
    }
}

/// `n` (below 100) as two digits, `07`.
fn push_two_digits(out: &mut String, n: u64) {
    if n < 10 {
        out.push('0');
    }
    push_u64(out, n);
}

/// `fit`, then pad with spaces to exactly `columns`.
pub fn pad(text: &str, columns: usize) -> String {
    let mut fitted = fit(text, columns);
    let w = width(&fitted);
    fitted.extend(std::iter::repeat_n(' ', columns.saturating_sub(w)));
    fitted
}

#[cfg(test)]
mod tests {
    use super::{SafeText, fit, pad, width};

    #[test]
    fn fitting_counts_columns_not_bytes() {
        assert_eq!(fit("日本語テキスト", 7), "日本語…");
        assert!(width(&fit("日本語テキスト", 7)) <= 7);
        assert_eq!(fit("short", 10), "short");
        assert_eq!(fit("abcdef", 4), "abc…");
        assert_eq!(fit("abc", 0), "");
        assert_eq!(width(&pad("ab", 5)), 5);
        assert_eq!(width(&pad("日本語テキスト", 6)), 6);
        // The printable-ASCII fast paths agree with the general ones.
        assert_eq!(fit("abcdef", 1), "…");
        assert_eq!(pad("abcdef", 4), "abc…");
        assert_eq!(pad("ab", 4), "ab  ");
        assert_eq!(SafeText::line("plain text 123").as_str(), "plain text 123");
        assert_eq!(
            [0, 999, 1000, 12_345, 4_100_000].map(super::compact_count),
            ["0", "999", "1.0k", "12.3k", "4.1M"]
        );
        assert_eq!(
            [850, 4_200, 187_000, 7_500_000].map(super::elapsed_text),
            ["0.8s", "4.2s", "3m07s", "2h05m"]
        );
        for (raw, max) in [
            ("abcdef", 4),
            ("abc", 4),
            ("abcdef", 0),
            ("a\u{1b}[31mb日本語c", 4),
            ("日本語テキスト", 7),
        ] {
            let mut pushed = String::from(">");
            let columns = super::push_line_fit(&mut pushed, raw, max);
            let fitted = fit(SafeText::line(raw).as_str(), max);
            assert_eq!(pushed, format!(">{fitted}"), "{raw:?} {max}");
            assert_eq!(columns, width(&fitted), "{raw:?} {max}");
        }
    }

    /// The formatting `elapsed_text` had before it wrote digits itself.
    fn elapsed_by_format(ms: u64) -> String {
        if ms >= 3_600_000 {
            format!("{}h{:02}m", ms / 3_600_000, ms % 3_600_000 / 60_000)
        } else if ms >= 60_000 {
            format!("{}m{:02}s", ms / 60_000, ms % 60_000 / 1000)
        } else {
            format!("{}.{}s", ms / 1000, ms % 1000 / 100)
        }
    }

    #[test]
    fn digits_written_by_hand_are_what_format_writes() {
        let edges = [
            0,
            1,
            9,
            10,
            99,
            100,
            999,
            59_999,
            60_000,
            60_999,
            3_599_999,
            3_600_000,
            36_000_000_000,
            u64::MAX,
        ];
        for n in edges.into_iter().chain((0..5000).map(|i| i * 7919)) {
            let mut out = String::from("x");
            super::push_u64(&mut out, n);
            assert_eq!(out, format!("x{n}"));
            assert_eq!(super::elapsed_text(n), elapsed_by_format(n), "{n}");
        }
    }

    #[test]
    fn four_decimals_written_by_hand_are_what_format_writes() {
        let edges = [
            0.0,
            -0.0,
            0.0021,
            0.00005,
            0.000_049_999,
            0.25,
            0.75,
            2.5,
            0.031_25,
            0.093_75,
            1e-30,
            f64::MIN_POSITIVE,
            5e-324,
            123_456.789_05,
            999_999_999_999_999.9,
            1e15,
            -0.0021,
            f64::NAN,
            f64::INFINITY,
        ];
        let ties = (0..4096).map(|k| f64::from(k) / 32.0 + 1.0 / 64.0);
        for x in edges.into_iter().chain(ties) {
            let mut out = String::new();
            super::push_fixed4(&mut out, x);
            assert_eq!(out, format!("{x:.4}"), "{x:e}");
        }
    }

    proptest::proptest! {
        #[test]
        fn four_decimals_of_any_cost_are_what_format_writes(
            bits in 0_u64..0x4330_0000_0000_0000,
            scaled in 0_u32..100_000_000,
        ) {
            let small = [f64::from_bits(u64::from(scaled)), f64::from(scaled) / 1e7];
            for x in std::iter::once(f64::from_bits(bits)).chain(small) {
                let mut out = String::new();
                super::push_fixed4(&mut out, x);
                proptest::prop_assert_eq!(out, format!("{x:.4}"));
            }
        }
    }

    #[test]
    fn escaped_text_keeps_every_character_and_shows_controls_visibly() {
        let raw = "/tmp/x \u{9d}0;t \u{1b}]52;c;QUJD\u{7}\t\u{7f}\u{202e}txt\u{200b}\r";
        let shown = SafeText::escaped_line(raw).into_string();
        assert_eq!(
            shown,
            r"/tmp/x \u{9d}0;t \x1b]52;c;QUJD\x07\t\x7f\u{202e}txt\u{200b}\r"
        );
        assert!(!shown.chars().any(char::is_control), "{shown:?}");
        // A combining mark with nothing to combine with is escaped too; one on a base stays.
        assert_eq!(
            SafeText::escaped_line("\u{301}e\u{301}").as_str(),
            "\\u{301}e\u{301}"
        );
        // Lines keep their breaks (and a mark after one is lone again), a line does not.
        assert_eq!(
            SafeText::escaped_lines("a\n\u{301}b").as_str(),
            "a\n\\u{301}b"
        );
        assert_eq!(SafeText::escaped_line("a\nb").as_str(), "a\\nb");
        assert_eq!(SafeText::escaped_line("plain").as_str(), "plain");
    }

    #[test]
    fn escape_sequences_of_every_kind_are_removed() {
        let cases = [
            ("\u{1b}[31mred\u{1b}[0m", "red"),
            ("a\u{1b}]0;title\u{7}b", "ab"),
            (
                "a\u{1b}]8;;http://x\u{1b}\\link\u{1b}]8;;\u{1b}\\b",
                "alinkb",
            ),
            ("a\u{1b}Pdcs data\u{1b}\\b", "ab"),
            ("a\u{1b}Xsos\u{1b}\\b", "ab"),
            ("a\u{1b}^pm\u{1b}\\b", "ab"),
            ("a\u{1b}_apc\u{1b}\\b", "ab"),
            ("a\u{9b}2Jb", "ab"),
            ("a\u{9d}osc\u{9c}b", "ab"),
            ("a\u{1b}cb", "ab"),
            ("a\u{1b}(Bb", "ab"),
            ("bell\u{7}\u{8}\u{7f}", "bell"),
            ("a\u{202e}evil\u{2066}b", "aevilb"),
        ];
        for (raw, want) in cases {
            assert_eq!(SafeText::line(raw).as_str(), want, "input {raw:?}");
        }
    }

    #[test]
    fn tabs_expand_and_newlines_follow_the_mode() {
        assert_eq!(SafeText::line("a\tb").as_str(), "a   b");
        assert_eq!(
            SafeText::line("one\ntwo\r\nthree").as_str(),
            "one two three"
        );
        assert_eq!(SafeText::lines("one\ntwo").as_str(), "one\ntwo");
    }

    #[test]
    fn zero_width_characters_whose_terminal_width_varies_are_removed_9() {
        let cases = [
            ("a\u{200b}b\u{200d}c\u{feff}d", "abcd"),
            (
                "\u{1f468}\u{200d}\u{1f469}\u{200d}\u{1f467}",
                "\u{1f468}\u{1f469}\u{1f467}",
            ),
            (
                "\u{263a}\u{fe0f} soft\u{ad}hyphen\u{2060}",
                "\u{263a} softhyphen",
            ),
            ("\u{1f44d}\u{1f3fd} tag\u{e0041}", "\u{1f44d} tag"),
            // A combining mark with no base is dropped; on a base it stays.
            ("\u{301}e\u{301}", "e\u{301}"),
            ("line\u{2028}next", "line next"),
        ];
        for (raw, want) in cases {
            assert_eq!(SafeText::line(raw).as_str(), want, "input {raw:?}");
        }
        assert_eq!(SafeText::lines("a\n\u{301}b").as_str(), "a\nb");
        assert_eq!(width("e\u{301}\u{65e5}"), 3);
    }

    /// Fragments that make escape sequences, controls, marks and wide text when joined.
    const PIECES: &[&str] = &[
        "a",
        "Z",
        "0",
        ";",
        "m",
        "[",
        "]",
        "P",
        "X",
        "^",
        "_",
        "(",
        "B",
        "\\",
        " ",
        "é",
        "日",
        "✓",
        "\u{1b}",
        "\u{7}",
        "\u{9b}",
        "\u{9c}",
        "\u{9d}",
        "\u{90}",
        "\u{85}",
        "\u{7f}",
        "\u{8}",
        "\n",
        "\r",
        "\t",
        "\u{202e}",
        "\u{2066}",
        "\u{200b}",
        "\u{301}",
        "\u{1b}[31m",
        "\u{1b}]0;t\u{7}",
        "\u{1b}P1$r\u{1b}\\",
        "\u{1b}[?25l",
        "\u{1b}7",
    ];

    fn untrusted() -> impl proptest::strategy::Strategy<Value = String> {
        proptest::collection::vec(proptest::sample::select(PIECES), 0..40)
            .prop_map(|pieces| pieces.concat())
    }

    use proptest::strategy::Strategy as _;

    /// `text` without whitespace (tabs become spaces and newlines may become spaces, so only
    /// the rest is compared).
    fn visible(text: &str) -> Vec<char> {
        text.chars().filter(|c| !c.is_whitespace()).collect()
    }

    /// `small` is `big` with some characters left out.
    fn is_subsequence(small: &[char], big: &[char]) -> bool {
        let mut rest = big.iter();
        small.iter().all(|c| rest.any(|b| b == c))
    }

    proptest::proptest! {
        /// The `strip-ansi-escapes` crate (vte's parser) is the oracle: whatever it removes
        /// is removed here too, and nothing that acts on a terminal is left.
        #[test]
        fn safe_text_removes_at_least_what_strip_ansi_escapes_removes_23(raw in untrusted()) {
            let oracle = strip_ansi_escapes::strip_str(&raw);
            for (multi, clean) in [(true, SafeText::lines(&raw)), (false, SafeText::line(&raw))] {
                let clean = clean.as_str();
                proptest::prop_assert!(
                    is_subsequence(&visible(clean), &visible(&oracle)),
                    "{raw:?}: kept {clean:?}, the oracle {oracle:?}"
                );
                proptest::prop_assert!(
                    !clean.chars().any(|c| (c.is_control() && !(multi && c == '\n'))
                        || super::is_bidi_control(c)
                        || super::is_unreliable_width(c)),
                    "{raw:?}: {clean:?}"
                );
            }
        }

        /// The ASCII fast paths answer what the general path answers.
        #[test]
        fn printable_ascii_takes_the_fast_path_to_the_same_text_23(
            raw in "[ -~\n]{0,200}",
        ) {
            for multi in [true, false] {
                proptest::prop_assert_eq!(super::clean(&raw, multi), super::clean_slow(&raw, multi));
            }
            let line = raw.replace('\n', " ");
            proptest::prop_assert_eq!(width(&line), unicode_width::UnicodeWidthStr::width(line.as_str()));
        }
    }

    proptest::proptest! {
        /// Splitting cleaned text into lines gives what cleaning each piece as a line gives,
        /// ASCII or not; and no cleaned text is wider than its bytes (the Hub counts a line
        /// of at most `columns` bytes as one row without measuring it).
        #[test]
        fn split_lines_is_each_piece_cleaned_as_a_line_23(
            raw in proptest::prop_oneof![
                untrusted(),
                "[ -~\n]{0,120}",
                "[ -~\né日\u{301}\u{200b}\n]{0,80}",
            ],
        ) {
            let clean = SafeText::lines(&raw);
            let want: Vec<SafeText> = clean.as_str().split('\n').map(SafeText::line).collect();
            let got: Vec<SafeText> = clean.split_lines().collect();
            proptest::prop_assert_eq!(&got, &want);
            for line in got {
                proptest::prop_assert!(width(line.as_str()) <= line.as_str().len(), "{:?}", line);
            }
        }
    }

    #[test]
    fn the_block_scan_agrees_with_a_byte_by_byte_scan_at_every_length_23() {
        let reference = |t: &[u8]| t.iter().all(|b| (0x20..0x7f).contains(b));
        for len in 0..100 {
            for bad_at in 0..=len {
                let mut bytes = vec![b'a'; len];
                for bad in [0x00, 0x0a, 0x1b, 0x1f, 0x7f, 0xc3] {
                    if bad_at < len {
                        bytes[bad_at] = bad;
                    }
                    let text = String::from_utf8_lossy(&bytes);
                    assert_eq!(
                        super::printable_ascii(&text),
                        reference(text.as_bytes()),
                        "{text:?}"
                    );
                    let lines = super::printable_ascii_lines(&text);
                    assert_eq!(lines, text.bytes().all(|b| b == b'\n' || reference(&[b])));
                }
            }
        }
    }

    #[test]
    fn ordinary_unicode_is_kept() {
        assert_eq!(
            SafeText::line("résumé ✓ 日本語").as_str(),
            "résumé ✓ 日本語"
        );
    }
}

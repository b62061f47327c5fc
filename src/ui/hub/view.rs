//! Drawing the Hub. `HubView` borrows the state; only visible rows are formatted. Every
//! string reaching the buffer is already `SafeText` (or built from registry enums and
//! numbers) and is fitted to its area by display width.

use std::fmt::Write as _;

use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::style::{Modifier, Style};
use ratatui::widgets::{Block, Borders, Clear, Widget};
use unicode_segmentation::UnicodeSegmentation;

use super::format::{count, duration, elapsed, stats};
use super::layout::{Areas, Kind};
use super::roster::{Liveness, SortKey};
use super::state::{Bulk, Hub, Mode, NoticeKind, Pane, Prompt, WAIT_MS};
use super::transcript::RowKind;
use crate::core::{ChildRef, Role};
use crate::text::{SafeText, fit, width};
use crate::ui::fleet::status_glyph;
use crate::ui::theme;

/// One frame of the Hub.
pub struct HubView<'a> {
    hub: &'a Hub,
}

impl<'a> HubView<'a> {
    /// The state should be prepared (`Hub::prepare`) for the frame's size first.
    pub fn new(hub: &'a Hub) -> Self {
        Self { hub }
    }
}

/// Writes `text` at (x, y), fitted to `w` columns.
fn put(buf: &mut Buffer, x: u16, y: u16, w: u16, text: &str, style: Style) -> u16 {
    if w == 0 {
        return 0;
    }
    let fitted = fit(text, usize::from(w));
    let (end, _) = buf.set_stringn(x, y, &fitted, usize::from(w), style);
    end - x
}

/// The last columns of `text` that fit in `w` (editing happens at the end).
fn tail(text: &str, w: usize) -> String {
    if width(text) <= w {
        return text.to_owned();
    }
    let mut out: Vec<&str> = Vec::new();
    let mut used = 1;
    for g in text.graphemes(true).rev() {
        let gw = width(g);
        if used + gw > w {
            break;
        }
        used += gw;
        out.push(g);
    }
    out.reverse();
    format!("…{}", out.concat())
}

fn short_role(role: Role) -> &'static str {
    match role {
        Role::Scout => "scout",
        Role::Review => "review",
        Role::General => "general",
        Role::Implementation => "impl",
    }
}

fn kind_style(kind: RowKind) -> Style {
    match kind {
        RowKind::User => theme::title().fg(theme::ACCENT),
        RowKind::Assistant => theme::title(),
        RowKind::Tool => theme::tool(),
        RowKind::ToolError | RowKind::Error => theme::error(),
        RowKind::Body => Style::default(),
        RowKind::Dim => theme::dim(),
        RowKind::Marker => theme::warning(),
        RowKind::Added => theme::added(),
        RowKind::Removed => theme::removed(),
    }
}

/// The fixed part of a pinned prompt: the verb and the full target identity.
pub fn prompt_head(hub: &Hub, prompt: &Prompt) -> String {
    match prompt {
        Prompt::Steer { target, .. } => format!("steer {target} › "),
        Prompt::Message { target, .. } => format!("message {target} (root inbox) › "),
        Prompt::Stop { target } => {
            let status = hub
                .roster()
                .get(*target)
                .map_or("unknown", |e| e.snapshot.status.as_str());
            match hub.stop_refusal(*target) {
                None => format!("stop {target} ({status}) + subtree? y/Esc"),
                Some(_) => format!("stop {target}: now {status}, y will refuse"),
            }
        }
        Prompt::Bulk {
            action, targets, ..
        } => match action {
            Bulk::Stop => format!(
                "stop {} marked targets? y confirm · n/Esc cancel",
                targets.len()
            ),
            Bulk::Steer(_) => format!(
                "steer {} marked targets? y confirm · n/Esc cancel",
                targets.len()
            ),
        },
    }
}

impl Widget for &HubView<'_> {
    fn render(self, area: Rect, buf: &mut Buffer) {
        let hub = self.hub;
        let areas = Areas::of(area, hub.roster().rows().len());
        if areas.kind == Kind::Tiny {
            tiny(area, buf);
            return;
        }
        header(hub, &areas, buf);
        match (areas.kind, areas.roster) {
            (Kind::Wide, Some(roster)) => roster_rows(hub, roster, buf),
            (_, Some(roster)) => compact_roster_rows(hub, roster, buf),
            (_, None) => {}
        }
        if let Some(line) = areas.selection {
            selection(hub, line, buf);
        }
        if let Some(sep) = areas.separator {
            for y in sep.y..sep.y + sep.height {
                buf.set_string(sep.x, y, "│", theme::border());
            }
        }
        tabs(hub, areas.tabs, buf);
        pane(hub, areas.pane, buf);
        let rule = "─".repeat(usize::from(areas.rule.width));
        buf.set_string(areas.rule.x, areas.rule.y, rule, theme::border());
        footer(hub, areas.footer, buf);
        if let Mode::Prompt(Prompt::Bulk {
            action,
            targets,
            offset,
        }) = hub.mode()
            && hub.prompt_fits()
        {
            bulk_overlay(hub, action, targets, *offset, area, buf);
        }
    }
}

fn tiny(area: Rect, buf: &mut Buffer) {
    let lines = [
        "Slate Hub".to_owned(),
        format!("{}×{} is too small", area.width, area.height),
        "enlarge the terminal".to_owned(),
        "Esc closes".to_owned(),
    ];
    for (i, line) in lines.iter().enumerate() {
        let Ok(dy) = u16::try_from(i) else { break };
        if dy >= area.height {
            break;
        }
        put(buf, area.x, area.y + dy, area.width, line, theme::dim());
    }
}

fn counts_text(hub: &Hub) -> String {
    let c = hub.roster().counts();
    let mut text = format!("{} current", c.current);
    for (status, n) in &c.by_status {
        let _ = write!(text, " · {n} {status}");
    }
    if c.history > 0 {
        let _ = write!(text, " · {} older generations", c.history);
    }
    text
}

fn header(hub: &Hub, areas: &Areas, buf: &mut Buffer) {
    let a = areas.header;
    // A coordinator that is gone says so before anything else in the header.
    if let Some(banner) = hub.coordinator_banner() {
        let text = format!("{banner} · {}", counts_text(hub));
        put(buf, a.x, a.y, a.width, &text, theme::title());
        return;
    }
    let mut text = String::from("Slate Hub");
    if !hub.options.title.is_empty() {
        let _ = write!(text, " · {}", hub.options.title);
    }
    let _ = write!(text, " · {}", counts_text(hub));
    if !hub.filter_text().is_empty() {
        let _ = write!(text, " · filter /{}", SafeText::line(hub.filter_text()));
    }
    if hub.sort() != SortKey::Tree {
        let _ = write!(text, " · sort {}", hub.sort().as_str());
    }
    if !hub.marks().is_empty() {
        let _ = write!(text, " · {} marked", hub.marks().len());
    }
    put(buf, a.x, a.y, a.width, &text, theme::title());
}

/// The selected generation, with its full identity (compact: the roster shows handles).
fn selection(hub: &Hub, a: Rect, buf: &mut Buffer) {
    let Some(e) = hub.selected().and_then(|r| hub.roster().get(r)) else {
        return;
    };
    let s = &e.snapshot;
    let mut t = format!("{} · {} · {}", s.child_ref(), s.profile.as_str(), s.status);
    if let Some(l) = Liveness::of(e, hub.now, hub.options.stall_after_ms) {
        let _ = write!(t, " · {}", l.label());
    }
    if hub.roster().is_history(s.child_ref()) {
        t.push_str(" · history");
    }
    let _ = write!(t, " · {}", e.headline);
    let st = stats(s);
    if !st.is_empty() {
        let _ = write!(t, " · {st}");
    }
    put(buf, a.x, a.y, a.width, &t, theme::title());
}

/// Left-to-right writing within one roster row.
struct Cursor {
    x: u16,
    y: u16,
    left: usize,
    base: Style,
}

impl Cursor {
    fn write(&mut self, buf: &mut Buffer, text: &str, style: Style) {
        let w = u16::try_from(self.left).unwrap_or(u16::MAX);
        let used = put(buf, self.x, self.y, w, text, self.base.patch(style));
        self.x += used;
        self.left = self.left.saturating_sub(usize::from(used));
    }
}

/// One roster line's start, wide or compact: its style (selected, history dimmed), the mark
/// column and, sorted as a tree, the indent (at most a `1/indent_share` of the width).
fn row_start(
    hub: &Hub,
    r: ChildRef,
    history: bool,
    line: Rect,
    buf: &mut Buffer,
    indent_share: usize,
) -> Cursor {
    let base = match (hub.selected() == Some(r), history) {
        (true, _) => theme::selected(),
        (false, true) => theme::dim(),
        (false, false) => Style::default(),
    };
    buf.set_style(line, base);
    let w = usize::from(line.width);
    let mut row = Cursor {
        x: line.x,
        y: line.y,
        left: w,
        base,
    };
    row.write(
        buf,
        if hub.marks().contains(&r) { "◆" } else { " " },
        theme::warning(),
    );
    if hub.sort() == SortKey::Tree
        && let Some(e) = hub.roster().get(r)
    {
        let depth = usize::try_from(e.snapshot.depth.saturating_sub(1)).unwrap_or(0);
        row.write(
            buf,
            &"  ".repeat(depth.min(w / indent_share)),
            Style::default(),
        );
    }
    row
}

fn roster_rows(hub: &Hub, area: Rect, buf: &mut Buffer) {
    if let Some(text) = empty_roster(hub) {
        put(buf, area.x, area.y, area.width, text, theme::dim());
        return;
    }
    let roster = hub.roster();
    let handle_w = handle_width(hub);
    for (i, r) in hub.visible_rows().iter().enumerate() {
        let Some(e) = roster.get(*r) else { continue };
        let Ok(dy) = u16::try_from(i) else { break };
        let y = area.y + dy;
        let s = &e.snapshot;
        let history = roster.is_history(*r);
        let mut row = row_start(
            hub,
            *r,
            history,
            Rect::new(area.x, y, area.width, 1),
            buf,
            4,
        );
        // The handle says the generation after a first one (`0b6a1f3e@2`).
        row.write(buf, &format!("{:<handle_w$} ", r.handle()), theme::dim());
        row.write(
            buf,
            &format!("{:<10}", s.status.as_str()),
            theme::status(s.status),
        );
        if let Some(l) = Liveness::of(e, hub.now, hub.options.stall_after_ms) {
            row.write(buf, &format!("{} ", l.label()), theme::warning());
        }
        row.write(buf, &format!("{:<8}", short_role(s.profile)), theme::dim());
        // The actual lease, as the registry reports it (never inferred from the role).
        if s.writer_lease {
            row.write(buf, "✎ ", theme::warning());
        }
        // The headline gets the room it needs; the stats that do not fit beside it are left
        // to the details pane, least telling first (tokens, requests, cost, elapsed).
        let headline = e.headline.as_str();
        let need = width(headline);
        // (drop order, text), in display order.
        let telemetry = &s.telemetry;
        let mut parts: Vec<(u8, String)> = Vec::new();
        if let Some(requests) = telemetry.requests {
            parts.push((2, format!("{requests} req")));
        }
        if let Some(tokens) = telemetry.tokens {
            parts.push((3, format!("{} tok", count(tokens.total))));
        }
        if let Some(cost) = telemetry.cost {
            parts.push((1, format!("${cost:.3}")));
        }
        parts.push((0, duration(elapsed(s, hub.now))));
        let mut st = String::new();
        for keep_below in (0..=4u8).rev() {
            let shown: Vec<&str> = parts
                .iter()
                .filter(|(rank, _)| *rank < keep_below)
                .map(|(_, text)| text.as_str())
                .collect();
            let candidate = if shown.is_empty() {
                String::new()
            } else {
                format!(" {}", shown.join(" "))
            };
            if shown.is_empty() || row.left >= need + width(&candidate) {
                st = candidate;
                break;
            }
        }
        let room = row.left.saturating_sub(width(&st));
        let fitted = fit(headline, room);
        let pad = " ".repeat(room.saturating_sub(width(&fitted)));
        row.write(buf, &format!("{fitted}{pad}"), Style::default());
        row.write(buf, &st, theme::dim());
    }
}

/// The message of an empty roster, if it is empty.
fn empty_roster(hub: &Hub) -> Option<&'static str> {
    let roster = hub.roster();
    if !roster.rows().is_empty() {
        return None;
    }
    Some(if !hub.loaded {
        "reading the registry…"
    } else if roster.is_empty() {
        "no subagents yet"
    } else {
        "nothing matches the filter"
    })
}

/// The widest handle among the roster's rows, so the columns after it line up.
fn handle_width(hub: &Hub) -> usize {
    hub.roster()
        .rows()
        .iter()
        .map(|r| r.handle_len())
        .max()
        .unwrap_or(0)
}

/// The compact roster: one line per row (status mark, handle, role, status, then the
/// headline and elapsed time as room allows), the selection highlighted.
fn compact_roster_rows(hub: &Hub, area: Rect, buf: &mut Buffer) {
    if let Some(text) = empty_roster(hub) {
        put(buf, area.x, area.y, area.width, text, theme::dim());
        return;
    }
    let roster = hub.roster();
    let handle_w = handle_width(hub);
    for (i, r) in hub.visible_rows().iter().enumerate() {
        let Some(e) = roster.get(*r) else { continue };
        let Ok(dy) = u16::try_from(i) else { break };
        let y = area.y + dy;
        let s = &e.snapshot;
        let history = roster.is_history(*r);
        let mut row = row_start(
            hub,
            *r,
            history,
            Rect::new(area.x, y, area.width, 1),
            buf,
            8,
        );
        row.write(
            buf,
            &format!("{} ", status_glyph(s.status)),
            theme::status(s.status),
        );
        row.write(buf, &format!("{:<handle_w$} ", r.handle()), theme::dim());
        row.write(buf, &format!("{:<8}", short_role(s.profile)), theme::dim());
        row.write(
            buf,
            &format!("{:<10}", s.status.as_str()),
            theme::status(s.status),
        );
        if let Some(l) = Liveness::of(e, hub.now, hub.options.stall_after_ms) {
            row.write(buf, &format!("{} ", l.label()), theme::warning());
        }
        if s.writer_lease {
            row.write(buf, "✎ ", theme::warning());
        }
        let clock = format!(" {}", duration(elapsed(s, hub.now)));
        let headline = e.headline.as_str();
        let room = row.left.saturating_sub(width(&clock));
        if room >= 8 {
            let fitted = fit(headline, room);
            let pad = " ".repeat(room.saturating_sub(width(&fitted)));
            row.write(buf, &format!("{fitted}{pad}"), Style::default());
            row.write(buf, &clock, theme::dim());
        } else {
            row.write(buf, headline, Style::default());
        }
    }
}

fn tabs(hub: &Hub, area: Rect, buf: &mut Buffer) {
    let mut x = area.x;
    let end = area.x + area.width;
    for pane in Pane::ALL {
        let style = if pane == hub.pane() {
            theme::title().add_modifier(Modifier::REVERSED)
        } else {
            theme::dim()
        };
        let label = format!(" {} ", pane.name());
        x += put(buf, x, area.y, end.saturating_sub(x), &label, style);
        x += put(buf, x, area.y, end.saturating_sub(x), " ", Style::default());
    }
    let rows = hub.pane_len(hub.pane());
    let offset = hub.offset(hub.pane());
    let position = format!("{}/{rows}", (offset + usize::from(area.height)).min(rows));
    let (state, style) = match hub.pane() {
        Pane::Thread if hub.is_live() => ("LIVE", theme::live()),
        Pane::Thread => ("READING", theme::warning()),
        _ => ("", Style::default()),
    };
    let text = if state.is_empty() {
        format!(" row {position}")
    } else {
        format!(" {state} · row {position}")
    };
    let _ = put(buf, x, area.y, end.saturating_sub(x), &text, style);
}

fn pane(hub: &Hub, area: Rect, buf: &mut Buffer) {
    let placeholder = |buf: &mut Buffer, text: &str| {
        put(buf, area.x, area.y, area.width, text, theme::dim());
    };
    let Some(selected) = hub.selected() else {
        placeholder(buf, "select a generation with ↑↓");
        return;
    };
    if matches!(hub.pane(), Pane::Thread | Pane::Tools) {
        if let Some(e) = hub.transcript_error() {
            placeholder(buf, &format!("transcript unavailable: {e}"));
            return;
        }
        if !hub.transcript_loaded() {
            placeholder(buf, &format!("reading the transcript of {selected}…"));
            return;
        }
    }
    let h = usize::from(area.height);
    let offset = hub.offset(hub.pane());
    if hub.pane_len(hub.pane()) == 0 {
        let text = match hub.pane() {
            Pane::Tools => "no tool calls in this generation",
            _ => "no messages recorded for this generation (none before its session starts)",
        };
        placeholder(buf, text);
        return;
    }
    let rows = hub.pane_rows(hub.pane(), offset, h);
    for (i, (kind, text)) in rows.iter().enumerate() {
        let Ok(dy) = u16::try_from(i) else { break };
        put(
            buf,
            area.x,
            area.y + dy,
            area.width,
            text,
            kind_style(*kind),
        );
    }
}

fn footer(hub: &Hub, area: Rect, buf: &mut Buffer) {
    let w = usize::from(area.width);
    match hub.mode() {
        Mode::Filter { .. } => {
            let text = format!("/{}▏", SafeText::line(hub.filter_text()));
            put(
                buf,
                area.x,
                area.y,
                area.width,
                &tail(&text, w),
                Style::default(),
            );
        }
        Mode::Command { input } => {
            let text = format!(":{}▏", SafeText::line(input));
            put(
                buf,
                area.x,
                area.y,
                area.width,
                &tail(&text, w),
                Style::default(),
            );
        }
        Mode::Prompt(prompt) => {
            if !hub.prompt_fits() {
                put(
                    buf,
                    area.x,
                    area.y,
                    area.width,
                    "enlarge the terminal to see the target · Esc cancels",
                    theme::warning(),
                );
                return;
            }
            let head = prompt_head(hub, prompt);
            let style = match prompt {
                Prompt::Stop { target } if hub.stop_refusal(*target).is_some() => theme::error(),
                Prompt::Stop { .. } | Prompt::Bulk { .. } => theme::warning(),
                _ => theme::title(),
            };
            let x = area.x + put(buf, area.x, area.y, area.width, &head, style);
            if let Prompt::Steer { input, .. } | Prompt::Message { input, .. } = prompt {
                let room = w.saturating_sub(width(&head));
                // A pasted multi-line text stays one input; its line breaks show as ↵.
                let shown = SafeText::line(&input.replace('\n', "↵"));
                let text = tail(&format!("{shown}▏"), room);
                put(
                    buf,
                    x,
                    area.y,
                    u16::try_from(room).unwrap_or(0),
                    &text,
                    Style::default(),
                );
            }
        }
        Mode::Browse => {
            if let Some(n) = hub.notice() {
                let style = match n.kind {
                    NoticeKind::Info => Style::default(),
                    NoticeKind::Refusal => theme::warning(),
                    NoticeKind::Error => theme::error(),
                };
                put(buf, area.x, area.y, area.width, n.text.as_str(), style);
                return;
            }
            let hints = format!(
                "↑↓ select · Tab pane · j/k scroll · / filter · : command · space mark · s steer · m message · w wait {WAIT_MS}ms · x stop · p park · q quit"
            );
            put(buf, area.x, area.y, area.width, &hints, theme::dim());
        }
    }
}

fn bulk_overlay(
    hub: &Hub,
    action: &Bulk,
    targets: &[ChildRef],
    offset: usize,
    area: Rect,
    buf: &mut Buffer,
) {
    let w = area.width.saturating_sub(4).min(120);
    let list_h = u16::try_from(targets.len()).unwrap_or(u16::MAX);
    let h = list_h.saturating_add(3).min(area.height.saturating_sub(3));
    if w < 10 || h < 4 {
        return;
    }
    let rect = Rect::new(area.x + (area.width - w) / 2, area.y + 1, w, h);
    Clear.render(rect, buf);
    let verb = match action {
        Bulk::Stop => "stop".to_owned(),
        Bulk::Steer(text) => format!("steer \"{}\"", fit(text, 30)),
    };
    let title = fit(
        &format!(" {verb} · {} targets ", targets.len()),
        usize::from(w.saturating_sub(2)),
    );
    let block = Block::default()
        .borders(Borders::ALL)
        .border_style(theme::border())
        .title(title);
    let inner = block.inner(rect);
    block.render(rect, buf);
    let rows = usize::from(inner.height.saturating_sub(1));
    let start = offset.min(targets.len().saturating_sub(rows));
    for (i, r) in targets.iter().skip(start).take(rows).enumerate() {
        let Ok(dy) = u16::try_from(i) else { break };
        let (status, headline) = hub.roster().get(*r).map_or(("unknown", ""), |e| {
            (e.snapshot.status.as_str(), e.headline.as_str())
        });
        let (note, style) = match hub.bulk_refusal(action, *r) {
            None => (String::new(), Style::default()),
            Some(_) => (" · will be refused".to_owned(), theme::warning()),
        };
        let text = format!("{r} · {status}{note} · {headline}");
        put(buf, inner.x, inner.y + dy, inner.width, &text, style);
    }
    let more = if targets.len() > rows {
        format!(
            "{}–{} of {} · j/k scroll · ",
            start + 1,
            (start + rows).min(targets.len()),
            targets.len()
        )
    } else {
        String::new()
    };
    put(
        buf,
        inner.x,
        inner.y + inner.height.saturating_sub(1),
        inner.width,
        &format!("{more}y confirm · n/Esc cancel"),
        theme::title(),
    );
}

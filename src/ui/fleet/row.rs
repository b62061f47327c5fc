//! The text of one fleet line: tree rows, the header, the collapsed queue, the overflow
//! count and the finished record printed above the viewport.

use ratatui::text::{Line, Span};

use crate::core::{ChildSnapshot, Millis, Status, Telemetry};
use crate::text::{SafeText, fit};
use crate::ui::fleet::fit_spans;
use crate::ui::theme;

/// Admission to disposal, or to `now` while the generation lasts.
pub fn elapsed(s: &ChildSnapshot, now: Millis) -> String {
    crate::text::elapsed_text(s.ended_at.unwrap_or(now).saturating_sub(s.created_at))
}

pub fn glyph(status: Status) -> &'static str {
    match status {
        Status::Queued => "⋯",
        Status::Setup => "◌",
        Status::Running => "●",
        Status::Pausing | Status::Paused => "‖",
        Status::Draining => "◍",
        Status::Settled => "✓",
        Status::Failed => "✗",
        Status::Cancelled => "⊘",
    }
}

/// Direct stats; a `null` (unknown) value is left out, a reported zero is shown.
/// Requests are `req`, never turns; no context percentage is derived.
pub fn stats(t: &Telemetry, tool_calls: u32) -> Vec<String> {
    let mut out = Vec::new();
    if let Some(r) = t.requests {
        out.push(format!("{r} req"));
    }
    match tool_calls {
        0 => {}
        1 => out.push("1 tool".to_owned()),
        n => out.push(format!("{n} tools")),
    }
    if let Some(tokens) = t.tokens {
        out.push(format!("{} tok", crate::text::compact_count(tokens.total)));
    }
    if let Some(cost) = t.cost {
        if cost < 1.0 {
            out.push(format!("${cost:.4}"));
        } else {
            out.push(format!("${cost:.2}"));
        }
    }
    out
}

/// The first line of untrusted text, cleaned.
fn headline(raw: &str) -> String {
    let first = raw.trim().lines().next().unwrap_or("");
    SafeText::line(first).into_string()
}

/// Newest activity; for a terminal row its error or result headline.
fn latest(s: &ChildSnapshot) -> Option<String> {
    let text = match s.status {
        Status::Failed | Status::Cancelled => s.error.as_deref().or(s.activity.as_deref()),
        Status::Settled => s.result.as_deref().or(s.activity.as_deref()),
        _ => s.activity.as_deref().or(s.progress.as_deref()),
    }?;
    let line = headline(text);
    (!line.is_empty()).then_some(line)
}

fn status_text(s: &ChildSnapshot) -> String {
    match (s.status, s.pause_reason) {
        (Status::Paused | Status::Pausing, Some(reason)) => {
            let reason = match reason {
                crate::core::PauseReason::Deadline => "deadline",
                crate::core::PauseReason::AncestorDeadline => "ancestor deadline",
            };
            format!("{} ({reason})", s.status)
        }
        _ => s.status.to_string(),
    }
}

/// The common part of a tree row and a finished record.
fn body(
    s: &ChildSnapshot,
    now: Millis,
    width: usize,
    indent: usize,
    identity: Option<String>,
) -> Vec<Span<'static>> {
    let status_style = theme::status(s.status);
    let mut spans = vec![
        Span::raw(" ".repeat(indent)),
        Span::styled(format!("{} ", glyph(s.status)), status_style),
        Span::styled(s.profile.as_str().to_owned(), theme::title()),
        Span::raw(" "),
    ];
    // The headline gets about a third of a wide line, never less than a few columns.
    let cap = (width / 3).max(12);
    spans.push(Span::raw(fit(&headline(&s.assignment), cap)));
    spans.push(Span::raw("  "));
    spans.push(Span::styled(status_text(s), status_style));
    spans.push(Span::raw(format!(" {}", elapsed(s, now))));
    // The lease and the identity matter more than the usage: they go first so narrower
    // lines keep them.
    if s.writer_lease {
        spans.push(Span::styled(" ✎ writer", theme::warning()));
    }
    if let Some(identity) = identity {
        spans.push(Span::styled(format!("  {identity}"), theme::dim()));
    }
    for stat in stats(&s.telemetry, s.tool_calls) {
        spans.push(Span::styled(format!(" · {stat}"), theme::dim()));
    }
    if let Some(latest) = latest(s) {
        spans.push(Span::styled(format!("  — {latest}"), theme::dim()));
    }
    spans
}

/// One tree row, indented by real depth (depth 1 is flush left).
pub fn tree_row(s: &ChildSnapshot, now: Millis, width: usize) -> Line<'static> {
    let indent = 2 * usize::try_from(s.depth.saturating_sub(1)).unwrap_or(0);
    fit_spans(body(s, now, width, indent, None), width)
}

/// The record line printed above the viewport when a generation finishes: no indentation
/// (the scrollback is in finishing order, not tree order), with the exact identity.
pub fn finished_line(s: &ChildSnapshot, width: usize) -> Line<'static> {
    let now = s.ended_at.unwrap_or(s.created_at);
    fit_spans(
        body(s, now, width, 0, Some(s.child_ref().to_string())),
        width,
    )
}

/// `Subagents · 2 running · 1 queued · …`: current counts by actual status.
pub fn header(all: &[&ChildSnapshot], width: usize) -> Line<'static> {
    let order = [
        Status::Setup,
        Status::Running,
        Status::Pausing,
        Status::Paused,
        Status::Draining,
        Status::Queued,
        Status::Settled,
        Status::Failed,
        Status::Cancelled,
    ];
    let mut spans = vec![Span::styled("Subagents", theme::title())];
    for status in order {
        let n = all.iter().filter(|s| s.status == status).count();
        if n > 0 {
            spans.push(Span::styled(" · ", theme::dim()));
            spans.push(Span::styled(format!("{n} {status}"), theme::status(status)));
        }
    }
    fit_spans(spans, width)
}

/// Queued entries as one count, with the roles they are for.
pub fn queued_line(queued: &[&ChildSnapshot], width: usize) -> Line<'static> {
    let mut roles: Vec<(&str, usize)> = Vec::new();
    for s in queued {
        let role = s.profile.as_str();
        match roles.iter_mut().find(|(r, _)| *r == role) {
            Some((_, n)) => *n += 1,
            None => roles.push((role, 1)),
        }
    }
    let detail = roles
        .iter()
        .map(|(r, n)| format!("{r} {n}"))
        .collect::<Vec<_>>()
        .join(" · ");
    fit_spans(
        vec![
            Span::styled(
                format!("{} {} queued", glyph(Status::Queued), queued.len()),
                theme::status(Status::Queued),
            ),
            Span::styled(format!(" ({detail})"), theme::dim()),
        ],
        width,
    )
}

/// `+N more`: rows that did not fit the height budget.
pub fn overflow_line(n: usize, width: usize) -> Line<'static> {
    fit_spans(
        vec![Span::styled(format!("+{n} more"), theme::dim())],
        width,
    )
}

//! The details pane: the full snapshot of the selected generation, cleaned.

use std::fmt::Write as _;

use serde_json::Value;

use super::format::{clock, count, duration, elapsed, moment, relative};
use super::roster::{Entry, Liveness};
use super::transcript::{Line, RowKind};
use crate::core::{ChildSnapshot, Millis, Presence};
use crate::text::SafeText;

fn field(out: &mut Vec<Line>, name: &str, value: &str) {
    out.push(Line {
        kind: RowKind::Body,
        text: SafeText::line(&format!("{name:<12}{value}")),
    });
}

fn block(out: &mut Vec<Line>, name: &str, text: &str) {
    out.push(Line {
        kind: RowKind::Assistant,
        text: SafeText::line(name),
    });
    for line in SafeText::lines(text).as_str().split('\n') {
        out.push(Line {
            kind: RowKind::Body,
            text: SafeText::line(&format!("  {line}")),
        });
    }
}

fn json_fields(value: &Value) -> String {
    match value {
        Value::Object(map) => map
            .iter()
            .map(|(k, v)| format!("{k} {v}"))
            .collect::<Vec<_>>()
            .join(" · "),
        other => other.to_string(),
    }
}

/// Everything the registry reported for one generation.
pub struct Context {
    pub history_of: Option<u32>,
    pub presence: Option<Presence>,
    pub now: Millis,
    pub stall_after_ms: Millis,
    pub utc: bool,
}

#[allow(clippy::too_many_lines)] // one field after another, in display order
pub fn lines(entry: &Entry, cx: &Context) -> Vec<Line> {
    let s: &ChildSnapshot = &entry.snapshot;
    let mut out = Vec::new();
    field(&mut out, "identity", &s.child_ref().to_string());
    let parent = match s.parent_generation {
        Some(g) => format!("{}@{g}", s.parent_id),
        None => format!("{} (the root runtime)", s.parent_id),
    };
    field(&mut out, "parent", &parent);
    field(&mut out, "depth", &s.depth.to_string());
    field(&mut out, "role", s.profile.as_str());
    let mut status = s.status.as_str().to_owned();
    if let Some(l) = Liveness::of(entry, cx.now, cx.stall_after_ms) {
        let _ = write!(status, " · {}", l.label());
    }
    field(&mut out, "status", &status);
    let presence = match (cx.history_of, cx.presence) {
        (Some(current), _) => format!("historical generation (current is {current})"),
        (None, Some(p)) => p.as_str().to_owned(),
        (None, None) => "unknown".to_owned(),
    };
    field(&mut out, "presence", &presence);
    field(
        &mut out,
        "disposed",
        &format!(
            "{} · writer lease {}",
            if s.disposed { "yes" } else { "no" },
            if s.writer_lease { "held" } else { "not held" }
        ),
    );
    let model = match (&s.model, &s.effort) {
        (Some(m), Some(e)) => format!("{m} · effort {e}"),
        (Some(m), None) => m.clone(),
        (None, _) => "not reported".to_owned(),
    };
    field(&mut out, "model", &model);
    // The initial pair stays visible when recovery moved the worker to another route.
    if s.requested_model.is_some()
        && (s.requested_model != s.model || s.requested_effort != s.effort)
    {
        let requested = match (&s.requested_model, &s.requested_effort) {
            (Some(m), Some(e)) => format!("{m} · effort {e}"),
            (Some(m), None) => m.clone(),
            (None, _) => String::new(),
        };
        field(&mut out, "requested", &requested);
    }
    if let Some(l) = &s.logical {
        field(
            &mut out,
            "logical",
            &format!(
                "{} (route {} via {}, {} switch(es)) · reason: {}",
                l.model, l.route_model, l.route_provider, l.switches, l.reason
            ),
        );
    }
    if let Some(p) = &s.prewalk {
        field(
            &mut out,
            "prewalk",
            &serde_json::to_value(p)
                .map(|v| json_fields(&v))
                .unwrap_or_default(),
        );
    }
    field(&mut out, "cwd", &s.cwd);
    if let Some(launch) = s.telemetry.launch {
        field(&mut out, "process", launch.words());
    }
    field(
        &mut out,
        "elapsed",
        &format!(
            "{}{}",
            duration(elapsed(s, cx.now)),
            if s.ended_at.is_some() {
                " (admission to disposal)"
            } else {
                " (since admission)"
            }
        ),
    );
    let mut admitted = moment(s.created_at, cx.now, cx.utc);
    if let Some(end) = s.ended_at {
        let _ = write!(admitted, " · ended {}", moment(end, cx.now, cx.utc));
    }
    field(&mut out, "admitted", &admitted);
    field(
        &mut out,
        "window",
        &format!(
            "#{} · started {} · deadline {} ({})",
            s.window.number,
            moment(s.window.started_at, cx.now, cx.utc),
            if s.window.deadline_at >= cx.now {
                relative(s.window.deadline_at, cx.now)
            } else {
                format!("passed {}", relative(s.window.deadline_at, cx.now))
            },
            clock(s.window.deadline_at, cx.now, cx.utc)
        ),
    );
    field(
        &mut out,
        "limits",
        &serde_json::to_value(s.limits)
            .map(|v| json_fields(&v))
            .unwrap_or_default(),
    );
    if let Some(r) = s.limit_reason {
        field(&mut out, "limit hit", &format!("{r:?}").to_lowercase());
    }
    if let Some(r) = s.pause_reason {
        field(
            &mut out,
            "paused by",
            &serde_json::to_value(r)
                .ok()
                .and_then(|v| v.as_str().map(str::to_owned))
                .unwrap_or_default(),
        );
    }
    if s.retained_context {
        field(&mut out, "context", "retained for resume");
    }
    let t = &s.telemetry;
    field(
        &mut out,
        "counters",
        &format!(
            "requests {} · tool calls {} · spawns {}",
            t.requests.map_or("unknown".to_owned(), |r| r.to_string()),
            s.tool_calls,
            s.spawns
        ),
    );
    if let Some(tok) = t.tokens {
        field(
            &mut out,
            "tokens",
            &format!(
                "input {} · output {} · cache read {} · cache write {} · total {}",
                count(tok.input),
                count(tok.output),
                count(tok.cache_read),
                count(tok.cache_write),
                count(tok.total)
            ),
        );
    }
    if let Some(cost) = t.cost {
        field(
            &mut out,
            "cost",
            &format!("${cost:.4} (this generation only)"),
        );
    }
    if let Some(c) = t.context {
        // Shown only as the worker reported it; never computed here.
        let pct = c
            .percent
            .map(|p| format!(" ({p:.1}% reported)"))
            .unwrap_or_default();
        let used = c.tokens.map_or("?".to_owned(), count);
        field(
            &mut out,
            "context",
            &format!("{used} of {}{pct}", count(c.context_window)),
        );
    }
    let tools: Vec<&str> = s.tools.iter().map(|t| t.as_str()).collect();
    field(&mut out, "tools", &tools.join(", "));
    if !s.leaf_tools.is_empty() {
        field(&mut out, "leaf tools", &s.leaf_tools.join(", "));
    }
    if !s.skills.is_empty() {
        field(&mut out, "skills", &s.skills.join(", "));
    }
    if !s.capability_denials.is_empty() {
        out.push(Line {
            kind: RowKind::Assistant,
            text: SafeText::line("capability denials"),
        });
        for d in &s.capability_denials {
            out.push(Line {
                kind: RowKind::Body,
                text: SafeText::line(&format!("  {} — {}", d.name, d.reason)),
            });
        }
    }
    block(&mut out, "assignment", &s.assignment);
    if let Some(a) = &s.activity {
        block(&mut out, "activity", a);
    }
    if let Some(p) = &s.progress {
        block(&mut out, "progress", p);
    }
    if let Some(r) = &s.result {
        block(&mut out, "result", r);
    }
    if let Some(e) = &s.error {
        block(&mut out, "error", e);
    }
    if let Some(o) = &s.outcome {
        let mut text = format!(
            "validation {:?} · attempts {} · finalized {}",
            o.validation, o.attempts, o.finalized
        )
        .to_lowercase();
        for e in &o.errors {
            let _ = write!(text, "\nerror: {e}");
        }
        if let Some(v) = &o.value {
            text.push('\n');
            text.push_str(
                &serde_json::to_string_pretty(&super::transcript::clean_json(v))
                    .unwrap_or_default(),
            );
        }
        block(&mut out, "structured outcome", &text);
    }
    if let Some(a) = &s.artifacts {
        let mut text = String::new();
        for (name, path) in [
            ("text", &a.text),
            ("structured", &a.structured),
            ("error", &a.error),
        ] {
            if let Some(p) = path {
                let _ = writeln!(text, "{name}: {p}");
            }
        }
        block(&mut out, "artifacts", text.trim_end());
    }
    if let Some(t) = &s.transcript {
        field(&mut out, "transcript", t);
    }
    out
}

//! `slate demo`: print the simulated run as a timeline and an outcome table.

use std::collections::HashMap;
use std::fmt::Write as _;

use uuid::Uuid;

use crate::cli::{Error, ExitCode, Printer};
use crate::core::{ChildRef, ChildSnapshot};
use crate::demo::{DemoRun, TimelineEntry};
use crate::text::{SafeText, fit, pad, width};

pub fn run(printer: &Printer, seed: u64) -> Result<ExitCode, Error> {
    let run = crate::demo::run(seed);
    if printer.json() {
        printer.value(&run)?;
    } else {
        printer.out(&render(&run, terminal_columns()))?;
    }
    Ok(ExitCode::Ok)
}

fn terminal_columns() -> usize {
    std::env::var("COLUMNS")
        .ok()
        .and_then(|c| c.parse().ok())
        .filter(|&c: &usize| c >= 40)
        .unwrap_or(120)
}

/// Short labels (`#1`, `#1 g2`) numbered in admission order, for readability; the outcome
/// table carries every full `UUID@generation`.
struct Labels {
    number: HashMap<Uuid, usize>,
}

impl Labels {
    fn new(run: &DemoRun) -> Self {
        let mut number = HashMap::new();
        for s in &run.generations {
            let next = number.len() + 1;
            number.entry(s.id).or_insert(next);
        }
        Self { number }
    }

    fn label(&self, r: ChildRef) -> String {
        let n = self.number.get(&r.id).copied().unwrap_or(0);
        if r.generation == 1 {
            format!("#{n}")
        } else {
            format!("#{n} g{}", r.generation)
        }
    }
}

fn seconds(ms: u64) -> String {
    format!("{}.{:03}s", ms / 1000, ms % 1000)
}

pub fn render(run: &DemoRun, columns: usize) -> String {
    let labels = Labels::new(run);
    let mut out = String::new();
    let p = &run.policy;
    let _ = writeln!(
        out,
        "Slate demo · a simulated fleet in virtual time (no network, no credentials)"
    );
    let _ = writeln!(out, "root runtime {}", run.root_id);
    let policy = format!(
        "policy: concurrency {} · queue {} · batch {} · depth {} · spawns {} · deadline {}s · requests {} · tools {}",
        p.concurrency,
        p.queue,
        p.batch,
        p.depth,
        p.spawns,
        p.deadline_ms / 1000,
        p.requests,
        p.tools
    );
    let _ = writeln!(out, "{}\n", fit(&policy, columns));

    let _ = writeln!(out, "Agents");
    let mut seen = Vec::new();
    for s in run.generations.iter().filter(|s| s.generation == 1) {
        if seen.contains(&s.id) {
            continue;
        }
        seen.push(s.id);
        let indent = "  ".repeat(s.depth as usize);
        let head = format!(
            "{indent}{:<5} {:<15}",
            labels.label(s.child_ref()),
            s.profile.as_str()
        );
        let room = columns.saturating_sub(width(&head) + 1).max(10);
        let _ = writeln!(
            out,
            "{head} {}",
            fit(SafeText::line(&s.assignment).as_str(), room)
        );
    }

    let _ = writeln!(out, "\nTimeline (virtual time)");
    for TimelineEntry { at, child, event } in &run.timeline {
        let who = child.map_or(String::new(), |r| labels.label(r));
        let head = format!("  {:>8}  {:<6}", seconds(*at), who);
        let room = columns.saturating_sub(width(&head) + 1).max(10);
        let _ = writeln!(out, "{head} {}", fit(SafeText::line(event).as_str(), room));
    }

    let _ = writeln!(
        out,
        "\nOutcomes (every generation; controls take the full UUID@generation shown under each row)"
    );
    let header = format!(
        "  {:<6} {:<15} {:<10} {:>4} {:>7} {:>8} {:>5} {:>8}  ",
        "agent", "role", "status", "req", "tokens", "cost", "tools", "elapsed"
    );
    let room = columns.saturating_sub(width(&header)).max(12);
    let _ = writeln!(out, "{header}result / error");
    for s in &run.generations {
        let _ = writeln!(out, "{}", outcome_row(&labels, s, room));
        let _ = writeln!(out, "  {:<6} {}", "", s.child_ref());
    }
    out
}

fn outcome_row(labels: &Labels, s: &ChildSnapshot, room: usize) -> String {
    let t = &s.telemetry;
    let requests = t.requests.map_or("—".to_owned(), |r| r.to_string());
    let tokens = t.tokens.map_or("—".to_owned(), |k| k.total.to_string());
    let cost = t.cost.map_or("—".to_owned(), |c| format!("${c:.4}"));
    let elapsed = s.ended_at.map_or("—".to_owned(), |end| {
        seconds(end.saturating_sub(s.created_at))
    });
    let detail = match (&s.error, &s.result) {
        (Some(e), _) => format!("error: {e}"),
        (None, Some(r)) => r.clone(),
        (None, None) => String::new(),
    };
    format!(
        "  {} {} {} {:>4} {:>7} {:>8} {:>5} {:>8}  {}",
        pad(&labels.label(s.child_ref()), 6),
        pad(s.profile.as_str(), 15),
        pad(s.status.as_str(), 10),
        requests,
        tokens,
        cost,
        s.tool_calls,
        elapsed,
        fit(SafeText::line(&detail).as_str(), room)
    )
}

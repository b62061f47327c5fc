//! What `slate handoff` and `slate resume` report: the serde types behind `--json` (schema in
//! docs/handoff.md), and the fleet a handoff snapshots.

use std::fmt::Write as _;
use std::path::PathBuf;

use serde::Serialize;
use serde_json::{Value, json};

use super::records::{KickoffSource, PauseReason, Purpose};
use super::rules::ClearedPause;
use crate::policy::Problem;
use crate::text::SafeText;

/// Where the snapshot's threads came from.
#[derive(Clone, Debug, Default, PartialEq, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Fleet {
    /// `coordinator` or `none`.
    pub source: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub parent_id: Option<String>,
    #[serde(skip)]
    pub threads: Vec<Value>,
    #[serde(skip)]
    pub episodes: Vec<Value>,
    pub thread_count: usize,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
}

impl Fleet {
    /// No coordinator serves the directory: the snapshot holds no threads.
    pub fn none(why: &str) -> Self {
        Self {
            source: "none",
            note: Some(format!("{why}; the snapshot holds no threads")),
            ..Self::default()
        }
    }

    /// Threads and episodes from a coordinator's `status` answer.
    pub fn from_status(status: &Value) -> Self {
        let children = status["children"].as_array().cloned().unwrap_or_default();
        let threads: Vec<Value> = children
            .iter()
            .map(|c| {
                // The result headline: the first line of the result, or of the error.
                let headline = c["result"]
                    .as_str()
                    .or_else(|| c["error"].as_str())
                    .and_then(|t| t.trim().lines().next())
                    .map(|line| crate::core::clip_chars(line, 120));
                json!({
                    "id": c["id"], "generation": c["generation"], "status": c["status"],
                    "profile": c["profile"], "depth": c["depth"],
                    "assignment": c["assignment"].as_str().map(|a| crate::core::clip_chars(a, 120)),
                    "headline": headline,
                })
            })
            .collect();
        let episodes = children
            .iter()
            .filter(|c| c["artifacts"].is_object())
            .map(|c| {
                json!({
                    "thread": format!("{}@{}", c["id"].as_str().unwrap_or(""), c["generation"]),
                    "artifacts": c["artifacts"],
                })
            })
            .collect();
        Self {
            source: "coordinator",
            parent_id: status["parentId"].as_str().map(str::to_owned),
            thread_count: threads.len(),
            threads,
            episodes,
            note: None,
        }
    }
}

/// `slate handoff --json`.
#[derive(Clone, Debug, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct HandoffReport {
    pub session_id: String,
    pub session_file: PathBuf,
    pub successor_session_id: String,
    pub successor_file: PathBuf,
    pub attempt_id: String,
    pub purpose: Purpose,
    /// The purpose, and `context-budget` when the handoff happened during that pause.
    pub causes: Vec<&'static str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub retry_of: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub replaced_purpose: Option<Purpose>,
    pub fleet: Fleet,
    pub episodes: usize,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub kickoff: Option<KickoffReport>,
    pub adoption: AdoptionReport,
    /// `--from-pi`: the kickoff claimed in the successor for pi to send (it is not written).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub claimed_kickoff: Option<ClaimedKickoff>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub warnings: Vec<String>,
    /// What the person sees in the successor (pi shows it as Slate's handoff message): the
    /// handoff, the fleet it carries, and how adoption went (with the fix when it paused).
    pub notice: String,
}

/// A kickoff that is claimed and left for the host pi to send (`--from-pi`).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ClaimedKickoff {
    pub id: String,
    pub text: String,
}

#[derive(Clone, Debug, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct KickoffReport {
    pub id: String,
    pub source: KickoffSource,
    pub chars: usize,
}

/// How the successor took the handoff.
#[derive(Clone, Debug, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct AdoptionReport {
    /// `adopted`, `paused`, or `failed` (the successor keeps its handoff entry; `slate resume
    /// --session SUCCESSOR` adopts it later).
    pub status: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub pause_reason: Option<PauseReason>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub problems: Vec<Problem>,
    /// `delivered`, `claimed` (`--from-pi`: claimed, pi sends it), `pending` or `none`.
    pub kickoff: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// A paused adoption: how to make the model permitted (e.g. the `slate.json` entry).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub fix: Option<String>,
}

/// `slate resume --json` (session form). It says that the pause cleared, never that a turn
/// started.
#[derive(Clone, Debug, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ResumeReport {
    pub session_id: String,
    pub session_file: PathBuf,
    pub pause_cleared: bool,
    pub pause_reason: ClearedPause,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub thinking_level: Option<String>,
    /// `claimed` (claimed and written in the same append as the unpaused state; with
    /// `--from-pi` claimed and left to pi, see `claimed_kickoff`), `already-claimed` (never
    /// replayed) or `none`. A failed write is an error instead: nothing is cleared.
    pub kickoff: &'static str,
    /// `--from-pi`: the claimed kickoff for pi to send.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub claimed_kickoff: Option<ClaimedKickoff>,
    /// What the person sees in the resumed session.
    pub notice: String,
}

/// `slate handoff --check --json`: whether a successor could adopt the session's model now;
/// nothing is written.
#[derive(Clone, Debug, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct AdoptionCheck {
    pub session_id: String,
    pub session_file: PathBuf,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub thinking_level: Option<String>,
    pub permitted: bool,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub problems: Vec<Problem>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub fix: Option<String>,
    /// What the person reads before deciding to hand off.
    pub notice: String,
}

/// How to resume: the slash command inside pi, the CLI elsewhere.
fn resume_hint(from_pi: bool, successor: &std::path::Path) -> String {
    if from_pi {
        "/slate resume --model provider/id [--effort LEVEL]".to_owned()
    } else {
        format!(
            "slate resume --session {} --model provider/id [--effort LEVEL]",
            successor.display()
        )
    }
}

fn problem_lines(out: &mut String, problems: &[Problem]) {
    for p in problems {
        out.push_str("\n  - ");
        out.push_str(SafeText::line(&p.to_string()).as_str());
    }
}

/// The handoff message of the successor (`HandoffReport::notice`).
pub fn handoff_notice(r: &HandoffReport, brief: Option<&str>, from_pi: bool) -> String {
    let mut t = format!(
        "Slate handed off session {} to this session {} ({}).",
        r.session_id,
        r.successor_session_id,
        r.causes.join(" during a ")
    );
    match (brief, &r.fleet.note) {
        (Some(b), _) => {
            t.push('\n');
            t.push_str(b);
        }
        (None, Some(note)) => {
            t.push_str("\nNo fleet: ");
            t.push_str(SafeText::line(note).as_str());
        }
        (None, None) => t.push_str("\nThe fleet was empty."),
    }
    let a = &r.adoption;
    match a.status {
        "adopted" => {
            t.push_str(match (&r.kickoff, a.kickoff) {
                (Some(_), "claimed" | "delivered") => {
                    "\nAdopted: the kickoff starts the first turn on this model."
                }
                _ => "\nAdopted: no kickoff; continue when you are ready.",
            });
        }
        "paused" => {
            let reason = a.pause_reason.map_or("?", PauseReason::as_str);
            let _ = write!(
                t,
                "\nPaused ({reason}): this session does not start work until the pause clears{}.",
                if a.kickoff == "pending" {
                    "; the kickoff waits until then"
                } else {
                    ""
                }
            );
            problem_lines(&mut t, &a.problems);
            if let Some(fix) = &a.fix {
                t.push_str("\nFix: ");
                t.push_str(&SafeText::lines(fix).into_string());
            }
            t.push_str("\nThen: ");
            t.push_str(&resume_hint(from_pi, &r.successor_file));
        }
        other => {
            let _ = write!(
                t,
                "\nAdoption {other}: the successor keeps its handoff entry; {} adopts it later.",
                resume_hint(from_pi, &r.successor_file)
            );
        }
    }
    if let Some(e) = &a.error {
        t.push_str("\nError: ");
        t.push_str(SafeText::line(e).as_str());
    }
    for w in &r.warnings {
        t.push_str("\nWarning: ");
        t.push_str(SafeText::line(w).as_str());
    }
    t
}

/// The message of a resumed session (`ResumeReport::notice`).
pub fn resume_notice(r: &ResumeReport) -> String {
    let reason = match r.pause_reason {
        ClearedPause::ContextBudget => "context-budget",
        ClearedPause::Adoption => "adoption",
        ClearedPause::Legacy => "legacy",
    };
    let mut t = format!("Slate resumed this session: the {reason} pause cleared");
    match (&r.model, &r.thinking_level) {
        (Some(m), Some(l)) => {
            let _ = write!(
                t,
                "; model {} (thinking {})",
                SafeText::line(m),
                SafeText::line(l)
            );
        }
        (Some(m), None) => {
            let _ = write!(t, "; model {}", SafeText::line(m));
        }
        (None, _) => t.push_str("; pi's own model"),
    }
    t.push_str(match r.kickoff {
        "claimed" => ".\nThe kickoff starts a turn.",
        "already-claimed" => {
            ".\nThe kickoff was claimed before; it is never replayed (ask for continuation)."
        }
        _ => ".\nThere is no kickoff; continue when you are ready.",
    });
    t
}

/// The preflight's words (`AdoptionCheck::notice`).
pub fn check_notice(c: &AdoptionCheck) -> String {
    let model = c.model.as_deref().map_or_else(
        || "pi's default model".to_owned(),
        |m| SafeText::line(m).into_string(),
    );
    if c.permitted {
        return format!(
            "The current model {model} is permitted by routing: a successor adopts it."
        );
    }
    let mut t = format!(
        "The current model {model} is not permitted by routing: a handoff now pauses the \
         successor until a permitted model is chosen."
    );
    problem_lines(&mut t, &c.problems);
    if let Some(fix) = &c.fix {
        t.push_str("\nFix: ");
        t.push_str(&SafeText::lines(fix).into_string());
    }
    t
}

/// The JSON Schema of what `slate --json handoff`, `slate --json handoff --check` and
/// `slate --json resume` print: one of the three reports, or the CLI's error object
/// (`{"error": {code, message, data}}`). Checked in as docs/handoff.schema.json
/// (`SLATE_BLESS=1 cargo test --test handoff_answers` regenerates it); the pi extension's
/// reader is held to it.
pub fn answer_schema() -> Value {
    let mut generator = schemars::generate::SchemaSettings::draft2020_12().into_generator();
    let handoff = generator.subschema_for::<HandoffReport>();
    let resume = generator.subschema_for::<ResumeReport>();
    let check = generator.subschema_for::<AdoptionCheck>();
    let error = generator.subschema_for::<crate::cli::printer::ErrorBody<'static>>();
    let defs = generator.take_definitions(true);
    json!({
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "title": "slate --json handoff / handoff --check / resume",
        "description": "Generated from src/handoff/report.rs by `SLATE_BLESS=1 cargo test --test handoff_answers`; see docs/handoff.md. stdout is one of the three reports, or {\"error\": CliError} when the command was refused (its exit code says which, docs/cli.md).",
        "x-handoff": handoff,
        "x-check": check,
        "x-resume": resume,
        "x-error": {"type": "object", "required": ["error"], "properties": {"error": error}},
        "$defs": defs,
    })
}

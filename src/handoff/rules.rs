//! The pure rules of handoff and resume (spec 000 "Fresh-session entry", "Project trust
//! boundary"), over an already-read session. No IO here: the runner in `run.rs` reads and
//! writes.

use std::collections::HashSet;

use serde_json::json;

use super::gate::{ModelChoice, ModelGate, Selected, parse_choice};
use super::records::{
    AttemptStatus, CLAIM_TYPE, ClaimRecord, HANDOFF_TYPE, HandoffRecord, Kickoff, KickoffSource,
    PURPOSE_TYPE, PauseReason, Purpose, PurposeRecord, STATE_TYPE, Snapshot, StateRecord,
};
use crate::policy::Problem;
use crate::store::session::Session;

/// What one session says about Slate, read from its entries.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct SessionView {
    pub session_id: String,
    /// The newest attempt of this session when it is still pending.
    pub pending: Option<PurposeRecord>,
    /// The newest saved state of this session (it takes precedence over a handoff entry).
    pub state: Option<StateRecord>,
    /// The newest handoff entry bound to this session.
    pub handoff: Option<HandoffRecord>,
    /// `sessionId`s of handoff entries bound to *other* sessions (never adopted here).
    pub foreign_handoffs: Vec<String>,
    /// Kickoff ids whose delivery was claimed in this session.
    pub claimed: HashSet<String>,
}

/// The state that governs a session.
#[derive(Clone, Debug, PartialEq)]
pub enum Effective<'a> {
    /// No Slate record for this session.
    None,
    /// A saved state (wins over any handoff entry).
    State(&'a StateRecord),
    /// A handoff entry for this session that no saved state has replaced yet.
    Handoff(&'a HandoffRecord),
}

impl SessionView {
    pub fn effective(&self) -> Effective<'_> {
        match (&self.state, &self.handoff) {
            (Some(s), _) => Effective::State(s),
            (None, Some(h)) => Effective::Handoff(h),
            (None, None) => Effective::None,
        }
    }

    /// The pause that governs the session, if any: `Some(None)` is a legacy pause (a saved
    /// state paused without a reason); an unadopted handoff counts as an `adoption` pause.
    pub fn pause(&self) -> Option<Option<PauseReason>> {
        match self.effective() {
            Effective::State(s) if s.paused => Some(s.snapshot.pause_reason),
            Effective::State(_) | Effective::None => None,
            Effective::Handoff(h) => Some(Some(
                h.snapshot.pause_reason.unwrap_or(PauseReason::Adoption),
            )),
        }
    }

    /// The kickoff still waiting, if any.
    pub fn kickoff(&self) -> Option<&Kickoff> {
        match self.effective() {
            Effective::State(s) => s.kickoff.as_ref(),
            Effective::Handoff(h) => h.kickoff.as_ref(),
            Effective::None => None,
        }
    }

    /// The snapshot the session carries (empty when none).
    pub fn snapshot(&self) -> Snapshot {
        match self.effective() {
            Effective::State(s) => s.snapshot.clone(),
            Effective::Handoff(h) => h.snapshot.clone(),
            Effective::None => Snapshot::default(),
        }
    }

    pub fn logical_model(&self) -> Option<String> {
        match self.effective() {
            Effective::State(s) => s.logical_model.clone(),
            Effective::Handoff(h) => h.logical_model.clone(),
            Effective::None => None,
        }
    }
}

/// Read the Slate records of `session`. Records bound to another session id are ignored
/// (pi's fork and clone copy entries into a new file); the newest valid record of each kind
/// along the current branch counts. An invalid newest state or handoff entry is an error —
/// Slate never falls back to an older one silently.
pub fn view(session: &Session) -> Result<SessionView, Vec<Problem>> {
    let id = session.header.id.clone();
    let file = session.path.display().to_string();
    let mut out = SessionView {
        session_id: id.clone(),
        ..SessionView::default()
    };
    let mut problems = Vec::new();
    let mut seen_state = false;
    let mut seen_handoff = false;
    let mut seen_purpose = false;
    let at = |line: usize| format!("{file}:{line}");
    for entry in session.branch().into_iter().rev() {
        let bound =
            |d: &serde_json::Value| d.get("sessionId").and_then(|v| v.as_str()) == Some(&id);
        if let Some(d) = entry.custom_data(STATE_TYPE) {
            if !seen_state && bound(d) {
                seen_state = true;
                match StateRecord::parse(d) {
                    Ok(r) => out.state = Some(r),
                    Err(p) => problems.extend(p.into_iter().map(|p| p.in_file(at(entry.line)))),
                }
            }
        } else if let Some(d) = entry.custom_data(HANDOFF_TYPE) {
            if !bound(d) {
                if let Some(other) = d.get("sessionId").and_then(|v| v.as_str()) {
                    out.foreign_handoffs.push(other.to_owned());
                }
            } else if !seen_handoff {
                seen_handoff = true;
                match HandoffRecord::parse(d) {
                    Ok(r) => out.handoff = Some(r),
                    Err(p) => problems.extend(p.into_iter().map(|p| p.in_file(at(entry.line)))),
                }
            }
        } else if let Some(d) = entry.custom_data(PURPOSE_TYPE) {
            // A damaged attempt record only loses its retry; it never blocks.
            if !seen_purpose
                && bound(d)
                && let Ok(r) = PurposeRecord::parse(d)
            {
                seen_purpose = true;
                if r.status == AttemptStatus::Pending {
                    out.pending = Some(r);
                }
            }
        } else if let Some(d) = entry.custom_data(CLAIM_TYPE)
            && let Ok(c) = ClaimRecord::parse(d)
            && c.session_id == id
        {
            out.claimed.insert(c.kickoff_id);
        }
    }
    if problems.is_empty() {
        Ok(out)
    } else {
        Err(problems)
    }
}

/// The purpose of this attempt and how it was chosen.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PurposeChoice {
    pub purpose: Purpose,
    /// The pending attempt this one retries (same purpose, kept from a failed attempt).
    pub retry_of: Option<String>,
    /// A pending purpose the explicit option replaced.
    pub replaced: Option<Purpose>,
}

/// The leading option is the purpose. Without one, a pending attempt's purpose is kept (a
/// retry); a bare new request is `user-request`. An explicit option (`--user-request`
/// included) replaces a pending purpose.
pub fn resolve_purpose(option: Option<Purpose>, pending: Option<&PurposeRecord>) -> PurposeChoice {
    match (option, pending) {
        (None, None) => PurposeChoice {
            purpose: Purpose::UserRequest,
            retry_of: None,
            replaced: None,
        },
        (None, Some(p)) => PurposeChoice {
            purpose: p.purpose,
            retry_of: Some(p.attempt_id.clone()),
            replaced: None,
        },
        (Some(o), None) => PurposeChoice {
            purpose: o,
            retry_of: None,
            replaced: None,
        },
        (Some(o), Some(p)) if o == p.purpose => PurposeChoice {
            purpose: o,
            retry_of: Some(p.attempt_id.clone()),
            replaced: None,
        },
        (Some(o), Some(p)) => PurposeChoice {
            purpose: o,
            retry_of: None,
            replaced: Some(p.purpose),
        },
    }
}

/// The causes a handoff names: its purpose (when recorded — never invented for older
/// entries), and `context-budget` too when it happens during a context-budget pause.
pub fn causes(purpose: Option<Purpose>, pause: Option<PauseReason>) -> Vec<&'static str> {
    let mut out: Vec<&'static str> = purpose.map(Purpose::as_str).into_iter().collect();
    if pause == Some(PauseReason::ContextBudget) && purpose != Some(Purpose::ContextBudget) {
        out.push(PauseReason::ContextBudget.as_str());
    }
    out
}

/// A kickoff template and where it came from.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Template {
    pub text: String,
    pub source: KickoffSource,
}

/// The kickoff: the template with `{{focus}}`, `{{purpose}}`, `{{causes}}` and
/// `{{previousSession}}` filled in; without a template, a short default when a focus is
/// given; else none. The placeholders are filled in one pass over the template: what is put in
/// is never read again, so a focus that itself holds `{{purpose}}` stays literal.
pub fn kickoff_text(
    template: Option<&Template>,
    focus: Option<&str>,
    causes: &[&str],
    previous: &str,
) -> Option<(String, KickoffSource)> {
    let purpose = causes.first().copied().unwrap_or("");
    let causes = causes.join(" during a ");
    match (template, focus) {
        (Some(t), _) => Some((
            fill(
                &t.text,
                &[
                    ("{{focus}}", focus.unwrap_or("")),
                    ("{{purpose}}", purpose),
                    ("{{causes}}", &causes),
                    ("{{previousSession}}", previous),
                ],
            ),
            t.source,
        )),
        (None, Some(f)) => Some((
            format!(
                "Slate handoff ({causes}) from session {previous}. Continue the work with this \
                 focus:\n\n{f}"
            ),
            KickoffSource::Focus,
        )),
        (None, None) => None,
    }
}

/// The fleet as the successor reads it (its kickoff and the visible handoff message): one
/// entry per thread, `UUID@generation · role · status · result headline`, with the thread's
/// artifact paths, then the episodes carried from earlier handoffs whose thread is not among
/// them. `None` when there is neither. Every value is untrusted record text, cleaned.
pub fn fleet_brief(
    threads: &[serde_json::Value],
    episodes: &[serde_json::Value],
) -> Option<String> {
    use crate::text::SafeText;
    use serde_json::Value;
    fn text(v: &Value) -> String {
        match v {
            Value::String(s) => SafeText::line(s).into_string(),
            Value::Null => String::new(),
            other => SafeText::line(&other.to_string()).into_string(),
        }
    }
    fn artifacts(episode: Option<&Value>) -> Vec<String> {
        let Some(a) = episode.and_then(|e| e.get("artifacts")) else {
            return Vec::new();
        };
        ["text", "structured", "error"]
            .iter()
            .filter_map(|k| a.get(*k).and_then(Value::as_str))
            .map(|p| SafeText::line(p).into_string())
            .collect()
    }
    if threads.is_empty() && episodes.is_empty() {
        return None;
    }
    let identity = |t: &Value| format!("{}@{}", text(&t["id"]), text(&t["generation"]));
    let episode_of = |thread: &str| {
        episodes
            .iter()
            .find(|e| e.get("thread").and_then(Value::as_str) == Some(thread))
    };
    let count = |n: usize, one: &str| format!("{n} {one}{}", if n == 1 { "" } else { "s" });
    let mut out = format!(
        "The fleet ({}; its workers stopped with the handoff, their artifacts remain):",
        count(threads.len(), "thread")
    );
    let mut listed = Vec::new();
    for t in threads {
        let id = identity(t);
        let parts: Vec<String> = [
            id.clone(),
            text(&t["profile"]),
            text(&t["status"]),
            text(&t["headline"]),
        ]
        .into_iter()
        .filter(|p| !p.is_empty())
        .collect();
        out.push_str("\n- ");
        out.push_str(&parts.join(" · "));
        let paths = artifacts(episode_of(&id));
        if !paths.is_empty() {
            out.push_str("\n  artifacts: ");
            out.push_str(&paths.join(", "));
        }
        listed.push(id);
    }
    let earlier: Vec<&Value> = episodes
        .iter()
        .filter(|e| {
            let thread = e.get("thread").and_then(Value::as_str).unwrap_or("");
            !listed.iter().any(|l| l == thread)
        })
        .collect();
    if !earlier.is_empty() {
        out.push_str("\nEpisodes carried from earlier handoffs:");
        for e in earlier {
            out.push_str("\n- ");
            out.push_str(&text(&e["thread"]));
            let paths = artifacts(Some(e));
            if !paths.is_empty() {
                out.push_str("\n  artifacts: ");
                out.push_str(&paths.join(", "));
            }
        }
    }
    Some(out)
}

/// The kickoff with the fleet: the template's `{{fleet}}` placeholder is the brief, and a
/// template without it, or the default text, gets the brief appended; with no template and no
/// focus, a fleet alone still makes a kickoff (the successor continues its work).
pub fn kickoff_with_fleet(
    template: Option<&Template>,
    focus: Option<&str>,
    causes: &[&str],
    previous: &str,
    fleet: Option<&str>,
) -> Option<(String, KickoffSource)> {
    let Some(fleet) = fleet else {
        return kickoff_text(template, focus, causes, previous);
    };
    if let Some(t) = template
        && t.text.contains("{{fleet}}")
    {
        let filled = Template {
            text: fill(&t.text, &[("{{fleet}}", "\u{0}fleet\u{0}")]),
            source: t.source,
        };
        return kickoff_text(Some(&filled), focus, causes, previous)
            .map(|(text, source)| (text.replace("\u{0}fleet\u{0}", fleet), source));
    }
    let (text, source) = kickoff_text(template, focus, causes, previous).unwrap_or_else(|| {
        (
            format!(
                "Slate handoff ({}) from session {previous}. Continue the work of this fleet.",
                causes.join(" during a ")
            ),
            KickoffSource::Fleet,
        )
    });
    Some((format!("{text}\n\n{fleet}"), source))
}

/// `template` with each placeholder of `values` replaced by its value, left to right in one
/// pass (text that is not a known placeholder is kept as it is).
fn fill(template: &str, values: &[(&str, &str)]) -> String {
    let mut out = String::with_capacity(template.len());
    let mut rest = template;
    while let Some(at) = rest.find("{{") {
        out.push_str(&rest[..at]);
        rest = &rest[at..];
        if let Some((name, value)) = values.iter().find(|(name, _)| rest.starts_with(name)) {
            out.push_str(value);
            rest = &rest[name.len()..];
        } else {
            out.push_str("{{");
            rest = &rest[2..];
        }
    }
    out.push_str(rest);
    out
}

/// Everything a handoff needs that was read elsewhere.
#[derive(Clone, Debug)]
pub struct HandoffInput<'a> {
    pub option: Option<Purpose>,
    pub focus: Option<&'a str>,
    pub view: &'a SessionView,
    /// Threads from the coordinator (empty when none is reachable).
    pub threads: Vec<serde_json::Value>,
    /// Episodes from the coordinator's live generations.
    pub episodes: Vec<serde_json::Value>,
    pub template: Option<&'a Template>,
    pub model: Option<String>,
    pub thinking_level: Option<String>,
    /// Fresh ids, supplied so the plan stays deterministic.
    pub successor_id: String,
    pub attempt_id: String,
    pub kickoff_id: String,
}

/// The records one handoff writes.
#[derive(Clone, Debug, PartialEq)]
pub struct HandoffPlan {
    pub choice: PurposeChoice,
    pub causes: Vec<&'static str>,
    /// Appended to the current session before the transfer.
    pub attempt: PurposeRecord,
    /// The successor's `slate-handoff` entry.
    pub record: HandoffRecord,
    /// Appended to the current session after a successful transfer.
    pub consumed: PurposeRecord,
}

pub fn plan_handoff(input: &HandoffInput<'_>) -> HandoffPlan {
    let choice = resolve_purpose(input.option, input.view.pending.as_ref());
    let current = input.view.snapshot();
    let budget_pause = (input.view.pause() == Some(Some(PauseReason::ContextBudget)))
        .then_some(PauseReason::ContextBudget);
    let causes = causes(Some(choice.purpose), budget_pause);
    // Episodes already carried, then the live ones, each thread once.
    let mut episodes = current.episodes;
    for e in &input.episodes {
        let thread = e.get("thread");
        if !episodes.iter().any(|x| x.get("thread") == thread) {
            episodes.push(e.clone());
        }
    }
    let brief = fleet_brief(&input.threads, &episodes);
    let kickoff = kickoff_with_fleet(
        input.template,
        input.focus,
        &causes,
        &input.view.session_id,
        brief.as_deref(),
    )
    .map(|(text, source)| Kickoff {
        id: input.kickoff_id.clone(),
        text,
        source,
    });
    let attempt = PurposeRecord {
        session_id: input.view.session_id.clone(),
        attempt_id: input.attempt_id.clone(),
        purpose: choice.purpose,
        status: AttemptStatus::Pending,
        successor_session_id: None,
    };
    let consumed = PurposeRecord {
        status: AttemptStatus::Consumed,
        successor_session_id: Some(input.successor_id.clone()),
        ..attempt.clone()
    };
    HandoffPlan {
        record: HandoffRecord {
            session_id: input.successor_id.clone(),
            snapshot: Snapshot {
                threads: input.threads.clone(),
                episodes,
                pause_reason: budget_pause,
            },
            purpose: Some(choice.purpose),
            kickoff,
            model: input.model.clone(),
            thinking_level: input.thinking_level.clone(),
            logical_model: input.view.logical_model(),
            summary_visible: None,
        },
        choice,
        causes,
        attempt,
        consumed,
    }
}

/// Why a pause cleared (or, for `Unadopted`, that a handoff entry was adopted by resume).
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, schemars::JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum ClearedPause {
    ContextBudget,
    Adoption,
    Legacy,
}

/// What resume writes.
#[derive(Clone, Debug, PartialEq)]
pub struct ResumePlan {
    pub cleared: ClearedPause,
    pub selected: Selected,
    /// The unpaused state to save first.
    pub state: StateRecord,
    /// The kickoff to claim and then deliver.
    pub deliver: Option<Kickoff>,
    /// A kickoff that was claimed before: never replayed.
    pub already_claimed: Option<String>,
}

/// Why resume refused; nothing is written.
#[derive(Clone, Debug, PartialEq)]
pub enum ResumeRefusal {
    /// No `slate-state` or `slate-handoff` for this session.
    NoState,
    NotPaused,
    /// `--model`/`--effort` are malformed (usage, exit 2).
    Usage(Vec<Problem>),
    /// The gate refused the model or effort of an `adoption` pause (exit 1).
    Model(Vec<Problem>),
    /// The pending kickoff comes from a project template and the project is not trusted.
    UntrustedKickoff,
}

/// Resume a paused session: `context-budget` and legacy pauses on any model (the arguments
/// are only parsed); an `adoption` pause (or a handoff entry not yet adopted) validates the
/// model and effort — the arguments, else the ones the record saved — through `gate`.
pub fn plan_resume(
    view: &SessionView,
    args: &ModelChoice,
    gate: &dyn ModelGate,
    project_trusted: bool,
) -> Result<ResumePlan, ResumeRefusal> {
    let (saved_model, saved_effort, logical) = match view.effective() {
        Effective::None => return Err(ResumeRefusal::NoState),
        Effective::State(s) if !s.paused => return Err(ResumeRefusal::NotPaused),
        Effective::State(s) => (
            s.model.clone(),
            s.thinking_level.clone(),
            s.logical_model.clone(),
        ),
        Effective::Handoff(h) => (
            h.model.clone(),
            h.thinking_level.clone(),
            h.logical_model.clone(),
        ),
    };
    let cleared = match view.pause() {
        Some(Some(PauseReason::Adoption)) => ClearedPause::Adoption,
        Some(Some(PauseReason::ContextBudget)) => ClearedPause::ContextBudget,
        Some(None) => ClearedPause::Legacy,
        None => return Err(ResumeRefusal::NotPaused),
    };
    // The flags' own syntax first, whatever the pause: a malformed `--model`/`--effort` is a
    // usage error (exit 2) before any gate is asked.
    let parsed = parse_choice(args).map_err(ResumeRefusal::Usage)?;
    let selected = if cleared == ClearedPause::Adoption {
        let choice = ModelChoice {
            model: args.model.clone().or(saved_model.clone()),
            effort: args.effort.clone().or_else(|| {
                if args.model.is_some() {
                    None
                } else {
                    saved_effort.clone()
                }
            }),
        };
        gate.permit(&choice).map_err(ResumeRefusal::Model)?
    } else {
        parsed
    };
    let kickoff = view.kickoff().cloned();
    let (deliver, already_claimed) = match kickoff {
        Some(k) if view.claimed.contains(&k.id) => (None, Some(k.id)),
        Some(k) => {
            if k.source == KickoffSource::Project && !project_trusted {
                return Err(ResumeRefusal::UntrustedKickoff);
            }
            (Some(k), None)
        }
        None => (None, None),
    };
    let mut snapshot = view.snapshot();
    snapshot.pause_reason = None;
    let model = selected
        .model
        .as_ref()
        .map(|m| format!("{}/{}", m.provider, m.id))
        .or(saved_model);
    let thinking_level = selected
        .effort
        .map(|e| e.as_str().to_owned())
        .or(saved_effort);
    Ok(ResumePlan {
        cleared,
        state: StateRecord {
            session_id: view.session_id.clone(),
            snapshot,
            paused: false,
            kickoff: None,
            model,
            thinking_level,
            logical_model: logical,
        },
        selected,
        deliver,
        already_claimed,
    })
}

/// Adoption right after a handoff, in the successor: the same rules as resuming an
/// unadopted handoff with no arguments. A context-budget pause carried over stays paused;
/// a refused model pauses for `adoption` with the kickoff still pending.
#[derive(Clone, Debug, PartialEq)]
pub enum Adoption {
    Adopted(ResumePlan),
    Paused {
        state: StateRecord,
        reason: PauseReason,
        problems: Vec<Problem>,
    },
}

pub fn adopt(record: &HandoffRecord, gate: &dyn ModelGate, project_trusted: bool) -> Adoption {
    let paused = |reason: PauseReason, problems: Vec<Problem>| {
        let mut snapshot = record.snapshot.clone();
        snapshot.pause_reason = Some(reason);
        Adoption::Paused {
            state: StateRecord {
                session_id: record.session_id.clone(),
                snapshot,
                paused: true,
                kickoff: record.kickoff.clone(),
                model: record.model.clone(),
                thinking_level: record.thinking_level.clone(),
                logical_model: record.logical_model.clone(),
            },
            reason,
            problems,
        }
    };
    if record.snapshot.pause_reason == Some(PauseReason::ContextBudget) {
        return paused(PauseReason::ContextBudget, Vec::new());
    }
    let view = SessionView {
        session_id: record.session_id.clone(),
        handoff: Some(record.clone()),
        ..SessionView::default()
    };
    match plan_resume(&view, &ModelChoice::default(), gate, project_trusted) {
        Ok(plan) => Adoption::Adopted(plan),
        Err(ResumeRefusal::Model(problems) | ResumeRefusal::Usage(problems)) => {
            paused(PauseReason::Adoption, problems)
        }
        Err(ResumeRefusal::UntrustedKickoff) => paused(
            PauseReason::Adoption,
            vec![
                Problem::new(
                    "$.kickoff.source",
                    "a project kickoff template requires project trust",
                )
                .value("project"),
            ],
        ),
        Err(ResumeRefusal::NoState | ResumeRefusal::NotPaused) => {
            paused(PauseReason::Adoption, Vec::new())
        }
    }
}

/// The JSON `data` of a record.
pub fn data<T: serde::Serialize>(record: &T) -> serde_json::Value {
    serde_json::to_value(record).unwrap_or_else(|e| json!({"error": e.to_string()}))
}

//! The IO around the rules: find and read the session, refuse a live one, write the records
//! in order, report what happened. Nothing is written before every input has been checked.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use serde_json::json;

use super::gate::ModelGate;
use super::records::{
    CLAIM_TYPE, ClaimRecord, HANDOFF_TYPE, KICKOFF_TYPE, Kickoff, KickoffSource, PURPOSE_TYPE,
    Purpose, STATE_TYPE,
};
pub use super::report::{
    AdoptionCheck, AdoptionReport, ClaimedKickoff, Fleet, HandoffReport, KickoffReport,
    ResumeReport,
};
use super::rules::{self, Adoption, HandoffInput, ResumePlan, ResumeRefusal, Template, data};
use crate::policy::Problem;
use crate::store::paths;
use crate::store::session::{
    self, NewEntry, Session, SessionError, append_entries, create_session, live::LiveProbe,
    new_session_id,
};

/// Home kickoff template, relative to the agent dir.
pub const HOME_TEMPLATE: &str = "slate/kickoff.md";
/// Project kickoff template, relative to the project; read only when the project is trusted.
pub const PROJECT_TEMPLATE: &str = ".pi/slate/kickoff.md";
const MAX_TEMPLATE_BYTES: u64 = 64 * 1024;

/// What the commands run against.
pub struct Context<'a> {
    pub cwd: PathBuf,
    pub agent_dir: PathBuf,
    /// `--session FILE`, else the newest session for `cwd` in pi's default directory.
    pub session: Option<PathBuf>,
    pub probe: &'a dyn LiveProbe,
    pub gate: &'a dyn ModelGate,
    /// pi's project-trust decision for `cwd`, asked only when a project template is involved.
    pub project_trusted: &'a dyn Fn() -> Result<bool, Vec<Problem>>,
    pub now_ms: u64,
    /// `--from-pi`: the host pi sends the kickoff (as the hidden `slate-kickoff` message that
    /// starts a turn); Slate claims it and reports it instead of writing the message.
    pub host_sends_kickoff: bool,
}

/// A handoff or resume that did not happen (or did not finish).
#[derive(Debug, thiserror::Error)]
pub enum HandoffError {
    #[error(transparent)]
    Session(#[from] SessionError),
    /// Bad input: invalid records in the session, an unreadable template, bad arguments.
    #[error("{what}")]
    Invalid {
        what: String,
        problems: Vec<Problem>,
    },
    /// A rule refused the request; nothing was written.
    #[error("{what}")]
    Refused {
        what: String,
        problems: Vec<Problem>,
    },
    /// The attempt was recorded but the successor could not be written: the purpose stays
    /// pending for the retry.
    #[error(
        "the handoff failed after attempt {attempt_id} was recorded; its purpose stays pending \
         for a retry (`slate handoff` without an option): {source}"
    )]
    Transfer {
        attempt_id: String,
        source: SessionError,
    },
    /// The successor was written, but the attempt could not be marked consumed in the
    /// original session: it still reads as pending, so a retry there would write a second
    /// successor. The successor is the one to continue.
    #[error(
        "the successor {} was written, but marking attempt {attempt_id} consumed failed: \
         {source}; the purpose still reads as pending, so `slate handoff` of this session \
         would write another successor — continue in the successor (`pi --session {}`)",
        successor.display(),
        successor.display()
    )]
    Consume {
        attempt_id: String,
        successor: PathBuf,
        source: SessionError,
    },
}

impl HandoffError {
    /// Exit 1 (refused or failed) rather than 2 (usage or configuration).
    pub fn is_refusal(&self) -> bool {
        match self {
            Self::Refused { .. } | Self::Transfer { .. } | Self::Consume { .. } => true,
            Self::Invalid { .. } => false,
            Self::Session(e) => matches!(
                e,
                SessionError::Live { .. }
                    | SessionError::Busy { .. }
                    | SessionError::Write { .. }
                    | SessionError::Changed { .. }
            ),
        }
    }

    pub fn problems(&self) -> &[Problem] {
        match self {
            Self::Invalid { problems, .. } | Self::Refused { problems, .. } => problems,
            Self::Session(_) | Self::Transfer { .. } | Self::Consume { .. } => &[],
        }
    }
}

/// Find, lock and read the session; refuse one a live pi may write, or another Slate
/// process is handing off or resuming (the lock is held until the returned guard drops).
pub fn open_session(ctx: &Context<'_>) -> Result<(Session, session::SessionLock), HandoffError> {
    let path = match &ctx.session {
        Some(p) if p.is_absolute() => p.clone(),
        Some(p) => ctx.cwd.join(p),
        None => {
            let dir =
                paths::default_session_dir(&ctx.agent_dir, &ctx.cwd).map_err(SessionError::from)?;
            // pi's own `--continue` choice in the default directory (no cwd filter there).
            session::most_recent_session(&dir, &ctx.cwd, false)?
        }
    };
    let lock = session::lock(&path)?;
    let s = session::read(&path)?;
    s.check_appendable()?;
    let cwd = s.header.cwd.as_deref().map(Path::new);
    if let Some(holder) = ctx.probe.holder(&path, cwd) {
        return Err(SessionError::Live {
            path,
            pid: holder.pid,
            why: holder.why,
        }
        .into());
    }
    Ok((s, lock))
}

fn invalid_records(problems: Vec<Problem>) -> HandoffError {
    HandoffError::Invalid {
        what: "the session's Slate records are invalid; nothing was written".to_owned(),
        problems,
    }
}

/// The kickoff template: the trusted project's, else the home one.
fn template(
    ctx: &Context<'_>,
    warnings: &mut Vec<String>,
) -> Result<Option<Template>, HandoffError> {
    let project = ctx.cwd.join(PROJECT_TEMPLATE);
    if std::fs::symlink_metadata(&project).is_ok() {
        let trusted = (ctx.project_trusted)().map_err(|problems| HandoffError::Invalid {
            what: format!(
                "{} exists, and the project-trust decision it needs cannot be made",
                project.display()
            ),
            problems,
        })?;
        if trusted {
            return read_template(&project, KickoffSource::Project).map(Some);
        }
        warnings.push(format!(
            "{} ignored: project kickoff templates require project trust",
            project.display()
        ));
    }
    let home = ctx.agent_dir.join(HOME_TEMPLATE);
    if std::fs::symlink_metadata(&home).is_ok() {
        return read_template(&home, KickoffSource::Home).map(Some);
    }
    Ok(None)
}

fn read_template(path: &Path, source: KickoffSource) -> Result<Template, HandoffError> {
    let bad = |rule: String| HandoffError::Invalid {
        what: format!("kickoff template {}: {rule}", path.display()),
        problems: Vec::new(),
    };
    let meta = std::fs::metadata(path).map_err(|e| bad(e.to_string()))?;
    if !meta.is_file() || meta.len() > MAX_TEMPLATE_BYTES {
        return Err(bad(format!(
            "must be a regular file of at most {MAX_TEMPLATE_BYTES} bytes"
        )));
    }
    let text = std::fs::read_to_string(path).map_err(|e| bad(e.to_string()))?;
    Ok(Template { text, source })
}

/// `slate handoff`.
pub fn handoff(
    ctx: &Context<'_>,
    option: Option<Purpose>,
    focus: Option<&str>,
    fleet: Fleet,
) -> Result<HandoffReport, HandoffError> {
    let (mut current, _lock) = open_session(ctx)?;
    let view = rules::view(&current).map_err(invalid_records)?;
    let mut warnings = Vec::new();
    let template = template(ctx, &mut warnings)?;
    let plan = rules::plan_handoff(&HandoffInput {
        option,
        focus,
        view: &view,
        threads: fleet.threads.clone(),
        episodes: fleet.episodes.clone(),
        template: template.as_ref(),
        model: current.model(),
        thinking_level: current.thinking_level(),
        successor_id: new_session_id(),
        attempt_id: uuid::Uuid::new_v4().to_string(),
        kickoff_id: uuid::Uuid::new_v4().to_string(),
    });
    // 1. The attempt, bound to this session.
    append_entries(
        &mut current,
        &[NewEntry::custom(PURPOSE_TYPE, data(&plan.attempt))],
        ctx.now_ms,
    )?;
    // 2. The successor with its handoff entry.
    let dir = current
        .path
        .parent()
        .map_or_else(|| ctx.cwd.clone(), Path::to_owned);
    let cwd = current
        .header
        .cwd
        .clone()
        .unwrap_or_else(|| ctx.cwd.display().to_string());
    let mut successor = create_session(
        &dir,
        &plan.record.session_id,
        &cwd,
        Some(&current.path),
        &[NewEntry::custom(HANDOFF_TYPE, data(&plan.record))],
        ctx.now_ms,
    )
    .map_err(|source| HandoffError::Transfer {
        attempt_id: plan.attempt.attempt_id.clone(),
        source,
    })?;
    // 3. Success consumes the purpose.
    append_entries(
        &mut current,
        &[NewEntry::custom(PURPOSE_TYPE, data(&plan.consumed))],
        ctx.now_ms,
    )
    .map_err(|source| HandoffError::Consume {
        attempt_id: plan.attempt.attempt_id.clone(),
        successor: successor.path.clone(),
        source,
    })?;
    // 4. The successor adopts its entry.
    let (adoption, claimed_kickoff) = adopt_successor(ctx, &plan.record, &mut successor);
    // 5. The successor is what `pi --continue` takes, paused or not: the writes above share a
    // clock tick often enough, and pi breaks an mtime tie in favour of the older file.
    if let Err(e) = session::make_most_recent(&successor.path) {
        warnings.push(format!(
            "the successor could not be made the newest session ({e}); `pi --continue` may              take the original — open the successor with `pi --session {}`",
            successor.path.display()
        ));
    }
    let brief = rules::fleet_brief(
        &plan.record.snapshot.threads,
        &plan.record.snapshot.episodes,
    );
    let mut report = HandoffReport {
        session_id: current.header.id.clone(),
        session_file: current.path.clone(),
        successor_session_id: plan.record.session_id.clone(),
        successor_file: successor.path.clone(),
        attempt_id: plan.attempt.attempt_id.clone(),
        purpose: plan.choice.purpose,
        causes: plan.causes.clone(),
        retry_of: plan.choice.retry_of.clone(),
        replaced_purpose: plan.choice.replaced,
        episodes: plan.record.snapshot.episodes.len(),
        fleet,
        kickoff: plan.record.kickoff.as_ref().map(|k| KickoffReport {
            id: k.id.clone(),
            source: k.source,
            chars: k.text.chars().count(),
        }),
        adoption,
        claimed_kickoff,
        warnings,
        notice: String::new(),
    };
    report.notice =
        super::report::handoff_notice(&report, brief.as_deref(), ctx.host_sends_kickoff);
    Ok(report)
}

/// `slate handoff --check`: would a successor adopt this session's model now? Nothing is
/// written; the answer names the fix when it would not.
pub fn check(ctx: &Context<'_>) -> Result<AdoptionCheck, HandoffError> {
    let (s, _lock) = open_session(ctx)?;
    let choice = super::gate::ModelChoice {
        model: s.model(),
        effort: s.thinking_level(),
    };
    let (permitted, problems, fix) = match ctx.gate.permit(&choice) {
        Ok(_) => (true, Vec::new(), None),
        Err(problems) => (false, problems, ctx.gate.fix(&choice)),
    };
    let mut c = AdoptionCheck {
        session_id: s.header.id.clone(),
        session_file: s.path.clone(),
        model: choice.model,
        thinking_level: choice.effort,
        permitted,
        problems,
        fix,
        notice: String::new(),
    };
    c.notice = super::report::check_notice(&c);
    Ok(c)
}

/// The successor adopts its handoff entry at once, as pi's fresh session would.
fn adopt_successor(
    ctx: &Context<'_>,
    record: &super::records::HandoffRecord,
    successor: &mut Session,
) -> (AdoptionReport, Option<ClaimedKickoff>) {
    let needs_trust = record
        .kickoff
        .as_ref()
        .is_some_and(|k| k.source == KickoffSource::Project);
    let trusted = !needs_trust || (ctx.project_trusted)().unwrap_or(false);
    match rules::adopt(record, ctx.gate, trusted) {
        Adoption::Adopted(resume) => {
            match apply_resume(successor, &resume, ctx.now_ms, ctx.host_sends_kickoff) {
                Ok(out) => (
                    AdoptionReport {
                        status: "adopted",
                        pause_reason: None,
                        problems: Vec::new(),
                        kickoff: match out.kickoff {
                            "claimed" if out.claimed.is_none() => "delivered",
                            other => other,
                        },
                        error: None,
                        fix: None,
                    },
                    out.claimed,
                ),
                Err(e) => (
                    AdoptionReport {
                        status: "failed",
                        pause_reason: None,
                        problems: Vec::new(),
                        kickoff: "pending",
                        error: Some(e.to_string()),
                        fix: None,
                    },
                    None,
                ),
            }
        }
        Adoption::Paused {
            state,
            reason,
            problems,
        } => {
            let saved = append_entries(
                successor,
                &[NewEntry::custom(STATE_TYPE, data(&state))],
                ctx.now_ms,
            );
            let fix = (reason == super::records::PauseReason::Adoption && !problems.is_empty())
                .then(|| {
                    ctx.gate.fix(&super::gate::ModelChoice {
                        model: record.model.clone(),
                        effort: record.thinking_level.clone(),
                    })
                })
                .flatten();
            (
                AdoptionReport {
                    status: if saved.is_ok() { "paused" } else { "failed" },
                    pause_reason: Some(reason),
                    problems,
                    kickoff: if state.kickoff.is_some() {
                        "pending"
                    } else {
                        "none"
                    },
                    error: saved.err().map(|e| e.to_string()),
                    fix,
                },
                None,
            )
        }
    }
}

struct Applied {
    kickoff: &'static str,
    /// Claimed and left for the host pi to send.
    claimed: Option<ClaimedKickoff>,
}

/// Write a resume plan as **one** fsync'd append: the model entries and the unpaused state,
/// then the claim (`slate-kickoff-claimed`), then the hidden kickoff message — claim before
/// send, in that order inside the write. [`append_entries`] cuts the file back when the write
/// fails, so a failure (disk full, a file-size limit) leaves the pause and the pending
/// kickoff exactly as they were, and a later `slate resume` delivers it; there is no state in
/// which the pause is cleared and the kickoff neither pending nor delivered. With
/// `host_sends`, the message is the host pi's: the append ends with the claim and the claimed
/// kickoff is returned instead.
fn apply_resume(
    session: &mut Session,
    plan: &ResumePlan,
    now_ms: u64,
    host_sends: bool,
) -> Result<Applied, SessionError> {
    let mut entries = Vec::new();
    if let Some(m) = &plan.selected.model
        && session.model().as_deref() != Some(&format!("{}/{}", m.provider, m.id))
    {
        entries.push(NewEntry::ModelChange {
            provider: m.provider.clone(),
            model_id: m.id.clone(),
        });
    }
    if let Some(e) = plan.selected.effort
        && session.thinking_level().as_deref() != Some(e.as_str())
    {
        entries.push(NewEntry::ThinkingLevelChange {
            level: e.as_str().to_owned(),
        });
    }
    entries.push(NewEntry::custom(STATE_TYPE, data(&plan.state)));
    if let Some(kickoff) = &plan.deliver {
        let claim = ClaimRecord {
            session_id: session.header.id.clone(),
            kickoff_id: kickoff.id.clone(),
        };
        entries.push(NewEntry::custom(CLAIM_TYPE, data(&claim)));
        if !host_sends {
            entries.push(kickoff_message(kickoff));
        }
    }
    append_entries(session, &entries, now_ms)?;
    Ok(match &plan.deliver {
        None => Applied {
            kickoff: if plan.already_claimed.is_some() {
                "already-claimed"
            } else {
                "none"
            },
            claimed: None,
        },
        Some(kickoff) => Applied {
            kickoff: "claimed",
            claimed: host_sends.then(|| ClaimedKickoff {
                id: kickoff.id.clone(),
                text: kickoff.text.clone(),
            }),
        },
    })
}

fn kickoff_message(k: &Kickoff) -> NewEntry {
    NewEntry::CustomMessage {
        custom_type: KICKOFF_TYPE.to_owned(),
        content: k.text.clone(),
        display: false,
        details: Some(json!({"kickoffId": k.id})),
    }
}

/// `slate resume` (session form).
pub fn resume(
    ctx: &Context<'_>,
    model: Option<String>,
    effort: Option<String>,
) -> Result<ResumeReport, HandoffError> {
    let (mut s, _lock) = open_session(ctx)?;
    let view = rules::view(&s).map_err(invalid_records)?;
    let needs_trust = view
        .kickoff()
        .is_some_and(|k| k.source == KickoffSource::Project && !view.claimed.contains(&k.id));
    let trusted = if needs_trust {
        (ctx.project_trusted)().map_err(|problems| HandoffError::Invalid {
            what: "the pending kickoff comes from a project template, and the project-trust \
                   decision it needs cannot be made"
                .to_owned(),
            problems,
        })?
    } else {
        false
    };
    let args = super::gate::ModelChoice { model, effort };
    let plan =
        rules::plan_resume(&view, &args, ctx.gate, trusted).map_err(|r| refusal(&view, r))?;
    let applied = apply_resume(&mut s, &plan, ctx.now_ms, ctx.host_sends_kickoff).map_err(|e| {
        HandoffError::Refused {
            what: format!(
                "the unpaused state, the kickoff claim and the kickoff are one write, and it \
                 failed, so the pause stays and the kickoff stays pending: {e}"
            ),
            problems: Vec::new(),
        }
    })?;
    // The resumed session is the one `pi --continue` takes next, even if another session's
    // last write shares this clock tick. Best effort: the resume itself is complete.
    let _ = session::make_most_recent(&s.path);
    let mut report = ResumeReport {
        session_id: s.header.id.clone(),
        session_file: s.path.clone(),
        pause_cleared: true,
        pause_reason: plan.cleared,
        model: plan.state.model.clone(),
        thinking_level: plan.state.thinking_level.clone(),
        kickoff: applied.kickoff,
        claimed_kickoff: applied.claimed,
        notice: String::new(),
    };
    report.notice = super::report::resume_notice(&report);
    Ok(report)
}

fn refusal(view: &rules::SessionView, r: ResumeRefusal) -> HandoffError {
    match r {
        ResumeRefusal::NoState => {
            let mut what = format!(
                "session {} has no Slate state (`slate-state`) and no handoff entry bound to it; \
                 there is no pause to clear",
                view.session_id
            );
            if let Some(other) = view.foreign_handoffs.first() {
                let _ = write!(
                    what,
                    " (a `slate-handoff` entry names session {other}: only the session whose id \
                     equals `sessionId` adopts it)"
                );
            }
            HandoffError::Refused {
                what,
                problems: Vec::new(),
            }
        }
        ResumeRefusal::NotPaused => HandoffError::Refused {
            what: format!(
                "session {} is not paused: its saved `slate-state` has `paused: false`",
                view.session_id
            ),
            problems: Vec::new(),
        },
        ResumeRefusal::Usage(problems) => HandoffError::Invalid {
            what: "invalid --model/--effort; nothing was written".to_owned(),
            problems,
        },
        ResumeRefusal::Model(problems) => HandoffError::Refused {
            what: "an adoption pause clears only with a permitted model and effort; the pause \
                   stays (choose one with --model provider/id --effort LEVEL)"
                .to_owned(),
            problems,
        },
        ResumeRefusal::UntrustedKickoff => HandoffError::Refused {
            what: "the pending kickoff comes from a project kickoff template, which requires \
                   project trust; the pause stays"
                .to_owned(),
            problems: Vec::new(),
        },
    }
}

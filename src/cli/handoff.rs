//! `slate handoff` and the session form of `slate resume` (docs/handoff.md).

use std::fmt::Write as _;
use std::path::PathBuf;

use crate::cli::fleet::connect;
use crate::cli::{Error, ExitCode, Printer};
use crate::handoff::Purpose;
use crate::handoff::gate::RoutingGate;
use crate::handoff::run::{
    self, AdoptionCheck, Context, Fleet, HandoffError, HandoffReport, ResumeReport,
};
use crate::policy::trust::{agent_dir, decide_trust};
use crate::store::fs::RealFs;
use crate::store::session::live::ProcScan;
use crate::text::SafeText;

/// The purpose flags of `slate handoff` (at most one).
#[derive(Clone, Copy, Debug, Default)]
#[allow(
    clippy::struct_excessive_bools,
    reason = "one flag per purpose; clap makes them exclusive"
)]
pub struct PurposeFlags {
    pub track_boundary: bool,
    pub post_check: bool,
    pub context_budget: bool,
    pub user_request: bool,
}

impl PurposeFlags {
    fn purpose(self) -> Option<Purpose> {
        [
            (self.track_boundary, Purpose::TrackBoundary),
            (self.post_check, Purpose::PostCheck),
            (self.context_budget, Purpose::ContextBudget),
            (self.user_request, Purpose::UserRequest),
        ]
        .into_iter()
        .find_map(|(set, p)| set.then_some(p))
    }
}

/// Which session, and whether the pi that owns it runs this command (`--from-pi`).
#[derive(Clone, Debug, Default)]
pub struct Target {
    pub session: Option<PathBuf>,
    pub from_pi: bool,
}

fn with_context<T>(target: Target, body: impl FnOnce(&Context<'_>) -> T) -> Result<T, Error> {
    let Target { session, from_pi } = target;
    let cwd = std::env::current_dir()
        .and_then(std::fs::canonicalize)
        .map_err(|e| Error::Environment(format!("the current directory cannot be read: {e}")))?;
    let env_dir = std::env::var("PI_CODING_AGENT_DIR").ok();
    let home = std::env::var_os("HOME").map(PathBuf::from);
    let agent = agent_dir(env_dir.as_deref(), home.as_deref())
        .map_err(|p| Error::problems("no agent dir", vec![p]))?;
    let trust_cwd = cwd.clone();
    let trust_agent = agent.clone();
    let trusted = move || decide_trust(&trust_cwd, &trust_agent, None, &RealFs).map(|d| d.trusted);
    let probe = if from_pi {
        // The extension runs `slate` directly (no shell), so the parent is that pi.
        let host = u32::try_from(nix::unistd::getppid().as_raw()).unwrap_or(0);
        ProcScan::default().with_host(host).map_err(Error::Usage)?
    } else {
        ProcScan::default()
    };
    // An adoption pause validates the model against the routing policy of this directory.
    let routing = crate::config::routing::load_routing(&cwd, None)
        .map_err(|problems| Error::problems("the routing policy cannot be loaded", problems))?;
    let home_file = agent.join("slate.json");
    let gate = RoutingGate {
        report: &routing.report,
        home_file: Some(&home_file),
    };
    let ctx = Context {
        cwd,
        agent_dir: agent,
        session,
        probe: &probe,
        gate: &gate,
        project_trusted: &trusted,
        now_ms: crate::runtime::now_ms(),
        host_sends_kickoff: from_pi,
    };
    Ok(body(&ctx))
}

/// A handoff or resume that did not happen: its problems, exit 1 when a rule refused it.
impl From<HandoffError> for Error {
    fn from(e: HandoffError) -> Self {
        Self::Problems {
            headline: e.to_string(),
            problems: e.problems().to_vec(),
            refused: e.is_refusal(),
        }
    }
}

/// The coordinator's fleet for this directory, or an empty one, stated.
fn fleet(parent: Option<String>) -> Fleet {
    let runtime = match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => return Fleet::none(&format!("the async runtime did not start ({e})")),
    };
    runtime.block_on(async {
        match connect(parent).await {
            Ok(client) => match client
                .request::<crate::control::methods::method::Status>(
                    &crate::control::methods::StatusParams::default(),
                )
                .await
            {
                // The handoff report reads the fleet's JSON form (its own shape).
                Ok(crate::control::methods::StatusResult::Fleet(status)) => {
                    Fleet::from_status(&serde_json::to_value(status).unwrap_or_default())
                }
                Ok(_) => Fleet::none("the coordinator did not answer status with a fleet"),
                Err(e) => Fleet::none(&format!("the coordinator did not answer status ({e})")),
            },
            Err(why) => Fleet::none(&format!("no coordinator reachable ({why})")),
        }
    })
}

/// `slate handoff [--track-boundary|--post-check|--context-budget|--user-request] [FOCUS]`.
pub fn handoff(
    printer: &Printer,
    flags: PurposeFlags,
    focus: &[String],
    target: Target,
    parent: Option<String>,
) -> Result<ExitCode, Error> {
    let focus = focus.join(" ");
    let focus = (!focus.trim().is_empty()).then_some(focus);
    let fleet = fleet(parent);
    let report = with_context(target, |ctx| {
        run::handoff(ctx, flags.purpose(), focus.as_deref(), fleet)
    })??;
    if printer.json() {
        printer.value(&report)?;
    } else {
        printer.out(&handoff_text(&report))?;
    }
    if report.adoption.status == "failed" || report.adoption.error.is_some() {
        Ok(ExitCode::Refused)
    } else {
        Ok(ExitCode::Ok)
    }
}

fn handoff_text(r: &HandoffReport) -> String {
    let mut t = format!(
        "handed off session {} to {}\n  successor: {}\n  purpose: {}",
        r.session_id,
        r.successor_session_id,
        r.successor_file.display(),
        r.purpose.as_str()
    );
    if r.causes.len() > 1 {
        let _ = write!(t, " (causes: {})", r.causes.join(", "));
    }
    if let Some(a) = &r.retry_of {
        let _ = write!(t, ", retrying pending attempt {a}");
    }
    if let Some(p) = r.replaced_purpose {
        let _ = write!(t, ", replacing the pending purpose {}", p.as_str());
    }
    match (&r.fleet.note, &r.fleet.parent_id) {
        (Some(note), _) => {
            let _ = write!(t, "\n  fleet: {}", SafeText::line(note));
        }
        (None, parent) => {
            let _ = write!(
                t,
                "\n  fleet: {} threads from coordinator {}",
                r.fleet.thread_count,
                parent.as_deref().unwrap_or("?")
            );
        }
    }
    let _ = write!(t, "\n  episodes: {}", r.episodes);
    match &r.kickoff {
        Some(k) => {
            let _ = write!(
                t,
                "\n  kickoff: {} chars from {}",
                k.chars,
                k.source.as_str()
            );
        }
        None => t.push_str("\n  kickoff: none"),
    }
    let a = &r.adoption;
    match a.status {
        "adopted" => {
            let _ = write!(t, "\n  adoption: adopted; kickoff {}", a.kickoff);
        }
        "paused" => {
            let reason = a.pause_reason.map_or("?", |p| p.as_str());
            let _ = write!(
                t,
                "\n  adoption: paused ({reason}); kickoff {}. Choose a permitted model and run \
                 `slate resume --session {} [--model provider/id] [--effort LEVEL]`",
                a.kickoff,
                r.successor_file.display()
            );
        }
        other => {
            let _ = write!(t, "\n  adoption: {other}");
        }
    }
    for p in &a.problems {
        let _ = write!(t, "\n    {}", SafeText::line(&p.to_string()));
    }
    if let Some(e) = &a.error {
        let _ = write!(t, "\n  error: {}", SafeText::line(e));
    }
    for w in &r.warnings {
        let _ = write!(t, "\n  warning: {}", SafeText::line(w));
    }
    t.push('\n');
    t
}

/// `slate handoff --check`: would a successor adopt the session's model now (nothing is
/// written)? Exit 0 either way: the answer is the report.
pub fn check(printer: &Printer, target: Target) -> Result<ExitCode, Error> {
    let report: AdoptionCheck = with_context(target, run::check)??;
    if printer.json() {
        printer.value(&report)?;
    } else {
        printer.out(&format!("{}\n", report.notice))?;
    }
    Ok(ExitCode::Ok)
}

/// `slate resume [--model provider/id] [--effort LEVEL] [--session FILE]`.
pub fn resume(
    printer: &Printer,
    model: Option<String>,
    effort: Option<String>,
    session: Option<PathBuf>,
    from_pi: bool,
) -> Result<ExitCode, Error> {
    let target = Target { session, from_pi };
    let report = with_context(target, |ctx| run::resume(ctx, model, effort))??;
    if printer.json() {
        printer.value(&report)?;
    } else {
        printer.out(&resume_text(&report))?;
    }
    // A resume either wrote everything (exit 0) or nothing: its failure is an error (exit 1,
    // the pause and the pending kickoff kept), never a cleared pause with a lost kickoff.
    Ok(ExitCode::Ok)
}

fn resume_text(r: &ResumeReport) -> String {
    let reason = match r.pause_reason {
        crate::handoff::rules::ClearedPause::ContextBudget => "context-budget",
        crate::handoff::rules::ClearedPause::Adoption => "adoption",
        crate::handoff::rules::ClearedPause::Legacy => "legacy",
    };
    let mut t = format!(
        "pause cleared ({reason}) in session {}\n  file: {}",
        r.session_id,
        r.session_file.display()
    );
    if let Some(m) = &r.model {
        let _ = write!(t, "\n  model: {}", SafeText::line(m));
    }
    if let Some(l) = &r.thinking_level {
        let _ = write!(t, "\n  thinking level: {}", SafeText::line(l));
    }
    let _ = write!(t, "\n  kickoff: {}", r.kickoff);
    t.push('\n');
    t
}

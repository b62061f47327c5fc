//! `slate run FILE`: resolve one `delegate_task` (or compatibility `subagent` launch) request
//! by policy and run it in an embedded coordinator in the foreground, with real pi workers
//! (or the simulated backend). Prints progress and the ordered outcomes; SIGINT/SIGTERM shut
//! down gracefully (every worker stopped, drained and disposed) before exiting.

use std::path::PathBuf;

use tokio::signal::unix::{SignalKind, signal};

use crate::cli::embedded::{Backend, EmbedArgs, Embedded, Plan, rt_shutdown};
use crate::cli::{Error, ExitCode, Printer};
use crate::core::{ChildSnapshot, Party, Status};
use crate::policy::capabilities::pi_offered_tools;
use crate::policy::request::{SubagentRequest, parse_delegate_task, parse_subagent};
use crate::policy::resolve::{ResolveContext, resolve_call};
use crate::runtime::RuntimeEvent;
use crate::store::fs::RealFs;
use crate::text::{SafeText, fit};

pub struct RunArgs {
    pub file: PathBuf,
    pub embed: EmbedArgs,
}

pub fn run(printer: &Printer, args: &RunArgs) -> Result<ExitCode, Error> {
    crate::cli::fleet::block_on_multi(|| run_async(printer, args))
}

#[allow(clippy::too_many_lines, reason = "the command's steps, in order")]
async fn run_async(printer: &Printer, args: &RunArgs) -> Result<ExitCode, Error> {
    // Installed first: a signal at any later point shuts down gracefully.
    let (Ok(mut sigint), Ok(mut sigterm)) = (
        signal(SignalKind::interrupt()),
        signal(SignalKind::terminate()),
    ) else {
        return Err(Error::Environment(
            "cannot install signal handlers".to_owned(),
        ));
    };
    // Everything that can refuse the request runs before the runtime exists: a refused run
    // writes nothing (no delegation directory, no `events.jsonl`), and a bad request file is
    // the same usage error (exit 2) here as in `slate delegate --file`.
    let plan = Plan::new(&args.embed)?;
    let request = crate::cli::fleet::read_json(&args.file).map_err(Error::Usage)?;
    let call = match parse_delegate_task(&request) {
        Ok(call) => call,
        Err(native) => {
            if let Ok(SubagentRequest::Launch(call)) = parse_subagent(&request) {
                call
            } else {
                return Err(Error::problems("the request is invalid", native));
            }
        }
    };
    let offered = pi_offered_tools();
    let resolved = plan.routing.with_context(call.tasks.len(), |routing| {
        let ctx = ResolveContext {
            profiles: &plan.loaded.profiles,
            root_cwd: &plan.loaded.cwd,
            delegator: None,
            offered: &offered,
            models: &plan.models,
            fs: &RealFs,
            routing,
        };
        resolve_call(&call, &ctx)
    });
    // The same problems `slate delegate` gets from its coordinator as `invalid-request`, and
    // the same exit (2).
    let tasks = resolved.map_err(|problems| Error::problems("the request is invalid", problems))?;
    let embedded = Embedded::launch(plan, &args.embed).await?;

    // pi workers cannot run without it (their extension guards every request and tool);
    // the simulated workers only lose outside observation.
    let control = match embedded.serve_in_background() {
        Ok(control) => Some(control),
        Err(e) if args.embed.backend == Backend::Pi => {
            let _ = rt_shutdown(&embedded).await;
            return Err(Error::Environment(e));
        }
        Err(e) => {
            printer.err_line(&format!(
                "slate run: not observable from other commands: {e}"
            ));
            None
        }
    };
    let Embedded {
        rt,
        join,
        root_id,
        delegation_dir,
        ..
    } = embedded;
    let mut events = rt.subscribe();
    let fg = match rt.delegate(Party::Root, tasks).await {
        Ok(Ok(fg)) => fg,
        Ok(Err(refusal)) => {
            let _ = rt.shutdown().await;
            let _ = join.await;
            if let Some(control) = control {
                control.stop().await;
            }
            return Err(Error::Refused(refusal));
        }
        Err(e) => {
            if let Some(control) = control {
                control.stop().await;
            }
            return Err(Error::Environment(e.to_string()));
        }
    };
    if !printer.json() {
        printer.err_line(&format!(
            "slate run: parent {root_id}, {} task(s); events in {}{}",
            match &fg.admitted {
                crate::core::Reply::Admitted { children, .. } => children.len(),
                _ => 0,
            },
            delegation_dir.join("events.jsonl").display(),
            control
                .as_ref()
                .map(|c| format!("; socket {}", c.socket().display()))
                .unwrap_or_default()
        ));
    }
    let mut outcome = fg.outcome;
    let mut shown: std::collections::HashMap<crate::core::ChildRef, (Status, Option<String>)> =
        std::collections::HashMap::new();
    let result = loop {
        tokio::select! {
            done = &mut outcome => break done.ok(),
            _ = sigint.recv() => break None,
            _ = sigterm.recv() => break None,
            event = events.recv() => {
                if let Ok(RuntimeEvent::Registry(e)) = event && !printer.json() {
                    // Only what changed: a new status, or a new newest activity.
                    let now = (e.child.status, e.child.activity.clone());
                    let before = shown.insert(e.child.child_ref(), now.clone());
                    if before.as_ref() != Some(&now) {
                        let status_changed = before.is_none_or(|(status, _)| status != now.0);
                        progress(printer, &e.child, status_changed);
                    }
                }
            }
        }
    };
    if result.is_none() && !printer.json() {
        printer.err_line("slate run: interrupted — stopping every worker and draining…");
    }
    let _ = rt.shutdown().await;
    let report = join.await.unwrap_or_default();
    if let Some(control) = control {
        control.stop().await;
    }
    let Some(outcome) = result else {
        if !printer.json() {
            printer.err_line(&format!(
                "slate run: shut down ({} worker(s) started, {} terminated after the grace period)",
                report.workers_started, report.workers_killed
            ));
        }
        // Interrupted: every worker was stopped; no outcome to print.
        return Ok(ExitCode::Refused);
    };
    if printer.json() {
        printer.value(&outcome.outcomes)?;
    } else {
        printer.out(&table(&outcome.outcomes))?;
    }
    if outcome.outcomes.iter().all(|s| s.status == Status::Settled) {
        Ok(ExitCode::Ok)
    } else {
        Ok(ExitCode::Refused)
    }
}

fn progress(printer: &Printer, s: &ChildSnapshot, status_changed: bool) {
    let detail = match (&s.error, s.status, &s.activity) {
        (Some(e), Status::Failed | Status::Cancelled, _) => format!(": {e}"),
        (_, _, Some(activity)) if !status_changed => format!(" · {activity}"),
        _ => String::new(),
    };
    let line = format!(
        "  {} {:<14} {:<9} {}{}",
        s.child_ref(),
        s.profile.as_str(),
        s.status.as_str(),
        fit(SafeText::line(&s.assignment).as_str(), 40),
        SafeText::line(&detail)
    );
    printer.err_line(&fit(&line, 200));
}

fn table(outcomes: &[ChildSnapshot]) -> String {
    use std::fmt::Write as _;
    let mut out = String::new();
    for s in outcomes {
        let t = &s.telemetry;
        let tokens = t.tokens.map_or("—".to_owned(), |k| k.total.to_string());
        let cost = t.cost.map_or("—".to_owned(), |c| format!("${c:.4}"));
        let _ = writeln!(
            out,
            "{} {} {} requests {} tools {} tokens {} cost {}",
            s.child_ref(),
            s.profile.as_str(),
            s.status.as_str(),
            t.requests.unwrap_or(0),
            s.tool_calls,
            tokens,
            cost
        );
        if let Some(error) = &s.error {
            let _ = writeln!(out, "  error: {}", SafeText::line(error));
        }
        if let Some(result) = &s.result {
            let _ = writeln!(
                out,
                "  result: {}",
                fit(SafeText::line(result).as_str(), 160)
            );
        }
        if let Some(path) = s.artifacts.as_ref().and_then(|a| a.text.as_ref()) {
            let _ = writeln!(out, "  result.txt: {}", SafeText::line(path));
        }
    }
    out
}

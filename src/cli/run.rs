//! `slate run FILE`: resolve one `delegate_task` (or compatibility `subagent` launch) request
//! by policy and run it in an embedded coordinator in the foreground, with real pi workers
//! (or the simulated backend). Prints progress and the ordered outcomes; SIGINT/SIGTERM shut
//! down gracefully (every worker stopped, drained and disposed) before exiting.

use std::collections::BTreeSet;
use std::io::Read as _;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use serde_json::Value;
use tokio::signal::unix::{SignalKind, signal};

use crate::cli::profiles::report_problems;
use crate::cli::{ExitCode, Printer};
use crate::config::{Loaded, load};
use crate::core::{ChildSnapshot, ModelSelection, Party, Refusal, Status};
use crate::policy::Problem;
use crate::policy::capabilities::pi_offered_tools;
use crate::policy::model::ModelContext;
use crate::policy::request::{SubagentRequest, parse_delegate_task, parse_subagent};
use crate::policy::resolve::{ResolveContext, resolve_call};
use crate::runtime::{RuntimeConfig, RuntimeEvent, WorkerBackend, spawn};
use crate::store::fs::RealFs;
use crate::store::paths;
use crate::text::{SafeText, fit};
use crate::worker::pi::{PiBackend, PiCommand};
use crate::worker::sim::SimBackend;

/// Which workers run the tasks.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum Backend {
    /// Real `pi --mode rpc` processes (`$SLATE_PI` or `pi` on PATH).
    Pi,
    /// The scripted simulated worker (`assets/demo/scripts.json`).
    Sim,
}

pub struct RunArgs {
    pub file: PathBuf,
    pub backend: Backend,
    pub approve: Option<bool>,
    pub model: Option<String>,
}

pub fn run(printer: &Printer, args: &RunArgs) -> ExitCode {
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            printer.error(&format!("cannot start the async runtime: {e}"));
            return ExitCode::Usage;
        }
    };
    runtime.block_on(run_async(printer, args))
}

fn read_request(file: &Path) -> Result<Value, String> {
    let text = if file == Path::new("-") {
        let mut text = String::new();
        std::io::stdin()
            .read_to_string(&mut text)
            .map_err(|e| format!("standard input: {e}"))?;
        text
    } else {
        std::fs::read_to_string(file).map_err(|e| format!("{}: {e}", file.display()))?
    };
    serde_json::from_str(&text).map_err(|e| format!("{}: invalid JSON: {e}", file.display()))
}

/// The root's own model: `--model provider/id[:effort]`, else pi's settings defaults.
fn root_model(loaded: &Loaded, flag: Option<&str>) -> Result<ModelSelection, Problem> {
    if let Some(text) = flag {
        let (selection, effort) = text
            .rsplit_once(':')
            .map_or((text, None), |(s, e)| (s, Some(e)));
        let (provider, id) = selection
            .split_once('/')
            .ok_or_else(|| Problem::new("--model", "must be provider/id[:effort]").value(text))?;
        return Ok(ModelSelection {
            provider: provider.to_owned(),
            id: id.to_owned(),
            effort: effort.map(str::to_owned),
        });
    }
    let settings_path = loaded.agent_dir.join("settings.json");
    let settings: Value = std::fs::read(&settings_path)
        .ok()
        .and_then(|bytes| serde_json::from_slice(&bytes).ok())
        .unwrap_or(Value::Null);
    let text = |key: &str| settings.get(key).and_then(Value::as_str).map(str::to_owned);
    match (text("defaultProvider"), text("defaultModel")) {
        (Some(provider), Some(id)) => Ok(ModelSelection {
            provider,
            id,
            effort: text("defaultThinkingLevel"),
        }),
        _ => Err(Problem::new(
            "--model",
            format!(
                "no model: pass --model provider/id, or set defaultProvider and defaultModel in {}",
                settings_path.display()
            ),
        )),
    }
}

#[allow(clippy::too_many_lines, reason = "the command's steps, in order")]
async fn run_async(printer: &Printer, args: &RunArgs) -> ExitCode {
    // Installed first: a signal at any later point shuts down gracefully.
    let (Ok(mut sigint), Ok(mut sigterm)) = (
        signal(SignalKind::interrupt()),
        signal(SignalKind::terminate()),
    ) else {
        printer.error("cannot install signal handlers");
        return ExitCode::Usage;
    };
    let cwd = match std::env::current_dir() {
        Ok(cwd) => cwd,
        Err(e) => {
            printer.error(&format!("the current directory cannot be read: {e}"));
            return ExitCode::Usage;
        }
    };
    let loaded = match load(&cwd, args.approve) {
        Ok(loaded) => loaded,
        Err(problems) => {
            report_problems(printer, "the delegation policy is invalid", &problems);
            return ExitCode::Usage;
        }
    };
    let request = match read_request(&args.file) {
        Ok(value) => value,
        Err(e) => {
            printer.error(&e);
            return ExitCode::Usage;
        }
    };
    let call = match parse_delegate_task(&request) {
        Ok(call) => call,
        Err(native) => {
            if let Ok(SubagentRequest::Launch(call)) = parse_subagent(&request) {
                call
            } else {
                report_problems(printer, "the request is invalid", &native);
                return ExitCode::Usage;
            }
        }
    };
    let parent = match root_model(&loaded, args.model.as_deref()) {
        Ok(model) => model,
        Err(problem) => {
            report_problems(printer, "no model for the root", &[problem]);
            return ExitCode::Usage;
        }
    };
    let models = ModelContext {
        known_providers: BTreeSet::from([parent.provider.clone()]),
        parent,
        operator_grants: Vec::new(),
        parent_allowlist: None,
    };
    let offered = pi_offered_tools();
    let ctx = ResolveContext {
        profiles: &loaded.profiles,
        root_cwd: &loaded.cwd,
        delegator: None,
        offered: &offered,
        models: &models,
        fs: &RealFs,
    };
    let tasks = match resolve_call(&call, &ctx) {
        Ok(tasks) => tasks,
        Err(problems) => {
            report_problems(printer, "the request was refused by policy", &problems);
            return ExitCode::Refused;
        }
    };

    let backend: Arc<dyn WorkerBackend> = match args.backend {
        Backend::Sim => Arc::new(SimBackend::new(crate::demo::script_book())),
        Backend::Pi => {
            let pi = PiCommand::from_env();
            // The version gate runs before any identity exists: fail closed, naming both.
            if let Err(e) = PiBackend::check_version(&pi).await {
                printer.error(&format!("pi cannot run delegated work: {e}"));
                return ExitCode::Usage;
            }
            Arc::new(PiBackend::new(pi))
        }
    };
    let root_id = uuid::Uuid::new_v4();
    let session_dir = match paths::parent_session_dir(None, &loaded.agent_dir, &loaded.cwd) {
        Ok(dir) => dir,
        Err(e) => {
            printer.error(&e.to_string());
            return ExitCode::Usage;
        }
    };
    let config = RuntimeConfig {
        root_id,
        policy: loaded.profiles.scheduling,
        id_seed: uuid::Uuid::new_v4().as_u64_pair().0,
        delegation_dir: paths::delegation_dir(&session_dir, root_id),
        event_log: true,
        kill_grace: Duration::from_secs(10),
    };
    let delegation_dir = config.delegation_dir.clone();
    let (rt, join) = match spawn(config, backend) {
        Ok(started) => started,
        Err(e) => {
            printer.error(&e.to_string());
            return ExitCode::Usage;
        }
    };
    let mut events = rt.subscribe();
    let fg = match rt.delegate(Party::Root, tasks).await {
        Ok(Ok(fg)) => fg,
        Ok(Err(refusal)) => {
            refused(printer, &refusal);
            let _ = rt.shutdown().await;
            return ExitCode::Refused;
        }
        Err(e) => {
            printer.error(&e.to_string());
            return ExitCode::Usage;
        }
    };
    if !printer.json() {
        printer.err_line(&format!(
            "slate run: parent {root_id}, {} task(s); events in {}",
            match &fg.admitted {
                crate::core::Reply::Admitted { children, .. } => children.len(),
                _ => 0,
            },
            delegation_dir.join("events.jsonl").display()
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
    let Some(outcome) = result else {
        if !printer.json() {
            printer.err_line(&format!(
                "slate run: shut down ({} worker(s) started, {} terminated after the grace period)",
                report.workers_started, report.workers_killed
            ));
        }
        return ExitCode::Refused;
    };
    if printer.json() {
        printer.value(&outcome.outcomes);
    } else {
        printer.out(&table(&outcome.outcomes));
    }
    if outcome.outcomes.iter().all(|s| s.status == Status::Settled) {
        ExitCode::Ok
    } else {
        ExitCode::Refused
    }
}

fn refused(printer: &Printer, refusal: &Refusal) {
    if printer.json() {
        printer.value(&serde_json::json!({ "error": refusal }));
    } else {
        printer.error(&format!("refused [{}]: {refusal}", refusal.code()));
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

//! `slate pi doctor`: is Slate usable from pi here? One line per check, each a verdict (`ok`,
//! `note` for something optional or expected, `problem`) and, unless it is ok, the fix.
//! Exit 0 when no check found a problem, 1 when one did (`docs/cli.md`).
//!
//! The checks: pi's version (`pi --version` through the launcher workers use, `$SLATE_PI` or
//! `pi`) against the supported host; the extension listed in the user and project settings;
//! the installed files against this binary's embedded extension; `install.json`'s binary; a
//! coordinator serving this directory (discovery, then `hello`).

use std::fmt::Write as _;
use std::os::unix::fs::MetadataExt as _;
use std::path::{Path, PathBuf};

use serde::Serialize;

use crate::cli::{Error, ExitCode, Printer};
use crate::control::{Client, RuntimeDir, Selector, discovery};
use crate::install::files::{Inspection, inspect};
use crate::install::settings::{HostEnv, Scope, Settings};
use crate::install::{InstallError, Layout};
use crate::policy::version::MINIMUM_VERSION;
use crate::text::SafeText;
use crate::worker::pi::{PiBackend, PiCommand};

/// A check's outcome.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub enum Verdict {
    Ok,
    /// Optional or expected (nothing to fix for Slate to work).
    Note,
    Problem,
}

impl Verdict {
    fn as_str(self) -> &'static str {
        match self {
            Self::Ok => "ok",
            Self::Note => "note",
            Self::Problem => "problem",
        }
    }
}

/// One line of the report.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Check {
    /// `pi`, `user`, `project`, `files`, `binary`, `coordinator`.
    pub name: &'static str,
    pub verdict: Verdict,
    pub detail: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub fix: Option<String>,
}

impl Check {
    fn ok(name: &'static str, detail: impl Into<String>) -> Self {
        Self {
            name,
            verdict: Verdict::Ok,
            detail: detail.into(),
            fix: None,
        }
    }

    fn note(name: &'static str, detail: impl Into<String>, fix: impl Into<String>) -> Self {
        Self {
            name,
            verdict: Verdict::Note,
            detail: detail.into(),
            fix: Some(fix.into()),
        }
    }

    fn problem(name: &'static str, detail: impl Into<String>, fix: impl Into<String>) -> Self {
        Self {
            name,
            verdict: Verdict::Problem,
            detail: detail.into(),
            fix: Some(fix.into()),
        }
    }
}

/// The whole report (the `--json` document).
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct DoctorReport {
    pub checks: Vec<Check>,
    /// How many checks are problems (exit 1 when any).
    pub problems: usize,
}

const INSTALL: &str = "run `slate pi install` (then restart pi, or /reload in it)";

pub fn run(printer: &Printer) -> Result<ExitCode, Error> {
    let env = HostEnv::from_env().map_err(super::pi::error)?;
    let layout = Layout::from_env().map_err(super::pi::error)?;
    let exe = std::env::current_exe().ok();
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| Error::Environment(format!("cannot start the async runtime: {e}")))?;
    let mut checks = vec![runtime.block_on(pi_check())];
    checks.extend(extension_checks(&env, &layout, exe.as_deref()));
    checks.push(runtime.block_on(coordinator_check(&env.cwd)));
    let problems = checks
        .iter()
        .filter(|c| c.verdict == Verdict::Problem)
        .count();
    let report = DoctorReport { checks, problems };
    if printer.json() {
        printer.value(&report)?;
    } else {
        printer.out(&text(&report))?;
    }
    Ok(if problems == 0 {
        ExitCode::Ok
    } else {
        ExitCode::Refused
    })
}

/// The report as text: `verdict  check  detail`, the fix indented under it.
pub fn text(report: &DoctorReport) -> String {
    let mut out = String::new();
    for c in &report.checks {
        let _ = writeln!(
            out,
            "{:<8} {:<12} {}",
            c.verdict.as_str(),
            c.name,
            SafeText::line(&c.detail)
        );
        if let Some(fix) = &c.fix {
            let _ = writeln!(out, "{:<21} fix: {}", "", SafeText::line(fix));
        }
    }
    match report.problems {
        0 => out.push_str("No problems found.\n"),
        1 => out.push_str("1 problem found.\n"),
        n => {
            let _ = writeln!(out, "{n} problems found.");
        }
    }
    out
}

async fn pi_check() -> Check {
    let pi = PiCommand::from_env();
    let mut command = pi.program.to_string_lossy().into_owned();
    for arg in &pi.leading {
        command.push(' ');
        command.push_str(&arg.to_string_lossy());
    }
    let source = if std::env::var_os("SLATE_PI").is_some_and(|v| !v.is_empty()) {
        "SLATE_PI"
    } else {
        "PATH"
    };
    match PiBackend::check_version(&pi).await {
        Ok(version) => Check::ok(
            "pi",
            format!(
                "pi {version} ({command}, from {source}): supported (stable {MINIMUM_VERSION} or newer)"
            ),
        ),
        Err(e) => Check::problem(
            "pi",
            format!("{e} ({command}, from {source})"),
            format!(
                "install stable pi {MINIMUM_VERSION} or newer, or set SLATE_PI to the pi to use"
            ),
        ),
    }
}

/// Whether a settings file lists the installed directory: `Ok(true|false)`, or the check
/// that says why it cannot be read.
fn listed(check: &'static str, path: &Path, entry: &str) -> Result<bool, Check> {
    match Settings::read(path) {
        Ok(settings) => Ok(settings.has_entry(entry)),
        Err(InstallError::Settings(problem)) => Err(Check::problem(
            check,
            format!("pi's settings cannot be read as Slate reads them: {problem}"),
            format!("correct {}, then {INSTALL}", path.display()),
        )),
        Err(e) => Err(Check::problem(
            check,
            e.to_string(),
            format!("make {} readable", path.display()),
        )),
    }
}

/// The user and project settings, the installed files and `install.json`'s binary.
fn extension_checks(env: &HostEnv, layout: &Layout, exe: Option<&Path>) -> Vec<Check> {
    let mut checks = Vec::new();
    let entry = match layout.entry() {
        Ok(entry) => entry,
        Err(e) => {
            checks.push(Check::problem(
                "files",
                e.to_string(),
                "set XDG_DATA_HOME to a UTF-8 path",
            ));
            return checks;
        }
    };
    let user = env.settings_path(Scope::User);
    let project = env.settings_path(Scope::Project);
    let user_listed = match &user {
        Ok(path) => listed("user", path, &entry),
        Err(e) => Err(Check::problem(
            "user",
            e.to_string(),
            "set HOME or PI_CODING_AGENT_DIR",
        )),
    };
    let project_listed = match &project {
        Ok(path) => listed("project", path, &entry),
        Err(e) => Err(Check::problem(
            "project",
            e.to_string(),
            "run doctor in the project",
        )),
    };
    let anywhere = matches!(user_listed, Ok(true)) || matches!(project_listed, Ok(true));
    let path_of = |p: &Result<PathBuf, InstallError>| {
        p.as_ref()
            .map(|p| p.display().to_string())
            .unwrap_or_default()
    };
    checks.push(match user_listed {
        Ok(true) => Check::ok(
            "user",
            format!("installed: {} lists {entry}", path_of(&user)),
        ),
        Ok(false) if anywhere => Check::note(
            "user",
            format!(
                "not installed in {} (the project install covers this project only)",
                path_of(&user)
            ),
            "`slate pi install` for every project",
        ),
        Ok(false) => Check::problem(
            "user",
            format!("not installed: {} does not list {entry}", path_of(&user)),
            INSTALL,
        ),
        Err(check) => check,
    });
    checks.push(match project_listed {
        Ok(true) => Check::ok(
            "project",
            format!(
                "installed: {} lists {entry} (pi loads it only when it trusts this project)",
                path_of(&project)
            ),
        ),
        Ok(false) => Check::note(
            "project",
            format!("not installed in {}", path_of(&project)),
            "optional: `slate pi install --project` for this project only",
        ),
        Err(check) => check,
    });
    let seen = inspect(&layout.extension_dir());
    checks.push(files_check(&seen, &entry, anywhere));
    if seen.present {
        checks.push(binary_check(&seen, exe));
    }
    checks
}

fn files_check(seen: &Inspection, entry: &str, listed: bool) -> Check {
    if !seen.present {
        return if listed {
            Check::problem(
                "files",
                format!("{entry} is listed in pi's settings but missing"),
                INSTALL,
            )
        } else {
            Check::note("files", format!("{entry} does not exist"), INSTALL)
        };
    }
    let manifest_hash = seen.manifest.as_ref().ok().map(|m| m.extension.as_str());
    if seen.is_current() && manifest_hash == Some(seen.binary_hash.as_str()) {
        return Check::ok(
            "files",
            format!(
                "current: {entry} holds this binary's extension {}",
                seen.binary_hash
            ),
        );
    }
    let mut why = Vec::new();
    if !seen.differing.is_empty() {
        why.push(format!(
            "differing or missing: {}",
            seen.differing.join(", ")
        ));
    }
    if !seen.extra.is_empty() {
        why.push(format!("not part of it: {}", seen.extra.join(", ")));
    }
    match &seen.manifest {
        Ok(m) if m.extension != seen.binary_hash => {
            why.push(format!("install.json names extension {}", m.extension));
        }
        Ok(_) => {}
        Err(e) => why.push(format!("install.json unreadable ({e})")),
    }
    let installed = seen.installed_hash.as_deref().unwrap_or("incomplete");
    Check::problem(
        "files",
        format!(
            "stale: {entry} holds extension {installed}, this binary has {} ({})",
            seen.binary_hash,
            why.join("; ")
        ),
        INSTALL,
    )
}

/// Whether two paths are the same file (device and inode).
fn same_file(a: &Path, b: &Path) -> bool {
    match (std::fs::metadata(a), std::fs::metadata(b)) {
        (Ok(a), Ok(b)) => a.dev() == b.dev() && a.ino() == b.ino(),
        _ => false,
    }
}

fn binary_check(seen: &Inspection, exe: Option<&Path>) -> Check {
    let overridden = std::env::var_os("SLATE_BIN")
        .filter(|v| !v.is_empty())
        .map(|v| {
            format!(
                " (SLATE_BIN={} overrides it for the extension)",
                PathBuf::from(v).display()
            )
        })
        .unwrap_or_default();
    let manifest = match &seen.manifest {
        Ok(m) => m,
        Err(e) => return Check::problem("binary", format!("install.json: {e}"), INSTALL),
    };
    let named = manifest.slate.display();
    if !manifest.slate.is_file() {
        return Check::problem(
            "binary",
            format!("install.json names {named}, which does not exist{overridden}"),
            INSTALL,
        );
    }
    match exe {
        Some(exe) if same_file(&manifest.slate, exe) => Check::ok(
            "binary",
            format!(
                "install.json names this binary, {named} (slate {}){overridden}",
                manifest.version
            ),
        ),
        Some(exe) => Check::problem(
            "binary",
            format!(
                "install.json names {named} (slate {}), but this is {}{overridden}",
                manifest.version,
                exe.display()
            ),
            format!(
                "run `slate pi install` with the slate pi should use (this one: {})",
                exe.display()
            ),
        ),
        None => Check::problem(
            "binary",
            format!("install.json names {named}, and this binary cannot tell its own path"),
            INSTALL,
        ),
    }
}

async fn coordinator_check(cwd: &Path) -> Check {
    let located =
        discovery::locate_connected(&RuntimeDir::from_env(), &Selector::from_env(None), cwd);
    let located = match located {
        Ok(located) => located,
        Err(e) if e.is_unreachable() => {
            return Check::note(
                "coordinator",
                format!("none serves {} right now", cwd.display()),
                "pi with the extension starts one for its session; `slate serve` starts one by hand",
            );
        }
        Err(e) => {
            return Check::problem(
                "coordinator",
                e.to_string(),
                "fix the runtime directory (XDG_RUNTIME_DIR) named above",
            );
        }
    };
    let socket = located.endpoint.socket.clone();
    match Client::connect_located(located).await {
        Ok(client) => match client.server() {
            Some(hello) => Check::ok(
                "coordinator",
                format!(
                    "parent {} serves {} ({}, pid {}, socket {})",
                    hello.parent_id,
                    hello.cwd,
                    hello.server,
                    hello.pid,
                    socket.display()
                ),
            ),
            None => Check::problem("coordinator", "no hello answer", "restart pi"),
        },
        Err(e) => Check::problem(
            "coordinator",
            format!("{} does not complete hello: {e}", socket.display()),
            "restart pi (its coordinator starts with the session) or the `slate serve` there",
        ),
    }
}

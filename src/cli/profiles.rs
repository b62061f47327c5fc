//! `slate profiles`: the resolved profiles and tool policy for the current directory.

use std::fmt::Write as _;

use crate::cli::{Error, ExitCode, Printer};
use crate::config::{ProfilesView, load};
use crate::policy::Problem;
use crate::policy::profiles::{Layer, SourceStatus};
use crate::text::SafeText;
use crate::ui::profiles::Content;

pub fn run(
    printer: &Printer,
    approve: Option<bool>,
    prompts: bool,
    text: bool,
) -> Result<ExitCode, Error> {
    let cwd = std::env::current_dir()
        .map_err(|e| Error::Environment(format!("the current directory cannot be read: {e}")))?;
    let loaded = load(&cwd, approve);
    // In a terminal (no --json, no --text) the read-only overlay shows the same answer.
    if !printer.json() && !text && std::io::IsTerminal::is_terminal(&std::io::stdout()) {
        return overlay(loaded);
    }
    let loaded =
        loaded.map_err(|problems| Error::problems("the delegation policy is invalid", problems))?;
    let view = ProfilesView::new(loaded);
    // Without a terminal (a pipe, a script) the structured answer is the useful one.
    if printer.json() || (!text && !std::io::IsTerminal::is_terminal(&std::io::stdout())) {
        printer.value(&view)?;
    } else {
        printer.out(&render(&view, prompts))?;
    }
    Ok(ExitCode::Ok)
}

/// The profiles overlay; an invalid configuration shows every problem there and exits 2
/// after it is closed, like the text and JSON answers.
fn overlay(loaded: Result<crate::config::Loaded, Vec<Problem>>) -> Result<ExitCode, Error> {
    let (content, code) = match loaded {
        Ok(loaded) => (
            Content::Profiles(Box::new(ProfilesView::new(loaded))),
            ExitCode::Ok,
        ),
        Err(problems) => (Content::Invalid(problems), ExitCode::Usage),
    };
    crate::ui::profiles::run(content)
        .map_err(|e| Error::Environment(format!("the profiles overlay failed: {e}")))?;
    Ok(code)
}

fn list(items: impl IntoIterator<Item = String>) -> String {
    let items: Vec<String> = items.into_iter().collect();
    if items.is_empty() {
        "—".to_owned()
    } else {
        items.join(", ")
    }
}

pub fn render(view: &ProfilesView, prompts: bool) -> String {
    let policy = &view.tool_policy;
    let mut out = String::new();
    let trust = policy.project_trust.as_ref().map_or_else(
        || "no project delegation config".to_owned(),
        |t| SafeText::line(&t.to_string()).into_string(),
    );
    let _ = writeln!(
        out,
        "Profiles for {}",
        SafeText::line(&policy.cwd.display().to_string())
    );
    let _ = writeln!(out, "project trust: {trust}");
    for source in &policy.sources {
        let layer = match source.layer {
            Layer::Operator => "operator",
            Layer::Project => "project",
        };
        let status = match source.status {
            SourceStatus::Applied => "applied",
            SourceStatus::Absent => "absent",
            SourceStatus::IgnoredUntrusted => "ignored: project not trusted",
        };
        let _ = writeln!(
            out,
            "{layer:<9} {} ({status})",
            SafeText::line(&source.file)
        );
    }
    let s = &policy.scheduling;
    let _ = writeln!(
        out,
        "scheduling: concurrency {} · queue {} · batch {} · depth {} · spawns {} · deadlineMs {} · requests {} · tools {}",
        s.concurrency, s.queue, s.batch, s.depth, s.spawns, s.deadline_ms, s.requests, s.tools
    );
    let offered = list(policy.offered_tools.iter().map(|t| t.name.clone()));
    let _ = writeln!(out, "worker offers: {offered}");
    for p in &view.profiles {
        let _ = writeln!(out, "\n{} — {}", p.name, SafeText::line(&p.description));
        let _ = writeln!(
            out,
            "  tools         {}",
            list(p.tools.iter().map(ToString::to_string))
        );
        let _ = writeln!(
            out,
            "  leaf tools    {}",
            list(p.leaf_tools.iter().map(|t| SafeText::line(t).into_string()))
        );
        let _ = writeln!(
            out,
            "  skills        {}",
            list(p.skills.iter().map(|t| SafeText::line(t).into_string()))
        );
        let _ = writeln!(
            out,
            "  spawn         {}",
            list(p.spawn.iter().map(ToString::to_string))
        );
        let _ = writeln!(
            out,
            "  coordination  {}",
            list(p.coordination.iter().map(|a| a.as_str().to_owned()))
        );
        let prompt = SafeText::lines(&p.prompt);
        if prompts {
            let _ = writeln!(out, "  prompt:");
            for line in prompt.as_str().lines() {
                let _ = writeln!(out, "    {line}");
            }
        } else {
            let first = prompt.as_str().lines().next().unwrap_or("");
            let _ = writeln!(
                out,
                "  prompt        {first} ({} lines; --prompts shows them)",
                prompt.as_str().lines().count()
            );
        }
    }
    out
}

//! The details text of one profile, and the problem list of an invalid configuration, as
//! logical lines (wrapped by the caller). Every configured string goes through `SafeText`.

use ratatui::style::Style;

use crate::config::ProfilesView;
use crate::policy::Problem;
use crate::policy::profiles::Profile;
use crate::text::SafeText;
use crate::ui::profiles::safe;
use crate::ui::theme;

type Logical = Vec<(String, Style)>;

fn list(items: impl IntoIterator<Item = String>) -> String {
    let items: Vec<String> = items.into_iter().collect();
    if items.is_empty() {
        "none".to_owned()
    } else {
        items.join(", ")
    }
}

fn field(out: &mut Logical, name: &str, value: &str) {
    out.push((format!("{name:<14}{value}"), Style::default()));
}

fn heading(out: &mut Logical, text: &str) {
    out.push((String::new(), Style::default()));
    out.push((text.to_owned(), theme::title()));
}

/// Description, ceilings, grants, model policy, then the full prompt.
pub fn profile(p: &Profile, view: &ProfilesView) -> Logical {
    let mut out = Logical::new();
    out.push((safe(&p.description), Style::default()));
    heading(&mut out, "Ceilings (not guaranteed session rights)");
    let offered: Vec<String> = view
        .tool_policy
        .offered_tools
        .iter()
        .map(|t| safe(&t.name))
        .collect();
    field(
        &mut out,
        "builtin tools",
        &list(p.tools.iter().map(ToString::to_string)),
    );
    field(&mut out, "worker offers", &list(offered));
    field(
        &mut out,
        "reviewed leaf",
        &list(p.leaf_tools.iter().map(|t| safe(t))),
    );
    heading(&mut out, "Skills");
    if p.skills.is_empty() {
        out.push(("none".to_owned(), theme::dim()));
    }
    for skill in &p.skills {
        out.push((safe(skill), Style::default()));
    }
    heading(&mut out, "Grants");
    field(
        &mut out,
        "spawn",
        &list(p.spawn.iter().map(|r| r.as_str().to_owned())),
    );
    field(
        &mut out,
        "coordination",
        &list(p.coordination.iter().map(|a| a.as_str().to_owned())),
    );
    heading(&mut out, "Model policy");
    out.push((
        "no model: the parent's exact selection, effort included".to_owned(),
        Style::default(),
    ));
    out.push((
        "an override needs an exact operator grant; `models` only narrows".to_owned(),
        Style::default(),
    ));
    let s = &view.tool_policy.scheduling;
    heading(&mut out, "Scheduling (shared by every profile)");
    field(
        &mut out,
        "limits",
        &format!(
            "deadlineMs {} · requests {} · tools {} · depth {} · spawns {}",
            s.deadline_ms, s.requests, s.tools, s.depth, s.spawns
        ),
    );
    field(
        &mut out,
        "capacity",
        &format!(
            "concurrency {} · queue {} · batch {}",
            s.concurrency, s.queue, s.batch
        ),
    );
    let prompt = SafeText::lines(&p.prompt);
    heading(
        &mut out,
        &format!("Prompt ({} lines)", prompt.as_str().lines().count()),
    );
    for line in prompt.as_str().lines() {
        out.push((line.to_owned(), Style::default()));
    }
    out
}

/// Every problem: file, JSON path, offending value and rule.
pub fn problems(problems: &[Problem]) -> Logical {
    let mut out = Logical::new();
    out.push((
        "The delegation configuration did not resolve; nothing was admitted with it.".to_owned(),
        Style::default(),
    ));
    for (i, p) in problems.iter().enumerate() {
        out.push((String::new(), Style::default()));
        out.push((format!("{}. {}", i + 1, safe(&p.rule)), theme::error()));
        if let Some(file) = &p.file {
            out.push((format!("   file   {}", safe(file)), Style::default()));
        }
        out.push((format!("   path   {}", safe(&p.path)), Style::default()));
        if let Some(value) = &p.value {
            out.push((format!("   value  {}", safe(value)), Style::default()));
        }
    }
    out
}

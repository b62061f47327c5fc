//! The model-facing wording of tool answers, and the rows renderers lay out. Every untrusted
//! text (results, errors, activity) goes through [`SafeText`] here.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use super::ToolRow;
use crate::core::{ChildSnapshot, Millis, Status};
use crate::text::SafeText;

/// The first non-blank line of untrusted text, cleaned.
fn first_line(raw: &str) -> Option<String> {
    let line = raw.lines().map(str::trim).find(|l| !l.is_empty())?;
    Some(SafeText::line(line).into_string())
}

/// Where artifact paths are shown from: the project, and the user's home.
#[derive(Clone, Debug, Default)]
pub struct Places {
    pub cwd: PathBuf,
    /// `HOME`, when it is an absolute directory other than `/`.
    pub home: Option<PathBuf>,
}

impl Places {
    pub fn new(cwd: PathBuf, home: Option<PathBuf>) -> Self {
        let home = home.filter(|h| h.is_absolute() && h.parent().is_some());
        Self { cwd, home }
    }
}

/// `path` as a person reads it, still exact: relative to the project inside it, `~/…` under
/// the home directory (a worker's artifacts live under pi's agent dir, `~/.pi/agent` by
/// default), absolute otherwise; sanitized.
pub fn shown_path(path: &str, places: &Places) -> String {
    let p = Path::new(path);
    let shown = if let Ok(rest) = p.strip_prefix(&places.cwd)
        && !places.cwd.as_os_str().is_empty()
        && !rest.as_os_str().is_empty()
    {
        rest.display().to_string()
    } else if let Some(rest) = places
        .home
        .as_deref()
        .and_then(|home| p.strip_prefix(home).ok())
        .filter(|rest| !rest.as_os_str().is_empty())
    {
        format!("~/{}", rest.display())
    } else {
        path.to_owned()
    };
    SafeText::line(&shown).into_string()
}

/// The row of one child at `now`.
pub fn row(child: &ChildSnapshot, places: &Places, now: Millis) -> ToolRow {
    let r = crate::core::ChildRef::new(child.id, child.generation);
    let ended = matches!(
        child.status,
        Status::Settled | Status::Failed | Status::Cancelled
    );
    let headline = if ended {
        match child.status {
            Status::Settled => child.result.as_deref().and_then(first_line),
            _ => child
                .error
                .as_deref()
                .or(child.activity.as_deref())
                .and_then(first_line),
        }
    } else {
        None
    };
    let artifacts = child
        .artifacts
        .iter()
        .flat_map(|a| [&a.text, &a.structured, &a.error])
        .flatten()
        .map(|p| shown_path(p, places))
        .collect();
    let mut row = ToolRow {
        target: r.to_string(),
        handle: r.handle(),
        role: child.profile.as_str().to_owned(),
        status: child.status.as_str().to_owned(),
        elapsed_ms: child
            .ended_at
            .unwrap_or(now)
            .saturating_sub(child.created_at),
        tokens: child.telemetry.tokens.map(|t| t.total),
        cost: child.telemetry.cost,
        activity: child
            .activity
            .as_deref()
            .or(child.progress.as_deref())
            .and_then(first_line),
        headline,
        artifacts,
        line: String::new(),
    };
    row.line = row_line(&row, crate::ui::fleet::status_glyph(child.status));
    row
}

/// One line: mark, role, handle, elapsed, tokens, cost, then the headline once ended or the
/// latest activity while running; `mark` is the status's mark as the fleet widget draws it.
fn row_line(row: &ToolRow, mark: &str) -> String {
    let mut out = format!(
        "{} {} {} {}",
        mark,
        row.role,
        row.handle,
        crate::text::elapsed_text(row.elapsed_ms)
    );
    if let Some(tokens) = row.tokens {
        let _ = write!(out, " {} tok", crate::text::compact_count(tokens));
    }
    if let Some(cost) = row.cost {
        let _ = write!(out, " ${cost:.4}");
    }
    if let Some(text) = row.headline.as_ref().or(row.activity.as_ref()) {
        out.push_str(" · ");
        out.push_str(text);
    } else if row.status != "running" {
        out.push(' ');
        out.push_str(&row.status);
    }
    out
}

/// One line per row.
pub fn rows_text(rows: &[ToolRow]) -> String {
    rows.iter()
        .map(|r| r.line.as_str())
        .collect::<Vec<_>>()
        .join("\n")
}

/// An accepted background call: a few lines the model needs (identities, roles, what
/// follows); the snapshots stay in `details`.
pub fn accepted(call: u64, rows: &[ToolRow], wake: &str) -> String {
    let n = rows.len();
    let mut out = format!(
        "Accepted {n} task{} in the background (call {call}):\n",
        if n == 1 { "" } else { "s" }
    );
    for row in rows {
        let _ = writeln!(out, "- {} {} ({})", row.target, row.role, row.status);
    }
    out.push_str(wake);
    out
}

/// What follows an accepted background call, per tool.
pub const NOTIFY: &str = "One message with the outcomes follows when they drain (it does not start a turn); delegate_coordinate wait or status reads them meanwhile.";
pub const FOLLOW_UP: &str =
    "One message with the outcomes wakes you when they finish: do not poll.";

/// A drained background window, for the model: what it was, then the preview.
pub fn outcome(call: u64, preview: &str) -> String {
    format!(
        "Background call {call} drained.\n{}",
        SafeText::lines(preview).as_str()
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn places() -> Places {
        Places::new(
            PathBuf::from("/home/u/src/app"),
            Some(PathBuf::from("/home/u")),
        )
    }

    #[test]
    fn artifact_paths_are_relative_in_the_project_and_abbreviated_under_home() {
        let p = places();
        assert_eq!(
            shown_path("/home/u/src/app/out/result.txt", &p),
            "out/result.txt"
        );
        assert_eq!(
            shown_path(
                "/home/u/.pi/agent/sessions/--home-u-src-app--/delegation/p/c/result.txt",
                &p
            ),
            "~/.pi/agent/sessions/--home-u-src-app--/delegation/p/c/result.txt"
        );
        // Outside both: exact, as given.
        assert_eq!(shown_path("/tmp/x/result.txt", &p), "/tmp/x/result.txt");
        // A sibling that only shares a prefix of the name is not inside.
        assert_eq!(shown_path("/home/u2/result.txt", &p), "/home/u2/result.txt");
        assert_eq!(
            shown_path("/home/u/src/application/r.txt", &p),
            "~/src/application/r.txt"
        );
    }

    #[test]
    fn a_root_or_relative_home_abbreviates_nothing_and_every_path_is_sanitized() {
        for home in ["/", "relative/home", ""] {
            let p = Places::new(PathBuf::from("/work"), Some(PathBuf::from(home)));
            assert_eq!(shown_path("/tmp/r.txt", &p), "/tmp/r.txt", "{home:?}");
        }
        let p = places();
        let shown = shown_path("/home/u/.pi/a\u{1b}[31mred\nline/result.txt", &p);
        assert!(shown.starts_with("~/.pi/a"), "{shown:?}");
        assert!(
            !shown.chars().any(char::is_control),
            "no control character reaches a terminal: {shown:?}"
        );
    }
}

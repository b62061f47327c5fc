//! `slate status` / `subagent-status`.
//!
//! A running coordinator is reached through its control socket; until one is serving this
//! directory there is nothing to query, which is exit code 3 with a hint.

use crate::cli::{ExitCode, Printer};
use crate::core::ChildRef;

pub fn run(printer: &Printer, target: Option<&str>) -> ExitCode {
    if let Some(target) = target
        && let Err(e) = target.parse::<ChildRef>()
    {
        printer.error(&format!("target {target:?}: {e}"));
        return ExitCode::Usage;
    }
    let cwd = std::env::current_dir().map_or_else(
        |_| "the current directory".to_owned(),
        |d| crate::text::SafeText::line(&d.display().to_string()).into_string(),
    );
    printer.error(&format!(
        "no Slate coordinator is reachable for {cwd}. This build runs fleets embedded \
         (`slate demo`); a serving coordinator (`slate serve`) is not part of it yet."
    ));
    ExitCode::NoCoordinator
}

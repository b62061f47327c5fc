//! Loading the routing policy for the current directory: `<agentDir>/slate.json`, then the
//! project's `.pi/slate.json` when pi's trust decision allows it. The IO edge for
//! `policy::routing`.

use std::path::{Path, PathBuf};

use crate::policy::Problem;
use crate::policy::routing::{
    ErrorClass, ProjectFile, RoutingProblem, RoutingReport, SlateFile, SourceStatus, resolve,
};
use crate::policy::trust::TrustDecision;

use super::{fs_exists, read_config};

/// The home file's name in the agent dir; the project file is `.pi/slate.json`.
pub const SLATE_FILE: &str = "slate.json";

/// The routing report for one directory, with the facts that decided which files applied.
#[derive(Clone, Debug)]
pub struct LoadedRouting {
    pub cwd: PathBuf,
    pub agent_dir: PathBuf,
    /// `None` when the project has neither `.pi/delegation.json` nor `.pi/slate.json`.
    pub trust: Option<TrustDecision>,
    pub report: RoutingReport,
}

/// Resolve the routing policy for `cwd`. `approve` is `--approve` (`Some(true)`) or
/// `--no-approve` (`Some(false)`).
///
/// # Errors
/// The agent dir or the working directory cannot be resolved, or pi's trust files are
/// malformed (nothing is trusted then). Problems of the `slate.json` files themselves are in
/// the report (they block routing), not here.
pub fn load_routing(cwd: &Path, approve: Option<bool>) -> Result<LoadedRouting, Vec<Problem>> {
    let super::Located {
        cwd,
        agent_dir,
        trust,
    } = super::locate(cwd, approve)?;
    let trusted = trust.as_ref().is_some_and(|t| t.trusted);

    let home_path = agent_dir.join(SLATE_FILE);
    let project_path = cwd.join(".pi").join(SLATE_FILE);
    let home_label = home_path.display().to_string();
    let project_label = project_path.display().to_string();
    let mut unreadable = Vec::new();
    let home_text = read(&home_path, &mut unreadable);
    // An untrusted project's file is not even read.
    let project_text = if trusted {
        read(&project_path, &mut unreadable)
    } else {
        None
    };
    let project = if trusted {
        ProjectFile::Trusted(SlateFile {
            label: &project_label,
            bytes: project_text.as_deref().map(str::as_bytes),
        })
    } else if fs_exists(&project_path) {
        ProjectFile::Untrusted {
            label: &project_label,
        }
    } else {
        ProjectFile::Absent
    };
    let mut report = resolve(
        &SlateFile {
            label: &home_label,
            bytes: home_text.as_deref().map(str::as_bytes),
        },
        &project,
    );
    if !unreadable.is_empty() {
        for source in &mut report.sources {
            if unreadable
                .iter()
                .any(|p| p.problem.file.as_deref() == Some(source.file.as_str()))
            {
                source.status = SourceStatus::Invalid;
            }
        }
        report.errors.splice(0..0, unreadable);
        report.blocked = true;
        report.policy = None;
    }
    Ok(LoadedRouting {
        cwd,
        agent_dir,
        trust,
        report,
    })
}

/// A file's text; a file that exists but cannot be read is a blocking problem.
fn read(path: &Path, problems: &mut Vec<RoutingProblem>) -> Option<String> {
    read_config(path).unwrap_or_else(|problem| {
        problems.push(RoutingProblem {
            class: ErrorClass::InvalidJson,
            problem,
        });
        None
    })
}

//! `slate pi install | uninstall | doctor`: Slate's extension in the user's own pi
//! ([`crate::install`] does the work; this prints what it changed).

use std::fmt::Write as _;
use std::path::Path;

use clap::Subcommand;

use crate::cli::{Error, ExitCode, Printer};
use crate::install::files::FileChange;
use crate::install::settings::{HostEnv, Scope};
use crate::install::{
    DirectoryRemoved, InstallError, InstallReport, Layout, SettingsAdded, SettingsRemoved,
    UninstallReport,
};
use crate::text::SafeText;

#[derive(Clone, Copy, Debug, Subcommand)]
pub enum PiAction {
    /// Install Slate's extension into pi: its files into Slate's data dir and that directory
    /// into pi's settings `extensions` (user settings, or this project's `.pi/settings.json`
    /// with --project). Idempotent; prints every change.
    Install {
        /// This project's `.pi/settings.json` (pi loads it only in a trusted project).
        #[arg(long)]
        project: bool,
    },
    /// Undo `slate pi install`: the settings as they were before it (only Slate's entry
    /// removed if they were edited since), and the installed files.
    Uninstall {
        /// This project's `.pi/settings.json`.
        #[arg(long)]
        project: bool,
    },
    /// Check pi's version, the installed extension and this directory's coordinator; each
    /// line a verdict with its fix. Exit 1 when a problem is found.
    Doctor,
}

/// Runs one `slate pi` action.
pub fn run(printer: &Printer, action: PiAction) -> Result<ExitCode, Error> {
    let scope = |project: bool| {
        if project { Scope::Project } else { Scope::User }
    };
    match action {
        PiAction::Install { project } => install(printer, scope(project)),
        PiAction::Uninstall { project } => uninstall(printer, scope(project)),
        PiAction::Doctor => super::doctor::run(printer),
    }
}

/// An install failure as the CLI reports it: settings Slate cannot edit are a configuration
/// error naming file and field (exit 2, `invalid-config`); the rest is the environment.
pub fn error(e: InstallError) -> Error {
    match e {
        InstallError::Settings(problem) => Error::problems(
            "pi's settings cannot be edited safely; nothing was changed",
            vec![problem],
        ),
        InstallError::Usage(message) => Error::Usage(message),
        other => Error::Environment(other.to_string()),
    }
}

fn install(printer: &Printer, scope: Scope) -> Result<ExitCode, Error> {
    let env = HostEnv::from_env().map_err(error)?;
    let settings = env.settings_path(scope).map_err(error)?;
    let layout = Layout::from_env().map_err(error)?;
    let slate = std::env::current_exe()
        .map_err(|e| Error::Environment(format!("cannot tell where this slate binary is: {e}")))?;
    let report = crate::install::install(&layout, scope, &settings, &slate).map_err(error)?;
    if printer.json() {
        printer.value(&report)?;
    } else {
        printer.out(&install_text(&report))?;
    }
    Ok(ExitCode::Ok)
}

fn uninstall(printer: &Printer, scope: Scope) -> Result<ExitCode, Error> {
    let env = HostEnv::from_env().map_err(error)?;
    let settings = env.settings_path(scope).map_err(error)?;
    let layout = Layout::from_env().map_err(error)?;
    let report = crate::install::uninstall(&layout, scope, &settings).map_err(error)?;
    if printer.json() {
        printer.value(&report)?;
    } else {
        printer.out(&uninstall_text(&report))?;
    }
    Ok(ExitCode::Ok)
}

fn shown(path: &Path) -> SafeText {
    SafeText::line(&path.display().to_string())
}

/// `slate pi install`'s text: every file and the settings entry, with what happened to each.
pub fn install_text(r: &InstallReport) -> String {
    let mut out = String::new();
    let scope = r.scope.as_str();
    if r.changed {
        let _ = writeln!(out, "Installed Slate's pi extension ({scope} scope):");
    } else {
        let _ = writeln!(
            out,
            "Slate's pi extension is already installed and current ({scope} scope); nothing changed:"
        );
    }
    if let Some(m) = &r.migrated {
        let _ = writeln!(
            out,
            "  migrated: the install pi listed as `pi-extension` was undone first ({}/ {})",
            shown(&m.directory),
            match m.directory_change {
                DirectoryRemoved::Removed => "removed",
                DirectoryRemoved::Kept => "kept for another scope",
                DirectoryRemoved::Absent => "was not there",
            }
        );
    }
    let _ = writeln!(out, "  {}/", shown(&r.directory));
    for file in &r.files {
        let _ = writeln!(
            out,
            "    {:<10} {}",
            file.change.as_str(),
            SafeText::line(&file.name)
        );
    }
    let _ = writeln!(out, "  {}", shown(&r.settings));
    let change = match r.settings_change {
        SettingsAdded::Created => "created, with \"extensions\" entry",
        SettingsAdded::Added => "added \"extensions\" entry",
        SettingsAdded::AlreadyPresent => "already has \"extensions\" entry",
    };
    let _ = writeln!(out, "    {change} {}", SafeText::line(&r.entry));
    let written = r.files.iter().any(|f| f.change != FileChange::Unchanged);
    if r.changed && (written || r.settings_change != SettingsAdded::AlreadyPresent) {
        out.push_str("Restart pi (or run /reload in it) to load the extension.\n");
    }
    if r.scope == Scope::Project {
        out.push_str(
            "pi loads project settings only in a trusted project (it asks, or pi --approve).\n",
        );
    }
    out
}

/// `slate pi uninstall`'s text.
pub fn uninstall_text(r: &UninstallReport) -> String {
    let mut out = String::new();
    let scope = r.scope.as_str();
    if r.changed {
        let _ = writeln!(out, "Uninstalled Slate's pi extension ({scope} scope):");
    } else {
        let _ = writeln!(
            out,
            "Slate's pi extension is not installed ({scope} scope); nothing changed:"
        );
    }
    let _ = writeln!(out, "  {}", shown(&r.settings));
    let change = match r.settings_change {
        SettingsRemoved::Restored => {
            "restored, byte for byte, to what it was before `slate pi install`"
        }
        SettingsRemoved::Removed => "removed (`slate pi install` had created it)",
        SettingsRemoved::EntryRemoved => {
            "edited since install: removed only Slate's \"extensions\" entry"
        }
        SettingsRemoved::NotPresent => "has no \"extensions\" entry of Slate's: unchanged",
        SettingsRemoved::Missing => "does not exist: unchanged",
    };
    let _ = writeln!(out, "    {change}");
    if let Some(problem) = &r.record_problem {
        let _ = writeln!(
            out,
            "    (the install record was unreadable: {})",
            SafeText::line(problem)
        );
    }
    let _ = writeln!(out, "  {}/", shown(&r.directory));
    match r.directory_change {
        DirectoryRemoved::Removed => out.push_str("    removed\n"),
        DirectoryRemoved::Absent => out.push_str("    not there: unchanged\n"),
        DirectoryRemoved::Kept => {
            out.push_str("    kept: still installed for\n");
            for settings in &r.kept_for {
                let _ = writeln!(out, "      {}", shown(settings));
            }
        }
    }
    if r.changed {
        out.push_str("Restart pi (or run /reload in it) to unload the extension.\n");
    }
    out
}

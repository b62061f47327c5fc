//! `slate pi install` / `slate pi uninstall`: Slate's extension in the user's own pi.
//!
//! Install writes the embedded extension (the table workers load, plus `install.json`) to
//! `<data dir>/slate/slate/` ([`files`]; pi names an extension by its directory) and adds that
//! directory's absolute path to the `extensions` array of pi's settings for a scope
//! ([`settings`]): the user's
//! (`$PI_CODING_AGENT_DIR/settings.json`, default `~/.pi/agent/settings.json`) or, with
//! `--project`, the current directory's `.pi/settings.json`. It is idempotent: a second run
//! finds every file and the entry in place and changes nothing.
//!
//! Uninstall undoes exactly that. Install keeps a [`record::Record`] of the settings text
//! before and after; when the file still holds exactly what install wrote, uninstall puts the
//! old bytes back (or removes the file, and the directories, install created); when someone
//! edited it since, only Slate's entry is taken out. The extension directory goes once no
//! other scope's install still uses it.
//!
//! Nothing is changed when the settings file cannot be edited safely (see [`settings`]): the
//! error names the file and the field.
//!
//! The data dir comes from the `directories` crate, as Slate's cache dir does
//! (`$XDG_DATA_HOME`, else `~/.local/share`, on Linux).

pub mod files;
pub mod record;
pub mod settings;
pub mod spans;

use std::io;
use std::path::{Path, PathBuf};

use serde::Serialize;

use crate::policy::Problem;
use files::FileReport;
use record::{Record, Records};
use settings::{Lock, Scope, Settings};

/// The directory under Slate's data dir that pi loads. pi lists an extension by its
/// directory's name, so the name is `slate`.
pub const EXTENSION_SUBDIR: &str = "slate";
/// Where installs before 0.1.0's rename put it (pi listed it as `pi-extension`); install
/// migrates such an install ([`install`]).
pub const LEGACY_EXTENSION_SUBDIR: &str = "pi-extension";
/// The directory under Slate's data dir with the install records.
pub const RECORDS_SUBDIR: &str = "pi-install";

/// Why an install or uninstall did not happen (or stopped).
#[derive(Debug, thiserror::Error)]
pub enum InstallError {
    /// The settings file cannot be edited safely; nothing was changed.
    #[error("{0}")]
    Settings(Problem),
    #[error("cannot {action} {}: {source}", path.display())]
    Io {
        path: PathBuf,
        action: &'static str,
        #[source]
        source: io::Error,
    },
    #[error("{0}")]
    NoHome(&'static str),
    #[error("{0}")]
    Usage(String),
    #[error(
        "{} is held by another process (pi saving its settings?) for more than 2 s; nothing was changed, try again",
        .0.display()
    )]
    Locked(PathBuf),
}

/// Where Slate keeps what install writes: `<data dir>/slate`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Layout {
    pub data: PathBuf,
    /// [`EXTENSION_SUBDIR`], or [`LEGACY_EXTENSION_SUBDIR`] while migrating.
    subdir: &'static str,
}

impl Layout {
    pub fn new(data: impl Into<PathBuf>) -> Self {
        Self {
            data: data.into(),
            subdir: EXTENSION_SUBDIR,
        }
    }

    /// The same data dir with the extension where installs before the rename put it.
    #[must_use]
    pub fn legacy(&self) -> Self {
        Self {
            data: self.data.clone(),
            subdir: LEGACY_EXTENSION_SUBDIR,
        }
    }

    /// Slate's data dir from the environment.
    pub fn from_env() -> Result<Self, InstallError> {
        let dirs = directories::ProjectDirs::from("", "", "slate").ok_or(InstallError::NoHome(
            "no home directory, so no data directory for Slate's pi extension",
        ))?;
        let data = std::path::absolute(dirs.data_dir()).map_err(|source| InstallError::Io {
            path: dirs.data_dir().to_owned(),
            action: "resolve",
            source,
        })?;
        Ok(Self::new(data))
    }

    /// The installed extension directory (the `extensions` entry).
    pub fn extension_dir(&self) -> PathBuf {
        self.data.join(self.subdir)
    }

    pub fn records(&self) -> Records {
        Records::new(self.data.join(RECORDS_SUBDIR))
    }

    /// The `extensions` entry: the directory's absolute path as text.
    pub fn entry(&self) -> Result<String, InstallError> {
        let dir = self.extension_dir();
        dir.to_str().map(str::to_owned).ok_or_else(|| {
            InstallError::Usage(format!(
                "Slate's data directory {} is not UTF-8, so it cannot be named in pi's settings; set XDG_DATA_HOME to a UTF-8 path",
                dir.display()
            ))
        })
    }
}

/// What install did to the settings file.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub enum SettingsAdded {
    /// The file did not exist: created holding the entry.
    Created,
    Added,
    AlreadyPresent,
}

/// `slate pi install`'s report (its `--json` document).
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct InstallReport {
    pub scope: Scope,
    /// The extension directory.
    pub directory: PathBuf,
    pub files: Vec<FileReport>,
    pub settings: PathBuf,
    /// The `extensions` entry.
    pub entry: String,
    pub settings_change: SettingsAdded,
    /// Whether anything was written or removed.
    pub changed: bool,
    /// An install from before the rename was undone first (its uninstall report).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub migrated: Option<UninstallReport>,
}

/// Installs for `scope`, whose settings file is `settings_path`, naming the binary `slate`
/// in `install.json`.
pub fn install(
    layout: &Layout,
    scope: Scope,
    settings_path: &Path,
    slate: &Path,
) -> Result<InstallReport, InstallError> {
    // An install from before the rename (pi lists it as `pi-extension`) is undone first, as
    // `slate pi uninstall` of that version would, so the settings hold one Slate entry.
    let legacy = layout.legacy();
    let migrated = if layout.subdir != LEGACY_EXTENSION_SUBDIR
        && Settings::read(settings_path)?.has_entry(&legacy.entry()?)
    {
        Some(uninstall(&legacy, scope, settings_path)?)
    } else {
        None
    };
    let entry = layout.entry()?;
    let directory = layout.extension_dir();
    let records = layout.records();
    let mut created = Vec::new();
    let lock = Lock::acquire(settings_path, &mut created)?;
    let result = (|| {
        // Checked before anything is written: a file Slate cannot edit changes nothing.
        let current = Settings::read(settings_path)?;
        let files = files::write_dir(&directory, slate)?;
        let settings_change = if current.has_entry(&entry) {
            SettingsAdded::AlreadyPresent
        } else {
            let after = current.with_entry(&entry);
            let record = Record {
                settings: settings_path.to_owned(),
                entry: entry.clone(),
                before: current.text.clone(),
                after: after.clone(),
                created_dirs: created.clone(),
            };
            // The record first: a settings change is never left without one.
            records.store(&record)?;
            if let Err(e) = settings::write(settings_path, &after) {
                let _ = records.remove(settings_path);
                return Err(e);
            }
            if current.text.is_none() {
                SettingsAdded::Created
            } else {
                SettingsAdded::Added
            }
        };
        let changed = settings_change != SettingsAdded::AlreadyPresent
            || files
                .iter()
                .any(|f| f.change != files::FileChange::Unchanged);
        Ok(InstallReport {
            scope,
            directory: directory.clone(),
            files,
            settings: settings_path.to_owned(),
            entry: entry.clone(),
            settings_change,
            changed: changed || migrated.as_ref().is_some_and(|m| m.changed),
            migrated: migrated.clone(),
        })
    })();
    drop(lock);
    if result.is_err()
        || result
            .as_ref()
            .is_ok_and(|r| r.settings_change == SettingsAdded::AlreadyPresent)
    {
        // Directories made only for the lock of a settings file that was not written.
        settings::remove_empty_dirs(&created);
    }
    result
}

/// What uninstall did to the settings file.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub enum SettingsRemoved {
    /// Nobody edited it since install: the bytes from before install are back.
    Restored,
    /// Install created it and nobody edited it since: removed (with the directories install
    /// created for it, when empty).
    Removed,
    /// Edited since install (or installed without a record): only Slate's entry was taken out.
    EntryRemoved,
    /// The file does not hold Slate's entry: left alone.
    NotPresent,
    /// There is no settings file.
    Missing,
}

/// What happened to the extension directory.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub enum DirectoryRemoved {
    Removed,
    /// Another scope's install still uses it (`keptFor`).
    Kept,
    Absent,
}

/// `slate pi uninstall`'s report (its `--json` document).
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct UninstallReport {
    pub scope: Scope,
    pub settings: PathBuf,
    pub entry: String,
    pub settings_change: SettingsRemoved,
    pub directory: PathBuf,
    pub directory_change: DirectoryRemoved,
    /// The settings files of installs that still use the directory.
    pub kept_for: Vec<PathBuf>,
    /// The install record could not be read (so the settings were treated as edited): why.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub record_problem: Option<String>,
    pub changed: bool,
}

/// Uninstalls for `scope`, whose settings file is `settings_path`.
pub fn uninstall(
    layout: &Layout,
    scope: Scope,
    settings_path: &Path,
) -> Result<UninstallReport, InstallError> {
    let entry = layout.entry()?;
    let records = layout.records();
    let (record, record_problem) = match records.load(settings_path) {
        Ok(record) => (record, None),
        Err(problem) => (None, Some(problem)),
    };
    // pi's lock only where the settings directory exists (uninstall creates nothing).
    let parent_exists = settings_path.parent().is_some_and(Path::is_dir);
    let lock = if parent_exists {
        Some(Lock::acquire(settings_path, &mut Vec::new())?)
    } else {
        None
    };
    let current = Settings::read(settings_path)?;
    let (settings_change, created_dirs) = match (&current.text, &record) {
        (Some(text), Some(r)) if *text == r.after && r.entry == entry => {
            if let Some(before) = &r.before {
                settings::write(settings_path, before)?;
                (SettingsRemoved::Restored, Vec::new())
            } else {
                settings::remove(settings_path, &[])?;
                (SettingsRemoved::Removed, r.created_dirs.clone())
            }
        }
        (Some(_), _) => match current.without_entry(&entry) {
            Some(text) => {
                settings::write(settings_path, &text)?;
                (SettingsRemoved::EntryRemoved, Vec::new())
            }
            None => (SettingsRemoved::NotPresent, Vec::new()),
        },
        (None, Some(r)) if r.before.is_none() => (SettingsRemoved::Missing, r.created_dirs.clone()),
        (None, _) => (SettingsRemoved::Missing, Vec::new()),
    };
    drop(lock);
    settings::remove_empty_dirs(&created_dirs);
    // An unreadable record goes too: it describes nothing uninstall can still use.
    records.remove(settings_path)?;
    let directory = layout.extension_dir();
    let kept_for = records.settings_files();
    let directory_change = if !kept_for.is_empty() {
        DirectoryRemoved::Kept
    } else if files::remove_dir(&directory)? {
        DirectoryRemoved::Removed
    } else {
        DirectoryRemoved::Absent
    };
    let changed = matches!(
        settings_change,
        SettingsRemoved::Restored | SettingsRemoved::Removed | SettingsRemoved::EntryRemoved
    ) || directory_change == DirectoryRemoved::Removed;
    Ok(UninstallReport {
        scope,
        settings: settings_path.to_owned(),
        entry,
        settings_change,
        directory,
        directory_change,
        kept_for,
        record_problem,
        changed,
    })
}

#[cfg(test)]
mod tests;

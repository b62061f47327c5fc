//! What `slate pi install` did to a settings file, kept in Slate's data dir
//! (`<data dir>/slate/pi-install/<hash of the settings path>.json`, 0600 in a 0700 directory)
//! so `slate pi uninstall` can undo exactly that: the text before and after, and the
//! directories it created for the file.

use std::fs;
use std::io;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use super::InstallError;
use crate::worker::pi::extension::{hash_files, private_dir};

/// One settings file's install.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Record {
    /// The settings file (absolute, as resolved for its scope).
    pub settings: PathBuf,
    /// The `extensions` entry install added.
    pub entry: String,
    /// The file's text before install; `None` when install created the file.
    pub before: Option<String>,
    /// The text install wrote.
    pub after: String,
    /// Directories install created for the file, outermost first.
    pub created_dirs: Vec<PathBuf>,
}

/// The records directory.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Records {
    dir: PathBuf,
}

impl Records {
    pub fn new(dir: impl Into<PathBuf>) -> Self {
        Self { dir: dir.into() }
    }

    fn path_for(&self, settings: &Path) -> PathBuf {
        let name = hash_files([("settings", settings.as_os_str().as_encoded_bytes())]);
        self.dir.join(format!("{name}.json"))
    }

    /// The record for `settings`: `Ok(None)` when there is none, `Err` naming the record file
    /// when it cannot be read.
    pub fn load(&self, settings: &Path) -> Result<Option<Record>, String> {
        let path = self.path_for(settings);
        match fs::read(&path) {
            Ok(bytes) => serde_json::from_slice::<Record>(&bytes)
                .map_err(|e| format!("{}: {e}", path.display()))
                .and_then(|record| {
                    if record.settings == settings {
                        Ok(Some(record))
                    } else {
                        Err(format!(
                            "{}: records {}, not {}",
                            path.display(),
                            record.settings.display(),
                            settings.display()
                        ))
                    }
                }),
            Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(None),
            Err(e) => Err(format!("{}: {e}", path.display())),
        }
    }

    /// Stores `record` (replacing an older one for the same file).
    pub fn store(&self, record: &Record) -> Result<(), InstallError> {
        let path = self.path_for(&record.settings);
        let io_error = |action: &'static str| {
            let path = path.clone();
            move |source| InstallError::Io {
                path,
                action,
                source,
            }
        };
        private_dir(&self.dir).map_err(|source| InstallError::Io {
            path: self.dir.clone(),
            action: "create",
            source,
        })?;
        let mut bytes = crate::json::to_vec_pretty(record).map_err(|e| InstallError::Io {
            path: path.clone(),
            action: "encode",
            source: io::Error::other(e),
        })?;
        bytes.push(b'\n');
        crate::store::replace::replace(&path, &bytes, 0o600).map_err(io_error("write"))
    }

    /// Forgets the record for `settings` (none is fine); the directory goes when empty.
    pub fn remove(&self, settings: &Path) -> Result<(), InstallError> {
        let path = self.path_for(settings);
        match fs::remove_file(&path) {
            Ok(()) => {}
            Err(e) if e.kind() == io::ErrorKind::NotFound => {}
            Err(source) => {
                return Err(InstallError::Io {
                    path,
                    action: "remove",
                    source,
                });
            }
        }
        let _ = fs::remove_dir(&self.dir);
        Ok(())
    }

    /// The settings files other installs are recorded for (readable records only).
    pub fn settings_files(&self) -> Vec<PathBuf> {
        let Ok(entries) = fs::read_dir(&self.dir) else {
            return Vec::new();
        };
        let mut out: Vec<PathBuf> = entries
            .flatten()
            .filter(|e| e.path().extension().is_some_and(|x| x == "json"))
            .filter_map(|e| fs::read(e.path()).ok())
            .filter_map(|bytes| serde_json::from_slice::<Record>(&bytes).ok())
            .map(|r| r.settings)
            .collect();
        out.sort();
        out
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, reason = "test fixtures fail loudly")]

    use super::{Record, Records};
    use std::path::PathBuf;

    #[test]
    fn records_are_kept_per_settings_file_and_forgotten_again() {
        let temp = tempfile::tempdir().unwrap();
        let records = Records::new(temp.path().join("pi-install"));
        let a = PathBuf::from("/home/u/.pi/agent/settings.json");
        let b = PathBuf::from("/work/p/.pi/settings.json");
        assert_eq!(records.load(&a), Ok(None));
        let record = Record {
            settings: a.clone(),
            entry: "/d".to_owned(),
            before: None,
            after: "{}".to_owned(),
            created_dirs: vec![PathBuf::from("/home/u/.pi")],
        };
        records.store(&record).unwrap();
        records
            .store(&Record {
                settings: b.clone(),
                before: Some("{\"a\": 1}".to_owned()),
                ..record.clone()
            })
            .unwrap();
        assert_eq!(records.load(&a).unwrap(), Some(record));
        assert_eq!(records.settings_files(), [a.clone(), b.clone()]);
        records.remove(&a).unwrap();
        assert_eq!(records.load(&a), Ok(None));
        assert_eq!(records.settings_files(), std::slice::from_ref(&b));
        records.remove(&b).unwrap();
        assert!(!temp.path().join("pi-install").exists());
    }

    #[test]
    fn an_unreadable_record_is_named() {
        let temp = tempfile::tempdir().unwrap();
        let records = Records::new(temp.path());
        let a = PathBuf::from("/a/settings.json");
        std::fs::write(records.path_for(&a), "not json").unwrap();
        let error = records.load(&a).unwrap_err();
        assert!(
            error.contains(&records.path_for(&a).display().to_string()),
            "{error}"
        );
    }
}

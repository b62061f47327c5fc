#![allow(clippy::unwrap_used, reason = "test fixtures fail loudly")]

use std::fs;
use std::os::unix::fs::PermissionsExt as _;
use std::path::{Path, PathBuf};

use super::files::FileChange;
use super::settings::Scope;
use super::{
    DirectoryRemoved, InstallError, Layout, SettingsAdded, SettingsRemoved, install, uninstall,
};

const SLATE: &str = "/opt/slate/bin/slate";

struct Fixture {
    _temp: tempfile::TempDir,
    root: PathBuf,
    layout: Layout,
}

impl Fixture {
    fn new() -> Self {
        let temp = tempfile::tempdir().unwrap();
        let root = fs::canonicalize(temp.path()).unwrap();
        let layout = Layout::new(root.join("data/slate"));
        Self {
            _temp: temp,
            root,
            layout,
        }
    }

    fn settings(&self, rel: &str) -> PathBuf {
        self.root.join(rel)
    }

    fn install(&self, settings: &Path) -> super::InstallReport {
        install(&self.layout, Scope::User, settings, Path::new(SLATE)).unwrap()
    }

    fn uninstall(&self, settings: &Path) -> super::UninstallReport {
        uninstall(&self.layout, Scope::User, settings).unwrap()
    }
}

fn extensions(path: &Path) -> Vec<String> {
    let value: serde_json::Value = serde_json::from_slice(&fs::read(path).unwrap()).unwrap();
    value["extensions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_str().unwrap().to_owned())
        .collect()
}

#[test]
fn a_fresh_install_creates_the_settings_and_uninstall_removes_all_of_it() {
    let f = Fixture::new();
    let settings = f.settings("home/.pi/agent/settings.json");
    fs::create_dir(f.root.join("home")).unwrap();
    let first = f.install(&settings);
    assert_eq!(first.settings_change, SettingsAdded::Created);
    assert!(first.changed);
    assert!(first.files.iter().all(|x| x.change == FileChange::Written));
    assert_eq!(first.entry, f.layout.extension_dir().to_str().unwrap());
    assert_eq!(extensions(&settings), std::slice::from_ref(&first.entry));
    assert!(f.layout.extension_dir().join("index.ts").is_file());
    assert!(!settings.with_extension("json.lock").exists());

    let second = f.install(&settings);
    assert_eq!(second.settings_change, SettingsAdded::AlreadyPresent);
    assert!(!second.changed);
    assert!(
        second
            .files
            .iter()
            .all(|x| x.change == FileChange::Unchanged)
    );

    let gone = f.uninstall(&settings);
    assert_eq!(gone.settings_change, SettingsRemoved::Removed);
    assert_eq!(gone.directory_change, DirectoryRemoved::Removed);
    assert!(gone.changed);
    // The directories install made for the file went with it; the home stayed.
    assert!(!f.root.join("home/.pi").exists());
    assert!(f.root.join("home").is_dir());
    assert!(!f.layout.extension_dir().exists());
    assert!(!f.layout.data.join("pi-install").exists());

    let again = f.uninstall(&settings);
    assert_eq!(again.settings_change, SettingsRemoved::Missing);
    assert_eq!(again.directory_change, DirectoryRemoved::Absent);
    assert!(!again.changed);
}

#[test]
fn uninstall_restores_the_settings_byte_for_byte_with_their_mode() {
    let f = Fixture::new();
    let settings = f.settings("agent/settings.json");
    fs::create_dir(f.root.join("agent")).unwrap();
    let before = "{\n    \"theme\": \"dark\",\n    \"packages\": [],\n    \"extensions\": [\"/other/ext\"]\n}";
    fs::write(&settings, before).unwrap();
    fs::set_permissions(&settings, fs::Permissions::from_mode(0o640)).unwrap();
    let report = f.install(&settings);
    assert_eq!(report.settings_change, SettingsAdded::Added);
    assert_eq!(
        extensions(&settings),
        ["/other/ext".to_owned(), report.entry]
    );
    assert_eq!(
        fs::metadata(&settings).unwrap().permissions().mode() & 0o777,
        0o640
    );
    let gone = f.uninstall(&settings);
    assert_eq!(gone.settings_change, SettingsRemoved::Restored);
    assert_eq!(fs::read_to_string(&settings).unwrap(), before);
    assert_eq!(
        fs::metadata(&settings).unwrap().permissions().mode() & 0o777,
        0o640
    );
    assert_eq!(
        fs::read_dir(f.root.join("agent")).unwrap().count(),
        1,
        "only settings.json is left"
    );
}

#[test]
fn settings_edited_since_install_lose_only_slates_entry() {
    let f = Fixture::new();
    let settings = f.settings("agent/settings.json");
    fs::create_dir(f.root.join("agent")).unwrap();
    fs::write(&settings, "{\"theme\": \"dark\"}").unwrap();
    let report = f.install(&settings);
    let installed = fs::read_to_string(&settings).unwrap();
    let edited = installed
        .replace("\"dark\"", "\"light\"")
        .replace('[', "[\"/mine\", ");
    fs::write(&settings, &edited).unwrap();
    assert_eq!(extensions(&settings), ["/mine".to_owned(), report.entry]);
    let gone = f.uninstall(&settings);
    assert_eq!(gone.settings_change, SettingsRemoved::EntryRemoved);
    assert_eq!(
        fs::read_to_string(&settings).unwrap(),
        "{\"theme\": \"light\", \"extensions\": [\"/mine\"]}"
    );
}

#[test]
fn a_file_created_by_install_but_edited_since_is_kept() {
    let f = Fixture::new();
    let settings = f.settings("agent/settings.json");
    f.install(&settings);
    let edited = fs::read_to_string(&settings)
        .unwrap()
        .replace("{\n", "{\n  \"theme\": \"dark\",\n");
    fs::write(&settings, &edited).unwrap();
    let gone = f.uninstall(&settings);
    assert_eq!(gone.settings_change, SettingsRemoved::EntryRemoved);
    let value: serde_json::Value = serde_json::from_slice(&fs::read(&settings).unwrap()).unwrap();
    assert_eq!(
        value,
        serde_json::json!({"theme": "dark", "extensions": []})
    );
}

#[test]
fn settings_slate_cannot_edit_change_nothing() {
    let cases = [
        ("{\"extensions\": \"/x\"}", "$.extensions"),
        ("{\"extensions\": [], \"extensions\": []}", "$.extensions"),
        ("\u{feff}{}", "$"),
        ("{\"a\": 1", "$"),
        ("[]", "$"),
    ];
    for (text, field) in cases {
        let f = Fixture::new();
        let settings = f.settings("agent/settings.json");
        fs::create_dir(f.root.join("agent")).unwrap();
        fs::write(&settings, text).unwrap();
        let error = install(&f.layout, Scope::User, &settings, Path::new(SLATE)).unwrap_err();
        let InstallError::Settings(problem) = &error else {
            panic!("{text}: {error}");
        };
        assert_eq!(problem.path, field, "{text}");
        assert_eq!(
            problem.file.as_deref(),
            Some(settings.display().to_string().as_str())
        );
        assert_eq!(fs::read_to_string(&settings).unwrap(), text);
        assert!(!f.layout.data.exists(), "{text}: the data dir was written");
        assert_eq!(fs::read_dir(f.root.join("agent")).unwrap().count(), 1);
        // Uninstall refuses the same file the same way.
        assert!(matches!(
            uninstall(&f.layout, Scope::User, &settings),
            Err(InstallError::Settings(_))
        ));
        assert_eq!(fs::read_to_string(&settings).unwrap(), text);
    }
}

#[test]
fn the_directory_stays_while_another_scope_uses_it() {
    let f = Fixture::new();
    let user = f.settings("agent/settings.json");
    let project = f.settings("work/.pi/settings.json");
    fs::create_dir(f.root.join("work")).unwrap();
    f.install(&user);
    let second = install(&f.layout, Scope::Project, &project, Path::new(SLATE)).unwrap();
    assert_eq!(second.settings_change, SettingsAdded::Created);
    assert!(
        second
            .files
            .iter()
            .all(|x| x.change == FileChange::Unchanged)
    );
    let gone = uninstall(&f.layout, Scope::Project, &project).unwrap();
    assert_eq!(gone.settings_change, SettingsRemoved::Removed);
    assert_eq!(gone.directory_change, DirectoryRemoved::Kept);
    assert_eq!(gone.kept_for, std::slice::from_ref(&user));
    assert!(f.layout.extension_dir().is_dir());
    assert!(!f.root.join("work/.pi").exists());
    let last = f.uninstall(&user);
    assert_eq!(last.directory_change, DirectoryRemoved::Removed);
    assert!(!f.layout.extension_dir().exists());
}

#[test]
fn a_symlinked_settings_file_is_written_through_and_stays_a_link() {
    let f = Fixture::new();
    fs::create_dir_all(f.root.join("dotfiles")).unwrap();
    fs::create_dir_all(f.root.join("agent")).unwrap();
    let target = f.root.join("dotfiles/pi-settings.json");
    let before = "{\"theme\": \"dark\"}\n";
    fs::write(&target, before).unwrap();
    let settings = f.settings("agent/settings.json");
    std::os::unix::fs::symlink(&target, &settings).unwrap();
    let report = f.install(&settings);
    assert!(
        fs::symlink_metadata(&settings)
            .unwrap()
            .file_type()
            .is_symlink()
    );
    assert_eq!(extensions(&target), [report.entry]);
    f.uninstall(&settings);
    assert!(
        fs::symlink_metadata(&settings)
            .unwrap()
            .file_type()
            .is_symlink()
    );
    assert_eq!(fs::read_to_string(&target).unwrap(), before);
}

#[test]
fn an_entry_added_by_hand_is_left_on_install_and_removed_on_uninstall() {
    let f = Fixture::new();
    let settings = f.settings("agent/settings.json");
    fs::create_dir(f.root.join("agent")).unwrap();
    let entry = f.layout.entry().unwrap();
    let text = format!("{{\"extensions\": [\"{entry}\", \"/x\"]}}");
    fs::write(&settings, &text).unwrap();
    let report = f.install(&settings);
    assert_eq!(report.settings_change, SettingsAdded::AlreadyPresent);
    assert!(report.changed, "the files were written");
    assert_eq!(fs::read_to_string(&settings).unwrap(), text);
    assert!(!f.layout.data.join("pi-install").exists(), "no record");
    let gone = f.uninstall(&settings);
    assert_eq!(gone.settings_change, SettingsRemoved::EntryRemoved);
    assert_eq!(
        fs::read_to_string(&settings).unwrap(),
        "{\"extensions\": [\"/x\"]}"
    );
}

#[test]
fn a_held_lock_of_pis_changes_nothing() {
    let f = Fixture::new();
    let settings = f.settings("agent/settings.json");
    fs::create_dir(f.root.join("agent")).unwrap();
    fs::write(&settings, "{}").unwrap();
    fs::create_dir(f.root.join("agent/settings.json.lock")).unwrap();
    let error = install(&f.layout, Scope::User, &settings, Path::new(SLATE)).unwrap_err();
    assert!(matches!(error, InstallError::Locked(_)), "{error}");
    assert!(error.to_string().contains("settings.json.lock"), "{error}");
    assert_eq!(fs::read_to_string(&settings).unwrap(), "{}");
    assert!(!f.layout.data.exists());
}

#[test]
fn a_corrupt_record_falls_back_to_removing_the_entry_and_is_named() {
    let f = Fixture::new();
    let settings = f.settings("agent/settings.json");
    fs::create_dir(f.root.join("agent")).unwrap();
    fs::write(&settings, "{\"a\": 1}").unwrap();
    f.install(&settings);
    let records = f.layout.data.join("pi-install");
    for entry in fs::read_dir(&records).unwrap() {
        fs::write(entry.unwrap().path(), "garbage").unwrap();
    }
    let gone = f.uninstall(&settings);
    assert_eq!(gone.settings_change, SettingsRemoved::EntryRemoved);
    assert!(gone.record_problem.is_some());
    assert!(!records.exists());
    assert_eq!(gone.directory_change, DirectoryRemoved::Removed);
}

//! `slate pi install | uninstall | doctor` from the command line, in a private home, agent dir
//! and data dir: what each prints (text and `--json`), exit codes, a settings file Slate will
//! not edit, and every verdict of doctor (a stand-in `pi` script prints the version; a
//! `slate serve --backend sim` is the coordinator). Real pi loading the installed extension
//! is `tests/pi_install_real.rs`.

#![allow(clippy::unwrap_used, reason = "test fixtures fail loudly")]

use std::io::{BufRead as _, BufReader};
use std::os::unix::fs::PermissionsExt as _;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};

use serde_json::{Value, json};

struct Fixture {
    _temp: tempfile::TempDir,
    root: PathBuf,
    /// A stand-in pi: prints the version in `root/pi-version`.
    pi: PathBuf,
}

impl Fixture {
    fn new() -> Self {
        let temp = tempfile::Builder::new()
            .prefix("slate-cli-pi-")
            .tempdir()
            .unwrap();
        let root = std::fs::canonicalize(temp.path()).unwrap();
        for d in ["home", "work", "data", "run"] {
            std::fs::create_dir(root.join(d)).unwrap();
        }
        std::fs::set_permissions(root.join("run"), std::fs::Permissions::from_mode(0o700)).unwrap();
        let pi = root.join("pi");
        std::fs::write(
            &pi,
            format!("#!/bin/sh\ncat '{}'\n", root.join("pi-version").display()),
        )
        .unwrap();
        std::fs::set_permissions(&pi, std::fs::Permissions::from_mode(0o755)).unwrap();
        std::fs::write(root.join("pi-version"), "1.6.0\n").unwrap();
        Self {
            _temp: temp,
            root,
            pi,
        }
    }

    fn settings(&self) -> PathBuf {
        self.root.join("home/.pi/agent/settings.json")
    }

    fn extension_dir(&self) -> PathBuf {
        self.root.join("data/slate/slate")
    }

    fn command(&self, args: &[&str]) -> Command {
        let mut c = Command::new(env!("CARGO_BIN_EXE_slate"));
        c.args(args)
            .current_dir(self.root.join("work"))
            .env("HOME", self.root.join("home"))
            .env("XDG_DATA_HOME", self.root.join("data"))
            .env("XDG_RUNTIME_DIR", self.root.join("run"))
            .env("SLATE_PI", &self.pi)
            .env_remove("PI_CODING_AGENT_DIR")
            .env_remove("SLATE_SOCKET")
            .env_remove("SLATE_BIN");
        c
    }

    fn slate(&self, args: &[&str]) -> Output {
        self.command(args).output().unwrap()
    }

    fn json(&self, args: &[&str]) -> (Option<i32>, Value) {
        let mut all = vec!["--json"];
        all.extend_from_slice(args);
        let out = self.slate(&all);
        let value = serde_json::from_slice(&out.stdout)
            .unwrap_or_else(|e| panic!("{args:?}: {e}: {}", String::from_utf8_lossy(&out.stdout)));
        (out.status.code(), value)
    }

    fn doctor(&self) -> (Option<i32>, Value) {
        self.json(&["pi", "doctor"])
    }
}

fn stdout(out: &Output) -> String {
    String::from_utf8_lossy(&out.stdout).into_owned()
}

fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

/// The verdict of doctor's check `name`.
fn verdict(report: &Value, name: &str) -> (String, String) {
    let check = report["checks"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["name"] == name)
        .unwrap_or_else(|| panic!("no {name} check: {report}"));
    (
        check["verdict"].as_str().unwrap().to_owned(),
        check["detail"].as_str().unwrap().to_owned(),
    )
}

#[test]
fn install_prints_every_change_and_a_second_install_changes_nothing() {
    let f = Fixture::new();
    let first = f.slate(&["pi", "install"]);
    assert_eq!(first.status.code(), Some(0), "{}", stderr(&first));
    let text = stdout(&first);
    assert!(
        text.starts_with("Installed Slate's pi extension (user scope):"),
        "{text}"
    );
    for name in ["index.ts", "control.ts", "install.json"] {
        assert!(text.contains(&format!("written    {name}")), "{text}");
    }
    let entry = f.extension_dir().display().to_string();
    assert!(
        text.contains(&format!("created, with \"extensions\" entry {entry}")),
        "{text}"
    );
    let manifest: Value =
        serde_json::from_slice(&std::fs::read(f.extension_dir().join("install.json")).unwrap())
            .unwrap();
    assert_eq!(
        manifest["slate"],
        std::fs::canonicalize(env!("CARGO_BIN_EXE_slate"))
            .unwrap()
            .to_str()
            .unwrap()
    );
    let settings = std::fs::read(f.settings()).unwrap();

    let (code, second) = f.json(&["pi", "install"]);
    assert_eq!(code, Some(0));
    assert_eq!(second["changed"], false);
    assert_eq!(second["settingsChange"], "alreadyPresent");
    assert_eq!(second["scope"], "user");
    assert_eq!(second["entry"], entry.as_str());
    assert!(
        second["files"]
            .as_array()
            .unwrap()
            .iter()
            .all(|f| f["change"] == "unchanged")
    );
    assert_eq!(std::fs::read(f.settings()).unwrap(), settings);
    let again = stdout(&f.slate(&["pi", "install"]));
    assert!(again.contains("already installed and current"), "{again}");
    assert!(
        again.contains("already has \"extensions\" entry"),
        "{again}"
    );
    assert!(!again.contains("written"), "{again}");

    let removed = f.slate(&["pi", "uninstall"]);
    assert_eq!(removed.status.code(), Some(0));
    assert!(stdout(&removed).contains("removed (`slate pi install` had created it)"));
    assert!(!f.root.join("home/.pi").exists());
    assert!(!f.extension_dir().exists());
    let (code, nothing) = f.json(&["pi", "uninstall"]);
    assert_eq!(code, Some(0));
    assert_eq!(nothing["changed"], false);
    assert_eq!(nothing["settingsChange"], "missing");
}

#[test]
fn an_install_pi_listed_as_pi_extension_is_migrated_to_slate() {
    let f = Fixture::new();
    std::fs::create_dir_all(f.settings().parent().unwrap()).unwrap();
    let before = "{\n\t\"theme\": \"dark\"\n}\n";
    std::fs::write(f.settings(), before).unwrap();
    // The install of a Slate before the rename (its layout, through the library).
    let layout = slate::install::Layout::new(f.root.join("data/slate"));
    let old = slate::install::install(
        &layout.legacy(),
        slate::install::settings::Scope::User,
        &f.settings(),
        Path::new(env!("CARGO_BIN_EXE_slate")),
    )
    .unwrap();
    assert!(old.directory.ends_with("slate/pi-extension"), "{old:?}");
    let out = f.slate(&["pi", "install"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(
        stdout(&out).contains("migrated: the install pi listed as `pi-extension` was undone first"),
        "{}",
        stdout(&out)
    );
    let now: Value = serde_json::from_slice(&std::fs::read(f.settings()).unwrap()).unwrap();
    assert_eq!(
        now,
        json!({"theme": "dark", "extensions": [f.extension_dir().to_str().unwrap()]}),
        "one Slate entry, the new one"
    );
    assert!(!old.directory.exists(), "the old directory is gone");
    assert_eq!(
        f.extension_dir().file_name().unwrap(),
        "slate",
        "pi lists the extension as `slate`"
    );
    // And uninstall still restores the bytes from before the first install.
    let (code, removed) = f.json(&["pi", "uninstall"]);
    assert_eq!(code, Some(0));
    assert_eq!(removed["settingsChange"], "restored");
    assert_eq!(std::fs::read_to_string(f.settings()).unwrap(), before);
}

#[test]
fn an_existing_settings_file_comes_back_byte_for_byte() {
    let f = Fixture::new();
    std::fs::create_dir_all(f.settings().parent().unwrap()).unwrap();
    let before = "{\n\t\"theme\": \"dark\",\n\t\"extensions\": [\"~/my-ext\"]\n}\n";
    std::fs::write(f.settings(), before).unwrap();
    let (code, installed) = f.json(&["pi", "install"]);
    assert_eq!(code, Some(0));
    assert_eq!(installed["settingsChange"], "added");
    let now: Value = serde_json::from_slice(&std::fs::read(f.settings()).unwrap()).unwrap();
    assert_eq!(
        now,
        json!({"theme": "dark", "extensions": ["~/my-ext", f.extension_dir().to_str().unwrap()]})
    );
    let (code, removed) = f.json(&["pi", "uninstall"]);
    assert_eq!(code, Some(0));
    assert_eq!(removed["settingsChange"], "restored");
    assert_eq!(removed["directoryChange"], "removed");
    assert_eq!(std::fs::read_to_string(f.settings()).unwrap(), before);
}

#[test]
fn settings_slate_cannot_edit_are_refused_naming_file_and_field() {
    let f = Fixture::new();
    std::fs::create_dir_all(f.settings().parent().unwrap()).unwrap();
    let bad = "{\"extensions\": \"/somewhere\"}";
    std::fs::write(f.settings(), bad).unwrap();
    let out = f.slate(&["pi", "install"]);
    assert_eq!(out.status.code(), Some(2));
    let err = stderr(&out);
    assert!(err.contains(&f.settings().display().to_string()), "{err}");
    assert!(err.contains("$.extensions"), "{err}");
    assert!(err.contains("nothing was changed"), "{err}");
    assert!(stdout(&out).is_empty());
    assert_eq!(std::fs::read_to_string(f.settings()).unwrap(), bad);
    assert!(!f.root.join("data/slate").exists());

    let (code, json) = f.json(&["pi", "install"]);
    assert_eq!(code, Some(2));
    assert_eq!(json["error"]["code"], "invalid-config");
    assert_eq!(json["error"]["data"][0]["path"], "$.extensions");
    assert_eq!(
        json["error"]["data"][0]["file"],
        f.settings().display().to_string()
    );

    std::fs::write(f.settings(), "{\"a\": 1, \"a\": 2}").unwrap();
    let dup = stderr(&f.slate(&["pi", "install"]));
    assert!(
        dup.contains("$.a") && dup.contains("more than once"),
        "{dup}"
    );
}

#[test]
fn the_project_scope_uses_the_projects_pi_settings() {
    let f = Fixture::new();
    let (code, report) = f.json(&["pi", "install", "--project"]);
    assert_eq!(code, Some(0));
    assert_eq!(report["scope"], "project");
    let project = f.root.join("work/.pi/settings.json");
    assert_eq!(report["settings"], project.to_str().unwrap());
    assert!(project.is_file() && !f.settings().exists());
    let text = stdout(&f.slate(&["pi", "install", "--project"]));
    assert!(text.contains("only in a trusted project"), "{text}");
    let (code, report) = f.json(&["pi", "uninstall", "--project"]);
    assert_eq!(code, Some(0));
    assert_eq!(report["settingsChange"], "removed");
    assert!(!f.root.join("work/.pi").exists());
}

#[test]
fn pi_coding_agent_dir_chooses_the_user_settings() {
    let f = Fixture::new();
    let agent = f.root.join("agent");
    let out = f
        .command(&["--json", "pi", "install"])
        .env("PI_CODING_AGENT_DIR", &agent)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let report: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(
        report["settings"],
        agent.join("settings.json").to_str().unwrap()
    );
    assert!(agent.join("settings.json").is_file() && !f.settings().exists());
}

#[test]
fn doctor_finds_each_problem_and_names_its_fix() {
    let f = Fixture::new();
    // Nothing installed: a problem, with the install command as the fix.
    let (code, report) = f.doctor();
    assert_eq!(code, Some(1), "{report}");
    let (v, detail) = verdict(&report, "user");
    assert_eq!(v, "problem", "{detail}");
    assert_eq!(verdict(&report, "project").0, "note");
    assert_eq!(verdict(&report, "coordinator").0, "note");
    let text = stdout(&f.slate(&["pi", "doctor"]));
    assert!(text.contains("fix: run `slate pi install`"), "{text}");
    assert!(text.ends_with("1 problem found.\n"), "{text}");

    // Installed, supported pi: all good (exit 0).
    assert!(f.slate(&["pi", "install"]).status.success());
    let (code, report) = f.doctor();
    assert_eq!(code, Some(0), "{report}");
    assert_eq!(report["problems"], 0);
    let (v, detail) = verdict(&report, "pi");
    assert_eq!(v, "ok");
    assert!(
        detail.contains("pi 1.6.0") && detail.contains("SLATE_PI"),
        "{detail}"
    );
    assert_eq!(verdict(&report, "user").0, "ok");
    assert!(verdict(&report, "files").1.contains("current"));
    assert!(verdict(&report, "binary").1.contains("names this binary"));
    assert!(stdout(&f.slate(&["pi", "doctor"])).ends_with("No problems found.\n"));

    // An unsupported pi: named with the minimum version.
    std::fs::write(f.root.join("pi-version"), "1.4.9\n").unwrap();
    let (code, report) = f.doctor();
    assert_eq!(code, Some(1));
    let (v, detail) = verdict(&report, "pi");
    assert_eq!(v, "problem");
    assert!(
        detail.contains("1.4.9") && detail.contains("1.5.2"),
        "{detail}"
    );
    std::fs::write(f.root.join("pi-version"), "1.6.0\n").unwrap();

    // A file of the installed extension changed: stale, with both hashes.
    let index = f.extension_dir().join("index.ts");
    std::fs::write(&index, "// edited").unwrap();
    let (code, report) = f.doctor();
    assert_eq!(code, Some(1));
    let (v, detail) = verdict(&report, "files");
    assert_eq!(v, "problem");
    assert!(
        detail.contains("stale") && detail.contains("index.ts"),
        "{detail}"
    );
    assert!(f.slate(&["pi", "install"]).status.success());
    assert_eq!(f.doctor().0, Some(0));

    // install.json names a binary that is not there.
    let manifest_path = f.extension_dir().join("install.json");
    let mut manifest: Value =
        serde_json::from_slice(&std::fs::read(&manifest_path).unwrap()).unwrap();
    manifest["slate"] = json!("/nonexistent/slate");
    std::fs::write(&manifest_path, manifest.to_string()).unwrap();
    let (code, report) = f.doctor();
    assert_eq!(code, Some(1));
    let (v, detail) = verdict(&report, "binary");
    assert_eq!(v, "problem");
    assert!(detail.contains("/nonexistent/slate") && detail.contains("does not exist"));

    // install.json names another, existing binary.
    manifest["slate"] = json!(f.pi.to_str().unwrap());
    std::fs::write(&manifest_path, manifest.to_string()).unwrap();
    let (_, report) = f.doctor();
    let (v, detail) = verdict(&report, "binary");
    assert_eq!(v, "problem");
    assert!(detail.contains("but this is"), "{detail}");
}

/// A `slate serve --backend sim` in the fixture's work directory; killed on drop.
struct Serve(Child, String);

impl Serve {
    fn start(f: &Fixture) -> Self {
        let mut child = f
            .command(&["serve", "--backend", "sim", "--model", "fake/model"])
            .env("PI_CODING_AGENT_DIR", f.root.join("agent"))
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
        let parent = lines
            .next()
            .unwrap()
            .unwrap()
            .trim_start_matches("slate serve: parent ")
            .to_owned();
        // Keep draining stdout so the server never blocks on it.
        std::thread::spawn(move || for _ in lines {});
        Self(child, parent)
    }
}

impl Drop for Serve {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

#[test]
fn doctor_says_hello_to_the_coordinator_serving_this_directory() {
    let f = Fixture::new();
    std::fs::create_dir(f.root.join("agent")).unwrap();
    let serve = Serve::start(&f);
    let (_, report) = f.doctor();
    let (v, detail) = verdict(&report, "coordinator");
    assert_eq!(v, "ok", "{detail}");
    assert!(detail.contains(&serve.1), "{detail}");
    assert!(
        detail.contains(f.root.join("work").to_str().unwrap()),
        "{detail}"
    );
}

#[test]
fn the_extension_goes_under_xdg_data_home_and_settings_under_home() {
    let f = Fixture::new();
    let (_, report) = f.json(&["pi", "install"]);
    assert_eq!(
        Path::new(report["directory"].as_str().unwrap()),
        f.extension_dir()
    );
    assert_eq!(
        Path::new(report["settings"].as_str().unwrap()),
        f.settings()
    );
}

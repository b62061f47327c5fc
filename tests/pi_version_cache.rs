//! The pi version cache: a remembered `pi --version` is reused only while every file of the
//! pi command is unchanged, failures are never remembered, and the gate still applies to a
//! remembered version. Stand-in pi scripts count how often they are run.

#![allow(clippy::unwrap_used, reason = "test fixtures fail loudly")]

use std::ffi::OsString;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

use slate::worker::pi::PiCommand;
use slate::worker::pi::version_cache::{Fingerprint, Source, VersionCache, check_version};

fn temp(name: &str) -> tempfile::TempDir {
    tempfile::Builder::new()
        .prefix(&format!("slate-version-cache-{name}-"))
        .tempdir()
        .unwrap()
}

/// A stand-in pi that appends a line to `<itself>.runs` each time it runs and prints
/// `version`. (The log is not named literally: a file a wrapper names is part of the key.)
fn counting_pi(dir: &Path, version: &str) -> PiCommand {
    let path = dir.join("pi");
    std::fs::write(
        &path,
        format!("#!/bin/sh\necho run >> \"$0.runs\"\necho {version}\n"),
    )
    .unwrap();
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
    PiCommand {
        program: OsString::from(path),
        leading: Vec::new(),
        env: Vec::new(),
    }
}

fn runs(dir: &Path) -> usize {
    std::fs::read_to_string(dir.join("pi.runs")).map_or(0, |t| t.lines().count())
}

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap()
}

#[test]
fn an_unchanged_pi_is_run_once_and_then_remembered() {
    let dir = temp("once");
    let cache = VersionCache::new(dir.path().join("cache"));
    let pi = counting_pi(dir.path(), "1.6.0");
    let rt = runtime();
    let first = rt.block_on(check_version(&pi, Some(&cache))).unwrap();
    assert_eq!(first, ("1.6.0".to_owned(), Source::Pi));
    let second = rt.block_on(check_version(&pi, Some(&cache))).unwrap();
    assert_eq!(second, ("1.6.0".to_owned(), Source::Cache));
    assert_eq!(runs(dir.path()), 1, "the second check ran no pi");

    let file = std::fs::metadata(cache.file()).unwrap();
    assert_eq!(file.permissions().mode() & 0o777, 0o600);
    let parent = std::fs::metadata(dir.path().join("cache")).unwrap();
    assert_eq!(parent.permissions().mode() & 0o777, 0o700);
    let leftovers: Vec<PathBuf> = std::fs::read_dir(dir.path().join("cache"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p != &cache.file())
        .collect();
    assert!(
        leftovers.is_empty(),
        "no temporary file left: {leftovers:?}"
    );
}

#[test]
fn a_changed_pi_runs_again() {
    let dir = temp("changed");
    let cache = VersionCache::new(dir.path().join("cache"));
    let rt = runtime();
    let pi = counting_pi(dir.path(), "1.6.0");
    rt.block_on(check_version(&pi, Some(&cache))).unwrap();
    // An upgrade rewrites the file (new size, mtime and, through the rename, inode).
    let upgraded = dir.path().join("pi.new");
    std::fs::copy(dir.path().join("pi"), &upgraded).unwrap();
    let text = std::fs::read_to_string(&upgraded)
        .unwrap()
        .replace("1.6.0", "1.6.10");
    std::fs::write(&upgraded, text).unwrap();
    std::fs::rename(&upgraded, dir.path().join("pi")).unwrap();
    let again = rt.block_on(check_version(&pi, Some(&cache))).unwrap();
    assert_eq!(again, ("1.6.10".to_owned(), Source::Pi));
    assert_eq!(runs(dir.path()), 2);
}

#[test]
fn a_wrapper_is_keyed_by_the_files_it_names() {
    let dir = temp("wrapper");
    let target = dir.path().join("cli.js");
    std::fs::write(&target, "// pi 1.6.0\n").unwrap();
    let wrapper = dir.path().join("pi-wrapper");
    std::fs::write(
        &wrapper,
        format!("#!/bin/sh\nexec '/bin/sh' '{}' \"$@\"\n", target.display()),
    )
    .unwrap();
    std::fs::set_permissions(&wrapper, std::fs::Permissions::from_mode(0o755)).unwrap();
    let pi = PiCommand {
        program: wrapper.into_os_string(),
        leading: Vec::new(),
        env: Vec::new(),
    };
    let before = Fingerprint::of(&pi).unwrap();
    assert!(before.files.iter().any(|f| f.path == target), "{before:?}");
    std::fs::write(&target, "// pi 1.7.0, a longer file\n").unwrap();
    assert_ne!(Fingerprint::of(&pi).unwrap(), before);
}

#[test]
fn the_script_of_a_node_form_is_part_of_the_key() {
    let dir = temp("node-form");
    let script = dir.path().join("cli.js");
    std::fs::write(&script, "console.log('1.6.0')\n").unwrap();
    let pi = PiCommand {
        program: OsString::from("sh"),
        leading: vec![script.clone().into_os_string()],
        env: Vec::new(),
    };
    let before = Fingerprint::of(&pi).unwrap();
    assert_eq!(before.files.len(), 2, "{before:?}");
    assert!(before.files[0].path.is_absolute(), "sh resolved on PATH");
    std::fs::write(&script, "console.log('1.7.0') // changed\n").unwrap();
    assert_ne!(Fingerprint::of(&pi).unwrap(), before);
}

#[test]
fn a_refused_version_is_never_remembered() {
    let dir = temp("refused");
    let cache = VersionCache::new(dir.path().join("cache"));
    let pi = counting_pi(dir.path(), "1.4.9");
    let rt = runtime();
    for _ in 0..2 {
        let error = rt.block_on(check_version(&pi, Some(&cache))).unwrap_err();
        assert!(
            error.contains("1.4.9") && error.contains("1.5.2"),
            "{error}"
        );
    }
    assert_eq!(runs(dir.path()), 2, "each check ran pi again");
    assert!(!cache.file().exists());
}

#[test]
fn a_remembered_version_still_passes_the_gate() {
    let dir = temp("regate");
    let cache = VersionCache::new(dir.path().join("cache"));
    let pi = counting_pi(dir.path(), "1.6.0");
    // A cache written by hand (or by a Slate with a lower minimum) for this very pi.
    cache
        .store(Fingerprint::of(&pi).unwrap(), "1.5.1".to_owned())
        .unwrap();
    let rt = runtime();
    let error = rt.block_on(check_version(&pi, Some(&cache))).unwrap_err();
    assert!(
        error.contains("1.5.1") && error.contains("1.5.2"),
        "{error}"
    );
    assert_eq!(runs(dir.path()), 0);
}

#[test]
fn a_broken_cache_file_falls_back_to_running_pi() {
    let dir = temp("broken");
    let cache = VersionCache::new(dir.path().join("cache"));
    std::fs::create_dir_all(dir.path().join("cache")).unwrap();
    std::fs::write(cache.file(), b"{not json").unwrap();
    let pi = counting_pi(dir.path(), "1.6.0");
    let rt = runtime();
    let checked = rt.block_on(check_version(&pi, Some(&cache))).unwrap();
    assert_eq!(checked.1, Source::Pi);
    let checked = rt.block_on(check_version(&pi, Some(&cache))).unwrap();
    assert_eq!(checked.1, Source::Cache, "the broken file was replaced");
}

#[test]
fn without_a_cache_pi_runs_every_time() {
    let dir = temp("none");
    let pi = counting_pi(dir.path(), "1.6.0");
    let rt = runtime();
    for _ in 0..2 {
        assert_eq!(rt.block_on(check_version(&pi, None)).unwrap().1, Source::Pi);
    }
    assert_eq!(runs(dir.path()), 2);
}

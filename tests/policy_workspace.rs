//! Contract "Explicit working directory": `resolve_cwd` over real directories, and the bash
//! rebinding prefix proven in real shells with hostile directory names.

#[path = "policy_support/temp.rs"]
mod temp;

use std::ffi::OsStr;
use std::fs;
use std::os::unix::ffi::{OsStrExt, OsStringExt};
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use slate::policy::workspace::{
    CD_SEPARATOR, bash_cd_prefix, bash_cd_prefix_bytes, rebind_bash, resolve_cwd,
};
use slate::store::fs::RealFs;
use temp::TempDir;

const FIELD: &str = "$.tasks[0].cwd";

/// root/ with sub/, sub2/, "with space"/, file.txt, link → sub, far → <abs other dir>.
fn fixture() -> (TempDir, PathBuf) {
    let tmp = TempDir::new("ws");
    let root = tmp.join("root");
    for dir in ["sub", "sub2/deeper", "with space", "parent-ws"] {
        fs::create_dir_all(root.join(dir)).expect("mkdir");
    }
    fs::create_dir_all(tmp.join("elsewhere")).expect("mkdir");
    temp::write(&root.join("file.txt"), "x");
    temp::symlink("sub", &root.join("link"));
    temp::symlink(tmp.join("elsewhere"), &root.join("far"));
    temp::symlink("missing-target", &root.join("dangling"));
    temp::fifo(&root.join("fifo"));
    (tmp, root)
}

// ---- spelling rules: refused before the file system is consulted ----

#[test]
fn shorthand_empty_and_lookalike_space_spellings_are_refused() {
    let (_tmp, root) = fixture();
    let table: &[(&str, &str)] = &[
        ("", "non-empty"),
        ("~", "`~` home shorthand"),
        ("~/sub", "`~` home shorthand"),
        ("~user/sub", "`~` home shorthand"),
        ("@sub", "leading `@`"),
        ("@", "leading `@`"),
        ("with\u{00A0}space", "U+00A0"),
        ("with\u{202F}space", "U+202F"),
        ("with\u{2007}space", "U+2007"),
        ("with\u{2000}space", "U+2000"),
        ("with\u{3000}space", "U+3000"),
        ("with\u{205F}space", "U+205F"),
        ("with\u{1680}space", "U+1680"),
        ("with\u{FEFF}space", "U+FEFF"),
        ("sub\0", "NUL"),
    ];
    for &(spelling, fragment) in table {
        let err = resolve_cwd(Some(spelling), &root, None, &RealFs, FIELD)
            .expect_err(&format!("{spelling:?} must be refused"));
        assert_eq!(err.path, FIELD, "{spelling:?}");
        assert!(
            err.rule.contains(fragment),
            "{spelling:?}: rule {:?} lacks {fragment:?}",
            err.rule
        );
        assert!(err.value.is_some(), "{spelling:?}: the value is named");
    }
}

#[test]
fn every_broken_spelling_rule_is_named_in_the_one_problem() {
    let (_tmp, root) = fixture();
    let err = resolve_cwd(
        Some("~a\u{00A0}b\u{202F}c\u{00A0}"),
        &root,
        None,
        &RealFs,
        FIELD,
    )
    .unwrap_err();
    assert!(err.rule.contains("`~`"), "{}", err.rule);
    assert!(err.rule.contains("U+00A0, U+202F"), "{}", err.rule);
    assert_eq!(err.rule.matches("U+00A0").count(), 1, "{}", err.rule);
}

#[test]
fn ascii_spaces_tildes_and_ats_inside_names_are_ordinary() {
    let (_tmp, root) = fixture();
    fs::create_dir_all(root.join("a~b/@c")).unwrap();
    for spelling in ["with space", "a~b/@c", "./sub", "sub/"] {
        assert!(
            resolve_cwd(Some(spelling), &root, None, &RealFs, FIELD).is_ok(),
            "{spelling:?}"
        );
    }
}

// ---- resolution ----

#[test]
fn cwd_resolves_to_the_canonical_directory() {
    let (tmp, root) = fixture();
    let abs_sub2 = root.join("sub2").display().to_string();
    let table: Vec<(&str, PathBuf)> = vec![
        ("sub", root.join("sub")),
        ("sub/", root.join("sub")),
        ("./sub", root.join("sub")),
        ("sub2/deeper", root.join("sub2/deeper")),
        ("sub2/deeper/..", root.join("sub2")),
        ("sub/../sub2", root.join("sub2")),
        ("..", tmp.path().to_path_buf()),
        (".", root.clone()),
        ("with space", root.join("with space")),
        ("link", root.join("sub")),
        ("far", tmp.join("elsewhere")),
        (abs_sub2.as_str(), root.join("sub2")),
        ("/", PathBuf::from("/")),
    ];
    for (spelling, want) in table {
        let got = resolve_cwd(Some(spelling), &root, None, &RealFs, FIELD)
            .unwrap_or_else(|p| panic!("{spelling:?}: {p}"));
        assert_eq!(got, want, "{spelling:?}");
    }
}

#[test]
fn relative_cwd_is_relative_to_the_root_cwd_even_for_nested_tasks() {
    let (_tmp, root) = fixture();
    let parent = root.join("parent-ws");
    fs::create_dir_all(parent.join("sub")).unwrap();
    let got = resolve_cwd(Some("sub2"), &root, Some(&parent), &RealFs, FIELD).unwrap();
    assert_eq!(got, root.join("sub2"));
}

#[test]
fn omitted_cwd_defaults_to_the_parent_workspace_else_the_root_cwd() {
    let (_tmp, root) = fixture();
    let parent = root.join("parent-ws");
    assert_eq!(
        resolve_cwd(None, &root, Some(&parent), &RealFs, FIELD).unwrap(),
        parent
    );
    assert_eq!(
        resolve_cwd(None, &root, None, &RealFs, FIELD).unwrap(),
        root
    );
    // A non-canonical default comes back canonical.
    assert_eq!(
        resolve_cwd(None, &root.join("link"), None, &RealFs, FIELD).unwrap(),
        root.join("sub")
    );
}

#[test]
fn missing_and_non_directory_cwds_are_refused() {
    let (_tmp, root) = fixture();
    let table: &[(&str, &str)] = &[
        ("missing", "does not exist"),
        ("sub/missing/deeper", "does not exist"),
        ("dangling", "does not exist"),
        ("/nonexistent-slate-test-dir", "does not exist"),
        ("file.txt", "is a regular file"),
        ("fifo", "is a special file"),
        ("file.txt/sub", "not a directory"),
    ];
    for &(spelling, fragment) in table {
        let err = resolve_cwd(Some(spelling), &root, None, &RealFs, FIELD)
            .expect_err(&format!("{spelling:?} must be refused"));
        assert_eq!(err.path, FIELD);
        assert_eq!(err.value.as_deref(), Some(spelling));
        assert!(
            err.rule.contains(fragment),
            "{spelling:?}: rule {:?} lacks {fragment:?}",
            err.rule
        );
    }
}

#[test]
fn a_vanished_default_workspace_is_refused_and_says_whose_it_was() {
    let (_tmp, root) = fixture();
    let gone = root.join("gone");
    let err = resolve_cwd(None, &root, Some(&gone), &RealFs, FIELD).unwrap_err();
    assert!(
        err.rule.starts_with("the parent's workspace"),
        "{}",
        err.rule
    );
    assert!(err.rule.contains("does not exist"), "{}", err.rule);
    let err = resolve_cwd(None, &gone, None, &RealFs, FIELD).unwrap_err();
    assert!(err.rule.starts_with("the root cwd"), "{}", err.rule);
}

#[test]
fn a_workspace_whose_canonical_path_is_not_utf8_is_refused() {
    let (_tmp, root) = fixture();
    let name = OsStr::from_bytes(b"bad-\xff-name");
    fs::create_dir(root.join(name)).unwrap();
    temp::symlink(name, &root.join("to-bad"));
    let err = resolve_cwd(Some("to-bad"), &root, None, &RealFs, FIELD).unwrap_err();
    assert!(err.rule.contains("not valid UTF-8"), "{}", err.rule);
}

// ---- the bash prefix, as text ----

#[test]
fn prefix_text_is_a_quoted_cd_line() {
    let table: &[(&str, &str)] = &[
        ("/w", "cd -- '/w' || exit $?\n"),
        ("/with space", "cd -- '/with space' || exit $?\n"),
        ("/it's", "cd -- '/it'\\''s' || exit $?\n"),
        ("/''", "cd -- '/'\\'''\\''' || exit $?\n"),
        ("/a\nb", "cd -- '/a\nb' || exit $?\n"),
        ("/$(x)`y`\"z\\", "cd -- '/$(x)`y`\"z\\' || exit $?\n"),
        ("-", "cd -- './-' || exit $?\n"),
        ("rel/dir", "cd -- './rel/dir' || exit $?\n"),
    ];
    for &(path, want) in table {
        assert_eq!(bash_cd_prefix(Path::new(path)), want, "{path:?}");
    }
    assert_eq!(CD_SEPARATOR, "\n");
    assert_eq!(
        rebind_bash(Path::new("/w"), "make test"),
        "cd -- '/w' || exit $?\nmake test"
    );
}

#[test]
fn unspellable_paths_get_a_prefix_that_refuses_to_run() {
    for bytes in [&b""[..], b"/a\0b"] {
        let prefix = bash_cd_prefix_bytes(Path::new(OsStr::from_bytes(bytes)));
        assert!(!prefix.starts_with(b"cd "), "{bytes:?}");
        assert!(prefix.ends_with(b"exit 1\n"), "{bytes:?}");
    }
    let non_utf8 = Path::new(OsStr::from_bytes(b"/a\xffb"));
    assert_eq!(
        bash_cd_prefix_bytes(non_utf8),
        b"cd -- '/a\xffb' || exit $?\n".to_vec()
    );
    assert!(bash_cd_prefix(non_utf8).ends_with("exit 1\n"));
}

// ---- the bash prefix, in real shells ----

/// The shells the prefix must work in: POSIX `sh` always, `bash` when installed.
fn shells() -> Vec<&'static str> {
    let mut shells = vec!["sh"];
    if Command::new("bash").arg("-c").arg("true").output().is_ok() {
        shells.push("bash");
    }
    shells
}

fn run(shell: &str, script: &[u8], dir: &Path) -> Output {
    Command::new(shell)
        .arg("-c")
        .arg(OsStr::from_bytes(script))
        .current_dir(dir)
        .output()
        .expect("run shell")
}

const HOSTILE: &[&[u8]] = &[
    b"with space",
    b"  leading and trailing  ",
    b"single'quote",
    b"'",
    b"''",
    b"'\\''",
    b"double\"quote",
    b"$(touch PWNED)",
    b"`touch PWNED`",
    b"${HOME}$HOME",
    b"new\nline",
    b"trailing newline\n",
    b"\nleading newline",
    b"tab\there",
    b"-leading-dash",
    b"-",
    b"--",
    b"semi;colon && touch PWNED || touch PWNED",
    b"pipe | touch PWNED",
    b"back\\slash\\",
    b"star*?[a]",
    b"!bang !! !$",
    b"#hash",
    b"~tilde",
    b"unicode \xc3\xbc \xe6\x97\xa5\xe6\x9c\xac",
    b"not utf8 \xff\xfe",
    b"< > &",
];

#[test]
fn cd_prefix_enters_hostile_directories_in_real_shells() {
    let tmp = TempDir::new("cd");
    let scratch = tmp.join("scratch");
    fs::create_dir(&scratch).unwrap();
    for &name in HOSTILE {
        let dir = tmp.join(OsStr::from_bytes(name));
        fs::create_dir(&dir).unwrap_or_else(|e| panic!("mkdir {name:?}: {e}"));
        let canonical = fs::canonicalize(&dir).unwrap();
        let mut script = bash_cd_prefix_bytes(&canonical);
        script.extend_from_slice(b"pwd -P");
        for shell in shells() {
            let out = run(shell, &script, &scratch);
            let mut want = canonical.as_os_str().as_bytes().to_vec();
            want.push(b'\n');
            assert!(
                out.status.success(),
                "{shell} {name:?}: {}",
                String::from_utf8_lossy(&out.stderr)
            );
            assert_eq!(
                out.stdout,
                want,
                "{shell} {name:?}: printed {:?}",
                String::from_utf8_lossy(&out.stdout)
            );
        }
    }
    // Nothing in any name was executed: no PWNED file anywhere.
    for dir in [tmp.path(), scratch.as_path()] {
        assert!(!dir.join("PWNED").exists(), "{}", dir.display());
    }
    for entry in fs::read_dir(tmp.path()).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            assert!(!path.join("PWNED").exists(), "{}", path.display());
        }
    }
}

#[test]
fn string_prefix_matches_the_byte_prefix_and_runs_for_utf8_names() {
    let tmp = TempDir::new("cdstr");
    for &name in HOSTILE {
        let Ok(text) = std::str::from_utf8(name) else {
            continue;
        };
        let dir = tmp.join(text);
        fs::create_dir(&dir).unwrap();
        assert_eq!(
            bash_cd_prefix(&dir).into_bytes(),
            bash_cd_prefix_bytes(&dir),
            "{text:?}"
        );
        let out = run("sh", rebind_bash(&dir, "pwd -P").as_bytes(), tmp.path());
        assert_eq!(out.stdout, [dir.as_os_str().as_bytes(), b"\n"].concat());
    }
}

#[test]
fn relative_prefixes_ignore_cdpath_and_the_dash_operand() {
    let tmp = TempDir::new("cdrel");
    fs::create_dir(tmp.join("-")).unwrap();
    fs::create_dir(tmp.join("target")).unwrap();
    let decoy = TempDir::new("cdpath");
    fs::create_dir(decoy.join("target")).unwrap();
    for (rel, want) in [("-", tmp.join("-")), ("target", tmp.join("target"))] {
        let mut script = bash_cd_prefix_bytes(Path::new(rel));
        script.extend_from_slice(b"pwd -P");
        for shell in shells() {
            let out = Command::new(shell)
                .arg("-c")
                .arg(OsStr::from_bytes(&script))
                .current_dir(tmp.path())
                .env("CDPATH", decoy.path())
                .env("OLDPWD", decoy.path())
                .output()
                .unwrap();
            assert_eq!(
                out.stdout,
                [want.as_os_str().as_bytes(), b"\n"].concat(),
                "{shell} {rel:?}"
            );
        }
    }
}

#[test]
fn failed_cd_exits_nonzero_without_running_the_command_in_the_root() {
    let tmp = TempDir::new("cdfail");
    let root = tmp.join("root");
    fs::create_dir(&root).unwrap();
    let deleted = tmp.join("deleted workspace");
    fs::create_dir(&deleted).unwrap();
    let deleted = fs::canonicalize(&deleted).unwrap();
    fs::remove_dir(&deleted).unwrap();
    let file = tmp.join("a file");
    temp::write(&file, "x");
    let cases: Vec<(&str, Vec<u8>)> = vec![
        ("deleted", bash_cd_prefix_bytes(&deleted)),
        ("regular file", bash_cd_prefix_bytes(&file)),
        ("empty path", bash_cd_prefix_bytes(Path::new(""))),
        (
            "not utf8 (text form)",
            bash_cd_prefix(Path::new(OsStr::from_bytes(b"/tmp/\xff"))).into_bytes(),
        ),
    ];
    for (case, prefix) in cases {
        for shell in shells() {
            let mut script = prefix.clone();
            script.extend_from_slice(b"touch marker; echo ran");
            let out = run(shell, &script, &root);
            assert!(!out.status.success(), "{shell} {case}: exit status");
            assert!(out.stdout.is_empty(), "{shell} {case}: command output");
            assert!(
                !root.join("marker").exists(),
                "{shell} {case}: marker in root"
            );
        }
    }
}

#[test]
fn the_command_keeps_its_own_exit_status_and_multiline_form() {
    let tmp = TempDir::new("cdcmd");
    let dir = tmp.join("w'ork $(x)");
    fs::create_dir(&dir).unwrap();
    for shell in shells() {
        let out = run(shell, rebind_bash(&dir, "exit 7").as_bytes(), tmp.path());
        assert_eq!(out.status.code(), Some(7), "{shell}");
        let heredoc = "cat <<'EOF'\nline one\n$(not run)\nEOF\n# trailing comment";
        let out = run(shell, rebind_bash(&dir, heredoc).as_bytes(), tmp.path());
        assert_eq!(out.stdout, b"line one\n$(not run)\n", "{shell}");
        let out = run(shell, rebind_bash(&dir, "; pwd").as_bytes(), tmp.path());
        assert!(
            !out.status.success(),
            "{shell}: a broken command stays broken"
        );
    }
}

#[test]
fn resolved_workspaces_round_trip_through_the_shell() {
    let (_tmp, root) = fixture();
    for spelling in ["sub", "link", "with space", "sub2/deeper/.."] {
        let ws = resolve_cwd(Some(spelling), &root, None, &RealFs, FIELD).unwrap();
        let out = run("sh", rebind_bash(&ws, "pwd -P").as_bytes(), &root);
        let printed = PathBuf::from(std::ffi::OsString::from_vec(out.stdout));
        assert_eq!(printed, PathBuf::from(format!("{}\n", ws.display())));
    }
}

//! Contract "Checked task-file input": one table per rule, over real directories with
//! `RealFs`, plus fakes that change the file between the before and after checks.

#[path = "policy_support/fake_fs.rs"]
mod fake_fs;
#[path = "policy_support/temp.rs"]
mod temp;

use std::ffi::OsStr;
use std::fs;
use std::os::unix::ffi::OsStrExt;
use std::path::{Component, Path, PathBuf};

use fake_fs::{Change, ChangingFs, MemFs};
use proptest::prelude::*;
use proptest::test_runner::{Config, TestRunner};
use slate::core::bounds::{TASK_FILE_MAX_BYTES, TASK_FILE_MIN_BYTES};
use slate::policy::Problem;
use slate::policy::task_file::{MAX_LINES, TaskText, check_task_file, line_count};
use slate::store::fs::RealFs;
use temp::TempDir;

const FIELD: &str = "$.tasks[1].taskFile";
const REVIEW: &str = "Review the lifecycle tests.\nReport gaps.\n";

/// tmp/ws is the workspace; tmp/outside holds what escaping links reach.
struct Fixture {
    tmp: TempDir,
    ws: PathBuf,
}

impl Fixture {
    fn new() -> Self {
        let tmp = TempDir::new("taskfile");
        let ws = tmp.join("ws");
        let out = tmp.join("outside");
        temp::write(&out.join("secret.txt"), "outside secret\n");
        temp::write(&ws.join("tasks/review.txt"), REVIEW);
        temp::write(&ws.join(".git/config"), "hidden\n");
        temp::write(&ws.join("node_modules/pkg/README"), "dependency\n");
        temp::write(
            &ws.join("NODE_MODULES/readme.txt"),
            "upper-case dependency\n",
        );
        temp::write(&ws.join("tasks/empty.txt"), "");
        fs::create_dir_all(ws.join("tasks/subdir")).expect("mkdir");
        // Aliases that stay inside and reach ordinary files.
        temp::symlink("tasks/review.txt", &ws.join("alias.txt"));
        temp::symlink(ws.join("tasks/review.txt"), &ws.join("tasks/abs-alias.txt"));
        temp::symlink("tasks", &ws.join("linkdir"));
        temp::symlink(".", &ws.join("self"));
        temp::symlink("alias.txt", &ws.join("chain.txt"));
        // Aliases that escape or reach denied components.
        temp::symlink("../outside/secret.txt", &ws.join("escape.txt"));
        temp::symlink(&out, &ws.join("outlink"));
        temp::symlink(".git/config", &ws.join("innocent.txt"));
        temp::symlink("node_modules/pkg/README", &ws.join("mods.txt"));
        temp::symlink("node_modules", &ws.join("vendor"));
        temp::symlink("NODE_MODULES/readme.txt", &ws.join("shadow.txt"));
        temp::symlink("../.git", &ws.join("tasks/gitdir"));
        // Things that are not regular files.
        temp::symlink("nowhere.txt", &ws.join("dangling.txt"));
        temp::fifo(&ws.join("tasks/fifo"));
        temp::symlink("tasks/fifo", &ws.join("fifo-alias"));
        Self { tmp, ws }
    }

    fn check(&self, spelling: &str) -> Result<TaskText, Vec<Problem>> {
        check_task_file(spelling, &self.ws, &RealFs, FIELD)
    }

    /// A content file under `ws/content/<name>`, spelled relative to the workspace.
    fn content(&self, name: &str, bytes: &[u8]) -> String {
        let rel = format!("content/{name}");
        temp::write(&self.ws.join(&rel), bytes);
        rel
    }
}

#[track_caller]
fn assert_refused(result: &Result<TaskText, Vec<Problem>>, spelling: &str, fragments: &[&str]) {
    let problems = match result {
        Ok(text) => panic!("{spelling:?} must be refused, got {text:?}"),
        Err(problems) => problems,
    };
    assert!(!problems.is_empty(), "{spelling:?}");
    for problem in problems {
        assert_eq!(problem.path, FIELD, "{spelling:?}");
        let value = problem.value.as_deref().expect("the spelling is named");
        if spelling.chars().count() <= 120 {
            assert_eq!(value, spelling);
        }
    }
    for fragment in fragments {
        assert!(
            problems.iter().any(|p| p.rule.contains(fragment)),
            "{spelling:?}: no problem mentions {fragment:?}: {problems:#?}"
        );
    }
}

// ---- spelling ----

#[test]
fn spelling_rules_refuse_before_touching_the_file_system() {
    let fx = Fixture::new();
    let table: &[(&str, &[&str])] = &[
        ("", &["non-empty"]),
        ("/etc/passwd", &["absolute"]),
        ("//x", &["absolute"]),
        ("../outside/secret.txt", &["`..` traversal"]),
        ("tasks/../tasks/review.txt", &["`..` traversal"]),
        ("tasks/..", &["`..` traversal"]),
        (".", &["`.` components"]),
        ("./tasks/review.txt", &["`.` components"]),
        ("tasks/./review.txt", &["`.` components"]),
        (".git/config", &["hidden component `.git`"]),
        ("tasks/.review.txt", &["hidden component `.review.txt`"]),
        ("...", &["hidden component `...`"]),
        ("node_modules/pkg/README", &["`node_modules` components"]),
        ("NODE_MODULES/readme.txt", &["`NODE_MODULES` components"]),
        ("a/Node_Modules/b", &["`Node_Modules` components"]),
        ("~/task.txt", &["`~` home shorthand"]),
        ("~", &["`~` home shorthand"]),
        ("@tasks/review.txt", &["leading `@`"]),
        ("tasks/review\u{00A0}copy.txt", &["U+00A0"]),
        ("tasks\u{202F}/x", &["U+202F"]),
        ("tasks\u{2007}/x", &["U+2007"]),
        ("tasks/re\0view.txt", &["NUL"]),
    ];
    for &(spelling, fragments) in table {
        assert_refused(&fx.check(spelling), spelling, fragments);
    }
}

#[test]
fn a_spelling_reports_every_rule_it_breaks_once() {
    let fx = Fixture::new();
    let spelling = "/.git/../node_modules/../x";
    let problems = fx.check(spelling).unwrap_err();
    let rules: Vec<&str> = problems.iter().map(|p| p.rule.as_str()).collect();
    assert_eq!(rules.len(), 4, "{rules:#?}");
    assert_refused(
        &Err(problems),
        spelling,
        &[
            "absolute",
            "hidden component `.git`",
            "`..` traversal",
            "`node_modules`",
        ],
    );
}

#[test]
fn ordinary_names_with_dots_tildes_and_ats_inside_are_fine() {
    let fx = Fixture::new();
    for name in [
        "a.b.txt",
        "x~",
        "mail@host.txt",
        "node_modules2.txt",
        "my.node_modules",
    ] {
        let rel = fx.content(name, b"task\n");
        assert!(fx.check(&rel).is_ok(), "{rel:?}");
    }
    // Empty components are harmless.
    assert!(fx.check("tasks//review.txt").is_ok());
}

// ---- resolved target ----

#[test]
fn aliases_inside_the_workspace_are_followed_to_the_canonical_file() {
    let fx = Fixture::new();
    let real = fx.ws.join("tasks/review.txt");
    for spelling in [
        "tasks/review.txt",
        "alias.txt",
        "chain.txt",
        "tasks/abs-alias.txt",
        "linkdir/review.txt",
        "self/tasks/review.txt",
        "self/self/alias.txt",
    ] {
        let got = fx
            .check(spelling)
            .unwrap_or_else(|p| panic!("{spelling:?}: {p:#?}"));
        assert_eq!(got.path, real, "{spelling:?}");
        assert_eq!(got.text, REVIEW, "{spelling:?}");
    }
}

#[test]
fn escaping_and_denied_targets_are_refused() {
    let fx = Fixture::new();
    let table: &[(&str, &str)] = &[
        ("escape.txt", "outside the task workspace"),
        ("outlink/secret.txt", "outside the task workspace"),
        ("innocent.txt", "component `.git` is hidden"),
        ("tasks/gitdir/config", "component `.git` is hidden"),
        ("mods.txt", "inside `node_modules`"),
        ("vendor/pkg/README", "inside `node_modules`"),
        ("shadow.txt", "inside `NODE_MODULES`"),
    ];
    for &(spelling, fragment) in table {
        assert_refused(&fx.check(spelling), spelling, &[fragment]);
    }
}

#[test]
fn the_workspace_may_be_given_through_a_symlink() {
    let fx = Fixture::new();
    let ws_link = fx.tmp.join("ws-link");
    temp::symlink(&fx.ws, &ws_link);
    let got = check_task_file("alias.txt", &ws_link, &RealFs, FIELD).unwrap();
    assert_eq!(got.path, fx.ws.join("tasks/review.txt"));
    let problems = check_task_file("escape.txt", &ws_link, &RealFs, FIELD).unwrap_err();
    assert!(problems[0].rule.contains("outside"), "{problems:#?}");
}

#[test]
fn the_denied_component_rule_is_relative_to_the_workspace() {
    // A workspace that itself lives under a hidden or node_modules directory is fine.
    let fx = Fixture::new();
    let ws = fx.ws.join("node_modules/pkg");
    temp::write(&ws.join("task.txt"), "inside a package\n");
    let got = check_task_file("task.txt", &ws, &RealFs, FIELD).unwrap();
    assert_eq!(got.text, "inside a package\n");
}

#[test]
fn a_non_utf8_file_name_reached_through_an_alias_is_accepted() {
    let fx = Fixture::new();
    let name = OsStr::from_bytes(b"t\xffsk.txt");
    temp::write(&fx.ws.join(name), "odd name\n");
    temp::symlink(name, &fx.ws.join("odd.txt"));
    let got = fx.check("odd.txt").unwrap();
    assert_eq!(got.path, fx.ws.join(name));
}

// ---- metadata ----

#[test]
fn only_existing_regular_files_are_accepted() {
    let fx = Fixture::new();
    let table: &[(&str, &str)] = &[
        ("missing.txt", "does not exist"),
        ("tasks/missing/deeper.txt", "does not exist"),
        ("dangling.txt", "does not exist"),
        ("tasks/review.txt/more", "not a directory"),
        ("tasks", "is a directory"),
        ("tasks/subdir", "is a directory"),
        ("self", "is a directory"),
        ("tasks/fifo", "special file"),
        ("fifo-alias", "special file"),
    ];
    for &(spelling, fragment) in table {
        assert_refused(&fx.check(spelling), spelling, &[fragment]);
    }
}

#[test]
fn size_must_be_within_the_bounds() {
    assert_eq!((TASK_FILE_MIN_BYTES, TASK_FILE_MAX_BYTES), (1, 50_000));
    let fx = Fixture::new();
    let max = usize::try_from(TASK_FILE_MAX_BYTES).unwrap();
    let table: Vec<(&str, Vec<u8>, Option<&str>)> = vec![
        ("zero", Vec::new(), Some("it is empty (0 bytes)")),
        ("one", b"x".to_vec(), None),
        ("max", vec![b'a'; max], None),
        ("over", vec![b'a'; max + 1], Some("it has 50001 bytes")),
        ("far-over", vec![b'a'; 3 * max], Some("it has 150000 bytes")),
    ];
    for (name, bytes, refusal) in table {
        let rel = fx.content(name, &bytes);
        match refusal {
            None => assert_eq!(fx.check(&rel).unwrap().text.len(), bytes.len(), "{name}"),
            Some(fragment) => assert_refused(&fx.check(&rel), &rel, &["1–50000 bytes", fragment]),
        }
    }
}

// ---- content ----

#[test]
fn lines_are_counted_like_pi_read() {
    let table: &[(&str, usize)] = &[
        ("", 1),
        ("a", 1),
        ("a\n", 2),
        ("a\nb", 2),
        ("a\r\nb\r\n", 3),
        ("a\rb\rc", 1),
        ("\n\n", 3),
    ];
    for &(text, lines) in table {
        assert_eq!(line_count(text), lines, "{text:?}");
    }
    assert_eq!(MAX_LINES, 2000);
}

#[test]
fn at_most_2000_lines_are_accepted() {
    let fx = Fixture::new();
    let table: Vec<(&str, String, Option<&str>)> = vec![
        (
            "2000-no-final-newline",
            format!("{}x", "x\n".repeat(1999)),
            None,
        ),
        ("1999-newline-terminated", "x\n".repeat(1999), None),
        ("2000-crlf", format!("{}x", "x\r\n".repeat(1999)), None),
        ("lone-cr-is-not-a-break", "x\r".repeat(5000), None),
        (
            "2000-newline-terminated",
            "x\n".repeat(2000),
            Some("has 2001 lines"),
        ),
        (
            "2001-no-final-newline",
            format!("{}x", "x\n".repeat(2000)),
            Some("has 2001 lines"),
        ),
        (
            "many-blank-lines",
            format!("task{}", "\n".repeat(4000)),
            Some("has 4001 lines"),
        ),
    ];
    for (name, text, refusal) in table {
        let rel = fx.content(name, text.as_bytes());
        match refusal {
            None => assert_eq!(fx.check(&rel).unwrap().text, text, "{name}"),
            Some(fragment) => assert_refused(&fx.check(&rel), &rel, &[fragment]),
        }
    }
}

#[test]
fn only_one_complete_block_of_text_is_accepted() {
    let fx = Fixture::new();
    let table: &[(&str, &[u8], &[&str])] = &[
        ("nul", b"before\0after", &["NUL byte (at byte 6)"]),
        ("nul-only", b"\0", &["NUL byte (at byte 0)"]),
        (
            "fffd",
            "literal \u{FFFD} char".as_bytes(),
            &["U+FFFD", "at byte 8"],
        ),
        (
            "invalid-utf8",
            b"ok \xff bad",
            &["not valid UTF-8 (first invalid byte at 3)"],
        ),
        ("cut-utf8", b"abc\xe6\x97", &["not valid UTF-8"]),
        ("overlong-utf8", b"\xc0\xaf", &["not valid UTF-8"]),
        ("surrogate-utf8", b"\xed\xa0\x80", &["not valid UTF-8"]),
        ("whitespace", b" \n\t\r\n  ", &["whitespace"]),
        ("one-space", b" ", &["whitespace"]),
        (
            "unicode-spaces",
            "\u{00A0}\u{3000}\u{2028}".as_bytes(),
            &["whitespace"],
        ),
        ("bom-only", "\u{FEFF}\n".as_bytes(), &["whitespace"]),
        (
            "png",
            b"\x89PNG\r\n\x1a\n\0\0\0\rIHDR",
            &["PNG image", "not valid UTF-8"],
        ),
        ("jpeg", b"\xff\xd8\xff\xe0\0\x10JFIF", &["JPEG image"]),
        ("gif", b"GIF89a\x01\0\x01\0", &["GIF image", "NUL"]),
        ("gif-text", b"GIF87a looks like text", &["GIF image"]),
        ("webp", b"RIFF\x1a\0\0\0WEBPVP8 ", &["WebP image", "NUL"]),
        (
            "nul-and-lines",
            &[b"x\n".repeat(2000), b"\0".to_vec()].concat(),
            &["NUL", "2001 lines"],
        ),
    ];
    for &(name, bytes, fragments) in table {
        let rel = fx.content(name, bytes);
        assert_refused(&fx.check(&rel), &rel, fragments);
    }
}

#[test]
fn accepted_text_is_returned_verbatim() {
    let fx = Fixture::new();
    let table: &[&str] = &[
        "x",
        "  leading and trailing whitespace kept  \n\n",
        "\u{FEFF}BOM kept",
        "GIF support: add an exporter",
        "RIFF parser",
        "{\"profile\":\"general\",\"tools\":[\"bash\"]}\n",
        "---\nfrontmatter: is just text\n---\n",
        "unicode: üñí 日本 🎉\r\n",
        "tab\tand \u{00A0} non-breaking space in the text are fine",
    ];
    for (i, text) in table.iter().enumerate() {
        let rel = fx.content(&format!("ok-{i}"), text.as_bytes());
        let got = fx
            .check(&rel)
            .unwrap_or_else(|p| panic!("{text:?}: {p:#?}"));
        assert_eq!(got.text, *text);
        assert_eq!(got.path, fx.ws.join(&rel));
    }
}

#[test]
fn the_accepted_text_is_a_snapshot() {
    let fx = Fixture::new();
    let got = fx.check("tasks/review.txt").unwrap();
    temp::write(&fx.ws.join("tasks/review.txt"), "edited later\n");
    assert_eq!(got.text, REVIEW);
}

// ---- before/after change detection ----

#[test]
fn a_file_changed_between_the_before_and_after_checks_is_refused() {
    let table: &[(Change, Option<&str>)] = &[
        (Change::Nothing, None),
        (Change::Mtime, Some("(mtime)")),
        (Change::Ctime, Some("(ctime)")),
        (Change::Size, Some("(size)")),
        (Change::Inode, Some("(identity)")),
        (Change::Device, Some("(identity)")),
        (Change::Kind, Some("identity")),
        (Change::Retarget, Some("now resolves to another path")),
        (Change::Vanish, Some("can no longer be resolved")),
        (Change::ShortRead, Some("bytes read differ from its size")),
        (Change::LongRead, Some("bytes read differ from its size")),
        (Change::RealAppend, Some("size")),
        (Change::RealReplace, Some("identity")),
    ];
    for &(change, fragment) in table {
        let fx = Fixture::new();
        let fs_view = ChangingFs::new(change);
        let result = check_task_file("alias.txt", &fx.ws, &fs_view, FIELD);
        match fragment {
            None => assert_eq!(result.unwrap().text, REVIEW, "{change:?}"),
            Some(fragment) => {
                assert_refused(
                    &result,
                    "alias.txt",
                    &["changed during preflight", fragment],
                );
                assert_eq!(result.unwrap_err().len(), 1, "{change:?}");
            }
        }
    }
}

#[test]
fn a_file_that_cannot_be_read_is_refused() {
    let fx = Fixture::new();
    let fs_view = ChangingFs::new(Change::Unreadable);
    let result = check_task_file("alias.txt", &fx.ws, &fs_view, FIELD);
    assert_refused(
        &result,
        "alias.txt",
        &["cannot be read", "permission denied"],
    );
}

// ---- never panics ----

/// The content rules, restated independently of the implementation.
fn acceptable(bytes: &[u8]) -> bool {
    let Ok(text) = std::str::from_utf8(bytes) else {
        return false;
    };
    let image = bytes.starts_with(b"GIF87a")
        || bytes.starts_with(b"GIF89a")
        || (bytes.len() >= 12 && bytes.starts_with(b"RIFF") && &bytes[8..12] == b"WEBP");
    !bytes.is_empty()
        && !image
        && !text.contains('\0')
        && !text.contains('\u{FFFD}')
        && text.chars().any(|c| !c.is_whitespace() && c != '\u{FEFF}')
        && text.matches('\n').count() < 2000
}

#[test]
fn arbitrary_content_never_panics_and_matches_the_rules() {
    let mut runner = TestRunner::new(Config::with_cases(512));
    let bytes = prop_oneof![
        proptest::collection::vec(any::<u8>(), 0..300),
        any::<String>().prop_map(String::into_bytes),
        "[ \\n\\r\\ta\u{a0}\u{feff}\u{fffd}\\x00]{0,40}".prop_map(String::into_bytes),
        (0usize..2400).prop_map(|n| b"l\n".repeat(n)),
    ];
    runner
        .run(&bytes, |bytes| {
            let fs_view = MemFs {
                bytes: bytes.clone(),
            };
            let result = check_task_file("t.txt", Path::new("/ws"), &fs_view, FIELD);
            prop_assert_eq!(result.is_ok(), acceptable(&bytes), "{:?}", result);
            match result {
                Ok(task) => prop_assert_eq!(task.text.as_bytes(), &bytes[..]),
                Err(problems) => prop_assert!(!problems.is_empty()),
            }
            Ok(())
        })
        .unwrap();
}

#[test]
fn arbitrary_spellings_never_panic_and_never_leave_the_workspace() {
    let fx = Fixture::new();
    let tokens = prop::sample::select(vec![
        "tasks",
        "review.txt",
        "alias.txt",
        "escape.txt",
        "outlink",
        "secret.txt",
        "innocent.txt",
        "vendor",
        "pkg",
        "README",
        "self",
        "linkdir",
        "fifo",
        "fifo-alias",
        "dangling.txt",
        "..",
        ".",
        ".git",
        "config",
        "node_modules",
        "",
        "~",
        "@x",
        "a\u{a0}b",
        "\0",
    ]);
    let spellings = prop_oneof![
        any::<String>(),
        "[a-z./~@_ \u{a0}-]{0,24}",
        proptest::collection::vec(tokens, 0..6).prop_map(|parts| parts.join("/")),
    ];
    let mut runner = TestRunner::new(Config::with_cases(512));
    runner
        .run(&spellings, |spelling| {
            match check_task_file(&spelling, &fx.ws, &RealFs, FIELD) {
                Ok(task) => {
                    let rel = task
                        .path
                        .strip_prefix(&fx.ws)
                        .expect("inside the workspace");
                    for component in rel.components() {
                        let Component::Normal(name) = component else {
                            panic!("{spelling:?}: odd component in {rel:?}");
                        };
                        let name = name.as_bytes();
                        prop_assert!(!name.starts_with(b"."));
                        prop_assert!(!name.eq_ignore_ascii_case(b"node_modules"));
                    }
                    prop_assert!(!task.text.trim().is_empty());
                }
                Err(problems) => {
                    prop_assert!(!problems.is_empty());
                    prop_assert!(problems.iter().all(|p| p.path == FIELD));
                }
            }
            Ok(())
        })
        .unwrap();
}

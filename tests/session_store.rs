//! `store::session`: reading pi 1.6 session files, appending in pi's exact format, the newest
//! session for a directory, and the live-pi probe.

#![allow(clippy::unwrap_used, reason = "test fixtures fail loudly")]
#![allow(
    clippy::items_after_statements,
    clippy::too_many_lines,
    reason = "row types next to their tables"
)]

use std::fs;
use std::os::unix::fs::{PermissionsExt as _, symlink};
use std::path::{Path, PathBuf};

use proptest::prelude::*;
use serde_json::{Value, json};
use slate::store::session::live::{LiveProbe, ProcScan};
use slate::store::session::{
    self, NewEntry, SessionError, append_entries, create_session, iso_timestamp, newest_for_cwd,
};

const TRACES: &str = "/work/shared/pi/traces";

/// A real pi 1.6 session file: the shared trace when present, else a small vendored one.
fn real_session_bytes() -> Vec<u8> {
    fs::read(Path::new(TRACES).join("rpc_session.session.jsonl")).unwrap_or_else(|_| {
        concat!(
            r#"{"type":"session","version":3,"id":"01a22a5c-b941-7640-a478-d5c96597a241","timestamp":"2026-11-30T02:50:49.538Z","cwd":"/w"}"#,
            "\n",
            r#"{"type":"session_info","id":"e27726e3","parentId":null,"timestamp":"2026-11-30T02:50:49.538Z","name":"initial-name"}"#,
            "\n",
            r#"{"type":"model_change","id":"9ad02b31","parentId":"e27726e3","timestamp":"2026-11-30T02:50:49.576Z","provider":"fake","modelId":"fake-model"}"#,
            "\n",
            r#"{"type":"thinking_level_change","id":"f1f395b8","parentId":"9ad02b31","timestamp":"2026-11-30T02:50:49.576Z","thinkingLevel":"off"}"#,
            "\n"
        )
        .as_bytes()
        .to_vec()
    })
}

fn write(dir: &Path, name: &str, bytes: &[u8]) -> PathBuf {
    let p = dir.join(name);
    fs::write(&p, bytes).unwrap();
    p
}

fn lines(path: &Path) -> Vec<Value> {
    fs::read_to_string(path)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

#[test]
fn reads_a_real_pi_session() {
    let dir = tempfile::tempdir().unwrap();
    let p = write(dir.path(), "s.jsonl", &real_session_bytes());
    let s = session::read(&p).unwrap();
    assert_eq!(s.header.version, Some(3));
    assert_eq!(s.header.id, "01a22a5c-b941-7640-a478-d5c96597a241");
    assert!(s.skipped_lines.is_empty());
    assert_eq!(s.leaf(), s.entries.last().unwrap().id.as_deref());
    assert!(s.model().is_some_and(|m| m.starts_with("fake/")));
    assert!(s.thinking_level().is_some());
    // The branch walks every entry of a linear file.
    assert_eq!(s.branch().len(), s.entries.len());
}

/// pi's loader rules, one row each: (bytes, Ok(entry count) or Err(reason fragment)).
#[test]
fn parse_table() {
    let h = r#"{"type":"session","version":3,"id":"s1","timestamp":"t","cwd":"/w"}"#;
    let e = |id: &str, parent: &str| {
        format!(
            r#"{{"type":"custom","customType":"x","data":{{}},"id":"{id}","parentId":{parent},"timestamp":"t"}}"#
        )
    };
    let rows: Vec<(String, Result<usize, &str>)> = vec![
        (format!("{h}\n"), Ok(0)),
        (format!("{h}\n{}\n", e("aaaaaaaa", "null")), Ok(1)),
        // Unknown entry types are kept.
        (
            format!(
                "{h}\n{{\"type\":\"future_kind\",\"id\":\"bbbbbbbb\",\"parentId\":null,\"x\":[1]}}\n"
            ),
            Ok(1),
        ),
        // Malformed and blank lines are skipped, as pi skips them.
        (
            format!("{h}\n{{not json\n\n{}\n", e("aaaaaaaa", "null")),
            Ok(1),
        ),
        // Leading garbage before the header is skipped too.
        (format!("garbage\n{h}\n"), Ok(0)),
        // No trailing newline.
        (format!("{h}\n{}", e("aaaaaaaa", "null")), Ok(1)),
        (String::new(), Err("holds no JSON line")),
        ("\n\n".to_owned(), Err("holds no JSON line")),
        (
            format!("{}\n{h}\n", e("aaaaaaaa", "null")),
            Err("not a `session` header"),
        ),
        (
            r#"{"type":"session","version":3}"#.to_owned(),
            Err("without a string `id`"),
        ),
        ("[1,2]".to_owned(), Err("not a `session` header")),
    ];
    for (bytes, want) in rows {
        let got = session::parse(Path::new("f.jsonl"), bytes.as_bytes());
        match (got, want) {
            (Ok(s), Ok(n)) => assert_eq!(s.entries.len(), n, "{bytes:?}"),
            (Err(SessionError::NotASession { reason, .. }), Err(frag)) => {
                assert!(reason.contains(frag), "{bytes:?}: {reason}");
            }
            (got, want) => panic!("{bytes:?}: got {got:?}, want {want:?}"),
        }
    }
}

#[test]
fn append_keeps_every_original_byte_and_uses_pis_format() {
    let dir = tempfile::tempdir().unwrap();
    let original = real_session_bytes();
    let p = write(dir.path(), "s.jsonl", &original);
    let mut s = session::read(&p).unwrap();
    let leaf = s.leaf().unwrap().to_owned();
    let ids = append_entries(
        &mut s,
        &[
            NewEntry::custom("slate-test", json!({"b": 1, "a": [true]})),
            NewEntry::CustomMessage {
                custom_type: "slate-kickoff".to_owned(),
                content: "hello\nworld".to_owned(),
                display: false,
                details: Some(json!({"kickoffId": "k"})),
            },
            NewEntry::ModelChange {
                provider: "fake".to_owned(),
                model_id: "fake-reasoner".to_owned(),
            },
            NewEntry::ThinkingLevelChange {
                level: "high".to_owned(),
            },
        ],
        1_796_007_049_587,
    )
    .unwrap();
    let after = fs::read(&p).unwrap();
    assert_eq!(&after[..original.len()], &original[..], "prefix changed");
    let text = String::from_utf8(after[original.len()..].to_vec()).unwrap();
    let new: Vec<&str> = text.lines().collect();
    assert_eq!(new.len(), 4);
    assert!(text.ends_with('\n'));
    // Exactly pi's key order (JSON.stringify of pi's object literals).
    assert!(new[0].starts_with(r#"{"type":"custom","customType":"slate-test","data":{"#));
    assert!(new[0].contains(&format!(
        r#""id":"{}","parentId":"{leaf}","timestamp":"2026-11-30T02:50:49.587Z"}}"#,
        ids[0]
    )));
    assert!(new[1].starts_with(
        r#"{"type":"custom_message","customType":"slate-kickoff","content":"hello\nworld","display":false,"details":{"kickoffId":"k"},"id":""#
    ));
    assert!(new[2].starts_with(r#"{"type":"model_change","id":""#));
    assert!(new[2].ends_with(r#""provider":"fake","modelId":"fake-reasoner"}"#));
    assert!(new[3].ends_with(r#""thinkingLevel":"high"}"#));
    // 8-hex ids, unique in the file, chained from the old leaf.
    let reread = session::read(&p).unwrap();
    let mut all: Vec<&str> = reread
        .entries
        .iter()
        .filter_map(|e| e.id.as_deref())
        .collect();
    for id in &ids {
        assert_eq!(id.len(), 8);
        assert!(id.chars().all(|c| c.is_ascii_hexdigit()));
    }
    let n = all.len();
    all.sort_unstable();
    all.dedup();
    assert_eq!(all.len(), n, "duplicate ids");
    let tail = &reread.entries[reread.entries.len() - 4..];
    assert_eq!(tail[0].parent_id.as_deref(), Some(leaf.as_str()));
    for w in tail.windows(2) {
        assert_eq!(w[1].parent_id, w[0].id);
    }
    assert_eq!(reread.model().as_deref(), Some("fake/fake-reasoner"));
    assert_eq!(reread.thinking_level().as_deref(), Some("high"));
    // The in-memory session was kept in step with the file.
    assert_eq!(s.len, u64::try_from(after.len()).unwrap());
    assert_eq!(s.entries.len(), reread.entries.len());
}

#[test]
fn append_repairs_a_missing_final_newline_like_pi() {
    let dir = tempfile::tempdir().unwrap();
    let original = br#"{"type":"session","version":3,"id":"s","timestamp":"t","cwd":"/w"}"#;
    let p = write(dir.path(), "s.jsonl", original);
    let mut s = session::read(&p).unwrap();
    assert!(!s.ends_with_newline);
    append_entries(&mut s, &[NewEntry::custom("x", json!(1))], 0).unwrap();
    let after = fs::read(&p).unwrap();
    assert_eq!(&after[..original.len()], &original[..]);
    assert_eq!(after[original.len()], b'\n');
    let reread = session::read(&p).unwrap();
    assert_eq!(reread.entries.len(), 1);
    assert_eq!(reread.entries[0].parent_id, None, "first entry is a root");
}

#[test]
fn append_refuses_a_file_that_changed_and_old_versions() {
    let dir = tempfile::tempdir().unwrap();
    let p = write(dir.path(), "s.jsonl", &real_session_bytes());
    let mut s = session::read(&p).unwrap();
    let mut f = fs::OpenOptions::new().append(true).open(&p).unwrap();
    std::io::Write::write_all(
        &mut f,
        b"{\"type\":\"label\",\"id\":\"12345678\",\"parentId\":null}\n",
    )
    .unwrap();
    let before = fs::read(&p).unwrap();
    let err = append_entries(&mut s, &[NewEntry::custom("x", json!(1))], 0).unwrap_err();
    assert!(matches!(err, SessionError::Changed { .. }), "{err}");
    assert_eq!(fs::read(&p).unwrap(), before, "nothing appended");

    for header in [
        r#"{"type":"session","id":"s","timestamp":"t","cwd":"/w"}"#,
        r#"{"type":"session","version":2,"id":"s","timestamp":"t","cwd":"/w"}"#,
    ] {
        let p = write(dir.path(), "old.jsonl", format!("{header}\n").as_bytes());
        let mut s = session::read(&p).unwrap();
        let err = append_entries(&mut s, &[NewEntry::custom("x", json!(1))], 0).unwrap_err();
        assert!(matches!(err, SessionError::Version { .. }), "{err}");
        assert_eq!(fs::read(&p).unwrap(), format!("{header}\n").as_bytes());
    }
}

#[test]
fn create_session_writes_pis_header_and_name() {
    let dir = tempfile::tempdir().unwrap();
    let parent = dir.path().join("parent.jsonl");
    let s = create_session(
        &dir.path().join("new"),
        "0b7e2c1e-0000-4000-8000-000000000001",
        "/w",
        Some(&parent),
        &[NewEntry::custom("slate-handoff", json!({"sessionId": "x"}))],
        1_796_007_049_587,
    )
    .unwrap();
    assert_eq!(
        s.path.file_name().unwrap().to_str().unwrap(),
        "2026-11-30T02-50-49-587Z_0b7e2c1e-0000-4000-8000-000000000001.jsonl"
    );
    let first = fs::read_to_string(&s.path).unwrap();
    let first = first.lines().next().unwrap();
    assert_eq!(
        first,
        format!(
            r#"{{"type":"session","version":3,"id":"0b7e2c1e-0000-4000-8000-000000000001","timestamp":"2026-11-30T02:50:49.587Z","cwd":"/w","parentSession":{}}}"#,
            json!(parent.display().to_string())
        )
    );
    let v = lines(&s.path);
    assert_eq!(v[1]["parentId"], Value::Null);
    assert_eq!(
        fs::metadata(&s.path).unwrap().permissions().mode() & 0o777,
        0o600
    );
    // Exclusive: the same id and time never overwrite a file.
    assert!(
        create_session(
            &dir.path().join("new"),
            "0b7e2c1e-0000-4000-8000-000000000001",
            "/w",
            None,
            &[],
            1_796_007_049_587
        )
        .is_err()
    );
}

#[test]
fn newest_for_cwd_is_pis_continue_choice() {
    let dir = tempfile::tempdir().unwrap();
    let header = |id: &str, cwd: &str| {
        format!(r#"{{"type":"session","version":3,"id":"{id}","timestamp":"t","cwd":"{cwd}"}}"#)
            + "\n"
    };
    let a = write(dir.path(), "a.jsonl", header("a", "/w").as_bytes());
    std::thread::sleep(std::time::Duration::from_millis(20));
    write(dir.path(), "b.jsonl", header("b", "/other").as_bytes());
    write(dir.path(), "c.txt", header("c", "/w").as_bytes());
    write(dir.path(), "d.jsonl", b"not a session\n");
    assert_eq!(newest_for_cwd(dir.path(), Path::new("/w")).unwrap(), a);
    std::thread::sleep(std::time::Duration::from_millis(20));
    let e = write(dir.path(), "e.jsonl", header("e", "/w/./").as_bytes());
    assert_eq!(newest_for_cwd(dir.path(), Path::new("/w")).unwrap(), e);
    assert!(matches!(
        newest_for_cwd(dir.path(), Path::new("/nowhere")),
        Err(SessionError::NoSession { .. })
    ));
    assert!(newest_for_cwd(&dir.path().join("missing"), Path::new("/w")).is_err());
}

#[test]
fn iso_timestamps_match_javascript() {
    assert_eq!(iso_timestamp(0), "1970-01-01T00:00:00.000Z");
    assert_eq!(iso_timestamp(1_796_007_049_538), "2026-11-30T02:50:49.538Z");
    assert_eq!(iso_timestamp(4_102_444_800_000), "2100-01-01T00:00:00.000Z");
}

/// A fake `/proc/<pid>` for the probe.
fn fake_proc(
    root: &Path,
    pid: u32,
    comm: &str,
    cwd: &Path,
    env: &[(&str, &str)],
    fd: Option<&Path>,
) {
    fake_proc_child(root, pid, 1, comm, cwd, env, fd);
}

/// The same, with a parent process id.
fn fake_proc_child(
    root: &Path,
    pid: u32,
    parent: u32,
    comm: &str,
    cwd: &Path,
    env: &[(&str, &str)],
    fd: Option<&Path>,
) {
    let d = root.join(pid.to_string());
    fs::create_dir_all(d.join("fd")).unwrap();
    fs::write(d.join("comm"), format!("{comm}\n")).unwrap();
    fs::write(d.join("cmdline"), format!("{comm}\0")).unwrap();
    fs::write(
        d.join("status"),
        format!("Name:\t{comm}\nPPid:\t{parent}\n"),
    )
    .unwrap();
    symlink(cwd, d.join("cwd")).unwrap();
    let environ: Vec<u8> = env
        .iter()
        .flat_map(|(k, v)| format!("{k}={v}\0").into_bytes())
        .collect();
    fs::write(d.join("environ"), environ).unwrap();
    if let Some(f) = fd {
        symlink(f, d.join("fd").join("7")).unwrap();
    }
}

/// One row per rule of the probe: (process, expected holder?).
#[test]
fn live_probe_table() {
    let t = tempfile::tempdir().unwrap();
    let base = fs::canonicalize(t.path()).unwrap();
    let project = base.join("project");
    let elsewhere = base.join("elsewhere");
    let agent = base.join("agent");
    let sessions = agent.join("sessions").join(format!(
        "--{}--",
        project
            .display()
            .to_string()
            .trim_start_matches('/')
            .replace('/', "-")
    ));
    for d in [&project, &elsewhere, &sessions] {
        fs::create_dir_all(d).unwrap();
    }
    let file = write(&sessions, "s.jsonl", b"{}\n");
    let agent_s = agent.display().to_string();
    let sessions_s = sessions.display().to_string();
    type Row<'a> = (
        &'a str,
        &'a str,
        &'a Path,
        Vec<(&'a str, &'a str)>,
        Option<&'a Path>,
        bool,
    );
    let rows: Vec<Row<'_>> = vec![
        (
            "pi with the file open",
            "pi",
            &elsewhere,
            vec![],
            Some(&file),
            true,
        ),
        (
            "pi-rpc working in the session cwd",
            "pi-rpc",
            &project,
            vec![],
            None,
            true,
        ),
        (
            "pi whose default session dir holds the file",
            "pi",
            &project,
            vec![("PI_CODING_AGENT_DIR", &agent_s)],
            None,
            true,
        ),
        (
            "pi with PI_CODING_AGENT_SESSION_DIR",
            "pi",
            &elsewhere,
            vec![("PI_CODING_AGENT_SESSION_DIR", &sessions_s)],
            None,
            true,
        ),
        (
            "pi elsewhere",
            "pi",
            &elsewhere,
            vec![("PI_CODING_AGENT_DIR", &agent_s)],
            None,
            false,
        ),
        (
            "not pi, file open",
            "tail",
            &project,
            vec![],
            Some(&file),
            false,
        ),
    ];
    for (n, (what, comm, cwd, env, fd, want)) in rows.into_iter().enumerate() {
        let root = base.join(format!("proc{n}"));
        fake_proc(
            &root,
            4_000_000 + u32::try_from(n).unwrap(),
            comm,
            cwd,
            &env,
            fd,
        );
        let got = ProcScan::with_root(&root).holder(&file, Some(&project));
        assert_eq!(got.is_some(), want, "{what}: {got:?}");
    }
    // Slate's own pi workers (parent `slate`) block only while they hold the file open.
    for (n, (fd, want)) in [(None, false), (Some(file.as_path()), true)]
        .into_iter()
        .enumerate()
    {
        let root = base.join(format!("worker{n}"));
        fake_proc(&root, 100, "slate", &project, &[], None);
        fake_proc_child(
            &root,
            101,
            100,
            "pi",
            &project,
            &[("PI_CODING_AGENT_DIR", &agent_s)],
            fd,
        );
        let got = ProcScan::with_root(&root).holder(&file, Some(&project));
        assert_eq!(got.is_some(), want, "worker with fd {fd:?}: {got:?}");
    }
    // A worker below its containment process (`slate-contain`), and a pre-started worker
    // whose parent is anything (it was started with the capability descriptor): not holders
    // while they do not hold the file open.
    let root = base.join("contained");
    fake_proc(&root, 300, "slate-contain", &project, &[], None);
    fake_proc_child(&root, 301, 300, "pi", &project, &[], None);
    assert_eq!(
        ProcScan::with_root(&root).holder(&file, Some(&project)),
        None
    );
    let root = base.join("pooled");
    fake_proc(
        &root,
        302,
        "pi",
        &project,
        &[("SLATE_CAPABILITY_FD", "3"), ("SLATE_WORKER_POOLED", "1")],
        None,
    );
    assert_eq!(
        ProcScan::with_root(&root).holder(&file, Some(&project)),
        None
    );
    // `--from-pi`: the host pi (the command's parent) is not counted, even with the file open;
    // another pi still is, and a host that is not pi is refused.
    let root = base.join("host");
    fake_proc(&root, 200, "pi", &project, &[], Some(file.as_path()));
    let scan = ProcScan::with_root(&root).with_host(200).unwrap();
    assert_eq!(scan.holder(&file, Some(&project)), None);
    fake_proc(&root, 201, "pi", &project, &[], None);
    assert_eq!(scan.holder(&file, Some(&project)).map(|h| h.pid), Some(201));
    fake_proc(&root, 202, "bash", &project, &[], None);
    let refused = ProcScan::with_root(&root).with_host(202).unwrap_err();
    assert!(refused.contains("pid 202) is not pi"), "{refused}");
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    /// The parser never panics, whatever the bytes.
    #[test]
    fn parser_never_panics(bytes in proptest::collection::vec(any::<u8>(), 0..2048)) {
        let _ = session::parse(Path::new("f"), &bytes);
    }

    /// Nor on line-shaped input made of JSON-ish pieces.
    #[test]
    fn parser_never_panics_on_jsonish_lines(
        pieces in proptest::collection::vec(
            prop_oneof![
                Just(r#"{"type":"session","version":3,"id":"s","cwd":"/w"}"#.to_owned()),
                Just(r#"{"type":"custom","customType":"slate-state","data":{"sessionId":"s"},"id":"aaaaaaaa","parentId":"aaaaaaaa"}"#.to_owned()),
                Just(r#"{"type":"message","id":null,"parentId":7}"#.to_owned()),
                Just("\u{feff}{}".to_owned()),
                "[ -~]{0,40}",
            ],
            0..12,
        )
    ) {
        let text = pieces.join("\n");
        if let Ok(s) = session::parse(Path::new("f"), text.as_bytes()) {
            let _ = s.branch();
            let _ = s.leaf();
        }
    }

    /// Appending arbitrary custom data keeps the prefix and re-parses to the same entries plus
    /// the new ones.
    #[test]
    fn appended_files_reparse(values in proptest::collection::vec("[ -~\u{80}-\u{10ffff}]{0,24}", 1..4)) {
        let dir = tempfile::tempdir().unwrap();
        let original = real_session_bytes();
        let p = write(dir.path(), "s.jsonl", &original);
        let mut s = session::read(&p).unwrap();
        let before = s.entries.len();
        let entries: Vec<NewEntry> = values.iter().map(|v| NewEntry::custom("slate-test", json!({"v": v}))).collect();
        append_entries(&mut s, &entries, 1).unwrap();
        let after = fs::read(&p).unwrap();
        prop_assert_eq!(&after[..original.len()], &original[..]);
        let reread = session::read(&p).unwrap();
        prop_assert_eq!(reread.entries.len(), before + values.len());
        prop_assert!(reread.skipped_lines.is_empty());
        for (e, v) in reread.entries[before..].iter().zip(&values) {
            prop_assert_eq!(&e.raw["data"]["v"], &json!(v));
        }
    }
}

/// The branch follows `parentId` from the last entry (pi's leaf after loading), skipping an
/// abandoned branch, and stops at cycles and dangling parents.
#[test]
fn branch_follows_parent_ids() {
    let h = r#"{"type":"session","version":3,"id":"s","timestamp":"t","cwd":"/w"}"#;
    let e = |id: &str, parent: &str| {
        format!(r#"{{"type":"label","id":"{id}","parentId":{parent},"timestamp":"t"}}"#)
    };
    let ids = |text: String| -> Vec<String> {
        session::parse(Path::new("f"), text.as_bytes())
            .unwrap()
            .branch()
            .iter()
            .map(|e| e.id.clone().unwrap())
            .collect()
    };
    let branched = [
        h.to_owned(),
        e("aaaaaaaa", "null"),
        e("bbbbbbbb", r#""aaaaaaaa""#),
        e("cccccccc", r#""aaaaaaaa""#),
    ];
    assert_eq!(ids(branched.join("\n")), ["aaaaaaaa", "cccccccc"]);
    let cycle = [
        h.to_owned(),
        e("aaaaaaaa", r#""bbbbbbbb""#),
        e("bbbbbbbb", r#""aaaaaaaa""#),
    ];
    assert_eq!(ids(cycle.join("\n")), ["aaaaaaaa", "bbbbbbbb"]);
    let dangling = [h.to_owned(), e("aaaaaaaa", r#""zzzzzzzz""#)];
    assert_eq!(ids(dangling.join("\n")), ["aaaaaaaa"]);
    // Linear time: 20,000 entries.
    let mut long = vec![h.to_owned(), e("00000000", "null")];
    for i in 1..20_000 {
        long.push(e(&format!("{i:08x}"), &format!("\"{:08x}\"", i - 1)));
    }
    let started = std::time::Instant::now();
    assert_eq!(ids(long.join("\n")).len(), 20_000);
    assert!(started.elapsed() < std::time::Duration::from_secs(5));
}

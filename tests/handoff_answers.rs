//! What `slate --json handoff` and `slate --json resume` answer, and the pi extension's reading
//! of it (issue 21: a refused `/slate resume` crashed pi because the extension read a shape the
//! CLI never printed).
//!
//! * The JSON Schema of every answer is checked in as docs/handoff.schema.json, generated from
//!   the report types (`SLATE_BLESS=1 cargo test --test handoff_answers` regenerates it).
//! * The real binary is run into each refusal and each success the extension can meet — argv as
//!   the extension builds it (`--json … --from-pi --session FILE`) — and every answer (exit
//!   code, stdout, stderr) is handed to the extension's own handler under `node --test`
//!   (`extension/test/handoff_answers.test.ts`), which asserts that none throws, that pi is only
//!   asked to open a session file that exists, and that each outcome is a visible message.
//!   Nothing in the answers is written by hand.

#![allow(clippy::unwrap_used, reason = "test fixtures fail loudly")]

#[path = "support/pi_env.rs"]
mod pi_env;

use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::{Value, json};
use slate::store::session::{self, NewEntry};

const SLATE: &str = env!("CARGO_BIN_EXE_slate");
const SID: &str = "0f1e2d3c-4b5a-4978-8695-a4b3c2d1e0f9";

#[test]
fn the_answer_schema_is_checked_in() {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("docs/handoff.schema.json");
    let generated = format!(
        "{}\n",
        serde_json::to_string_pretty(&slate::handoff::report::answer_schema()).unwrap()
    );
    if std::env::var_os("SLATE_BLESS").is_some() {
        fs::write(&path, &generated).unwrap();
        return;
    }
    let checked_in = fs::read_to_string(&path).unwrap_or_default();
    assert!(
        checked_in == generated,
        "{} differs from the schema generated from src/handoff/report.rs; regenerate it with \
         SLATE_BLESS=1 cargo test --test handoff_answers",
        path.display()
    );
}

/// A private agent dir, project dir and runtime dir; the CLI runs inside them.
struct Sandbox {
    _dir: tempfile::TempDir,
    cwd: PathBuf,
    agent: PathBuf,
    run: PathBuf,
    sessions: PathBuf,
}

impl Sandbox {
    fn new() -> Self {
        let dir = tempfile::tempdir().unwrap();
        let base = fs::canonicalize(dir.path()).unwrap();
        let (cwd, agent, run) = (base.join("work"), base.join("agent"), base.join("run"));
        let sessions = agent.join("sessions/w");
        for d in [&cwd, &agent, &run, &sessions] {
            fs::create_dir_all(d).unwrap();
        }
        Self {
            _dir: dir,
            cwd,
            agent,
            run,
            sessions,
        }
    }

    /// A pi session on `fake/fake-model` holding one user message.
    fn session(&self, at: u64) -> PathBuf {
        let s = session::create_session(
            &self.sessions,
            SID,
            &self.cwd.display().to_string(),
            None,
            &[
                NewEntry::ModelChange {
                    provider: "fake".to_owned(),
                    model_id: "fake-model".to_owned(),
                },
                NewEntry::ThinkingLevelChange {
                    level: "off".to_owned(),
                },
            ],
            at,
        )
        .unwrap();
        let line = json!({"type": "message", "id": "abcdef12", "parentId": s.leaf(), "timestamp": "2026-11-30T02:50:49.589Z",
            "message": {"role": "user", "content": [{"type": "text", "text": "hi"}], "timestamp": 1}});
        let mut text = fs::read_to_string(&s.path).unwrap();
        text.push_str(&line.to_string());
        text.push('\n');
        fs::write(&s.path, text).unwrap();
        s.path
    }

    /// `slate.json` in the agent dir (`None` removes it).
    fn routing(&self, text: Option<&str>) {
        let file = self.agent.join("slate.json");
        match text {
            Some(t) => fs::write(file, t).unwrap(),
            None => {
                let _ = fs::remove_file(file);
            }
        }
    }

    /// One run of the real binary, recorded as the extension receives it. Its parent process
    /// is named `pi`, as it is when the extension runs it (`--from-pi` checks that); with
    /// `as_pi` false the test runs it directly.
    fn answer(&self, name: &str, sub: &str, args: &[&str]) -> Value {
        self.answer_from(true, name, sub, args)
    }

    fn answer_from(&self, as_pi: bool, name: &str, sub: &str, args: &[&str]) -> Value {
        use std::os::unix::process::CommandExt as _;
        let mut command = if as_pi {
            // `sh` as `pi`, running slate as its child (the `exit` keeps sh from exec'ing it).
            let mut c = Command::new("sh");
            c.arg0("pi").args(["-c", "\"$0\" \"$@\"; exit $?", SLATE]);
            c
        } else {
            Command::new(SLATE)
        };
        let out = command
            .args(args)
            .current_dir(&self.cwd)
            .env("PI_CODING_AGENT_DIR", &self.agent)
            .env("XDG_RUNTIME_DIR", &self.run)
            .env("HOME", self.agent.parent().unwrap())
            .env_remove("SLATE_PARENT_ID")
            .output()
            .unwrap();
        json!({
            "name": name,
            "sub": sub,
            "code": out.status.code(),
            "stdout": String::from_utf8_lossy(&out.stdout),
            "stderr": String::from_utf8_lossy(&out.stderr),
        })
    }
}

/// A definition permitting `fake/fake-reasoner` at `off` (the fix `slate handoff --check`
/// proposes for it, shaped by hand here only for the permitting case).
const PERMIT_REASONER: &str = r#"{"router": {"models": {"add": [{"model": "fake-reasoner", "capabilityRating": 50, "costRating": 50, "effort": "off", "preferredProvider": "fake", "providers": {"fake": "fake-reasoner"}, "guidelines": [], "cautions": []}]}}}"#;

/// Every answer: refusals first, then the successes of a paused handoff and its resume.
#[allow(clippy::too_many_lines, reason = "one run per answer, listed in order")]
fn answers(sb: &Sandbox) -> Vec<Value> {
    let p = "9a8b7c6d-5e4f-4a3b-8c2d-1e0f9a8b7c6d";
    let mut all = Vec::new();
    let original = sb.session(1_796_000_000_000);
    let f = original.display().to_string();
    let handoff = |extra: &[&str]| -> Vec<String> {
        let mut v: Vec<String> = [
            "--json",
            "handoff",
            "--from-pi",
            "--session",
            &f,
            "--parent",
            p,
        ]
        .iter()
        .map(|s| (*s).to_owned())
        .collect();
        v.extend(extra.iter().map(|s| (*s).to_owned()));
        v
    };
    let run = |name: &str, sub: &str, argv: Vec<String>| {
        let argv: Vec<&str> = argv.iter().map(String::as_str).collect();
        sb.answer(name, sub, &argv)
    };
    // `--from-pi` from a process that is not pi.
    all.push(sb.answer_from(
        false,
        "resume --from-pi: the parent process is not pi",
        "resume",
        &["--json", "resume", "--from-pi", "--session", &f],
    ));
    // Resume refusals on a session that was never handed off.
    all.push(run(
        "resume: no Slate state",
        "resume",
        vec![
            "--json".into(),
            "resume".into(),
            "--from-pi".into(),
            "--session".into(),
            f.clone(),
        ],
    ));
    all.push(run(
        "resume: a malformed --effort",
        "resume",
        vec![
            "--json".into(),
            "resume".into(),
            "--from-pi".into(),
            "--session".into(),
            f.clone(),
            "--effort".into(),
            "HIGH".into(),
        ],
    ));
    all.push(run(
        "resume: an unknown flag (the argument parser's own error)",
        "resume",
        vec![
            "--json".into(),
            "resume".into(),
            "--from-pi".into(),
            "--session".into(),
            f.clone(),
            "--bogus".into(),
        ],
    ));
    let missing = sb.sessions.join("missing.jsonl").display().to_string();
    all.push(run(
        "resume: a session file that does not exist",
        "resume",
        vec![
            "--json".into(),
            "resume".into(),
            "--from-pi".into(),
            "--session".into(),
            missing.clone(),
        ],
    ));
    // Handoff refusals.
    all.push(run(
        "handoff: two purposes (the argument parser's own error)",
        "handoff",
        handoff(&["--post-check", "--user-request"]),
    ));
    all.push(run(
        "handoff: a session file that does not exist",
        "handoff",
        vec![
            "--json".into(),
            "handoff".into(),
            "--from-pi".into(),
            "--session".into(),
            missing.clone(),
            "--parent".into(),
            p.into(),
        ],
    ));
    sb.routing(Some(
        r#"{"router": {"models": {"include": ["no-such-model"]}}}"#,
    ));
    all.push(run(
        "handoff: routing blocked by slate.json",
        "handoff",
        handoff(&["finish the parser"]),
    ));
    all.push(run(
        "handoff --check: routing blocked by slate.json",
        "check",
        vec![
            "--json".into(),
            "handoff".into(),
            "--check".into(),
            "--from-pi".into(),
            "--session".into(),
            f.clone(),
        ],
    ));
    sb.routing(None);
    // The check before a handoff on a model routing does not permit.
    all.push(run(
        "handoff --check: the model is not permitted",
        "check",
        vec![
            "--json".into(),
            "handoff".into(),
            "--check".into(),
            "--from-pi".into(),
            "--session".into(),
            f.clone(),
        ],
    ));
    // The handoff pauses the successor (fake/fake-model is not permitted).
    let paused = run(
        "handoff: adoption paused",
        "handoff",
        handoff(&["finish the parser"]),
    );
    let successor =
        serde_json::from_str::<Value>(paused["stdout"].as_str().unwrap()).unwrap()["successorFile"]
            .as_str()
            .unwrap()
            .to_owned();
    all.push(paused);
    let resume = |extra: &[&str]| -> Vec<String> {
        let mut v: Vec<String> = ["--json", "resume", "--from-pi", "--session", &successor]
            .iter()
            .map(|s| (*s).to_owned())
            .collect();
        v.extend(extra.iter().map(|s| (*s).to_owned()));
        v
    };
    // The crash of issue 21: resume with no model on the adoption-paused successor.
    all.push(run(
        "resume: adoption pause, no model",
        "resume",
        resume(&[]),
    ));
    all.push(run(
        "resume: adoption pause, a model routing does not permit",
        "resume",
        resume(&["--model", "fake/fake-model"]),
    ));
    sb.routing(Some("{ not json"));
    all.push(run(
        "resume: slate.json is not JSON",
        "resume",
        resume(&["--model", "fake/fake-reasoner"]),
    ));
    sb.routing(Some(PERMIT_REASONER));
    all.push(run(
        "resume: the effort conflicts with the permitted model's",
        "resume",
        resume(&["--model", "fake/fake-reasoner", "--effort", "high"]),
    ));
    all.push(run(
        "resume: a permitted model",
        "resume",
        resume(&["--model", "fake/fake-reasoner"]),
    ));
    all.push(run("resume: not paused any more", "resume", resume(&[])));
    all
}

#[test]
fn the_extension_shows_every_answer_the_cli_gives_and_never_throws() {
    let sb = Sandbox::new();
    let answers = answers(&sb);
    // The answers cover every kind the reader tells apart.
    let kinds = |pred: &dyn Fn(&Value) -> bool| answers.iter().filter(|a| pred(a)).count();
    let json_error = |a: &Value| {
        serde_json::from_str::<Value>(a["stdout"].as_str().unwrap())
            .is_ok_and(|v| v["error"]["code"].is_string())
    };
    assert!(
        kinds(&json_error) >= 8,
        "refusals as JSON errors: {answers:#?}"
    );
    // The argument parser's own errors honour --json too (issue 22 item 15): the one error
    // shape, code `usage`, with the usage line in `data`.
    let parser_error = |a: &Value| {
        serde_json::from_str::<Value>(a["stdout"].as_str().unwrap())
            .is_ok_and(|v| v["error"]["code"] == "usage" && v["error"]["data"]["usage"].is_string())
            && a["stderr"].as_str().unwrap().is_empty()
    };
    assert!(
        kinds(&parser_error) >= 2,
        "argument-parser errors (JSON, code usage): {answers:#?}"
    );
    let named = |n: &str| answers.iter().find(|a| a["name"] == n).unwrap();
    let crash = named("resume: adoption pause, no model");
    assert_eq!(crash["code"], json!(1), "{crash:#}");
    assert!(json_error(crash), "{crash:#}");
    assert_eq!(named("resume: a permitted model")["code"], json!(0));
    let check = named("handoff --check: the model is not permitted");
    let check: Value = serde_json::from_str(check["stdout"].as_str().unwrap()).unwrap();
    assert_eq!(check["permitted"], json!(false));
    assert!(
        check["fix"]
            .as_str()
            .unwrap()
            .contains(r#""providers":{"fake":"fake-model"}"#),
        "the fix names the slate.json entry: {check:#}"
    );

    let file = sb.run.join("answers.json");
    fs::write(&file, serde_json::to_string_pretty(&answers).unwrap()).unwrap();
    let Some(node) = pi_env::PiCommand::locate().and_then(|_| node()) else {
        assert!(!pi_env::in_ci(), "no node under CI=true");
        eprintln!("SKIPPED: no Node for the extension half of this test");
        return;
    };
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let out = Command::new(node)
        .args(["--test", "extension/test/handoff_answers.test.ts"])
        .current_dir(root)
        .env("SLATE_HANDOFF_ANSWERS", &file)
        .output()
        .unwrap();
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(out.status.success(), "node --test failed:\n{text}");
    assert!(
        text.contains("# pass") && !text.contains("# skipped 1"),
        "{text}"
    );
    let passed: usize = text
        .lines()
        .find_map(|l| l.strip_prefix("# pass "))
        .and_then(|n| n.trim().parse().ok())
        .unwrap_or(0);
    assert!(
        passed > answers.len(),
        "one node test per answer, and the schema test:\n{text}"
    );
}

/// `$SLATE_PI_NODE`, else the env file's.
fn node() -> Option<PathBuf> {
    if let Some(n) = std::env::var_os("SLATE_PI_NODE") {
        return Some(PathBuf::from(n));
    }
    let text = fs::read_to_string(pi_env::env_file()?).ok()?;
    text.lines().find_map(|l| {
        l.trim()
            .strip_prefix("export SLATE_PI_NODE=")
            .map(|v| PathBuf::from(v.trim_matches('\'').trim_matches('"')))
    })
}

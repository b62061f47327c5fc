//! JSON never carries raw controls (issue 11, part 7): C0, C1, DEL and bidi controls in an
//! assignment, in model output and in tool output, run through a real `slate serve`
//! (simulated workers), never appear unescaped in any `--json` output or in `events.jsonl`,
//! and every decoded string is exactly the input.

#![allow(clippy::unwrap_used, reason = "test fixtures fail loudly")]

use std::io::BufRead;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};

use serde_json::{Value, json};
use slate::json::needs_escape;

/// Every class at once: C0 (ESC, BEL, NUL), DEL, C1 (NEL, CSI, ST, OSC, APC edge), bidi.
const NASTY: &str = "\u{1b}[31mred\u{7}\u{0}|\u{7f}|\u{85}\u{9b}2J\u{9c}\u{9d}\u{9f}|\u{61c}\u{200e}\u{200f}\u{202a}\u{202c}\u{202e}evil\u{2066}\u{2069}";

struct Serve {
    base: PathBuf,
    child: Child,
}

impl Serve {
    fn start(scripts: &Value) -> Self {
        let base = std::env::temp_dir().join(format!("slate-json-controls-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&base);
        for d in ["work", "agent", "run"] {
            std::fs::create_dir_all(base.join(d)).unwrap();
        }
        let path = base.join("scripts.json");
        std::fs::write(&path, scripts.to_string()).unwrap();
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_slate"));
        cmd.args([
            "serve",
            "--backend",
            "sim",
            "--model",
            "fake/model",
            "--scenario",
        ])
        .arg(&path)
        .current_dir(base.join("work"))
        .stdout(Stdio::piped())
        .stderr(Stdio::null());
        Self::env(&base, &mut cmd);
        let mut child = cmd.spawn().unwrap();
        let mut lines = std::io::BufReader::new(child.stdout.take().unwrap()).lines();
        // The parent line, then the socket line: serving from here on.
        assert!(lines.any(|l| l.unwrap().starts_with("socket ")));
        Self { base, child }
    }

    fn env(base: &Path, cmd: &mut Command) {
        cmd.env("PI_CODING_AGENT_DIR", base.join("agent"))
            .env("XDG_RUNTIME_DIR", base.join("run"))
            .env_remove("SLATE_SOCKET");
    }

    /// `slate --json ARGS…` from the work directory; its stdout, checked and parsed.
    fn json(&self, args: &[&str]) -> (Vec<u8>, Value) {
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_slate"));
        cmd.arg("--json")
            .args(args)
            .current_dir(self.base.join("work"));
        Self::env(&self.base, &mut cmd);
        let out: Output = cmd.output().unwrap();
        let value = serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
            panic!(
                "{args:?}: {e}: {}\n{}",
                String::from_utf8_lossy(&out.stdout),
                String::from_utf8_lossy(&out.stderr)
            )
        });
        (out.stdout, value)
    }
}

impl Drop for Serve {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        let _ = std::fs::remove_dir_all(&self.base);
    }
}

/// Raw controls in JSON text, outside the newlines between (pretty) tokens.
fn raw_controls(what: &str, bytes: &[u8]) -> Vec<String> {
    let text = std::str::from_utf8(bytes).unwrap_or_else(|e| panic!("{what}: not UTF-8: {e}"));
    text.char_indices()
        .filter(|&(_, c)| c != '\n' && needs_escape(c))
        .map(|(at, c)| format!("{what}: raw U+{:04X} at byte {at}", u32::from(c)))
        .collect()
}

/// Every string in `value` (keys too).
fn strings(value: &Value, out: &mut Vec<String>) {
    match value {
        Value::String(s) => out.push(s.clone()),
        Value::Array(items) => items.iter().for_each(|v| strings(v, out)),
        Value::Object(map) => {
            for (k, v) in map {
                out.push(k.clone());
                strings(v, out);
            }
        }
        _ => {}
    }
}

fn contains_exact(value: &Value, wanted: &str) -> bool {
    let mut all = Vec::new();
    strings(value, &mut all);
    all.iter().any(|s| s.contains(wanted))
}

fn find(dir: &Path, name: &str) -> Option<PathBuf> {
    for entry in std::fs::read_dir(dir).ok()?.flatten() {
        let path = entry.path();
        if path.is_dir() {
            if let Some(found) = find(&path, name) {
                return Some(found);
            }
        } else if path.file_name().is_some_and(|n| n == name) {
            return Some(path);
        }
    }
    None
}

#[test]
fn controls_in_assignments_model_and_tool_output_never_leave_unescaped() {
    let model_text = format!("model says {NASTY} done");
    let tool_output = format!("tool prints {NASTY} end");
    let assignment = format!("Survey {NASTY} please");
    let scripts = json!({
        "scripts": [],
        "default": {"steps": [
            {"progress": format!("progress {NASTY}")},
            {"tool": {"name": "bash", "ms": 5, "error": false,
                "args": {"command": format!("echo {NASTY}")}, "output": tool_output}},
            {"request": {"ms": 5, "text": model_text, "inputTokens": 1, "outputTokens": 1}},
        ]},
    });
    let serve = Serve::start(&scripts);

    let mut problems = Vec::new();
    // From a file: an argument cannot carry NUL.
    let request = serve.base.join("request.json");
    std::fs::write(
        &request,
        json!({"assignment": assignment, "profile": "scout"}).to_string(),
    )
    .unwrap();
    let (bytes, delegated) = serve.json(&["delegate", "--file", request.to_str().unwrap()]);
    problems.extend(raw_controls("delegate --json", &bytes));
    assert!(contains_exact(&delegated, &model_text), "{delegated}");

    let (bytes, status) = serve.json(&["status"]);
    problems.extend(raw_controls("status --json", &bytes));
    assert!(
        contains_exact(&status, &assignment),
        "the assignment decodes exactly"
    );
    assert!(
        contains_exact(&status, &model_text),
        "the model output decodes exactly"
    );
    let child = &status["children"][0];
    let target = format!("{}@{}", child["id"].as_str().unwrap(), child["generation"]);

    for args in [
        vec!["status", target.as_str()],
        vec!["transcript", target.as_str()],
    ] {
        let (bytes, value) = serve.json(&args);
        problems.extend(raw_controls(&format!("{args:?}"), &bytes));
        if args[0] == "transcript" {
            assert!(contains_exact(&value, &tool_output), "tool output: {value}");
            assert!(contains_exact(&value, &assignment), "the prompt: {value}");
        }
    }

    let events = find(&serve.base, "events.jsonl").expect("an events.jsonl");
    let log = std::fs::read(&events).unwrap();
    problems.extend(raw_controls("events.jsonl", &log));
    let mut decoded = Vec::new();
    for line in log.split(|&b| b == b'\n').filter(|l| !l.is_empty()) {
        let value: Value = serde_json::from_slice(line).unwrap();
        strings(&value, &mut decoded);
    }
    for wanted in [&assignment, &model_text] {
        assert!(
            decoded.iter().any(|s| s.contains(wanted.as_str())),
            "events.jsonl decodes {wanted:?} exactly"
        );
    }
    // The simulated worker's pi session file is JSON Slate writes too.
    if let Some(path) = find(&serve.base, "session.jsonl") {
        problems.extend(raw_controls("session.jsonl", &std::fs::read(path).unwrap()));
    }
    assert!(problems.is_empty(), "{problems:#?}");
}

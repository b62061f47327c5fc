//! `slate run` refuses a bad request before its runtime exists (issue 14, item 6): a truncated
//! request file and a task file with a NUL byte both exit 2 — as `slate delegate --file` does —
//! and leave nothing behind (no delegation directory, no `events.jsonl`).

#![allow(clippy::unwrap_used, reason = "test fixtures fail loudly")]

use std::path::Path;
use std::process::Command;

const SLATE: &str = env!("CARGO_BIN_EXE_slate");

fn run(base: &Path, request: &Path) -> (i32, String) {
    let out = Command::new(SLATE)
        .args(["run", "--backend", "sim", "--model", "fake/m"])
        .arg(request)
        .current_dir(base.join("work"))
        .env("PI_CODING_AGENT_DIR", base.join("agent"))
        .env("XDG_RUNTIME_DIR", base.join("run"))
        .output()
        .unwrap();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn a_refused_run_exits_2_and_writes_nothing() {
    let base = std::env::temp_dir().join(format!("slate-run-refusals-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&base);
    for d in ["agent", "work", "run"] {
        std::fs::create_dir_all(base.join(d)).unwrap();
    }
    let truncated = base.join("truncated.json");
    std::fs::write(&truncated, r#"{"assignment": "a", "profile": "scout""#).unwrap();
    let (code, err) = run(&base, &truncated);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("invalid JSON"), "{err}");

    std::fs::write(base.join("work/task.md"), b"abc\0def").unwrap();
    let with_nul = base.join("nul.json");
    std::fs::write(&with_nul, r#"{"taskFile": "task.md", "profile": "scout"}"#).unwrap();
    let (code, err) = run(&base, &with_nul);
    assert_eq!(code, 2, "{err}");
    assert!(
        err.contains("$.taskFile") && err.contains("NUL byte"),
        "{err}"
    );

    assert!(
        !base.join("agent/sessions").exists(),
        "a refused run leaves no delegation directory"
    );
    let _ = std::fs::remove_dir_all(&base);
}

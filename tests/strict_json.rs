//! The JSON people write is read strictly (issue 14, item 5): a repeated member name is refused
//! naming its JSON path, in `delegation.json`, request files and `--limits`, and a byte order
//! mark is refused saying so — each before anything runs, with exit 2 and nothing written.

#![allow(clippy::unwrap_used, reason = "test fixtures fail loudly")]

use std::path::PathBuf;
use std::process::Command;

const SLATE: &str = env!("CARGO_BIN_EXE_slate");

fn fixture(name: &str) -> PathBuf {
    let base =
        std::env::temp_dir().join(format!("slate-strict-json-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&base);
    for d in ["agent", "work", "run"] {
        std::fs::create_dir_all(base.join(d)).unwrap();
    }
    base
}

fn slate(base: &std::path::Path, args: &[&str]) -> (i32, String) {
    let out = Command::new(SLATE)
        .args(args)
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
fn a_repeated_member_in_delegation_json_is_refused_naming_the_file_and_path() {
    let base = fixture("delegation");
    let file = base.join("agent/delegation.json");
    std::fs::write(&file, r#"{"scheduling":{"concurrency":2,"concurrency":3}}"#).unwrap();
    let (code, err) = slate(&base, &["profiles"]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains(&file.display().to_string()), "{err}");
    assert!(
        err.contains("$.scheduling.concurrency: the member \"concurrency\" appears more than once"),
        "{err}"
    );
    let _ = std::fs::remove_dir_all(&base);
}

#[test]
fn a_repeated_member_in_limits_or_a_request_file_and_a_bom_are_usage_errors() {
    let base = fixture("request");
    let (code, err) = slate(
        &base,
        &[
            "delegate",
            "survey",
            "--limits",
            r#"{"requests":1,"requests":2}"#,
        ],
    );
    assert_eq!(code, 2, "{err}");
    assert!(
        err.contains("--limits") && err.contains("$.requests"),
        "{err}"
    );

    let file = base.join("request.json");
    std::fs::write(
        &file,
        r#"{"tasks":[{"assignment":"a"},{"assignment":"b","assignment":"c"}]}"#,
    )
    .unwrap();
    let (code, err) = slate(&base, &["delegate", "--file", file.to_str().unwrap()]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("$.tasks[1].assignment"), "{err}");

    std::fs::write(&file, b"\xEF\xBB\xBF{\"assignment\":\"a\"}").unwrap();
    let (code, err) = slate(&base, &["delegate", "--file", file.to_str().unwrap()]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("byte order mark"), "{err}");
    // Nothing was written: no coordinator, no delegation directory.
    assert!(!base.join("agent/sessions").exists());
    let _ = std::fs::remove_dir_all(&base);
}

//! DESIGN.md §2: `src/core` and `src/policy` stay free of IO and UI crates.

use std::fs;
use std::path::{Path, PathBuf};

const FORBIDDEN: [&str; 7] = [
    "tokio",
    "ratatui",
    "crossterm",
    "clap",
    "std::fs",
    "std::process",
    "std::net",
];

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(entries) = fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let path = entry.path();
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

/// Every forbidden path used in `source`, ignoring comments.
fn violations(source: &str) -> Vec<String> {
    let mut found = Vec::new();
    for (n, line) in source.lines().enumerate() {
        let code = line.split("//").next().unwrap_or("");
        for name in FORBIDDEN {
            let hit = code.match_indices(name).any(|(i, _)| {
                let before = code[..i].chars().next_back();
                let after = code[i + name.len()..].chars().next();
                let boundary_before = before.is_none_or(|c| !(c.is_alphanumeric() || c == '_'));
                let boundary_after = after.is_none_or(|c| !(c.is_alphanumeric() || c == '_'));
                boundary_before && boundary_after
            });
            if hit {
                found.push(format!("line {}: {name}: {}", n + 1, line.trim()));
            }
        }
    }
    found
}

#[test]
fn core_and_policy_import_no_io_or_ui_crates() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut files = Vec::new();
    for dir in ["src/core", "src/policy"] {
        rust_files(&root.join(dir), &mut files);
    }
    for file in ["src/core.rs", "src/policy.rs"] {
        files.push(root.join(file));
    }
    assert!(
        files.len() > 10,
        "expected the core sources, found {files:?}"
    );
    let mut problems = Vec::new();
    for file in &files {
        let source = fs::read_to_string(file).expect("readable source");
        for v in violations(&source) {
            problems.push(format!("{}: {v}", file.display()));
        }
    }
    assert!(
        problems.is_empty(),
        "forbidden imports in the sans-IO layers:\n{}",
        problems.join("\n")
    );
}

#[test]
fn the_import_check_catches_each_forbidden_name() {
    for (source, name) in [
        ("use tokio::sync::mpsc;", "tokio"),
        ("let f = std::fs::read(p);", "std::fs"),
        ("use std::process::Command;", "std::process"),
        ("use std::net::TcpStream;", "std::net"),
        ("use ratatui::Frame;", "ratatui"),
        ("use crossterm::event;", "crossterm"),
        ("use clap::Parser;", "clap"),
    ] {
        assert_eq!(
            violations(source).len(),
            1,
            "{name} not caught in {source:?}"
        );
    }
    assert!(violations("// tokio is not used here").is_empty());
    assert!(violations("let tokiosaurus = 1;").is_empty());
}

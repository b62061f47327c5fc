//! The fleet widget above pi's editor (issue 21, items 4 and 5): drawn at pi's current width on
//! every frame, so a resize reflows it with no wrapped row; a short handle on every row; Tab
//! completes a handle to the full `UUID@generation` for `/subagent-stop`.

use crate::pi_tmux::{InteractivePi, overflowing_lines};

/// The main session's model calls `delegate_task` in the background, once per assignment.
fn delegate_in_background(pi: &InteractivePi, assignments: &[&str]) {
    pi.type_text("SCENARIO:CALLS delegate");
    for assignment in assignments {
        pi.keys(&["C-j"]);
        let call =
            serde_json::json!({"assignment": assignment, "profile": "scout", "background": true});
        pi.type_text(&format!("CALL: delegate_task {call}"));
    }
    pi.keys(&["Enter"]);
}

/// The current generations' ids (`slate status --json` in the sandbox).
fn ids(pi: &InteractivePi) -> Vec<String> {
    let out = pi.slate(&["status", "--json"]);
    let value: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!(
            "slate status --json: {e}: {}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        )
    });
    value["children"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["id"].as_str().unwrap().to_owned())
        .collect()
}

/// The widget's rows on a screen: the header and the lines under it that carry a handle.
fn widget_rows<'s>(screen: &'s str, handles: &[String]) -> Vec<&'s str> {
    screen
        .lines()
        .filter(|l| {
            l.trim_start().starts_with("Subagents")
                || handles.iter().any(|h| l.contains(h.as_str()))
        })
        .collect()
}

#[test]
fn the_widget_follows_resizes_without_a_wrapped_row_shows_handles_and_tab_completes_a_full_identity()
 {
    let Some(pi) = InteractivePi::start("tui_widget", 160, 45, |_| {}) else {
        return;
    };
    pi.wait_for("pi's editor", |s| s.contains("fake-model"));
    delegate_in_background(
        &pi,
        &[
            "SCENARIO:SLOW120 survey the flaky parser tests and list every failure with its cause",
            "SCENARIO:SLOW120 review the 日本語 notes and the scheduler",
        ],
    );
    pi.wait_for("two running rows", |s| {
        s.contains("Subagents") && s.matches("running").count() >= 3
    });
    let ids = ids(&pi);
    assert_eq!(ids.len(), 2, "{ids:?}");
    let handles: Vec<String> = ids.iter().map(|id| id[..8].to_owned()).collect();

    for (width, height) in [(160, 45), (80, 24), (120, 30)] {
        pi.resize(width, height);
        let screen = pi.wait_for(&format!("the widget at {width}×{height}"), |s| {
            let rows = widget_rows(s, &handles);
            // Drawn for this width: the rows of both children, each ending within the pane.
            rows.len() >= 3
                && rows
                    .iter()
                    .all(|r| crate::pi_tmux::display_width(r) < usize::from(width))
                && s.lines().any(|l| {
                    l.starts_with('─') && crate::pi_tmux::display_width(l) == usize::from(width)
                })
        });
        let joined = pi.joined_screen();
        assert_eq!(
            overflowing_lines(&joined, width),
            Vec::new(),
            "no line is wider than the pane at {width}×{height}:\n{joined}"
        );
        for handle in &handles {
            assert!(
                widget_rows(&screen, &handles)
                    .iter()
                    .any(|r| r.contains(handle.as_str()) && r.contains("running")),
                "{handle} on a running row at {width}×{height}:\n{screen}"
            );
        }
        // Rows keep pi's one-column margin on each side.
        for row in widget_rows(&screen, &handles) {
            assert!(row.starts_with(' '), "{row:?}");
            assert!(
                crate::pi_tmux::display_width(row) < usize::from(width),
                "{row:?}"
            );
        }
    }

    // Tab completes the first few digits of a handle to the full identity; Enter stops it.
    let first = &ids[0];
    pi.type_text(&format!("/subagent-stop {}", &first[..4]));
    // pi asks the extension for candidates as the text changes; they show as a menu.
    pi.wait_for("the candidate in pi's menu", |s| {
        s.lines()
            .any(|l| l.contains(&format!("{}  scout  running", handles[0])))
    });
    pi.keys(&["Tab"]);
    pi.wait_for("the full identity in the editor", |s| {
        s.lines()
            .any(|l| l.contains(&format!("/subagent-stop {first}@1")))
    });
    pi.keys(&["Enter"]);
    let screen = pi.wait_for("the stopped child", |s| {
        widget_rows(s, &handles)
            .iter()
            .any(|r| r.contains(&handles[0]) && r.contains("cancelled"))
    });
    assert!(!screen.contains("PI-EXIT="), "pi exited:\n{screen}");

    // A handle typed by hand is not a target: the refusal says to use the full identity. (The
    // trailing space closes pi's suggestion menu, which Enter would otherwise accept.)
    pi.submit(&format!("/subagent-stop {} ", handles[1]));
    pi.wait_for("the refusal", |s| {
        s.split_whitespace()
            .collect::<Vec<_>>()
            .join(" ")
            .contains("a handle is for reading only")
    });
    assert_eq!(
        pi.quit(),
        Vec::<String>::new(),
        "processes left after pi quit"
    );
}

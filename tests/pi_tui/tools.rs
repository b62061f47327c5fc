//! Slate's tools render in pi (issue 21, "Tools that render in pi"): a foreground and a
//! background delegation show one live line per child (status mark, role, 8-character handle)
//! while they run and settle to result headlines, and no captured line is wider than the pane.

use std::time::{Duration, Instant};

use crate::pi_tmux::{InteractivePi, overflowing_lines};

/// The pane with its scrollback (the model's answer may push a settled row off the screen).
fn history(pi: &InteractivePi) -> String {
    let out = pi
        .tmux()
        .args(["capture-pane", "-p", "-J", "-S", "-400", "-t", "t"])
        .output()
        .expect("tmux capture-pane");
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// Polls the pane and its scrollback until `ready` holds (at most a minute).
fn wait_in_history(pi: &InteractivePi, what: &str, ready: impl Fn(&str) -> bool) -> String {
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let text = history(pi);
        if ready(&text) {
            return text;
        }
        assert!(
            Instant::now() < deadline,
            "timed out waiting for {what}:\n{text}"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// The model calls `tool` with `args` (the fake LLM's `CALLS` scenario).
fn call(pi: &InteractivePi, tool: &str, args: &str) {
    pi.type_text("SCENARIO:CALLS");
    pi.keys(&["C-j"]);
    pi.submit(&format!("CALL: {tool} {args}"));
}

fn no_overflow(pi: &InteractivePi, width: u16, when: &str) {
    let joined = pi.joined_screen();
    assert_eq!(
        overflowing_lines(&joined, width),
        Vec::new(),
        "{when}: no line is wider than the pane at width {width}"
    );
}

#[test]
fn foreground_and_background_delegations_render_live_rows_that_settle_to_headlines() {
    // 80 columns at 45 rows: at 24 rows the model's closing message can push the settled
    // row above the screen while pi redraws, and pi's full redraw does not keep what scrolled
    // off, so the row was sometimes gone from the history the test reads (the width is what
    // can overflow; the widget and Hub tests cover 80x24).
    for (width, height) in [(160, 45), (80, 45)] {
        let Some(pi) = InteractivePi::start("tui_tools", width, height, |_| {}) else {
            return;
        };
        pi.wait_for("pi's editor", |s| s.contains("fake-model"));
        // Foreground: a live row while the child streams for a few seconds…
        call(
            &pi,
            "delegate_task",
            r#"{"assignment": "SCENARIO:SLOW3 look around", "profile": "scout"}"#,
        );
        let live = wait_in_history(&pi, "a live child row", |s| {
            s.lines().any(|l| {
                let l = l.trim_start();
                (l.starts_with("◌ scout ") || l.starts_with("● scout ")) && !l.contains("SCENARIO")
            })
        });
        no_overflow(&pi, width, "while the foreground call runs");
        let handle = live
            .lines()
            .map(str::trim_start)
            .find(|l| l.starts_with("◌ scout ") || l.starts_with("● scout "))
            .and_then(|l| l.split_whitespace().nth(2))
            .unwrap()
            .to_owned();
        assert_eq!(handle.len(), 8, "an 8-character handle: {handle}");
        // …that settles to the result headline.
        wait_in_history(&pi, "the settled row with its headline", |s| {
            s.lines().any(|l| {
                l.trim_start().starts_with(&format!("✓ scout {handle} ")) && l.contains("· word0")
            })
        });
        no_overflow(&pi, width, "after the foreground call");
        // Background: the accepted rows at once, then the outcome message with settled rows.
        call(
            &pi,
            "delegate_task",
            r#"{"tasks": [{"assignment": "SCENARIO:SLOW2 a", "profile": "scout"}, {"assignment": "hello b", "profile": "review"}], "background": true}"#,
        );
        wait_in_history(&pi, "the accepted call's note", |s| {
            s.contains("the outcome follows as a message")
        });
        wait_in_history(&pi, "the outcome message with settled rows", |s| {
            s.contains("drained") && s.lines().any(|l| l.trim_start().starts_with("✓ review "))
        });
        no_overflow(&pi, width, "after the background outcome");
        assert_eq!(
            pi.quit(),
            Vec::<String>::new(),
            "processes left after pi quit"
        );
    }
}

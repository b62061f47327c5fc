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

/// The artifact path drawn under a settled row: the `→` line and its continuation lines (a
/// path that does not fit continues on the next lines, indented four columns).
fn drawn_path(screen: &str, starts: &str) -> Option<String> {
    let mut lines = screen
        .lines()
        .skip_while(|l| !l.trim_start().starts_with(&format!("→ {starts}")));
    let first = lines.next()?.trim().strip_prefix("→ ")?.to_owned();
    // tmux pads a captured line with blanks to the pane's width.
    let rest: String = lines
        .take_while(|l| l.starts_with("     ") && !l.trim_start().starts_with('→'))
        .map(str::trim)
        .collect();
    Some(first + &rest)
}

/// Issue 21: at 80 columns an artifact path is drawn whole (continued after a `/`, never cut),
/// `/subagent-stop` answers one short line, and `/slate effective` shows Slate's warning that
/// no permitted route exists in this pi (the fake LLM's models are not in the shipped routing).
#[test]
fn at_80_columns_paths_stay_exact_the_stop_answer_fits_and_effective_warns_about_pi_s_routes() {
    let width = 80;
    let Some(pi) = InteractivePi::start("tui_answers", width, 45, |_| {}) else {
        return;
    };
    pi.wait_for("pi's editor", |s| s.contains("fake-model"));
    call(
        &pi,
        "delegate_task",
        r#"{"assignment": "quick one", "profile": "scout"}"#,
    );
    let screen = wait_in_history(&pi, "the settled row", |s| {
        s.lines()
            .any(|l| l.trim_start().starts_with("✓ scout ") && l.contains("ACK: quick one"))
    });
    let status: serde_json::Value =
        serde_json::from_slice(&pi.slate(&["status", "--json"]).stdout).unwrap();
    let id = status["children"][0]["id"].as_str().unwrap().to_owned();
    let full: serde_json::Value = serde_json::from_slice(
        &pi.slate(&["status", "--json", "--", &format!("{id}@1")])
            .stdout,
    )
    .unwrap();
    let artifact = full["snapshot"]["artifacts"]["text"]
        .as_str()
        .unwrap()
        .to_owned();
    assert!(
        artifact.len() > usize::from(width),
        "a path longer than the pane: {artifact}"
    );
    let drawn =
        drawn_path(&screen, &artifact[..10]).unwrap_or_else(|| panic!("no path:\n{screen}"));
    assert_eq!(drawn, artifact, "the path is drawn exact:\n{screen}");
    no_overflow(&pi, width, "after the foreground call");

    // A running child, stopped by its full identity: one line, not a table row.
    call(
        &pi,
        "delegate_task",
        r#"{"assignment": "SCENARIO:SLOW60 survey", "profile": "scout", "background": true}"#,
    );
    wait_in_history(&pi, "the accepted call's note", |s| {
        s.contains("the outcome follows as a message")
    });
    let status: serde_json::Value =
        serde_json::from_slice(&pi.slate(&["status", "--json"]).stdout).unwrap();
    let running = status["children"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["id"].as_str() != Some(id.as_str()))
        .unwrap()["id"]
        .as_str()
        .unwrap()
        .to_owned();
    // The trailing space closes pi's suggestion menu, which Enter would otherwise accept.
    pi.submit(&format!("/subagent-stop {running}@1 "));
    let handle = &running[..8];
    let screen = wait_in_history(&pi, "the stop answer", |s| {
        s.lines().any(|l| {
            let l = l.trim();
            (l.starts_with(&format!("Stopping scout {handle}:"))
                || l.starts_with(&format!("Stopped scout {handle}:")))
                && l.ends_with("cancelled.")
        })
    });
    // Not the status table's row (its handle column, then the identity).
    assert!(
        !screen.contains(&format!("{handle}    {running}@1")),
        "no table row:\n{screen}"
    );
    no_overflow(&pi, width, "after /subagent-stop");

    // /subagent-status: the fleet table fitted to pi's width, one line per generation.
    pi.submit("/subagent-status");
    wait_in_history(&pi, "the fitted fleet table", |s| {
        s.lines().any(|l| {
            let l = l.trim_start();
            l.starts_with(&id[..8]) && l.contains(" scout ") && l.contains("settled")
        }) && s.lines().any(|l| l.trim_start().starts_with(handle))
    });
    no_overflow(&pi, width, "after /subagent-status");

    // /slate effective: Slate's words, the warning among them, nothing wider than the pane.
    pi.submit("/slate effective");
    let screen = wait_in_history(&pi, "the route warning", |s| {
        let flat = s.split_whitespace().collect::<Vec<_>>().join(" ");
        flat.contains("routing: none of the") && flat.contains("is usable in this pi")
    });
    let flat = screen.split_whitespace().collect::<Vec<_>>().join(" ");
    assert!(
        flat.contains("Permitted routes in this session's pi"),
        "{screen}"
    );
    // (The remembered providers scrolled above the screen at this height: pi_main_session
    // reads them.)
    no_overflow(&pi, width, "after /slate effective");
    assert_eq!(
        pi.quit(),
        Vec::<String>::new(),
        "processes left after pi quit"
    );
}

//! `/subagent-hub`: the Subagent Hub as an overlay in pi (issue 21, item 3). The Hub is
//! Slate's (`slate hub --frames`); pi shows its frames and forwards keys. A background scout
//! whose worker streams for two minutes is opened in the overlay, followed through a resize
//! from 160×45 to 80×24 (the compact layout with its roster), steered with `s`, stopped
//! with `x` `y`, and the overlay closes with `q`; no captured line is ever wider than the pane.

use crate::pi_tmux::{InteractivePi, overflowing_lines};

/// The roster line (left of the wide layout's separator) that mentions `text`.
fn roster_row<'s>(screen: &'s str, text: &str) -> Option<&'s str> {
    screen
        .lines()
        .map(|l| l.split('│').next().unwrap_or(l))
        .find(|l| l.contains(text))
}

/// The session's coordinator has a running generation.
fn running(pi: &InteractivePi) -> bool {
    let out = pi.slate(&["--json", "status"]);
    serde_json::from_slice::<serde_json::Value>(&out.stdout).is_ok_and(|v| {
        v["children"]
            .as_array()
            .is_some_and(|c| c.iter().any(|c| c["status"] == "running"))
    })
}

fn no_overflow(pi: &InteractivePi, width: u16) {
    assert_eq!(
        overflowing_lines(&pi.joined_screen(), width),
        Vec::new(),
        "no line is wider than the pane at {width} columns"
    );
}

#[test]
fn the_hub_overlay_shows_the_fleet_follows_a_resize_steers_and_stops_a_child_and_closes_with_q() {
    let Some(pi) = InteractivePi::start("tui_hub", 160, 45, |_| {}) else {
        return;
    };
    pi.wait_for("pi's editor", |s| s.contains("fake-model"));
    // The model delegates one background scout; its worker streams for two minutes.
    pi.type_text("SCENARIO:CALLS hub");
    pi.keys(&["C-j"]);
    pi.type_text(
        r#"CALL: delegate_task {"assignment": "SCENARIO:SLOW120 Survey the hub overlay", "profile": "scout", "background": true}"#,
    );
    pi.keys(&["Enter"]);
    // The coordinator reports the scout running (asked, not read off pi's screen).
    let deadline = std::time::Instant::now() + crate::pi_tmux::WAIT;
    while !running(&pi) {
        assert!(
            std::time::Instant::now() < deadline,
            "no running scout; the screen:\n{}",
            pi.screen()
        );
        std::thread::sleep(std::time::Duration::from_millis(200));
    }

    pi.submit("/subagent-hub");
    let wide = pi.wait_for("the overlay with the running scout", |s| {
        s.lines().next().is_some_and(|l| l.starts_with("Slate Hub"))
            && roster_row(s, "Survey the hub overlay").is_some_and(|r| r.contains("running"))
    });
    assert!(wide.contains(" thread "), "{wide}");
    no_overflow(&pi, 160);

    // 80×24: the compact layout, with the roster (status mark, handle, role, status) above
    // the selected thread.
    pi.resize(80, 24);
    let compact = pi.wait_for("the compact overlay", |s| {
        s.lines().count() <= 24
            && s.lines().any(|l| {
                l.contains("● ")
                    && l.contains("scout")
                    && l.contains("running")
                    && l.contains("Survey")
            })
            && s.lines().any(|l| l.contains(" thread "))
    });
    let lines: Vec<&str> = compact.lines().collect();
    let row = lines.iter().position(|l| l.contains("Survey")).unwrap();
    let tabs = lines.iter().position(|l| l.contains(" thread ")).unwrap();
    assert!(row < tabs, "the roster is above the thread:\n{compact}");
    no_overflow(&pi, 80);

    // Steer the scout: `s` pins it, the text goes to the worker, the footer shows the receipt.
    pi.keys(&["s"]);
    pi.wait_for("the steer prompt", |s| {
        s.lines()
            .any(|l| l.starts_with("steer ") && l.contains("@1 › "))
    });
    pi.type_text("focus on the tests");
    pi.keys(&["Enter"]);
    pi.wait_for("the steer receipt", |s| {
        s.lines()
            .any(|l| l.starts_with("steer ") && l.contains("@1: receipt"))
    });

    // Stop the scout: `x` pins its full identity, `y` confirms; the registry says cancelled.
    pi.keys(&["x"]);
    let prompt = pi.wait_for("the stop prompt", |s| {
        s.lines()
            .any(|l| l.starts_with("stop ") && l.contains("@1 (running)"))
    });
    let target = prompt
        .lines()
        .find(|l| l.starts_with("stop "))
        .and_then(|l| l.split_whitespace().nth(1))
        .unwrap()
        .to_owned();
    assert_eq!(target.len(), 38, "the full UUID@generation: {target}");
    assert!(
        lines[row].contains(&target[..8]),
        "the roster row shows the handle: {}",
        lines[row]
    );
    pi.keys(&["y"]);
    pi.wait_for("the cancelled scout", |s| {
        s.lines()
            .any(|l| l.contains("Survey") && l.contains("cancelled"))
    });
    no_overflow(&pi, 80);

    // `q` closes the overlay: pi's editor is back, the Hub is gone.
    pi.keys(&["q"]);
    let after = pi.wait_for("pi without the overlay", |s| {
        !s.lines().next().is_some_and(|l| l.starts_with("Slate Hub")) && s.contains("fake-model")
    });
    assert!(!after.contains(" thread   details"), "{after}");
    let status = pi.slate(&["--json", "status", &target]);
    let status: serde_json::Value = serde_json::from_slice(&status.stdout).unwrap_or_default();
    assert_eq!(status["snapshot"]["status"], "cancelled", "{status}");
}

//! pi starts with Slate loaded, at the sizes people use.

use crate::pi_tmux::{InteractivePi, overflowing_lines};

#[test]
fn pi_starts_with_slate_loaded_and_nothing_overflows_at_80_and_160_columns() {
    for (width, height) in [(160, 45), (80, 24)] {
        let Some(pi) = InteractivePi::start("tui_startup", width, height, |_| {}) else {
            return;
        };
        let screen = pi.wait_for("pi's editor", |s| s.contains("fake-model"));
        assert!(!screen.contains("PI-EXIT="), "pi exited:\n{screen}");
        let joined = pi.joined_screen();
        assert_eq!(
            overflowing_lines(&joined, width),
            Vec::new(),
            "no line is wider than the pane at {width}×{height}"
        );
        assert_eq!(pi.size(), (width, height));
    }
}

#[test]
fn quitting_pi_leaves_no_slate_process_behind() {
    let Some(pi) = InteractivePi::start("tui_quit", 100, 30, |_| {}) else {
        return;
    };
    pi.wait_for("pi's editor", |s| s.contains("fake-model"));
    assert_eq!(
        pi.quit(),
        Vec::<String>::new(),
        "processes left after pi quit"
    );
}

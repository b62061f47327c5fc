//! `/slate handoff` and `/slate resume` as a pi user sees them (issue 21 item 6): a handoff on a
//! model routing does not permit says so first, with the `slate.json` fix; the successor shows
//! Slate's handoff message naming the fleet and the pause; `/slate resume` refused keeps pi
//! running with the reason on screen; `/slate resume --model X` leaves pi on X, and the
//! successor's first request carries the fleet's identities and artifact paths.

use crate::pi_tmux::{InteractivePi, overflowing_lines};

/// Permits `fake/fake-reasoner` (the routing fix for a model of the fake provider).
const PERMIT_REASONER: &str = r#"{"router": {"models": {"add": [{"model": "fake-reasoner", "capabilityRating": 50, "costRating": 50, "effort": "off", "preferredProvider": "fake", "providers": {"fake": "fake-reasoner"}, "guidelines": [], "cautions": []}]}}}"#;

/// The first `UUID@generation` in `text`.
fn identity(text: &str) -> Option<String> {
    let bytes = text.as_bytes();
    (0..bytes.len().saturating_sub(37)).find_map(|i| {
        let id = text.get(i..i + 36)?;
        let shaped = id.char_indices().all(|(k, c)| {
            if [8, 13, 18, 23].contains(&k) {
                c == '-'
            } else {
                c.is_ascii_hexdigit()
            }
        });
        if !shaped || text.get(i + 36..i + 37) != Some("@") {
            return None;
        }
        let generation: String = text[i + 37..]
            .chars()
            .take_while(char::is_ascii_digit)
            .collect();
        (!generation.is_empty()).then(|| format!("{id}@{generation}"))
    })
}

fn no_overflow(pi: &InteractivePi, width: u16) {
    let joined = pi.joined_screen();
    assert_eq!(
        overflowing_lines(&joined, width),
        Vec::new(),
        "no line is wider than the pane at {width} columns"
    );
}

#[test]
fn a_refused_resume_keeps_pi_running_and_a_chosen_model_carries_the_fleet_to_the_successor() {
    for (width, height) in [(160, 45), (80, 24)] {
        let Some(pi) = InteractivePi::start("tui_handoff", width, height, |sb| {
            std::fs::write(sb.agent_dir.join("slate.json"), PERMIT_REASONER).unwrap();
        }) else {
            return;
        };
        pi.wait_for("pi's editor", |s| s.contains("fake-model"));

        // A child that settles with a result: the fleet the handoff carries.
        pi.type_text("SCENARIO:CALLS delegate");
        pi.keys(&["C-j"]);
        pi.type_text(r#"CALL: delegate_task {"assignment": "Map the parser", "profile": "scout"}"#);
        pi.keys(&["Enter"]);
        pi.wait_for("the child settled", |s| {
            s.contains("ACK: Map") && s.contains("settled")
        });
        assert!(
            pi.llm.wait_for_requests(3, crate::pi_tmux::WAIT),
            "the main model's answer after the tool result"
        );
        let child = pi
            .llm
            .requests()
            .iter()
            .find_map(|r| r.messages().iter().find_map(|m| identity(&m.to_string())));

        // Handoff on fake/fake-model, which routing does not permit: said first, with the fix.
        pi.submit("/slate handoff finish the parser");
        let asked = pi.wait_for("the question before the handoff", |s| {
            s.contains("not permitted by routing") && s.contains("Hand off anyway?")
        });
        assert!(
            asked.contains("router"),
            "the slate.json fix is shown:\n{asked}"
        );
        pi.keys(&["Enter"]); // Yes
        // (At 80×24 the message's first lines, "Slate handed off session …" and the fleet's
        // header, have scrolled above the screen; its end is what shows.)
        let paused = pi.wait_for("Slate's handoff message in the successor", |s| {
            s.contains("Paused (adoption)") && s.contains("Resumed session")
        });
        assert!(
            paused.contains("result.txt"),
            "the fleet's artifacts: {paused}"
        );
        assert!(paused.contains("/slate resume --model"), "{paused}");
        no_overflow(&pi, width);

        // The crash of issue 21: resume with no model. pi keeps running; the reason is shown.
        pi.submit("/slate resume");
        let refused = pi.wait_for("the refusal", |s| {
            s.contains("an adoption pause clears only")
        });
        assert!(!refused.contains("PI-EXIT="), "pi exited:\n{refused}");
        assert!(
            !refused.contains("Error: error:"),
            "one Error: prefix:\n{refused}"
        );
        assert!(refused.contains("is not an exact permission"), "{refused}");

        // A permitted model: pi is on it, and the kickoff's request carries the fleet.
        let before = pi.llm.request_count();
        pi.submit("/slate resume --model fake/fake-reasoner");
        let resumed = pi.wait_for("the resume message and pi on the chosen model", |s| {
            s.contains("Slate resumed this session") && s.contains("fake-reasoner")
        });
        assert!(!resumed.contains("PI-EXIT="), "{resumed}");
        assert!(
            pi.llm.wait_for_requests(before + 1, crate::pi_tmux::WAIT),
            "the kickoff's turn"
        );
        let first = &pi.llm.requests()[before];
        let body = first.body.to_string();
        assert_eq!(
            first.body["model"], "fake-reasoner",
            "the successor's request is on the chosen model"
        );
        assert!(
            body.contains("The fleet (1 thread"),
            "the kickoff names the fleet: {body}"
        );
        if let Some(child) = &child {
            assert!(
                body.contains(child.as_str()),
                "the child's identity {child}: {body}"
            );
        }
        assert!(body.contains("result.txt"), "the artifact paths: {body}");
        assert!(
            !body.contains("Slate handed off session"),
            "the notices are not sent to the model"
        );
        let footer = pi.wait_for("the footer on fake-reasoner", |s| {
            s.lines()
                .last()
                .is_some_and(|l| l.contains("fake-reasoner"))
        });
        assert!(!footer.contains("PI-EXIT="));
        no_overflow(&pi, width);
    }
}

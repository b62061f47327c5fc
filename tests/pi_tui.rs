//! Slate as a pi user sees it (issue 21): real pi 1.6, interactive, in a real terminal (tmux),
//! with Slate's extension installed by `slate pi install` and the fake LLM standing in for the
//! model, whose `CALLS` scenario makes the main session's model call Slate's tools. One module
//! per concern below; each test waits on the captured screen, never for a fixed time.
//!
//! Without pi or tmux these tests print `SKIPPED: …` and pass, except under `CI=true`, where
//! they fail (`.ci/run` installs both).

#![allow(clippy::unwrap_used, reason = "test fixtures fail loudly")]

#[path = "support/fake_llm.rs"]
mod fake_llm;
#[path = "support/pi_env.rs"]
mod pi_env;
#[path = "support/pi_tmux.rs"]
mod pi_tmux;

#[path = "pi_tui/handoff.rs"]
mod handoff;
#[path = "pi_tui/hub.rs"]
mod hub;
#[path = "pi_tui/startup.rs"]
mod startup;
#[path = "pi_tui/tools.rs"]
mod tools;
#[path = "pi_tui/widget.rs"]
mod widget;

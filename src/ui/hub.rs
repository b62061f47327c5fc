//! The Subagent Hub: a full-screen view of every generation in the registry, with the
//! thread, details and tools of the selected one, and pinned controls on exact
//! `UUID@generation` targets.
//!
//! * `state.rs` — the sans-IO state machine (`Hub::update(msg) -> Vec<UiEffect>`);
//! * `roster.rs` — ordering, filtering and fleet counts of the registry's snapshots;
//! * `transcript.rs`, `details.rs` — cleaned documents for the panes;
//! * `wrapped.rs` — a document's rows at the pane's width, wrapped only where drawn;
//! * `layout.rs`, `view.rs` — the frame (`impl Widget for &HubView`);
//! * `event_loop.rs` — the one loop: drain every pending input, update, draw once if dirty;
//! * `frames.rs` — the same loop for a host that draws the frames (pi's overlay).
//!
//! The Hub is a consumer of the coordinator over the control client; it never decides
//! anything the registry has not reported.

mod controls;
mod details;
pub mod event_loop;
mod format;
pub mod frames;
mod keys;
pub mod layout;
pub mod roster;
mod state;
pub mod transcript;
mod view;
mod wrapped;

pub use event_loop::{Step, run_hub, step};
pub use keys::Key;
pub use state::{
    Action, Bulk, Failure, Hub, HubOptions, Mode, Msg, Notice, NoticeKind, Pane, Prompt,
    STALL_AFTER_MS, Scroll, TranscriptPart, UiEffect, WAIT_MS,
};
pub use view::HubView;

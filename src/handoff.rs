//! `slate handoff` and `slate resume` (session form) over pi session files (spec 000
//! "Fresh-session entry" and "Project trust boundary"; docs/handoff.md).
//!
//! * [`records`]: the JSON records (`slate-handoff-purpose`, `slate-handoff`, `slate-state`,
//!   `slate-kickoff-claimed`, `slate-kickoff`) and their validation.
//! * [`rules`]: the pure rules — purpose choice, causes, the handoff plan, adoption, resume.
//! * [`gate`]: [`gate::ModelGate`], the seam where the routing policy decides whether a model
//!   and effort may clear an `adoption` pause.
//! * [`run`]: the IO around them (find, read, refuse a live session, append).
//! * [`report`]: what the commands report (`--json` types) and the fleet snapshot.

pub mod gate;
pub mod records;
pub mod report;
pub mod rules;
pub mod run;

pub use gate::{ExactSelectionGate, ModelChoice, ModelGate};
pub use records::{PauseReason, Purpose};

//! The sans-IO delegation coordinator: registry, lifecycle, admission, FIFO scheduling,
//! limits, generations, presence and live messaging.
//!
//! No clock, files, processes or sockets here: time arrives as `now`, everything the
//! outside world must do leaves as an [`Effect`]. See `docs/architecture.md`.

mod admission;
pub mod bounds;
mod control;
mod coordinator;
pub mod effect;
mod guard;
pub mod ids;
pub mod input;
pub mod lifecycle;
pub mod message;
mod messaging;
pub mod refusal;
mod registry;
pub mod snapshot;
mod submission;
pub mod task;
mod transitions;
mod worker_events;

pub use coordinator::{Coordinator, CoordinatorStats};
pub use effect::{Delivery, Effect, Reply, WaitResult, WindowOutcome, WorkerStart};
pub use ids::{CallId, ChildRef, MessageId, Millis, Party, RequestId, WaiterId};
pub use input::{GuardKind, Input, TimerKey, Usage, WorkerEvent};
pub use lifecycle::{AbortReason, CancelCause, LimitReason, PauseReason, Presence, Status};
pub use message::{Message, MessageMode, ReceiptStatus};
pub use refusal::Refusal;
pub use snapshot::{
    AgentPresence, Artifacts, ChildSnapshot, ContextUsage, LogicalSnapshot, RegistryEvent,
    RegistryEventKind, Retry, StatusView, Streaming, StructuredOutcome, Telemetry, Tokens,
    Validation, WaitOutcome, Window,
};
pub use submission::SubmitStatus;
pub use task::{
    BuiltinTool, CapabilityDenial, CoordinationAction, LimitOverrides, Limits, LogicalAction,
    ModelSelection, PlannedRoute, Renewal, Role, TaskSpec,
};
pub use worker_events::{clip_chars, keep_tail};

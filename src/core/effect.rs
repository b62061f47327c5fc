//! What the coordinator asks its runtime to do, as plain data.

use serde::{Deserialize, Serialize};

use crate::core::ids::{CallId, ChildRef, MessageId, Millis, Party, RequestId};
use crate::core::input::TimerKey;
use crate::core::lifecycle::AbortReason;
use crate::core::message::{Message, MessageMode};
use crate::core::refusal::Refusal;
use crate::core::snapshot::{ChildSnapshot, StatusView, WaitOutcome};
use crate::core::submission::SubmitStatus;
use crate::core::task::TaskSpec;

/// One effect. The runtime executes them in order.
#[derive(Clone, Debug, PartialEq)]
pub enum Effect {
    /// Start a worker for a dispatched generation.
    StartWorker(Box<WorkerStart>),
    /// Abort the worker's current work (cancellation, limit or pause).
    AbortWorker {
        child: ChildRef,
        reason: AbortReason,
    },
    /// Deliver a steer or follow-up message to a running worker.
    SendMessage {
        child: ChildRef,
        message: MessageId,
        mode: MessageMode,
        text: String,
    },
    /// The prompt resolved: close the worker's input and wait for it to exit.
    ReleaseWorker { child: ChildRef },
    /// Publish fixed-name artifacts (`result.txt`, `structured.json`), then report
    /// `Input::Published`.
    Publish {
        child: ChildRef,
        text: String,
        structured: Option<serde_json::Value>,
    },
    /// Fire `Input::Timer(key)` at `at` (epoch ms). Timers are never cancelled: the core
    /// ignores stale ones.
    ArmTimer { key: TimerKey, at: Millis },
    /// Answer one request.
    Reply {
        request: RequestId,
        result: Result<Reply, Refusal>,
    },
    /// A call's window drained (every item paused or disposed): its one outcome.
    WindowOutcome(WindowOutcome),
    /// A generation changed; broadcast a detached snapshot (`RegistryEvent` "changed").
    Changed(ChildRef),
    /// Shutdown finished: every worker exited and every entry is disposed.
    ShutdownComplete,
}

/// Everything a backend needs to start one generation.
#[derive(Clone, Debug, PartialEq)]
pub struct WorkerStart {
    pub child: ChildRef,
    /// Task directory name under the parent's delegation directory.
    pub directory: String,
    pub parent: Party,
    pub depth: u32,
    pub spec: TaskSpec,
    /// Prompts to send in order: the assignment (unless the conversation is retained),
    /// then any continuations from `resume`.
    pub prompts: Vec<String>,
    /// Continue the retained conversation of this generation instead of starting a new one.
    pub resume_session: bool,
}

/// How a call's window outcome is delivered.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub enum Delivery {
    /// The caller is waiting: answer it with the ordered outcomes.
    Foreground,
    /// One notification per call after all items drain.
    Background,
    /// Followup/revive: the caller gets the admission, not the outcome (wait/status read it);
    /// the drained window is published like a background one, so the tool call that started
    /// it delivers it to its session (and acknowledges it: `deliveredAt`).
    Silent,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct WindowOutcome {
    pub call: CallId,
    pub request: RequestId,
    pub initiator: Party,
    pub delivery: Delivery,
    /// Ordered as admitted.
    pub outcomes: Vec<ChildSnapshot>,
}

/// Successful answers.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(tag = "kind", rename_all = "camelCase")]
pub enum Reply {
    /// Admission, resume, followup or revive: the call whose window outcome will follow,
    /// and the accepted snapshots in input order.
    Admitted {
        call: CallId,
        children: Vec<ChildSnapshot>,
    },
    /// One snapshot (stop, park).
    Snapshot {
        child: Box<ChildSnapshot>,
    },
    /// `stopMany`.
    Stopped {
        children: Vec<ChildSnapshot>,
    },
    /// A message receipt.
    Message {
        message: Message,
    },
    /// Messages consumed from the actor's mailbox.
    Inbox {
        messages: Vec<Message>,
    },
    Wait {
        result: WaitResult,
    },
    Status {
        view: Box<StatusView>,
    },
    /// A dispatch guard's answer (`Input::Guard`); `reason` says why it was denied. Only
    /// `guard` answers it (the service turns it into `GuardResult`), so it is not part of
    /// the schema of the methods that answer a `Reply`.
    #[schemars(skip)]
    Guard {
        allow: bool,
        reason: Option<String>,
    },
    /// What became of one `submit_result` attempt (`Input::Submit`); only `submit` answers
    /// it (as `SubmitResult`).
    #[schemars(skip)]
    Submit {
        status: SubmitStatus,
        attempts: u32,
        errors: Vec<String>,
        message: String,
    },
    /// Whether a parent tool call's reservation was released (`Input::ParentToolEnd`); only
    /// `parentToolEnd` answers it (as `ParentToolEndResult`).
    #[schemars(skip)]
    Released {
        released: bool,
    },
    /// How many generations `Input::OutcomeDelivered` marked delivered; only
    /// `outcomeDelivered` answers it (as `OutcomeDeliveredResult`).
    #[schemars(skip)]
    Delivered {
        generations: u32,
    },
    Ok,
}

/// How a wait ended.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(tag = "kind", rename_all = "camelCase")]
pub enum WaitResult {
    Outcome { outcome: WaitOutcome },
    Messages { messages: Vec<Message> },
    Message { message: Message },
    Timeout,
    Cancelled,
    Shutdown,
}

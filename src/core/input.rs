//! Everything that can happen to the coordinator, as plain data.

use serde::{Deserialize, Serialize};

use crate::core::ids::{CallId, ChildRef, MessageId, Party, RequestId, WaiterId};
use crate::core::message::MessageMode;
use crate::core::snapshot::{Artifacts, ContextUsage, Retry, Tokens};
use crate::core::task::{Renewal, TaskSpec};
use crate::policy::scheduling::SchedulingPolicy;

/// One input to [`crate::core::Coordinator::handle`].
#[derive(Clone, Debug, PartialEq)]
pub enum Input {
    /// Replace the scheduling policy (affects later admission and dequeue only).
    Configure {
        request: RequestId,
        policy: SchedulingPolicy,
    },
    /// Admit a whole batch atomically. `actor` is the root or the delegating child.
    Admit {
        request: RequestId,
        actor: Party,
        tasks: Vec<TaskSpec>,
        background: bool,
    },
    /// Stop one pinned current generation and its subtree.
    Stop {
        request: RequestId,
        actor: Party,
        target: ChildRef,
    },
    /// Mark every target (and subtree) cancelled before any dequeue, then drain.
    StopMany {
        request: RequestId,
        actor: Party,
        targets: Vec<ChildRef>,
    },
    /// Operator steering of any running generation (`/subagent-steer`, Hub `s`).
    Steer {
        request: RequestId,
        target: ChildRef,
        text: String,
    },
    /// `delegate_coordinate` message. `target: None` addresses the root inbox.
    Message {
        request: RequestId,
        actor: Party,
        target: Option<ChildRef>,
        text: String,
        mode: MessageMode,
    },
    /// Destructively read the actor's own mailbox.
    Inbox { request: RequestId, actor: Party },
    Wait {
        request: RequestId,
        actor: Party,
        target: Option<ChildRef>,
        message_id: Option<MessageId>,
        timeout_ms: u64,
    },
    /// The requester of a pending `wait` is gone (its connection closed): the waiter is
    /// removed without a reply, freeing its slot of the pending-waiter bound. A request that
    /// is not a pending wait changes nothing.
    CancelWait { request: RequestId },
    /// The caller of the foreground admission `request` cancelled its call (a child whose
    /// `delegate_task` was aborted; its connection closed while it waited). Every unsettled
    /// member of that call's window, and its subtree, is marked cancelled before any dequeue,
    /// then drains; members already drained keep their outcome. Internal authority: no actor
    /// check. An unknown or already delivered call changes nothing, and neither does the end
    /// of a call whose caller is pausing or paused (the pause aborted it: its subtree pauses
    /// with `ancestor deadline`, resumable), nor does it cancel a member already pausing.
    CancelCall { request: RequestId },
    Park {
        request: RequestId,
        actor: Party,
        target: ChildRef,
    },
    /// Continue a drained paused generation in its retained conversation.
    Resume {
        request: RequestId,
        actor: Party,
        target: ChildRef,
        assignment: String,
    },
    /// A new generation for an idle identity.
    Followup {
        request: RequestId,
        actor: Party,
        target: ChildRef,
        renewal: Renewal,
    },
    /// A new generation for a parked identity.
    Revive {
        request: RequestId,
        actor: Party,
        target: ChildRef,
        renewal: Renewal,
    },
    /// The root's own model reserves a tool call at preflight.
    ParentToolStart {
        request: RequestId,
        call: String,
        read_only: bool,
    },
    /// Every finalized parent tool call releases its reservation (including blocked calls),
    /// answered with `Reply::Released`: whether `call` was reserved. An id that is not
    /// reserved (exempt, refused or already released) changes nothing.
    ParentToolEnd { request: RequestId, call: String },
    /// The outcome of window `call` reached `actor`, the party that started it (the runtime
    /// after answering a foreground caller, with no request; the parent session's
    /// acknowledgement of a background outcome, answered with `Reply::Delivered`). Marks each
    /// generation it carried `deliveredAt`; anyone else's call marks nothing.
    OutcomeDelivered {
        request: Option<RequestId>,
        actor: Party,
        call: CallId,
    },
    /// Something a worker did.
    Worker { child: ChildRef, event: WorkerEvent },
    /// A worker's extension asks before a model request, a compaction or a tool execution:
    /// the same decision as [`WorkerEvent::RequestStart`] / [`WorkerEvent::ToolStart`], with
    /// the answer as `Reply::Guard`.
    Guard {
        request: RequestId,
        child: ChildRef,
        kind: GuardKind,
    },
    /// A worker's `submit_result`: `value` as the model wrote it and its validation `errors`
    /// against the generation's `resultSchema` (empty = valid), recorded with the rules of
    /// [`WorkerEvent::Submission`] and answered as `Reply::Submit`.
    Submit {
        request: RequestId,
        child: ChildRef,
        value: serde_json::Value,
        errors: Vec<String>,
    },
    /// The runtime finished (or failed) publishing a generation's artifacts.
    Published {
        child: ChildRef,
        result: Result<Artifacts, String>,
    },
    /// A timer armed by `Effect::ArmTimer` fired. Stale timers are ignored.
    Timer(TimerKey),
    /// Close admission and dequeue, cancel and drain everything.
    Shutdown { request: RequestId },
}

/// What a dispatch guard is asked about.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum GuardKind {
    /// One agent-turn model request.
    Request,
    /// A compaction or branch summary: a model request too, counted as one.
    Compaction,
    /// One executable tool invocation.
    Tool { name: String },
}

/// Timers the core asks the runtime to arm.
#[derive(
    Clone,
    Copy,
    Debug,
    PartialEq,
    Eq,
    Hash,
    PartialOrd,
    Ord,
    Serialize,
    Deserialize,
    schemars::JsonSchema,
)]
pub enum TimerKey {
    /// The deadline of one execution window of one generation.
    Deadline { child: ChildRef, window: u32 },
    /// The timeout of one pending wait.
    Wait(WaiterId),
    /// Publish streamed output held back by the coalescing interval.
    Stream(ChildRef),
}

/// What a worker backend reports. The core decides; backends only report and obey.
#[derive(Clone, Debug, PartialEq)]
pub enum WorkerEvent {
    /// Setup finished and the prompt was sent; `transcript` is the session file if known.
    Ready {
        transcript: Option<String>,
    },
    /// The worker's process exists: bound from the pool or started cold (pi workers).
    Launched(crate::core::snapshot::Launch),
    /// Setup failed before any prompt was sent.
    SetupFailed {
        error: String,
    },
    /// One model request is about to start (including provider retries): counted against
    /// `limits.requests`, and its assistant message streams from the start. The simulated
    /// worker's request guard; a pi worker is counted by its extension's `guard` instead.
    RequestStart,
    /// One executable tool invocation is starting: counted against `limits.tools` (the
    /// simulated worker's tool guard; pi workers are counted by `guard`).
    ToolStart {
        name: String,
    },
    /// An assistant message started (pi `message_start`): it streams from the start.
    /// Not counted.
    AssistantStart,
    /// A tool started executing (pi `tool_execution_start`): activity only, not counted.
    ToolRunning {
        name: String,
    },
    ToolEnd {
        name: String,
        is_error: bool,
    },
    /// An assistant message ended: its exact text blocks concatenated, and usage if reported.
    AssistantMessage {
        text: String,
        usage: Option<Usage>,
    },
    /// A newest-activity line (sanitized by the adapter).
    Activity(String),
    /// A progress note (clipped to 4096 characters).
    Progress(String),
    /// More text of the assistant message being streamed (the text since the last report).
    TextDelta(String),
    /// The partial output of a running tool so far (it replaces the previous one).
    ToolOutput {
        name: String,
        text: String,
    },
    /// Context usage, as reported.
    Context(ContextUsage),
    /// Recovery switched the worker to another route of its logical action and the worker
    /// accepted it (`set_model`, and `set_thinking_level` when the effort changed).
    RouteAccepted {
        logical: String,
        provider: String,
        id: String,
        effort: Option<String>,
    },
    /// The worker started retrying a failed request (`Some`), or stopped (`None`).
    Retry(Option<Retry>),
    /// A `steer`/`follow_up` was accepted by the worker (`queued`).
    MessageQueued {
        message: MessageId,
    },
    /// An input handler of the worker consumed the message (`handled`).
    MessageHandled {
        message: MessageId,
    },
    /// The exact message entered the worker's transcript (`delivered`).
    MessageDelivered {
        message: MessageId,
    },
    /// The worker could not take the message.
    MessageFailed {
        message: MessageId,
        error: String,
    },
    /// One `submit_result` attempt, already validated against the schema by policy.
    Submission {
        value: serde_json::Value,
        errors: Vec<String>,
    },
    /// The prompt resolved (pi: `agent_settled`). `error` is the final assistant error.
    Settled {
        error: Option<String>,
    },
    /// The worker process ended.
    Exited {
        reason: String,
    },
}

/// Usage of one assistant message.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Usage {
    pub tokens: Tokens,
    pub cost: Option<f64>,
}

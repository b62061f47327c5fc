//! Every way the coordinator refuses a request. Each refusal names its rule (a stable
//! `code`) and the offending field or identity; a refused request changes nothing.

use serde::{Serialize, Serializer};

use crate::core::ids::{ChildRef, MessageId, Party};
use crate::core::lifecycle::{Presence, Status};
use crate::core::task::Role;

#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum Refusal {
    // --- runtime state -------------------------------------------------------------------
    #[error("shutdown: the parent runtime is shutting down; admission and controls are closed")]
    ShuttingDown,
    #[error("policy: {0}")]
    InvalidPolicy(String),

    // --- admission -----------------------------------------------------------------------
    #[error("batch: a call must contain at least one task")]
    EmptyBatch,
    #[error("batch: {len} tasks exceed scheduling.batch = {max}")]
    BatchTooLarge { len: usize, max: u32 },
    #[error("tasks[{index}].assignment: must contain non-whitespace text")]
    BlankAssignment { index: usize },
    #[error(
        "tasks[{index}].assignment: {bytes} UTF-8 bytes exceed the limit of {max} for an inline assignment (the task-file bound)"
    )]
    AssignmentTooLong {
        index: usize,
        bytes: usize,
        max: usize,
    },
    #[error(
        "tasks[{index}].tools: the effective builtin tool set is empty (role ceiling ∩ offered tools); the whole batch is rejected"
    )]
    EmptyToolSet { index: usize },
    #[error(
        "queue: admitting this batch would leave {waiting} assignments waiting, above scheduling.queue = {capacity}"
    )]
    QueueFull { waiting: usize, capacity: u32 },
    #[error("tasks[{index}]: depth {depth} exceeds the maximum depth {max} (root 0, child 1)")]
    DepthExceeded { index: usize, depth: u32, max: u32 },
    #[error(
        "spawns: {actor} has admitted {used} of {max} direct children; {requested} more would exceed limits.spawns"
    )]
    SpawnBudgetExhausted {
        actor: ChildRef,
        used: u32,
        requested: usize,
        max: u32,
    },
    #[error("ancestor: {ancestor} is {state}; delegation needs an active, non-cancelling ancestor")]
    AncestorInactive { ancestor: ChildRef, state: String },
    #[error("tasks[{index}].profile: {actor} is not granted spawn role {role:?}")]
    RoleNotGranted {
        index: usize,
        actor: ChildRef,
        role: Role,
    },
    #[error(
        "tasks[{index}].{field}: {name:?} is not among the delegating ancestor {actor}'s effective grants (children only narrow)"
    )]
    NotSubset {
        index: usize,
        field: &'static str,
        name: String,
        actor: ChildRef,
    },
    #[error(
        "tasks[{index}]: a writer cannot be delegated under writer ancestor {ancestor}; use a non-writing coordinator role or a root batch"
    )]
    WriterUnderWriter { index: usize, ancestor: ChildRef },
    #[error(
        "tasks[{index}]: the parent has a model mutation reserved ({call}); a writer-containing batch is rejected"
    )]
    ParentMutationReserved { index: usize, call: String },
    #[error("Nested capacity unavailable; no permit lending ({detail})")]
    NestedCapacityUnavailable { detail: String },
    #[error("background: nested background calls are unsupported; use nested foreground")]
    NestedBackground,
    #[error(
        "tasks[{index}].limits.{field}: {requested} exceeds the effective maximum {max} (limits can only narrow)"
    )]
    LimitNotNarrowing {
        index: usize,
        field: &'static str,
        requested: u64,
        max: u64,
    },
    #[error("tasks[{index}].limits.{field}: must be positive")]
    LimitNotPositive { index: usize, field: &'static str },

    // --- identities and state ------------------------------------------------------------
    #[error("target: no identity {0} in this runtime (ids are never prefix-matched)")]
    UnknownIdentity(ChildRef),
    #[error(
        "target: {reference} is stale; the current generation is {current} (mutations take the current generation)"
    )]
    StaleGeneration { reference: ChildRef, current: u32 },
    #[error("{action}: {reference} is {state}; {action} requires {required}")]
    InvalidState {
        action: &'static str,
        reference: ChildRef,
        state: String,
        required: &'static str,
    },
    #[error("{action}: {reference} has presence {presence}; {action} requires {required}")]
    InvalidPresence {
        action: &'static str,
        reference: ChildRef,
        presence: Presence,
        required: &'static str,
    },
    #[error("{action}: root-only action; child {actor} cannot call it")]
    RootOnly {
        action: &'static str,
        actor: ChildRef,
    },
    #[error("{action}: only a worker generation can call it")]
    ChildOnly { action: &'static str },
    #[error(
        "{action}: {actor} has ended (its prompt resolved or its worker exited); nothing more is accepted from it"
    )]
    ActorEnded {
        action: &'static str,
        actor: ChildRef,
    },
    #[error("actor: {actor} is {status}; child actions need a running, non-cancelling generation")]
    ActorNotRunning { actor: ChildRef, status: Status },
    #[error("coordination: {actor} is not granted the {action:?} action")]
    NotGranted {
        actor: ChildRef,
        action: &'static str,
    },
    #[error(
        "submit: {actor} has no resultSchema, so it has no structured result to submit; give the result in the final answer"
    )]
    NoResultSchema { actor: ChildRef },
    #[error("generations: {reference} reached the maximum of {max} generations per identity")]
    GenerationLimit { reference: ChildRef, max: u32 },
    #[error(
        "parent: the exact original parent {parent} is {state}; renewal and resume need it active"
    )]
    ParentInactive { parent: ChildRef, state: String },
    #[error(
        "parentToolStart: child {holder} holds the writer lease; parent mutations are rejected"
    )]
    WriterLeaseHeld { holder: ChildRef },
    #[error("parentToolStart: call id {0:?} is already reserved")]
    DuplicateParentCall(String),

    // --- messaging -----------------------------------------------------------------------
    #[error("text: must contain non-whitespace text")]
    BlankText,
    #[error("text: {bytes} UTF-8 bytes exceed the limit of {max}")]
    TextTooLong { bytes: usize, max: usize },
    #[error("target: root cannot message itself")]
    RootSelfMessage,
    #[error(
        "target: {sender} may address only its exact-generation parent, direct children and true siblings; {recipient} is none of these"
    )]
    NotAddressable { sender: Party, recipient: Party },
    #[error("mode: the root inbox accepts only mode \"inbox\", not {mode:?}")]
    RootModeUnsupported { mode: &'static str },
    #[error(
        "mailbox: {recipient}'s mailbox holds {max} messages; consume some first (nothing is evicted)"
    )]
    MailboxFull { recipient: Party, max: usize },
    #[error("messages: the runtime admitted its {max} messages; no more can be admitted")]
    MessageBudgetExhausted { max: u32 },
    #[error("messageId: no message {0} in this runtime")]
    UnknownMessage(MessageId),
    #[error("messageId: receipt {id} is visible only to its sender and recipient, not {actor}")]
    ReceiptNotVisible { id: MessageId, actor: Party },

    // --- waits ---------------------------------------------------------------------------
    #[error("timeoutMs: {0} is outside 1..=60000")]
    WaitTimeoutOutOfRange(u64),
    #[error("wait: give a target or a messageId, not both")]
    WaitTargetAndMessage,
    #[error("target: a generation cannot wait on itself")]
    WaitOnSelf,
    #[error("target: {actor} cannot wait on its ancestor {ancestor}")]
    WaitOnAncestor { actor: ChildRef, ancestor: ChildRef },
    #[error("wait: waiting on {target} would close a dependency cycle back to {actor}")]
    WaitCycle { actor: ChildRef, target: Party },
    #[error("target: {target} is queued; a child waiting on queued work would lend its permit")]
    ChildWaitOnQueued { target: ChildRef },
    #[error(
        "messageId: children cannot wait on pending root receipts; send without waiting, or wait for a reply in the inbox"
    )]
    RootReceiptWait,
    #[error("wait: {max} waits are already pending")]
    TooManyWaiters { max: usize },
}

impl Refusal {
    /// The stable rule code shown with the message (and in `--json`).
    pub fn code(&self) -> &'static str {
        match self {
            Refusal::ShuttingDown => "shutdown",
            Refusal::InvalidPolicy(_) => "invalid-policy",
            Refusal::EmptyBatch => "empty-batch",
            Refusal::BatchTooLarge { .. } => "batch-too-large",
            Refusal::BlankAssignment { .. } => "blank-assignment",
            Refusal::AssignmentTooLong { .. } => "assignment-too-long",
            Refusal::EmptyToolSet { .. } => "empty-tool-set",
            Refusal::QueueFull { .. } => "queue-full",
            Refusal::DepthExceeded { .. } => "depth-exceeded",
            Refusal::SpawnBudgetExhausted { .. } => "spawn-budget-exhausted",
            Refusal::AncestorInactive { .. } => "ancestor-inactive",
            Refusal::RoleNotGranted { .. } => "role-not-granted",
            Refusal::NotSubset { .. } => "not-subset",
            Refusal::WriterUnderWriter { .. } => "writer-under-writer",
            Refusal::ParentMutationReserved { .. } => "parent-mutation-reserved",
            Refusal::NestedCapacityUnavailable { .. } => "nested-capacity-unavailable",
            Refusal::NestedBackground => "nested-background",
            Refusal::LimitNotNarrowing { .. } => "limit-not-narrowing",
            Refusal::LimitNotPositive { .. } => "limit-not-positive",
            Refusal::UnknownIdentity(_) => "unknown-identity",
            Refusal::StaleGeneration { .. } => "stale-generation",
            Refusal::InvalidState { .. } => "invalid-state",
            Refusal::InvalidPresence { .. } => "invalid-presence",
            Refusal::RootOnly { .. } => "root-only",
            Refusal::ChildOnly { .. } => "child-only",
            Refusal::ActorEnded { .. } => "actor-ended",
            Refusal::ActorNotRunning { .. } => "actor-not-running",
            Refusal::NotGranted { .. } => "not-granted",
            Refusal::NoResultSchema { .. } => "no-result-schema",
            Refusal::GenerationLimit { .. } => "generation-limit",
            Refusal::ParentInactive { .. } => "parent-inactive",
            Refusal::WriterLeaseHeld { .. } => "writer-lease-held",
            Refusal::DuplicateParentCall(_) => "duplicate-parent-call",
            Refusal::BlankText => "blank-text",
            Refusal::TextTooLong { .. } => "text-too-long",
            Refusal::RootSelfMessage => "root-self-message",
            Refusal::NotAddressable { .. } => "not-addressable",
            Refusal::RootModeUnsupported { .. } => "root-mode-unsupported",
            Refusal::MailboxFull { .. } => "mailbox-full",
            Refusal::MessageBudgetExhausted { .. } => "message-budget-exhausted",
            Refusal::UnknownMessage(_) => "unknown-message",
            Refusal::ReceiptNotVisible { .. } => "receipt-not-visible",
            Refusal::WaitTimeoutOutOfRange(_) => "wait-timeout-out-of-range",
            Refusal::WaitTargetAndMessage => "wait-target-and-message",
            Refusal::WaitOnSelf => "wait-on-self",
            Refusal::WaitOnAncestor { .. } => "wait-on-ancestor",
            Refusal::WaitCycle { .. } => "wait-cycle",
            Refusal::ChildWaitOnQueued { .. } => "child-wait-on-queued",
            Refusal::RootReceiptWait => "root-receipt-wait",
            Refusal::TooManyWaiters { .. } => "too-many-waiters",
        }
    }
}

/// On the wire a refusal is `{code, message}`.
impl Serialize for Refusal {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeStruct;
        let mut s = serializer.serialize_struct("Refusal", 2)?;
        s.serialize_field("code", self.code())?;
        s.serialize_field("message", &self.to_string())?;
        s.end()
    }
}

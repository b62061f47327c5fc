//! Live-parent messaging: `message`, `inbox`, `wait`, operator `steer`, and receipts.
//!
//! Bounds: 64 messages per mailbox (consumption frees a slot), 512 admitted messages per
//! runtime (never freed), 64 pending waiters. Exhaustion rejects; nothing is evicted.

use crate::core::bounds::{
    MAILBOX_MESSAGES, MESSAGE_BYTES, PENDING_WAITERS, RUNTIME_MESSAGES, WAIT_MAX_MS, WAIT_MIN_MS,
};
use crate::core::coordinator::{Coordinator, WaitKind, Waiter};
use crate::core::effect::{Effect, Reply, WaitResult};
use crate::core::ids::{ChildRef, MessageId, Party, RequestId, WaiterId};
use crate::core::input::TimerKey;
use crate::core::lifecycle::Status;
use crate::core::message::{Message, MessageMode, ReceiptStatus};
use crate::core::refusal::Refusal;
use crate::core::task::{CoordinationAction, is_nonblank};

impl Coordinator {
    /// A child actor must be its identity's current generation, running, not cancelling or
    /// pausing, and granted `action`.
    fn check_child_actor(
        &self,
        actor: ChildRef,
        action: CoordinationAction,
    ) -> Result<(), Refusal> {
        let g = self.reg.current(actor)?;
        if g.snap.status != Status::Running || g.intent.is_some() {
            return Err(Refusal::ActorNotRunning {
                actor,
                status: g.snap.status,
            });
        }
        if !g.spec.coordination.contains(&action) {
            return Err(Refusal::NotGranted {
                actor,
                action: action.as_str(),
            });
        }
        Ok(())
    }

    fn check_text(text: &str) -> Result<(), Refusal> {
        if !is_nonblank(text) {
            return Err(Refusal::BlankText);
        }
        if text.len() > MESSAGE_BYTES {
            return Err(Refusal::TextTooLong {
                bytes: text.len(),
                max: MESSAGE_BYTES,
            });
        }
        Ok(())
    }

    /// A running recipient: the root (while open) or a current running generation.
    fn check_recipient_running(&self, recipient: ChildRef) -> Result<(), Refusal> {
        let g = self.reg.current(recipient)?;
        if g.snap.status != Status::Running || g.intent.is_some() {
            return Err(Refusal::InvalidState {
                action: "message",
                reference: recipient,
                state: super::admission::describe_state(g),
                required: "a running recipient",
            });
        }
        Ok(())
    }

    fn check_mailbox_room(&self, recipient: Party) -> Result<(), Refusal> {
        if self.admitted_messages >= RUNTIME_MESSAGES {
            return Err(Refusal::MessageBudgetExhausted {
                max: RUNTIME_MESSAGES,
            });
        }
        let len = match recipient {
            Party::Root => self.root_mailbox.len(),
            Party::Child(r) => self.gen_ref(r).mailbox.len(),
        };
        if len >= MAILBOX_MESSAGES {
            return Err(Refusal::MailboxFull {
                recipient,
                max: MAILBOX_MESSAGES,
            });
        }
        Ok(())
    }

    /// Exact-generation parent, direct children and true siblings only.
    fn check_addressing(&self, sender: Party, recipient: Party) -> Result<(), Refusal> {
        let refuse = || Err(Refusal::NotAddressable { sender, recipient });
        let parent_of = |party: Party| match party {
            Party::Root => None,
            Party::Child(r) => self.reg.parent_of(r),
        };
        if sender == recipient {
            return refuse();
        }
        let is_parent = parent_of(sender) == Some(recipient);
        let is_child = parent_of(recipient) == Some(sender);
        let is_sibling = match (sender, recipient) {
            (Party::Child(s), Party::Child(t)) => {
                s.id != t.id && parent_of(sender) == parent_of(recipient)
            }
            _ => false,
        };
        if is_parent || is_child || is_sibling {
            Ok(())
        } else {
            refuse()
        }
    }

    pub(crate) fn message(
        &mut self,
        actor: Party,
        target: Option<ChildRef>,
        text: String,
        mode: MessageMode,
    ) -> Result<Reply, Refusal> {
        if self.is_shutting_down() {
            return Err(Refusal::ShuttingDown);
        }
        if let Party::Child(a) = actor {
            self.check_child_actor(a, CoordinationAction::Message)?;
        }
        Self::check_text(&text)?;
        let recipient = match (actor, target) {
            (Party::Root, None) => return Err(Refusal::RootSelfMessage),
            (Party::Child(_), None) => Party::Root,
            (_, Some(t)) => {
                self.reg.current(t)?;
                Party::Child(t)
            }
        };
        self.check_addressing(actor, recipient)?;
        match recipient {
            Party::Root if mode != MessageMode::Inbox => {
                return Err(Refusal::RootModeUnsupported {
                    mode: mode.as_str(),
                });
            }
            Party::Root => {}
            Party::Child(t) => self.check_recipient_running(t)?,
        }
        self.check_mailbox_room(recipient)?;
        let message = self.admit_message(actor, recipient, text, mode);
        Ok(Reply::Message { message })
    }

    /// Operator steering (`/subagent-steer`, Hub `s`): any running current generation.
    pub(crate) fn steer(&mut self, target: ChildRef, text: String) -> Result<Reply, Refusal> {
        if self.is_shutting_down() {
            return Err(Refusal::ShuttingDown);
        }
        Self::check_text(&text)?;
        self.reg.current(target)?;
        self.check_recipient_running(target)?;
        let recipient = Party::Child(target);
        self.check_mailbox_room(recipient)?;
        let message = self.admit_message(Party::Root, recipient, text, MessageMode::Steer);
        Ok(Reply::Message { message })
    }

    /// Store an already checked message and start its delivery.
    fn admit_message(
        &mut self,
        sender: Party,
        recipient: Party,
        text: String,
        mode: MessageMode,
    ) -> Message {
        let id = self.next_message_id();
        self.admitted_messages += 1;
        let message = Message {
            id,
            sender,
            recipient,
            text: text.clone(),
            mode,
            status: ReceiptStatus::Accepted,
            error: None,
        };
        self.messages.insert(id, message.clone());
        match recipient {
            Party::Root => self.root_mailbox.push_back(id),
            Party::Child(r) => self.gen_mut(r).mailbox.push_back(id),
        }
        match (recipient, mode) {
            (Party::Child(child), MessageMode::Steer | MessageMode::FollowUp) => {
                self.emit(Effect::SendMessage {
                    child,
                    message: id,
                    mode,
                    text,
                });
            }
            _ => self.wake_inbox_waiter(recipient),
        }
        message
    }

    /// Destructive read of the actor's own inbox-mode messages.
    pub(crate) fn inbox(&mut self, actor: Party) -> Result<Reply, Refusal> {
        if let Party::Child(a) = actor {
            self.check_child_actor(a, CoordinationAction::Inbox)?;
        }
        Ok(Reply::Inbox {
            messages: self.take_inbox(actor),
        })
    }

    fn take_inbox(&mut self, owner: Party) -> Vec<Message> {
        let ids: Vec<MessageId> = {
            let mailbox = match owner {
                Party::Root => &self.root_mailbox,
                Party::Child(r) => &self.gen_ref(r).mailbox,
            };
            mailbox
                .iter()
                .copied()
                .filter(|id| {
                    self.messages
                        .get(id)
                        .is_some_and(|m| m.mode == MessageMode::Inbox)
                })
                .collect()
        };
        if ids.is_empty() {
            return Vec::new();
        }
        match owner {
            Party::Root => self.root_mailbox.retain(|id| !ids.contains(id)),
            Party::Child(r) => self.gen_mut(r).mailbox.retain(|id| !ids.contains(id)),
        }
        let mut out = Vec::with_capacity(ids.len());
        for id in ids {
            if let Some(m) = self.messages.get_mut(&id) {
                m.status = ReceiptStatus::Delivered;
                out.push(m.clone());
            }
            self.wake_receipt_waiters(id);
        }
        out
    }

    /// A worker reported progress on a steer/followUp it holds.
    pub(crate) fn advance_receipt(
        &mut self,
        r: ChildRef,
        id: MessageId,
        status: ReceiptStatus,
        error: Option<String>,
    ) {
        let Some(m) = self.messages.get_mut(&id) else {
            return;
        };
        if m.recipient != Party::Child(r) || m.status.is_final() {
            return;
        }
        // Receipts only move forward: accepted → queued → handled → a final state.
        let rank = |s: ReceiptStatus| match s {
            ReceiptStatus::Accepted => 0,
            ReceiptStatus::Queued => 1,
            ReceiptStatus::Handled => 2,
            ReceiptStatus::Delivered | ReceiptStatus::NotRunning | ReceiptStatus::Error => 3,
        };
        if rank(status) <= rank(m.status) {
            return;
        }
        m.status = status;
        m.error = error;
        if status.is_final() {
            self.gen_mut(r).mailbox.retain(|&x| x != id);
            self.wake_receipt_waiters(id);
        }
    }

    pub(crate) fn wait(
        &mut self,
        request: RequestId,
        actor: Party,
        target: Option<ChildRef>,
        message_id: Option<MessageId>,
        timeout_ms: u64,
    ) {
        match self.check_wait(actor, target, message_id, timeout_ms) {
            Err(refusal) => self.reply(request, Err(refusal)),
            Ok(Some(result)) => self.reply(request, Ok(Reply::Wait { result })),
            Ok(None) => {
                let kind = match (target, message_id) {
                    (Some(t), _) => WaitKind::Outcome(t),
                    (None, Some(m)) => WaitKind::Receipt(m),
                    (None, None) => WaitKind::Inbox,
                };
                let id = WaiterId(self.next_waiter);
                self.next_waiter += 1;
                self.waiters.insert(
                    id,
                    Waiter {
                        request,
                        actor,
                        kind,
                    },
                );
                let at = self.now().saturating_add(timeout_ms);
                self.emit(Effect::ArmTimer {
                    key: TimerKey::Wait(id),
                    at,
                });
            }
        }
    }

    /// Removes the pending waiter of `request`, if there is one; its timer goes stale.
    pub(crate) fn cancel_wait(&mut self, request: RequestId) {
        self.waiters.retain(|_, w| w.request != request);
    }

    /// Checks a wait; `Some(result)` when it resolves at once, `None` when it must wait.
    fn check_wait(
        &mut self,
        actor: Party,
        target: Option<ChildRef>,
        message_id: Option<MessageId>,
        timeout_ms: u64,
    ) -> Result<Option<WaitResult>, Refusal> {
        if self.is_shutting_down() {
            return Err(Refusal::ShuttingDown);
        }
        if !(WAIT_MIN_MS..=WAIT_MAX_MS).contains(&timeout_ms) {
            return Err(Refusal::WaitTimeoutOutOfRange(timeout_ms));
        }
        if target.is_some() && message_id.is_some() {
            return Err(Refusal::WaitTargetAndMessage);
        }
        if let Party::Child(a) = actor {
            self.check_child_actor(a, CoordinationAction::Wait)?;
        }
        let immediate = match (target, message_id) {
            (Some(t), _) => self.check_outcome_wait(actor, t)?,
            (None, Some(m)) => self.check_receipt_wait(actor, m)?,
            (None, None) => {
                let messages = self.take_inbox(actor);
                (!messages.is_empty()).then_some(WaitResult::Messages { messages })
            }
        };
        if immediate.is_none() && self.waiters.len() >= PENDING_WAITERS {
            return Err(Refusal::TooManyWaiters {
                max: PENDING_WAITERS,
            });
        }
        Ok(immediate)
    }

    fn check_outcome_wait(
        &self,
        actor: Party,
        target: ChildRef,
    ) -> Result<Option<WaitResult>, Refusal> {
        let g = self.reg.pinned(target)?;
        if let Party::Child(a) = actor {
            if a.id == target.id {
                return Err(Refusal::WaitOnSelf);
            }
            if let Some(&ancestor) = self.reg.ancestors(a).iter().find(|x| x.id == target.id) {
                return Err(Refusal::WaitOnAncestor { actor: a, ancestor });
            }
            if g.snap.status == Status::Queued {
                return Err(Refusal::ChildWaitOnQueued { target });
            }
            if self.waits_on(Party::Child(target), actor) {
                return Err(Refusal::WaitCycle {
                    actor: a,
                    target: Party::Child(target),
                });
            }
        }
        let drained = g.snap.disposed || g.snap.status == Status::Paused;
        Ok(drained.then(|| WaitResult::Outcome {
            outcome: self.wait_outcome(target),
        }))
    }

    fn check_receipt_wait(
        &self,
        actor: Party,
        id: MessageId,
    ) -> Result<Option<WaitResult>, Refusal> {
        let m = self.messages.get(&id).ok_or(Refusal::UnknownMessage(id))?;
        if m.sender != actor && m.recipient != actor {
            return Err(Refusal::ReceiptNotVisible { id, actor });
        }
        if m.status.is_final() {
            return Ok(Some(WaitResult::Message { message: m.clone() }));
        }
        if let Party::Child(a) = actor {
            if m.recipient == Party::Root {
                return Err(Refusal::RootReceiptWait);
            }
            let other = if m.sender == actor {
                m.recipient
            } else {
                m.sender
            };
            if self.waits_on(other, actor) {
                return Err(Refusal::WaitCycle {
                    actor: a,
                    target: other,
                });
            }
        }
        Ok(None)
    }

    /// Whether `from` (transitively, through pending waits) already waits on `goal`.
    fn waits_on(&self, from: Party, goal: Party) -> bool {
        let mut seen = Vec::new();
        let mut frontier = vec![from];
        while let Some(party) = frontier.pop() {
            if party == goal {
                return true;
            }
            if seen.contains(&party) {
                continue;
            }
            seen.push(party);
            for w in self.waiters.values().filter(|w| w.actor == party) {
                match w.kind {
                    WaitKind::Outcome(t) => frontier.push(Party::Child(t)),
                    WaitKind::Receipt(m) => {
                        if let Some(m) = self.messages.get(&m) {
                            frontier.push(if m.sender == party {
                                m.recipient
                            } else {
                                m.sender
                            });
                        }
                    }
                    WaitKind::Inbox => {}
                }
            }
        }
        false
    }

    pub(crate) fn wake_receipt_waiters(&mut self, id: MessageId) {
        let Some(message) = self.messages.get(&id).cloned() else {
            return;
        };
        if !message.status.is_final() {
            return;
        }
        let matching: Vec<_> = self
            .waiters
            .iter()
            .filter(|(_, w)| w.kind == WaitKind::Receipt(id))
            .map(|(&w, _)| w)
            .collect();
        for w in matching {
            self.resolve_waiter(
                w,
                WaitResult::Message {
                    message: message.clone(),
                },
            );
        }
    }

    /// The oldest inbox waiter of `owner` consumes newly arrived inbox messages.
    fn wake_inbox_waiter(&mut self, owner: Party) {
        let first = self
            .waiters
            .iter()
            .find(|(_, w)| w.actor == owner && w.kind == WaitKind::Inbox)
            .map(|(&w, _)| w);
        if let Some(w) = first {
            let messages = self.take_inbox(owner);
            if !messages.is_empty() {
                self.resolve_waiter(w, WaitResult::Messages { messages });
            }
        }
    }
}

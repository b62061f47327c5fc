//! Lifecycle transitions shared by controls, limits and worker events: marking cancellation
//! or pause over a subtree, and the two ways a window drains (paused, or disposed).

use crate::core::coordinator::{Coordinator, WaitKind};
use crate::core::effect::{Effect, WaitResult};
use crate::core::ids::{ChildRef, Party};
use crate::core::lifecycle::{AbortReason, CancelCause, LimitReason, PauseReason, Status};
use crate::core::message::ReceiptStatus;
use crate::core::registry::{Intent, PendingFinal};
use crate::core::snapshot::Validation;

impl Coordinator {
    /// Mark `r` with `cause` and its whole active subtree as ancestor-cancelled. Nothing is
    /// dequeued until `handle` finishes, so the whole set is marked first.
    pub(crate) fn cancel_subtree(&mut self, r: ChildRef, cause: CancelCause) {
        let descendants = self.reg.descendants(r);
        self.mark_cancel(r, cause);
        for d in descendants {
            self.mark_cancel(d, CancelCause::Ancestor);
        }
    }

    /// Cancel one generation according to its state. Settled results stay settled;
    /// repeated cancellation is harmless.
    pub(crate) fn mark_cancel(&mut self, r: ChildRef, cause: CancelCause) {
        let (status, intent, settled, disposed) = {
            let g = self.gen_ref(r);
            (g.snap.status, g.intent, g.worker.settled, g.snap.disposed)
        };
        match status {
            Status::Queued => {
                self.queue.retain(|&q| q != r);
                let error = cause.explanation(&self.gen_ref(r).snap.limits);
                self.gen_mut(r).intent = Some(Intent::Cancel(cause));
                self.finalize(r, Status::Cancelled, Some(error));
            }
            Status::Setup | Status::Running | Status::Pausing => {
                let pausing = matches!(intent, Some(Intent::Pause(_)));
                if matches!(intent, Some(Intent::Cancel(_))) || (settled && !pausing) {
                    return;
                }
                let g = self.gen_mut(r);
                g.intent = Some(Intent::Cancel(cause));
                g.snap.status = Status::Draining;
                g.snap.pause_reason = None;
                let already_aborted = std::mem::replace(&mut g.worker.aborted, true);
                if !already_aborted {
                    self.emit(Effect::AbortWorker {
                        child: r,
                        reason: AbortReason::Cancel(cause),
                    });
                }
                // Cancellation closes child action admission and wakes its pending waits now,
                // not after drain: a worker blocked in `wait` must see the abort.
                self.cancel_own_waits(r);
            }
            Status::Paused => {
                let error = cause.explanation(&self.gen_ref(r).snap.limits);
                let g = self.gen_mut(r);
                g.intent = Some(Intent::Cancel(cause));
                g.snap.retained_context = false;
                self.finalize(r, Status::Cancelled, Some(error));
            }
            Status::Draining => {
                // Already cancelling, or publishing a resolved prompt: both keep their course
                // (the decided final status stands), but a stop still closes presence at
                // disposal, so the cancel intent is recorded.
                let g = self.gen_mut(r);
                if g.intent.is_none() {
                    g.intent = Some(Intent::Cancel(cause));
                }
            }
            Status::Settled | Status::Failed | Status::Cancelled => {
                if disposed && self.reg.is_current(r) {
                    self.close_presence(r);
                }
            }
        }
    }

    /// Commit a hard limit (the first committed reason is kept) and cancel the subtree.
    pub(crate) fn commit_limit(&mut self, r: ChildRef, reason: LimitReason) {
        let g = self.gen_ref(r);
        if g.intent.is_some() || g.worker.settled || g.snap.limit_reason.is_some() {
            return;
        }
        self.gen_mut(r).snap.limit_reason = Some(reason);
        self.cancel_subtree(r, CancelCause::Limit(reason));
    }

    /// A window deadline: mark `r` (deadline) and its active subtree (ancestor deadline)
    /// before draining any member.
    pub(crate) fn pause_subtree(&mut self, r: ChildRef) {
        let descendants = self.reg.descendants(r);
        let set: Vec<(ChildRef, PauseReason)> = std::iter::once((r, PauseReason::Deadline))
            .chain(
                descendants
                    .into_iter()
                    .map(|d| (d, PauseReason::AncestorDeadline)),
            )
            .collect();
        let mut queued_now = Vec::new();
        for &(member, reason) in &set {
            let g = self.gen_ref(member);
            if g.intent.is_some() {
                continue;
            }
            match g.snap.status {
                Status::Queued => {
                    self.queue.retain(|&q| q != member);
                    let g = self.gen_mut(member);
                    g.intent = Some(Intent::Pause(reason));
                    g.snap.status = Status::Pausing;
                    queued_now.push(member);
                }
                Status::Setup | Status::Running if !g.worker.settled => {
                    let g = self.gen_mut(member);
                    g.intent = Some(Intent::Pause(reason));
                    g.snap.status = Status::Pausing;
                    g.snap.pause_reason = Some(reason);
                    g.worker.aborted = true;
                    self.emit(Effect::AbortWorker {
                        child: member,
                        reason: AbortReason::Pause(reason),
                    });
                    self.cancel_own_waits(member);
                }
                _ => {}
            }
        }
        // Queued members have no worker: they drain as soon as the whole set is marked.
        for member in queued_now {
            self.try_finish(member);
        }
    }

    /// Drain `r` if everything it waits on has ended: its worker exited, its artifacts are
    /// published and its children are paused or disposed.
    pub(crate) fn try_finish(&mut self, r: ChildRef) {
        let g = self.gen_ref(r);
        if g.snap.disposed || g.snap.status == Status::Paused {
            return;
        }
        if g.worker.live() || g.worker.publishing || !self.reg.children_drained(r) {
            return;
        }
        match (g.intent, &g.pending_final) {
            (Some(Intent::Pause(reason)), _) => self.enter_paused(r, reason),
            (_, Some(PendingFinal { status, error })) => {
                let (status, error) = (*status, error.clone());
                self.finalize(r, status, error);
            }
            (Some(Intent::Cancel(cause)), None) => {
                let error = cause.explanation(&g.snap.limits);
                self.finalize(r, Status::Cancelled, Some(error));
            }
            (None, None) if !g.worker.started => {}
            (None, None) => {
                self.finalize(
                    r,
                    Status::Failed,
                    Some("worker ended without resolving its prompt".to_owned()),
                );
            }
        }
    }

    /// Drained pause: release capacity and the writer lease, keep the conversation.
    fn enter_paused(&mut self, r: ChildRef, reason: PauseReason) {
        if self.gen_ref(r).worker.live() {
            self.live_workers -= 1;
        }
        self.release_resources(r);
        let g = self.gen_mut(r);
        g.intent = None;
        g.snap.status = Status::Paused;
        g.snap.pause_reason = Some(reason);
        g.snap.retained_context = g.session_started;
        g.worker = crate::core::registry::WorkerState::default();
        g.pending_final = None;
        self.generation_ended(r);
        self.window_item_drained(r);
        self.wake_outcome_waiters(r);
        self.notify_parent(r);
    }

    /// Actual disposal: final status, `disposed`, `endedAt`, resources released, presence
    /// updated, descendants' idle/parked presence closed, waiters woken, the parent told.
    pub(crate) fn finalize(&mut self, r: ChildRef, status: Status, error: Option<String>) {
        if self.gen_ref(r).worker.live() {
            self.live_workers -= 1;
        }
        self.release_resources(r);
        let now = self.now();
        let g = self.gen_mut(r);
        g.worker.exited = true;
        g.snap.status = status;
        if error.is_some() {
            g.snap.error = error;
        }
        g.snap.disposed = true;
        g.snap.ended_at = Some(now);
        g.snap.retained_context = false;
        g.snap.writer_lease = false;
        if status != Status::Paused {
            g.snap.pause_reason = None;
        }
        if let Some(outcome) = g.snap.outcome.as_mut() {
            outcome.finalized = true;
        }
        g.pending_final = None;
        g.continuations.clear();
        // Shutdown closes all presence, including generations that finish publishing
        // after it began.
        let stopped = matches!(g.intent, Some(Intent::Cancel(_)));
        if (status == Status::Cancelled || stopped || self.is_shutting_down())
            && self.reg.is_current(r)
        {
            self.close_presence(r);
        }
        self.generation_ended(r);
        self.retire_children(r);
        self.window_item_drained(r);
        self.wake_outcome_waiters(r);
        self.notify_parent(r);
    }

    /// The decided final status once the prompt resolved (applied at disposal).
    pub(crate) fn decide_final(&self, r: ChildRef, error: Option<String>) -> PendingFinal {
        let g = self.gen_ref(r);
        if let Some(Intent::Cancel(cause)) = g.intent {
            return PendingFinal {
                status: Status::Cancelled,
                error: Some(cause.explanation(&g.snap.limits)),
            };
        }
        if let Some(error) = error {
            return PendingFinal {
                status: Status::Failed,
                error: Some(error),
            };
        }
        if let Some(outcome) = &g.snap.outcome
            && outcome.validation != Validation::Submitted
        {
            return PendingFinal {
                status: Status::Failed,
                error: Some(
                    "missing required result: the task has a resultSchema and no valid submit_result value was accepted"
                        .to_owned(),
                ),
            };
        }
        PendingFinal {
            status: Status::Settled,
            error: None,
        }
    }

    /// Stopped presence for the current generation of `r`'s identity.
    pub(crate) fn close_presence(&mut self, r: ChildRef) {
        if let Some(slot) = self.reg.slot(r.id) {
            let identity = &mut self.reg.identities[slot];
            if !identity.stopped {
                identity.stopped = true;
                identity.parked = false;
                self.mark_changed(r);
            }
        }
    }

    /// Parent completion or stop retires its children: idle/parked presence closes, paused
    /// sessions are disposed.
    fn retire_children(&mut self, r: ChildRef) {
        let children: Vec<ChildRef> = self
            .gen_ref(r)
            .children
            .iter()
            .map(|&slot| self.reg.identities[slot].current_ref())
            .collect();
        for child in children {
            let g = self.gen_ref(child);
            if g.snap.status == Status::Paused {
                let g = self.gen_mut(child);
                g.snap.retained_context = false;
                self.finalize(
                    child,
                    Status::Cancelled,
                    Some(format!(
                        "retired: parent {r} ended while this generation was paused"
                    )),
                );
            } else if g.snap.disposed {
                self.close_presence(child);
            }
        }
    }

    /// The generation stopped running (paused or disposed): its undelivered messages can no
    /// longer be delivered, and its own pending waits end as cancelled.
    fn generation_ended(&mut self, r: ChildRef) {
        let undelivered: Vec<_> = self.gen_mut(r).mailbox.drain(..).collect();
        for id in undelivered {
            if let Some(m) = self.messages.get_mut(&id)
                && !m.status.is_final()
            {
                m.status = ReceiptStatus::NotRunning;
                self.wake_receipt_waiters(id);
            }
        }
        self.cancel_own_waits(r);
    }

    /// End the pending waits of generation `r` as `cancelled`.
    fn cancel_own_waits(&mut self, r: ChildRef) {
        let actor = Party::Child(r);
        let own: Vec<_> = self
            .waiters
            .iter()
            .filter(|(_, w)| w.actor == actor)
            .map(|(&id, _)| id)
            .collect();
        for id in own {
            self.resolve_waiter(id, WaitResult::Cancelled);
        }
    }

    fn notify_parent(&mut self, r: ChildRef) {
        if let Some(Party::Child(parent)) = self.reg.parent_of(r)
            && self.reg.generation(parent).is_some()
        {
            self.try_finish(parent);
        }
    }

    pub(crate) fn wake_outcome_waiters(&mut self, r: ChildRef) {
        let matching: Vec<_> = self
            .waiters
            .iter()
            .filter(|(_, w)| w.kind == WaitKind::Outcome(r))
            .map(|(&id, _)| id)
            .collect();
        if matching.is_empty() {
            return;
        }
        let outcome = self.wait_outcome(r);
        for id in matching {
            self.resolve_waiter(id, WaitResult::Outcome { outcome });
        }
    }
}

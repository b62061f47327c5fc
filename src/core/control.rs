//! Root controls: stop, stopMany, park, resume (paused continuation), followup/revive
//! (new generations), shutdown, and timer fires.

use crate::core::bounds::GENERATIONS_PER_IDENTITY;
use crate::core::coordinator::{Coordinator, Lifecycle};
use crate::core::effect::{Delivery, Reply, WaitResult};
use crate::core::ids::{ChildRef, Party, RequestId};
use crate::core::input::TimerKey;
use crate::core::lifecycle::{CancelCause, Presence, Status};
use crate::core::refusal::Refusal;
use crate::core::registry::{Generation, Intent};
use crate::core::snapshot::Window;
use crate::core::task::{Renewal, TaskSpec, is_nonblank};

use super::admission::{describe_state, narrow_limits};

impl Coordinator {
    fn require_root(actor: Party, action: &'static str) -> Result<(), Refusal> {
        match actor {
            Party::Root => Ok(()),
            Party::Child(actor) => Err(Refusal::RootOnly { action, actor }),
        }
    }

    fn snapshot_reply(&self, r: ChildRef) -> Reply {
        Reply::Snapshot {
            child: Box::new(self.gen_ref(r).snap.clone()),
        }
    }

    fn reply_admitted(&mut self, request: RequestId, call: crate::core::ids::CallId, r: ChildRef) {
        let children = vec![self.gen_ref(r).snap.clone()];
        self.reply(request, Ok(Reply::Admitted { call, children }));
    }

    /// Stop a pinned current generation: queued work cancels directly, active work drains,
    /// paused sessions are disposed, idle/parked presence closes. Repeating it is harmless.
    pub(crate) fn stop(&mut self, actor: Party, target: ChildRef) -> Result<Reply, Refusal> {
        Self::require_root(actor, "stop")?;
        self.reg.current(target)?;
        self.cancel_subtree(target, CancelCause::Stop);
        Ok(self.snapshot_reply(target))
    }

    /// Validate every target, then mark the whole set before any dequeue.
    pub(crate) fn stop_many(
        &mut self,
        actor: Party,
        targets: &[ChildRef],
    ) -> Result<Reply, Refusal> {
        Self::require_root(actor, "stopMany")?;
        for &target in targets {
            self.reg.current(target)?;
        }
        for &target in targets {
            self.cancel_subtree(target, CancelCause::Stop);
        }
        Ok(Reply::Stopped {
            children: targets
                .iter()
                .map(|&r| self.gen_ref(r).snap.clone())
                .collect(),
        })
    }

    /// The caller of foreground admission `request` cancelled its call: mark every member
    /// whose window has not drained (and its subtree) before any dequeue, then let them drain.
    /// Members that drained keep their outcome; the one window outcome still follows.
    ///
    /// A pause is never read as a cancellation: a delegating child that pauses (its own
    /// deadline, or an ancestor's) has its worker aborted, which ends the connection of its
    /// nested call too. Its subtree was already marked to pause (`pause_subtree` marks every
    /// member before aborting any), so a call whose initiator is pausing or paused, and a
    /// member that is itself pausing, are left to drain into `paused`, resumable.
    pub(crate) fn cancel_call(&mut self, request: RequestId) {
        let Some(call) = self
            .calls
            .values()
            .find(|c| c.request == request && c.delivery == Delivery::Foreground)
        else {
            return;
        };
        let pausing = |r: ChildRef| {
            self.reg.generation(r).is_some_and(|g| {
                matches!(g.intent, Some(Intent::Pause(_))) || g.snap.status == Status::Paused
            })
        };
        if call.initiator.child().is_some_and(pausing) {
            return;
        }
        let open: Vec<ChildRef> = call
            .items
            .iter()
            .zip(&call.drained)
            .filter(|&(&item, drained)| drained.is_none() && !pausing(item))
            .map(|(&item, _)| item)
            .collect();
        for item in open {
            self.cancel_subtree(item, CancelCause::CallerCancelled);
        }
    }

    /// Record parked presence on a disposed idle current generation.
    pub(crate) fn park(&mut self, actor: Party, target: ChildRef) -> Result<Reply, Refusal> {
        Self::require_root(actor, "park")?;
        if self.is_shutting_down() {
            return Err(Refusal::ShuttingDown);
        }
        self.reg.current(target)?;
        let presence = self.presence(target.id).unwrap_or(Presence::Stopped);
        if presence != Presence::Idle {
            return Err(Refusal::InvalidPresence {
                action: "park",
                reference: target,
                presence,
                required: "idle presence (a disposed, non-cancelled generation); stop active work explicitly",
            });
        }
        if let Some(slot) = self.reg.slot(target.id) {
            self.reg.identities[slot].parked = true;
        }
        self.mark_changed(target);
        Ok(self.snapshot_reply(target))
    }

    /// Continue a drained paused generation: same identity, generation and conversation,
    /// a fresh deadline window, cumulative counters kept.
    pub(crate) fn resume(
        &mut self,
        request: RequestId,
        actor: Party,
        target: ChildRef,
        assignment: String,
    ) {
        let result = self.check_resume(actor, target, &assignment);
        if let Err(refusal) = result {
            return self.reply(request, Err(refusal));
        }
        let now = self.now();
        let current = self.policy.limits();
        let g = self.gen_mut(target);
        g.continuations.push(assignment);
        g.snap.status = Status::Queued;
        g.snap.pause_reason = None;
        // Bounded by the originally admitted and the current limits; cumulative counters
        // are not replenished, so a lowered `requests` may end the resumed window early.
        g.snap.limits = g.snap.limits.min(current);
        let window_ms = g.snap.limits.deadline_ms;
        g.snap.window = Window {
            number: g.snap.window.number + 1,
            started_at: now,
            deadline_at: now.saturating_add(window_ms),
        };
        let call = self.open_call(request, Party::Root, Delivery::Background, vec![target]);
        self.enqueue_window(target);
        self.pump();
        self.reply_admitted(request, call, target);
    }

    fn check_resume(
        &self,
        actor: Party,
        target: ChildRef,
        assignment: &str,
    ) -> Result<(), Refusal> {
        Self::require_root(actor, "resume")?;
        if self.is_shutting_down() {
            return Err(Refusal::ShuttingDown);
        }
        let g = self.reg.current(target)?;
        if g.snap.status != Status::Paused {
            let state = if g.snap.status == Status::Queued && g.snap.window.number > 1 {
                "queued (a resume is already pending)".to_owned()
            } else {
                describe_state(g)
            };
            return Err(Refusal::InvalidState {
                action: "resume",
                reference: target,
                state,
                required: "a drained paused generation",
            });
        }
        if !is_nonblank(assignment) {
            return Err(Refusal::BlankAssignment { index: 0 });
        }
        crate::core::admission::check_assignment_len(0, assignment)?;
        let writer = g.spec.is_writer();
        self.check_parent_mutation(writer)?;
        match self.reg.parent_of(target) {
            Some(Party::Child(parent)) => {
                self.check_live_parent(parent)?;
                self.check_immediate_capacity(&[writer])
            }
            _ => self.check_queue_room(writer),
        }
    }

    /// Followup (idle) or revive (parked): a new generation after synchronous checks.
    pub(crate) fn renew(
        &mut self,
        request: RequestId,
        actor: Party,
        target: ChildRef,
        renewal: Renewal,
        required: Presence,
    ) {
        let checked = self.check_renewal(actor, target, renewal, required);
        let (spec, limits) = match checked {
            Ok(ok) => ok,
            Err(refusal) => return self.reply(request, Err(refusal)),
        };
        let Some(slot) = self.reg.slot(target.id) else {
            return;
        };
        let (parent, depth) = {
            let identity = &self.reg.identities[slot];
            (identity.parent, identity.depth)
        };
        let (parent_id, parent_generation) = match parent {
            Party::Root => (self.root_id, None),
            Party::Child(p) => (p.id, Some(p.generation)),
        };
        let next = ChildRef::new(target.id, target.generation + 1);
        let generation =
            self.new_generation(next, parent_id, parent_generation, depth, spec, limits);
        let identity = &mut self.reg.identities[slot];
        identity.parked = false;
        identity.generations.push(generation);
        if let Party::Child(p) = parent {
            let g = self.gen_mut(p);
            g.snap.spawns = g.snap.spawns.saturating_add(1);
        }
        let call = self.open_call(request, Party::Root, Delivery::Silent, vec![next]);
        self.enqueue_window(next);
        self.pump();
        self.reply_admitted(request, call, next);
    }

    fn check_renewal(
        &self,
        actor: Party,
        target: ChildRef,
        renewal: Renewal,
        required: Presence,
    ) -> Result<(TaskSpec, crate::core::task::Limits), Refusal> {
        let action = if required == Presence::Idle {
            "followup"
        } else {
            "revive"
        };
        Self::require_root(actor, action)?;
        if self.is_shutting_down() {
            return Err(Refusal::ShuttingDown);
        }
        let previous = self.reg.current(target)?;
        let presence = self.presence(target.id).unwrap_or(Presence::Stopped);
        if presence != required {
            return Err(Refusal::InvalidPresence {
                action,
                reference: target,
                presence,
                required: if required == Presence::Idle {
                    "idle presence"
                } else {
                    "parked presence"
                },
            });
        }
        if target.generation >= GENERATIONS_PER_IDENTITY {
            return Err(Refusal::GenerationLimit {
                reference: target,
                max: GENERATIONS_PER_IDENTITY,
            });
        }
        if !is_nonblank(&renewal.assignment) {
            return Err(Refusal::BlankAssignment { index: 0 });
        }
        crate::core::admission::check_assignment_len(0, &renewal.assignment)?;
        let requested_limits = renewal.limits;
        let spec = intersect_grants(&previous.spec, renewal);
        if spec.tools.is_empty() {
            return Err(Refusal::EmptyToolSet { index: 0 });
        }
        let writer = spec.is_writer();
        self.check_parent_mutation(writer)?;
        let mut ceiling = self.policy.limits().min(previous.snap.limits);
        match self.reg.parent_of(target) {
            Some(Party::Child(parent)) => {
                let pg = self.check_live_parent(parent)?;
                ceiling = ceiling.min(pg.snap.limits);
                self.check_nested_task(0, parent, pg, &spec)?;
                let max = self.policy.spawns.min(pg.snap.limits.spawns);
                if pg.snap.spawns >= max {
                    return Err(Refusal::SpawnBudgetExhausted {
                        actor: parent,
                        used: pg.snap.spawns,
                        requested: 1,
                        max,
                    });
                }
                self.check_immediate_capacity(&[writer])?;
            }
            _ => self.check_queue_room(writer)?,
        }
        let limits = narrow_limits(0, ceiling, &requested_limits)?;
        Ok((spec, limits))
    }

    /// The exact original parent generation must be current, running and not cancelling.
    fn check_live_parent(&self, parent: ChildRef) -> Result<&Generation, Refusal> {
        let inactive = |state: String| Refusal::ParentInactive { parent, state };
        let Some(pg) = self.reg.generation(parent) else {
            return Err(inactive("unknown".to_owned()));
        };
        if !self.reg.is_current(parent) {
            return Err(inactive("replaced by a later generation".to_owned()));
        }
        if pg.snap.status != Status::Running || pg.intent.is_some() {
            return Err(inactive(describe_state(pg)));
        }
        self.check_delegator(parent)
            .map(|(_, g)| g)
            .map_err(|e| match e {
                Refusal::ActorNotRunning { status, .. } => inactive(status.to_string()),
                other => other,
            })
    }

    fn check_parent_mutation(&self, writer: bool) -> Result<(), Refusal> {
        match self.parent_mutations.first() {
            Some(call) if writer => Err(Refusal::ParentMutationReserved {
                index: 0,
                call: call.clone(),
            }),
            _ => Ok(()),
        }
    }

    fn check_queue_room(&self, writer: bool) -> Result<(), Refusal> {
        let waiting = self.waiting_after(&[writer]);
        if waiting > self.policy.queue as usize {
            return Err(Refusal::QueueFull {
                waiting,
                capacity: self.policy.queue,
            });
        }
        Ok(())
    }

    /// Close admission and dequeue at once; cancel, drain and dispose everything; wake
    /// every waiter with `shutdown`. Final window deliveries are suppressed from here on.
    pub(crate) fn shutdown(&mut self, request: RequestId) {
        if self.lifecycle == Lifecycle::Open {
            self.lifecycle = Lifecycle::ShuttingDown;
            // Wake waiters first: cancelling a generation would end its own waits as
            // `cancelled`, but at shutdown every waiter learns `shutdown`.
            let waiters: Vec<_> = self.waiters.keys().copied().collect();
            for waiter in waiters {
                self.resolve_waiter(waiter, WaitResult::Shutdown);
            }
            let current: Vec<ChildRef> = self
                .reg
                .identities
                .iter()
                .map(super::registry::Identity::current_ref)
                .collect();
            for r in current {
                self.mark_cancel(r, CancelCause::Shutdown);
            }
        }
        self.reply(request, Ok(Reply::Ok));
    }

    pub(crate) fn timer(&mut self, key: TimerKey) {
        match key {
            TimerKey::Deadline { child, window } => {
                let Some(g) = self.reg.generation(child) else {
                    return;
                };
                let live = matches!(
                    g.snap.status,
                    Status::Queued | Status::Setup | Status::Running
                );
                if self.reg.is_current(child)
                    && g.snap.window.number == window
                    && live
                    && g.intent.is_none()
                    && !g.worker.settled
                {
                    self.pause_subtree(child);
                }
            }
            TimerKey::Wait(waiter) => self.resolve_waiter(waiter, WaitResult::Timeout),
            TimerKey::Stream(child) => self.stream_timer(child),
        }
    }
}

/// Renewal never restores a removed grant: each list is the previous admitted list
/// filtered by what policy grants now (previous order kept).
fn intersect_grants(previous: &TaskSpec, renewal: Renewal) -> TaskSpec {
    fn keep<T: PartialEq + Clone>(old: &[T], now: &[T]) -> Vec<T> {
        old.iter().filter(|x| now.contains(x)).cloned().collect()
    }
    TaskSpec {
        assignment: renewal.assignment,
        profile: previous.profile,
        role_prompt: previous.role_prompt.clone(),
        cwd: previous.cwd.clone(),
        model: previous.model.clone(),
        logical: previous.logical.clone(),
        models: previous.models.clone(),
        tools: keep(&previous.tools, &renewal.tools),
        leaf_tools: keep(&previous.leaf_tools, &renewal.leaf_tools),
        skills: keep(&previous.skills, &renewal.skills),
        spawn: keep(&previous.spawn, &renewal.spawn),
        coordination: keep(&previous.coordination, &renewal.coordination),
        limits: renewal.limits,
        result_schema: renewal
            .result_schema
            .or_else(|| previous.result_schema.clone()),
        capability_denials: previous.capability_denials.clone(),
        prewalk: previous.prewalk.clone(),
    }
}

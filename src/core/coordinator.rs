//! `Coordinator::handle(input, now) -> Vec<Effect>`: the one entry point that mutates the
//! registry. Reads (`list`, `snapshot`, `generations`, `agents`, `status`) borrow it.
//!
//! Every `handle` call runs to completion synchronously, then dequeues once (`pump`), so
//! "mark the whole set before any dequeue" and "exactly one concurrent renewal wins" hold
//! by construction.

use std::collections::{BTreeMap, HashSet, VecDeque};

use uuid::Uuid;

use crate::core::effect::{Delivery, Effect, Reply, WaitResult, WindowOutcome, WorkerStart};
use crate::core::ids::{CallId, ChildRef, IdSource, MessageId, Millis, Party, RequestId, WaiterId};
use crate::core::input::Input;
use crate::core::lifecycle::{Presence, Status};
use crate::core::message::Message;
use crate::core::refusal::Refusal;
use crate::core::registry::{Generation, Registry};
use crate::core::snapshot::{AgentPresence, ChildSnapshot, StatusView, WaitOutcome};
use crate::core::task::is_writer;
use crate::policy::scheduling::SchedulingPolicy;

/// One call's open window.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Call {
    pub request: RequestId,
    pub initiator: Party,
    pub delivery: Delivery,
    pub items: Vec<ChildRef>,
    /// Each item's snapshot as its window drained (an item may be resumed into a new
    /// window before its siblings drain; its outcome here stays the drained one).
    pub drained: Vec<Option<ChildSnapshot>>,
    /// Items not yet paused or disposed.
    pub open: usize,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum WaitKind {
    Outcome(ChildRef),
    Receipt(MessageId),
    Inbox,
}

#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Waiter {
    pub request: RequestId,
    pub actor: Party,
    pub kind: WaitKind,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Lifecycle {
    Open,
    ShuttingDown,
    ShutDown,
}

/// Per-`handle` scratch: the clock reading and effects being collected. Not registry
/// state, so it takes no part in equality (refusal tests compare whole coordinators).
#[derive(Clone, Default)]
pub(crate) struct Scratch {
    pub now: Millis,
    pub out: Vec<Effect>,
    pub changed: Vec<ChildRef>,
    pub changed_set: HashSet<ChildRef>,
}

impl PartialEq for Scratch {
    fn eq(&self, _: &Self) -> bool {
        true
    }
}

impl std::fmt::Debug for Scratch {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Scratch")
    }
}

/// The sans-IO delegation coordinator (the parent runtime's registry and scheduler).
#[derive(Clone, Debug, PartialEq)]
pub struct Coordinator {
    pub(crate) root_id: Uuid,
    pub(crate) policy: SchedulingPolicy,
    pub(crate) reg: Registry,
    pub(crate) ids: IdSource,
    /// The one FIFO queue (current generations in `queued`).
    pub(crate) queue: VecDeque<ChildRef>,
    pub(crate) active_permits: u32,
    pub(crate) writer: Option<ChildRef>,
    /// Parent model mutations reserved at tool preflight.
    pub(crate) parent_mutations: Vec<String>,
    pub(crate) calls: BTreeMap<CallId, Call>,
    pub(crate) next_call: u64,
    pub(crate) messages: BTreeMap<MessageId, Message>,
    pub(crate) root_mailbox: VecDeque<MessageId>,
    pub(crate) admitted_messages: u32,
    pub(crate) waiters: BTreeMap<WaiterId, Waiter>,
    pub(crate) next_waiter: u64,
    pub(crate) lifecycle: Lifecycle,
    pub(crate) live_workers: u32,
    pub(crate) scratch: Scratch,
}

impl Coordinator {
    /// A coordinator for the parent runtime `root_id`, with a validated policy and an id seed.
    pub fn new(root_id: Uuid, policy: SchedulingPolicy, id_seed: u64) -> Result<Self, Refusal> {
        policy
            .validate()
            .map_err(|problems| Refusal::InvalidPolicy(join_problems(&problems)))?;
        Ok(Self {
            root_id,
            policy,
            reg: Registry::default(),
            ids: IdSource::new(id_seed),
            queue: VecDeque::new(),
            active_permits: 0,
            writer: None,
            parent_mutations: Vec::new(),
            calls: BTreeMap::new(),
            next_call: 1,
            messages: BTreeMap::new(),
            root_mailbox: VecDeque::new(),
            admitted_messages: 0,
            waiters: BTreeMap::new(),
            next_waiter: 1,
            lifecycle: Lifecycle::Open,
            live_workers: 0,
            scratch: Scratch::default(),
        })
    }

    /// Apply one input at time `now` and return what the runtime must do, in order.
    #[allow(clippy::too_many_lines, reason = "one arm per input")]
    pub fn handle(&mut self, input: Input, now: Millis) -> Vec<Effect> {
        self.scratch.now = now;
        match input {
            Input::Configure { request, policy } => {
                let result = self.configure(policy);
                self.reply(request, result);
            }
            Input::Admit {
                request,
                actor,
                tasks,
                background,
            } => self.admit(request, actor, tasks, background),
            Input::Stop {
                request,
                actor,
                target,
            } => {
                let result = self.stop(actor, target);
                self.reply(request, result);
            }
            Input::StopMany {
                request,
                actor,
                targets,
            } => {
                let result = self.stop_many(actor, &targets);
                self.reply(request, result);
            }
            Input::Steer {
                request,
                target,
                text,
            } => {
                let result = self.steer(target, text);
                self.reply(request, result);
            }
            Input::Message {
                request,
                actor,
                target,
                text,
                mode,
            } => {
                let result = self.message(actor, target, text, mode);
                self.reply(request, result);
            }
            Input::Inbox { request, actor } => {
                let result = self.inbox(actor);
                self.reply(request, result);
            }
            Input::Wait {
                request,
                actor,
                target,
                message_id,
                timeout_ms,
            } => self.wait(request, actor, target, message_id, timeout_ms),
            Input::CancelWait { request } => self.cancel_wait(request),
            Input::CancelCall { request } => self.cancel_call(request),
            Input::Park {
                request,
                actor,
                target,
            } => {
                let result = self.park(actor, target);
                self.reply(request, result);
            }
            Input::Resume {
                request,
                actor,
                target,
                assignment,
            } => self.resume(request, actor, target, assignment),
            Input::Followup {
                request,
                actor,
                target,
                renewal,
            } => self.renew(request, actor, target, renewal, Presence::Idle),
            Input::Revive {
                request,
                actor,
                target,
                renewal,
            } => self.renew(request, actor, target, renewal, Presence::Parked),
            Input::ParentToolStart {
                request,
                call,
                read_only,
            } => {
                let result = self.parent_tool_start(call, read_only);
                self.reply(request, result);
            }
            Input::ParentToolEnd { request, call } => {
                let released = self.parent_tool_end(&call);
                self.reply(request, Ok(Reply::Released { released }));
            }
            Input::OutcomeDelivered {
                request,
                actor,
                call,
            } => {
                let generations = self.outcome_delivered(actor, call);
                if let Some(request) = request {
                    self.reply(request, Ok(Reply::Delivered { generations }));
                }
            }
            Input::Worker { child, event } => self.worker_event(child, event),
            Input::Guard {
                request,
                child,
                kind,
            } => self.guard(request, child, kind),
            Input::Submit {
                request,
                child,
                value,
                errors,
            } => self.submit(request, child, value, errors),
            Input::Published { child, result } => self.published(child, result),
            Input::Timer(key) => self.timer(key),
            Input::Shutdown { request } => self.shutdown(request),
        }
        self.pump();
        self.check_shutdown_complete();
        self.take_effects()
    }

    /// The collected effects, then one `Changed` per changed generation. `changed` is
    /// drained (not taken) and `changed_set` cleared, so both keep their capacity.
    fn take_effects(&mut self) -> Vec<Effect> {
        let Scratch {
            out,
            changed,
            changed_set,
            ..
        } = &mut self.scratch;
        changed_set.clear();
        out.extend(changed.drain(..).map(Effect::Changed));
        std::mem::take(out)
    }

    // ---- reads ------------------------------------------------------------------------

    /// The parent runtime id (the root's identity).
    pub fn root_id(&self) -> Uuid {
        self.root_id
    }

    pub fn policy(&self) -> &SchedulingPolicy {
        &self.policy
    }

    /// Current generations in identity admission order.
    pub fn list(&self) -> Vec<ChildSnapshot> {
        self.reg.list()
    }

    /// Borrowed current generations in admission order, with their identity's presence
    /// (no clones: for renderers and invariant checks over hundreds of agents).
    pub fn iter_current(&self) -> impl Iterator<Item = (&ChildSnapshot, Presence)> + '_ {
        self.reg
            .identities
            .iter()
            .map(|i| (&i.current().snap, i.presence()))
    }

    /// Borrowed generations of one identity, oldest first.
    pub fn iter_generations(&self, id: Uuid) -> impl Iterator<Item = &ChildSnapshot> + '_ {
        self.reg
            .identity(id)
            .into_iter()
            .flat_map(|i| i.generations.iter().map(|g| &g.snap))
    }

    /// A pinned generation (current or historical).
    pub fn snapshot(&self, r: ChildRef) -> Option<ChildSnapshot> {
        self.reg.snapshot(r)
    }

    /// The admitted spec (grants, workspace, model, limits) of a pinned generation: what a
    /// child's own nested call is resolved against.
    pub fn admitted_spec(&self, r: ChildRef) -> Option<&crate::core::TaskSpec> {
        self.reg.generation(r).map(|g| &g.spec)
    }

    /// The current generation of an identity.
    pub fn latest(&self, id: Uuid) -> Option<ChildSnapshot> {
        self.reg.identity(id).map(|i| i.current().snap.clone())
    }

    /// Immutable history plus the current generation, oldest first.
    pub fn generations(&self, id: Uuid) -> Vec<ChildSnapshot> {
        self.reg.generations(id)
    }

    /// Current presence of every identity, in admission order.
    pub fn agents(&self) -> Vec<AgentPresence> {
        self.reg.agents()
    }

    pub fn presence(&self, id: Uuid) -> Option<Presence> {
        self.reg
            .identity(id)
            .map(super::registry::Identity::presence)
    }

    /// Root `status`: pinned snapshot, its identity's generations and current presence.
    pub fn status(&self, target: ChildRef) -> Result<StatusView, Refusal> {
        let generation = self.reg.pinned(target)?;
        Ok(StatusView {
            snapshot: generation.snap.clone(),
            generations: self.reg.generations(target.id),
            agents: self.reg.agents(),
        })
    }

    /// Undelivered messages in the root inbox (read-only peek; `Inbox` consumes).
    pub fn root_inbox_len(&self) -> usize {
        self.root_mailbox.len()
    }

    /// A retained message receipt, visible to its sender or recipient.
    pub fn receipt(&self, id: MessageId) -> Option<&Message> {
        self.messages.get(&id)
    }

    pub fn is_shutting_down(&self) -> bool {
        self.lifecycle != Lifecycle::Open
    }

    pub fn is_shut_down(&self) -> bool {
        self.lifecycle == Lifecycle::ShutDown
    }

    /// Counters for invariant checks and the UI footer.
    pub fn stats(&self) -> CoordinatorStats {
        CoordinatorStats {
            active_permits: self.active_permits,
            queued: self.queue.len(),
            writer: self.writer,
            admitted_messages: self.admitted_messages,
            pending_waiters: self.waiters.len(),
            live_workers: self.live_workers,
            open_windows: self.calls.len(),
        }
    }

    /// The FIFO queue, head first.
    pub fn queued(&self) -> impl Iterator<Item = ChildRef> + '_ {
        self.queue.iter().copied()
    }

    // ---- shared machinery ---------------------------------------------------------------

    pub(crate) fn now(&self) -> Millis {
        self.scratch.now
    }

    pub(crate) fn emit(&mut self, effect: Effect) {
        self.scratch.out.push(effect);
    }

    pub(crate) fn reply(&mut self, request: RequestId, result: Result<Reply, Refusal>) {
        self.emit(Effect::Reply { request, result });
    }

    pub(crate) fn mark_changed(&mut self, r: ChildRef) {
        if self.scratch.changed_set.insert(r) {
            self.scratch.changed.push(r);
            // This change carries any streamed output held back for `r`.
            if let Some(g) = self.reg.generation_mut(r) {
                g.stream.pending = false;
            }
        }
    }

    pub(crate) fn gen_mut(&mut self, r: ChildRef) -> &mut Generation {
        self.mark_changed(r);
        self.reg
            .generation_mut(r)
            .unwrap_or_else(|| unreachable!("internal reference {r} must exist"))
    }

    pub(crate) fn gen_ref(&self, r: ChildRef) -> &Generation {
        self.reg
            .generation(r)
            .unwrap_or_else(|| unreachable!("internal reference {r} must exist"))
    }

    pub(crate) fn next_message_id(&mut self) -> MessageId {
        loop {
            let id = MessageId(self.ids.next_uuid());
            if !self.messages.contains_key(&id) {
                return id;
            }
        }
    }

    /// A fresh identity UUID, never one already in the registry.
    pub(crate) fn next_identity(&mut self) -> Uuid {
        loop {
            let id = self.ids.next_uuid();
            if id != self.root_id && self.reg.slot(id).is_none() {
                return id;
            }
        }
    }

    pub(crate) fn writer_available(&self) -> bool {
        self.writer.is_none() && self.parent_mutations.is_empty()
    }

    pub(crate) fn free_permits(&self) -> u32 {
        self.policy.concurrency.saturating_sub(self.active_permits)
    }

    fn configure(&mut self, policy: SchedulingPolicy) -> Result<Reply, Refusal> {
        if self.is_shutting_down() {
            return Err(Refusal::ShuttingDown);
        }
        policy
            .validate()
            .map_err(|problems| Refusal::InvalidPolicy(join_problems(&problems)))?;
        self.policy = policy;
        Ok(Reply::Ok)
    }

    fn parent_tool_start(&mut self, call: String, read_only: bool) -> Result<Reply, Refusal> {
        if read_only {
            return Ok(Reply::Ok);
        }
        if let Some(holder) = self.writer {
            return Err(Refusal::WriterLeaseHeld { holder });
        }
        if self.parent_mutations.contains(&call) {
            return Err(Refusal::DuplicateParentCall(call));
        }
        self.parent_mutations.push(call);
        Ok(Reply::Ok)
    }

    /// Releases the reservation of `call`; whether there was one.
    fn parent_tool_end(&mut self, call: &str) -> bool {
        let before = self.parent_mutations.len();
        self.parent_mutations.retain(|c| c != call);
        self.parent_mutations.len() != before
    }

    /// Synchronous FIFO dequeue: dispatch from the head while a permit (and, for a writer,
    /// the writer lease) is free. A head writer waiting for its lease blocks later readers.
    pub(crate) fn pump(&mut self) {
        if self.is_shutting_down() {
            return;
        }
        while let Some(&head) = self.queue.front() {
            if self.free_permits() == 0 {
                break;
            }
            let writer = {
                let g = self.gen_ref(head);
                is_writer(&g.spec.tools, &g.spec.leaf_tools)
            };
            if writer && !self.writer_available() {
                break;
            }
            self.queue.pop_front();
            self.dispatch(head, writer);
        }
    }

    fn dispatch(&mut self, r: ChildRef, writer: bool) {
        self.active_permits += 1;
        self.live_workers += 1;
        if writer {
            self.writer = Some(r);
        }
        let parent = self.reg.parent_of(r).unwrap_or(Party::Root);
        let g = self.gen_mut(r);
        g.snap.status = Status::Setup;
        g.holds_permit = true;
        g.snap.writer_lease = writer;
        g.worker = super::registry::WorkerState {
            started: true,
            ..Default::default()
        };
        let mut prompts = Vec::new();
        if !g.session_started {
            prompts.push(g.spec.assignment.clone());
        }
        prompts.append(&mut g.continuations);
        let start = WorkerStart {
            child: r,
            directory: r.directory_name(),
            parent,
            depth: g.snap.depth,
            spec: g.spec.clone(),
            prompts,
            resume_session: g.session_started,
        };
        self.emit(Effect::StartWorker(Box::new(start)));
    }

    /// Give back the permit and writer lease (pause or disposal: actual drain only).
    pub(crate) fn release_resources(&mut self, r: ChildRef) {
        let g = self.gen_mut(r);
        let held = std::mem::take(&mut g.holds_permit);
        g.snap.writer_lease = false;
        if held {
            self.active_permits -= 1;
        }
        if self.writer == Some(r) {
            self.writer = None;
        }
    }

    /// The window of `r` drained (paused or disposed): resolve its call when it is the last.
    pub(crate) fn window_item_drained(&mut self, r: ChildRef) {
        let Some(call_id) = self.gen_mut(r).call.take() else {
            return;
        };
        let snapshot = self.gen_ref(r).snap.clone();
        let Some(call) = self.calls.get_mut(&call_id) else {
            return;
        };
        if let Some(i) = call.items.iter().position(|&item| item == r) {
            call.drained[i] = Some(snapshot);
        }
        call.open -= 1;
        if call.open > 0 {
            return;
        }
        let Some(call) = self.calls.remove(&call_id) else {
            return;
        };
        // Shutdown suppresses final deliveries of the old runtime.
        if self.is_shutting_down() {
            return;
        }
        // What `Input::OutcomeDelivered` matches: the outcome these items go out in.
        for &item in &call.items {
            self.gen_mut(item).drained_call = Some((call_id, call.initiator));
        }
        let outcomes = call.drained.into_iter().flatten().collect();
        self.emit(Effect::WindowOutcome(WindowOutcome {
            call: call_id,
            request: call.request,
            initiator: call.initiator,
            delivery: call.delivery,
            outcomes,
        }));
    }

    pub(crate) fn open_call(
        &mut self,
        request: RequestId,
        initiator: Party,
        delivery: Delivery,
        items: Vec<ChildRef>,
    ) -> CallId {
        let id = CallId(self.next_call);
        self.next_call += 1;
        for &item in &items {
            let g = self.gen_mut(item);
            g.call = Some(id);
            g.snap.delivered_at = None;
            g.drained_call = None;
        }
        self.calls.insert(
            id,
            Call {
                request,
                initiator,
                delivery,
                open: items.len(),
                drained: vec![None; items.len()],
                items,
            },
        );
        id
    }

    /// The outcome of `call` reached `actor`, who started it: each generation it carried
    /// (still the latest window of its generation) is marked delivered, once. Returns how
    /// many were marked; another party's call, or a call already marked, marks none.
    fn outcome_delivered(&mut self, actor: Party, call: CallId) -> u32 {
        let now = self.scratch.now;
        let matching: Vec<ChildRef> = self
            .reg
            .identities
            .iter()
            .flat_map(|i| i.generations.iter())
            .filter(|g| g.drained_call == Some((call, actor)) && g.snap.delivered_at.is_none())
            .map(|g| g.snap.child_ref())
            .collect();
        for &r in &matching {
            self.gen_mut(r).snap.delivered_at = Some(now);
            self.mark_changed(r);
        }
        u32::try_from(matching.len()).unwrap_or(u32::MAX)
    }

    pub(crate) fn wait_outcome(&self, r: ChildRef) -> WaitOutcome {
        let snap = &self.gen_ref(r).snap;
        WaitOutcome {
            id: snap.id,
            generation: snap.generation,
            status: snap.status,
            limit_reason: snap.limit_reason,
            pause_reason: snap.pause_reason,
        }
    }

    pub(crate) fn resolve_waiter(&mut self, waiter: WaiterId, result: WaitResult) {
        if let Some(w) = self.waiters.remove(&waiter) {
            self.reply(w.request, Ok(Reply::Wait { result }));
        }
    }

    fn check_shutdown_complete(&mut self) {
        if self.lifecycle == Lifecycle::ShuttingDown
            && self.live_workers == 0
            && self
                .reg
                .identities
                .iter()
                .all(|i| i.current().snap.disposed)
        {
            self.lifecycle = Lifecycle::ShutDown;
            self.emit(Effect::ShutdownComplete);
        }
    }
}

/// Counters read by invariant checks, benchmarks and status footers.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CoordinatorStats {
    pub active_permits: u32,
    pub queued: usize,
    pub writer: Option<ChildRef>,
    pub admitted_messages: u32,
    pub pending_waiters: usize,
    pub live_workers: u32,
    pub open_windows: usize,
}

fn join_problems(problems: &[crate::policy::scheduling::PolicyProblem]) -> String {
    problems
        .iter()
        .map(ToString::to_string)
        .collect::<Vec<_>>()
        .join("; ")
}

//! Atomic admission: the whole batch is checked before any identity exists.
//!
//! `preflight` reads state only. If it refuses, nothing changed: no identity, no id drawn,
//! no spawn count consumed, no counter moved. Only then does `admit` create identities, in
//! input order, and dequeue synchronously.

use crate::core::coordinator::Coordinator;
use crate::core::effect::{Delivery, Reply};
use crate::core::ids::{ChildRef, Party, RequestId};
use crate::core::input::TimerKey;
use crate::core::lifecycle::Status;
use crate::core::refusal::Refusal;
use crate::core::registry::{Generation, Identity, StreamPublish, WorkerState};
use crate::core::snapshot::{
    ChildSnapshot, LogicalSnapshot, StructuredOutcome, Telemetry, Validation, Window,
};
use crate::core::task::{LimitOverrides, Limits, TaskSpec, is_nonblank};

impl Coordinator {
    pub(crate) fn admit(
        &mut self,
        request: RequestId,
        actor: Party,
        tasks: Vec<TaskSpec>,
        background: bool,
    ) {
        let limits = match self.preflight(actor, &tasks, background) {
            Ok(limits) => limits,
            Err(refusal) => return self.reply(request, Err(refusal)),
        };
        let count = u32::try_from(tasks.len()).unwrap_or(u32::MAX);
        // Grow the registry and the per-call scratch once for the whole batch (each item
        // adds an identity, an index entry, a changed ref, an `ArmTimer` and a `Changed`).
        let n = tasks.len();
        self.reg.identities.reserve(n);
        self.reg.index.reserve(n);
        self.scratch.changed.reserve(n);
        self.scratch.changed_set.reserve(n);
        self.scratch.out.reserve(2 * n + 1);
        let mut refs = Vec::with_capacity(tasks.len());
        for (spec, limits) in tasks.into_iter().zip(limits) {
            refs.push(self.create_identity(actor, spec, limits));
        }
        if let Party::Child(parent) = actor {
            let g = self.gen_mut(parent);
            g.snap.spawns = g.snap.spawns.saturating_add(count);
        }
        let delivery = if background {
            Delivery::Background
        } else {
            Delivery::Foreground
        };
        let call = self.open_call(request, actor, delivery, refs.clone());
        self.pump();
        let children = refs.iter().filter_map(|&r| self.reg.snapshot(r)).collect();
        self.reply(request, Ok(Reply::Admitted { call, children }));
    }

    /// Every check for the whole batch; returns each task's effective limits.
    fn preflight(
        &self,
        actor: Party,
        tasks: &[TaskSpec],
        background: bool,
    ) -> Result<Vec<Limits>, Refusal> {
        if self.is_shutting_down() {
            return Err(Refusal::ShuttingDown);
        }
        if tasks.is_empty() {
            return Err(Refusal::EmptyBatch);
        }
        if tasks.len() > self.policy.batch as usize {
            return Err(Refusal::BatchTooLarge {
                len: tasks.len(),
                max: self.policy.batch,
            });
        }
        let delegator = match actor {
            Party::Root => None,
            Party::Child(parent) => {
                if background {
                    return Err(Refusal::NestedBackground);
                }
                Some(self.check_delegator(parent)?)
            }
        };
        let ceiling = match delegator {
            None => self.policy.limits(),
            Some((_, g)) => self.policy.limits().min(g.snap.limits),
        };
        let mut limits = Vec::with_capacity(tasks.len());
        for (index, spec) in tasks.iter().enumerate() {
            if !is_nonblank(&spec.assignment) {
                return Err(Refusal::BlankAssignment { index });
            }
            check_assignment_len(index, &spec.assignment)?;
            if spec.tools.is_empty() {
                return Err(Refusal::EmptyToolSet { index });
            }
            limits.push(narrow_limits(index, ceiling, &spec.limits)?);
            if let Some((parent, g)) = delegator {
                self.check_nested_task(index, parent, g, spec)?;
            }
            if spec.is_writer()
                && let Some(call) = self.parent_mutations.first()
            {
                return Err(Refusal::ParentMutationReserved {
                    index,
                    call: call.clone(),
                });
            }
        }
        let writers: Vec<bool> = tasks.iter().map(TaskSpec::is_writer).collect();
        if let Some((parent, g)) = delegator {
            let max = self.policy.spawns.min(g.snap.limits.spawns);
            if g.snap.spawns as usize + tasks.len() > max as usize {
                return Err(Refusal::SpawnBudgetExhausted {
                    actor: parent,
                    used: g.snap.spawns,
                    requested: tasks.len(),
                    max,
                });
            }
            self.check_immediate_capacity(&writers)?;
        } else {
            let waiting = self.waiting_after(&writers);
            if waiting > self.policy.queue as usize {
                return Err(Refusal::QueueFull {
                    waiting,
                    capacity: self.policy.queue,
                });
            }
        }
        Ok(limits)
    }

    /// A delegating child and all its ancestors must be running and non-cancelling.
    pub(crate) fn check_delegator(
        &self,
        parent: ChildRef,
    ) -> Result<(ChildRef, &Generation), Refusal> {
        let g = self.reg.current(parent)?;
        if g.snap.status != Status::Running || g.intent.is_some() {
            return Err(Refusal::ActorNotRunning {
                actor: parent,
                status: g.snap.status,
            });
        }
        for ancestor in self.reg.ancestors(parent) {
            let a = self.gen_ref(ancestor);
            if a.snap.status != Status::Running
                || a.intent.is_some()
                || !self.reg.is_current(ancestor)
            {
                return Err(Refusal::AncestorInactive {
                    ancestor,
                    state: describe_state(a),
                });
            }
        }
        Ok((parent, g))
    }

    /// Depth, granted role, subset and writer-ancestry rules for one nested task.
    pub(crate) fn check_nested_task(
        &self,
        index: usize,
        parent: ChildRef,
        pg: &Generation,
        spec: &TaskSpec,
    ) -> Result<(), Refusal> {
        let depth = pg.snap.depth + 1;
        let max_depth = self.policy.depth.min(pg.snap.limits.depth);
        if depth > max_depth {
            return Err(Refusal::DepthExceeded {
                index,
                depth,
                max: max_depth,
            });
        }
        if !pg.spec.spawn.contains(&spec.profile) {
            return Err(Refusal::RoleNotGranted {
                index,
                actor: parent,
                role: spec.profile,
            });
        }
        let not_subset = |field: &'static str, name: String| Refusal::NotSubset {
            index,
            field,
            name,
            actor: parent,
        };
        if let Some(t) = spec.tools.iter().find(|t| !pg.spec.tools.contains(t)) {
            return Err(not_subset("tools", t.as_str().to_owned()));
        }
        if let Some(t) = spec
            .leaf_tools
            .iter()
            .find(|t| !pg.spec.leaf_tools.contains(t))
        {
            return Err(not_subset("leafTools", t.clone()));
        }
        if let Some(s) = spec.skills.iter().find(|s| !pg.spec.skills.contains(s)) {
            return Err(not_subset("skills", s.clone()));
        }
        if let Some(r) = spec.spawn.iter().find(|r| !pg.spec.spawn.contains(r)) {
            return Err(not_subset("spawn", r.as_str().to_owned()));
        }
        if let Some(a) = spec
            .coordination
            .iter()
            .find(|a| !pg.spec.coordination.contains(a))
        {
            return Err(not_subset("coordination", a.as_str().to_owned()));
        }
        if spec.is_writer() {
            let chain = std::iter::once(parent).chain(self.reg.ancestors(parent));
            for ancestor in chain {
                if self.gen_ref(ancestor).spec.is_writer() {
                    return Err(Refusal::WriterUnderWriter { index, ancestor });
                }
            }
        }
        Ok(())
    }

    /// Nested work is admitted only if all of it can dispatch now: no older queued
    /// assignment, enough free permits, and every writer lease it needs.
    pub(crate) fn check_immediate_capacity(&self, writers: &[bool]) -> Result<(), Refusal> {
        let unavailable = |detail: String| Err(Refusal::NestedCapacityUnavailable { detail });
        if !self.queue.is_empty() {
            return unavailable(format!("{} older assignments are queued", self.queue.len()));
        }
        let free = self.free_permits() as usize;
        if writers.len() > free {
            return unavailable(format!(
                "{} permits needed, {free} free of concurrency {}",
                writers.len(),
                self.policy.concurrency
            ));
        }
        let writer_count = writers.iter().filter(|&&w| w).count();
        if writer_count > 1 {
            return unavailable(format!(
                "{writer_count} writers need the single writer lease at once"
            ));
        }
        if writer_count == 1 && !self.writer_available() {
            return unavailable("the writer lease is held".to_owned());
        }
        Ok(())
    }

    /// How many assignments would wait in the queue if `new` (writer flags, in order) were
    /// appended now, following FIFO with writer head-of-line blocking.
    pub(crate) fn waiting_after(&self, new: &[bool]) -> usize {
        let mut free = self.free_permits();
        let mut writer_free = self.writer_available();
        let existing = self.queue.iter().map(|&r| {
            let g = self.gen_ref(r);
            g.spec.is_writer()
        });
        let mut blocked = false;
        let mut waiting = 0;
        for writer in existing.chain(new.iter().copied()) {
            if !blocked && free > 0 && (!writer || writer_free) {
                free -= 1;
                if writer {
                    writer_free = false;
                }
            } else {
                blocked = true;
                waiting += 1;
            }
        }
        waiting
    }

    /// Allocate one identity (generation 1), queue it and arm its first deadline.
    fn create_identity(&mut self, actor: Party, spec: TaskSpec, limits: Limits) -> ChildRef {
        let id = self.next_identity();
        let r = ChildRef::new(id, 1);
        let (parent_id, parent_generation, depth) = match actor {
            Party::Root => (self.root_id, None, 1),
            Party::Child(p) => (p.id, Some(p.generation), self.gen_ref(p).snap.depth + 1),
        };
        let generation = self.new_generation(r, parent_id, parent_generation, depth, spec, limits);
        let slot = self.reg.identities.len();
        self.reg.identities.push(Identity {
            id,
            parent: actor,
            depth,
            generations: vec![generation],
            parked: false,
            stopped: false,
        });
        self.reg.index.insert(id, slot);
        if let Party::Child(p) = actor {
            self.gen_mut(p).children.push(slot);
        }
        self.enqueue_window(r);
        r
    }

    pub(crate) fn new_generation(
        &self,
        r: ChildRef,
        parent_id: uuid::Uuid,
        parent_generation: Option<u32>,
        depth: u32,
        spec: TaskSpec,
        limits: Limits,
    ) -> Generation {
        let now = self.now();
        let outcome = spec.result_schema.as_ref().map(|_| StructuredOutcome {
            validation: Validation::Awaiting,
            attempts: 0,
            errors: Vec::new(),
            value: None,
            finalized: false,
        });
        let snap = ChildSnapshot {
            id: r.id,
            generation: r.generation,
            parent_id,
            parent_generation,
            depth,
            status: Status::Queued,
            profile: spec.profile,
            cwd: spec.cwd.clone(),
            assignment: spec.assignment.clone(),
            activity: None,
            progress: None,
            result: None,
            model: spec
                .model
                .as_ref()
                .map(|m| format!("{}/{}", m.provider, m.id)),
            effort: spec.model.as_ref().and_then(|m| m.effort.clone()),
            requested_model: spec
                .model
                .as_ref()
                .map(|m| format!("{}/{}", m.provider, m.id)),
            requested_effort: spec.model.as_ref().and_then(|m| m.effort.clone()),
            logical: spec.logical.as_ref().map(|l| LogicalSnapshot {
                model: l.model.clone(),
                reason: l.reason.clone(),
                admission: l.admission,
                route_model: l
                    .routes
                    .first()
                    .map_or_else(|| l.model.clone(), |r| r.logical.clone()),
                route_provider: l
                    .routes
                    .first()
                    .map(|r| r.selection.provider.clone())
                    .unwrap_or_default(),
                switches: 0,
            }),
            prewalk: spec.prewalk.clone(),
            telemetry: Telemetry {
                requests: Some(0),
                ..Telemetry::default()
            },
            error: None,
            transcript: None,
            limits,
            limit_reason: None,
            tool_calls: 0,
            spawns: 0,
            writer_lease: false,
            disposed: false,
            created_at: now,
            ended_at: None,
            outcome,
            artifacts: None,
            tools: spec.tools.clone(),
            leaf_tools: spec.leaf_tools.clone(),
            skills: spec.skills.clone(),
            capability_denials: spec.capability_denials.clone(),
            pause_reason: None,
            retained_context: false,
            streaming: None,
            retry: None,
            delivered_at: None,
            window: Window {
                number: 1,
                started_at: now,
                deadline_at: now.saturating_add(limits.deadline_ms),
            },
        };
        Generation {
            snap,
            spec,
            call: None,
            intent: None,
            holds_permit: false,
            worker: WorkerState::default(),
            pending_final: None,
            children: Vec::new(),
            mailbox: std::collections::VecDeque::new(),
            continuations: Vec::new(),
            session_started: false,
            last_text: None,
            stream: StreamPublish::default(),
            drained_call: None,
        }
    }

    /// Put a generation at the back of the FIFO queue and arm its window deadline.
    pub(crate) fn enqueue_window(&mut self, r: ChildRef) {
        let window = self.gen_ref(r).snap.window;
        self.queue.push_back(r);
        self.emit(crate::core::effect::Effect::ArmTimer {
            key: TimerKey::Deadline {
                child: r,
                window: window.number,
            },
            at: window.deadline_at,
        });
        self.mark_changed(r);
    }
}

/// Apply request `limits`: each field may only narrow `ceiling`.
pub(crate) fn narrow_limits(
    index: usize,
    ceiling: Limits,
    overrides: &LimitOverrides,
) -> Result<Limits, Refusal> {
    fn field<T: Copy + Into<u64> + PartialOrd>(
        index: usize,
        name: &'static str,
        positive: bool,
        requested: Option<T>,
        max: T,
    ) -> Result<T, Refusal> {
        let Some(value) = requested else {
            return Ok(max);
        };
        if positive && value.into() == 0 {
            return Err(Refusal::LimitNotPositive { index, field: name });
        }
        if value > max {
            return Err(Refusal::LimitNotNarrowing {
                index,
                field: name,
                requested: value.into(),
                max: max.into(),
            });
        }
        Ok(value)
    }
    Ok(Limits {
        deadline_ms: field(
            index,
            "deadlineMs",
            true,
            overrides.deadline_ms,
            ceiling.deadline_ms,
        )?,
        requests: field(
            index,
            "requests",
            true,
            overrides.requests,
            ceiling.requests,
        )?,
        tools: field(index, "tools", true, overrides.tools, ceiling.tools)?,
        depth: field(index, "depth", false, overrides.depth, ceiling.depth)?,
        spawns: field(index, "spawns", false, overrides.spawns, ceiling.spawns)?,
    })
}

pub(crate) fn describe_state(g: &Generation) -> String {
    match g.intent {
        Some(crate::core::registry::Intent::Cancel(_)) => format!("{} (cancelling)", g.snap.status),
        Some(crate::core::registry::Intent::Pause(_)) => format!("{} (pausing)", g.snap.status),
        None => g.snap.status.to_string(),
    }
}

/// An inline assignment is at most [`ASSIGNMENT_BYTES`](crate::core::bounds::ASSIGNMENT_BYTES).
pub(crate) fn check_assignment_len(index: usize, assignment: &str) -> Result<(), Refusal> {
    let max = crate::core::bounds::ASSIGNMENT_BYTES;
    if assignment.len() > max {
        return Err(Refusal::AssignmentTooLong {
            index,
            bytes: assignment.len(),
            max,
        });
    }
    Ok(())
}

//! Deterministic simulation of the coordinator.
//!
//! Random admissions (root and nested), controls, messages, waits, deadline ticks and
//! worker-event interleavings over many seeds; after every step the invariants of the
//! contract are checked. A failure prints the seed and the step trace; replay one seed with
//! `SLATE_SIM_SEED=<seed> cargo test --test simulation -- --nocapture`.
//!
//! `SLATE_SIM_SEEDS=N` runs N seeds (default 500), `SLATE_SIM_STEPS=N` steps per seed
//! (default 2000).

#![allow(
    clippy::cast_possible_truncation,
    reason = "the test RNG draws small ranges; every cast value fits"
)]

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::fmt::Write as _;

use slate::core::{
    BuiltinTool, CallId, ChildRef, ChildSnapshot, CoordinationAction, Delivery, Effect, Input,
    LimitOverrides, MessageId, MessageMode, Party, Presence, Renewal, Reply, RequestId, Role,
    Status, TaskSpec, WorkerStart, bounds,
};
use slate::policy::scheduling::SchedulingPolicy;
use slate::sim::{Fleet, Script, Source, Step};

/// `SplitMix64`: a small deterministic generator (no dependency, stable across versions).
#[derive(Clone)]
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
    fn below(&mut self, n: u64) -> u64 {
        if n == 0 { 0 } else { self.next() % n }
    }
    fn range(&mut self, lo: u64, hi: u64) -> u64 {
        lo + self.below(hi - lo + 1)
    }
    fn chance(&mut self, percent: u64) -> bool {
        self.below(100) < percent
    }
    fn pick<T: Copy>(&mut self, items: &[T]) -> Option<T> {
        if items.is_empty() {
            None
        } else {
            Some(items[self.below(items.len() as u64) as usize])
        }
    }
}

/// Random worker behaviour, derived from the seed and the child so runs replay exactly.
struct RandomScripts {
    seed: u64,
}

impl slate::sim::Scripts for RandomScripts {
    fn script(&mut self, start: &WorkerStart) -> Script {
        let mut rng =
            Rng(self.seed ^ start.child.id.as_u64_pair().0 ^ u64::from(start.child.generation));
        if rng.chance(4) {
            return Script {
                setup_error: Some("provider auth missing".into()),
                steps: vec![],
            };
        }
        let mut steps = Vec::new();
        for _ in 0..rng.range(0, 6) {
            match rng.below(10) {
                0..=3 => steps.push(Step::Request {
                    ms: rng.range(5, 400),
                    text: if rng.chance(20) {
                        String::new()
                    } else {
                        format!("answer {}", rng.below(1000))
                    },
                    input_tokens: rng.range(0, 3000),
                    output_tokens: rng.range(0, 300),
                    cost: if rng.chance(20) { None } else { Some(0.001) },
                }),
                4..=6 => steps.push(Step::Tool {
                    name: "read".into(),
                    ms: rng.range(1, 200),
                    error: rng.chance(10),
                    args: None,
                    output: None,
                }),
                7 => steps.push(Step::Progress("x".repeat(rng.range(1, 5000) as usize))),
                8 => steps.push(Step::Think(rng.range(100, 3000))),
                _ => steps.push(Step::Submit {
                    value: serde_json::json!({"n": rng.below(5)}),
                    errors: if rng.chance(40) {
                        vec!["/n: expected string".into()]
                    } else {
                        vec![]
                    },
                }),
            }
        }
        match rng.below(100) {
            0..=4 => steps.push(Step::Fail("provider error 500".into())),
            5..=7 => steps.push(Step::Crash),
            8 => steps.push(Step::Hang),
            _ => {}
        }
        Script {
            setup_error: None,
            steps,
        }
    }
}

/// What the checker remembers between steps.
#[derive(Default)]
struct Model {
    max_concurrency: u32,
    counters: HashMap<ChildRef, (u32, u32, u32)>,
    generations: HashMap<uuid::Uuid, u32>,
    identities: usize,
    admitted_messages: u32,
    disposed: HashMap<ChildRef, String>,
    /// call → (items, nested?)
    calls: BTreeMap<CallId, Vec<ChildRef>>,
    outcomes: BTreeSet<CallId>,
    requests: BTreeSet<RequestId>,
    replied: BTreeSet<RequestId>,
    shutdown_requested: bool,
    shutdown_complete: bool,
    nested_requests: BTreeSet<RequestId>,
    /// How often each notable path was taken (so the run cannot silently idle).
    seen: BTreeMap<String, u64>,
}

struct Sim {
    seed: u64,
    rng: Rng,
    fleet: Fleet<RandomScripts>,
    model: Model,
    trace: Vec<String>,
    receipts: Vec<(Party, MessageId)>,
    parent_calls: Vec<String>,
    next_parent_call: u64,
}

const ROLES: [Role; 4] = [
    Role::Scout,
    Role::Review,
    Role::General,
    Role::Implementation,
];

impl Sim {
    fn new(seed: u64) -> Self {
        let mut rng = Rng(seed);
        let policy = SchedulingPolicy {
            concurrency: rng.range(1, 4) as u32,
            queue: rng.range(0, 8) as u32,
            batch: rng.range(1, 5) as u32,
            depth: rng.range(1, 3) as u32,
            spawns: rng.range(0, 4) as u32,
            deadline_ms: rng.range(300, 6000),
            requests: rng.range(1, 8) as u32,
            tools: rng.range(1, 8) as u32,
        };
        let fleet = Fleet::new(policy, seed, RandomScripts { seed })
            .expect("the generated policy is valid");
        let model = Model {
            max_concurrency: policy.concurrency,
            ..Model::default()
        };
        Sim {
            seed,
            rng,
            fleet,
            model,
            trace: Vec::new(),
            receipts: Vec::new(),
            parent_calls: Vec::new(),
            next_parent_call: 1,
        }
    }

    fn spec(&mut self) -> TaskSpec {
        let role = self.rng.pick(&ROLES).unwrap_or(Role::Scout);
        let mut spec = TaskSpec::new(
            if self.rng.chance(3) {
                "   ".to_owned()
            } else {
                format!("task {}", self.rng.below(10_000))
            },
            role,
            "/work",
        );
        if self.rng.chance(30) {
            // Narrow builtins; sometimes to read-only.
            spec.tools.retain(|t| !t.is_mutating());
        }
        if self.rng.chance(2) {
            spec.tools.clear();
        }
        if matches!(role, Role::General | Role::Implementation) {
            spec.spawn = vec![Role::Scout, Role::Review, Role::General];
            spec.coordination = vec![
                CoordinationAction::Message,
                CoordinationAction::Inbox,
                CoordinationAction::Wait,
            ];
        } else if self.rng.chance(50) {
            spec.coordination = vec![CoordinationAction::Message, CoordinationAction::Wait];
        }
        if self.rng.chance(10) {
            spec.result_schema = Some(serde_json::json!({"type": "object"}));
        }
        if self.rng.chance(40) {
            spec.limits = LimitOverrides {
                deadline_ms: self.rng.chance(50).then(|| self.rng.range(0, 4000)),
                requests: self.rng.chance(50).then(|| self.rng.range(0, 9) as u32),
                tools: self.rng.chance(30).then(|| self.rng.range(1, 9) as u32),
                depth: self.rng.chance(20).then(|| self.rng.range(0, 3) as u32),
                spawns: self.rng.chance(20).then(|| self.rng.range(0, 4) as u32),
            };
        }
        spec
    }

    fn current_refs(&self, filter: impl Fn(&ChildSnapshot, Presence) -> bool) -> Vec<ChildRef> {
        self.fleet
            .coord
            .iter_current()
            .filter(|(s, p)| filter(s, *p))
            .map(|(s, _)| s.child_ref())
            .collect()
    }

    /// Any known reference, sometimes stale or unknown.
    fn some_ref(&mut self) -> ChildRef {
        let all = self.current_refs(|_, _| true);
        match self.rng.pick(&all) {
            Some(r) if self.rng.chance(8) && r.generation > 1 => {
                ChildRef::new(r.id, r.generation - 1)
            }
            Some(r) if self.rng.chance(3) => ChildRef::new(r.id, r.generation + 1),
            Some(r) => r,
            None => ChildRef::new(uuid::Uuid::from_u128(u128::from(self.rng.next())), 1),
        }
    }

    fn some_actor(&mut self) -> Party {
        let running = self.current_refs(|s, _| s.status == Status::Running);
        match self.rng.pick(&running) {
            Some(r) if self.rng.chance(60) => Party::Child(r),
            _ => Party::Root,
        }
    }

    fn request(&mut self, label: impl std::fmt::Display, build: impl FnOnce(RequestId) -> Input) {
        let id = self.fleet.request_id();
        self.model.requests.insert(id);
        let input = build(id);
        if let Input::Admit {
            actor: Party::Child(_),
            ..
        } = &input
        {
            self.model.nested_requests.insert(id);
        }
        if let Input::Shutdown { .. } = &input {
            self.model.shutdown_requested = true;
        }
        self.trace
            .push(format!("t={} {label} (request {})", self.fleet.now(), id.0));
        let queue_before: Vec<ChildRef> = self.fleet.coord.queued().collect();
        let effects = self.fleet.input(input);
        self.check(&queue_before, &effects);
    }

    fn deliver(&mut self, source: Source) {
        self.trace
            .push(format!("t={} deliver {source:?}", self.fleet.now()));
        let queue_before: Vec<ChildRef> = self.fleet.coord.queued().collect();
        let effects = self.fleet.deliver(source);
        if let Some(last) = self.trace.last_mut() {
            let _ = write!(last, " -> t={}", self.fleet.now());
        }
        self.check(&queue_before, &effects);
    }

    /// One random step.
    #[allow(
        clippy::too_many_lines,
        reason = "one flat table of weighted operations"
    )]
    fn step(&mut self) {
        let sources = self.fleet.sources();
        let roll = self.rng.below(100);
        if roll < 50 && !sources.is_empty() {
            // A random interleaving: any worker's next event, or the next timer.
            let (_, source) = sources[self.rng.below(sources.len() as u64) as usize];
            self.deliver(source);
            return;
        }
        if self.model.shutdown_requested {
            if let Some(&(_, source)) = sources.iter().min() {
                self.deliver(source);
            }
            return;
        }
        match roll {
            50..=61 => {
                let n = self.rng.range(0, 5) as usize;
                let tasks: Vec<TaskSpec> = (0..n).map(|_| self.spec()).collect();
                let background = self.rng.chance(50);
                self.request(format!("admit root x{n} bg={background}"), |request| {
                    Input::Admit {
                        request,
                        actor: Party::Root,
                        tasks,
                        background,
                    }
                });
            }
            62..=67 => {
                let running = self.current_refs(|s, _| s.status == Status::Running);
                if let Some(parent) = self.rng.pick(&running) {
                    let n = self.rng.range(1, 2) as usize;
                    let tasks: Vec<TaskSpec> = (0..n)
                        .map(|_| {
                            let mut t = self.spec();
                            if self.rng.chance(70) {
                                t.profile = Role::Scout;
                                t.tools = vec![BuiltinTool::Read, BuiltinTool::Grep];
                                t.spawn.clear();
                            }
                            t
                        })
                        .collect();
                    let background = self.rng.chance(10);
                    self.request(format!("admit nested by {parent} x{n}"), |request| {
                        Input::Admit {
                            request,
                            actor: Party::Child(parent),
                            tasks,
                            background,
                        }
                    });
                }
            }
            68..=71 => {
                let target = self.some_ref();
                let actor = if self.rng.chance(90) {
                    Party::Root
                } else {
                    self.some_actor()
                };
                self.request(format!("stop {target} by {actor}"), |request| Input::Stop {
                    request,
                    actor,
                    target,
                });
            }
            72 => {
                let targets: Vec<ChildRef> =
                    (0..self.rng.range(1, 3)).map(|_| self.some_ref()).collect();
                self.request(format!("stopMany {targets:?}"), |request| Input::StopMany {
                    request,
                    actor: Party::Root,
                    targets,
                });
            }
            73..=76 => {
                let actor = self.some_actor();
                let target = if self.rng.chance(20) {
                    None
                } else {
                    Some(self.some_ref())
                };
                let mode = [
                    MessageMode::Inbox,
                    MessageMode::Steer,
                    MessageMode::FollowUp,
                ][self.rng.below(3) as usize];
                let text = if self.rng.chance(3) {
                    "x".repeat(4097)
                } else {
                    format!("note {}", self.rng.below(100))
                };
                self.request(
                    format!("message {actor} -> {target:?} {mode:?}"),
                    |request| Input::Message {
                        request,
                        actor,
                        target,
                        text,
                        mode,
                    },
                );
            }
            77 => {
                let target = self.some_ref();
                self.request(format!("steer {target}"), |request| Input::Steer {
                    request,
                    target,
                    text: "focus".into(),
                });
            }
            78..=79 => {
                let actor = self.some_actor();
                self.request(format!("inbox {actor}"), |request| Input::Inbox {
                    request,
                    actor,
                });
            }
            80..=83 => {
                let actor = self.some_actor();
                let (target, message_id) = match self.rng.below(3) {
                    0 => (Some(self.some_ref()), None),
                    1 => (None, self.rng.pick(&self.receipts.clone()).map(|(_, m)| m)),
                    _ => (None, None),
                };
                let timeout_ms = if self.rng.chance(3) {
                    0
                } else {
                    self.rng.range(1, 60_000)
                };
                self.request(
                    format!("wait {actor} on {target:?}/{message_id:?} {timeout_ms}ms"),
                    |request| Input::Wait {
                        request,
                        actor,
                        target,
                        message_id,
                        timeout_ms,
                    },
                );
            }
            84..=85 => {
                let target = self.some_ref();
                self.request(format!("park {target}"), |request| Input::Park {
                    request,
                    actor: Party::Root,
                    target,
                });
            }
            86..=88 => {
                let target = self.some_ref();
                let mut renewal = Renewal::keep_grants(format!("again {}", self.rng.below(100)));
                if self.rng.chance(20) {
                    renewal.tools = vec![BuiltinTool::Read];
                }
                let revive = self.rng.chance(40);
                self.request(
                    format!("{} {target}", if revive { "revive" } else { "followup" }),
                    |request| {
                        if revive {
                            Input::Revive {
                                request,
                                actor: Party::Root,
                                target,
                                renewal,
                            }
                        } else {
                            Input::Followup {
                                request,
                                actor: Party::Root,
                                target,
                                renewal,
                            }
                        }
                    },
                );
            }
            89..=91 => {
                let paused = self.current_refs(|s, _| s.status == Status::Paused);
                let target = self.rng.pick(&paused).unwrap_or_else(|| self.some_ref());
                self.request(format!("resume {target}"), |request| Input::Resume {
                    request,
                    actor: Party::Root,
                    target,
                    assignment: "Continue".into(),
                });
            }
            92..=93 => {
                if let Some(call) = self.parent_calls.pop() {
                    self.request(format!("parentToolEnd {call}"), |request| {
                        Input::ParentToolEnd { request, call }
                    });
                } else {
                    let call = format!("call-{}", self.next_parent_call);
                    self.next_parent_call += 1;
                    let read_only = self.rng.chance(30);
                    if !read_only {
                        self.parent_calls.push(call.clone());
                    }
                    self.request(
                        format!("parentToolStart {call} ro={read_only}"),
                        |request| Input::ParentToolStart {
                            request,
                            call,
                            read_only,
                        },
                    );
                }
            }
            94 => {
                let mut policy = *self.fleet.coord.policy();
                policy.concurrency = self.rng.range(0, 5) as u32;
                policy.queue = self.rng.range(0, 10) as u32;
                if policy.concurrency > 0 {
                    self.model.max_concurrency = self.model.max_concurrency.max(policy.concurrency);
                }
                self.request(
                    format!("configure concurrency={}", policy.concurrency),
                    |request| Input::Configure { request, policy },
                );
            }
            _ => {
                if let Some(&(_, source)) = sources.iter().min() {
                    self.deliver(source);
                }
            }
        }
    }

    fn fail(&self, why: impl std::fmt::Display) -> ! {
        let tail: Vec<&String> = self.trace.iter().rev().take(40).collect();
        let mut lines = String::new();
        for line in tail.into_iter().rev() {
            lines.push_str("  ");
            lines.push_str(line);
            lines.push('\n');
        }
        panic!(
            "simulation invariant broken (seed {seed}, step {step}): {why}\nlast steps:\n{lines}replay: SLATE_SIM_SEED={seed} cargo test --test simulation -- --nocapture",
            seed = self.seed,
            step = self.trace.len(),
        );
    }

    /// The invariants, after every step.
    #[allow(clippy::too_many_lines)]
    fn check(&mut self, queue_before: &[ChildRef], effects: &[Effect]) {
        let was_complete = self.model.shutdown_complete;
        let coord = &self.fleet.coord;
        let stats = coord.stats();
        let policy = *coord.policy();
        let mut dispatched = Vec::new();
        for effect in effects {
            match effect {
                Effect::StartWorker(start) => {
                    if self.model.shutdown_requested {
                        self.fail(format!("worker {} started after shutdown", start.child));
                    }
                    dispatched.push(start.child);
                }
                Effect::Reply { request, result } => {
                    let what = match result {
                        Ok(Reply::Admitted { children, .. }) if children[0].generation > 1 => {
                            "renewal admitted".to_owned()
                        }
                        Ok(Reply::Admitted { children, .. }) if children[0].window.number > 1 => {
                            "resume admitted".to_owned()
                        }
                        Ok(Reply::Admitted { .. })
                            if self.model.nested_requests.contains(request) =>
                        {
                            "nested admitted".to_owned()
                        }
                        Ok(Reply::Wait { result }) => format!(
                            "wait {}",
                            serde_json::to_value(result)
                                .map(|v| v["kind"].to_string())
                                .unwrap_or_default()
                        ),
                        Ok(reply) => format!(
                            "reply {}",
                            serde_json::to_value(reply)
                                .map(|v| v["kind"].to_string())
                                .unwrap_or_default()
                        ),
                        Err(refusal) => format!("refused {}", refusal.code()),
                    };
                    *self.model.seen.entry(what).or_default() += 1;
                    if !self.model.requests.contains(request) {
                        self.fail(format!("reply to unknown request {}", request.0));
                    }
                    if !self.model.replied.insert(*request) {
                        self.fail(format!("second reply to request {}", request.0));
                    }
                    if let Ok(Reply::Admitted { call, children }) = result {
                        if self.model.shutdown_requested {
                            self.fail("admission after shutdown");
                        }
                        if self.model.nested_requests.contains(request)
                            && children.iter().any(|c| c.status == Status::Queued)
                        {
                            self.fail(format!(
                                "nested call {} left a child queued (permit lending)",
                                call.0
                            ));
                        }
                        self.model.calls.insert(
                            *call,
                            children.iter().map(ChildSnapshot::child_ref).collect(),
                        );
                    }
                    if let Ok(Reply::Message { message }) = result {
                        self.receipts.push((message.sender, message.id));
                    }
                }
                Effect::WindowOutcome(w) => {
                    for o in &w.outcomes {
                        let what = match (o.status, o.limit_reason, o.pause_reason) {
                            (_, Some(l), _) => format!("outcome limit {l:?}"),
                            (_, _, Some(p)) => format!("outcome paused {p:?}"),
                            (final_status, _, _) => format!("outcome {final_status}"),
                        };
                        *self.model.seen.entry(what).or_default() += 1;
                    }
                    if self.model.shutdown_requested {
                        self.fail(format!(
                            "window outcome for call {} after shutdown",
                            w.call.0
                        ));
                    }
                    if !self.model.outcomes.insert(w.call) {
                        self.fail(format!("second outcome for call {}", w.call.0));
                    }
                    let Some(items) = self.model.calls.get(&w.call) else {
                        self.fail(format!("outcome for unknown call {}", w.call.0));
                    };
                    let got: Vec<ChildRef> =
                        w.outcomes.iter().map(ChildSnapshot::child_ref).collect();
                    if &got != items {
                        self.fail(format!(
                            "outcome order {got:?} differs from admission order {items:?}"
                        ));
                    }
                    if let Some(s) = w
                        .outcomes
                        .iter()
                        .find(|s| !(s.disposed || s.status == Status::Paused))
                    {
                        self.fail(format!(
                            "outcome delivered before {} drained ({})",
                            s.child_ref(),
                            s.status
                        ));
                    }
                    if w.delivery == Delivery::Silent && w.initiator != Party::Root {
                        self.fail("silent delivery for a non-root call");
                    }
                }
                Effect::ShutdownComplete => {
                    if !self.model.shutdown_requested || self.model.shutdown_complete {
                        self.fail("unexpected ShutdownComplete");
                    }
                    self.model.shutdown_complete = true;
                }
                _ => {}
            }
        }

        // Permits: held exactly by setup/running/pausing/draining generations.
        let holders = coord
            .iter_current()
            .filter(|(s, _)| {
                matches!(
                    s.status,
                    Status::Setup | Status::Running | Status::Pausing | Status::Draining
                )
            })
            .count() as u32;
        if holders != stats.active_permits {
            self.fail(format!(
                "{holders} permit holders but {} permits counted",
                stats.active_permits
            ));
        }
        if !dispatched.is_empty() && stats.active_permits > policy.concurrency {
            self.fail(format!(
                "dispatched with {} permits above concurrency {}",
                stats.active_permits, policy.concurrency
            ));
        }
        if stats.active_permits > self.model.max_concurrency {
            self.fail(format!(
                "{} permits exceed every configured concurrency",
                stats.active_permits
            ));
        }

        // Writer lease: at most one, held only by an active generation, matching the stats.
        let leases: Vec<&ChildSnapshot> = coord
            .iter_current()
            .filter(|(s, _)| s.writer_lease)
            .map(|(s, _)| s)
            .collect();
        if leases.len() > 1 {
            self.fail(format!("{} writer leases", leases.len()));
        }
        if leases.first().map(|s| s.child_ref()) != stats.writer {
            self.fail(format!(
                "writer lease flags {:?} disagree with holder {:?}",
                leases.first().map(|s| s.child_ref()),
                stats.writer
            ));
        }
        if let Some(s) = leases.first()
            && !matches!(
                s.status,
                Status::Setup | Status::Running | Status::Pausing | Status::Draining
            )
        {
            self.fail(format!(
                "writer lease held by {} in {}",
                s.child_ref(),
                s.status
            ));
        }

        // FIFO: what was queued before leaves in order, ahead of anything queued this step.
        let queue_after: Vec<ChildRef> = coord.queued().collect();
        let out_order: Vec<ChildRef> = dispatched
            .iter()
            .chain(queue_after.iter())
            .copied()
            .collect();
        let old_in_out: Vec<ChildRef> = out_order
            .iter()
            .copied()
            .filter(|r| queue_before.contains(r))
            .collect();
        let old_kept: Vec<ChildRef> = queue_before
            .iter()
            .copied()
            .filter(|r| out_order.contains(r))
            .collect();
        if old_in_out != old_kept {
            self.fail(format!(
                "FIFO order broken: before {queue_before:?}, after {out_order:?}"
            ));
        }
        if let Some(first_new) = out_order.iter().position(|r| !queue_before.contains(r))
            && out_order[first_new..]
                .iter()
                .any(|r| queue_before.contains(r))
        {
            self.fail("a newly queued assignment overtook an older one");
        }
        for r in &queue_after {
            match coord.snapshot(*r) {
                Some(s) if s.status == Status::Queued => {}
                other => self.fail(format!("queue holds {r} in {:?}", other.map(|s| s.status))),
            }
        }
        if !self.model.shutdown_requested
            && stats.queued > 0
            && stats.active_permits < policy.concurrency
        {
            // Something queued with free permits: the head must be a writer waiting for the lease.
            let head = queue_after[0];
            let head_writer = coord.snapshot(head).is_some_and(|s| {
                s.tools.iter().any(|t| t.is_mutating()) || !s.leaf_tools.is_empty()
            });
            if !head_writer || (stats.writer.is_none() && self.parent_calls.is_empty()) {
                self.fail(format!(
                    "{head} waits at the head with free permits and no lease conflict"
                ));
            }
        }

        // Per-generation facts, bounds and monotone counters.
        let mut identities = 0;
        for (s, presence) in coord.iter_current() {
            identities += 1;
            let r = s.child_ref();
            let requests = s.telemetry.requests.unwrap_or(0);
            let counters = (requests, s.tool_calls, s.spawns);
            if let Some(&(a, b, c)) = self.model.counters.get(&r)
                && (counters.0 < a || counters.1 < b || counters.2 < c)
            {
                self.fail(format!(
                    "counters of {r} decreased: {:?} -> {counters:?}",
                    (a, b, c)
                ));
            }
            self.model.counters.insert(r, counters);
            if requests > s.limits.requests
                || s.tool_calls > s.limits.tools
                || s.spawns > s.limits.spawns
            {
                self.fail(format!(
                    "{r} exceeds its limits: {counters:?} vs {:?}",
                    s.limits
                ));
            }
            if s.progress
                .as_ref()
                .is_some_and(|p| p.chars().count() > bounds::PROGRESS_CHARS)
            {
                self.fail(format!("{r} progress above 4096 characters"));
            }
            if s.generation > bounds::GENERATIONS_PER_IDENTITY {
                self.fail(format!("{r} above 64 generations"));
            }
            let previous = self
                .model
                .generations
                .insert(s.id, s.generation)
                .unwrap_or(0);
            if s.generation < previous {
                self.fail(format!("{} generation went back", s.id));
            }
            if s.disposed != s.ended_at.is_some() {
                self.fail(format!(
                    "{r}: disposed {} but endedAt {:?}",
                    s.disposed, s.ended_at
                ));
            }
            if s.status.is_terminal() != s.disposed {
                self.fail(format!(
                    "{r}: status {} with disposed {}",
                    s.status, s.disposed
                ));
            }
            if s.outcome
                .as_ref()
                .is_some_and(|o| o.finalized != s.disposed)
            {
                self.fail(format!("{r}: structured outcome finalized before disposal"));
            }
            let expected_presence = match s.status {
                Status::Queued | Status::Setup | Status::Running | Status::Draining => {
                    Presence::Active
                }
                Status::Pausing => Presence::Pausing,
                Status::Paused => Presence::Paused,
                Status::Cancelled => Presence::Stopped,
                Status::Settled | Status::Failed => presence,
            };
            if presence != expected_presence && presence != Presence::Stopped {
                self.fail(format!("{r}: presence {presence} for status {}", s.status));
            }
            if presence == Presence::Stopped && !(s.disposed) {
                self.fail(format!("{r}: stopped presence while {}", s.status));
            }
            if s.status == Status::Cancelled && s.error.is_none() {
                self.fail(format!("{r}: cancelled without an explanatory error"));
            }
            if s.limit_reason.is_some() && s.disposed && s.status != Status::Cancelled {
                self.fail(format!("{r}: limitReason with final status {}", s.status));
            }
            // Disposed generations never change again.
            if s.disposed {
                let json = serde_json::to_string(s).unwrap_or_default();
                match self.model.disposed.get(&r) {
                    Some(old) if *old != json => {
                        self.fail(format!("disposed {r} changed:\n{old}\n{json}"))
                    }
                    Some(_) => {}
                    None => {
                        self.model.disposed.insert(r, json);
                    }
                }
            }
        }
        if identities < self.model.identities {
            self.fail("an identity disappeared");
        }
        self.model.identities = identities;
        if stats.admitted_messages < self.model.admitted_messages
            || stats.admitted_messages > bounds::RUNTIME_MESSAGES
        {
            self.fail(format!(
                "admitted messages {} (was {})",
                stats.admitted_messages, self.model.admitted_messages
            ));
        }
        self.model.admitted_messages = stats.admitted_messages;
        if stats.pending_waiters > bounds::PENDING_WAITERS {
            self.fail(format!("{} pending waiters", stats.pending_waiters));
        }
        if coord.root_inbox_len() > bounds::MAILBOX_MESSAGES {
            self.fail("root mailbox above 64");
        }

        // Exactly one outcome per call: a drained call without an outcome is a lost outcome.
        if !self.model.shutdown_requested {
            for (call, items) in &self.model.calls {
                let drained = items.iter().all(|r| {
                    coord
                        .snapshot(*r)
                        .is_some_and(|s| s.disposed || s.status == Status::Paused)
                });
                if drained && !self.model.outcomes.contains(call) {
                    self.fail(format!("call {} drained without a window outcome", call.0));
                }
            }
        }
        if was_complete
            && !effects
                .iter()
                .all(|e| matches!(e, Effect::Reply { result: Err(_), .. }))
        {
            self.fail(format!("effects after shutdown completed: {effects:?}"));
        }
    }

    /// Shut down and drive to completion, then check the end state.
    fn finish(&mut self) {
        self.request("shutdown", |request| Input::Shutdown { request });
        let mut guard = 0;
        while let Some((_, source)) = self.fleet.sources().into_iter().min() {
            self.deliver(source);
            guard += 1;
            if guard > 100_000 {
                self.fail("shutdown never drained");
            }
        }
        if !self.model.shutdown_complete {
            self.fail(format!(
                "no ShutdownComplete; stats {:?}",
                self.fleet.coord.stats()
            ));
        }
        let unanswered: Vec<u64> = self
            .model
            .requests
            .difference(&self.model.replied)
            .map(|r| r.0)
            .collect();
        if !unanswered.is_empty() {
            self.fail(format!("requests never answered: {unanswered:?}"));
        }
        let coord = &self.fleet.coord;
        if let Some((s, p)) = coord
            .iter_current()
            .find(|(s, p)| !s.disposed || *p != Presence::Stopped)
        {
            self.fail(format!(
                "{} left {} / {p} after shutdown",
                s.child_ref(),
                s.status
            ));
        }
        let stats = coord.stats();
        if stats.active_permits != 0
            || stats.live_workers != 0
            || stats.writer.is_some()
            || stats.pending_waiters != 0
        {
            self.fail(format!("resources left after shutdown: {stats:?}"));
        }
    }
}

fn env_u64(name: &str, default: u64) -> u64 {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

fn run_seed(seed: u64, steps: u64, paths: &mut BTreeMap<String, u64>) -> (usize, usize) {
    let mut sim = Sim::new(seed);
    for _ in 0..steps {
        sim.step();
    }
    sim.finish();
    for (k, v) in &sim.model.seen {
        *paths.entry(k.clone()).or_default() += v;
    }
    (sim.model.identities, sim.model.outcomes.len())
}

#[test]
fn deterministic_simulation_keeps_every_invariant() {
    let steps = env_u64("SLATE_SIM_STEPS", 2000);
    if let Ok(seed) = std::env::var("SLATE_SIM_SEED") {
        let seed: u64 = seed.parse().expect("SLATE_SIM_SEED is a number");
        let mut paths = BTreeMap::new();
        let (identities, outcomes) = run_seed(seed, steps, &mut paths);
        println!("seed {seed}: {identities} identities, {outcomes} window outcomes\n{paths:#?}");
        return;
    }
    let seeds = env_u64("SLATE_SIM_SEEDS", 500);
    let (mut identities, mut outcomes) = (0, 0);
    let mut seen = BTreeMap::new();
    for seed in 0..seeds {
        let (i, o) = run_seed(seed, steps, &mut seen);
        identities += i;
        outcomes += o;
    }
    println!("{seeds} seeds x {steps} steps: {identities} identities, {outcomes} window outcomes");
    println!("paths taken: {seen:#?}");
    if seeds >= 500 {
        // Every major path of the contract must have been exercised.
        for path in [
            "nested admitted",
            "resume admitted",
            "renewal admitted",
            "outcome settled",
            "outcome failed",
            "outcome cancelled",
            "outcome limit Requests",
            "outcome limit Tools",
            "outcome paused Deadline",
            "wait \"outcome\"",
            "wait \"timeout\"",
            "wait \"messages\"",
            "wait \"message\"",
            "reply \"message\"",
            "reply \"inbox\"",
            "refused queue-full",
            "refused nested-capacity-unavailable",
            "refused stale-generation",
            "refused wait-cycle",
        ] {
            assert!(
                seen.get(path).copied().unwrap_or(0) > 0,
                "the simulation never took path {path:?}: {seen:#?}"
            );
        }
    }
    // The simulation must actually exercise the fleet, not idle.
    assert!(
        identities as u64 > seeds,
        "too few identities admitted: {identities}"
    );
    assert!(
        outcomes as u64 > seeds / 2,
        "too few window outcomes: {outcomes}"
    );
}

#[test]
fn same_seed_replays_identically() {
    let run = |seed| {
        let mut sim = Sim::new(seed);
        for _ in 0..400 {
            sim.step();
        }
        sim.trace.join("\n")
    };
    assert_eq!(run(42), run(42));
}

//! A virtual-time runtime for the core: scripted workers, timers and publication, all
//! deterministic. It drives `slate demo`, the deterministic simulation tests and the
//! benchmarks. (The real tokio runtime lives in `runtime`; this one never sleeps.)

pub mod script;

use std::collections::{BTreeMap, VecDeque};

use uuid::Uuid;

use crate::core::{
    Artifacts, ChildRef, Coordinator, Effect, Input, Millis, Refusal, RequestId, WorkerEvent,
    WorkerStart,
};
use crate::policy::scheduling::SchedulingPolicy;
pub use script::{Script, Step};

/// Decides what each started worker does.
pub trait Scripts {
    fn script(&mut self, start: &WorkerStart) -> Script;
}

impl<F: FnMut(&WorkerStart) -> Script> Scripts for F {
    fn script(&mut self, start: &WorkerStart) -> Script {
        self(start)
    }
}

/// Latencies of the simulated worker protocol, in virtual milliseconds.
#[derive(Clone, Copy, Debug)]
pub struct Latency {
    pub setup: Millis,
    pub abort: Millis,
    pub exit: Millis,
    pub publish: Millis,
    pub message: Millis,
    /// How long shutdown waits for a worker that ignores abort before killing it.
    pub kill_grace: Millis,
}

impl Default for Latency {
    fn default() -> Self {
        Self {
            setup: 40,
            abort: 15,
            exit: 5,
            publish: 3,
            message: 10,
            kill_grace: 5_000,
        }
    }
}

/// Where a pending input comes from. Inputs from one worker keep their order; timers and
/// runtime completions come in due order.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Source {
    Worker(ChildRef),
    Timer,
}

#[derive(Debug)]
#[allow(
    clippy::struct_excessive_bools,
    reason = "independent protocol facts of one worker"
)]
struct SimWorker {
    /// Remaining script, consumed as time passes.
    steps: VecDeque<Step>,
    /// Inputs already scheduled for delivery, in order: (due, input).
    pending: VecDeque<(Millis, Input)>,
    /// Time the next script step may start.
    cursor: Millis,
    hang: bool,
    aborted: bool,
    exited: bool,
    /// The script ran out (or failed): the prompt resolution is scheduled.
    done: bool,
}

/// The virtual fleet: a coordinator plus everything its effects touch.
pub struct Fleet<S: Scripts> {
    pub coord: Coordinator,
    now: Millis,
    scripts: S,
    latency: Latency,
    workers: BTreeMap<ChildRef, SimWorker>,
    /// Timers and runtime completions (publication), by due time.
    timers: BTreeMap<(Millis, u64), Input>,
    timer_seq: u64,
    next_request: u64,
    /// Every effect, with the time it was emitted, when `record` is on.
    pub record: bool,
    pub history: Vec<(Millis, Effect)>,
    shutdown_started: Option<Millis>,
}

impl<S: Scripts> Fleet<S> {
    /// A fleet with a fresh root id; an invalid policy is refused, never replaced.
    pub fn new(policy: SchedulingPolicy, seed: u64, scripts: S) -> Result<Self, Refusal> {
        let root = crate::core::ids::IdSource::new(seed ^ 0x05EE_D0FF_1EE7).next_uuid();
        Self::with_root(root, policy, seed, scripts)
    }

    pub fn with_root(
        root: Uuid,
        policy: SchedulingPolicy,
        seed: u64,
        scripts: S,
    ) -> Result<Self, Refusal> {
        let coord = Coordinator::new(root, policy, seed)?;
        Ok(Self {
            coord,
            now: 0,
            scripts,
            latency: Latency::default(),
            workers: BTreeMap::new(),
            timers: BTreeMap::new(),
            timer_seq: 0,
            next_request: 1,
            record: false,
            history: Vec::new(),
            shutdown_started: None,
        })
    }

    #[must_use]
    pub fn with_latency(mut self, latency: Latency) -> Self {
        self.latency = latency;
        self
    }

    pub fn now(&self) -> Millis {
        self.now
    }

    pub fn set_now(&mut self, now: Millis) {
        self.now = self.now.max(now);
    }

    /// A fresh request id for a caller-built input.
    pub fn request_id(&mut self) -> RequestId {
        let id = RequestId(self.next_request);
        self.next_request += 1;
        id
    }

    /// Feed one input now and execute its effects; returns them.
    pub fn input(&mut self, input: Input) -> Vec<Effect> {
        if matches!(input, Input::Shutdown { .. }) && self.shutdown_started.is_none() {
            self.shutdown_started = Some(self.now);
        }
        let effects = self.coord.handle(input, self.now);
        for effect in &effects {
            self.execute(effect);
        }
        if self.record {
            self.history
                .extend(effects.iter().cloned().map(|e| (self.now, e)));
        }
        effects
    }

    /// Build a request with a fresh id, feed it, return (id, effects).
    pub fn request(&mut self, build: impl FnOnce(RequestId) -> Input) -> (RequestId, Vec<Effect>) {
        let id = self.request_id();
        let effects = self.input(build(id));
        (id, effects)
    }

    #[allow(
        clippy::too_many_lines,
        reason = "one arm per effect, each a few lines"
    )]
    fn execute(&mut self, effect: &Effect) {
        let now = self.now;
        let lat = self.latency;
        match effect {
            Effect::StartWorker(start) => {
                let script = self.scripts.script(start);
                let mut worker = SimWorker {
                    steps: script.steps.into(),
                    pending: VecDeque::new(),
                    cursor: now + lat.setup,
                    hang: false,
                    aborted: false,
                    exited: false,
                    done: false,
                };
                let ready = if script.setup_error.is_some() {
                    WorkerEvent::SetupFailed {
                        error: script.setup_error.unwrap_or_default(),
                    }
                } else {
                    WorkerEvent::Ready {
                        transcript: Some(format!(
                            "/virtual/{}/transcripts/session.jsonl",
                            start.directory
                        )),
                    }
                };
                let failed_setup = matches!(ready, WorkerEvent::SetupFailed { .. });
                worker
                    .pending
                    .push_back((now + lat.setup, worker_input(start.child, ready)));
                if failed_setup {
                    worker.steps.clear();
                    worker.pending.push_back((
                        now + lat.setup + lat.exit,
                        worker_input(
                            start.child,
                            WorkerEvent::Exited {
                                reason: "setup failed".into(),
                            },
                        ),
                    ));
                    worker.exited = true;
                }
                self.workers.insert(start.child, worker);
            }
            Effect::AbortWorker { child, .. } => {
                if let Some(w) = self.workers.get_mut(child) {
                    let ignores = w.hang || w.aborted || w.exited;
                    w.aborted = true;
                    if ignores {
                        return;
                    }
                    // Abort interrupts: nothing scheduled after now happens any more.
                    w.steps.clear();
                    w.pending.retain(|(at, _)| *at <= now);
                    let at = w.pending.back().map_or(now, |p| p.0).max(now) + lat.abort;
                    w.pending.push_back((
                        at,
                        worker_input(
                            *child,
                            WorkerEvent::Settled {
                                error: Some("aborted".into()),
                            },
                        ),
                    ));
                }
            }
            Effect::ReleaseWorker { child } => {
                if let Some(w) = self.workers.get_mut(child)
                    && !w.exited
                {
                    w.exited = true;
                    w.steps.clear();
                    let at = w.pending.back().map_or(now, |p| p.0).max(now) + lat.exit;
                    w.pending.push_back((
                        at,
                        worker_input(
                            *child,
                            WorkerEvent::Exited {
                                reason: "exit 0".into(),
                            },
                        ),
                    ));
                }
            }
            Effect::Publish {
                child, structured, ..
            } => {
                let base = format!("/virtual/{}", child.directory_name());
                let artifacts = Artifacts {
                    text: Some(format!("{base}/result.txt")),
                    structured: structured
                        .as_ref()
                        .map(|_| format!("{base}/structured.json")),
                    error: None,
                };
                self.schedule(
                    now + lat.publish,
                    Input::Published {
                        child: *child,
                        result: Ok(artifacts),
                    },
                );
            }
            Effect::SendMessage { child, message, .. } => {
                if let Some(w) = self.workers.get_mut(child)
                    && !w.exited
                    && !w.aborted
                {
                    let at = now + lat.message;
                    w.pending.push_back((
                        at,
                        worker_input(*child, WorkerEvent::MessageQueued { message: *message }),
                    ));
                    w.pending.push_back((
                        at + lat.message,
                        worker_input(*child, WorkerEvent::MessageDelivered { message: *message }),
                    ));
                }
            }
            Effect::ArmTimer { key, at } => self.schedule(*at, Input::Timer(*key)),
            Effect::Reply { .. }
            | Effect::WindowOutcome(_)
            | Effect::Changed(_)
            | Effect::ShutdownComplete => {}
        }
    }

    fn schedule(&mut self, at: Millis, input: Input) {
        self.timer_seq += 1;
        self.timers.insert((at, self.timer_seq), input);
    }

    /// Expand the next script step of `child` into scheduled inputs, if it has none pending.
    fn refill(&mut self, child: ChildRef) {
        let Some(w) = self.workers.get_mut(&child) else {
            return;
        };
        if !w.pending.is_empty() || w.exited || w.aborted || w.hang || w.done {
            return;
        }
        let t = w.cursor.max(self.now);
        let Some(step) = w.steps.pop_front() else {
            w.done = true;
            w.pending
                .push_back((t, worker_input(child, WorkerEvent::Settled { error: None })));
            return;
        };
        let (events, took) = step.expand();
        match step {
            Step::Hang => w.hang = true,
            Step::Crash => w.exited = true,
            Step::Fail(_) => w.done = true,
            _ => {}
        }
        w.cursor = t + took;
        for (offset, event) in events {
            w.pending
                .push_back((t + offset, worker_input(child, event)));
        }
    }

    /// Every source with something deliverable, with its due time.
    pub fn sources(&mut self) -> Vec<(Millis, Source)> {
        let children: Vec<ChildRef> = self.workers.keys().copied().collect();
        for child in children {
            self.refill(child);
        }
        self.kill_hung_on_shutdown();
        let mut out: Vec<(Millis, Source)> = self
            .workers
            .iter()
            .filter_map(|(&r, w)| w.pending.front().map(|(at, _)| (*at, Source::Worker(r))))
            .collect();
        if let Some((&(at, _), _)) = self.timers.iter().next() {
            out.push((at, Source::Timer));
        }
        out
    }

    /// During shutdown the runtime escalates against workers that ignore abort.
    fn kill_hung_on_shutdown(&mut self) {
        let Some(started) = self.shutdown_started else {
            return;
        };
        let at = started + self.latency.kill_grace;
        for (&child, w) in &mut self.workers {
            if w.hang && !w.exited && w.pending.is_empty() {
                w.exited = true;
                w.pending.push_back((
                    at.max(self.now),
                    worker_input(
                        child,
                        WorkerEvent::Exited {
                            reason: "killed (SIGKILL)".into(),
                        },
                    ),
                ));
            }
        }
    }

    /// Deliver the next input of `source`, advancing virtual time to its due time.
    pub fn deliver(&mut self, source: Source) -> Vec<Effect> {
        let next = match source {
            Source::Worker(child) => self
                .workers
                .get_mut(&child)
                .and_then(|w| w.pending.pop_front()),
            Source::Timer => self.timers.pop_first().map(|((at, _), input)| (at, input)),
        };
        let Some((at, input)) = next else {
            return Vec::new();
        };
        self.set_now(at);
        if let Source::Worker(child) = source
            && let Some(w) = self.workers.get(&child)
            && w.exited
            && w.pending.is_empty()
        {
            self.workers.remove(&child);
        }
        self.input(input)
    }

    /// Deliver the earliest pending input. `None` when nothing is pending.
    pub fn step(&mut self) -> Option<Vec<Effect>> {
        let (_, source) = self.sources().into_iter().min()?;
        Some(self.deliver(source))
    }

    /// Step until nothing is pending or virtual time passes `until`.
    pub fn run_until(&mut self, until: Millis) {
        loop {
            let Some((at, source)) = self.sources().into_iter().min() else {
                return;
            };
            if at > until {
                return;
            }
            self.deliver(source);
        }
    }

    /// Step until only timers far in the future remain and no worker is active.
    pub fn run_until_idle(&mut self) {
        while let Some((_, source)) = self.sources().into_iter().min() {
            if source == Source::Timer
                && self.workers.values().all(|w| w.pending.is_empty())
                && self.coord.stats().active_permits == 0
                && self.coord.stats().queued == 0
            {
                return;
            }
            self.deliver(source);
        }
    }
}

fn worker_input(child: ChildRef, event: WorkerEvent) -> Input {
    Input::Worker { child, event }
}

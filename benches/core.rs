//! Criterion benchmarks of the sans-IO coordinator (`slate::core`).
//!
//! Every benchmark feeds `Coordinator::handle` directly (no `sim::Fleet`), so the figures are
//! about the core: inputs are prebuilt outside the timed region and passed through
//! `black_box`, every returned effects vector is consumed (inspected, or handed back to
//! criterion, which drops it after timing), and each scenario is checked once before it is
//! measured so a refused admission or a tripped limit cannot make a benchmark look fast.
//! What each benchmark measures, how to run them and the figures: `docs/performance.md`.

use std::collections::VecDeque;
use std::hint::black_box;
use std::iter::Peekable;
use std::time::Duration;

use criterion::{BatchSize, Criterion, Throughput, criterion_group, criterion_main};
use slate::core::{
    Artifacts, ChildRef, Coordinator, Effect, Input, Party, Reply, RequestId, Role, Status,
    TaskSpec, Tokens, Usage, WorkerEvent,
};
use slate::policy::scheduling::SchedulingPolicy;
use uuid::Uuid;

const ROOT: Uuid = Uuid::from_u128(0x0b6a_4c1e_8f2d_4a7b_9c3e_5d1f_2a4b_6c8d);
const SEED: u64 = 0x51A7E;
/// Items per admission call in every benchmark (the `batch` ceiling).
const BATCH: usize = 64;
/// Assignments pushed through the queue by `queue_drain`.
const DRAIN_ITEMS: usize = 10_000;
/// Worker events applied by `worker_events/apply`.
const STREAM_EVENTS: usize = 100_000;
/// Running generations the event stream is spread over (the `concurrency` ceiling).
const RUNNING: usize = 16;
/// Identities in the registry for `status/list_500`.
const LIST_IDENTITIES: usize = 500;

const USAGE: Usage = Usage {
    tokens: Tokens {
        input: 1_840,
        output: 212,
        cache_read: 12_288,
        cache_write: 0,
        total: 14_340,
    },
    cost: Some(0.0042),
};

// ---- shared fixtures ---------------------------------------------------------------------

/// concurrency 16, queue 256, batch 64: the operator ceilings, defaults elsewhere.
fn fleet_policy() -> SchedulingPolicy {
    SchedulingPolicy {
        concurrency: 16,
        queue: 256,
        batch: 64,
        ..SchedulingPolicy::default()
    }
}

fn coordinator(policy: SchedulingPolicy) -> Coordinator {
    Coordinator::new(ROOT, policy, SEED).expect("the benchmark policy is valid")
}

/// Read-only scout assignments (no writer lease, so FIFO never blocks on it).
fn reader_specs(n: usize) -> Vec<TaskSpec> {
    (0..n)
        .map(|i| {
            TaskSpec::new(
                format!("Read shard {i} of the workspace and summarise its public API"),
                Role::Scout,
                "/work/project",
            )
        })
        .collect()
}

fn admit(request: u64, tasks: Vec<TaskSpec>) -> Input {
    Input::Admit {
        request: RequestId(request),
        actor: Party::Root,
        tasks,
        background: true,
    }
}

fn worker(child: ChildRef, event: WorkerEvent) -> Input {
    Input::Worker { child, event }
}

/// Panics on a refused request; returns how many children an `Admitted` reply carries.
fn admitted(effects: &[Effect]) -> Option<usize> {
    effects.iter().find_map(|e| match e {
        Effect::Reply {
            result: Ok(Reply::Admitted { children, .. }),
            ..
        } => Some(children.len()),
        Effect::Reply {
            result: Err(refusal),
            ..
        } => panic!("benchmark request refused: {refusal}"),
        _ => None,
    })
}

fn started(effects: &[Effect]) -> Vec<ChildRef> {
    effects
        .iter()
        .filter_map(|e| match e {
            Effect::StartWorker(start) => Some(start.child),
            _ => None,
        })
        .collect()
}

// ---- queue/drain driver --------------------------------------------------------------------

/// The strings one scripted worker hands the core, built before the timed region.
struct Payload {
    text: String,
    reason: String,
    artifacts: Artifacts,
}

fn payloads(n: usize) -> Vec<Payload> {
    (0..n)
        .map(|i| Payload {
            text: format!("Shard {i}: 12 public items, no unsafe code.\nDetails follow."),
            reason: "exit code 0".to_owned(),
            artifacts: Artifacts {
                text: Some(format!("/virtual/task-{i}/result.txt")),
                structured: None,
                error: None,
            },
        })
        .collect()
}

/// One dispatched worker walking `Ready` → `RequestStart` → `AssistantMessage` → `Settled`
/// → `Published` → `Exited`.
struct Walker {
    child: ChildRef,
    stage: u8,
    payload: Payload,
}

impl Walker {
    const STAGES: u8 = 6;

    fn next_input(&mut self) -> Input {
        let child = self.child;
        let stage = self.stage;
        self.stage += 1;
        match stage {
            0 => worker(child, WorkerEvent::Ready { transcript: None }),
            1 => worker(child, WorkerEvent::RequestStart),
            2 => worker(
                child,
                WorkerEvent::AssistantMessage {
                    text: std::mem::take(&mut self.payload.text),
                    usage: Some(USAGE),
                },
            ),
            3 => worker(child, WorkerEvent::Settled { error: None }),
            4 => Input::Published {
                child,
                result: Ok(std::mem::take(&mut self.payload.artifacts)),
            },
            _ => worker(
                child,
                WorkerEvent::Exited {
                    reason: std::mem::take(&mut self.payload.reason),
                },
            ),
        }
    }
}

/// Admits batches while the queue has room and walks dispatched workers round-robin, one
/// input at a time, feeding every input straight into the coordinator.
struct Drain {
    coord: Coordinator,
    queue_capacity: usize,
    now: u64,
    next_request: u64,
    walking: VecDeque<Walker>,
    payloads: std::vec::IntoIter<Payload>,
    effects: usize,
    outcomes: usize,
    finished: usize,
}

impl Drain {
    fn new(coord: Coordinator, payloads: Vec<Payload>) -> Self {
        Self {
            queue_capacity: coord.policy().queue as usize,
            coord,
            now: 1_000,
            next_request: 1,
            walking: VecDeque::with_capacity(RUNNING),
            payloads: payloads.into_iter(),
            effects: 0,
            outcomes: 0,
            finished: 0,
        }
    }

    fn handle(&mut self, input: Input) {
        self.now += 1;
        let effects = self.coord.handle(input, self.now);
        self.effects += effects.len();
        for effect in effects {
            match effect {
                Effect::StartWorker(start) => self.walking.push_back(Walker {
                    child: start.child,
                    stage: 0,
                    payload: self.payloads.next().expect("one payload per assignment"),
                }),
                Effect::WindowOutcome(outcome) => self.outcomes += outcome.outcomes.len(),
                Effect::Reply {
                    result: Err(refusal),
                    ..
                } => panic!("benchmark request refused: {refusal}"),
                _ => {}
            }
        }
    }

    /// Admit the next batches while the queue can take a whole batch. Readers never block
    /// on the writer lease, so `queued + batch <= queue` is always admitted.
    fn admit_while_room<I: Iterator<Item = Vec<TaskSpec>>>(&mut self, batches: &mut Peekable<I>) {
        while let Some(batch) = batches.peek() {
            if self.coord.stats().queued + batch.len() > self.queue_capacity {
                break;
            }
            let batch = batches.next().expect("peeked");
            let request = self.next_request;
            self.next_request += 1;
            self.handle(admit(request, batch));
        }
    }

    /// Run until every batch is admitted and every dispatched worker has exited.
    fn run(&mut self, batches: Vec<Vec<TaskSpec>>) {
        let mut batches = batches.into_iter().peekable();
        loop {
            self.admit_while_room(&mut batches);
            let Some(mut walker) = self.walking.pop_front() else {
                assert!(
                    batches.peek().is_none(),
                    "no worker running and the next batch was not admitted"
                );
                return;
            };
            let input = walker.next_input();
            if walker.stage < Walker::STAGES {
                self.walking.push_back(walker);
            } else {
                self.finished += 1;
            }
            self.handle(input);
        }
    }
}

fn batches(specs: Vec<TaskSpec>) -> Vec<Vec<TaskSpec>> {
    let mut out = Vec::with_capacity(specs.len().div_ceil(BATCH));
    let mut specs = specs.into_iter().peekable();
    while specs.peek().is_some() {
        out.push(specs.by_ref().take(BATCH).collect());
    }
    out
}

fn drain_inputs(n: usize) -> (Coordinator, Vec<Vec<TaskSpec>>, Vec<Payload>) {
    (
        coordinator(fleet_policy()),
        batches(reader_specs(n)),
        payloads(n),
    )
}

// ---- worker event stream -------------------------------------------------------------------

/// A coordinator with `RUNNING` generations in `running` (requests and tools at their
/// 1000 ceilings) and their refs.
fn running_fleet() -> (Coordinator, Vec<ChildRef>) {
    let policy = SchedulingPolicy {
        requests: 1000,
        tools: 1000,
        ..fleet_policy()
    };
    let mut coord = coordinator(policy);
    let effects = coord.handle(admit(1, reader_specs(RUNNING)), 1_000);
    assert_eq!(admitted(&effects), Some(RUNNING));
    let children = started(&effects);
    assert_eq!(children.len(), RUNNING, "every child is dispatched at once");
    for &child in &children {
        coord.handle(
            worker(child, WorkerEvent::Ready { transcript: None }),
            1_001,
        );
    }
    (coord, children)
}

/// One 8-event turn per child, round-robin over the children: a request, a tool call,
/// one assistant message with usage, activity and progress lines. With 100,000 events over
/// 16 children each child sees 782 requests and 781 tool starts, under the 1000 limits.
fn event_stream(children: &[ChildRef], events: usize) -> Vec<Input> {
    (0..events)
        .map(|i| {
            let child = children[i % children.len()];
            let turn = i / children.len();
            let event = match turn % 8 {
                0 => WorkerEvent::RequestStart,
                1 => WorkerEvent::Activity(format!("thinking about step {turn}")),
                2 => WorkerEvent::ToolStart {
                    name: "read".to_owned(),
                },
                3 => WorkerEvent::Progress(format!("step {turn}: read src/core/registry.rs")),
                4 => WorkerEvent::ToolEnd {
                    name: "read".to_owned(),
                    is_error: false,
                },
                5 => WorkerEvent::AssistantMessage {
                    text: format!(
                        "The registry keeps identities in admission order (turn {turn}).\n\nNext: admission."
                    ),
                    usage: Some(USAGE),
                },
                6 => WorkerEvent::Activity(format!("grep Identity (turn {turn})")),
                _ => WorkerEvent::Progress(format!("{turn} steps done")),
            };
            worker(child, event)
        })
        .collect()
}

/// Apply the stream; returns the number of effects (all inspected, then dropped).
fn apply(coord: &mut Coordinator, stream: Vec<Input>) -> usize {
    let mut now = 2_000;
    let mut effects = 0;
    for input in stream {
        now += 1;
        let out = coord.handle(input, now);
        effects += out.len();
        black_box(&out);
    }
    effects
}

// ---- list fixture ------------------------------------------------------------------------

/// 500 identities: 468 walked to completion (idle, settled and disposed), 16 running with
/// telemetry and 16 queued.
fn list_fleet() -> Coordinator {
    let done = LIST_IDENTITIES - 2 * RUNNING;
    let (coord, batches, payloads) = drain_inputs(done);
    let mut drain = Drain::new(coord, payloads);
    drain.run(batches);
    assert_eq!(drain.finished, done);
    let mut coord = drain.coord;
    let effects = coord.handle(admit(1_000, reader_specs(2 * RUNNING)), 900_000);
    assert_eq!(admitted(&effects), Some(2 * RUNNING));
    for child in started(&effects) {
        for event in [
            WorkerEvent::Ready { transcript: None },
            WorkerEvent::RequestStart,
            WorkerEvent::ToolStart {
                name: "grep".to_owned(),
            },
            WorkerEvent::AssistantMessage {
                text: "Found 3 call sites.".to_owned(),
                usage: Some(USAGE),
            },
            WorkerEvent::Progress("2/5 modules read".to_owned()),
        ] {
            coord.handle(worker(child, event), 900_001);
        }
    }
    coord
}

// ---- checks run once before measuring -------------------------------------------------------

fn check_scenarios() {
    // admission: 64 admitted, 16 dispatched, 48 queued.
    let mut coord = coordinator(fleet_policy());
    let effects = coord.handle(admit(1, reader_specs(BATCH)), 1_000);
    assert_eq!(admitted(&effects), Some(BATCH));
    assert_eq!(started(&effects).len(), RUNNING);
    assert_eq!(coord.stats().queued, BATCH - RUNNING);

    // queue_drain (small): every item walks to `settled`, nothing left behind.
    let n = 1_000;
    let (coord, batches, payloads) = drain_inputs(n);
    let mut drain = Drain::new(coord, payloads);
    drain.run(batches);
    assert_eq!(drain.finished, n);
    assert_eq!(drain.outcomes, n);
    let stats = drain.coord.stats();
    assert_eq!(
        (stats.queued, stats.active_permits, stats.live_workers),
        (0, 0, 0)
    );
    assert_eq!(stats.open_windows, 0);
    assert!(
        drain
            .coord
            .list()
            .iter()
            .all(|s| s.status == Status::Settled && s.disposed)
    );

    // worker_events: no limit is hit, every event is applied.
    let (mut coord, children) = running_fleet();
    apply(&mut coord, event_stream(&children, STREAM_EVENTS));
    let per_child = STREAM_EVENTS / RUNNING;
    let turns_with = |step: usize| {
        let n = (0..per_child).filter(|turn| turn % 8 == step).count();
        u32::try_from(n).expect("small")
    };
    let (requests, tools) = (turns_with(0), turns_with(2));
    assert!(requests <= 1000 && tools <= 1000);
    for child in &children {
        let snap = coord.snapshot(*child).expect("known child");
        assert_eq!(snap.status, Status::Running);
        assert_eq!(snap.limit_reason, None);
        assert_eq!(snap.telemetry.requests, Some(requests));
        assert_eq!(snap.tool_calls, tools);
        assert!(snap.telemetry.tokens.is_some_and(|t| t.total > 0));
    }

    // list: 500 identities.
    assert_eq!(list_fleet().list().len(), LIST_IDENTITIES);
}

// ---- benchmarks ----------------------------------------------------------------------------

/// Not a benchmark: validates every scenario once, before anything is measured.
fn checks(_: &mut Criterion) {
    check_scenarios();
}

fn admission(c: &mut Criterion) {
    let specs = reader_specs(BATCH);
    let mut group = c.benchmark_group("admission");
    group.throughput(Throughput::Elements(BATCH as u64));
    group.bench_function("batch_64", |b| {
        b.iter_batched(
            || (coordinator(fleet_policy()), admit(1, specs.clone())),
            |(mut coord, input)| {
                let effects = coord.handle(black_box(input), black_box(1_000));
                assert!(!effects.is_empty());
                // Returned so both are dropped outside the timed region.
                (coord, black_box(effects))
            },
            // One input per timed call: batching many fresh 64-identity registries makes
            // glibc hand megabytes back to the kernel between batches, and the timed region
            // then pays for page faults instead of the core (docs/performance.md).
            BatchSize::PerIteration,
        );
    });
    group.finish();
}

fn queue_drain(c: &mut Criterion) {
    let mut group = c.benchmark_group("queue_drain");
    group.sample_size(20);
    group.measurement_time(Duration::from_secs(15));
    group.throughput(Throughput::Elements(DRAIN_ITEMS as u64));
    group.bench_function("10000", |b| {
        b.iter_batched(
            || drain_inputs(DRAIN_ITEMS),
            |(coord, batches, payloads)| {
                let mut drain = Drain::new(coord, payloads);
                drain.run(black_box(batches));
                assert_eq!(drain.finished, DRAIN_ITEMS);
                black_box((drain.effects, drain.outcomes));
                // The 10,000-identity registry is dropped outside the timed region.
                drain.coord
            },
            BatchSize::PerIteration,
        );
    });
    group.finish();
}

fn worker_events(c: &mut Criterion) {
    let (template, children) = running_fleet();
    let stream = event_stream(&children, STREAM_EVENTS);
    let mut group = c.benchmark_group("worker_events");
    group.sample_size(20);
    group.measurement_time(Duration::from_secs(15));
    group.throughput(Throughput::Elements(STREAM_EVENTS as u64));
    group.bench_function("apply", |b| {
        b.iter_batched(
            || (template.clone(), stream.clone()),
            |(mut coord, stream)| {
                let effects = apply(&mut coord, black_box(stream));
                black_box(effects);
                coord
            },
            BatchSize::PerIteration,
        );
    });
    group.finish();
}

fn status(c: &mut Criterion) {
    let coord = list_fleet();
    let mut group = c.benchmark_group("status");
    group.throughput(Throughput::Elements(LIST_IDENTITIES as u64));
    group.bench_function("list_500", |b| {
        b.iter(|| black_box(black_box(&coord).list()));
    });
    group.finish();
}

criterion_group!(
    benches,
    checks,
    admission,
    queue_drain,
    worker_events,
    status
);
criterion_main!(benches);

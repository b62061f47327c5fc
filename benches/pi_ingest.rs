//! Criterion benchmarks of ingesting recorded pi stdout: parse + map + apply.
//!
//! The input is the concatenated stdout of every real pi 1.6 trace in `shared/pi/traces`
//! (`<name>.jsonl`, byte for byte), repeated until it holds at least 50,000 lines. Before
//! each trace's lines, the commands of its `.stdin.jsonl` that Slate would send are recorded
//! with `PiMapper::sent`, so responses are matched by id as in production.
//!
//! * `pi_ingest/parse_map_apply`: `PiMapper::line` on every line, and every resulting worker
//!   event applied with `Coordinator::handle(Input::Worker { child, event })` to a running
//!   child (`get_session_stats` becomes `WorkerEvent::Context`). `Settled`, abort
//!   acknowledgements, session files, response errors and evidence are runtime business and
//!   are not applied (a settle would end the child). The `requests` / `tools` ceilings are
//!   1000, so the stream is cut into whole-pass segments that stay under them, each segment
//!   going to its own running child of the same coordinator: every event takes the normal
//!   (under-limit) path, which is checked before measuring.
//! * `pi_ingest/parse_map`: the same without the coordinator.
//! * `pi_ingest/parse`: `Record::parse` of every line only.
//! * `pi_ingest/serde_json_value`: `serde_json::from_slice::<serde_json::Value>` of the same
//!   lines, the baseline for the ratio.
//!
//! Throughput is in stdout lines (pi records). Figures: `docs/performance.md`.

use std::hint::black_box;
use std::time::Duration;

use criterion::{BatchSize, Criterion, Throughput, criterion_group, criterion_main};
use serde_json::Value;
use slate::core::{
    ChildRef, Coordinator, Effect, Input, MessageId, Party, RequestId, Role, Status, TaskSpec,
    WorkerEvent,
};
use slate::policy::scheduling::SchedulingPolicy;
use slate::worker::pi::mapper::{Output, PiMapper, Sent};
use slate::worker::pi::protocol::Record;
use uuid::Uuid;

const TRACES: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../shared/pi/traces");
const MIN_LINES: usize = 50_000;
const ROOT: Uuid = Uuid::from_u128(0x0b6a_4c1e_8f2d_4a7b_9c3e_5d1f_2a4b_6c8d);
/// The operator ceiling of `requests` and `tools`.
const CEILING: u32 = 1000;

/// One step of the replay.
enum Op {
    Sent(String, Sent),
    /// A byte range of `Corpus::bytes`: one stdout line without its LF.
    Line(usize, usize),
    /// From here on, events go to the next child.
    NextChild,
}

struct Corpus {
    bytes: Vec<u8>,
    ops: Vec<Op>,
    lines: usize,
    children: usize,
}

struct Trace {
    stdout: Vec<u8>,
    stdin: Vec<(String, Value)>,
}

fn traces() -> Vec<Trace> {
    let mut names: Vec<String> = std::fs::read_dir(TRACES)
        .expect("shared/pi/traces")
        .map(|e| e.expect("entry").file_name().into_string().expect("utf-8"))
        .filter_map(|f| {
            let stem = f.strip_suffix(".jsonl")?;
            (!stem.contains('.')).then(|| stem.to_owned())
        })
        .collect();
    names.sort();
    names
        .into_iter()
        .map(|name| {
            let stdout = std::fs::read(format!("{TRACES}/{name}.jsonl")).expect("stdout");
            let stdin = std::fs::read_to_string(format!("{TRACES}/{name}.stdin.jsonl"))
                .unwrap_or_default()
                .lines()
                .filter_map(|l| serde_json::from_str::<Value>(l).ok())
                .filter_map(|v| Some((v["id"].as_str()?.to_owned(), v)))
                .collect();
            Trace { stdout, stdin }
        })
        .collect()
}

/// What Slate would have recorded for one stdin command (as in `tests/pi_protocol.rs`).
fn sent(cmd: &Value, next_message: &mut u128) -> Option<Sent> {
    let text = cmd["message"].as_str().unwrap_or_default().to_owned();
    let mut message = || {
        *next_message += 1;
        MessageId(Uuid::from_u128(*next_message))
    };
    Some(
        match (cmd["type"].as_str()?, cmd["streamingBehavior"].as_str()) {
            ("prompt", None) => Sent::Prompt { text },
            ("steer", _) | ("prompt", Some("steer")) => Sent::Steer {
                message: message(),
                text,
            },
            ("follow_up", _) | ("prompt", Some("followUp")) => Sent::FollowUp {
                message: message(),
                text,
            },
            ("abort", _) => Sent::Abort,
            ("get_state", _) => Sent::GetState,
            ("get_session_stats", _) => Sent::GetSessionStats,
            _ => return None,
        },
    )
}

/// Assistant messages (one per model request) and running tools one pass over every trace
/// produces (what the limits would count; pi workers are counted by their extension's guard).
fn per_pass(traces: &[Trace]) -> (u32, u32) {
    let mut mapper = PiMapper::new();
    let mut next = 0;
    let (mut requests, mut tools) = (0, 0);
    for t in traces {
        for (id, cmd) in &t.stdin {
            if let Some(s) = sent(cmd, &mut next) {
                mapper.sent(id, s);
            }
        }
        for line in t.stdout.split(|b| *b == b'\n') {
            for o in mapper.line(line) {
                match o {
                    Output::Event(WorkerEvent::AssistantStart) => requests += 1,
                    Output::Event(WorkerEvent::ToolRunning { .. }) => tools += 1,
                    _ => {}
                }
            }
        }
    }
    (requests, tools)
}

fn corpus() -> Corpus {
    let traces = traces();
    let (requests, tools) = per_pass(&traces);
    let passes_per_child = (CEILING / requests.max(tools).max(1)) as usize;
    assert!(passes_per_child >= 1, "one pass exceeds the limits");
    let mut corpus = Corpus {
        bytes: Vec::new(),
        ops: Vec::new(),
        lines: 0,
        children: 1,
    };
    let mut next_message = 0;
    let mut pass = 0;
    while corpus.lines < MIN_LINES {
        if pass > 0 && pass % passes_per_child == 0 {
            corpus.ops.push(Op::NextChild);
            corpus.children += 1;
        }
        for t in &traces {
            for (id, cmd) in &t.stdin {
                if let Some(s) = sent(cmd, &mut next_message) {
                    corpus.ops.push(Op::Sent(id.clone(), s));
                }
            }
            for line in t.stdout.split(|b| *b == b'\n').filter(|l| !l.is_empty()) {
                let start = corpus.bytes.len();
                corpus.bytes.extend_from_slice(line);
                corpus.ops.push(Op::Line(start, corpus.bytes.len()));
                corpus.lines += 1;
            }
        }
        pass += 1;
    }
    corpus
}

fn lines(corpus: &Corpus) -> Vec<&[u8]> {
    corpus
        .ops
        .iter()
        .filter_map(|op| match op {
            Op::Line(a, b) => Some(&corpus.bytes[*a..*b]),
            _ => None,
        })
        .collect()
}

/// A coordinator with `n` running scouts (`requests` and `tools` at their ceilings).
fn running(n: usize) -> (Coordinator, Vec<ChildRef>) {
    let policy = SchedulingPolicy {
        concurrency: 16,
        queue: 256,
        batch: 64,
        requests: CEILING,
        tools: CEILING,
        ..SchedulingPolicy::default()
    };
    assert!(n <= 16, "{n} children needed");
    let mut coord = Coordinator::new(ROOT, policy, 0x51A7E).expect("valid policy");
    let specs = (0..n)
        .map(|i| TaskSpec::new(format!("ingest segment {i}"), Role::Scout, "/work/project"))
        .collect();
    let effects = coord.handle(
        Input::Admit {
            request: RequestId(1),
            actor: Party::Root,
            tasks: specs,
            background: true,
        },
        1_000,
    );
    let children: Vec<ChildRef> = effects
        .iter()
        .filter_map(|e| match e {
            Effect::StartWorker(start) => Some(start.child),
            _ => None,
        })
        .collect();
    assert_eq!(children.len(), n, "every child starts");
    for &child in &children {
        coord.handle(
            Input::Worker {
                child,
                event: WorkerEvent::Ready { transcript: None },
            },
            1_001,
        );
    }
    (coord, children)
}

/// Counts of one full ingestion.
#[derive(Debug, Default, PartialEq, Eq)]
struct Tally {
    lines: usize,
    applied: usize,
    effects: usize,
    other_outputs: usize,
}

/// The timed work of `parse_map_apply`.
fn ingest(corpus: &Corpus, coord: &mut Coordinator, children: &[ChildRef]) -> Tally {
    let mut mapper = PiMapper::new();
    let mut tally = Tally::default();
    let mut child = 0;
    let mut now = 2_000;
    for op in &corpus.ops {
        match op {
            Op::Sent(id, s) => mapper.sent(id, s.clone()),
            Op::NextChild => child += 1,
            Op::Line(a, b) => {
                tally.lines += 1;
                for output in mapper.line(&corpus.bytes[*a..*b]) {
                    let event = match output {
                        Output::Event(e) => e,
                        Output::SessionStats(s) => match s.context {
                            Some(c) => WorkerEvent::Context(c),
                            None => continue,
                        },
                        other => {
                            black_box(other);
                            tally.other_outputs += 1;
                            continue;
                        }
                    };
                    now += 1;
                    let effects = coord.handle(
                        Input::Worker {
                            child: children[child],
                            event,
                        },
                        now,
                    );
                    tally.applied += 1;
                    tally.effects += effects.len();
                    black_box(effects);
                }
            }
        }
    }
    tally
}

fn map_only(corpus: &Corpus) -> usize {
    let mut mapper = PiMapper::new();
    let mut outputs = 0;
    for op in &corpus.ops {
        match op {
            Op::Sent(id, s) => mapper.sent(id, s.clone()),
            Op::NextChild => {}
            Op::Line(a, b) => {
                let out = mapper.line(&corpus.bytes[*a..*b]);
                outputs += out.len();
                black_box(out);
            }
        }
    }
    outputs
}

/// Not a benchmark: the scenario is checked once before anything is measured.
fn checks(corpus: &Corpus) {
    let (mut coord, children) = running(corpus.children);
    let tally = ingest(corpus, &mut coord, &children);
    assert!(tally.lines >= MIN_LINES);
    for &child in &children {
        let snap = coord.snapshot(child).expect("child");
        assert_eq!(snap.status, Status::Running, "{child}: a limit tripped");
        assert_eq!(snap.limit_reason, None);
        let requests = snap.telemetry.requests.expect("requests counted");
        assert!(requests > 0 && requests <= CEILING);
        assert!(snap.tool_calls > 0 && snap.tool_calls <= CEILING);
    }
    let parsed = lines(corpus)
        .iter()
        .filter(|l| Record::parse(l).is_ok())
        .count();
    let per_line = u32::try_from(tally.applied).map_or(f64::NAN, f64::from)
        / u32::try_from(tally.lines).map_or(f64::NAN, f64::from);
    eprintln!(
        "pi_ingest corpus: {} lines ({} bytes), {} parse as records, {} children; \
         {} worker events applied ({:.2} per line), {} effects, {} other outputs",
        tally.lines,
        corpus.bytes.len(),
        parsed,
        corpus.children,
        tally.applied,
        per_line,
        tally.effects,
        tally.other_outputs,
    );
}

fn benches(c: &mut Criterion) {
    let corpus = corpus();
    checks(&corpus);
    let all_lines = lines(&corpus);
    let (template, children) = running(corpus.children);

    let mut group = c.benchmark_group("pi_ingest");
    group.sample_size(20);
    group.measurement_time(Duration::from_secs(10));
    group.throughput(Throughput::Elements(corpus.lines as u64));
    group.bench_function("parse_map_apply", |b| {
        b.iter_batched(
            || template.clone(),
            |mut coord| {
                black_box(ingest(black_box(&corpus), &mut coord, &children));
                // The coordinator is dropped outside the timed region.
                coord
            },
            BatchSize::PerIteration,
        );
    });
    group.bench_function("parse_map", |b| {
        b.iter(|| black_box(map_only(black_box(&corpus))));
    });
    group.bench_function("parse", |b| {
        b.iter(|| {
            for line in &all_lines {
                let _ = black_box(Record::parse(black_box(line)));
            }
        });
    });
    group.bench_function("serde_json_value", |b| {
        b.iter(|| {
            for line in &all_lines {
                let _ = black_box(serde_json::from_slice::<Value>(black_box(line)));
            }
        });
    });
    group.finish();
}

criterion_group!(pi_ingest, benches);
criterion_main!(pi_ingest);

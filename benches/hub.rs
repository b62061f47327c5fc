//! The Subagent Hub's frame cost and idle behaviour.
//!
//! * `hub/frame_200x60` — one steady-state frame (prepare + draw into a `TestBackend`) at
//!   200×60 with 10,000 identities in the roster and a 100,000-line transcript in the thread
//!   (LIVE, so the bottom is drawn). Target: ≤ 2 ms.
//! * `hub/select_100k` — switching the selection to the worker with that transcript, as the
//!   loop shows it: the key through the loop's `step` (the selection moves, the `transcript`
//!   read is asked for), then the answer (decoded) through `step` again, which builds the
//!   documents, counts their rows and draws the frame. Target: ≤ 16 ms.
//! * `hub/select_short` — the same switch to a worker with a 20-line transcript.
//! * `hub/selected_change_100k` — one change of the selected worker with that transcript
//!   loaded, as the loop shows it: the registry change through `step` (the read after the
//!   cursor is asked for), then its one-message answer through `step` (appended, counted,
//!   drawn). Target: ≤ 2 ms.
//! * `hub/transcript_decode_100k` — the socket's side of that fetch, for the record: decoding
//!   the whole `transcript` answer line (7 MB of JSON) into the reply the loop receives.
//! * `hub/transcript_100k` — the whole transcript arriving for the selection (`update` +
//!   `prepare`, no draw): building the thread/tools documents and counting their rows.
//! * `hub/transcript_append_100k` — one appended message (`update` + `prepare`, no draw).
//! * `hub/registry_change_10k` — one registry change applied and settled with 10,000
//!   identities (the unfiltered tree keeps its order; the fleet counts are recomputed).
//! * Idle draws are counted, not timed: N simulated seconds through the same `step` the
//!   loop runs, with a tick only when the loop would schedule one. Printed to stderr.

use std::hint::black_box;
use std::time::{Duration, Instant};

use criterion::{BatchSize, Criterion, criterion_group, criterion_main};
use ratatui::Terminal;
use ratatui::backend::TestBackend;
use serde_json::{Value, json};
use uuid::Uuid;

use slate::control::methods::TranscriptResult;
use slate::core::ChildRef;
use slate::core::task::{Limits, Role};
use slate::core::{ChildSnapshot, Status, Telemetry, Window};
use slate::ui::hub::{Hub, HubOptions, HubView, Key, Msg, TranscriptPart, UiEffect, step};

const NOW: u64 = 1_700_000_000_000;
const IDENTITIES: u128 = 10_000;
const TRANSCRIPT_LINES: usize = 100_000;
const IDLE_SECONDS: u64 = 600;

fn snapshot(n: u128, status: Status) -> ChildSnapshot {
    let depth = if n.is_multiple_of(5) { 1 } else { 2 };
    ChildSnapshot {
        id: Uuid::from_u128(n + 1),
        generation: 1,
        parent_id: if depth == 1 {
            Uuid::nil()
        } else {
            Uuid::from_u128(n - n % 5 + 1)
        },
        parent_generation: (depth == 2).then_some(1),
        depth,
        status,
        profile: Role::Scout,
        cwd: "/work/project".to_owned(),
        assignment: format!("Survey module {n} and report every public function it exports"),
        activity: Some(format!("reading src/module_{n}.rs")),
        progress: None,
        result: None,
        model: Some("anthropic/claude-sonnet-4".to_owned()),
        effort: None,
        requested_model: None,
        requested_effort: None,
        logical: None,
        prewalk: None,
        telemetry: Telemetry {
            requests: Some(3),
            tokens: None,
            cost: Some(0.01),
            context: None,
            launch: None,
        },
        error: None,
        transcript: None,
        limits: Limits {
            deadline_ms: 600_000,
            requests: 40,
            tools: 80,
            depth: 2,
            spawns: 4,
        },
        limit_reason: None,
        tool_calls: 1,
        spawns: 0,
        writer_lease: false,
        disposed: status.is_terminal(),
        created_at: NOW - 100_000 + u64::try_from(n).unwrap_or(0),
        ended_at: status.is_terminal().then_some(NOW - 1000),
        outcome: None,
        artifacts: None,
        tools: Vec::new(),
        leaf_tools: Vec::new(),
        skills: Vec::new(),
        capability_denials: Vec::new(),
        pause_reason: None,
        retained_context: false,
        streaming: None,
        retry: None,
        delivered_at: None,
        window: Window {
            number: 1,
            started_at: NOW - 100_000,
            deadline_at: NOW + 500_000,
        },
    }
}

fn fleet(status: impl Fn(u128) -> Status) -> Vec<ChildSnapshot> {
    (0..IDENTITIES).map(|n| snapshot(n, status(n))).collect()
}

/// 1,000 assistant messages of 100 lines each.
fn transcript() -> Vec<Value> {
    messages_of(TRANSCRIPT_LINES)
}

/// `lines / 100` assistant messages of 100 lines each (one of `lines` lines when fewer).
fn messages_of(lines: usize) -> Vec<Value> {
    if lines < 100 {
        let text: Vec<String> = (0..lines)
            .map(|l| format!("line {l}: the quick brown fox jumps over the lazy dog"))
            .collect();
        return vec![
            json!({"role": "assistant", "content": [{"type": "text", "text": text.join("\n")}]}),
        ];
    }
    (0..lines / 100)
        .map(|m| {
            let text: Vec<String> = (0..100)
                .map(|l| {
                    format!("message {m} line {l}: the quick brown fox jumps over the lazy dog")
                })
                .collect();
            json!({"role": "assistant", "content": [{"type": "text", "text": text.join("\n")}]})
        })
        .collect()
}

fn loaded_hub(snapshots: Vec<ChildSnapshot>, w: u16, h: u16) -> Hub {
    let mut hub = Hub::new(HubOptions::default(), NOW);
    hub.update(Msg::Resize(w, h));
    hub.update(Msg::Loaded {
        snapshots,
        agents: Vec::new(),
        at: NOW,
    });
    hub.settle();
    hub
}

/// A 200×60 Hub on a fleet where every third worker runs and the rest have settled.
fn mixed_hub() -> Hub {
    loaded_hub(
        fleet(|n| {
            if n % 3 == 0 {
                Status::Running
            } else {
                Status::Settled
            }
        }),
        200,
        60,
    )
}

fn bench(c: &mut Criterion) {
    let messages = transcript();
    let mut hub = mixed_hub();
    let target = hub.selected().expect("a selection");
    hub.update(Msg::Transcript {
        target,
        result: Ok(messages.clone().into()),
    });
    hub.prepare();
    let mut terminal = Terminal::new(TestBackend::new(200, 60)).expect("terminal");
    c.bench_function("hub/frame_200x60", |b| {
        b.iter(|| {
            hub.prepare();
            terminal
                .draw(|f| f.render_widget(&HubView::new(&hub), f.area()))
                .expect("draw");
            // A steady frame still diffs the whole buffer: force every cell to redraw.
            terminal.swap_buffers();
        });
    });
    c.bench_function("hub/transcript_100k", |b| {
        b.iter_batched(
            || messages.clone(),
            |m| {
                hub.update(Msg::Transcript {
                    target,
                    result: Ok(m.into()),
                });
                hub.prepare();
            },
            BatchSize::LargeInput,
        );
    });
    // Back to the whole transcript, then one appended message per change.
    hub.update(Msg::Transcript {
        target,
        result: Ok(TranscriptPart {
            after: None,
            messages: messages.clone(),
            cursor: 0,
            restarted: false,
        }),
    });
    hub.prepare();
    let mut cursor = 0u64;
    c.bench_function("hub/transcript_append_100k", |b| {
        b.iter(|| {
            let message = json!({"role": "assistant", "content": [{"type": "text",
                "text": format!("appended after byte {cursor}: the quick brown fox jumps over the lazy dog\nand a second line")}]});
            hub.update(Msg::Transcript {
                target,
                result: Ok(TranscriptPart {
                    after: Some(cursor),
                    messages: vec![message],
                    cursor: cursor + 1,
                    restarted: false,
                }),
            });
            cursor += 1;
            hub.prepare();
        });
    });
    c.bench_function("hub/registry_change_10k", |b| {
        let one = snapshot(7, Status::Running);
        b.iter(|| {
            hub.update(Msg::Registry {
                child: Box::new(one.clone()),
                at: NOW,
            });
            black_box(hub.settle());
        });
    });
    loop_benches(c, &messages);
    idle_draws();
}

/// The `transcript` read a step asked for, if any.
fn fetch(effects: &[UiEffect]) -> Option<(ChildRef, Option<u64>)> {
    effects.iter().find_map(|e| match e {
        UiEffect::FetchTranscript { target, after } => Some((*target, *after)),
        _ => None,
    })
}

/// A key, then the transcript answer for the selection it makes, through the loop's `step`.
fn switch(
    hub: &mut Hub,
    terminal: &mut Terminal<TestBackend>,
    key: Key,
    messages: Vec<Value>,
) -> ChildRef {
    let done = step(hub, vec![Msg::Key(key)], terminal).expect("step");
    let (target, after) = fetch(&done.effects).expect("a transcript read");
    let answer = Msg::Transcript {
        target,
        result: Ok(TranscriptPart {
            after,
            messages,
            cursor: 1,
            restarted: false,
        }),
    };
    let done = step(hub, vec![answer], terminal).expect("step");
    assert!(done.drew, "the answer is drawn");
    target
}

/// What the loop does, timed through its own `step`: selection switches, a change of the
/// selected worker, and the socket answer's decoding.
fn loop_benches(c: &mut Criterion, messages: &[Value]) {
    let short = messages_of(20);
    let mut hub = mixed_hub();
    let mut terminal = Terminal::new(TestBackend::new(200, 60)).expect("terminal");
    let _ = step(&mut hub, Vec::new(), &mut terminal).expect("first frame");
    // Row 0 is the worker with the long transcript; rows 1 and 2 get short ones.
    let mut row = 0;
    let mut timed = |hub: &mut Hub, terminal: &mut Terminal<TestBackend>, iters: u64, big: bool| {
        let mut total = Duration::ZERO;
        for _ in 0..iters {
            // Untimed: the selection on row 1 with its transcript loaded.
            if row != 1 {
                let key = if row == 0 { Key::Down } else { Key::Up };
                let _ = switch(hub, terminal, key, short.clone());
            }
            let (key, answer, to) = if big {
                (Key::Up, messages.to_vec(), 0)
            } else {
                (Key::Down, short.clone(), 2)
            };
            let start = Instant::now();
            black_box(switch(hub, terminal, key, answer));
            total += start.elapsed();
            row = to;
        }
        total
    };
    c.bench_function("hub/select_100k", |b| {
        b.iter_custom(|iters| timed(&mut hub, &mut terminal, iters, true));
    });
    c.bench_function("hub/select_short", |b| {
        b.iter_custom(|iters| timed(&mut hub, &mut terminal, iters, false));
    });
    // The long transcript selected and loaded; then changes of that worker.
    for at in (1..=row).rev() {
        let answer = if at == 1 {
            messages.to_vec()
        } else {
            short.clone()
        };
        let _ = switch(&mut hub, &mut terminal, Key::Up, answer);
    }
    let mut changed = snapshot(0, Status::Running);
    let mut requests = 3;
    c.bench_function("hub/selected_change_100k", |b| {
        b.iter(|| {
            requests += 1;
            changed.telemetry.requests = Some(requests);
            let done = step(
                &mut hub,
                vec![Msg::Registry {
                    child: Box::new(changed.clone()),
                    at: NOW,
                }],
                &mut terminal,
            )
            .expect("step");
            let (target, after) = fetch(&done.effects).expect("a transcript read");
            let message = json!({"role": "assistant", "content": [{"type": "text",
                "text": format!("request {requests}: the quick brown fox jumps over the lazy dog\nand a second line")}]});
            let answer = Msg::Transcript {
                target,
                result: Ok(TranscriptPart {
                    after,
                    messages: vec![message],
                    cursor: after.unwrap_or(0) + 1,
                    restarted: false,
                }),
            };
            let done = step(&mut hub, vec![answer], &mut terminal).expect("step");
            assert!(done.drew);
        });
    });
    let line = serde_json::to_string(&json!({
        "target": format!("{}@1", snapshot(0, Status::Running).id),
        "messages": messages,
        "cursor": 7_000_000,
    }))
    .expect("answer");
    c.bench_function("hub/transcript_decode_100k", |b| {
        b.iter(|| {
            let answer: TranscriptResult = serde_json::from_str(&line).expect("decodes");
            black_box(answer)
        });
    });
}

/// Draws over `IDLE_SECONDS` simulated seconds with nothing happening, ticking only when the
/// loop would (an active row visible).
fn idle_draws() {
    for (name, snapshots) in [
        ("every row terminal", fleet(|_| Status::Settled)),
        (
            "active rows visible",
            fleet(|n| {
                if n % 3 == 0 {
                    Status::Running
                } else {
                    Status::Settled
                }
            }),
        ),
    ] {
        let mut hub = loaded_hub(snapshots, 200, 60);
        let mut terminal = Terminal::new(TestBackend::new(200, 60)).expect("terminal");
        let _ = step(&mut hub, Vec::new(), &mut terminal).expect("first frame");
        let mut draws = 0u64;
        let mut ticks = 0u64;
        for s in 1..=IDLE_SECONDS {
            if hub.wants_tick() {
                ticks += 1;
                let done =
                    step(&mut hub, vec![Msg::Tick(NOW + s * 1000)], &mut terminal).expect("step");
                draws += u64::from(done.drew);
            }
        }
        eprintln!(
            "hub/idle {name}: {draws} draws, {ticks} ticks over {IDLE_SECONDS} simulated seconds ({:.2} draws/s)",
            f64::from(u32::try_from(draws).unwrap_or(u32::MAX)) / 600.0
        );
    }
}

criterion_group!(benches, bench);
criterion_main!(benches);

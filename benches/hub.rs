//! The Subagent Hub's frame cost and idle behaviour.
//!
//! * `hub/frame_200x60` — one steady-state frame (prepare + draw into a `TestBackend`) at
//!   200×60 with 10,000 identities in the roster and a 100,000-line transcript in the thread
//!   (LIVE, so the bottom is drawn). Target: ≤ 2 ms.
//! * `hub/transcript_100k` — the one-off cost when that transcript arrives whole (a new
//!   selection or generation): building the thread/tools documents and wrapping them to the
//!   pane width.
//! * `hub/transcript_append_100k` — one change of the selected worker with that transcript
//!   loaded: the `transcript` read after the cursor answers one new message, which is
//!   appended to the documents and wrapped (the rest is not rebuilt). Target: ≤ 2 ms.
//! * `hub/registry_change_10k` — one registry change applied and settled with 10,000
//!   identities (the unfiltered tree keeps its order; the fleet counts are recomputed).
//! * Idle draws are counted, not timed: N simulated seconds through the same `step` the
//!   loop runs, with a tick only when the loop would schedule one. Printed to stderr.

use std::hint::black_box;

use criterion::{BatchSize, Criterion, criterion_group, criterion_main};
use ratatui::Terminal;
use ratatui::backend::TestBackend;
use serde_json::{Value, json};
use uuid::Uuid;

use slate::core::task::{Limits, Role};
use slate::core::{ChildSnapshot, Status, Telemetry, Window};
use slate::ui::hub::{Hub, HubOptions, HubView, Msg, TranscriptPart, step};

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
    (0..TRANSCRIPT_LINES / 100)
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

fn bench(c: &mut Criterion) {
    let messages = transcript();
    let mut hub = loaded_hub(
        fleet(|n| {
            if n % 3 == 0 {
                Status::Running
            } else {
                Status::Settled
            }
        }),
        200,
        60,
    );
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
    idle_draws();
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

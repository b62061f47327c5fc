//! The fleet widget: one named test per rule of spec 003's Subagents widget paragraph,
//! snapshots at tiny, compact and wide sizes, width fitting and the injection corpus.

use ratatui::backend::TestBackend;
use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::widgets::Widget;
use ratatui::{Terminal, TerminalOptions, Viewport};
use serde_json::{Value, json};
use slate::core::{ChildSnapshot, Status};
use slate::ui::fleet::{Fleet, FleetView, draw, line_width, plain_lines};
use uuid::Uuid;

const NOW: u64 = 1_700_000_100_000;

fn id(n: u128) -> Uuid {
    Uuid::from_u128(0x1000_0000_0000_4000_8000_0000_0000_0000 + n)
}

const ROOT: u128 = 0xfff;

/// A snapshot from JSON, so only the fields a test cares about are spelled out.
fn snap(n: u128, status: &str, patch: &Value) -> ChildSnapshot {
    let mut v = json!({
        "id": id(n),
        "generation": 1,
        "parentId": id(ROOT),
        "depth": 1,
        "status": status,
        "profile": "scout",
        "cwd": "/w",
        "assignment": format!("task {n}"),
        "activity": null,
        "progress": null,
        "result": null,
        "model": null,
        "effort": null,
        "telemetry": {"requests": 2, "tokens": {"input": 1, "output": 1, "cacheRead": 0, "cacheWrite": 0, "total": 1500}, "cost": 0.0123, "context": null},
        "limits": {"deadlineMs": 600_000, "requests": 100, "tools": 100, "depth": 2, "spawns": 4},
        "toolCalls": 0,
        "spawns": 0,
        "writerLease": false,
        "disposed": false,
        "createdAt": NOW - 12_300 - u64::try_from(n).expect("small"),
        "endedAt": null,
        "tools": [],
        "leafTools": [],
        "skills": [],
        "capabilityDenials": [],
        "retainedContext": false,
        "window": {"number": 1, "startedAt": NOW - 12_300, "deadlineAt": NOW + 600_000},
    });
    let terminal = matches!(status, "settled" | "failed" | "cancelled");
    if terminal {
        v["disposed"] = json!(true);
        v["endedAt"] = json!(NOW - 1000 + u64::try_from(n).expect("small"));
    }
    if let (Some(base), Some(patch)) = (v.as_object_mut(), patch.as_object()) {
        for (k, val) in patch {
            base.insert(k.clone(), val.clone());
        }
    }
    serde_json::from_value(v).expect("a valid snapshot")
}

fn fleet(snaps: Vec<ChildSnapshot>) -> Fleet {
    let mut f = Fleet::new();
    f.replace(snaps);
    f
}

fn render(f: &Fleet, width: u16, height: u16) -> Buffer {
    let area = Rect::new(0, 0, width, height);
    let mut buf = Buffer::empty(area);
    (&FleetView::new(f, NOW)).render(area, &mut buf);
    buf
}

fn text(buf: &Buffer) -> String {
    let area = buf.area;
    let mut out = String::new();
    for y in 0..area.height {
        let mut line = String::new();
        for x in 0..area.width {
            line.push_str(buf[(x, y)].symbol());
        }
        out.push_str(line.trim_end());
        out.push('\n');
    }
    out
}

fn mixed() -> Fleet {
    fleet(vec![
        snap(
            1,
            "running",
            &json!({"assignment": "Find the flaky test in the CI pipeline and explain it", "activity": "read src/scheduler.rs", "writerLease": true, "profile": "implementation", "toolCalls": 7}),
        ),
        snap(
            2,
            "running",
            &json!({"parentId": id(1), "depth": 2, "assignment": "List the callers of admit()", "activity": "grep admit"}),
        ),
        snap(3, "queued", &json!({"profile": "review"})),
        snap(4, "queued", &json!({})),
        snap(
            5,
            "settled",
            &json!({"result": "The test races the 1 s tick.\nDetails follow."}),
        ),
        snap(
            6,
            "failed",
            &json!({"error": "request limit reached", "telemetry": {"requests": null, "tokens": null, "cost": null, "context": null}}),
        ),
        snap(
            7,
            "paused",
            &json!({"pauseReason": "deadline", "profile": "general"}),
        ),
        snap(
            8,
            "setup",
            &json!({"telemetry": {"requests": null, "tokens": null, "cost": null, "context": null}}),
        ),
    ])
}

#[test]
fn empty_registry_renders_zero_rows() {
    let f = Fleet::new();
    let view = FleetView::new(&f, NOW);
    assert!(view.lines(80, 10).is_empty());
    assert_eq!(view.wanted_height(10), 0);
    assert_eq!(text(&render(&f, 80, 5)).trim(), "");
    // After a runtime reset (a full read of an empty registry) it is empty again.
    let mut f = mixed();
    f.replace(Vec::new());
    assert!(FleetView::new(&f, NOW).lines(80, 10).is_empty());
}

#[test]
fn admitted_queued_setup_and_retained_terminal_work_stays_visible() {
    let out = text(&render(&mixed(), 120, 14));
    assert!(out.contains("setup"), "{out}");
    assert!(out.contains("2 queued"), "{out}");
    assert!(out.contains("settled"), "{out}");
    assert!(out.contains("failed"), "{out}");
}

#[test]
fn queued_entries_are_collapsed_into_a_count() {
    let f = fleet(vec![
        snap(1, "queued", &json!({"assignment": "queued one"})),
        snap(
            2,
            "queued",
            &json!({"assignment": "queued two", "profile": "review"}),
        ),
        snap(3, "queued", &json!({"assignment": "queued three"})),
        snap(4, "running", &json!({})),
    ]);
    let out = text(&render(&f, 100, 10));
    assert!(out.contains("⋯ 3 queued (scout 2 · review 1)"), "{out}");
    assert!(
        !out.contains("queued one"),
        "queued rows are not listed: {out}"
    );
    assert_eq!(out.lines().filter(|l| !l.is_empty()).count(), 3, "{out}");
}

#[test]
fn overflow_is_counted() {
    let snaps = (1..=10).map(|n| snap(n, "running", &json!({}))).collect();
    let f = fleet(snaps);
    let view = FleetView::new(&f, NOW);
    let layout = view.layout(5);
    // header + 3 rows + "+7 more"
    assert_eq!(layout.shown.len(), 3);
    assert_eq!(layout.queued, 0);
    assert_eq!(layout.overflow, 7);
    let out = text(&render(&f, 80, 5));
    assert!(out.contains("+7 more"), "{out}");
    // Everything fits: no overflow line.
    assert!(!text(&render(&f, 80, 11)).contains("more"));
}

#[test]
fn live_rows_win_over_the_queue_line_when_space_is_short() {
    let f = fleet(vec![
        snap(1, "running", &json!({})),
        snap(2, "running", &json!({})),
        snap(3, "queued", &json!({})),
    ]);
    let view = FleetView::new(&f, NOW);
    assert_eq!(view.layout(3).shown.len(), 2);
    assert_eq!(view.layout(3).queued, 0);
    let out = text(&render(&f, 80, 3));
    assert!(
        out.lines().next().unwrap().contains("1 queued"),
        "the header still counts it: {out}"
    );
    assert_eq!(view.layout(4).queued, 1);
}

#[test]
fn live_work_is_shown_before_terminal_rows_and_terminal_rows_are_kept_within_the_budget() {
    let f = fleet(vec![
        snap(1, "settled", &json!({"createdAt": NOW - 90_000})),
        snap(2, "failed", &json!({})),
        snap(3, "running", &json!({"createdAt": NOW - 5_000})),
    ]);
    let view = FleetView::new(&f, NOW);
    let layout = view.layout(10);
    assert_eq!(layout.shown[0].id, id(3), "live first");
    // Terminal rows: the newest end first.
    assert_eq!(layout.shown[1].id, id(2));
    assert_eq!(layout.shown[2].id, id(1));
    // A budget of three lines keeps the live row and counts the rest.
    let tight = view.layout(3);
    assert_eq!(tight.shown.len(), 1);
    assert_eq!(tight.shown[0].id, id(3));
    assert_eq!(tight.overflow, 2);
}

#[test]
fn tree_indentation_follows_real_depth() {
    let f = fleet(vec![
        snap(1, "running", &json!({"assignment": "parent"})),
        snap(
            2,
            "running",
            &json!({"parentId": id(1), "depth": 2, "assignment": "child"}),
        ),
        snap(
            3,
            "running",
            &json!({"parentId": id(2), "depth": 3, "assignment": "grandchild"}),
        ),
    ]);
    let out = text(&render(&f, 100, 6));
    let rows: Vec<&str> = out.lines().skip(1).take(3).collect();
    assert!(rows[0].starts_with("● scout parent"), "{out}");
    assert!(rows[1].starts_with("  ● scout child"), "{out}");
    assert!(rows[2].starts_with("    ● scout grandchild"), "{out}");
}

#[test]
fn unknown_usage_is_omitted_and_a_reported_zero_is_kept() {
    let unknown =
        json!({"telemetry": {"requests": null, "tokens": null, "cost": null, "context": null}});
    let out = text(&render(&fleet(vec![snap(1, "running", &unknown)]), 120, 3));
    assert!(!out.contains("req"), "{out}");
    assert!(!out.contains("tok"), "{out}");
    assert!(!out.contains('$'), "{out}");
    assert!(!out.contains(" 0 "), "{out}");
    let zero = json!({"telemetry": {"requests": 0, "tokens": null, "cost": 0.0, "context": null}});
    let out = text(&render(&fleet(vec![snap(1, "running", &zero)]), 120, 3));
    assert!(out.contains("0 req"), "{out}");
    assert!(out.contains("$0.0000"), "{out}");
}

#[test]
fn requests_are_never_called_turns() {
    let f = mixed();
    for width in [40, 80, 200] {
        let out = text(&render(&f, width, 12)).to_lowercase();
        assert!(!out.contains("turn"), "{out}");
    }
    assert!(text(&render(&f, 200, 12)).contains("2 req"));
}

#[test]
fn no_context_percentage_is_synthesized() {
    let ctx = json!({"telemetry": {"requests": 3, "tokens": null, "cost": null,
        "context": {"tokens": 50_000, "contextWindow": 200_000, "percent": 25.0}}});
    let out = text(&render(&fleet(vec![snap(1, "running", &ctx)]), 200, 3));
    assert!(!out.contains('%'), "{out}");
    assert!(!out.contains("25"), "{out}");
}

#[test]
fn elapsed_is_admission_to_render_time_or_to_disposal() {
    let live = snap(1, "running", &json!({"createdAt": NOW - 12_300}));
    assert_eq!(slate::ui::fleet::elapsed(&live, NOW), "12.3s");
    assert_eq!(slate::ui::fleet::elapsed(&live, NOW + 60_000), "1m12s");
    let out = text(&render(&fleet(vec![live]), 120, 3));
    assert!(out.contains("12.3s"), "{out}");
    // Disposed: admission to disposal, whatever the render time.
    let done = snap(
        2,
        "settled",
        &json!({"createdAt": NOW - 10_000, "endedAt": NOW - 7_500}),
    );
    assert_eq!(slate::ui::fleet::elapsed(&done, NOW), "2.5s");
    assert_eq!(slate::ui::fleet::elapsed(&done, NOW + 3_600_000), "2.5s");
}

#[test]
fn the_tick_runs_only_while_an_active_row_is_visible() {
    let f = fleet(vec![snap(1, "settled", &json!({}))]);
    assert!(!FleetView::new(&f, NOW).ticking(5));
    let f = fleet(vec![snap(1, "running", &json!({}))]);
    assert!(FleetView::new(&f, NOW).ticking(5));
    // Queued work is collapsed (no elapsed shown): no tick for it.
    let f = fleet(vec![snap(1, "queued", &json!({}))]);
    assert!(!FleetView::new(&f, NOW).ticking(5));
    assert!(!FleetView::new(&Fleet::new(), NOW).ticking(5));
}

#[test]
fn writer_warning_only_with_a_real_lease() {
    // An implementation profile without the lease gets no warning.
    let f = fleet(vec![snap(
        1,
        "running",
        &json!({"profile": "implementation"}),
    )]);
    assert!(!text(&render(&f, 200, 3)).contains("writer"));
    let f = fleet(vec![snap(
        1,
        "running",
        &json!({"profile": "implementation", "writerLease": true}),
    )]);
    assert!(text(&render(&f, 200, 3)).contains("✎ writer"));
}

#[test]
fn finished_rows_are_emitted_once() {
    let mut f = fleet(vec![snap(1, "running", &json!({}))]);
    assert!(f.take_finished().is_empty());
    // Terminal but not yet disposed: not finished.
    f.apply(snap(
        1,
        "settled",
        &json!({"disposed": false, "endedAt": null}),
    ));
    assert!(f.take_finished().is_empty());
    f.apply(snap(1, "settled", &json!({})));
    let first = f.take_finished();
    assert_eq!(first.len(), 1);
    assert!(f.take_finished().is_empty(), "handed out exactly once");
    // A repeated event or a full re-read does not print it again.
    f.apply(snap(1, "settled", &json!({})));
    f.replace(vec![snap(1, "settled", &json!({}))]);
    assert!(f.take_finished().is_empty());
}

#[test]
fn rows_finished_before_attaching_are_not_printed_above() {
    let mut f = fleet(vec![
        snap(1, "settled", &json!({})),
        snap(2, "running", &json!({})),
    ]);
    f.baseline();
    assert!(f.take_finished().is_empty());
    f.apply(snap(2, "failed", &json!({})));
    assert_eq!(f.take_finished().len(), 1);
}

#[test]
fn a_late_event_of_an_older_generation_is_ignored() {
    let mut f = fleet(vec![snap(
        1,
        "running",
        &json!({"generation": 2, "assignment": "second"}),
    )]);
    f.apply(snap(
        1,
        "settled",
        &json!({"generation": 1, "assignment": "first"}),
    ));
    let out = text(&render(&f, 100, 3));
    assert!(out.contains("second") && out.contains("running"), "{out}");
}

#[test]
fn finished_lines_scroll_away_above_the_inline_viewport_once() {
    let backend = TestBackend::new(160, 8);
    let mut terminal = Terminal::with_options(
        backend,
        TerminalOptions {
            viewport: Viewport::Inline(4),
        },
    )
    .expect("terminal");
    let mut f = fleet(vec![snap(1, "running", &json!({"assignment": "alpha"}))]);
    draw(&mut terminal, &mut f, NOW).expect("draw");
    f.apply(snap(
        1,
        "settled",
        &json!({"assignment": "alpha", "result": "done well"}),
    ));
    draw(&mut terminal, &mut f, NOW).expect("draw");
    draw(&mut terminal, &mut f, NOW + 1000).expect("draw");
    let backend = terminal.backend();
    let all = format!("{}{}", text(backend.scrollback()), text(backend.buffer()));
    let record = format!("{}@1", id(1));
    assert_eq!(all.matches(&record).count(), 1, "{all}");
    assert!(all.contains("✓ scout alpha"), "{all}");
}

#[test]
fn every_line_fits_at_every_width() {
    let f = mixed();
    for width in [1u16, 4, 40, 80, 200] {
        for height in [1u16, 2, 3, 5, 12] {
            let view = FleetView::new(&f, NOW);
            let lines = view.lines(width, height);
            assert!(lines.len() <= usize::from(height));
            for line in &lines {
                assert!(
                    line_width(line) <= usize::from(width),
                    "width {width}: {line:?}"
                );
            }
            // The buffer render does not panic either.
            let _ = render(&f, width, height);
        }
        for s in f.snapshots() {
            let line = slate::ui::fleet::finished_line(s, usize::from(width));
            assert!(line_width(&line) <= usize::from(width));
        }
    }
}

#[test]
fn snapshot_tiny() {
    insta::assert_snapshot!(text(&render(&mixed(), 24, 3)));
}

#[test]
fn snapshot_compact() {
    insta::assert_snapshot!(text(&render(&mixed(), 60, 8)));
}

#[test]
fn snapshot_wide() {
    insta::assert_snapshot!(text(&render(&mixed(), 140, 12)));
}

/// Terminal-injection corpus: none of it may reach the screen buffer.
pub const CORPUS: [&str; 8] = [
    "csi \u{1b}[2J\u{1b}[31mred\u{1b}[0m",
    "osc52 \u{1b}]52;c;cm0gLXJmIH4=\u{7}",
    "osc8 \u{1b}]8;;https://evil.example\u{1b}\\link\u{1b}]8;;\u{1b}\\",
    "dcs \u{1b}P1$qm\u{1b}\\",
    "c1 \u{9b}2J \u{9d}0;title\u{9c} \u{85}",
    "bidi \u{202e}txt.exe\u{2066}x\u{2069}",
    "reset \u{1b}c",
    "bell \u{7} bs \u{8} del \u{7f}",
];

fn assert_clean(buf: &Buffer) {
    for cell in &buf.content {
        for c in cell.symbol().chars() {
            assert!(
                !c.is_control()
                    && !matches!(c, '\u{061C}' | '\u{200E}' | '\u{200F}' | '\u{202A}'..='\u{202E}' | '\u{2066}'..='\u{2069}'),
                "control {c:?} reached the buffer"
            );
        }
    }
    let all = text(buf);
    for leak in ["52;", "]8;", "evil.example", "[2J", "$qm", "[31m"] {
        assert!(!all.contains(leak), "{leak} leaked: {all}");
    }
}

#[test]
fn injection_corpus_never_reaches_the_buffer() {
    for (i, raw) in CORPUS.iter().enumerate() {
        let n = u128::try_from(i).unwrap() + 1;
        let f = fleet(vec![
            snap(n, "running", &json!({"assignment": raw, "activity": raw})),
            snap(
                n + 100,
                "settled",
                &json!({"assignment": raw, "result": raw}),
            ),
            snap(n + 200, "failed", &json!({"assignment": raw, "error": raw})),
        ]);
        for width in [4u16, 80, 200] {
            assert_clean(&render(&f, width, 6));
        }
        let mut terminal = Terminal::with_options(
            TestBackend::new(200, 10),
            TerminalOptions {
                viewport: Viewport::Inline(4),
            },
        )
        .expect("terminal");
        let mut f = f;
        draw(&mut terminal, &mut f, NOW).expect("draw");
        assert_clean(terminal.backend().buffer());
        assert_clean(terminal.backend().scrollback());
    }
}

#[test]
fn statuses_render_their_actual_names() {
    for status in [
        Status::Setup,
        Status::Running,
        Status::Pausing,
        Status::Draining,
        Status::Settled,
        Status::Failed,
        Status::Cancelled,
    ] {
        let f = fleet(vec![snap(1, status.as_str(), &json!({}))]);
        let out = text(&render(&f, 120, 3));
        assert!(out.contains(status.as_str()), "{out}");
    }
}

#[test]
fn watch_without_a_terminal_exits_2_and_points_to_status() {
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_slate"))
        .arg("watch")
        .output()
        .expect("slate runs");
    assert_eq!(out.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("slate status"), "{stderr}");
    assert!(out.stdout.is_empty());
}

/// `slate watch --lines` (pi's widget): the very rows the inline widget draws, as text.
#[test]
fn plain_lines_are_the_widgets_rows_as_text() {
    assert!(plain_lines(&Fleet::new(), NOW, 100, 12).is_empty());
    let f = mixed();
    for width in [1u16, 4, 40, 100, 200] {
        let lines = plain_lines(&f, NOW, width, 12);
        let drawn = text(&render(&f, width, 12));
        let drawn: Vec<&str> = drawn.lines().take(lines.len()).collect();
        assert_eq!(lines, drawn, "width {width}");
        assert!(!lines.is_empty() && lines.len() <= 12);
        for line in &lines {
            let columns = unicode_width::UnicodeWidthStr::width(line.as_str());
            assert!(columns <= usize::from(width), "{line:?} wider than {width}");
            assert_eq!(line.trim_end(), line);
        }
    }
    // The header counts, then one row per generation (queued ones collapsed).
    let wide = plain_lines(&f, NOW, 200, 12);
    assert!(
        wide[0].starts_with("Subagents") && wide[0].contains("2 running"),
        "{wide:?}"
    );
    assert!(
        wide.iter().any(|l| l.contains("Find the flaky test")),
        "{wide:?}"
    );
}

#[test]
fn plain_lines_keep_at_most_the_rows_asked_for() {
    let many: Vec<ChildSnapshot> = (1..=40).map(|n| snap(n, "running", &json!({}))).collect();
    let f = fleet(many);
    let lines = plain_lines(&f, NOW, 100, 12);
    assert_eq!(lines.len(), 12);
    assert!(lines[11].contains("more"), "{lines:?}");
}

#[test]
fn plain_lines_write_a_wide_character_once() {
    let f = fleet(vec![snap(
        1,
        "running",
        &json!({"assignment": "修复 登录 页面"}),
    )]);
    let lines = plain_lines(&f, NOW, 100, 12);
    assert!(
        lines.iter().any(|l| l.contains("修复 登录 页面")),
        "{lines:?}"
    );
}

#[test]
fn plain_lines_carry_no_control_of_the_injection_corpus() {
    for raw in CORPUS {
        let f = fleet(vec![
            snap(1, "running", &json!({"assignment": raw, "activity": raw})),
            snap(2, "failed", &json!({"assignment": raw, "error": raw})),
        ]);
        for line in plain_lines(&f, NOW, 200, 12) {
            assert!(
                !line.chars().any(|c| c.is_control()
                    || matches!(c, '\u{061C}' | '\u{200E}' | '\u{200F}' | '\u{202A}'..='\u{202E}' | '\u{2066}'..='\u{2069}')),
                "{line:?}"
            );
            for leak in ["52;", "]8;", "evil.example", "[2J", "$qm", "[31m"] {
                assert!(!line.contains(leak), "{leak} leaked: {line}");
            }
        }
    }
}

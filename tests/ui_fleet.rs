//! The fleet widget: one named test per rule of spec 003's Subagents widget paragraph,
//! snapshots at tiny, compact and wide sizes, width fitting and the injection corpus.

use ratatui::backend::TestBackend;
use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::widgets::Widget;
use ratatui::{Terminal, TerminalOptions, Viewport};
use serde_json::{Value, json};
use slate::core::{ChildSnapshot, Status};
use slate::ui::fleet::{
    Fleet, FleetView, KEEP_DELIVERED, draw, line_width, plain_lines, styled_lines,
};
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
    assert!(rows[0].starts_with("● scout 10000000 parent"), "{out}");
    assert!(rows[1].starts_with("  ● scout 10000000 child"), "{out}");
    assert!(
        rows[2].starts_with("    ● scout 10000000 grandchild"),
        "{out}"
    );
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

/// A snapshot whose id is `hex` repeated (so its handle is distinct and known).
fn distinct(hex: char, n: u128, status: &str, patch: &Value) -> ChildSnapshot {
    let mut s = snap(n, status, patch);
    let digits: String = std::iter::repeat_n(hex, 32).collect();
    s.id = Uuid::parse_str(&digits).expect("hex");
    s
}

/// The text of a line with its SGR sequences removed (each is `ESC [ params m`).
fn strip_sgr(line: &str) -> String {
    let mut out = String::new();
    let mut rest = line;
    while let Some(at) = rest.find('\x1b') {
        out.push_str(&rest[..at]);
        let tail = &rest[at..];
        assert!(tail.starts_with("\x1b["), "only SGR is written: {line:?}");
        let end = tail
            .find('m')
            .unwrap_or_else(|| panic!("an unterminated SGR in {line:?}"));
        assert!(
            tail[2..end].chars().all(|c| c.is_ascii_digit() || c == ';'),
            "only SGR is written: {line:?}"
        );
        rest = &tail[end + 1..];
    }
    out.push_str(rest);
    out
}

#[test]
fn every_row_shows_its_short_handle_and_generation() {
    let mut second = distinct('b', 2, "running", &json!({"assignment": "second"}));
    second.generation = 3;
    let f = fleet(vec![
        distinct('a', 1, "running", &json!({"assignment": "first"})),
        second,
    ]);
    let out = text(&render(&f, 100, 4));
    assert!(out.contains("● scout aaaaaaaa first"), "{out}");
    assert!(out.contains("● scout bbbbbbbb@3 second"), "{out}");
    // Never the full identity in a row: that is what the record line above the viewport is for.
    assert!(!out.contains("aaaaaaaa-aaaa"), "{out}");
}

#[test]
fn styled_lines_fit_every_width_from_20_to_200_and_say_what_the_plain_lines_say() {
    let mut snaps: Vec<ChildSnapshot> = Vec::new();
    snaps.push(distinct(
        'c',
        1,
        "running",
        &json!({"assignment": "Write 日本語 notes about the 🦀 crate and \u{1b}[31mred\u{1b}[0m", "activity": "line\u{7}bell \u{1b}]0;title\u{7}"}),
    ));
    snaps.extend(mixed().snapshots().into_iter().cloned());
    let f = fleet(snaps);
    for width in 20..=200u16 {
        let styled = styled_lines(&f, NOW, width, 12);
        let plain = plain_lines(&f, NOW, width, 12);
        assert_eq!(styled.len(), plain.len(), "width {width}");
        for (s, p) in styled.iter().zip(&plain) {
            let visible = strip_sgr(s);
            assert!(
                unicode_width::UnicodeWidthStr::width(visible.as_str()) <= usize::from(width),
                "width {width}: {visible:?}"
            );
            assert_eq!(visible.trim_end(), p.as_str(), "width {width}");
            assert!(
                !visible.chars().any(char::is_control),
                "no control character but SGR reaches the host: {s:?}"
            );
        }
    }
    // The colours of `slate watch`: a running mark in green, the header's title bold, the
    // handle dim.
    let wide = styled_lines(&f, NOW, 160, 12);
    assert!(wide[0].starts_with("\x1b[1mSubagents"), "{wide:?}");
    let running = wide
        .iter()
        .find(|l| l.contains("cccccccc"))
        .expect("the running row");
    assert!(running.starts_with("\x1b[32m● "), "{running:?}");
    assert!(running.contains("\x1b[90mcccccccc "), "{running:?}");
    // Each line leaves the terminal unstyled: its last SGR is a full reset.
    assert!(
        wide.iter().all(|l| l
            .rfind('\x1b')
            .is_none_or(|at| l[at..].starts_with("\x1b[0m"))),
        "{wide:?}"
    );
}

#[test]
fn delivered_ended_subtrees_collapse_beyond_the_newest_few_and_undelivered_ones_stay() {
    let ended = |n: u128, hex: char, delivered: bool| {
        let mut s = distinct(
            hex,
            n,
            "settled",
            &json!({"assignment": format!("done {n}")}),
        );
        s.delivered_at = delivered.then_some(NOW - 500);
        s
    };
    let f = fleet(vec![
        distinct('1', 1, "running", &json!({"assignment": "live"})),
        ended(2, '2', true),
        ended(3, '3', true),
        ended(4, '4', true),
        ended(5, '5', true),
        ended(6, '6', true),
        ended(7, '7', false),
    ]);
    let view = FleetView::new(&f, NOW);
    let layout = view.layout(12);
    assert_eq!(KEEP_DELIVERED, 3);
    // Live first, then ended subtrees newest first: 7 (undelivered, kept), then the newest
    // three delivered (6, 5, 4); 3 and 2 are collapsed into the count.
    let shown: Vec<String> = layout
        .shown
        .iter()
        .map(|r| r.id.simple().to_string()[..1].to_owned())
        .collect();
    assert_eq!(shown, ["1", "7", "6", "5", "4"]);
    assert_eq!(layout.collapsed, 2);
    assert_eq!(layout.overflow, 0);
    let out = text(&render(&f, 100, 12));
    assert!(out.contains("✓ +2 finished, delivered"), "{out}");
    assert!(
        out.contains("6 settled"),
        "the header still counts every row: {out}"
    );
    assert_eq!(view.wanted_height(12), 1 + 5 + 1);
    // Too little room for the count line: the collapsed rows are part of `+N more`.
    let tight = view.layout(4);
    assert_eq!(tight.collapsed, 0);
    assert_eq!(tight.overflow, 5 - tight.shown.len() + 2);

    // A resumed generation's new window is not delivered yet: it no longer collapses.
    let undelivered = fleet(vec![
        ended(2, '2', false),
        ended(3, '3', false),
        ended(4, '4', false),
        ended(5, '5', false),
    ]);
    assert_eq!(FleetView::new(&undelivered, NOW).layout(12).collapsed, 0);
}

#[test]
fn a_live_child_keeps_its_ended_delivered_parent_subtree_expanded() {
    let mut parents: Vec<ChildSnapshot> = (1..=5)
        .map(|n| {
            let mut s = distinct(
                char::from_digit(u32::try_from(n).unwrap(), 16).unwrap(),
                n,
                "settled",
                &json!({}),
            );
            s.delivered_at = Some(NOW - 100);
            s
        })
        .collect();
    // The oldest parent has a child that still runs: its subtree is live, so it stays.
    let oldest = parents[0].id;
    parents.push(distinct(
        'f',
        9,
        "running",
        &json!({"parentId": oldest, "depth": 2}),
    ));
    let f = fleet(parents);
    let layout = FleetView::new(&f, NOW).layout(12);
    assert!(layout.shown.iter().any(|r| r.id == oldest), "{layout:?}");
    assert_eq!(layout.collapsed, 1, "{layout:?}");
}

//! Issue 3 ¶11, previews [Full output artifacts and previews]: text fields and structured JSON
//! clipped at 2048 characters with an explicit truncation label, then native 50 KB / 2000-line
//! truncation, with the ordered references header first.

use proptest::prelude::*;
use serde_json::json;
use slate::core::bounds::{PREVIEW_BYTES, PREVIEW_CHARS, PREVIEW_LINES};
use slate::core::ids::ChildRef;
use slate::core::lifecycle::{LimitReason, PauseReason, Status};
use slate::core::snapshot::{
    Artifacts, ChildSnapshot, StructuredOutcome, Telemetry, Validation, Window,
};
use slate::core::task::{Limits, Role};
use slate::policy::preview::{
    FieldKind, FullAt, clip_field, count_lines, preview, truncate_native,
};
use uuid::Uuid;

fn uuid(n: u128) -> Uuid {
    Uuid::from_u128(0x0b6a_0000_0000_4000_8000_0000_0000_0000 + n)
}

fn child(n: u128, generation: u32) -> ChildSnapshot {
    ChildSnapshot {
        id: uuid(n),
        generation,
        parent_id: Uuid::from_u128(1),
        parent_generation: None,
        depth: 1,
        status: Status::Settled,
        profile: Role::Scout,
        cwd: "/work".to_owned(),
        assignment: "look around".to_owned(),
        activity: None,
        progress: None,
        result: None,
        model: Some("fake/fake-model".to_owned()),
        effort: Some("off".to_owned()),
        requested_model: None,
        requested_effort: None,
        logical: None,
        prewalk: None,
        telemetry: Telemetry::default(),
        error: None,
        transcript: None,
        limits: Limits {
            deadline_ms: 1_800_000,
            requests: 100,
            tools: 100,
            depth: 2,
            spawns: 8,
        },
        limit_reason: None,
        tool_calls: 0,
        spawns: 0,
        writer_lease: false,
        disposed: true,
        created_at: 0,
        ended_at: Some(1),
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
            started_at: 0,
            deadline_at: 1_800_000,
        },
    }
}

fn dir(n: u128) -> String {
    format!("/s/delegation/p/{}", uuid(n))
}

/// A settled child with published artifacts and a transcript directory.
fn finished(n: u128, result: &str) -> ChildSnapshot {
    ChildSnapshot {
        result: Some(result.to_owned()),
        transcript: Some(format!("{}/transcripts", dir(n))),
        artifacts: Some(Artifacts {
            text: Some(format!("{}/result.txt", dir(n))),
            structured: None,
            error: None,
        }),
        ..child(n, 1)
    }
}

fn within_native_limits(text: &str) -> bool {
    text.len() <= PREVIEW_BYTES && count_lines(text) <= PREVIEW_LINES
}

// --- Field clipping at 2048 characters ------------------------------------------------------

#[test]
fn fields_of_up_to_2048_characters_are_kept_whole_and_unlabelled() {
    let reference = ChildRef::new(uuid(1), 1);
    for text in [
        String::new(),
        "a".repeat(PREVIEW_CHARS - 1),
        "a".repeat(PREVIEW_CHARS),
        "é".repeat(PREVIEW_CHARS),
        "😀".repeat(PREVIEW_CHARS),
        "\n".repeat(PREVIEW_CHARS),
    ] {
        assert_eq!(
            clip_field(&text, FieldKind::Text, FullAt::Snapshot(reference)),
            text
        );
    }
}

#[test]
fn the_2049th_character_is_cut_with_a_label_saying_what_and_where() {
    let reference = ChildRef::new(uuid(1), 3);
    let table: [(String, FieldKind, FullAt<'_>, String); 5] = [
        (
            "a".repeat(PREVIEW_CHARS + 1),
            FieldKind::Text,
            FullAt::Artifact("/s/x/result.txt"),
            "… [truncated: 2048 of 2049 characters shown; full text in \"/s/x/result.txt\"]"
                .to_owned(),
        ),
        (
            "a".repeat(10_000),
            FieldKind::Text,
            FullAt::Snapshot(reference),
            format!(
                "… [truncated: 2048 of 10000 characters shown; full text: subagent-status \
                 {reference}]"
            ),
        ),
        (
            "{".repeat(4000),
            FieldKind::Json,
            FullAt::Artifact("/s/x/structured.json"),
            "… [truncated: 2048 of 4000 characters of JSON shown; full value in \
             \"/s/x/structured.json\"]"
                .to_owned(),
        ),
        (
            "x".repeat(3000),
            FieldKind::Json,
            FullAt::Snapshot(reference),
            format!(
                "… [truncated: 2048 of 3000 characters of JSON shown; full value: \
                 subagent-status {reference}]"
            ),
        ),
        // paths are JSON-quoted, so odd characters stay unambiguous
        (
            "a".repeat(2049),
            FieldKind::Text,
            FullAt::Artifact("/s/a \"b\"\n/result.txt"),
            "… [truncated: 2048 of 2049 characters shown; full text in \
             \"/s/a \\\"b\\\"\\n/result.txt\"]"
                .to_owned(),
        ),
    ];
    for (text, kind, full, label) in table {
        let clipped = clip_field(&text, kind, full);
        let kept: String = text.chars().take(PREVIEW_CHARS).collect();
        assert_eq!(clipped, format!("{kept}{label}"));
    }
}

#[test]
fn clipping_never_splits_a_utf8_character() {
    let reference = ChildRef::new(uuid(1), 1);
    for unit in ["é", "😀", "e\u{301}", "中", "a😀"] {
        let text = unit.repeat(PREVIEW_CHARS);
        let clipped = clip_field(&text, FieldKind::Text, FullAt::Snapshot(reference));
        let total = text.chars().count();
        if total <= PREVIEW_CHARS {
            assert_eq!(clipped, text);
            continue;
        }
        let (kept, label) = clipped.split_once("… [truncated: ").expect("labelled");
        assert_eq!(kept.chars().count(), PREVIEW_CHARS, "{unit:?}");
        assert!(text.starts_with(kept));
        assert!(
            label.starts_with(&format!("2048 of {total} characters shown")),
            "{label}"
        );
    }
}

// --- The references header --------------------------------------------------------------------

#[test]
fn the_references_header_lists_every_child_in_order_before_any_body() {
    let mut second = finished(2, "second result");
    second.artifacts = Some(Artifacts {
        text: Some(format!("{}/result.txt", dir(2))),
        structured: Some(format!("{}/structured.json", dir(2))),
        error: None,
    });
    let first = ChildSnapshot {
        status: Status::Failed,
        profile: Role::Review,
        error: Some("provider failed".to_owned()),
        ..child(1, 4)
    };
    let text = preview(&[second.clone(), first.clone()]);
    let expected_header = format!(
        "Subagent preview: 2 children. References first, in call order; clipped output follows.\n\
         [1] {}@1 settled profile=scout\n\
         \x20   text artifact: \"{d2}/result.txt\"\n\
         \x20   structured artifact: \"{d2}/structured.json\"\n\
         \x20   transcript: \"{d2}/transcripts\"\n\
         [2] {}@4 failed profile=review\n\
         \x20   artifacts: none\n\
         \x20   transcript: none\n\
         Full detached snapshots: subagent-status <UUID>@<generation>.\n",
        uuid(2),
        uuid(1),
        d2 = dir(2),
    );
    assert!(
        text.starts_with(&expected_header),
        "header:\n{text}\nexpected:\n{expected_header}"
    );
    let bodies = &text[expected_header.len()..];
    assert_eq!(
        bodies,
        format!(
            "\n--- [1] {}@1 result ---\nsecond result\n\
             \n--- [2] {}@4 error ---\nprovider failed\n",
            uuid(2),
            uuid(1)
        )
    );
}

#[test]
fn the_header_survives_long_prose() {
    let children: Vec<ChildSnapshot> = (0..8)
        .map(|n| finished(n, &"lorem ipsum ".repeat(5000)))
        .collect();
    let text = preview(&children);
    let header_end = text.find("\n--- [1]").expect("bodies follow");
    for (n, child) in children.iter().enumerate() {
        let reference = format!("[{}] {} settled", n + 1, child.child_ref());
        let at = text.find(&reference).expect("every reference is listed");
        assert!(at < header_end, "reference {n} is in the header");
        assert!(text[..header_end].contains(&format!("{}/result.txt", dir(n as u128))));
        assert!(text[..header_end].contains(&format!("{}/transcripts", dir(n as u128))));
    }
    assert!(within_native_limits(&text));
}

#[test]
fn status_reasons_are_named_in_the_header() {
    let limited = ChildSnapshot {
        status: Status::Cancelled,
        limit_reason: Some(LimitReason::Requests),
        ..child(1, 1)
    };
    let paused = ChildSnapshot {
        status: Status::Paused,
        pause_reason: Some(PauseReason::AncestorDeadline),
        profile: Role::Implementation,
        ..child(2, 2)
    };
    let tools = ChildSnapshot {
        status: Status::Cancelled,
        limit_reason: Some(LimitReason::Tools),
        ..child(3, 1)
    };
    let text = preview(&[limited, paused, tools]);
    assert!(text.contains(&format!(
        "[1] {}@1 cancelled (limit: requests) profile=scout",
        uuid(1)
    )));
    assert!(text.contains(&format!(
        "[2] {}@2 paused (paused: ancestor deadline) profile=implementation",
        uuid(2)
    )));
    assert!(text.contains(&format!("[3] {}@1 cancelled (limit: tools)", uuid(3))));
    assert!(text.starts_with("Subagent preview: 3 children."));
    assert!(preview(&[child(1, 1)]).starts_with("Subagent preview: 1 child."));
    assert!(preview(&[]).starts_with("Subagent preview: 0 children."));
}

// --- Bodies -------------------------------------------------------------------------------------

#[test]
fn a_long_result_is_clipped_and_points_at_result_txt() {
    let result = "r".repeat(10_000);
    let text = preview(&[finished(1, &result)]);
    assert!(text.contains(&format!(
        "\n--- [1] {}@1 result ---\n{}… [truncated: 2048 of 10000 characters shown; full text in \
         \"{}/result.txt\"]\n",
        uuid(1),
        "r".repeat(PREVIEW_CHARS),
        dir(1)
    )));
}

#[test]
fn structured_values_are_compact_json_clipped_with_their_own_label() {
    let big: Vec<String> = (0..400).map(|n| format!("item-{n}")).collect();
    let value = json!({"summary": "ok", "items": big});
    let serialized = value.to_string();
    let mut snap = finished(1, "done");
    snap.outcome = Some(StructuredOutcome {
        validation: Validation::Submitted,
        attempts: 2,
        errors: Vec::new(),
        value: Some(value),
        finalized: true,
    });
    snap.artifacts = Some(Artifacts {
        text: Some(format!("{}/result.txt", dir(1))),
        structured: Some(format!("{}/structured.json", dir(1))),
        error: None,
    });
    let text = preview(&[snap]);
    let kept: String = serialized.chars().take(PREVIEW_CHARS).collect();
    assert!(text.contains(&format!(
        "\n--- [1] {}@1 structured result (submitted, 2 attempts, finalized) ---\n{kept}… \
         [truncated: 2048 of {} characters of JSON shown; full value in \"{}/structured.json\"]\n",
        uuid(1),
        serialized.chars().count(),
        dir(1)
    )));
}

#[test]
fn every_output_field_gets_its_own_section() {
    let snap = ChildSnapshot {
        status: Status::Failed,
        result: Some(String::new()),
        error: Some("e".repeat(3000)),
        outcome: Some(StructuredOutcome {
            validation: Validation::Invalid,
            attempts: 1,
            errors: vec![
                "/summary: expected string".to_owned(),
                "/n: expected integer".to_owned(),
            ],
            value: None,
            finalized: true,
        }),
        artifacts: Some(Artifacts {
            text: Some("/s/r.txt".to_owned()),
            structured: None,
            error: Some("structured.json: disk full".to_owned()),
        }),
        progress: Some("hidden once there is a result".to_owned()),
        ..child(1, 2)
    };
    let text = preview(&[snap]);
    let r = format!("{}@2", uuid(1));
    assert!(text.contains(&format!("--- [1] {r} result ---\n(empty)\n")));
    assert!(text.contains(&format!(
        "--- [1] {r} structured result (invalid, 1 attempt, finalized) ---\n(no value submitted)\n"
    )));
    assert!(text.contains(&format!(
        "--- [1] {r} validation errors ---\n/summary: expected string\n/n: expected integer\n"
    )));
    assert!(text.contains(&format!(
        "--- [1] {r} error ---\n{}… [truncated: 2048 of 3000 characters shown; full text: \
         subagent-status {r}]\n",
        "e".repeat(PREVIEW_CHARS)
    )));
    assert!(text.contains(&format!(
        "--- [1] {r} artifact error ---\nstructured.json: disk full\n"
    )));
    assert!(!text.contains("hidden once there is a result"));
}

#[test]
fn progress_is_shown_while_there_is_no_result() {
    let running = ChildSnapshot {
        status: Status::Running,
        progress: Some("p".repeat(4096)),
        ..child(1, 1)
    };
    let text = preview(&[running, child(2, 1)]);
    assert!(text.contains(&format!(
        "--- [1] {}@1 progress ---\n{}… [truncated: 2048 of 4096 characters shown",
        uuid(1),
        "p".repeat(PREVIEW_CHARS)
    )));
    assert!(text.contains(&format!("--- [2] {}@1: no output yet ---", uuid(2))));
}

// --- Native 50 KB / 2000-line truncation -----------------------------------------------------

#[test]
fn lines_are_counted_like_pi() {
    for (text, lines) in [
        ("", 0),
        ("a", 1),
        ("a\n", 1),
        ("a\nb", 2),
        ("a\nb\n", 2),
        ("\n", 1),
        ("\n\n", 2),
    ] {
        assert_eq!(count_lines(text), lines, "{text:?}");
    }
}

#[test]
fn text_within_2000_lines_and_50kb_is_untouched() {
    for text in [
        "x\n".repeat(PREVIEW_LINES),
        "x\n".repeat(PREVIEW_LINES - 1) + "x",
        "a".repeat(PREVIEW_BYTES),
        "a".repeat(PREVIEW_BYTES - 1) + "\n",
        format!(
            "{}\n{}",
            "a".repeat(30_000),
            "b".repeat(PREVIEW_BYTES - 30_001)
        ),
        String::new(),
    ] {
        assert!(within_native_limits(&text));
        assert_eq!(truncate_native(&text), text);
    }
}

#[test]
fn the_2001st_line_triggers_line_truncation_with_an_exact_label() {
    let text = "x\n".repeat(PREVIEW_LINES + 1);
    let out = truncate_native(&text);
    assert_eq!(count_lines(&out), PREVIEW_LINES);
    let (shown, label) = out.rsplit_once('\n').expect("label line");
    assert_eq!(
        shown,
        "x\n".repeat(PREVIEW_LINES - 1).trim_end_matches('\n')
    );
    assert_eq!(
        label,
        "[preview truncated to the native 2000-line / 51200-byte limit: showing lines 1-1999 of \
         2001 (3997 of 4002 bytes); full snapshots: subagent-status <UUID>@<generation>]"
    );
}

#[test]
fn one_byte_over_50kb_triggers_byte_truncation_of_whole_lines() {
    let line = "y".repeat(99);
    let mut text = format!("{line}\n").repeat(PREVIEW_BYTES / 100);
    text.push_str(&"z".repeat(PREVIEW_BYTES - text.len() + 1));
    assert_eq!(text.len(), PREVIEW_BYTES + 1);
    assert!(count_lines(&text) <= PREVIEW_LINES);
    let out = truncate_native(&text);
    assert!(within_native_limits(&out), "{} bytes", out.len());
    let (shown, label) = out.rsplit_once('\n').expect("label line");
    assert!(text.starts_with(shown));
    assert!(shown.split('\n').all(|l| l == line), "whole lines only");
    let kept = count_lines(shown);
    assert_eq!(
        label,
        format!(
            "[preview truncated to the native 2000-line / 51200-byte limit: showing lines \
             1-{kept} of {} ({} of {} bytes); full snapshots: subagent-status \
             <UUID>@<generation>]",
            count_lines(&text),
            shown.len(),
            text.len()
        )
    );
    assert!(
        shown.len() > PREVIEW_BYTES - 400,
        "the label reserve is small"
    );
}

#[test]
fn a_single_overlong_line_is_cut_at_a_character_boundary() {
    for unit in ["a", "é", "😀", "中"] {
        let text = unit.repeat(PREVIEW_BYTES / unit.len() + 7);
        let out = truncate_native(&text);
        assert!(within_native_limits(&out));
        let (shown, label) = out.rsplit_once('\n').expect("label line");
        assert!(text.starts_with(shown));
        assert!(
            label.starts_with(&format!(
                "[preview truncated to the native 2000-line / 51200-byte limit: showing the \
                 first {} of {} bytes of line 1 of 1, cut at a character boundary ({} bytes in \
                 all)",
                shown.len(),
                text.len(),
                text.len()
            )),
            "{label}"
        );
    }
}

#[test]
fn a_whole_batch_preview_stays_within_native_limits() {
    // 64 children whose clipped fields are 2048 newlines each: far past 2000 lines.
    let children: Vec<ChildSnapshot> = (0..64)
        .map(|n| {
            let mut snap = finished(n, &"\n".repeat(5000));
            snap.error = Some("é".repeat(5000));
            snap
        })
        .collect();
    let text = preview(&children);
    assert!(within_native_limits(&text));
    assert!(text.starts_with("Subagent preview: 64 children."));
    for (n, child) in children.iter().enumerate() {
        assert!(text.contains(&format!("[{}] {} settled", n + 1, child.child_ref())));
    }
    let label = text.rsplit('\n').next().expect("label");
    assert!(
        label.starts_with("[preview truncated to the native 2000-line / 51200-byte limit: showing lines 1-1999 of "),
        "{label}"
    );
}

// --- No panics, limits always hold --------------------------------------------------------------

fn piece() -> impl Strategy<Value = String> {
    prop_oneof![
        ".{0,40}",
        "[a\né😀\r\t]{0,40}",
        Just("\n".to_owned()),
        Just(String::new()),
    ]
}

fn long_text() -> impl Strategy<Value = String> {
    (piece(), 0usize..3000).prop_map(|(s, n)| s.repeat(n))
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    #[test]
    fn native_truncation_keeps_a_prefix_within_the_limits(text in long_text()) {
        let out = truncate_native(&text);
        prop_assert!(within_native_limits(&out));
        if within_native_limits(&text) {
            prop_assert_eq!(&out, &text);
        } else {
            let (shown, label) = out.rsplit_once('\n').expect("label line");
            prop_assert!(text.starts_with(shown));
            prop_assert!(label.starts_with("[preview truncated to the native"));
        }
    }

    #[test]
    fn clipping_keeps_a_prefix_of_at_most_2048_characters(text in long_text()) {
        let out = clip_field(&text, FieldKind::Text, FullAt::Artifact("/r.txt"));
        if text.chars().count() <= PREVIEW_CHARS {
            prop_assert_eq!(out, text);
        } else {
            let (kept, _) = out.rsplit_once("… [truncated: ").expect("labelled");
            prop_assert_eq!(kept.chars().count(), PREVIEW_CHARS);
            prop_assert!(text.starts_with(kept));
        }
    }

    #[test]
    fn previews_never_panic_and_respect_the_limits(
        fields in prop::collection::vec(
            (proptest::option::of(long_text()), proptest::option::of(long_text()), ".{0,30}"),
            0..6,
        ),
    ) {
        let children: Vec<ChildSnapshot> = fields
            .into_iter()
            .enumerate()
            .map(|(n, (result, error, path))| ChildSnapshot {
                result,
                error,
                transcript: Some(path),
                ..child(n as u128, 1)
            })
            .collect();
        let text = preview(&children);
        prop_assert!(within_native_limits(&text));
        prop_assert!(text.starts_with("Subagent preview: "));
    }
}

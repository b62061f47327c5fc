//! Rule 10 — live observation: a streaming worker's text and tool output reach `activity` and
//! `progress` (≤ 4096 characters) before the message ends, coalesced to at most one registry
//! change per `STREAM_INTERVAL_MS` per generation, with the held-back change published by a
//! timer; the final message replaces the streamed one.

use slate::core::bounds::{PROGRESS_CHARS, STREAM_INTERVAL_MS};
use slate::core::{ChildRef, Effect, Input, Streaming, TimerKey, WorkerEvent};

use crate::support::{Harness, scout};

fn changed(effects: &[Effect], r: ChildRef) -> usize {
    effects
        .iter()
        .filter(|e| matches!(e, Effect::Changed(c) if *c == r))
        .count()
}

fn stream_timers(effects: &[Effect], r: ChildRef) -> Vec<u64> {
    effects
        .iter()
        .filter_map(|e| match e {
            Effect::ArmTimer {
                key: TimerKey::Stream(c),
                at,
            } if *c == r => Some(*at),
            _ => None,
        })
        .collect()
}

fn delta(text: &str) -> WorkerEvent {
    WorkerEvent::TextDelta(text.to_owned())
}

#[test]
fn streamed_text_is_visible_before_the_message_ends() {
    let mut h = Harness::new();
    let a = h.running(scout("a"));
    h.event(a, WorkerEvent::RequestStart);
    let effects = h.drive(a, vec![delta("Reading the "), delta("code.\nFound two")]);
    assert_eq!(changed(&effects, a), 1, "the first delta publishes at once");
    let s = h.snap(a);
    assert_eq!(s.progress.as_deref(), Some("Reading the code.\nFound two"));
    assert_eq!(s.activity.as_deref(), Some("Found two"), "the newest line");
    assert_eq!(s.streaming, Some(Streaming::Assistant));
    let json = serde_json::to_value(&s).unwrap();
    assert_eq!(json["streaming"], "assistant");
}

#[test]
fn deltas_are_coalesced_to_one_change_per_interval_and_the_rest_is_published_by_a_timer() {
    let mut h = Harness::new();
    let a = h.running(scout("a"));
    h.event(a, WorkerEvent::RequestStart);
    let start = h.now;
    let first = h.event(a, delta("w0 "));
    assert_eq!(changed(&first, a), 1);
    // 50 deltas, 1 ms apart: all inside one interval.
    let mut held = Vec::new();
    for i in 1..=50 {
        h.now += 1;
        held.extend(h.event(a, delta(&format!("w{i} "))));
    }
    assert_eq!(changed(&held, a), 0, "no change inside the interval");
    assert_eq!(
        stream_timers(&held, a),
        vec![start + STREAM_INTERVAL_MS],
        "one timer for the held-back text"
    );
    // The snapshot already holds the text; only its publication waits.
    assert!(h.snap(a).progress.unwrap().ends_with("w50 "));
    h.now = start + STREAM_INTERVAL_MS;
    let fired = h.handle(Input::Timer(TimerKey::Stream(a)));
    assert_eq!(
        changed(&fired, a),
        1,
        "the timer publishes what was held back"
    );
    // Nothing held back: a later timer (or a stale one) publishes nothing.
    let idle = h.handle(Input::Timer(TimerKey::Stream(a)));
    assert_eq!(changed(&idle, a), 0);
    // After the interval the next delta publishes at once again.
    h.now += STREAM_INTERVAL_MS;
    let later = h.event(a, delta("more"));
    assert_eq!(changed(&later, a), 1);
    assert!(stream_timers(&later, a).is_empty());
}

#[test]
fn the_message_end_publishes_at_once_and_replaces_the_streamed_text() {
    let mut h = Harness::new();
    let a = h.running(scout("a"));
    h.event(a, WorkerEvent::RequestStart);
    h.event(a, delta("Hel"));
    h.now += 1;
    let held = h.event(a, delta("lo"));
    assert_eq!(changed(&held, a), 0);
    h.now += 1;
    let end = h.event(
        a,
        WorkerEvent::AssistantMessage {
            text: "Hello".into(),
            usage: None,
        },
    );
    assert_eq!(changed(&end, a), 1, "message end is never held back");
    let s = h.snap(a);
    assert_eq!(s.streaming, None);
    assert_eq!(s.progress.as_deref(), Some("Hello"));
    // The timer armed for the held-back delta finds nothing left to publish.
    let fired = h.handle(Input::Timer(TimerKey::Stream(a)));
    assert_eq!(changed(&fired, a), 0);
}

#[test]
fn progress_keeps_the_newest_4096_characters_and_activity_stays_bounded() {
    let mut h = Harness::new();
    let a = h.running(scout("a"));
    h.event(a, WorkerEvent::RequestStart);
    let line = "é".repeat(1000);
    for i in 0..10 {
        h.now += STREAM_INTERVAL_MS;
        h.event(a, delta(&format!("{i}{line}")));
    }
    h.event(a, delta("\nlast line"));
    let s = h.snap(a);
    let progress = s.progress.unwrap();
    assert_eq!(progress.chars().count(), PROGRESS_CHARS);
    assert!(progress.starts_with('…') && progress.ends_with("\nlast line"));
    assert_eq!(s.activity.as_deref(), Some("last line"));
    // One long line: the activity line is clipped too.
    h.event(a, WorkerEvent::RequestStart);
    h.event(a, delta(&"x".repeat(10_000)));
    let s = h.snap(a);
    assert!(s.activity.unwrap().chars().count() <= 240);
    assert_eq!(s.progress.unwrap().chars().count(), PROGRESS_CHARS);
}

#[test]
fn a_new_request_streams_from_the_start() {
    let mut h = Harness::new();
    let a = h.running(scout("a"));
    h.event(a, WorkerEvent::RequestStart);
    h.event(a, delta("attempt one"));
    // A retry is a new request: its text does not continue the failed one's.
    h.event(a, WorkerEvent::RequestStart);
    assert_eq!(h.snap(a).streaming, None);
    h.now += STREAM_INTERVAL_MS;
    h.event(a, delta("attempt two"));
    assert_eq!(h.snap(a).progress.as_deref(), Some("attempt two"));
}

#[test]
fn tool_output_streams_into_progress_until_the_tool_ends() {
    let mut h = Harness::new();
    let a = h.running(scout("a"));
    h.event(
        a,
        WorkerEvent::ToolStart {
            name: "bash".into(),
        },
    );
    let out = h.event(
        a,
        WorkerEvent::ToolOutput {
            name: "bash".into(),
            text: "compiling\nrunning 3 tests\n".into(),
        },
    );
    assert_eq!(changed(&out, a), 1);
    let s = h.snap(a);
    assert_eq!(s.streaming, Some(Streaming::Tool));
    assert_eq!(s.progress.as_deref(), Some("compiling\nrunning 3 tests\n"));
    assert_eq!(s.activity.as_deref(), Some("bash: running 3 tests"));
    h.event(
        a,
        WorkerEvent::ToolEnd {
            name: "bash".into(),
            is_error: false,
        },
    );
    let s = h.snap(a);
    assert_eq!(s.streaming, None);
    assert_eq!(s.activity.as_deref(), Some("bash done"));
}

#[test]
fn output_after_the_prompt_resolved_changes_nothing() {
    let mut h = Harness::new();
    let a = h.running(scout("a"));
    h.settle(a, "done");
    let before = h.snap(a);
    let effects = h.event(a, delta("late"));
    assert_eq!(changed(&effects, a), 0);
    assert_eq!(h.snap(a), before);
}

#[test]
fn a_worker_that_dies_mid_message_leaves_no_stream_behind() {
    let mut h = Harness::new();
    let a = h.running(scout("a"));
    h.event(a, WorkerEvent::RequestStart);
    h.event(a, delta("half a sen"));
    h.event(
        a,
        WorkerEvent::Exited {
            reason: "signal 9".into(),
        },
    );
    let s = h.snap(a);
    assert_eq!(s.streaming, None);
    assert_eq!(
        s.progress.as_deref(),
        Some("half a sen"),
        "what streamed stays visible"
    );
}

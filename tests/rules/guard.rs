//! Rule 5 — the dispatch guard [Limit outcomes and cancellation]: "Request guards check
//! before forwarding"; tool guards count entered executions; the first committed hard-limit
//! reason is kept. A pi worker's extension asks `Input::Guard`; the simulated worker reports
//! `RequestStart` / `ToolStart`: one decision for both, with one wording, and every denial
//! says "out of budget" (pi never retries it).

use slate::core::{
    AbortReason, CancelCause, ChildRef, Effect, GuardKind, Input, LimitOverrides, LimitReason,
    Party, Refusal, Reply, Status, Streaming, WorkerEvent,
};

use crate::support::{Harness, ROOT, aborts, coordinator_general, scout, with_limits};

/// The guard's answer: `Ok(())` allowed, `Err(reason)` denied.
fn guard(h: &mut Harness, child: ChildRef, kind: GuardKind) -> Result<(), String> {
    match h.call(|request| Input::Guard {
        request,
        child,
        kind,
    }) {
        Ok(Reply::Guard {
            allow: true,
            reason: None,
        }) => Ok(()),
        Ok(Reply::Guard {
            allow: false,
            reason: Some(reason),
        }) => {
            assert!(reason.starts_with("out of budget: "), "{reason}");
            Err(reason)
        }
        other => panic!("guard answered {other:?}"),
    }
}

fn tool(name: &str) -> GuardKind {
    GuardKind::Tool {
        name: name.to_owned(),
    }
}

fn limited(requests: u32, tools: u32) -> slate::core::TaskSpec {
    with_limits(
        scout("a"),
        LimitOverrides {
            requests: Some(requests),
            tools: Some(tools),
            ..LimitOverrides::default()
        },
    )
}

/// What the counters, the committed limit and the worker commands say.
fn state(h: &Harness, a: ChildRef) -> (Option<u32>, u32, Option<LimitReason>, Status, usize) {
    let s = h.snap(a);
    (
        s.telemetry.requests,
        s.tool_calls,
        s.limit_reason,
        s.status,
        aborts(&h.log).len(),
    )
}

#[test]
fn the_guard_and_the_simulated_events_make_one_decision() {
    // The same sequence through both paths, for each limit committed first.
    let sequences: [Vec<GuardKind>; 2] = [
        vec![
            GuardKind::Request,
            tool("read"),
            GuardKind::Compaction,
            tool("grep"),
            GuardKind::Request, // over requests (2)
            tool("ls"),
        ],
        vec![
            tool("read"),
            GuardKind::Request,
            tool("grep"),
            GuardKind::Request,
            tool("find"), // over tools (2)
            GuardKind::Request,
        ],
    ];
    for kinds in sequences {
        let mut by_guard = Harness::new();
        let mut by_events = Harness::new();
        let a = by_guard.running(limited(2, 2));
        let b = by_events.running(limited(2, 2));
        assert_eq!(a, b, "same seed, same identity");
        let mut answers = Vec::new();
        for kind in &kinds {
            answers.push(guard(&mut by_guard, a, kind.clone()));
            let event = match kind {
                GuardKind::Request | GuardKind::Compaction => WorkerEvent::RequestStart,
                GuardKind::Tool { name } => WorkerEvent::ToolStart { name: name.clone() },
            };
            by_events.event(b, event);
            assert_eq!(
                state(&by_guard, a),
                state(&by_events, b),
                "after {kind:?} of {kinds:?}"
            );
        }
        let allowed = answers.iter().take_while(|a| a.is_ok()).count();
        assert_eq!(allowed, 4, "{kinds:?}: {answers:?}");
        assert!(
            answers[allowed..].iter().all(Result::is_err),
            "nothing is allowed after the limit: {answers:?}"
        );
    }
}

#[test]
fn a_request_over_its_limit_is_denied_uncounted_and_commits_the_limit() {
    let mut h = Harness::new();
    let a = h.running(limited(2, 5));
    assert_eq!(guard(&mut h, a, GuardKind::Request), Ok(()));
    assert_eq!(guard(&mut h, a, GuardKind::Compaction), Ok(()));
    assert_eq!(
        h.snap(a).telemetry.requests,
        Some(2),
        "a compaction is a request"
    );
    let (request, effects) = h.call_effects(|request| Input::Guard {
        request,
        child: a,
        kind: GuardKind::Request,
    });
    assert!(
        effects.iter().any(|e| matches!(
            e,
            Effect::Reply { request: r, result: Ok(Reply::Guard { allow: false, reason: Some(reason) }) }
                if *r == request && reason == "out of budget: request limit of 2 reached"
        )),
        "{effects:?}"
    );
    assert!(effects.iter().any(|e| matches!(
        e,
        Effect::AbortWorker { child, reason: AbortReason::Cancel(CancelCause::Limit(LimitReason::Requests)) }
            if *child == a
    )));
    let s = h.snap(a);
    assert_eq!(
        s.telemetry.requests,
        Some(2),
        "the denied request is not counted"
    );
    assert_eq!(s.limit_reason, Some(LimitReason::Requests));
    assert_eq!(s.status, Status::Draining);
    // Every later dispatch is denied with the committed reason, and counts nothing.
    assert_eq!(
        guard(&mut h, a, tool("read")),
        Err("out of budget: request limit of 2 reached".to_owned())
    );
    assert_eq!(h.snap(a).tool_calls, 0);
    h.event(
        a,
        WorkerEvent::Settled {
            error: Some("aborted".into()),
        },
    );
    h.published(a);
    h.exited(a);
    let s = h.snap(a);
    assert_eq!(s.status, Status::Cancelled);
    assert_eq!(s.limit_reason, Some(LimitReason::Requests));
    assert!(s.error.unwrap().contains("limits.requests is a hard limit"));
}

#[test]
fn the_first_committed_limit_reason_wins_over_a_later_guard() {
    let mut h = Harness::new();
    let a = h.running(limited(1, 1));
    assert_eq!(guard(&mut h, a, tool("read")), Ok(()));
    assert_eq!(h.snap(a).activity.as_deref(), Some("read …"));
    assert_eq!(
        guard(&mut h, a, tool("grep")),
        Err("out of budget: tool limit of 1 reached".to_owned())
    );
    // The request budget is untouched, but the tools limit was committed first.
    assert_eq!(
        guard(&mut h, a, GuardKind::Request),
        Err("out of budget: tool limit of 1 reached".to_owned())
    );
    assert_eq!(h.snap(a).telemetry.requests, Some(0));
    h.exited(a);
    let s = h.snap(a);
    assert_eq!(s.status, Status::Cancelled);
    assert_eq!(s.limit_reason, Some(LimitReason::Tools));
    assert!(s.error.unwrap().contains("tool limit"));
}

#[test]
fn a_committed_stop_or_pause_denies_every_dispatch_and_counts_nothing() {
    let mut h = Harness::new();
    let a = h.running(scout("a"));
    h.stop(a).unwrap();
    for kind in [GuardKind::Request, GuardKind::Compaction, tool("bash")] {
        let reason = guard(&mut h, a, kind.clone()).unwrap_err();
        assert!(
            reason.starts_with("out of budget: this generation is stopping (stopped by the parent runtime); no new "),
            "{kind:?}: {reason}"
        );
    }
    let snap = h.snap(a);
    assert_eq!((snap.telemetry.requests, snap.tool_calls), (Some(0), 0));
    assert!(snap.limit_reason.is_none(), "a stop is not a limit");

    // The simulated worker's events follow the same decision.
    let mut h = Harness::new();
    let b = h.running(scout("b"));
    h.stop(b).unwrap();
    h.event(b, WorkerEvent::RequestStart);
    h.event(b, WorkerEvent::ToolStart { name: "ls".into() });
    let snap = h.snap(b);
    assert_eq!((snap.telemetry.requests, snap.tool_calls), (Some(0), 0));

    let mut h = Harness::new();
    let parent = h.running(coordinator_general("p"));
    let child = h.admit_one(Party::Child(parent), scout("c"));
    h.ready(child);
    h.deadline(parent);
    assert_eq!(
        guard(&mut h, parent, GuardKind::Request),
        Err(
            "out of budget: this generation is pausing (its window deadline passed); no new model requests"
                .to_owned()
        )
    );
    assert_eq!(
        guard(&mut h, child, tool("read")),
        Err(
            "out of budget: this generation is pausing (an ancestor's window deadline passed); no new tool calls"
                .to_owned()
        )
    );
}

#[test]
fn a_resolved_prompt_or_an_ended_window_denies_and_an_unknown_generation_is_refused() {
    let mut h = Harness::new();
    let a = h.running(scout("a"));
    h.settle(a, "done");
    assert_eq!(
        guard(&mut h, a, GuardKind::Request),
        Err(
            "out of budget: this generation's prompt has resolved; no new model requests"
                .to_owned()
        )
    );
    h.published(a);
    h.exited(a);
    assert_eq!(
        guard(&mut h, a, tool("read")),
        Err(format!(
            "out of budget: {a} has no running window; no new tool calls"
        ))
    );
    assert_eq!(h.snap(a).tool_calls, 0);

    // Queued: no worker was started, nothing may be dispatched for it.
    let mut h = Harness::with(crate::support::policy(1, 8));
    let _busy = h.running(scout("busy"));
    let queued = h.admit_one(ROOT, scout("queued"));
    assert_eq!(h.status(queued), Status::Queued);
    assert!(guard(&mut h, queued, GuardKind::Request).is_err());

    let stranger = ChildRef::new(uuid::Uuid::from_u128(77), 1);
    let answer = h.call(|request| Input::Guard {
        request,
        child: stranger,
        kind: GuardKind::Request,
    });
    assert_eq!(answer, Err(Refusal::UnknownIdentity(stranger)));
}

#[test]
fn a_guard_before_the_worker_reported_ready_is_answered() {
    // The extension's first request can reach the socket before the worker's `Ready`.
    let mut h = Harness::new();
    let a = h.admit_one(ROOT, scout("a"));
    assert_eq!(h.status(a), Status::Setup);
    assert_eq!(guard(&mut h, a, GuardKind::Request), Ok(()));
    assert_eq!(h.snap(a).telemetry.requests, Some(1));
}

#[test]
fn assistant_start_and_tool_running_keep_streaming_and_activity_but_count_nothing() {
    let mut h = Harness::new();
    let a = h.running(limited(1, 1));
    h.event(a, WorkerEvent::AssistantStart);
    h.event(a, WorkerEvent::TextDelta("first message".into()));
    assert_eq!(h.snap(a).streaming, Some(Streaming::Assistant));
    // A new assistant message streams from the start.
    h.event(a, WorkerEvent::AssistantStart);
    assert_eq!(h.snap(a).streaming, None);
    for _ in 0..3 {
        h.event(a, WorkerEvent::AssistantStart);
        h.event(
            a,
            WorkerEvent::ToolRunning {
                name: "bash".into(),
            },
        );
    }
    let s = h.snap(a);
    assert_eq!(s.activity.as_deref(), Some("bash …"));
    assert_eq!((s.telemetry.requests, s.tool_calls), (Some(0), 0));
    assert!(
        s.limit_reason.is_none(),
        "over both limits three times, yet uncounted"
    );
    assert_eq!(s.status, Status::Running);
}

//! Rule 5 — limits [Limit outcomes and cancellation]: deadlines pause, requests/tools
//! cancel, and resume continues a paused generation in a fresh window.

use slate::core::{
    AbortReason, CancelCause, Effect, LimitOverrides, LimitReason, Party, PauseReason, Presence,
    Reply, Status, WorkerEvent,
};

use crate::support::{
    Harness, ROOT, code, coordinator_general, policy, scout, starts, window_outcomes, with_limits,
};

fn pause_aborts(effects: &[Effect]) -> Vec<(slate::core::ChildRef, PauseReason)> {
    effects
        .iter()
        .filter_map(|e| match e {
            Effect::AbortWorker {
                child,
                reason: AbortReason::Pause(p),
            } => Some((*child, *p)),
            _ => None,
        })
        .collect()
}

#[test]
fn a_deadline_pauses_and_never_cancels() {
    let mut h = Harness::new();
    let a = h.running(scout("a"));
    h.event(a, WorkerEvent::RequestStart);
    let effects = h.deadline(a);
    assert_eq!(pause_aborts(&effects), vec![(a, PauseReason::Deadline)]);
    let snap = h.snap(a);
    assert_eq!(snap.status, Status::Pausing);
    assert_eq!(snap.pause_reason, Some(PauseReason::Deadline));
    assert!(snap.limit_reason.is_none());
    h.event(
        a,
        WorkerEvent::Settled {
            error: Some("aborted".into()),
        },
    );
    h.exited(a);
    let snap = h.snap(a);
    assert_eq!(snap.status, Status::Paused);
    assert!(!snap.disposed, "paused is neither success nor failure");
    assert!(snap.retained_context, "the conversation is kept for resume");
    assert!(snap.error.is_none());
    assert!(snap.artifacts.is_none(), "no final artifacts for a pause");
    assert!(!h.log.iter().any(|e| matches!(e, Effect::Publish { .. })));
    assert_eq!(h.coord.stats().active_permits, 0);
    let outcomes = window_outcomes(&h.log);
    assert_eq!(outcomes.len(), 1, "a drained pause ends the window");
    assert_eq!(outcomes[0].outcomes[0].status, Status::Paused);
}

#[test]
fn stale_deadline_timers_are_ignored() {
    let mut h = Harness::new();
    let a = h.running(scout("a"));
    h.deadline(a);
    h.exited(a);
    h.resume(a, "Continue").unwrap();
    h.ready(a);
    // The first window's timer fires again (late): the second window keeps running.
    h.handle(slate::core::Input::Timer(slate::core::TimerKey::Deadline {
        child: a,
        window: 1,
    }));
    assert_eq!(h.status(a), Status::Running);
}

#[test]
fn an_ancestor_deadline_marks_the_whole_active_subtree_before_draining_any_member() {
    let mut h = Harness::new();
    let p = h.running(coordinator_general("p"));
    let refs = h.admit(Party::Child(p), vec![scout("c1"), scout("c2")]);
    h.ready(refs[0]);
    let effects = h.deadline(p);
    assert_eq!(
        pause_aborts(&effects),
        vec![
            (p, PauseReason::Deadline),
            (refs[0], PauseReason::AncestorDeadline),
            (refs[1], PauseReason::AncestorDeadline),
        ],
        "every member is marked (and aborted) in the same step"
    );
    for &r in &refs {
        assert_eq!(h.status(r), Status::Pausing);
        assert_eq!(h.snap(r).pause_reason, Some(PauseReason::AncestorDeadline));
    }
    h.exited(p);
    assert_eq!(
        h.status(p),
        Status::Pausing,
        "the parent waits for its subtree to drain"
    );
    assert_eq!(h.coord.stats().active_permits, 3);
    h.exited(refs[0]);
    assert_eq!(h.status(refs[0]), Status::Paused);
    assert_eq!(h.status(p), Status::Pausing);
    h.exited(refs[1]);
    assert_eq!(h.status(p), Status::Paused);
    assert_eq!(h.snap(p).pause_reason, Some(PauseReason::Deadline));
    assert_eq!(h.coord.stats().active_permits, 0);
    // Resuming the parent does not resume its children.
    h.resume(p, "Continue").unwrap();
    for &r in &refs {
        assert_eq!(h.status(r), Status::Paused);
    }
}

#[test]
fn requests_and_tools_are_hard_limits_and_the_first_over_the_limit_is_not_counted() {
    let cases = [
        ("requests", LimitReason::Requests, WorkerEvent::RequestStart),
        (
            "tools",
            LimitReason::Tools,
            WorkerEvent::ToolStart {
                name: "read".into(),
            },
        ),
    ];
    for (label, reason, event) in cases {
        let mut h = Harness::new();
        let limits = LimitOverrides {
            requests: Some(2),
            tools: Some(2),
            ..LimitOverrides::default()
        };
        let a = h.running(with_limits(scout("a"), limits));
        h.event(a, event.clone());
        h.event(a, event.clone());
        assert_eq!(
            h.status(a),
            Status::Running,
            "{label}: the limit itself is allowed"
        );
        let effects = h.event(a, event.clone());
        let counted = |h: &Harness| match reason {
            LimitReason::Requests => h.snap(a).telemetry.requests,
            LimitReason::Tools => Some(h.snap(a).tool_calls),
        };
        assert_eq!(
            counted(&h),
            Some(2),
            "{label}: the rejected dispatch is not counted"
        );
        assert!(effects.iter().any(|e| matches!(
            e,
            Effect::AbortWorker { child, reason: AbortReason::Cancel(CancelCause::Limit(r)) }
                if *child == a && *r == reason
        )));
        assert_eq!(h.status(a), Status::Draining);
        assert_eq!(h.snap(a).limit_reason, Some(reason), "{label}");
        h.event(
            a,
            WorkerEvent::Settled {
                error: Some("aborted".into()),
            },
        );
        h.published(a);
        h.exited(a);
        let snap = h.snap(a);
        assert_eq!(snap.status, Status::Cancelled, "{label}");
        assert_eq!(snap.limit_reason, Some(reason), "{label}");
        let error = snap.error.unwrap();
        assert!(
            error.contains(&format!("limits.{label} is a hard limit")),
            "{label}: {error}"
        );
        assert_eq!(h.presence(a), Presence::Stopped);
    }
}

#[test]
fn the_first_committed_limit_reason_is_kept() {
    let mut h = Harness::new();
    let limits = LimitOverrides {
        requests: Some(1),
        tools: Some(1),
        ..LimitOverrides::default()
    };
    let a = h.running(with_limits(scout("a"), limits));
    h.drive(
        a,
        vec![
            WorkerEvent::RequestStart,
            WorkerEvent::ToolStart {
                name: "read".into(),
            },
            WorkerEvent::ToolStart {
                name: "grep".into(),
            }, // tools limit first
            WorkerEvent::RequestStart, // then requests
        ],
    );
    assert_eq!(h.snap(a).limit_reason, Some(LimitReason::Tools));
    h.exited(a);
    let snap = h.snap(a);
    assert_eq!(snap.limit_reason, Some(LimitReason::Tools));
    assert!(snap.error.unwrap().contains("tool limit"));
}

#[test]
fn a_limit_on_a_parent_cancels_its_subtree() {
    let mut h = Harness::new();
    let p = h.running(with_limits(
        coordinator_general("p"),
        LimitOverrides {
            tools: Some(1),
            ..LimitOverrides::default()
        },
    ));
    let c = h.admit_one(Party::Child(p), scout("c"));
    h.ready(c);
    h.event(
        p,
        WorkerEvent::ToolStart {
            name: "delegate_task".into(),
        },
    );
    h.event(
        p,
        WorkerEvent::ToolStart {
            name: "read".into(),
        },
    );
    assert_eq!(h.status(c), Status::Draining);
    h.exited(c);
    h.exited(p);
    assert_eq!(h.status(c), Status::Cancelled);
    assert!(
        h.snap(c).limit_reason.is_none(),
        "the child's own limits were not hit"
    );
    assert_eq!(h.snap(p).limit_reason, Some(LimitReason::Tools));
}

/// Pause `a` after it used `requests` requests, then resume it.
fn paused_after(h: &mut Harness, a: slate::core::ChildRef, requests: u32) {
    for _ in 0..requests {
        h.event(a, WorkerEvent::RequestStart);
    }
    h.deadline(a);
    h.exited(a);
    assert_eq!(h.status(a), Status::Paused);
}

#[test]
fn resume_starts_a_fresh_window_without_replenishing_counters() {
    let mut h = Harness::new();
    let limits = LimitOverrides {
        requests: Some(3),
        deadline_ms: Some(10_000),
        ..LimitOverrides::default()
    };
    let a = h.running(with_limits(scout("a"), limits));
    h.event(
        a,
        WorkerEvent::ToolStart {
            name: "read".into(),
        },
    );
    paused_after(&mut h, a, 3);
    h.now += 50_000; // paused time is not part of any window
    let reply = h.resume(a, "Continue with the tests").unwrap();
    let Reply::Admitted { children, .. } = reply else {
        panic!("{reply:?}")
    };
    assert_eq!(children[0].child_ref(), a, "same identity and generation");
    let snap = h.snap(a);
    assert_eq!(snap.window.number, 2);
    assert_eq!(snap.window.started_at, h.now);
    assert_eq!(snap.window.deadline_at, h.now + 10_000);
    assert_eq!(snap.telemetry.requests, Some(3), "counters are cumulative");
    assert_eq!(snap.tool_calls, 1);
    assert!(snap.pause_reason.is_none());
    let start = starts(&h.log).pop().unwrap();
    assert_eq!(start.child, a);
    assert!(start.resume_session, "the retained conversation continues");
    assert_eq!(start.prompts, vec!["Continue with the tests".to_owned()]);
    h.ready(a);
    h.event(a, WorkerEvent::RequestStart);
    assert_eq!(
        h.snap(a).limit_reason,
        Some(LimitReason::Requests),
        "no replenished budget"
    );
}

#[test]
fn duplicate_concurrent_resumes_reject_atomically() {
    let mut h = Harness::with(policy(1, 8));
    let a = h.running(scout("a"));
    paused_after(&mut h, a, 0);
    let _b = h.running(scout("b holds the permit"));
    h.resume(a, "Continue").unwrap();
    assert_eq!(h.status(a), Status::Queued);
    let request = h.request();
    crate::support::assert_refused_unchanged(
        &mut h,
        "second resume while the first is pending",
        "invalid-state",
        slate::core::Input::Resume {
            request,
            actor: ROOT,
            target: a,
            assignment: "again".into(),
        },
    );
}

#[test]
fn stop_wins_over_a_pending_resume() {
    let mut h = Harness::with(policy(1, 8));
    let a = h.running(scout("a"));
    paused_after(&mut h, a, 0);
    let b = h.running(scout("b holds the permit"));
    h.resume(a, "Continue").unwrap();
    h.stop(a).unwrap();
    assert_eq!(h.status(a), Status::Cancelled);
    assert!(h.snap(a).disposed);
    assert!(
        !h.snap(a).retained_context,
        "the retained session is disposed"
    );
    h.complete(b);
    assert_eq!(
        starts(&h.log).iter().filter(|s| s.child == a).count(),
        1,
        "never restarted"
    );
    assert_eq!(crate::support::code(&h.resume(a, "again")), "invalid-state");
}

#[test]
fn a_pre_session_queued_pause_resumes_with_the_assignment_then_the_continuation() {
    let mut h = Harness::with(policy(1, 8));
    let a = h.running(scout("a"));
    let b = h.admit_one(ROOT, scout("original assignment"));
    assert_eq!(h.status(b), Status::Queued);
    h.deadline(b);
    let snap = h.snap(b);
    assert_eq!(snap.status, Status::Paused, "queued work pauses at once");
    assert_eq!(snap.pause_reason, Some(PauseReason::Deadline));
    assert!(!snap.retained_context, "no session exists yet");
    assert_eq!(h.coord.queued().count(), 0);
    h.resume(b, "Continuation").unwrap();
    h.complete(a);
    let start = starts(&h.log).into_iter().find(|s| s.child == b).unwrap();
    assert!(!start.resume_session);
    assert_eq!(
        start.prompts,
        vec!["original assignment".to_owned(), "Continuation".to_owned()]
    );
    assert_eq!(code(&h.resume(b, "x")), "invalid-state");
}

#[test]
fn admission_and_resume_arm_the_window_deadline() {
    let mut h = Harness::new();
    let limits = LimitOverrides {
        deadline_ms: Some(5_000),
        ..LimitOverrides::default()
    };
    let (_, effects) = h.call_effects(|request| slate::core::Input::Admit {
        request,
        actor: ROOT,
        tasks: vec![with_limits(scout("a"), limits)],
        background: true,
    });
    let a = h.coord.list()[0].child_ref();
    let armed = |effects: &[Effect]| {
        effects
            .iter()
            .filter_map(|e| match e {
                Effect::ArmTimer {
                    key: slate::core::TimerKey::Deadline { child, window },
                    at,
                } => Some((*child, *window, *at)),
                _ => None,
            })
            .collect::<Vec<_>>()
    };
    assert_eq!(
        armed(&effects),
        vec![(a, 1, h.now + 5_000)],
        "queue time counts too"
    );
    h.ready(a);
    h.deadline(a);
    h.exited(a);
    h.now += 1_000_000;
    let (_, effects) = h.call_effects(|request| slate::core::Input::Resume {
        request,
        actor: ROOT,
        target: a,
        assignment: "Continue".into(),
    });
    assert_eq!(armed(&effects), vec![(a, 2, h.now + 5_000)]);
}

#[test]
fn a_refused_resume_leaves_the_paused_conversation_intact() {
    let mut h = Harness::with(policy(1, 0));
    let a = h.running(scout("a"));
    paused_after(&mut h, a, 1);
    let _b = h.running(scout("b holds the only permit"));
    let rows = [
        ("queue full", "queue-full", "Continue"),
        ("blank continuation", "blank-assignment", "  "),
    ];
    for (label, code, text) in rows {
        let request = h.request();
        crate::support::assert_refused_unchanged(
            &mut h,
            label,
            code,
            slate::core::Input::Resume {
                request,
                actor: ROOT,
                target: a,
                assignment: text.into(),
            },
        );
    }
    let snap = h.snap(a);
    assert_eq!(snap.status, Status::Paused);
    assert!(snap.retained_context);
}

#[test]
fn nested_resume_needs_the_parent_running_and_immediate_capacity() {
    let mut h = Harness::with(policy(3, 8));
    let p = h.running(coordinator_general("p"));
    let c = h.admit_one(Party::Child(p), scout("c"));
    h.ready(c);
    h.deadline(p);
    h.exited(c);
    h.exited(p);
    assert_eq!((h.status(p), h.status(c)), (Status::Paused, Status::Paused));
    assert_eq!(
        code(&h.resume(c, "Continue")),
        "parent-inactive",
        "resume the parent first"
    );
    h.resume(p, "Continue").unwrap();
    h.ready(p);
    let _fill = h.admit(ROOT, vec![scout("x"), scout("y")]);
    assert_eq!(
        code(&h.resume(c, "Continue")),
        "nested-capacity-unavailable"
    );
    assert_eq!(h.status(c), Status::Paused);
}

#[test]
fn a_pause_during_setup_is_also_pre_session() {
    let mut h = Harness::new();
    let a = h.admit_one(ROOT, scout("original"));
    h.deadline(a);
    h.exited(a);
    assert_eq!(h.status(a), Status::Paused);
    assert!(!h.snap(a).retained_context);
    h.resume(a, "Continuation").unwrap();
    let start = starts(&h.log).pop().unwrap();
    assert_eq!(
        start.prompts,
        vec!["original".to_owned(), "Continuation".to_owned()]
    );
    assert!(!start.resume_session);
}

#[test]
fn a_resume_is_bounded_by_the_admitted_and_the_current_limits() {
    let mut h = Harness::with(policy(4, 8));
    let a = h.running(scout("a"));
    paused_after(&mut h, a, 2);
    let admitted = h.snap(a).limits;
    // The operator lowers the deadline and the request budget, and raises the tool budget.
    let current = slate::policy::scheduling::SchedulingPolicy {
        deadline_ms: 5_000,
        requests: 3,
        tools: 1000,
        ..policy(4, 8)
    };
    h.call(|request| slate::core::Input::Configure {
        request,
        policy: current,
    })
    .unwrap();
    assert_eq!(
        h.snap(a).limits,
        admitted,
        "a paused generation keeps its limits"
    );
    h.resume(a, "Continue").unwrap();
    let snap = h.snap(a);
    assert_eq!(
        snap.limits.deadline_ms, 5_000,
        "the shorter current deadline"
    );
    assert_eq!(snap.limits.requests, 3, "the lower current request budget");
    assert_eq!(
        snap.limits.tools, admitted.tools,
        "never above the admitted limit"
    );
    assert_eq!(snap.window.deadline_at - snap.window.started_at, 5_000);
    h.ready(a);
    h.event(a, WorkerEvent::RequestStart);
    assert!(h.snap(a).limit_reason.is_none(), "the third request fits");
    h.event(a, WorkerEvent::RequestStart);
    assert_eq!(
        h.snap(a).limit_reason,
        Some(LimitReason::Requests),
        "the fourth passes the current budget of three (counts are cumulative)"
    );
}

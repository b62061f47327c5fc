//! Rule 8 — stop, stopMany and shutdown [Registry, controls and final delivery].

use slate::core::{Effect, Input, Party, Presence, Reply, Status, WaitResult};

use crate::support::{
    Harness, ROOT, aborts, assert_refused_unchanged, code, coordinator_general, policy, scout,
    starts, talking_scout, writer,
};

#[test]
fn stop_many_marks_the_whole_set_before_any_dequeue() {
    let mut h = Harness::with(policy(1, 8));
    let refs = h.admit(ROOT, vec![scout("a"), scout("b"), scout("c")]);
    let (a, b, c) = (refs[0], refs[1], refs[2]);
    h.ready(a);
    let (request, effects) = h.call_effects(|request| Input::StopMany {
        request,
        actor: ROOT,
        targets: vec![a, b],
    });
    assert!(matches!(
        crate::support::reply_to(&effects, request),
        Some(Ok(Reply::Stopped { .. }))
    ));
    assert!(
        starts(&effects).is_empty(),
        "nothing is dequeued by the stop itself"
    );
    assert_eq!(h.status(a), Status::Draining);
    assert_eq!(h.status(b), Status::Cancelled);
    assert_eq!(h.status(c), Status::Queued, "a still holds the permit");
    h.exited(a);
    assert_eq!(h.status(a), Status::Cancelled);
    assert_eq!(h.status(c), Status::Setup, "c starts only after a drained");
    assert_eq!(h.started(), vec![a, c], "b never started");
}

/// Cancelling a queued head writer unblocks the readers behind it: a stopMany that also
/// names such a reader must have marked it before that unblocking can dequeue it.
#[test]
fn stop_many_marks_blocked_siblings_before_unblocking_dequeues_them() {
    let mut h = Harness::with(policy(2, 8));
    let refs = h.admit(
        ROOT,
        vec![writer("w1"), writer("w2"), scout("r1"), scout("r2")],
    );
    let (w2, r1, r2) = (refs[1], refs[2], refs[3]);
    assert_eq!(
        (h.status(w2), h.status(r1)),
        (Status::Queued, Status::Queued)
    );
    h.call(|request| Input::StopMany {
        request,
        actor: ROOT,
        targets: vec![w2, r1],
    })
    .unwrap();
    assert_eq!(
        h.status(r1),
        Status::Cancelled,
        "r1 was marked, never started"
    );
    assert!(!h.started().contains(&r1));
    assert_eq!(
        h.status(r2),
        Status::Setup,
        "the unmarked reader may now start"
    );
}

#[test]
fn stop_many_with_one_unknown_target_stops_nothing() {
    let mut h = Harness::new();
    let a = h.running(scout("a"));
    let unknown = slate::core::ChildRef::new(uuid::Uuid::nil(), 1);
    let request = h.request();
    assert_refused_unchanged(
        &mut h,
        "stopMany with an unknown target",
        "unknown-identity",
        Input::StopMany {
            request,
            actor: ROOT,
            targets: vec![a, unknown],
        },
    );
}

#[test]
fn stop_cancels_the_pinned_subtree_only() {
    let mut h = Harness::new();
    let p = h.running(coordinator_general("p"));
    let other = h.running(scout("unrelated"));
    let c = h.admit_one(Party::Child(p), scout("c"));
    h.ready(c);
    let (_, effects) = h.call_effects(|request| Input::Stop {
        request,
        actor: ROOT,
        target: p,
    });
    assert_eq!(aborts(&effects), vec![p, c], "the target, then its subtree");
    assert_eq!(h.status(other), Status::Running);
    h.exited(p);
    assert_eq!(
        h.status(p),
        Status::Draining,
        "the parent drains after its child"
    );
    h.exited(c);
    assert_eq!(
        (h.status(p), h.status(c)),
        (Status::Cancelled, Status::Cancelled)
    );
    assert!(h.snap(c).error.unwrap().contains("ancestor"));
    let children = h.call(|request| Input::Stop {
        request,
        actor: Party::Child(other),
        target: c,
    });
    assert_eq!(code(&children), "root-only", "children cannot stop");
}

#[test]
fn repeated_stop_is_harmless() {
    let mut h = Harness::new();
    let a = h.running(scout("a"));
    h.stop(a).unwrap();
    let after_first = h.coord.clone();
    let (request, effects) = h.call_effects(|request| Input::Stop {
        request,
        actor: ROOT,
        target: a,
    });
    assert!(matches!(
        crate::support::reply_to(&effects, request),
        Some(Ok(Reply::Snapshot { .. }))
    ));
    assert!(aborts(&effects).is_empty(), "no second abort");
    assert!(h.coord == after_first, "a repeated stop changes nothing");
    h.exited(a);
    h.stop(a).unwrap();
    assert_eq!(h.status(a), Status::Cancelled);
}

#[test]
fn settled_results_stay_settled() {
    type Step = fn(&mut Harness, slate::core::ChildRef);
    let rows: &[(&str, Step)] = &[
        ("disposed", |h, r| {
            h.complete(r);
        }),
        ("resolved and publishing", |h, r| {
            h.ready(r);
            h.settle(r, "the answer");
        }),
    ];
    for &(label, step) in rows {
        let mut h = Harness::new();
        let refs = h.admit(ROOT, vec![scout("a"), scout("b")]);
        step(&mut h, refs[0]);
        h.ready(refs[1]);
        h.call(|request| Input::StopMany {
            request,
            actor: ROOT,
            targets: refs.clone(),
        })
        .unwrap();
        h.published(refs[0]);
        h.exited(refs[0]);
        h.exited(refs[1]);
        let snap = h.snap(refs[0]);
        assert_eq!(snap.status, Status::Settled, "{label}");
        assert!(snap.error.is_none(), "{label}");
        assert_eq!(
            snap.result.as_deref(),
            Some(if label == "disposed" {
                "done"
            } else {
                "the answer"
            })
        );
        assert_eq!(h.status(refs[1]), Status::Cancelled, "{label}");
        assert_eq!(
            h.presence(refs[0]),
            Presence::Stopped,
            "{label}: stop closes presence"
        );
    }
}

#[test]
fn shutdown_closes_admission_and_dequeue_at_once() {
    let mut h = Harness::with(policy(1, 8));
    let a = h.running(scout("a"));
    let b = h.admit_one(ROOT, scout("b"));
    let effects = h.shutdown();
    assert!(starts(&effects).is_empty());
    assert_eq!(aborts(&effects), vec![a]);
    assert_eq!(
        h.status(b),
        Status::Cancelled,
        "queued work is cancelled, never started"
    );
    assert!(h.coord.is_shutting_down());
    for (label, input) in [
        (
            "admit",
            Input::Admit {
                request: h.request(),
                actor: ROOT,
                tasks: vec![scout("late")],
                background: true,
            },
        ),
        (
            "resume",
            Input::Resume {
                request: h.request(),
                actor: ROOT,
                target: a,
                assignment: "x".into(),
            },
        ),
        (
            "message",
            Input::Message {
                request: h.request(),
                actor: ROOT,
                target: Some(a),
                text: "x".into(),
                mode: slate::core::MessageMode::Inbox,
            },
        ),
        (
            "wait",
            Input::Wait {
                request: h.request(),
                actor: ROOT,
                target: Some(a),
                message_id: None,
                timeout_ms: 10,
            },
        ),
        (
            "configure",
            Input::Configure {
                request: h.request(),
                policy: policy(2, 8),
            },
        ),
    ] {
        assert_refused_unchanged(&mut h, label, "shutdown", input);
    }
    h.exited(a);
    assert!(!h.started().contains(&b));
}

#[test]
fn shutdown_suppresses_window_outcomes_wakes_waiters_and_completes_after_workers_exit() {
    let mut h = Harness::with(policy(4, 8));
    let (_, refs) = h
        .try_admit(ROOT, vec![talking_scout("a"), scout("b")], true)
        .unwrap();
    let (a, b) = (refs[0], refs[1]);
    h.ready(a);
    h.ready(b);
    let (root_wait, _) = h.wait(ROOT, Some(b), None, 60_000);
    let (child_wait, _) = h.wait(Party::Child(a), None, None, 60_000);
    let effects = h.shutdown();
    for request in [root_wait, child_wait] {
        assert!(
            matches!(
                crate::support::reply_to(&effects, request),
                Some(Ok(Reply::Wait {
                    result: WaitResult::Shutdown
                }))
            ),
            "every waiter wakes with shutdown"
        );
    }
    assert!(
        !effects.contains(&Effect::ShutdownComplete),
        "workers are still live"
    );
    h.exited(a);
    assert!(!h.log.contains(&Effect::ShutdownComplete));
    let last = h.exited(b);
    assert!(last.contains(&Effect::ShutdownComplete));
    assert!(h.coord.is_shut_down());
    assert!(
        h.window_outcomes().is_empty(),
        "final deliveries are suppressed"
    );
    assert_eq!(h.coord.stats().active_permits, 0);
    for r in [a, b] {
        let snap = h.snap(r);
        assert_eq!(snap.status, Status::Cancelled);
        assert!(snap.disposed);
        assert_eq!(h.presence(r), Presence::Stopped);
    }
    let again = h.shutdown();
    assert!(
        !again.contains(&Effect::ShutdownComplete),
        "shutdown completes once"
    );
}

#[test]
fn shutdown_closes_idle_parked_and_paused_presence() {
    let mut h = Harness::new();
    let refs = h.admit(ROOT, vec![scout("idle"), scout("parked"), scout("paused")]);
    h.complete(refs[0]);
    h.complete(refs[1]);
    h.park(refs[1]).unwrap();
    h.ready(refs[2]);
    h.deadline(refs[2]);
    h.exited(refs[2]);
    let effects = h.shutdown();
    assert!(
        effects.contains(&Effect::ShutdownComplete),
        "nothing was live"
    );
    for &r in &refs {
        assert_eq!(h.presence(r), Presence::Stopped, "{r}");
    }
    assert_eq!(h.status(refs[0]), Status::Settled);
    assert_eq!(h.status(refs[2]), Status::Cancelled);
}

/// A generation already publishing its resolved prompt keeps its settled result, but a
/// stop (or shutdown) still closes its presence: it can never be renewed afterwards.
#[test]
fn stop_or_shutdown_during_publication_keeps_the_result_and_closes_presence() {
    for shutdown in [false, true] {
        let label = if shutdown { "shutdown" } else { "stop" };
        let mut h = Harness::new();
        let a = h.running(scout("a"));
        h.settle(a, "the answer");
        assert_eq!(h.status(a), Status::Draining);
        if shutdown {
            h.shutdown();
        } else {
            h.stop(a).unwrap();
        }
        h.published(a);
        let effects = h.exited(a);
        let snap = h.snap(a);
        assert_eq!(
            snap.status,
            Status::Settled,
            "{label}: the settled result is preserved"
        );
        assert_eq!(snap.result.as_deref(), Some("the answer"));
        assert!(snap.disposed);
        assert_eq!(
            h.presence(a),
            Presence::Stopped,
            "{label}: presence is closed"
        );
        if shutdown {
            assert!(effects.contains(&Effect::ShutdownComplete));
        } else {
            assert_eq!(code(&h.followup(a)), "invalid-presence");
        }
    }
}

#[test]
fn stop_wins_over_a_deadline_pause_in_progress() {
    let mut h = Harness::new();
    let a = h.running(scout("a"));
    h.deadline(a);
    assert_eq!(h.status(a), Status::Pausing);
    h.stop(a).unwrap();
    assert_eq!(h.status(a), Status::Draining);
    assert!(h.snap(a).pause_reason.is_none());
    h.exited(a);
    let snap = h.snap(a);
    assert_eq!(snap.status, Status::Cancelled);
    assert!(snap.disposed);
    let outcomes = h.window_outcomes();
    assert_eq!(outcomes.len(), 1);
    assert_eq!(outcomes[0].outcomes[0].status, Status::Cancelled);
}

#[test]
fn root_only_controls_are_rejected_from_children() {
    let mut h = Harness::new();
    let p = h.running(coordinator_general("p"));
    let idle = h.admit_one(ROOT, scout("idle"));
    h.complete(idle);
    let child = Party::Child(p);
    let renewal = || slate::core::Renewal::keep_grants("x");
    for (label, input) in [
        (
            "stop",
            Input::Stop {
                request: h.request(),
                actor: child,
                target: idle,
            },
        ),
        (
            "stopMany",
            Input::StopMany {
                request: h.request(),
                actor: child,
                targets: vec![idle],
            },
        ),
        (
            "park",
            Input::Park {
                request: h.request(),
                actor: child,
                target: idle,
            },
        ),
        (
            "resume",
            Input::Resume {
                request: h.request(),
                actor: child,
                target: idle,
                assignment: "x".into(),
            },
        ),
        (
            "followup",
            Input::Followup {
                request: h.request(),
                actor: child,
                target: idle,
                renewal: renewal(),
            },
        ),
        (
            "revive",
            Input::Revive {
                request: h.request(),
                actor: child,
                target: idle,
                renewal: renewal(),
            },
        ),
    ] {
        assert_refused_unchanged(&mut h, label, "root-only", input);
    }
    // The contract's wording, naming the child that asked.
    let refused = h.call(|request| Input::Park {
        request,
        actor: child,
        target: idle,
    });
    assert_eq!(
        refused.unwrap_err().to_string(),
        format!("park: root-only action; child {p} cannot call it")
    );
}

#[test]
fn stop_before_setup_finishes_cancels_without_publication() {
    let mut h = Harness::new();
    let a = h.admit_one(ROOT, scout("a"));
    assert_eq!(h.status(a), Status::Setup);
    h.stop(a).unwrap();
    h.exited(a);
    let snap = h.snap(a);
    assert_eq!(snap.status, Status::Cancelled);
    assert!(snap.transcript.is_none() && snap.artifacts.is_none());
    assert!(!h.log.iter().any(|e| matches!(e, Effect::Publish { .. })));
}

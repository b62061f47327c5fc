//! Rule 9 — delivery [Registry, controls and final delivery]: one ordered window outcome
//! per call after all its items drain (paused or disposed); no per-item messages.

use slate::core::{Delivery, Party, Reply, Status};

use crate::support::{Harness, ROOT, coordinator_general, policy, reply_to, scout};

#[test]
fn every_call_gets_exactly_one_ordered_window_outcome_after_all_items_drain() {
    for background in [false, true] {
        let label = if background {
            "background"
        } else {
            "foreground"
        };
        let mut h = Harness::with(policy(2, 8));
        let (request, effects) = h.call_effects(|request| slate::core::Input::Admit {
            request,
            actor: ROOT,
            tasks: vec![scout("a"), scout("b"), scout("c")],
            background,
        });
        let Some(Ok(Reply::Admitted { call, children })) = reply_to(&effects, request) else {
            panic!("{label}: admission");
        };
        let statuses: Vec<Status> = children.iter().map(|s| s.status).collect();
        assert_eq!(
            statuses,
            [Status::Setup, Status::Setup, Status::Queued],
            "{label}: accepted snapshots are returned at once"
        );
        let refs: Vec<_> = children
            .iter()
            .map(slate::core::ChildSnapshot::child_ref)
            .collect();
        // Finish out of order: c (after b's permit), then b, then a.
        h.ready(refs[1]);
        h.complete(refs[1]);
        h.complete(refs[2]);
        assert!(
            h.window_outcomes().is_empty(),
            "{label}: no per-item completion delivery"
        );
        h.ready(refs[0]);
        h.complete(refs[0]);
        let outcomes = h.window_outcomes();
        assert_eq!(outcomes.len(), 1, "{label}: exactly one window outcome");
        let w = &outcomes[0];
        assert_eq!(
            (w.call, w.request, w.initiator),
            (call, request, ROOT),
            "{label}"
        );
        let expected = if background {
            Delivery::Background
        } else {
            Delivery::Foreground
        };
        assert_eq!(w.delivery, expected, "{label}");
        let ordered: Vec<_> = w
            .outcomes
            .iter()
            .map(slate::core::ChildSnapshot::child_ref)
            .collect();
        assert_eq!(ordered, refs, "{label}: outcomes follow input order");
        assert!(
            w.outcomes
                .iter()
                .all(|s| s.disposed && s.status == Status::Settled)
        );
    }
}

#[test]
fn a_paused_item_ends_its_window_without_disposal() {
    let mut h = Harness::new();
    let (_, refs) = h
        .try_admit(ROOT, vec![scout("a"), scout("b")], true)
        .unwrap();
    h.ready(refs[0]);
    h.deadline(refs[0]);
    h.exited(refs[0]);
    assert!(h.window_outcomes().is_empty(), "b has not drained");
    h.complete(refs[1]);
    let outcomes = h.window_outcomes();
    assert_eq!(outcomes.len(), 1);
    let a = &outcomes[0].outcomes[0];
    assert_eq!((a.status, a.disposed), (Status::Paused, false));
    assert_eq!(outcomes[0].outcomes[1].status, Status::Settled);
}

#[test]
fn resume_gets_its_own_background_window_outcome() {
    let mut h = Harness::new();
    let a = h.running(scout("a"));
    h.deadline(a);
    h.exited(a);
    assert_eq!(h.window_outcomes().len(), 1);
    h.resume(a, "Continue").unwrap();
    h.complete(a);
    let outcomes = h.window_outcomes();
    assert_eq!(outcomes.len(), 2, "one notification for the resumed window");
    assert_eq!(outcomes[1].delivery, Delivery::Background);
    assert_eq!(outcomes[1].outcomes[0].status, Status::Settled);
    assert_eq!(outcomes[1].outcomes[0].window.number, 2);
}

#[test]
fn followup_and_revive_windows_are_silent() {
    let mut h = Harness::new();
    let a = h.admit_one(ROOT, scout("a"));
    h.complete(a);
    let a2 = h.followup(a).unwrap();
    h.complete(a2);
    h.park(a2).unwrap();
    let a3 = h.revive(a2).unwrap();
    h.complete(a3);
    let deliveries: Vec<Delivery> = h.window_outcomes().iter().map(|w| w.delivery).collect();
    assert_eq!(
        deliveries,
        [Delivery::Foreground, Delivery::Silent, Delivery::Silent]
    );
}

#[test]
fn nested_foreground_windows_are_delivered_to_the_delegating_child() {
    let mut h = Harness::new();
    let p = h.running(coordinator_general("p"));
    let (request, effects) = h.call_effects(|request| slate::core::Input::Admit {
        request,
        actor: Party::Child(p),
        tasks: vec![scout("c1"), scout("c2")],
        background: false,
    });
    let Some(Ok(Reply::Admitted { children, .. })) = reply_to(&effects, request) else {
        panic!("nested admission");
    };
    for s in &children {
        h.ready(s.child_ref());
        h.fail(s.child_ref(), "provider error");
    }
    let outcomes = h.window_outcomes();
    assert_eq!(outcomes.len(), 1);
    assert_eq!(outcomes[0].initiator, Party::Child(p));
    assert_eq!(outcomes[0].delivery, Delivery::Foreground);
    assert!(
        outcomes[0]
            .outcomes
            .iter()
            .all(|s| s.status == Status::Failed)
    );
}

#[test]
fn cancelled_and_setup_failed_items_still_count_toward_the_one_outcome() {
    let mut h = Harness::with(policy(1, 8));
    let (_, refs) = h
        .try_admit(ROOT, vec![scout("a"), scout("b"), scout("c")], true)
        .unwrap();
    h.event(
        refs[0],
        slate::core::WorkerEvent::SetupFailed {
            error: "no auth".into(),
        },
    );
    h.exited(refs[0]);
    h.stop(refs[2]).unwrap();
    h.complete(refs[1]);
    let outcomes = h.window_outcomes();
    assert_eq!(outcomes.len(), 1);
    let statuses: Vec<Status> = outcomes[0].outcomes.iter().map(|s| s.status).collect();
    assert_eq!(
        statuses,
        [Status::Failed, Status::Settled, Status::Cancelled]
    );
}

/// [Registry, controls and final delivery]: "Caller foreground cancellation marks all
/// unsettled assignments then drains their subtrees; settled outcomes remain settled."
#[test]
fn a_cancelled_foreground_call_marks_every_unsettled_member_then_drains_to_its_one_outcome() {
    let mut h = Harness::with(slate::policy::scheduling::SchedulingPolicy {
        depth: 3,
        ..policy(4, 8)
    });
    let mut spec = coordinator_general("p");
    spec.spawn.push(slate::core::Role::General);
    let p = h.running(spec);
    let (request, effects) = h.call_effects(|request| slate::core::Input::Admit {
        request,
        actor: Party::Child(p),
        tasks: vec![scout("done"), coordinator_general("busy"), scout("setup")],
        background: false,
    });
    let Some(Ok(Reply::Admitted { children, .. })) = reply_to(&effects, request) else {
        panic!("nested admission");
    };
    let refs: Vec<_> = children
        .iter()
        .map(slate::core::ChildSnapshot::child_ref)
        .collect();
    h.complete(refs[0]);
    h.ready(refs[1]);
    // A grandchild under the busy member: the subtree is marked too.
    let g = h.admit_one(Party::Child(refs[1]), scout("grandchild"));
    h.ready(g);

    let effects = h.handle(slate::core::Input::CancelCall { request });
    let mut aborted = crate::support::aborts(&effects);
    aborted.sort();
    let mut want = vec![refs[1], refs[2], g];
    want.sort();
    assert_eq!(
        aborted, want,
        "every unsettled member and its subtree, in one step"
    );
    assert_eq!(h.status(refs[0]), Status::Settled, "settled stays settled");
    assert_eq!(h.presence(refs[0]), slate::core::Presence::Idle);
    for &r in &[refs[1], refs[2], g] {
        assert_eq!(h.status(r), Status::Draining, "{r}");
    }
    assert_eq!(h.status(p), Status::Running, "the caller itself goes on");
    // Repeating it, or cancelling a call that does not exist, is harmless.
    assert!(
        crate::support::aborts(&h.handle(slate::core::Input::CancelCall { request })).is_empty()
    );
    h.handle(slate::core::Input::CancelCall {
        request: slate::core::RequestId(9_999),
    });
    assert!(h.window_outcomes().is_empty(), "not before the drain");

    for r in [g, refs[1], refs[2]] {
        h.exited(r);
    }
    let outcomes = h.window_outcomes();
    assert_eq!(
        outcomes.len(),
        2,
        "the grandchild's own call, then the cancelled one"
    );
    let w = outcomes.last().unwrap();
    let statuses: Vec<Status> = w.outcomes.iter().map(|s| s.status).collect();
    assert_eq!(
        statuses,
        [Status::Settled, Status::Cancelled, Status::Cancelled]
    );
    let error = w.outcomes[1].error.as_deref().unwrap();
    assert!(error.contains("cancelled the foreground call"), "{error}");
    assert!(w.outcomes[1].limit_reason.is_none());
    assert_eq!(
        h.coord.stats().active_permits,
        1,
        "only the caller holds a permit"
    );
}

#[test]
fn cancelling_a_background_call_by_its_request_changes_nothing() {
    let mut h = Harness::new();
    let (request, _) = h.call_effects(|request| slate::core::Input::Admit {
        request,
        actor: ROOT,
        tasks: vec![scout("a")],
        background: true,
    });
    let before = h.coord.clone();
    let effects = h.handle(slate::core::Input::CancelCall { request });
    assert!(effects.is_empty(), "{effects:?}");
    assert!(h.coord == before);
}

/// The outcome of a call reached its initiator (`Input::OutcomeDelivered`): each generation it
/// carried is marked `deliveredAt` once; another party's word marks nothing; a new window
/// (resume) is undelivered again.
#[test]
fn an_outcome_is_marked_delivered_only_by_the_party_that_started_its_call() {
    let mut h = Harness::with(policy(4, 8));
    let (call, refs) = h
        .try_admit(ROOT, vec![scout("a"), scout("b")], true)
        .unwrap();
    h.complete(refs[0]);
    let delivered = |h: &mut Harness, actor: Party, call| match h.call(|request| {
        slate::core::Input::OutcomeDelivered {
            request: Some(request),
            actor,
            call,
        }
    }) {
        Ok(Reply::Delivered { generations }) => generations,
        other => panic!("outcomeDelivered answered {other:?}"),
    };
    // Not drained yet (b is open): nothing carried the call's outcome.
    assert_eq!(delivered(&mut h, ROOT, call), 0);
    h.complete(refs[1]);
    assert_eq!(h.window_outcomes().len(), 1);
    // A child is not the initiator.
    assert_eq!(delivered(&mut h, Party::Child(refs[0]), call), 0);
    assert!(h.snap(refs[0]).delivered_at.is_none());
    assert_eq!(delivered(&mut h, ROOT, call), 2);
    assert!(h.snap(refs[0]).delivered_at.is_some() && h.snap(refs[1]).delivered_at.is_some());
    assert_eq!(delivered(&mut h, ROOT, call), 0, "once");

    // Paused by its deadline, its window drains; delivered; a resume opens a new window.
    let (pause_call, paused) = h.try_admit(ROOT, vec![scout("c")], true).unwrap();
    let c = paused[0];
    h.ready(c);
    h.deadline(c);
    h.exited(c);
    assert_eq!(h.status(c), Status::Paused);
    assert_eq!(delivered(&mut h, ROOT, pause_call), 1);
    assert!(h.snap(c).delivered_at.is_some());
    h.resume(c, "Continue").unwrap();
    assert!(
        h.snap(c).delivered_at.is_none(),
        "the new window is not delivered"
    );
    assert_eq!(
        delivered(&mut h, ROOT, pause_call),
        0,
        "the old call is not this window's"
    );
}

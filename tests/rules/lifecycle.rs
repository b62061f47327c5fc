//! Rule 2 — lifecycle: `queued → setup → running → settled|failed|cancelled`,
//! `pausing → paused → queued`, `draining`, resource facts, and presence kept apart.

use slate::core::{Effect, Presence, Status, WorkerEvent};

use crate::support::{Harness, ROOT, coordinator_general, policy, scout};

#[test]
fn status_moves_queued_setup_running_draining_settled() {
    let mut h = Harness::with(policy(1, 8));
    let refs = h.admit(ROOT, vec![scout("a"), scout("b")]);
    let (a, b) = (refs[0], refs[1]);
    assert_eq!(h.status(b), Status::Queued);
    assert_eq!(
        h.status(a),
        Status::Setup,
        "dequeue is synchronous with admission"
    );
    h.ready(a);
    assert_eq!(h.status(a), Status::Running);
    let effects = h.settle(a, "  final text  ");
    assert_eq!(
        h.status(a),
        Status::Draining,
        "publication drains before settling"
    );
    assert!(
        effects
            .iter()
            .any(|e| matches!(e, Effect::Publish { child, .. } if *child == a))
    );
    assert!(
        effects
            .iter()
            .any(|e| matches!(e, Effect::ReleaseWorker { child } if *child == a))
    );
    assert!(!h.snap(a).disposed);
    h.published(a);
    assert_eq!(
        h.status(a),
        Status::Draining,
        "the worker has not exited yet"
    );
    h.exited(a);
    let snap = h.snap(a);
    assert_eq!(snap.status, Status::Settled);
    assert!(snap.disposed);
    assert_eq!(snap.result.as_deref(), Some("final text"));
    assert_eq!(snap.ended_at, Some(h.now));
    assert!(snap.error.is_none());
    assert_eq!(
        h.status(b),
        Status::Setup,
        "the drained permit goes to the queue head"
    );
}

#[test]
fn prompt_resolving_with_an_error_fails_the_generation() {
    let cases = [
        (
            "assistant error",
            vec![WorkerEvent::Settled {
                error: Some("rate limited".into()),
            }],
            "rate limited",
        ),
        (
            "setup failure",
            vec![WorkerEvent::SetupFailed {
                error: "no auth".into(),
            }],
            "setup failed: no auth",
        ),
    ];
    for (label, events, error) in cases {
        let mut h = Harness::new();
        let r = h.admit_one(ROOT, scout("a"));
        if label != "setup failure" {
            h.ready(r);
        }
        h.drive(r, events);
        h.published(r);
        h.exited(r);
        let snap = h.snap(r);
        assert_eq!(snap.status, Status::Failed, "{label}");
        assert!(snap.disposed, "{label}");
        assert!(
            snap.error.as_deref().unwrap().contains(error),
            "{label}: {:?}",
            snap.error
        );
        assert_eq!(
            h.presence(r),
            Presence::Idle,
            "{label}: failure is not stopped presence"
        );
    }
}

#[test]
fn worker_exit_before_prompt_resolution_fails_rather_than_succeeds() {
    let mut h = Harness::new();
    let r = h.running(scout("a"));
    h.event(
        r,
        WorkerEvent::AssistantMessage {
            text: "partial".into(),
            usage: None,
        },
    );
    h.event(
        r,
        WorkerEvent::Exited {
            reason: "signal 9".into(),
        },
    );
    h.published(r);
    assert_eq!(h.status(r), Status::Failed);
    assert!(h.snap(r).disposed);
}

#[test]
fn queued_work_cancels_directly_and_active_work_drains_before_cancelled() {
    let mut h = Harness::with(policy(1, 8));
    let refs = h.admit(ROOT, vec![scout("a"), scout("b")]);
    let (a, b) = (refs[0], refs[1]);
    h.ready(a);
    h.stop(b).unwrap();
    assert_eq!(
        h.status(b),
        Status::Cancelled,
        "queued work cancels without setup"
    );
    assert!(h.snap(b).disposed);
    assert!(!h.started().contains(&b));
    h.stop(a).unwrap();
    assert_eq!(
        h.status(a),
        Status::Draining,
        "active cancellation exposes draining"
    );
    assert!(!h.snap(a).disposed);
    h.event(
        a,
        WorkerEvent::Settled {
            error: Some("aborted".into()),
        },
    );
    h.published(a);
    assert_eq!(h.status(a), Status::Draining);
    h.exited(a);
    assert_eq!(h.status(a), Status::Cancelled);
    assert!(h.snap(a).disposed);
}

#[test]
fn deadline_moves_running_through_pausing_to_paused_and_resume_to_queued() {
    let mut h = Harness::with(policy(1, 8));
    let a = h.running(scout("a"));
    let b = h.admit_one(ROOT, scout("b"));
    h.deadline(a);
    assert_eq!(h.status(a), Status::Pausing);
    h.exited(a);
    assert_eq!(h.status(a), Status::Paused);
    assert!(!h.snap(a).disposed, "paused is not disposed");
    assert_eq!(h.status(b), Status::Setup);
    h.resume(a, "Continue").unwrap();
    assert_eq!(h.status(a), Status::Queued, "b holds the only permit");
}

#[test]
fn parents_cannot_finalize_before_descendants_drain() {
    let mut h = Harness::new();
    let p = h.running(coordinator_general("parent"));
    let c = h.admit_one(slate::core::Party::Child(p), scout("child"));
    h.ready(c);
    // The parent's prompt resolves and its worker exits while the child still runs.
    h.settle(p, "parent done");
    h.published(p);
    h.exited(p);
    assert_eq!(
        h.status(p),
        Status::Draining,
        "the parent waits for its child"
    );
    assert!(!h.snap(p).disposed);
    assert_eq!(
        h.coord.stats().active_permits,
        2,
        "the draining parent keeps its permit"
    );
    h.complete(c);
    assert_eq!(h.status(p), Status::Settled);
    assert!(h.snap(p).disposed);
    assert_eq!(h.coord.stats().active_permits, 0);
}

#[test]
fn disposed_and_writer_lease_are_resource_facts() {
    let mut h = Harness::with(policy(2, 8));
    let w = h.admit_one(ROOT, crate::support::writer("edit"));
    assert!(
        h.snap(w).writer_lease,
        "a dispatched writer holds the lease"
    );
    assert_eq!(h.coord.stats().writer, Some(w));
    let w2 = h.admit_one(ROOT, crate::support::writer("edit more"));
    assert!(
        !h.snap(w2).writer_lease,
        "queue entries hold no writer lease"
    );
    h.ready(w);
    h.settle(w, "edited");
    assert!(
        h.snap(w).writer_lease,
        "the lease is kept until actual drain"
    );
    h.published(w);
    h.exited(w);
    assert!(!h.snap(w).writer_lease);
    assert!(h.snap(w2).writer_lease);
}

#[test]
fn presence_is_kept_separate_from_status() {
    let mut h = Harness::with(policy(1, 8));
    let a = h.admit_one(ROOT, scout("a"));
    assert_eq!(h.presence(a), Presence::Active);
    h.complete(a);
    assert_eq!(
        (h.status(a), h.presence(a)),
        (Status::Settled, Presence::Idle)
    );
    h.park(a).unwrap();
    assert_eq!(
        (h.status(a), h.presence(a)),
        (Status::Settled, Presence::Parked)
    );
    h.stop(a).unwrap();
    assert_eq!(
        (h.status(a), h.presence(a)),
        (Status::Settled, Presence::Stopped),
        "stop closes presence without rewriting the completed status"
    );
    let b = h.running(scout("b"));
    h.deadline(b);
    assert_eq!(h.presence(b), Presence::Pausing);
    h.exited(b);
    assert_eq!(h.presence(b), Presence::Paused);
}

//! Rule 4 — FIFO scheduling [Capacity and bounded execution], including nested allocation.

use slate::core::{Input, Party, Reply, Status};
use slate::policy::scheduling::SchedulingPolicy;

use crate::support::{Harness, ROOT, code, coordinator_general, policy, scout, writer};

fn permits(h: &Harness) -> u32 {
    h.coord.stats().active_permits
}

#[test]
fn permits_are_held_through_setup_running_pausing_and_draining_until_actual_drain() {
    // Each row brings `a` to a state; `b` must stay queued while `a` is there.
    type Step = fn(&mut Harness, slate::core::ChildRef);
    let rows: &[(&str, Status, Step)] = &[
        ("setup", Status::Setup, |_, _| {}),
        ("running", Status::Running, |h, a| {
            h.ready(a);
        }),
        ("pausing", Status::Pausing, |h, a| {
            h.ready(a);
            h.deadline(a);
        }),
        ("draining after stop", Status::Draining, |h, a| {
            h.ready(a);
            h.stop(a).unwrap();
        }),
        ("draining for publication", Status::Draining, |h, a| {
            h.ready(a);
            h.settle(a, "done");
            h.exited(a);
        }),
    ];
    for &(label, status, step) in rows {
        let mut h = Harness::with(policy(1, 8));
        let refs = h.admit(ROOT, vec![scout("a"), scout("b")]);
        let (a, b) = (refs[0], refs[1]);
        step(&mut h, a);
        assert_eq!(h.status(a), status, "{label}");
        assert_eq!(permits(&h), 1, "{label}: a still holds its permit");
        assert_eq!(
            h.status(b),
            Status::Queued,
            "{label}: b waits for actual drain"
        );
        // Actual drain releases the permit, and only then does b dispatch.
        match status {
            Status::Draining if label == "draining for publication" => {
                h.published(a);
            }
            _ => {
                h.exited(a);
                h.published(a);
            }
        }
        assert_eq!(
            h.status(b),
            Status::Setup,
            "{label}: b dispatched after drain"
        );
        assert_eq!(permits(&h), 1, "{label}");
    }
}

#[test]
fn a_head_writer_waiting_for_its_lease_blocks_later_readers() {
    let mut h = Harness::with(policy(3, 8));
    let refs = h.admit(ROOT, vec![writer("w1"), writer("w2"), scout("reader")]);
    let (w1, w2, r) = (refs[0], refs[1], refs[2]);
    assert_eq!(h.status(w1), Status::Setup);
    assert_eq!(h.status(w2), Status::Queued, "the lease is held by w1");
    assert_eq!(
        h.status(r),
        Status::Queued,
        "a free permit does not let the reader pass"
    );
    assert_eq!(permits(&h), 1);
    h.complete(w1);
    assert_eq!(h.status(w2), Status::Setup);
    assert_eq!(h.status(r), Status::Setup);
    assert_eq!(h.coord.stats().writer, Some(w2));
}

#[test]
fn a_parent_mutation_reservation_rejects_writer_batches_and_blocks_the_writer_lease() {
    let mut h = Harness::with(policy(1, 8));
    let reader = h.running(scout("reader"));
    let w = h.admit_one(ROOT, writer("queued writer"));
    h.call(|request| Input::ParentToolStart {
        request,
        call: "edit-1".into(),
        read_only: false,
    })
    .unwrap();
    let refused = h.try_admit(ROOT, vec![writer("another")], false);
    assert_eq!(code(&refused), "parent-mutation-reserved");
    assert!(
        h.try_admit(ROOT, vec![scout("readers still admit")], true)
            .is_ok()
    );
    h.complete(reader);
    assert_eq!(
        h.status(w),
        Status::Queued,
        "the reserved mutation holds the writer back"
    );
    assert_eq!(
        permits(&h),
        0,
        "and nothing behind the head writer overtakes it"
    );
    let released = h.call(|request| Input::ParentToolEnd {
        request,
        call: "edit-1".into(),
    });
    assert_eq!(released, Ok(Reply::Released { released: true }));
    assert_eq!(h.status(w), Status::Setup);
    assert!(h.snap(w).writer_lease);
}

#[test]
fn parent_mutations_are_rejected_while_a_child_holds_the_writer_lease() {
    let mut h = Harness::new();
    let w = h.running(writer("w"));
    let refused = h.call(|request| Input::ParentToolStart {
        request,
        call: "bash-1".into(),
        read_only: false,
    });
    assert_eq!(code(&refused), "writer-lease-held");
    let read_only = h.call(|request| Input::ParentToolStart {
        request,
        call: "read-1".into(),
        read_only: true,
    });
    assert!(read_only.is_ok(), "read-only parent tools are exempt");
    h.complete(w);
    let after = h.call(|request| Input::ParentToolStart {
        request,
        call: "bash-2".into(),
        read_only: false,
    });
    assert!(after.is_ok());
}

#[test]
fn lowering_concurrency_never_evicts_and_starts_nothing_until_below_the_new_maximum() {
    let mut h = Harness::with(policy(3, 8));
    let refs = h.admit(ROOT, vec![scout("a"), scout("b"), scout("c")]);
    for &r in &refs {
        h.ready(r);
    }
    h.call(|request| Input::Configure {
        request,
        policy: policy(1, 8),
    })
    .unwrap();
    for &r in &refs {
        assert_eq!(h.status(r), Status::Running, "{r} is not evicted");
    }
    assert_eq!(permits(&h), 3);
    let d = h.admit_one(ROOT, scout("d"));
    assert_eq!(h.status(d), Status::Queued);
    h.complete(refs[0]);
    assert_eq!(h.status(d), Status::Queued, "2 active is not below 1");
    h.complete(refs[1]);
    assert_eq!(h.status(d), Status::Queued, "1 active is not below 1");
    h.complete(refs[2]);
    assert_eq!(h.status(d), Status::Setup);
}

#[test]
fn nested_batches_admit_only_when_the_whole_batch_dispatches_immediately() {
    let mut h = Harness::with(policy(3, 8));
    let p = h.running(coordinator_general("p"));
    let refused = h.try_admit(
        Party::Child(p),
        vec![scout("a"), scout("b"), scout("c")],
        false,
    );
    assert_eq!(code(&refused), "nested-capacity-unavailable");
    assert!(h.coord.list().len() == 1, "no partial nested admission");
    let refs = h.admit(Party::Child(p), vec![scout("a"), scout("b")]);
    for r in refs {
        assert_eq!(h.status(r), Status::Setup, "nested work is never queued");
    }
    assert_eq!(permits(&h), 3);
}

#[test]
fn a_writer_under_a_writer_ancestor_is_rejected_even_with_capacity() {
    let mut spec = writer("writer parent");
    spec.spawn = vec![slate::core::Role::Implementation, slate::core::Role::Scout];
    let mut h = Harness::with(SchedulingPolicy::default());
    let p = h.running(spec);
    assert_eq!(permits(&h), 1, "15 permits are free");
    let refused = h.try_admit(Party::Child(p), vec![writer("nested writer")], false);
    assert_eq!(code(&refused), "writer-under-writer");
    // A reader under the writer is fine.
    assert!(
        h.try_admit(Party::Child(p), vec![scout("nested reader")], false)
            .is_ok()
    );
}

#[test]
fn a_parent_waiting_on_its_children_keeps_its_permit() {
    let mut h = Harness::with(policy(2, 8));
    let p = h.running(coordinator_general("p"));
    let c = h.admit_one(Party::Child(p), scout("c"));
    let x = h.admit_one(ROOT, scout("x"));
    assert_eq!(permits(&h), 2);
    assert_eq!(
        h.status(x),
        Status::Queued,
        "the waiting parent lends nothing"
    );
    h.ready(c);
    h.complete(c);
    assert_eq!(h.status(p), Status::Running);
    assert_eq!(
        h.status(x),
        Status::Setup,
        "the child's permit went to the queue head"
    );
    assert_eq!(permits(&h), 2);
}

#[test]
fn dequeue_is_fifo_across_calls() {
    let mut h = Harness::with(policy(1, 16));
    let a = h.admit_one(ROOT, scout("a"));
    let mut queued = Vec::new();
    for i in 0..5 {
        let (_, refs) = h
            .try_admit(ROOT, vec![scout(&format!("q{i}"))], true)
            .unwrap();
        queued.extend(refs);
    }
    h.complete(a);
    for &r in &queued {
        assert_eq!(h.status(r), Status::Setup);
        h.complete(r);
    }
    let mut expected = vec![a];
    expected.extend(&queued);
    assert_eq!(h.started(), expected);
}

#[test]
fn configure_validates_the_whole_policy_and_a_refusal_changes_nothing() {
    let rows = [
        (
            "zero concurrency",
            SchedulingPolicy {
                concurrency: 0,
                ..SchedulingPolicy::default()
            },
        ),
        (
            "concurrency above ceiling",
            SchedulingPolicy {
                concurrency: 17,
                ..SchedulingPolicy::default()
            },
        ),
        (
            "queue above ceiling",
            SchedulingPolicy {
                queue: 257,
                ..SchedulingPolicy::default()
            },
        ),
        (
            "zero batch",
            SchedulingPolicy {
                batch: 0,
                ..SchedulingPolicy::default()
            },
        ),
        (
            "zero deadline",
            SchedulingPolicy {
                deadline_ms: 0,
                ..SchedulingPolicy::default()
            },
        ),
        (
            "requests above ceiling",
            SchedulingPolicy {
                requests: 1001,
                ..SchedulingPolicy::default()
            },
        ),
    ];
    let mut h = Harness::new();
    h.running(scout("a"));
    for (label, policy) in rows {
        let input = Input::Configure {
            request: h.request(),
            policy,
        };
        crate::support::assert_refused_unchanged(&mut h, label, "invalid-policy", input);
    }
    let ok = SchedulingPolicy {
        queue: 0,
        depth: 0,
        spawns: 0,
        ..SchedulingPolicy::default()
    };
    assert!(
        h.call(|request| Input::Configure {
            request,
            policy: ok
        })
        .is_ok(),
        "0 is allowed there"
    );
}

#[test]
fn a_parent_tool_call_id_is_reserved_once() {
    let mut h = Harness::new();
    h.call(|request| Input::ParentToolStart {
        request,
        call: "edit-1".into(),
        read_only: false,
    })
    .unwrap();
    let input = Input::ParentToolStart {
        request: h.request(),
        call: "edit-1".into(),
        read_only: false,
    };
    crate::support::assert_refused_unchanged(
        &mut h,
        "duplicate call id",
        "duplicate-parent-call",
        input,
    );
    let released = h.call(|request| Input::ParentToolEnd {
        request,
        call: "edit-1".into(),
    });
    assert_eq!(released, Ok(Reply::Released { released: true }));
    assert!(
        h.try_admit(ROOT, vec![writer("w")], false).is_ok(),
        "the reservation was released"
    );
    let again = h.call(|request| Input::ParentToolEnd {
        request,
        call: "edit-1".into(),
    });
    assert_eq!(
        again,
        Ok(Reply::Released { released: false }),
        "a second end releases nothing"
    );
}

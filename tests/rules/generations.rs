//! Rule 6 — generations and presence [New assignments, generations and immutable history].

use slate::core::{ChildRef, Delivery, Input, Party, Presence, Renewal, Status};

use crate::support::{
    Harness, ROOT, assert_refused_unchanged, code, coordinator_general, scout, starts,
    talking_scout,
};

#[test]
fn a_disposed_non_cancelled_generation_has_idle_presence() {
    type Step = fn(&mut Harness, ChildRef);
    let rows: &[(&str, Step, Presence)] = &[
        (
            "settled",
            |h, r| {
                h.complete(r);
            },
            Presence::Idle,
        ),
        (
            "failed",
            |h, r| {
                h.ready(r);
                h.fail(r, "provider error");
            },
            Presence::Idle,
        ),
        (
            "cancelled",
            |h, r| {
                h.stop(r).unwrap();
                h.exited(r);
            },
            Presence::Stopped,
        ),
        (
            "draining (not yet disposed)",
            |h, r| {
                h.ready(r);
                h.settle(r, "done");
            },
            Presence::Active,
        ),
    ];
    for &(label, step, presence) in rows {
        let mut h = Harness::new();
        let r = h.admit_one(ROOT, scout("a"));
        step(&mut h, r);
        assert_eq!(h.presence(r), presence, "{label}");
    }
}

#[test]
fn park_applies_only_to_idle_presence() {
    let mut h = Harness::new();
    let active = h.running(scout("active"));
    let request = h.request();
    assert_refused_unchanged(
        &mut h,
        "park active work",
        "invalid-presence",
        Input::Park {
            request,
            actor: ROOT,
            target: active,
        },
    );
    let idle = h.admit_one(ROOT, scout("idle"));
    h.complete(idle);
    h.park(idle).unwrap();
    assert_eq!(h.presence(idle), Presence::Parked);
    assert!(
        h.coord.snapshot(idle).unwrap().disposed,
        "no session is retained while parked"
    );
    let request = h.request();
    assert_refused_unchanged(
        &mut h,
        "park parked",
        "invalid-presence",
        Input::Park {
            request,
            actor: ROOT,
            target: idle,
        },
    );
    let child = Party::Child(active);
    let request = h.request();
    assert_refused_unchanged(
        &mut h,
        "park from a child",
        "root-only",
        Input::Park {
            request,
            actor: child,
            target: idle,
        },
    );
}

#[test]
fn followup_renews_idle_and_revive_renews_parked_identities_silently() {
    let mut h = Harness::new();
    let a = h.admit_one(ROOT, scout("a"));
    h.complete(a);
    assert_eq!(
        code(&h.revive(a)),
        "invalid-presence",
        "revive needs parked"
    );
    let a2 = h.followup(a).unwrap();
    assert_eq!(a2, ChildRef::new(a.id, 2));
    assert_eq!(h.presence(a), Presence::Active);
    h.complete(a2);
    h.park(a2).unwrap();
    assert_eq!(
        code(&h.followup(a2)),
        "invalid-presence",
        "followup needs idle"
    );
    let a3 = h.revive(a2).unwrap();
    assert_eq!(a3, ChildRef::new(a.id, 3));
    h.complete(a3);
    let deliveries: Vec<Delivery> = h.window_outcomes().iter().map(|w| w.delivery).collect();
    assert_eq!(
        deliveries,
        [Delivery::Foreground, Delivery::Silent, Delivery::Silent]
    );
    let snap = h.snap(a3);
    assert_eq!(
        snap.telemetry.requests,
        Some(0),
        "budgets restart per assignment"
    );
    assert_eq!(snap.assignment, "revived assignment");
}

#[test]
fn exactly_one_of_two_concurrent_renewals_wins() {
    type Renew = fn(&mut Harness, ChildRef) -> Result<ChildRef, slate::core::Refusal>;
    let pairs: &[(&str, bool, Renew, Renew)] = &[
        (
            "followup, followup",
            false,
            |h, r| h.followup(r),
            |h, r| h.followup(r),
        ),
        (
            "revive, revive",
            true,
            |h, r| h.revive(r),
            |h, r| h.revive(r),
        ),
        (
            "revive, followup",
            true,
            |h, r| h.revive(r),
            |h, r| h.followup(r),
        ),
    ];
    for &(label, parked, first, second) in pairs {
        let mut h = Harness::new();
        let a = h.admit_one(ROOT, scout("a"));
        h.complete(a);
        if parked {
            h.park(a).unwrap();
        }
        let won = first(&mut h, a).unwrap_or_else(|e| panic!("{label}: {e}"));
        let lost = second(&mut h, a);
        assert_eq!(code(&lost), "stale-generation", "{label}");
        assert_eq!(won.generation, 2, "{label}");
        assert_eq!(
            h.coord.generations(a.id).len(),
            2,
            "{label}: exactly one new generation"
        );
    }
}

#[test]
fn an_identity_has_at_most_64_generations() {
    let mut h = Harness::new();
    let mut r = h.admit_one(ROOT, scout("a"));
    h.complete(r);
    for _ in 1..64 {
        r = h.followup(r).unwrap();
        h.complete(r);
    }
    assert_eq!(r.generation, 64);
    let request = h.request();
    assert_refused_unchanged(
        &mut h,
        "65th generation",
        "generation-limit",
        Input::Followup {
            request,
            actor: ROOT,
            target: r,
            renewal: Renewal::keep_grants("more"),
        },
    );
    h.park(r).unwrap();
    assert_eq!(code(&h.revive(r)), "generation-limit");
    assert_eq!(h.coord.generations(r.id).len(), 64);
}

#[test]
fn descendant_renewal_needs_the_exact_original_parent_generation_active() {
    let mut h = Harness::new();
    let p = h.running(coordinator_general("p"));
    let c = h.admit_one(Party::Child(p), scout("c"));
    h.complete(c);
    assert_eq!(h.presence(c), Presence::Idle);
    // The parent pauses: the child's renewal is refused and nothing changes.
    h.deadline(p);
    h.exited(p);
    assert_eq!(h.status(p), Status::Paused);
    let request = h.request();
    assert_refused_unchanged(
        &mut h,
        "followup under a paused parent",
        "parent-inactive",
        Input::Followup {
            request,
            actor: ROOT,
            target: c,
            renewal: Renewal::keep_grants("x"),
        },
    );
    // Once the exact parent generation runs again, the renewal is admitted under it.
    h.resume(p, "Continue").unwrap();
    h.ready(p);
    let c2 = h.followup(c).unwrap();
    let snap = h.snap(c2);
    assert_eq!((snap.parent_id, snap.parent_generation), (p.id, Some(1)));
    assert_eq!(snap.depth, 2);
    assert_eq!(
        h.snap(p).spawns,
        2,
        "a descendant renewal consumes a spawn slot"
    );
    assert_eq!(
        h.status(c2),
        Status::Setup,
        "nested renewals dispatch immediately"
    );
}

#[test]
fn descendant_renewal_rechecks_the_parent_spawn_budget() {
    let mut h = Harness::new();
    let p = h.running(crate::support::with_limits(
        coordinator_general("p"),
        slate::core::LimitOverrides {
            spawns: Some(1),
            ..Default::default()
        },
    ));
    let c = h.admit_one(Party::Child(p), scout("c"));
    h.complete(c);
    let request = h.request();
    assert_refused_unchanged(
        &mut h,
        "followup beyond the parent's lifetime spawns",
        "spawn-budget-exhausted",
        Input::Followup {
            request,
            actor: ROOT,
            target: c,
            renewal: Renewal::keep_grants("x"),
        },
    );
}

#[test]
fn parent_completion_or_stop_closes_descendants_idle_and_parked_presence() {
    for stop_parent in [false, true] {
        let label = if stop_parent { "stop" } else { "completion" };
        let mut h = Harness::new();
        let p = h.running(coordinator_general("p"));
        let refs = h.admit(
            Party::Child(p),
            vec![talking_scout("idle"), talking_scout("parked")],
        );
        h.complete(refs[0]);
        h.complete(refs[1]);
        h.park(refs[1]).unwrap();
        if stop_parent {
            h.stop(p).unwrap();
            h.exited(p);
        } else {
            h.complete(p);
        }
        for &r in &refs {
            assert_eq!(h.presence(r), Presence::Stopped, "{label}: {r}");
            assert_eq!(
                h.status(r),
                Status::Settled,
                "{label}: completed status is kept"
            );
            assert_eq!(code(&h.followup(r)), "invalid-presence", "{label}");
            assert_eq!(code(&h.revive(r)), "invalid-presence", "{label}");
        }
    }
}

#[test]
fn parent_completion_retires_paused_children() {
    let mut h = Harness::new();
    let p = h.running(coordinator_general("p"));
    let c = h.admit_one(Party::Child(p), scout("c"));
    h.ready(c);
    h.deadline(c);
    h.exited(c);
    assert_eq!(h.status(c), Status::Paused);
    h.complete(p);
    assert_eq!(
        h.status(c),
        Status::Cancelled,
        "a paused session is disposed"
    );
    assert!(h.snap(c).disposed);
    assert_eq!(h.presence(c), Presence::Stopped);
}

#[test]
fn stopped_identities_cannot_be_renewed() {
    let mut h = Harness::new();
    let a = h.admit_one(ROOT, scout("a"));
    h.complete(a);
    h.stop(a).unwrap();
    assert_eq!(h.presence(a), Presence::Stopped);
    for (label, input) in [
        (
            "followup",
            Input::Followup {
                request: h.request(),
                actor: ROOT,
                target: a,
                renewal: Renewal::keep_grants("x"),
            },
        ),
        (
            "revive",
            Input::Revive {
                request: h.request(),
                actor: ROOT,
                target: a,
                renewal: Renewal::keep_grants("x"),
            },
        ),
        (
            "park",
            Input::Park {
                request: h.request(),
                actor: ROOT,
                target: a,
            },
        ),
    ] {
        assert_refused_unchanged(&mut h, label, "invalid-presence", input);
    }
}

#[test]
fn generation_directories_are_id_for_the_first_and_id_g_n_after() {
    let mut h = Harness::new();
    let a = h.admit_one(ROOT, scout("a"));
    h.complete(a);
    let a2 = h.followup(a).unwrap();
    h.complete(a2);
    let a3 = h.followup(a2).unwrap();
    let dirs: Vec<String> = starts(&h.log).into_iter().map(|s| s.directory).collect();
    assert_eq!(
        dirs,
        vec![
            a.id.to_string(),
            format!("{}-g2", a.id),
            format!("{}-g3", a.id)
        ]
    );
    assert_eq!(a3.directory_name(), format!("{}-g3", a.id));
    let start = starts(&h.log).pop().unwrap();
    assert_eq!(
        start.prompts,
        vec!["next assignment".to_owned()],
        "only the new assignment"
    );
    assert!(!start.resume_session, "a fresh session, not a warm resume");
}

#[test]
fn renewal_never_restores_removed_grants() {
    let mut h = Harness::new();
    let mut spec = coordinator_general("a");
    spec.tools = vec![
        slate::core::BuiltinTool::Read,
        slate::core::BuiltinTool::Grep,
    ];
    spec.coordination = vec![slate::core::CoordinationAction::Inbox];
    let a = h.admit_one(ROOT, spec);
    h.complete(a);
    let a2 = h.followup(a).unwrap(); // asks for every grant
    let snap = h.snap(a2);
    assert_eq!(
        snap.tools,
        vec![
            slate::core::BuiltinTool::Read,
            slate::core::BuiltinTool::Grep
        ]
    );
    let reply = h.call(|request| Input::Followup {
        request,
        actor: ROOT,
        target: a2,
        renewal: Renewal {
            tools: vec![slate::core::BuiltinTool::Bash],
            ..Renewal::keep_grants("x")
        },
    });
    assert!(reply.is_err(), "a generation is active");
    h.complete(a2);
    let refused = h.call(|request| Input::Followup {
        request,
        actor: ROOT,
        target: a2,
        renewal: Renewal {
            tools: vec![slate::core::BuiltinTool::Bash],
            ..Renewal::keep_grants("x")
        },
    });
    assert_eq!(code(&refused), "empty-tool-set");
}

/// An inline assignment is bounded like a task file (`ASSIGNMENT_BYTES`, 50000 bytes) on
/// every way in: admission, resume, followup and revive. Over it, the refusal names the cap
/// and nothing changes; exactly at it, the work is admitted.
#[test]
fn every_inline_assignment_is_bounded_by_the_task_file_cap() {
    use slate::core::bounds::ASSIGNMENT_BYTES;
    type Renew = fn(slate::core::RequestId, ChildRef, Renewal) -> Input;
    let over = "x".repeat(ASSIGNMENT_BYTES + 1);
    let at = "y".repeat(ASSIGNMENT_BYTES);
    let mut h = Harness::new();

    let request = h.request();
    let batch = vec![scout("fine"), scout(&over)];
    assert_refused_unchanged(
        &mut h,
        "admission",
        "assignment-too-long",
        Input::Admit {
            request,
            actor: ROOT,
            tasks: batch,
            background: true,
        },
    );
    let refused = h.try_admit(ROOT, vec![scout(&over)], true).unwrap_err();
    assert!(refused.to_string().contains("50000"), "{refused}");
    assert!(
        refused.to_string().contains("tasks[0].assignment"),
        "{refused}"
    );

    // Resume: a drained paused generation.
    let paused = h.running(scout("p"));
    h.deadline(paused);
    h.exited(paused);
    assert_eq!(h.status(paused), Status::Paused);
    let request = h.request();
    assert_refused_unchanged(
        &mut h,
        "resume",
        "assignment-too-long",
        Input::Resume {
            request,
            actor: ROOT,
            target: paused,
            assignment: over.clone(),
        },
    );
    assert!(h.resume(paused, &at).is_ok(), "exactly the cap resumes");

    // Followup of an idle identity, revive of a parked one.
    let idle = h.admit_one(ROOT, scout("i"));
    h.complete(idle);
    let parked = h.admit_one(ROOT, scout("k"));
    h.complete(parked);
    h.park(parked).unwrap();
    let rows: [(&str, ChildRef, Renew); 2] = [
        ("followup", idle, |request, target, renewal| {
            Input::Followup {
                request,
                actor: ROOT,
                target,
                renewal,
            }
        }),
        ("revive", parked, |request, target, renewal| Input::Revive {
            request,
            actor: ROOT,
            target,
            renewal,
        }),
    ];
    for (label, target, build) in rows {
        let request = h.request();
        let input = build(request, target, Renewal::keep_grants(over.as_str()));
        assert_refused_unchanged(&mut h, label, "assignment-too-long", input);
        let request = h.request();
        let effects = h.handle(build(request, target, Renewal::keep_grants(at.as_str())));
        assert!(
            matches!(crate::support::reply_to(&effects, request), Some(Ok(_))),
            "{label}: exactly the cap is admitted"
        );
    }
}

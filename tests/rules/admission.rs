//! Rule 3 — atomic admission [Input and atomic preflight; Capacity]: the whole batch is
//! checked before any identity exists; a refused batch changes nothing at all.

use slate::core::{
    BuiltinTool, ChildRef, CoordinationAction, Input, LimitOverrides, Party, Role, Status, TaskSpec,
};
use slate::policy::scheduling::SchedulingPolicy;

use crate::support::{
    Harness, ROOT, assert_refused_unchanged, coordinator_general, policy, scout, with_limits,
    writer,
};

/// A running delegating parent (read-only general granted scout/review spawns).
fn parent(policy: SchedulingPolicy, spec: TaskSpec) -> (Harness, ChildRef) {
    let mut h = Harness::with(policy);
    let p = h.running(spec);
    (h, p)
}

fn admit_input(h: &mut Harness, actor: Party, tasks: Vec<TaskSpec>, background: bool) -> Input {
    Input::Admit {
        request: h.request(),
        actor,
        tasks,
        background,
    }
}

type Setup = fn() -> (Harness, Input);

/// Every kind of admission refusal, each with the rule code it must name.
const REFUSALS: &[(&str, &str, Setup)] = &[
    ("empty batch", "empty-batch", || {
        let mut h = Harness::new();
        let input = admit_input(&mut h, ROOT, vec![], false);
        (h, input)
    }),
    ("batch too large", "batch-too-large", || {
        let mut h = Harness::with(SchedulingPolicy {
            batch: 2,
            ..SchedulingPolicy::default()
        });
        let input = admit_input(
            &mut h,
            ROOT,
            vec![scout("a"), scout("b"), scout("c")],
            false,
        );
        (h, input)
    }),
    (
        "blank assignment in a later entry",
        "blank-assignment",
        || {
            let mut h = Harness::new();
            let input = admit_input(&mut h, ROOT, vec![scout("ok"), scout(" \n\t ")], false);
            (h, input)
        },
    ),
    ("empty effective tool set", "empty-tool-set", || {
        let mut h = Harness::new();
        let mut empty = scout("no tools");
        empty.tools.clear();
        let input = admit_input(&mut h, ROOT, vec![scout("ok"), empty], false);
        (h, input)
    }),
    ("queue full", "queue-full", || {
        let mut h = Harness::with(policy(1, 1));
        h.admit(ROOT, vec![scout("running"), scout("queued")]);
        let input = admit_input(&mut h, ROOT, vec![scout("one too many")], false);
        (h, input)
    }),
    ("queue full for part of a batch", "queue-full", || {
        let mut h = Harness::with(policy(1, 2));
        h.admit(ROOT, vec![scout("running"), scout("queued")]);
        let input = admit_input(&mut h, ROOT, vec![scout("fits"), scout("does not")], false);
        (h, input)
    }),
    (
        "queue full behind a blocked head writer",
        "queue-full",
        || {
            // Two free permits, but the head writer waits for the lease: readers wait too.
            let mut h = Harness::with(policy(3, 1));
            h.admit(ROOT, vec![writer("w1"), writer("w2")]);
            let input = admit_input(&mut h, ROOT, vec![scout("reader")], false);
            (h, input)
        },
    ),
    ("depth", "depth-exceeded", || {
        let (mut h, p) = parent(
            SchedulingPolicy {
                depth: 1,
                ..SchedulingPolicy::default()
            },
            coordinator_general("p"),
        );
        let input = admit_input(&mut h, Party::Child(p), vec![scout("grandchild")], false);
        (h, input)
    }),
    (
        "depth narrowed by the parent's limits",
        "depth-exceeded",
        || {
            let spec = with_limits(
                coordinator_general("p"),
                LimitOverrides {
                    depth: Some(1),
                    ..LimitOverrides::default()
                },
            );
            let (mut h, p) = parent(SchedulingPolicy::default(), spec);
            let input = admit_input(&mut h, Party::Child(p), vec![scout("grandchild")], false);
            (h, input)
        },
    ),
    ("spawn budget", "spawn-budget-exhausted", || {
        let spec = with_limits(
            coordinator_general("p"),
            LimitOverrides {
                spawns: Some(2),
                ..LimitOverrides::default()
            },
        );
        let (mut h, p) = parent(SchedulingPolicy::default(), spec);
        let c = h.admit_one(Party::Child(p), scout("first"));
        h.complete(c);
        let input = admit_input(&mut h, Party::Child(p), vec![scout("x"), scout("y")], false);
        (h, input)
    }),
    (
        "spawns disabled by policy",
        "spawn-budget-exhausted",
        || {
            let (mut h, p) = parent(
                SchedulingPolicy {
                    spawns: 0,
                    ..SchedulingPolicy::default()
                },
                coordinator_general("p"),
            );
            let input = admit_input(&mut h, Party::Child(p), vec![scout("x")], false);
            (h, input)
        },
    ),
    ("inactive ancestor", "ancestor-inactive", || {
        let mut h = Harness::with(SchedulingPolicy {
            depth: 3,
            ..SchedulingPolicy::default()
        });
        let mut top = coordinator_general("grandparent");
        top.spawn.push(Role::General);
        let a = h.running(top);
        let mut mid = coordinator_general("parent");
        mid.spawn = vec![Role::Scout];
        let b = h.admit_one(Party::Child(a), mid);
        h.ready(b);
        h.settle(a, "grandparent finished"); // draining, waiting for b
        assert_eq!(h.status(a), Status::Draining);
        let input = admit_input(
            &mut h,
            Party::Child(b),
            vec![scout("great-grandchild")],
            false,
        );
        (h, input)
    }),
    ("delegating actor not running", "actor-not-running", || {
        let mut h = Harness::new();
        let p = h.admit_one(ROOT, coordinator_general("still in setup"));
        let input = admit_input(&mut h, Party::Child(p), vec![scout("x")], false);
        (h, input)
    }),
    ("role not granted", "role-not-granted", || {
        let (mut h, p) = parent(SchedulingPolicy::default(), coordinator_general("p"));
        let mut general = coordinator_general("g");
        general.spawn.clear();
        let input = admit_input(&mut h, Party::Child(p), vec![scout("ok"), general], false);
        (h, input)
    }),
    ("tools not a subset", "not-subset", || {
        let (mut h, p) = parent(SchedulingPolicy::default(), coordinator_general("p"));
        let mut child = scout("c");
        child.tools = vec![BuiltinTool::Read, BuiltinTool::Bash];
        let input = admit_input(&mut h, Party::Child(p), vec![child], false);
        (h, input)
    }),
    ("leafTools not a subset", "not-subset", || {
        let (mut h, p) = parent(SchedulingPolicy::default(), coordinator_general("p"));
        let mut child = scout("c");
        child.leaf_tools = vec!["mcp__docs__lookup".into()];
        let input = admit_input(&mut h, Party::Child(p), vec![child], false);
        (h, input)
    }),
    ("skills not a subset", "not-subset", || {
        let mut spec = coordinator_general("p");
        spec.skills = vec!["/skills/a/SKILL.md".into()];
        let (mut h, p) = parent(SchedulingPolicy::default(), spec);
        let mut child = scout("c");
        child.skills = vec!["/skills/a/SKILL.md".into(), "/skills/b/SKILL.md".into()];
        let input = admit_input(&mut h, Party::Child(p), vec![child], false);
        (h, input)
    }),
    ("spawn roles not a subset", "not-subset", || {
        let (mut h, p) = parent(SchedulingPolicy::default(), coordinator_general("p"));
        let mut child = scout("c");
        child.spawn = vec![Role::Scout, Role::General];
        let input = admit_input(&mut h, Party::Child(p), vec![child], false);
        (h, input)
    }),
    ("coordination not a subset", "not-subset", || {
        let mut spec = coordinator_general("p");
        spec.coordination = vec![CoordinationAction::Inbox];
        let (mut h, p) = parent(SchedulingPolicy::default(), spec);
        let mut child = scout("c");
        child.coordination = vec![CoordinationAction::Message];
        let input = admit_input(&mut h, Party::Child(p), vec![child], false);
        (h, input)
    }),
    ("writer under writer", "writer-under-writer", || {
        let mut spec = writer("writer parent");
        spec.spawn = vec![Role::Implementation];
        let (mut h, p) = parent(SchedulingPolicy::default(), spec);
        assert!(h.coord.stats().active_permits < h.coord.policy().concurrency);
        let input = admit_input(
            &mut h,
            Party::Child(p),
            vec![writer("nested writer")],
            false,
        );
        (h, input)
    }),
    (
        "parent mutation reserved",
        "parent-mutation-reserved",
        || {
            let mut h = Harness::new();
            h.call(|request| Input::ParentToolStart {
                request,
                call: "edit-1".into(),
                read_only: false,
            })
            .expect("the reservation is accepted");
            let input = admit_input(&mut h, ROOT, vec![scout("reader"), writer("writer")], false);
            (h, input)
        },
    ),
    ("nested capacity", "nested-capacity-unavailable", || {
        let (mut h, p) = parent(policy(2, 8), coordinator_general("p"));
        let input = admit_input(&mut h, Party::Child(p), vec![scout("a"), scout("b")], false);
        (h, input)
    }),
    (
        "nested capacity behind an older queued assignment",
        "nested-capacity-unavailable",
        || {
            let mut h = Harness::with(policy(3, 8));
            let p = h.running(coordinator_general("p"));
            h.admit(ROOT, vec![writer("w1"), writer("w2 waits for the lease")]);
            assert_eq!(h.coord.stats().queued, 1);
            assert_eq!(h.coord.stats().active_permits, 2, "one permit is free");
            let input = admit_input(&mut h, Party::Child(p), vec![scout("a")], false);
            (h, input)
        },
    ),
    ("nested background", "nested-background", || {
        let (mut h, p) = parent(SchedulingPolicy::default(), coordinator_general("p"));
        let input = admit_input(&mut h, Party::Child(p), vec![scout("a")], true);
        (h, input)
    }),
    ("requests not narrowing", "limit-not-narrowing", || {
        let mut h = Harness::new();
        let spec = with_limits(
            scout("a"),
            LimitOverrides {
                requests: Some(101),
                ..LimitOverrides::default()
            },
        );
        let input = admit_input(&mut h, ROOT, vec![scout("ok"), spec], false);
        (h, input)
    }),
    (
        "nested deadline wider than the parent's",
        "limit-not-narrowing",
        || {
            let spec = with_limits(
                coordinator_general("p"),
                LimitOverrides {
                    deadline_ms: Some(60_000),
                    ..LimitOverrides::default()
                },
            );
            let (mut h, p) = parent(SchedulingPolicy::default(), spec);
            let child = with_limits(
                scout("c"),
                LimitOverrides {
                    deadline_ms: Some(60_001),
                    ..LimitOverrides::default()
                },
            );
            let input = admit_input(&mut h, Party::Child(p), vec![child], false);
            (h, input)
        },
    ),
    ("deadlineMs not positive", "limit-not-positive", || {
        let mut h = Harness::new();
        let spec = with_limits(
            scout("a"),
            LimitOverrides {
                deadline_ms: Some(0),
                ..LimitOverrides::default()
            },
        );
        let input = admit_input(&mut h, ROOT, vec![spec], false);
        (h, input)
    }),
    ("requests not positive", "limit-not-positive", || {
        let mut h = Harness::new();
        let spec = with_limits(
            scout("a"),
            LimitOverrides {
                requests: Some(0),
                ..LimitOverrides::default()
            },
        );
        let input = admit_input(&mut h, ROOT, vec![spec], false);
        (h, input)
    }),
    ("tools not positive", "limit-not-positive", || {
        let mut h = Harness::new();
        let spec = with_limits(
            scout("a"),
            LimitOverrides {
                tools: Some(0),
                ..LimitOverrides::default()
            },
        );
        let input = admit_input(&mut h, ROOT, vec![spec], false);
        (h, input)
    }),
    ("shutting down", "shutdown", || {
        let mut h = Harness::new();
        h.running(scout("draining at shutdown"));
        h.shutdown();
        assert!(h.coord.is_shutting_down());
        let input = admit_input(&mut h, ROOT, vec![scout("late")], false);
        (h, input)
    }),
];

#[test]
fn a_refused_batch_leaves_the_coordinator_byte_for_byte_unchanged() {
    for &(label, code, setup) in REFUSALS {
        let (mut h, input) = setup();
        assert_refused_unchanged(&mut h, label, code, input);
    }
}

#[test]
fn a_refused_batch_draws_no_identity_and_consumes_no_spawn_count() {
    let spec = with_limits(
        coordinator_general("p"),
        LimitOverrides {
            spawns: Some(2),
            ..LimitOverrides::default()
        },
    );
    let mut h = Harness::new();
    let p = h.running(spec);
    let mut twin = Harness::with(SchedulingPolicy::default());
    let tp = twin.running(with_limits(
        coordinator_general("p"),
        LimitOverrides {
            spawns: Some(2),
            ..LimitOverrides::default()
        },
    ));
    assert_eq!(p, tp, "same seed, same identities");
    // A batch whose last entry is invalid: nothing of it may exist afterwards.
    let mut bad = scout("bad");
    bad.tools = vec![BuiltinTool::Write];
    let refused = h.try_admit(Party::Child(p), vec![scout("x"), scout("y"), bad], false);
    assert_eq!(crate::support::code(&refused), "not-subset");
    assert_eq!(h.snap(p).spawns, 0);
    assert_eq!(h.coord.list().len(), 1);
    // The whole budget is still there, and the next identity is the one a twin that never
    // saw the refusal allocates.
    let admitted = h.admit(Party::Child(p), vec![scout("x"), scout("y")]);
    let twin_admitted = twin.admit(Party::Child(tp), vec![scout("x"), scout("y")]);
    assert_eq!(admitted, twin_admitted);
    assert_eq!(h.snap(p).spawns, 2);
}

#[test]
fn the_nested_capacity_refusal_names_no_permit_lending() {
    let (mut h, p) = parent(policy(1, 8), coordinator_general("p"));
    let refused = h.try_admit(Party::Child(p), vec![scout("a")], false);
    let message = refused.unwrap_err().to_string();
    assert!(
        message.starts_with("Nested capacity unavailable; no permit lending"),
        "{message}"
    );
}

#[test]
fn identities_follow_input_order() {
    let mut h = Harness::with(policy(2, 8));
    let assignments = ["first", "second", "third", "fourth"];
    let (_, refs) = h
        .try_admit(ROOT, assignments.iter().map(|a| scout(a)).collect(), true)
        .unwrap();
    let listed: Vec<String> = h
        .coord
        .list()
        .iter()
        .map(|s| s.assignment.clone())
        .collect();
    assert_eq!(listed, assignments);
    for (r, a) in refs.iter().zip(assignments) {
        assert_eq!(h.snap(*r).assignment, a);
    }
    assert_eq!(
        h.coord.queued().collect::<Vec<_>>(),
        refs[2..].to_vec(),
        "the queue is in input order too"
    );
    assert_eq!(
        h.started(),
        refs[..2].to_vec(),
        "dispatch follows input order"
    );
}

#[test]
fn failure_of_one_admitted_assignment_never_cancels_its_siblings() {
    let mut h = Harness::new();
    let refs = h.admit(ROOT, vec![scout("a"), scout("b"), scout("c")]);
    for &r in &refs {
        h.ready(r);
    }
    h.fail(refs[1], "provider error");
    assert_eq!(h.status(refs[1]), Status::Failed);
    assert_eq!(h.status(refs[0]), Status::Running);
    assert_eq!(h.status(refs[2]), Status::Running);
    assert!(h.window_outcomes().is_empty(), "the window is still open");
    h.complete(refs[0]);
    h.complete(refs[2]);
    let outcomes = h.window_outcomes();
    assert_eq!(outcomes.len(), 1);
    let statuses: Vec<Status> = outcomes[0].outcomes.iter().map(|s| s.status).collect();
    assert_eq!(statuses, [Status::Settled, Status::Failed, Status::Settled]);
}

#[test]
fn direct_child_spawn_counts_are_lifetime_cumulative_including_failed_and_cancelled() {
    let spec = with_limits(
        coordinator_general("p"),
        LimitOverrides {
            spawns: Some(2),
            ..LimitOverrides::default()
        },
    );
    let (mut h, p) = parent(SchedulingPolicy::default(), spec);
    let failed = h.admit_one(Party::Child(p), scout("fails"));
    h.ready(failed);
    h.fail(failed, "provider error");
    let cancelled = h.admit_one(Party::Child(p), scout("stopped"));
    h.stop(cancelled).unwrap();
    h.exited(cancelled);
    assert_eq!(h.snap(p).spawns, 2);
    let input = admit_input(&mut h, Party::Child(p), vec![scout("third")], false);
    assert_refused_unchanged(
        &mut h,
        "third direct child",
        "spawn-budget-exhausted",
        input,
    );
}

#[test]
fn request_limits_narrow_and_are_inherited_by_nested_children() {
    let spec = with_limits(
        coordinator_general("p"),
        LimitOverrides {
            requests: Some(10),
            tools: Some(20),
            ..LimitOverrides::default()
        },
    );
    let (mut h, p) = parent(SchedulingPolicy::default(), spec);
    let c = h.admit_one(Party::Child(p), scout("inherits"));
    let limits = h.snap(c).limits;
    assert_eq!(
        (limits.requests, limits.tools),
        (10, 20),
        "omitted limits inherit the parent's"
    );
    let narrowed = with_limits(
        scout("narrows"),
        LimitOverrides {
            requests: Some(5),
            spawns: Some(0),
            ..LimitOverrides::default()
        },
    );
    let n = h.admit_one(Party::Child(p), narrowed);
    let limits = h.snap(n).limits;
    assert_eq!(
        (limits.requests, limits.spawns),
        (5, 0),
        "0 spawns is allowed: it disables spawning"
    );
}

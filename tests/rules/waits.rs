//! Rule 7 (continued) — waits: `timeoutMs` bounds, target/messageId/inbox waits, refused
//! self/ancestor/cycle/queued waits, 64 pending waiters, and waking on cancel/pause/shutdown.

use slate::core::{
    ChildRef, Effect, Input, MessageMode, Party, ReceiptStatus, Status, WaitResult, WorkerEvent,
};

use crate::rule_7_live_messaging::{Family, family};
use crate::support::{
    Harness, ROOT, assert_refused_unchanged, coordinator_general, policy, reply_to, scout,
};

#[test]
fn wait_timeout_must_be_within_1_to_60000_ms() {
    let Family { mut h, p, .. } = family();
    for (timeout, ok) in [
        (0, false),
        (1, true),
        (60_000, true),
        (60_001, false),
        (u64::MAX, false),
    ] {
        if ok {
            let (_, result) = h.wait(ROOT, Some(p), None, timeout);
            assert_eq!(result, Ok(None), "{timeout} ms is a pending wait");
        } else {
            let input = Input::Wait {
                request: h.request(),
                actor: ROOT,
                target: Some(p),
                message_id: None,
                timeout_ms: timeout,
            };
            assert_refused_unchanged(
                &mut h,
                &format!("{timeout} ms"),
                "wait-timeout-out-of-range",
                input,
            );
        }
    }
}

#[test]
fn wait_rejects_target_and_message_id_together_and_self_ancestor_and_cycle_waits() {
    let Family {
        mut h, p, c1, c2, ..
    } = family();
    let m = h
        .message(Party::Child(p), Some(c1), "hi", MessageMode::Steer)
        .unwrap();
    let wait = |h: &mut Harness, actor, target| Input::Wait {
        request: h.request(),
        actor,
        target,
        message_id: None,
        timeout_ms: 1_000,
    };
    let both = Input::Wait {
        request: h.request(),
        actor: ROOT,
        target: Some(c1),
        message_id: Some(m.id),
        timeout_ms: 1_000,
    };
    assert_refused_unchanged(
        &mut h,
        "target and messageId",
        "wait-target-and-message",
        both,
    );
    let input = wait(&mut h, Party::Child(c1), Some(c1));
    assert_refused_unchanged(&mut h, "self", "wait-on-self", input);
    let input = wait(&mut h, Party::Child(c1), Some(p));
    assert_refused_unchanged(&mut h, "ancestor", "wait-on-ancestor", input);
    let (_, pending) = h.wait(Party::Child(c1), Some(c2), None, 1_000);
    assert_eq!(pending, Ok(None));
    let input = wait(&mut h, Party::Child(c2), Some(c1));
    assert_refused_unchanged(&mut h, "cycle", "wait-cycle", input);
    // A pending sibling delivery receipt closes a cycle as well.
    let steer = h
        .message(Party::Child(c2), Some(c1), "receipt", MessageMode::Steer)
        .unwrap();
    let input = Input::Wait {
        request: h.request(),
        actor: Party::Child(c2),
        target: None,
        message_id: Some(steer.id),
        timeout_ms: 1_000,
    };
    assert_refused_unchanged(&mut h, "receipt cycle", "wait-cycle", input);
}

#[test]
fn a_child_waiting_on_queued_work_is_rejected_but_the_root_may_wait() {
    let mut h = Harness::with(policy(2, 8));
    let p = h.running(coordinator_general("p"));
    let _other = h.running(scout("holds the last permit"));
    let queued = h.admit_one(ROOT, scout("queued"));
    let input = Input::Wait {
        request: h.request(),
        actor: Party::Child(p),
        target: Some(queued),
        message_id: None,
        timeout_ms: 1_000,
    };
    assert_refused_unchanged(
        &mut h,
        "child waits on queued",
        "child-wait-on-queued",
        input,
    );
    let (request, pending) = h.wait(ROOT, Some(queued), None, 60_000);
    assert_eq!(pending, Ok(None));
    h.stop(queued).unwrap();
    match h.answer(request) {
        Some(Ok(slate::core::Reply::Wait {
            result: WaitResult::Outcome { outcome },
        })) => {
            assert_eq!((outcome.id, outcome.generation), (queued.id, 1));
            assert_eq!(outcome.status, Status::Cancelled);
        }
        other => panic!("the root wait resolves with the outcome: {other:?}"),
    }
}

#[test]
fn receipts_are_visible_only_to_sender_and_recipient() {
    let Family {
        mut h, p, c1, c2, ..
    } = family();
    let m = h
        .message(Party::Child(p), Some(c1), "private", MessageMode::Steer)
        .unwrap();
    let input = Input::Wait {
        request: h.request(),
        actor: Party::Child(c2),
        target: None,
        message_id: Some(m.id),
        timeout_ms: 1_000,
    };
    assert_refused_unchanged(&mut h, "foreign receipt", "receipt-not-visible", input);
    let to_root = h
        .message(Party::Child(p), None, "up", MessageMode::Inbox)
        .unwrap();
    let input = Input::Wait {
        request: h.request(),
        actor: Party::Child(p),
        target: None,
        message_id: Some(to_root.id),
        timeout_ms: 1_000,
    };
    assert_refused_unchanged(&mut h, "pending root receipt", "root-receipt-wait", input);
}

#[test]
fn at_most_64_waits_are_pending() {
    let Family { mut h, p, .. } = family();
    for _ in 0..64 {
        let (_, pending) = h.wait(ROOT, Some(p), None, 60_000);
        assert_eq!(pending, Ok(None));
    }
    assert_eq!(h.coord.stats().pending_waiters, 64);
    let input = Input::Wait {
        request: h.request(),
        actor: ROOT,
        target: None,
        message_id: None,
        timeout_ms: 60_000,
    };
    assert_refused_unchanged(&mut h, "65th wait", "too-many-waiters", input);
    // A wait that resolves at once needs no slot.
    h.message(Party::Child(p), None, "up", MessageMode::Inbox)
        .unwrap();
    let (_, immediate) = h.wait(ROOT, None, None, 1_000);
    assert!(matches!(immediate, Ok(Some(WaitResult::Messages { .. }))));
}

#[test]
fn waits_resolve_on_outcome_inbox_arrival_and_timeout() {
    let Family {
        mut h, p, c1, c2, ..
    } = family();
    let (inbox_wait, _) = h.wait(Party::Child(p), None, None, 1_000);
    h.message(
        Party::Child(c1),
        Some(p),
        "hello parent",
        MessageMode::Inbox,
    )
    .unwrap();
    match h.answer(inbox_wait) {
        Some(Ok(slate::core::Reply::Wait {
            result: WaitResult::Messages { messages },
        })) => {
            assert_eq!(messages[0].text, "hello parent");
            assert_eq!(messages[0].status, ReceiptStatus::Delivered);
        }
        other => panic!("{other:?}"),
    }
    let (outcome_wait, _) = h.wait(Party::Child(p), Some(c2), None, 1_000);
    h.complete(c2);
    assert!(matches!(
        h.answer(outcome_wait),
        Some(Ok(slate::core::Reply::Wait {
            result: WaitResult::Outcome { .. }
        }))
    ));
    let (timeout_wait, effects) = h.call_effects(|request| Input::Wait {
        request,
        actor: Party::Child(p),
        target: Some(c1),
        message_id: None,
        timeout_ms: 250,
    });
    let key = effects
        .iter()
        .find_map(|e| match e {
            Effect::ArmTimer { key, at } => {
                assert_eq!(*at, h.now + 250);
                Some(*key)
            }
            _ => None,
        })
        .expect("the wait arms its timeout");
    h.handle(Input::Timer(key));
    assert!(matches!(
        h.answer(timeout_wait),
        Some(Ok(slate::core::Reply::Wait {
            result: WaitResult::Timeout
        }))
    ));
    assert_eq!(
        h.status(c1),
        Status::Running,
        "a timed-out wait does not cancel its target"
    );
}

/// Waits of a child end as `cancelled` when it is cancelled or paused, and as `shutdown`
/// at shutdown — at once, not only after its worker drains.
#[test]
fn cancellation_pause_and_shutdown_wake_pending_waiters() {
    type Interrupt = fn(&mut Harness, ChildRef);
    type Expected = fn(&WaitResult) -> bool;
    let rows: &[(&str, Interrupt, Expected)] = &[
        (
            "stop",
            |h, p| {
                h.stop(p).unwrap();
            },
            |r| matches!(r, WaitResult::Cancelled),
        ),
        (
            "limit",
            |h, p| {
                for _ in 0..101 {
                    h.event(p, WorkerEvent::RequestStart);
                }
            },
            |r| matches!(r, WaitResult::Cancelled),
        ),
        (
            "pause",
            |h, p| {
                h.deadline(p);
            },
            |r| matches!(r, WaitResult::Cancelled),
        ),
        (
            "shutdown",
            |h, _| {
                h.shutdown();
            },
            |r| matches!(r, WaitResult::Shutdown),
        ),
    ];
    for &(label, interrupt, expected) in rows {
        let Family { mut h, p, c1, .. } = family();
        let (inbox_wait, _) = h.wait(Party::Child(p), None, None, 60_000);
        let (outcome_wait, _) = h.wait(Party::Child(p), Some(c1), None, 60_000);
        interrupt(&mut h, p);
        for request in [inbox_wait, outcome_wait] {
            match reply_to(&h.log, request) {
                Some(Ok(slate::core::Reply::Wait { result })) => {
                    assert!(expected(&result), "{label}: {result:?}");
                }
                other => panic!("{label}: the pending wait must wake at once, got {other:?}"),
            }
        }
        assert_eq!(h.coord.stats().pending_waiters, 0, "{label}");
    }
}

#[test]
fn paused_and_terminal_outcomes_resolve_waits_and_stay_pinned() {
    let mut h = Harness::new();
    let a = h.running(scout("a"));
    let (pending, _) = h.wait(ROOT, Some(a), None, 60_000);
    h.deadline(a);
    assert!(h.answer(pending).is_none(), "pausing has not drained yet");
    h.exited(a);
    match h.answer(pending) {
        Some(Ok(slate::core::Reply::Wait {
            result: WaitResult::Outcome { outcome },
        })) => {
            assert_eq!(outcome.status, Status::Paused);
            assert_eq!(
                outcome.pause_reason,
                Some(slate::core::PauseReason::Deadline)
            );
        }
        other => panic!("{other:?}"),
    }
    let (_, immediate) = h.wait(ROOT, Some(a), None, 1_000);
    assert!(
        matches!(immediate, Ok(Some(WaitResult::Outcome { .. }))),
        "paused resolves at once"
    );
    h.resume(a, "Continue").unwrap();
    h.complete(a);
    let a2 = h.followup(a).unwrap();
    h.ready(a2);
    let (_, pinned) = h.wait(ROOT, Some(a), None, 1_000);
    match pinned {
        Ok(Some(WaitResult::Outcome { outcome })) => {
            assert_eq!((outcome.generation, outcome.status), (1, Status::Settled));
        }
        other => panic!("the wait stays pinned to generation 1: {other:?}"),
    }
}

#[test]
fn a_wait_outcome_carries_identity_and_status_only() {
    let mut h = Harness::new();
    let a = h.running(scout("a"));
    h.settle(a, "a private result");
    h.published(a);
    h.exited(a);
    let (_, result) = h.wait(ROOT, Some(a), None, 1_000);
    let Ok(Some(WaitResult::Outcome { outcome })) = result else {
        panic!("{result:?}")
    };
    let json = serde_json::to_value(outcome).unwrap();
    let mut keys: Vec<&str> = json
        .as_object()
        .unwrap()
        .keys()
        .map(String::as_str)
        .collect();
    keys.sort_unstable();
    assert_eq!(
        keys,
        ["generation", "id", "status"],
        "no result or transcript: {json}"
    );
}

/// A dead client's wait must give its slot back: `CancelWait` removes exactly the waiter of
/// that request, silently (nobody is left to answer), and its timer goes stale.
#[test]
fn cancelling_a_wait_frees_its_slot_and_changes_nothing_else() {
    let Family { mut h, p, c1, .. } = family();
    let cases: [(&str, Option<ChildRef>, bool); 3] = [
        ("outcome wait", Some(p), true),
        ("inbox wait", None, true),
        ("not a pending wait", None, false),
    ];
    for (label, target, pending) in cases {
        let (keep, _) = h.wait(Party::Child(p), Some(c1), None, 60_000);
        let before = h.coord.stats().pending_waiters;
        let (request, timer) = if pending {
            let (request, effects) = h.call_effects(|request| Input::Wait {
                request,
                actor: ROOT,
                target,
                message_id: None,
                timeout_ms: 60_000,
            });
            let timer = effects.iter().find_map(|e| match e {
                Effect::ArmTimer { key, .. } => Some(*key),
                _ => None,
            });
            assert_eq!(h.coord.stats().pending_waiters, before + 1, "{label}");
            (request, timer)
        } else {
            (h.request(), None)
        };
        let snapshot = h.coord.clone();
        let effects = h.handle(Input::CancelWait { request });
        assert!(
            effects.is_empty(),
            "{label}: a cancel answers nobody: {effects:?}"
        );
        assert_eq!(h.coord.stats().pending_waiters, before, "{label}");
        if !pending {
            assert_eq!(h.coord, snapshot, "{label}: nothing changes");
        }
        if let Some(timer) = timer {
            let effects = h.handle(Input::Timer(timer));
            assert!(
                !effects
                    .iter()
                    .any(|e| matches!(e, Effect::Reply { request: r, .. } if *r == request)),
                "{label}: the stale timer answers nothing"
            );
        }
        // The other waiter is untouched and still resolves.
        assert_eq!(h.answer(keep), None, "{label}");
        h.handle(Input::CancelWait { request: keep });
    }
    // 64 waits of dead clients, all cancelled: a 65th wait is admitted again.
    let requests: Vec<_> = (0..64)
        .map(|_| h.wait(ROOT, Some(p), None, 60_000).0)
        .collect();
    assert_eq!(h.coord.stats().pending_waiters, 64);
    for request in requests {
        h.handle(Input::CancelWait { request });
    }
    assert_eq!(h.coord.stats().pending_waiters, 0);
    let (_, pending) = h.wait(ROOT, Some(p), None, 60_000);
    assert_eq!(pending, Ok(None));
}

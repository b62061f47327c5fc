//! Rule 7 — live-parent messaging, waits and presence [Live-parent messaging].

use slate::core::{
    ChildRef, Effect, Input, MessageMode, Party, ReceiptStatus, WaitResult, WorkerEvent,
};

use crate::support::{
    Harness, ROOT, assert_refused_unchanged, code, coordinator_general, policy, scout,
    talking_scout,
};

/// root → p (running, all actions) → c1, c2 (running scouts, all actions); x is p's sibling.
pub(crate) struct Family {
    pub(crate) h: Harness,
    pub(crate) p: ChildRef,
    pub(crate) c1: ChildRef,
    pub(crate) c2: ChildRef,
    pub(crate) x: ChildRef,
}

pub(crate) fn family() -> Family {
    let mut h = Harness::with(policy(8, 16));
    let p = h.running(coordinator_general("p"));
    let x = h.running(talking_scout("x"));
    let refs = h.admit(
        Party::Child(p),
        vec![talking_scout("c1"), talking_scout("c2")],
    );
    for &r in &refs {
        h.ready(r);
    }
    Family {
        h,
        p,
        c1: refs[0],
        c2: refs[1],
        x,
    }
}

fn message_input(
    h: &mut Harness,
    actor: Party,
    target: Option<ChildRef>,
    text: &str,
    mode: MessageMode,
) -> Input {
    Input::Message {
        request: h.request(),
        actor,
        target,
        text: text.to_owned(),
        mode,
    }
}

#[test]
fn message_text_must_be_nonblank_and_at_most_4096_utf8_bytes() {
    let Family { mut h, p, .. } = family();
    let rows: &[(&str, String, Option<&str>)] = &[
        ("blank", " \n\t ".to_owned(), Some("blank-text")),
        ("empty", String::new(), Some("blank-text")),
        ("4096 ascii bytes", "a".repeat(4096), None),
        ("4097 ascii bytes", "a".repeat(4097), Some("text-too-long")),
        ("4096 bytes of two-byte chars", "é".repeat(2048), None),
        (
            "2049 chars, 4097 bytes",
            format!("{}a", "é".repeat(2048)),
            Some("text-too-long"),
        ),
        (
            "1366 three-byte chars, 4098 bytes",
            "€".repeat(1366),
            Some("text-too-long"),
        ),
    ];
    for (label, text, refusal) in rows {
        if let Some(code) = refusal {
            let input = message_input(&mut h, ROOT, Some(p), text, MessageMode::Inbox);
            assert_refused_unchanged(&mut h, label, code, input);
        } else {
            let m = h.message(ROOT, Some(p), text, MessageMode::Inbox).unwrap();
            assert_eq!(&m.text, text, "{label}: text is kept literally");
        }
    }
}

#[test]
fn message_modes_inbox_steer_and_follow_up() {
    let Family { mut h, p, c1, .. } = family();
    let inbox = h
        .message(
            Party::Child(c1),
            Some(p),
            "for the inbox",
            MessageMode::Inbox,
        )
        .unwrap();
    assert_eq!(inbox.status, ReceiptStatus::Accepted);
    assert!(
        !h.log
            .iter()
            .any(|e| matches!(e, Effect::SendMessage { message, .. } if *message == inbox.id)),
        "inbox messages are not steered automatically"
    );
    for mode in [MessageMode::Steer, MessageMode::FollowUp] {
        let m = h.message(ROOT, Some(p), "change course", mode).unwrap();
        let sent = h.log.iter().any(|e| {
            matches!(
                e,
                Effect::SendMessage { child, message, mode: sent, .. }
                    if *child == p && *message == m.id && *sent == mode
            )
        });
        assert!(sent, "{mode:?} is handed to the recipient's worker");
    }
    let refused = h.message(Party::Child(p), None, "steer the root", MessageMode::Steer);
    assert_eq!(code(&refused), "root-mode-unsupported");
}

#[test]
fn messages_require_a_running_recipient() {
    let mut h = Harness::with(policy(1, 8));
    let running = h.running(scout("running"));
    let queued = h.admit_one(ROOT, scout("queued"));
    let input = message_input(&mut h, ROOT, Some(queued), "hello", MessageMode::Inbox);
    assert_refused_unchanged(&mut h, "queued recipient", "invalid-state", input);
    h.stop(running).unwrap();
    let input = message_input(&mut h, ROOT, Some(running), "hello", MessageMode::Inbox);
    assert_refused_unchanged(&mut h, "cancelling recipient", "invalid-state", input);
    h.exited(running);
    h.ready(queued);
    h.complete(queued);
    let input = message_input(&mut h, ROOT, Some(queued), "hello", MessageMode::Inbox);
    assert_refused_unchanged(&mut h, "settled recipient", "invalid-state", input);
}

#[test]
fn addressing_is_limited_to_parent_direct_children_and_true_siblings() {
    let Family {
        mut h,
        p,
        c1,
        c2,
        x,
    } = family();
    let (p_, c1_, c2_, x_) = (
        Party::Child(p),
        Party::Child(c1),
        Party::Child(c2),
        Party::Child(x),
    );
    let rows: &[(&str, Party, Option<ChildRef>, bool)] = &[
        ("root to direct child", ROOT, Some(p), true),
        ("child to parent", c1_, Some(p), true),
        ("parent to child", p_, Some(c1), true),
        ("sibling to sibling", c1_, Some(c2), true),
        ("root-level siblings", x_, Some(p), true),
        ("direct child to root by omitting target", p_, None, true),
        ("grandchild to root", c1_, None, false),
        ("root to grandchild", ROOT, Some(c1), false),
        ("grandchild to uncle", c2_, Some(x), false),
        ("uncle to nephew", x_, Some(c2), false),
        ("child to itself", c1_, Some(c1), false),
    ];
    for &(label, actor, target, allowed) in rows {
        if allowed {
            let m = h.message(actor, target, label, MessageMode::Inbox);
            assert!(m.is_ok(), "{label}: {m:?}");
        } else {
            let input = message_input(&mut h, actor, target, label, MessageMode::Inbox);
            assert_refused_unchanged(&mut h, label, "not-addressable", input);
        }
    }
    let input = message_input(&mut h, ROOT, None, "to myself", MessageMode::Inbox);
    assert_refused_unchanged(&mut h, "root to itself", "root-self-message", input);
    let stale = ChildRef::new(p.id, 2);
    let input = message_input(
        &mut h,
        c1_,
        Some(stale),
        "unknown generation",
        MessageMode::Inbox,
    );
    assert_refused_unchanged(&mut h, "unknown generation", "unknown-identity", input);
}

#[test]
fn a_child_needs_the_granted_action_and_a_running_generation() {
    let mut h = Harness::new();
    let mute = h.running(scout("no coordination grants"));
    for (label, input) in [
        (
            "message",
            message_input(&mut h, Party::Child(mute), None, "hi", MessageMode::Inbox),
        ),
        (
            "inbox",
            Input::Inbox {
                request: h.request(),
                actor: Party::Child(mute),
            },
        ),
        (
            "wait",
            Input::Wait {
                request: h.request(),
                actor: Party::Child(mute),
                target: None,
                message_id: None,
                timeout_ms: 10,
            },
        ),
    ] {
        assert_refused_unchanged(&mut h, label, "not-granted", input);
    }
    let talker = h.running(talking_scout("talker"));
    h.stop(talker).unwrap();
    let input = message_input(&mut h, Party::Child(talker), None, "hi", MessageMode::Inbox);
    assert_refused_unchanged(&mut h, "cancelling actor", "actor-not-running", input);
}

#[test]
fn inbox_is_a_destructive_read_of_the_actors_own_mailbox() {
    let Family {
        mut h, p, c1, c2, ..
    } = family();
    h.message(ROOT, Some(p), "one", MessageMode::Inbox).unwrap();
    h.message(Party::Child(c1), Some(p), "two", MessageMode::Inbox)
        .unwrap();
    h.message(Party::Child(p), Some(c2), "for c2", MessageMode::Inbox)
        .unwrap();
    let got = h.inbox(Party::Child(p)).unwrap();
    let texts: Vec<&str> = got.iter().map(|m| m.text.as_str()).collect();
    assert_eq!(texts, ["one", "two"], "oldest first, own mailbox only");
    assert!(got.iter().all(|m| m.status == ReceiptStatus::Delivered));
    assert!(
        h.inbox(Party::Child(p)).unwrap().is_empty(),
        "the read consumed them"
    );
    assert_eq!(h.inbox(Party::Child(c2)).unwrap().len(), 1);
    h.message(Party::Child(p), None, "up", MessageMode::Inbox)
        .unwrap();
    assert_eq!(h.coord.root_inbox_len(), 1);
    assert_eq!(h.inbox(ROOT).unwrap().len(), 1);
    assert_eq!(h.coord.root_inbox_len(), 0);
}

#[test]
fn receipts_move_accepted_queued_delivered_from_worker_events() {
    let Family { mut h, p, .. } = family();
    let m = h
        .message(ROOT, Some(p), "steer", MessageMode::Steer)
        .unwrap();
    assert_eq!(m.status, ReceiptStatus::Accepted);
    let (request, pending) = h.wait(ROOT, None, Some(m.id), 5_000);
    assert_eq!(pending, Ok(None));
    h.event(p, WorkerEvent::MessageQueued { message: m.id });
    assert_eq!(h.coord.receipt(m.id).unwrap().status, ReceiptStatus::Queued);
    assert!(h.answer(request).is_none(), "queued is not final");
    h.event(p, WorkerEvent::MessageHandled { message: m.id });
    assert_eq!(
        h.coord.receipt(m.id).unwrap().status,
        ReceiptStatus::Handled
    );
    assert!(h.answer(request).is_none(), "handled is not final");
    h.event(p, WorkerEvent::MessageQueued { message: m.id });
    assert_eq!(
        h.coord.receipt(m.id).unwrap().status,
        ReceiptStatus::Handled,
        "never backwards"
    );
    h.event(p, WorkerEvent::MessageDelivered { message: m.id });
    assert_eq!(
        h.coord.receipt(m.id).unwrap().status,
        ReceiptStatus::Delivered
    );
    match h.answer(request) {
        Some(Ok(slate::core::Reply::Wait {
            result: WaitResult::Message { message },
        })) => {
            assert_eq!(message.status, ReceiptStatus::Delivered);
        }
        other => panic!("{other:?}"),
    }
    // Receipts never move backwards.
    h.event(p, WorkerEvent::MessageQueued { message: m.id });
    assert_eq!(
        h.coord.receipt(m.id).unwrap().status,
        ReceiptStatus::Delivered
    );
    let failed = h
        .message(ROOT, Some(p), "again", MessageMode::FollowUp)
        .unwrap();
    h.event(
        p,
        WorkerEvent::MessageFailed {
            message: failed.id,
            error: "closed".into(),
        },
    );
    let receipt = h.coord.receipt(failed.id).unwrap();
    assert_eq!(receipt.status, ReceiptStatus::Error);
    assert_eq!(receipt.error.as_deref(), Some("closed"));
}

#[test]
fn an_undelivered_message_becomes_not_running_when_its_recipient_ends() {
    let Family { mut h, p, c1, .. } = family();
    let m = h
        .message(Party::Child(p), Some(c1), "too late", MessageMode::Steer)
        .unwrap();
    h.complete(c1);
    assert_eq!(
        h.coord.receipt(m.id).unwrap().status,
        ReceiptStatus::NotRunning
    );
}

#[test]
fn a_mailbox_holds_64_messages_and_consumption_frees_slots() {
    let Family { mut h, p, .. } = family();
    for i in 0..64 {
        h.message(ROOT, Some(p), &format!("m{i}"), MessageMode::Inbox)
            .unwrap();
    }
    let input = message_input(&mut h, ROOT, Some(p), "m64", MessageMode::Inbox);
    assert_refused_unchanged(&mut h, "65th message", "mailbox-full", input);
    assert_eq!(
        h.inbox(Party::Child(p)).unwrap().len(),
        64,
        "nothing was evicted"
    );
    assert!(
        h.message(ROOT, Some(p), "room again", MessageMode::Inbox)
            .is_ok()
    );
}

#[test]
fn a_runtime_admits_at_most_512_messages() {
    let Family { mut h, p, .. } = family();
    for round in 0..8 {
        for i in 0..64 {
            h.message(ROOT, Some(p), &format!("r{round} m{i}"), MessageMode::Inbox)
                .unwrap();
        }
        h.inbox(Party::Child(p)).unwrap();
    }
    assert_eq!(h.coord.stats().admitted_messages, 512);
    let input = message_input(&mut h, ROOT, Some(p), "513th", MessageMode::Inbox);
    assert_refused_unchanged(&mut h, "513th message", "message-budget-exhausted", input);
    let input = Input::Steer {
        request: h.request(),
        target: p,
        text: "operator steer".into(),
    };
    assert_refused_unchanged(&mut h, "513th via steer", "message-budget-exhausted", input);
}

#[test]
fn operator_steer_needs_a_running_target_and_reports_receipts() {
    let mut h = Harness::with(policy(1, 8));
    let a = h.running(scout("a"));
    let queued = h.admit_one(ROOT, scout("queued"));
    let input = Input::Steer {
        request: h.request(),
        target: queued,
        text: "go".into(),
    };
    assert_refused_unchanged(&mut h, "steer queued", "invalid-state", input);
    let input = Input::Steer {
        request: h.request(),
        target: a,
        text: "   ".into(),
    };
    assert_refused_unchanged(&mut h, "blank steer", "blank-text", input);
    let reply = h.call(|request| Input::Steer {
        request,
        target: a,
        text: "focus".into(),
    });
    let Ok(slate::core::Reply::Message { message }) = reply else {
        panic!("{reply:?}")
    };
    assert_eq!(
        (message.mode, message.status),
        (MessageMode::Steer, ReceiptStatus::Accepted)
    );
    assert!(
        h.log
            .iter()
            .any(|e| matches!(e, Effect::SendMessage { child, .. } if *child == a))
    );
}

//! Rule 10 — direct telemetry [Direct versus subtree telemetry]: `null` means unavailable,
//! a genuine zero stays zero, and no subtree total is synthesized.

use slate::core::{ContextUsage, Party, Tokens, Usage, WorkerEvent};

use crate::support::{Harness, coordinator_general, scout};

#[allow(clippy::unnecessary_wraps)] // events carry `Option<Usage>`
fn usage(input: u64, output: u64, cost: Option<f64>) -> Option<Usage> {
    Some(Usage {
        tokens: Tokens {
            input,
            output,
            cache_read: 0,
            cache_write: 0,
            total: input + output,
        },
        cost,
    })
}

#[test]
fn telemetry_is_null_until_reported() {
    let mut h = Harness::new();
    let a = h.running(scout("a"));
    h.event(
        a,
        WorkerEvent::AssistantMessage {
            text: "no usage".into(),
            usage: None,
        },
    );
    let t = h.snap(a).telemetry;
    assert_eq!((t.tokens, t.cost, t.context), (None, None, None));
    let json = serde_json::to_value(t).unwrap();
    assert!(json["tokens"].is_null() && json["cost"].is_null() && json["context"].is_null());
    assert_eq!(
        json["requests"], 0,
        "the registry's own dispatch count is genuinely zero"
    );
    h.event(
        a,
        WorkerEvent::AssistantMessage {
            text: "tokens only".into(),
            usage: usage(5, 1, None),
        },
    );
    let t = h.snap(a).telemetry;
    assert!(t.tokens.is_some());
    assert_eq!(t.cost, None, "an unreported cost stays null, not zero");
}

#[test]
fn a_genuine_reported_zero_stays_zero() {
    let mut h = Harness::new();
    let a = h.running(scout("a"));
    h.event(
        a,
        WorkerEvent::AssistantMessage {
            text: "free".into(),
            usage: usage(0, 0, Some(0.0)),
        },
    );
    h.event(
        a,
        WorkerEvent::Context(ContextUsage {
            tokens: Some(0),
            context_window: 200_000,
            percent: Some(0.0),
        }),
    );
    let t = h.snap(a).telemetry;
    assert_eq!(t.tokens, Some(Tokens::default()));
    assert_eq!(t.cost, Some(0.0));
    assert_eq!(t.context.unwrap().tokens, Some(0));
    let json = serde_json::to_value(t).unwrap();
    assert_eq!(json["cost"], 0.0);
    assert_eq!(json["tokens"]["total"], 0);
    assert_eq!(json["context"]["percent"], 0.0);
}

#[test]
fn telemetry_accumulates_direct_usage_per_generation() {
    let mut h = Harness::new();
    let a = h.running(scout("a"));
    h.drive(
        a,
        vec![
            WorkerEvent::RequestStart,
            WorkerEvent::AssistantMessage {
                text: "one".into(),
                usage: usage(100, 10, Some(0.5)),
            },
            WorkerEvent::RequestStart,
            WorkerEvent::AssistantMessage {
                text: "two".into(),
                usage: usage(200, 20, None),
            },
        ],
    );
    let t = h.snap(a).telemetry;
    assert_eq!(t.requests, Some(2));
    let tokens = t.tokens.unwrap();
    assert_eq!((tokens.input, tokens.output, tokens.total), (300, 30, 330));
    assert_eq!(t.cost, Some(0.5));
}

#[test]
fn no_subtree_total_is_synthesized() {
    let mut h = Harness::new();
    let p = h.running(coordinator_general("p"));
    h.event(p, WorkerEvent::RequestStart);
    let c = h.admit_one(Party::Child(p), scout("c"));
    h.ready(c);
    h.drive(
        c,
        vec![
            WorkerEvent::RequestStart,
            WorkerEvent::RequestStart,
            WorkerEvent::AssistantMessage {
                text: "child".into(),
                usage: usage(1_000, 100, Some(2.0)),
            },
        ],
    );
    h.complete(c);
    let parent = h.snap(p).telemetry;
    assert_eq!(
        parent.requests,
        Some(1),
        "the parent's requests are its own dispatches"
    );
    assert_eq!(parent.tokens, None, "child tokens are not absorbed");
    assert_eq!(parent.cost, None, "child cost is not absorbed");
    let child = h.snap(c).telemetry;
    assert_eq!(child.requests, Some(2));
    assert_eq!(child.cost, Some(2.0));
}

/// [002 Action contract] `requestedModel`/`requestedEffort` stay the initial pair; `model` and
/// `effort` follow the latest accepted route; the logical action records which route serves it.
#[test]
fn a_route_switch_changes_model_and_effort_but_never_the_requested_pair() {
    use slate::core::{LogicalAction, ModelSelection, PlannedRoute};
    let selection = |provider: &str, id: &str, effort: &str| ModelSelection {
        provider: provider.into(),
        id: id.into(),
        effort: Some(effort.into()),
    };
    let mut spec = scout("a");
    spec.model = Some(selection("alpha", "x", "high"));
    spec.logical = Some(LogicalAction {
        model: "m".into(),
        reason: "fits".into(),
        admission: 4,
        routes: vec![
            PlannedRoute {
                logical: "m".into(),
                selection: selection("alpha", "x", "high"),
            },
            PlannedRoute {
                logical: "n".into(),
                selection: selection("beta", "y", "low"),
            },
        ],
    });
    let mut h = Harness::new();
    let a = h.running(spec);
    let s = h.snap(a);
    assert_eq!(
        (s.requested_model.as_deref(), s.model.as_deref()),
        (Some("alpha/x"), Some("alpha/x"))
    );
    h.event(
        a,
        WorkerEvent::RouteAccepted {
            logical: "n".into(),
            provider: "beta".into(),
            id: "y".into(),
            effort: Some("low".into()),
        },
    );
    let s = h.snap(a);
    assert_eq!(
        (s.requested_model.as_deref(), s.requested_effort.as_deref()),
        (Some("alpha/x"), Some("high"))
    );
    assert_eq!(
        (s.model.as_deref(), s.effort.as_deref()),
        (Some("beta/y"), Some("low"))
    );
    let action = s.logical.unwrap();
    assert_eq!(
        (
            action.model.as_str(),
            action.route_model.as_str(),
            action.route_provider.as_str(),
            action.switches,
            action.admission
        ),
        ("m", "n", "beta", 1, 4)
    );
    let json = serde_json::to_value(h.snap(a)).unwrap();
    assert_eq!(json["requestedModel"], "alpha/x");
    assert_eq!(json["logical"]["routeProvider"], "beta");
}

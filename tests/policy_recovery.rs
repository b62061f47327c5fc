//! Spec 002 "Common recovery" and "Ownership, success, and stops": recovery orders computed by
//! hand, reverse mapping stops, and failure classification.

#![allow(clippy::unwrap_used, reason = "test fixtures fail loudly")]

use serde_json::json;
use slate::policy::model::Effort;
use slate::policy::recovery::{
    Exhaustion, FailureKind, RecoveryDecision, RecoveryStop, Remembered, RouteAttempt,
    classify_message, compressor_plan, compressor_recovery, decide, initial_route, model_order,
    ordinary_plan, ordinary_recovery, provider_order, reverse_map,
};
use slate::policy::routing::{ProjectFile, RoutingPolicy, SlateFile, resolve};

fn policy_from(config: &serde_json::Value) -> RoutingPolicy {
    let text = config.to_string();
    let report = resolve(
        &SlateFile {
            label: "home",
            bytes: Some(text.as_bytes()),
        },
        &ProjectFile::Absent,
    );
    assert!(!report.blocked, "{:#?}", report.errors);
    report.policy.unwrap()
}

/// A custom model `name` with ratings and providers (the first provider preferred).
fn model(name: &str, capability: u8, cost: u8, providers: &[(&str, &str)]) -> serde_json::Value {
    let map: serde_json::Map<String, serde_json::Value> = providers
        .iter()
        .map(|(p, id)| ((*p).to_owned(), json!(id)))
        .collect();
    json!({
        "model": name, "capabilityRating": capability, "effort": "medium", "costRating": cost,
        "preferredProvider": providers[0].0, "providers": map, "guidelines": [], "cautions": []
    })
}

fn custom(models: &[serde_json::Value]) -> RoutingPolicy {
    policy_from(&json!({"router": {"models": {"include": [], "add": models}}}))
}

fn names(attempts: &[RouteAttempt]) -> Vec<String> {
    attempts
        .iter()
        .map(|a| format!("{}:{}/{}", a.model, a.provider, a.id))
        .collect()
}

fn order(policy: &RoutingPolicy, active: &str) -> Vec<String> {
    let active = policy.definition(active).unwrap();
    model_order(policy, active)
        .into_iter()
        .map(|m| m.model.clone())
        .collect()
}

#[test]
fn shipped_model_orders_computed_by_hand() {
    let p = RoutingPolicy::shipped();
    // sol-6.1 at 85: nothing else at 85; higher 86 (distance 1), 90 (5); lower 55 (30), 45 (40)
    // where luna (cost 5) precedes sonnet (cost 54).
    assert_eq!(
        order(&p, "sol-6.1"),
        [
            "gpt-6-astra",
            "claude-opus-5.5",
            "gemini-3.8-flash",
            "luna-6",
            "claude-sonnet-5.5"
        ]
    );
    // luna-6 at 45: sonnet shares 45; then only higher ratings (the lower side is empty).
    assert_eq!(
        order(&p, "luna-6"),
        [
            "claude-sonnet-5.5",
            "gemini-3.8-flash",
            "sol-6.1",
            "gpt-6-astra",
            "claude-opus-5.5"
        ]
    );
    // claude-opus-5.5 at 90: only lower ratings, nearest first.
    assert_eq!(
        order(&p, "claude-opus-5.5"),
        [
            "gpt-6-astra",
            "sol-6.1",
            "gemini-3.8-flash",
            "luna-6",
            "claude-sonnet-5.5"
        ]
    );
    // gemini-3.8-flash at 55: lower 45 (distance 10) before higher 85 (30), 86, 90.
    assert_eq!(
        order(&p, "gemini-3.8-flash"),
        [
            "luna-6",
            "claude-sonnet-5.5",
            "sol-6.1",
            "gpt-6-astra",
            "claude-opus-5.5"
        ]
    );
    let sol = p.definition("sol-6.1").unwrap();
    let plan = ordinary_plan(&p, sol, &Remembered::new());
    assert_eq!(
        names(&plan),
        [
            "sol-6.1:openai/gpt-6.1-sol",
            "gpt-6-astra:openai/gpt-6-astra",
            "claude-opus-5.5:anthropic/claude-opus-5-5",
            "gemini-3.8-flash:google-vertex/gemini-3.8-flash",
            "luna-6:openai/gpt-6-luna",
            "claude-sonnet-5.5:anthropic/claude-sonnet-5-5",
        ]
    );
    assert_eq!(
        plan[4].effort,
        Effort::Max,
        "each model at its own fixed effort"
    );
}

#[test]
fn alternation_by_rating_distance() {
    // Active at 50. Occupied: 52 (d2), 47 (d3), 60 (d10), 40 (d10, tie: higher first), 10.
    let p = custom(&[
        model("active", 50, 10, &[("p", "active")]),
        model("low10", 10, 1, &[("p", "low10")]),
        model("high60", 60, 1, &[("p", "high60")]),
        model("low40", 40, 1, &[("p", "low40")]),
        model("high52", 52, 1, &[("p", "high52")]),
        model("low47", 47, 1, &[("p", "low47")]),
    ]);
    assert_eq!(
        order(&p, "active"),
        ["high52", "low47", "high60", "low40", "low10"]
    );
    // Several higher levels close together come before a far lower one (distance, not turns).
    let p = custom(&[
        model("active", 50, 10, &[("p", "active")]),
        model("h51", 51, 1, &[("p", "h51")]),
        model("h52", 52, 1, &[("p", "h52")]),
        model("h53", 53, 1, &[("p", "h53")]),
        model("l10", 10, 1, &[("p", "l10")]),
    ]);
    assert_eq!(order(&p, "active"), ["h51", "h52", "h53", "l10"]);
}

#[test]
fn same_rating_by_ascending_cost_with_configured_order_breaking_ties() {
    let p = custom(&[
        model("active", 50, 10, &[("p", "active")]),
        model("a", 50, 20, &[("p", "a")]),
        model("c", 50, 10, &[("p", "c")]),
        model("b", 50, 10, &[("p", "b")]),
        model("far", 70, 1, &[("p", "far")]),
        model("far2", 70, 5, &[("p", "far2")]),
    ]);
    assert_eq!(order(&p, "active"), ["c", "b", "a", "far", "far2"]);
    // Configured order is ordinary membership order: include order first.
    let p = policy_from(&json!({"router": {"models": {
        "include": ["b", "c", "active"],
        "add": [
            model("active", 50, 10, &[("p", "active")]),
            model("c", 50, 10, &[("p", "c")]),
            model("b", 50, 10, &[("p", "b")]),
        ]
    }}}));
    assert_eq!(order(&p, "active"), ["b", "c"]);
}

#[test]
fn providers_of_one_identity_before_another_model() {
    let p = custom(&[
        model(
            "active",
            50,
            10,
            &[("pref", "m1"), ("alt1", "m1-alt"), ("alt2", "x/m1")],
        ),
        model("other", 50, 20, &[("q", "o1"), ("r", "o2")]),
    ]);
    let active = p.definition("active").unwrap();
    // Failed on the preferred provider: the remaining map order, then the other model.
    assert_eq!(
        names(&ordinary_recovery(
            &p,
            active,
            ("pref", "m1"),
            &Remembered::new()
        )),
        [
            "active:alt1/m1-alt",
            "active:alt2/x/m1",
            "other:q/o1",
            "other:r/o2"
        ]
    );
    // Remembered first, then the unvisited preferred, then the rest in map order.
    let remembered: Remembered = [("active".to_owned(), "alt2".to_owned())].into();
    let first = initial_route(active, &remembered).unwrap();
    assert_eq!(
        (first.provider.as_str(), first.id.as_str()),
        ("alt2", "x/m1")
    );
    assert_eq!(
        names(&ordinary_recovery(
            &p,
            active,
            ("alt2", "x/m1"),
            &remembered
        )),
        [
            "active:pref/m1",
            "active:alt1/m1-alt",
            "other:q/o1",
            "other:r/o2"
        ]
    );
    // A remembered provider the map no longer permits is passed over.
    let stale: Remembered = [("active".to_owned(), "gone".to_owned())].into();
    assert_eq!(provider_order(active, Some("gone"))[0].0, "pref");
    assert_eq!(initial_route(active, &stale).unwrap().provider, "pref");
    // Remembered providers of the other model apply to it too.
    let other_mem: Remembered = [("other".to_owned(), "r".to_owned())].into();
    assert_eq!(
        names(&ordinary_recovery(&p, active, ("pref", "m1"), &other_mem))[2..],
        ["other:r/o2", "other:q/o1"]
    );
}

#[test]
fn each_exact_pair_is_entered_at_most_once() {
    // Two logical models permit the same exact pair `shared/x`.
    let p = custom(&[
        model("active", 50, 10, &[("a", "1"), ("shared", "x")]),
        model("twin", 50, 20, &[("shared", "x"), ("b", "2")]),
        model("third", 60, 20, &[("a", "1"), ("c", "3")]),
    ]);
    let active = p.definition("active").unwrap();
    let attempts = ordinary_recovery(&p, active, ("a", "1"), &Remembered::new());
    assert_eq!(
        names(&attempts),
        ["active:shared/x", "twin:b/2", "third:c/3"],
        "the failed pair and the shared pair are never entered twice"
    );
}

#[test]
fn excluded_models_are_not_ordinary_recovery_targets() {
    let p = policy_from(&json!({"router": {"models": {"exclude": ["gpt-6-astra"]}}}));
    assert_eq!(
        order(&p, "sol-6.1"),
        [
            "claude-opus-5.5",
            "gemini-3.8-flash",
            "luna-6",
            "claude-sonnet-5.5"
        ]
    );
}

#[test]
fn compression_follows_entry_order_never_backward_or_wrapping() {
    let p = policy_from(&json!({"router": {
        "models": {"include": [], "add": [
            model("c0", 50, 10, &[("p0", "m0"), ("q0", "n0")]),
            model("c1", 50, 10, &[("p1", "m1"), ("q1", "n1")]),
            model("c2", 50, 10, &[("p2", "m2")]),
        ]},
        "compressor": {"models": [
            {"model": "c0", "effort": "low"},
            {"model": "c1", "effort": "high"},
            {"model": "c2", "effort": "minimal"}
        ]}
    }}));
    let none = Remembered::new();
    assert_eq!(
        names(&compressor_plan(&p, 0, &none)),
        ["c0:p0/m0", "c0:q0/n0", "c1:p1/m1", "c1:q1/n1", "c2:p2/m2"]
    );
    // Failure at entry 1's first route: its other provider, then entry 2; never entry 0.
    let after = compressor_recovery(&p, 1, ("p1", "m1"), &none);
    assert_eq!(names(&after), ["c1:q1/n1", "c2:p2/m2"]);
    assert_eq!(
        after[0].effort,
        Effort::High,
        "the entry's compression effort"
    );
    assert_eq!(after[1].effort, Effort::Minimal);
    // A remembered later entry as the start excludes the earlier ones.
    assert_eq!(names(&compressor_plan(&p, 2, &none)), ["c2:p2/m2"]);
    // The last entry's last route: nothing after it, no wrap.
    assert!(compressor_recovery(&p, 2, ("p2", "m2"), &none).is_empty());
    // Shipped: Sonnet at medium although ordinary Sonnet is high.
    let shipped = RoutingPolicy::shipped();
    let plan = compressor_plan(&shipped, 0, &none);
    assert_eq!(
        names(&plan),
        ["claude-sonnet-5.5:anthropic/claude-sonnet-5-5"]
    );
    assert_eq!(plan[0].effort, Effort::Medium);
}

#[test]
fn reverse_mapping_stops_instead_of_guessing() {
    let p = custom(&[
        model("one", 50, 10, &[("a", "x")]),
        model("two", 50, 10, &[("a", "x"), ("b", "y")]),
    ]);
    assert_eq!(reverse_map(&p, "b", "y", None).unwrap().model, "two");
    assert_eq!(
        reverse_map(&p, "c", "z", None).unwrap_err(),
        RecoveryStop::UnmappedRoute {
            provider: "c".into(),
            id: "z".into()
        }
    );
    let ambiguous = reverse_map(&p, "a", "x", None).unwrap_err();
    assert_eq!(
        ambiguous,
        RecoveryStop::AmbiguousRoute {
            provider: "a".into(),
            id: "x".into(),
            models: vec!["one".into(), "two".into()]
        }
    );
    assert!(ambiguous.to_string().contains("never picks the first"));
    assert_eq!(reverse_map(&p, "a", "x", Some("two")).unwrap().model, "two");
    assert!(reverse_map(&p, "a", "x", Some("three")).is_err());
    // Exact: a different id on the same provider is not a match.
    assert!(reverse_map(&p, "b", "Y", None).is_err());
}

#[test]
fn which_failures_begin_recovery() {
    use Exhaustion::{Known, Unknown};
    use FailureKind as K;
    use RecoveryDecision::{Fail, Recover, Stop};
    let table = [
        (K::Connection, Known, Recover),
        (K::Timeout, Known, Recover),
        (K::RateLimit, Known, Recover),
        (K::Server, Known, Recover),
        (K::Connection, Unknown, Stop),
        (K::Server, Unknown, Stop),
        (K::Authentication, Known, Fail),
        (K::Billing, Known, Fail),
        (K::ContextWindow, Known, Fail),
        (K::Authentication, Unknown, Fail),
        (K::Cancelled, Known, Stop),
        (K::Unknown, Known, Stop),
    ];
    for (kind, exhaustion, expected) in table {
        assert_eq!(
            decide(kind, exhaustion),
            expected,
            "{kind:?} {exhaustion:?}"
        );
    }
}

#[test]
fn pi_error_text_classification() {
    let table = [
        ("500 Internal Server Error", FailureKind::Server),
        ("503 Service Unavailable", FailureKind::Server),
        ("429 Too Many Requests", FailureKind::RateLimit),
        ("Rate limit reached for requests", FailureKind::RateLimit),
        ("Overloaded", FailureKind::RateLimit),
        ("Request timed out.", FailureKind::Timeout),
        ("fetch failed: ECONNREFUSED", FailureKind::Connection),
        ("Connection error.", FailureKind::Connection),
        (
            "401 Unauthorized: invalid api key",
            FailureKind::Authentication,
        ),
        (
            "429 You exceeded your current quota (insufficient_quota)",
            FailureKind::Billing,
        ),
        (
            "prompt is too long: 210000 tokens > 200000 maximum",
            FailureKind::ContextWindow,
        ),
        (
            "This model's maximum context length is 128000 tokens",
            FailureKind::ContextWindow,
        ),
        ("Retry cancelled", FailureKind::Cancelled),
        ("Request was aborted.", FailureKind::Cancelled),
        ("something odd", FailureKind::Unknown),
    ];
    for (text, kind) in table {
        assert_eq!(classify_message(text), kind, "{text}");
    }
}

#[test]
fn only_a_successful_action_publishes_and_the_later_started_one_wins() {
    use slate::policy::recovery::{ActionOutcome as O, SessionPreferences};
    let mut prefs = SessionPreferences::new();
    for outcome in [O::Failed, O::Cancelled, O::Interrupted, O::Unknown] {
        assert!(!prefs.publish_provider(1, outcome, "sol-6.1", "gateway"));
    }
    assert!(prefs.remembered().is_empty());
    // Admission 3 finishes first, admission 2 later: the later-started (3) wins.
    assert!(prefs.publish_provider(3, O::Ok, "sol-6.1", "gateway"));
    assert!(!prefs.publish_provider(2, O::Ok, "sol-6.1", "openai"));
    assert_eq!(prefs.remembered()["sol-6.1"], "gateway");
    assert!(prefs.publish_provider(4, O::Ok, "sol-6.1", "openai"));
    assert_eq!(prefs.remembered()["sol-6.1"], "openai");
    // The remembered provider leads the next action's plan.
    let p = policy_from(&json!({"router": {"models": {"replace": [
        {"model": "sol-6.1", "providers": {"openai": "gpt-6.1-sol", "gateway": "openai/gpt-6.1-sol"}}
    ]}}}));
    let sol = p.definition("sol-6.1").unwrap();
    prefs.publish_provider(5, O::Ok, "sol-6.1", "gateway");
    assert_eq!(
        initial_route(sol, &prefs.remembered()).unwrap().provider,
        "gateway"
    );
    // A reset clears and invalidates every earlier admission.
    prefs.reset(10);
    assert!(prefs.remembered().is_empty());
    assert!(!prefs.publish_provider(9, O::Ok, "sol-6.1", "gateway"));
    assert!(prefs.publish_provider(10, O::Ok, "sol-6.1", "gateway"));
}

#[test]
fn the_compressor_start_never_moves_backward() {
    use slate::policy::recovery::{ActionOutcome as O, SessionPreferences};
    let mut prefs = SessionPreferences::new();
    assert_eq!(prefs.compressor_start(), 0);
    assert!(!prefs.publish_compressor(1, O::Failed, 2));
    assert!(prefs.publish_compressor(1, O::Ok, 2));
    assert_eq!(prefs.compressor_start(), 2);
    // Freshness never permits an earlier entry.
    assert!(!prefs.publish_compressor(5, O::Ok, 1));
    // An older admission never wins, even for a later entry.
    assert!(!prefs.publish_compressor(0, O::Ok, 3));
    assert!(prefs.publish_compressor(6, O::Ok, 3));
    assert_eq!(prefs.compressor_start(), 3);
    // Until a preference reset.
    prefs.reset(7);
    assert_eq!(prefs.compressor_start(), 0);
    assert!(prefs.publish_compressor(7, O::Ok, 0));
}

mod properties {
    use std::collections::BTreeSet;

    use proptest::prelude::*;

    use super::{custom, model};
    use slate::policy::recovery::{Remembered, model_order, ordinary_recovery};

    /// Up to 8 custom models with ratings from a small range (so levels and ties repeat) and
    /// 1..=3 providers drawn from a small shared set (so pairs collide across models).
    /// Capability, cost, and (provider index, model index) routes of one generated model.
    type Generated = (u8, u8, Vec<(usize, usize)>);

    fn models() -> impl Strategy<Value = Vec<Generated>> {
        prop::collection::vec(
            (
                40u8..=46,
                1u8..=4,
                prop::collection::vec((0usize..3, 0usize..3), 1..=3),
            ),
            2..=8,
        )
    }

    proptest! {
        #[test]
        fn every_reachable_pair_once_active_identity_first_distance_never_decreases(
            spec in models(),
            active in 0usize..8,
        ) {
            let defs: Vec<serde_json::Value> = spec
                .iter()
                .enumerate()
                .map(|(i, (cap, cost, routes))| {
                    let mut seen = BTreeSet::new();
                    let routes: Vec<(String, String)> = routes
                        .iter()
                        .filter(|(p, _)| seen.insert(*p))
                        .map(|(p, m)| (format!("p{p}"), format!("m{m}")))
                        .collect();
                    let refs: Vec<(&str, &str)> =
                        routes.iter().map(|(p, m)| (p.as_str(), m.as_str())).collect();
                    model(&format!("x{i}"), *cap, *cost, &refs)
                })
                .collect();
            let p = custom(&defs);
            let active = p.definition(&format!("x{}", active % spec.len())).unwrap();
            let (fp, fid) = active.providers[0].clone();
            let attempts = ordinary_recovery(&p, active, (&fp, &fid), &Remembered::new());

            // Each exact pair at most once, never the failed one.
            let pairs: Vec<(String, String)> =
                attempts.iter().map(|a| (a.provider.clone(), a.id.clone())).collect();
            let unique: BTreeSet<_> = pairs.iter().cloned().collect();
            prop_assert_eq!(unique.len(), pairs.len());
            prop_assert!(!unique.contains(&(fp.clone(), fid.clone())));

            // Every pair of every ordinary model is reached (or was already entered).
            let mut expected: BTreeSet<(String, String)> = p
                .ordinary_definitions()
                .flat_map(|d| d.providers.iter().cloned())
                .collect();
            expected.remove(&(fp, fid));
            prop_assert_eq!(unique, expected);

            // The active identity's routes come first, as one block.
            let first_other = attempts.iter().position(|a| a.model != active.model);
            if let Some(k) = first_other {
                prop_assert!(attempts[k..].iter().all(|a| a.model != active.model));
            }

            // Other models by non-decreasing rating distance; within a rating, ascending cost.
            let order = model_order(&p, active);
            let key = |d: &slate::policy::routing::LogicalModel| {
                (d.capability_rating.abs_diff(active.capability_rating), d.cost_rating)
            };
            for w in order.windows(2) {
                let (a, b) = (key(w[0]), key(w[1]));
                prop_assert!(a.0 <= b.0, "distance decreased: {:?}", order.iter().map(|d| &d.model).collect::<Vec<_>>());
                if w[0].capability_rating == w[1].capability_rating {
                    prop_assert!(a.1 <= b.1);
                }
            }
        }
    }
}

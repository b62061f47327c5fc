//! Logical models in assignments [002 Action contract; Common recovery]: a task names a
//! logical `model` and a `reason`; its first route and recovery plan come from the routing
//! policy and the session's remembered providers. Exact selections keep working and never
//! fall back.

#![allow(clippy::unwrap_used, reason = "test fixtures fail loudly")]

use std::collections::BTreeSet;
use std::path::PathBuf;

use serde_json::{Value, json};
use slate::core::{ModelSelection, TaskSpec};
use slate::policy::capabilities::pi_offered_tools;
use slate::policy::logical::{LogicalContext, logical_name};
use slate::policy::model::ModelContext;
use slate::policy::profiles::{ConfigFile, ResolvedProfiles, resolve as resolve_profiles};
use slate::policy::recovery::{Remembered, ordinary_plan};
use slate::policy::request::{SubagentRequest, parse_delegate_task, parse_subagent};
use slate::policy::resolve::{ResolveContext, resolve_call};
use slate::policy::routing::{ProjectFile, RoutingPolicy, RoutingReport, SlateFile, resolve};
use slate::store::fs::RealFs;

fn profiles() -> ResolvedProfiles {
    resolve_profiles(
        ConfigFile {
            path: "/agent/delegation.json",
            text: None,
        },
        ConfigFile {
            path: "/p/.pi/delegation.json",
            text: None,
        },
        false,
        &RealFs,
    )
    .unwrap()
}

fn models(parent_allowlist: Option<Vec<ModelSelection>>) -> ModelContext {
    ModelContext {
        parent: ModelSelection {
            provider: "anthropic".into(),
            id: "claude-sonnet-5-5".into(),
            effort: Some("high".into()),
        },
        known_providers: BTreeSet::from(["anthropic".to_owned(), "openai".to_owned()]),
        operator_grants: Vec::new(),
        parent_allowlist,
    }
}

fn root() -> PathBuf {
    std::fs::canonicalize(std::env::temp_dir()).unwrap()
}

fn report(file: Option<&str>) -> RoutingReport {
    resolve(
        &SlateFile {
            label: "/agent/slate.json",
            bytes: file.map(str::as_bytes),
        },
        &ProjectFile::Absent,
    )
}

/// How the routing context is set up for one case.
#[derive(Clone, Copy, Debug)]
enum Routing {
    Shipped,
    Blocked,
    Absent,
    /// Only `luna-6` is ordinary; the other shipped definitions stay defined.
    OnlyLuna,
}

struct Case {
    report: Option<RoutingReport>,
    remembered: Remembered,
    allowlist: Option<Vec<ModelSelection>>,
}

impl Case {
    fn new(routing: Routing) -> Self {
        let report = match routing {
            Routing::Shipped => Some(report(None)),
            Routing::Blocked => Some(report(Some(r#"{"router": {"bogus": 1}}"#))),
            Routing::OnlyLuna => Some(report(Some(
                r#"{"router": {"models": {"include": ["luna-6"]}}}"#,
            ))),
            Routing::Absent => None,
        };
        Self {
            report,
            remembered: Remembered::new(),
            allowlist: None,
        }
    }

    fn resolve(&self, input: &Value) -> Result<Vec<TaskSpec>, Vec<String>> {
        let call = match parse_delegate_task(input) {
            Ok(call) => call,
            Err(native) => match parse_subagent(input) {
                Ok(SubagentRequest::Launch(call)) => call,
                _ => return Err(native.iter().map(ToString::to_string).collect()),
            },
        };
        let profiles = profiles();
        let models = models(self.allowlist.clone());
        let offered = pi_offered_tools();
        let root = root();
        let routing = self.report.as_ref().map(|r| LogicalContext {
            policy: r.policy.as_ref().filter(|_| !r.blocked),
            blocking_errors: r.errors.len(),
            remembered: &self.remembered,
            first_admission: 7,
        });
        let ctx = ResolveContext {
            profiles: &profiles,
            root_cwd: &root,
            delegator: None,
            offered: &offered,
            models: &models,
            fs: &RealFs,
            routing,
        };
        resolve_call(&call, &ctx).map_err(|p| p.iter().map(ToString::to_string).collect())
    }
}

fn task(extra: &Value) -> Value {
    let mut t = json!({"assignment": "Locate startup code", "profile": "scout"});
    for (k, v) in extra.as_object().unwrap() {
        t[k] = v.clone();
    }
    json!({"tasks": [t]})
}

/// Every refusal names the field and the rule.
#[test]
fn logical_request_rules() {
    let table: Vec<(&str, Routing, Value, &str)> = vec![
        (
            "missing_reason",
            Routing::Shipped,
            json!({"model": "luna-6"}),
            "$.tasks[0].reason: required with a logical model",
        ),
        (
            "blank_reason",
            Routing::Shipped,
            json!({"model": "luna-6", "reason": " \t"}),
            "$.tasks[0].reason = \" \\t\": must contain non-whitespace text",
        ),
        (
            "reason_not_a_string",
            Routing::Shipped,
            json!({"model": "luna-6", "reason": 3}),
            "$.tasks[0].reason = 3: must be a string",
        ),
        (
            "reason_too_long",
            Routing::Shipped,
            json!({"model": "luna-6", "reason": "x".repeat(201)}),
            "at most 200 characters (this one has 201)",
        ),
        (
            "reason_on_an_exact_selection",
            Routing::Shipped,
            json!({"model": "openai/gpt-6-luna:max", "reason": "fits"}),
            "$.tasks[0].reason: only a logical model takes a reason",
        ),
        (
            "reason_without_a_model",
            Routing::Shipped,
            json!({"reason": "fits"}),
            "$.tasks[0].reason: only a logical model takes a reason",
        ),
        (
            "unknown_name",
            Routing::Shipped,
            json!({"model": "gpt-5.6-luna", "reason": "fits"}),
            "$.tasks[0].model = gpt-5.6-luna: unknown logical model (ordinary: luna-6, claude-sonnet-5.5, sol-6.1",
        ),
        (
            "not_ordinary",
            Routing::OnlyLuna,
            json!({"model": "sol-6.1", "reason": "fits"}),
            "$.tasks[0].model = sol-6.1: `sol-6.1` is defined but not in the ordinary membership (ordinary: luna-6)",
        ),
        (
            "blocked",
            Routing::Blocked,
            json!({"model": "luna-6", "reason": "fits"}),
            "logical work is refused while the routing policy is blocked (1 error(s)); run `slate effective`",
        ),
        (
            "no_routing",
            Routing::Absent,
            json!({"model": "luna-6", "reason": "fits"}),
            "$.tasks[0].model = luna-6: logical models are not available here",
        ),
        (
            "with_an_allowlist",
            Routing::Shipped,
            json!({"model": "luna-6", "reason": "fits", "models": ["openai/gpt-6-luna"]}),
            "$.tasks[0].models: `models` narrows exact selections only",
        ),
    ];
    for (name, routing, extra, want) in table {
        let problems = Case::new(routing).resolve(&task(&extra)).unwrap_err();
        assert!(
            problems.iter().any(|p| p.contains(want)),
            "{name}: want {want:?} in {problems:#?}"
        );
    }
}

#[test]
fn a_reason_of_exactly_200_characters_is_accepted() {
    let specs = Case::new(Routing::Shipped)
        .resolve(&task(
            &json!({"model": "luna-6", "reason": "é".repeat(200)}),
        ))
        .unwrap();
    assert_eq!(
        specs[0].logical.as_ref().unwrap().reason.chars().count(),
        200
    );
}

#[test]
fn a_logical_task_under_a_parent_allowlist_is_refused() {
    let mut case = Case::new(Routing::Shipped);
    case.allowlist = Some(vec![ModelSelection {
        provider: "openai".into(),
        id: "gpt-6-luna".into(),
        effort: None,
    }]);
    let problems = case
        .resolve(&task(&json!({"model": "luna-6", "reason": "fits"})))
        .unwrap_err();
    assert!(
        problems.iter().any(|p| p.contains(
            "$.tasks[0].model = luna-6: the delegating parent runs under a `models` allowlist"
        )),
        "{problems:#?}"
    );
}

#[test]
fn the_first_route_is_the_preferred_provider_at_the_fixed_effort_and_the_plan_follows() {
    let specs = Case::new(Routing::Shipped)
        .resolve(&task(
            &json!({"model": "sol-6.1", "reason": "a careful refactor"}),
        ))
        .unwrap();
    let spec = &specs[0];
    assert_eq!(
        spec.model,
        Some(ModelSelection {
            provider: "openai".into(),
            id: "gpt-6.1-sol".into(),
            effort: Some("high".into()),
        })
    );
    let action = spec.logical.as_ref().unwrap();
    assert_eq!(
        (
            action.model.as_str(),
            action.reason.as_str(),
            action.admission
        ),
        ("sol-6.1", "a careful refactor", 7)
    );
    assert!(spec.models.is_none());
    let policy = RoutingPolicy::shipped();
    let plan = ordinary_plan(
        &policy,
        policy.definition("sol-6.1").unwrap(),
        &Remembered::new(),
    );
    let planned: Vec<(String, String, String)> = action
        .routes
        .iter()
        .map(|r| {
            (
                r.logical.clone(),
                format!("{}/{}", r.selection.provider, r.selection.id),
                r.selection.effort.clone().unwrap(),
            )
        })
        .collect();
    let expected: Vec<(String, String, String)> = plan
        .iter()
        .map(|r| {
            (
                r.model.clone(),
                format!("{}/{}", r.provider, r.id),
                r.effort.as_str().to_owned(),
            )
        })
        .collect();
    assert_eq!(planned, expected);
    // docs/routing.md's worked example: sol-6.1, then gpt-6-astra, claude-opus-5.5,
    // gemini-3.8-flash, luna-6, claude-sonnet-5.5, each at its own fixed effort.
    let order: Vec<&str> = planned.iter().map(|(m, _, _)| m.as_str()).collect();
    assert_eq!(
        order,
        [
            "sol-6.1",
            "gpt-6-astra",
            "claude-opus-5.5",
            "gemini-3.8-flash",
            "luna-6",
            "claude-sonnet-5.5"
        ]
    );
}

const TWO_PROVIDERS: &str = r#"{"router": {"models": {"include": [], "add": [{
    "model": "duo", "capabilityRating": 50, "effort": "low", "costRating": 10,
    "preferredProvider": "beta", "providers": {"alpha": "duo-a", "beta": "duo-b"},
    "guidelines": [], "cautions": []}]}}}"#;

#[test]
fn the_first_route_is_the_remembered_provider_else_the_preferred_one() {
    let table: [(&str, Option<&str>, &str, [&str; 2]); 3] = [
        (
            "no memory",
            None,
            "beta/duo-b",
            ["beta/duo-b", "alpha/duo-a"],
        ),
        (
            "remembered wins",
            Some("alpha"),
            "alpha/duo-a",
            ["alpha/duo-a", "beta/duo-b"],
        ),
        (
            "remembered but no longer permitted",
            Some("gamma"),
            "beta/duo-b",
            ["beta/duo-b", "alpha/duo-a"],
        ),
    ];
    for (name, remembered, first, plan) in table {
        let mut case = Case::new(Routing::Shipped);
        case.report = Some(report(Some(TWO_PROVIDERS)));
        if let Some(provider) = remembered {
            case.remembered.insert("duo".into(), provider.into());
        }
        let specs = case
            .resolve(&task(&json!({"model": "duo", "reason": "fits"})))
            .unwrap();
        let model = specs[0].model.clone().unwrap();
        assert_eq!(format!("{}/{}", model.provider, model.id), first, "{name}");
        assert_eq!(model.effort.as_deref(), Some("low"), "{name}");
        let routes: Vec<String> = specs[0]
            .logical
            .as_ref()
            .unwrap()
            .routes
            .iter()
            .map(|r| format!("{}/{}", r.selection.provider, r.selection.id))
            .collect();
        assert_eq!(routes, plan, "{name}");
    }
}

#[test]
fn exact_selections_keep_working_without_routing_and_carry_no_plan() {
    for routing in [Routing::Absent, Routing::Blocked, Routing::Shipped] {
        let specs = Case::new(routing)
            .resolve(&task(&json!({"model": "anthropic/claude-sonnet-5-5"})))
            .unwrap();
        assert!(specs[0].logical.is_none(), "{routing:?}");
        assert_eq!(specs[0].model.as_ref().unwrap().id, "claude-sonnet-5-5");
    }
}

#[test]
fn each_task_of_a_call_gets_the_next_admission_number() {
    let specs = Case::new(Routing::Shipped)
        .resolve(&json!({"tasks": [
            {"assignment": "a", "profile": "scout", "model": "luna-6", "reason": "cheap"},
            {"assignment": "b", "profile": "scout"},
            {"assignment": "c", "profile": "scout", "model": "gpt-6-astra", "reason": "broad"}
        ]}))
        .unwrap();
    let admissions: Vec<Option<u64>> = specs
        .iter()
        .map(|s| s.logical.as_ref().map(|l| l.admission))
        .collect();
    assert_eq!(admissions, [Some(7), None, Some(9)]);
}

#[test]
fn the_compatibility_subagent_launch_takes_a_logical_model_too() {
    let specs = Case::new(Routing::Shipped)
        .resolve(&json!({"agent": "scout", "task": "look", "model": "luna-6", "reason": "cheap"}))
        .unwrap();
    assert_eq!(specs[0].logical.as_ref().unwrap().model, "luna-6");
}

#[test]
fn only_a_string_without_a_slash_is_a_logical_name() {
    assert_eq!(logical_name(Some(&json!("luna-6"))), Some("luna-6"));
    assert_eq!(logical_name(Some(&json!("openai/gpt-6-luna"))), None);
    assert_eq!(
        logical_name(Some(&json!({"provider": "openai", "id": "gpt-6-luna"}))),
        None
    );
    assert_eq!(logical_name(None), None);
}

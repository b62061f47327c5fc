//! Request shapes [Input and atomic preflight; Native orchestration compatibility].

use proptest::prelude::*;
use serde_json::{Value, json};
use slate::core::{ChildRef, CoordinationAction, Role};
use slate::policy::request::{SubagentRequest, TaskSource, parse_delegate_task, parse_subagent};

fn problems(input: &Value) -> Vec<String> {
    parse_delegate_task(input)
        .expect_err("should be refused")
        .iter()
        .map(ToString::to_string)
        .collect()
}

fn compat_problems(input: &Value) -> Vec<String> {
    parse_subagent(input)
        .expect_err("should be refused")
        .iter()
        .map(ToString::to_string)
        .collect()
}

#[test]
fn native_single_shape_defaults_to_foreground() {
    let call =
        parse_delegate_task(&json!({"assignment": "Locate startup code", "profile": "scout"}))
            .unwrap();
    assert!(!call.background);
    assert_eq!(call.tasks.len(), 1);
    assert_eq!(
        call.tasks[0].source,
        TaskSource::Assignment("Locate startup code".into())
    );
    assert_eq!(call.tasks[0].profile, Role::Scout);
    assert_eq!(call.tasks[0].path, "$");
}

#[test]
fn native_batch_shape_keeps_order_and_call_level_background() {
    let call = parse_delegate_task(&json!({
        "tasks": [
            {"assignment": "Locate startup code", "profile": "scout"},
            {"assignment": "Review lifecycle tests", "profile": "review", "limits": {"requests": 20}}
        ],
        "background": true
    }))
    .unwrap();
    assert!(call.background);
    assert_eq!(call.tasks[1].profile, Role::Review);
    assert_eq!(call.tasks[1].limits.requests, Some(20));
    assert_eq!(call.tasks[1].path, "$.tasks[1]");
}

#[test]
fn exactly_one_shape_is_allowed() {
    let p =
        problems(&json!({"tasks": [{"assignment": "a", "profile": "scout"}], "assignment": "b"}));
    assert!(
        p.iter()
            .any(|p| p.contains("$.assignment") && p.contains("exactly one shape")),
        "{p:?}"
    );
}

#[test]
fn additional_properties_are_rejected_everywhere() {
    let p = problems(&json!({"assignment": "a", "profile": "scout", "priority": 1}));
    assert_eq!(
        p.iter()
            .filter(|p| p.starts_with("$.priority") && p.contains("unknown property"))
            .count(),
        1,
        "an unknown property is named once (issue 22 item 10): {p:?}"
    );
    let p = problems(&json!({"tasks": [{"assignment": "a", "profile": "scout", "color": "red"}]}));
    assert!(p.iter().any(|p| p.starts_with("$.tasks[0].color")), "{p:?}");
    let p = problems(&json!({"tasks": [], "extra": true}));
    assert!(p.iter().any(|p| p.starts_with("$.extra")), "{p:?}");
}

#[test]
fn background_belongs_to_the_call_not_to_items() {
    let p =
        problems(&json!({"tasks": [{"assignment": "a", "profile": "scout", "background": true}]}));
    assert!(
        p.iter()
            .any(|p| p.contains("$.tasks[0].background") && p.contains("belongs to the call")),
        "{p:?}"
    );
    let p = problems(&json!({"assignment": "a", "profile": "scout", "background": "yes"}));
    assert!(
        p.iter()
            .any(|p| p.contains("$.background") && p.contains("true or false")),
        "{p:?}"
    );
}

#[test]
fn assignments_must_contain_non_whitespace_text() {
    for blank in ["", "   ", "\n\t"] {
        let p = problems(&json!({"assignment": blank, "profile": "scout"}));
        assert!(
            p.iter()
                .any(|p| p.starts_with("$.assignment") && p.contains("non-whitespace")),
            "{p:?}"
        );
    }
    let p = problems(&json!({"assignment": 42, "profile": "scout"}));
    assert!(
        p.iter().any(|p| p.starts_with("$.assignment = 42")),
        "{p:?}"
    );
}

#[test]
fn exactly_one_of_assignment_or_task_file() {
    let p = problems(&json!({"assignment": "a", "taskFile": "t.txt", "profile": "review"}));
    assert!(
        p.iter()
            .any(|p| p.contains("exactly one of `assignment` or `taskFile`, not both")),
        "{p:?}"
    );
    let p = problems(&json!({"profile": "review"}));
    assert!(
        p.iter().any(|p| p.contains("required: give exactly one")),
        "{p:?}"
    );
    let call =
        parse_delegate_task(&json!({"taskFile": "tasks/review.txt", "profile": "review"})).unwrap();
    assert_eq!(
        call.tasks[0].source,
        TaskSource::TaskFile("tasks/review.txt".into())
    );
}

#[test]
fn custom_roles_are_rejected_and_worker_is_implementation() {
    let p = problems(&json!({"assignment": "a", "profile": "architect"}));
    assert!(
        p.iter().any(|p| p.contains("$.profile = \"architect\"")
            && p.contains("custom roles are unsupported")),
        "{p:?}"
    );
    let call = parse_delegate_task(&json!({"assignment": "a", "profile": "worker"})).unwrap();
    assert_eq!(call.tasks[0].profile, Role::Implementation);
    let p = problems(&json!({"assignment": "a"}));
    assert!(
        p.iter().any(|p| p.starts_with("$.profile: required")),
        "{p:?}"
    );
}

#[test]
fn limits_are_safe_non_negative_integers_positive_where_required() {
    let cases = [
        (json!({"requests": 0}), "must be positive"),
        (json!({"tools": 0}), "must be positive"),
        (json!({"deadlineMs": 0}), "must be positive"),
        (json!({"requests": -1}), "non-negative safe integer"),
        (json!({"requests": 1.5}), "non-negative safe integer"),
        (json!({"requests": "3"}), "non-negative safe integer"),
        (
            json!({"deadlineMs": 9_007_199_254_740_992_u64}),
            "non-negative safe integer",
        ),
        (json!({"retries": 3}), "unknown limit"),
    ];
    for (limits, rule) in cases {
        let p = problems(&json!({"assignment": "a", "profile": "scout", "limits": limits}));
        assert!(
            p.iter()
                .any(|p| p.starts_with("$.limits.") && p.contains(rule)),
            "{limits}: {p:?}"
        );
    }
    let call = parse_delegate_task(&json!({"assignment": "a", "profile": "scout", "limits": {"depth": 0, "spawns": 0, "tools": 3.0}})).unwrap();
    assert_eq!(call.tasks[0].limits.depth, Some(0));
    assert_eq!(call.tasks[0].limits.spawns, Some(0));
    assert_eq!(call.tasks[0].limits.tools, Some(3));
    let p = problems(&json!({"assignment": "a", "profile": "scout", "limits": [1]}));
    assert!(
        p.iter()
            .any(|p| p.starts_with("$.limits") && p.contains("must be an object")),
        "{p:?}"
    );
}

#[test]
fn spawn_and_coordination_lists_parse_and_reject_duplicates() {
    let call = parse_delegate_task(&json!({"assignment": "a", "profile": "general", "spawn": [], "coordination": ["message", "wait"]})).unwrap();
    assert_eq!(call.tasks[0].spawn, Some(vec![]));
    assert_eq!(
        call.tasks[0].coordination,
        Some(vec![CoordinationAction::Message, CoordinationAction::Wait])
    );
    let absent = parse_delegate_task(&json!({"assignment": "a", "profile": "general"})).unwrap();
    assert_eq!(absent.tasks[0].spawn, None, "absent inherits");
    let p = problems(
        &json!({"assignment": "a", "profile": "general", "spawn": ["scout", "scout"], "coordination": ["status"]}),
    );
    assert!(
        p.iter()
            .any(|p| p.starts_with("$.spawn[1]") && p.contains("duplicate")),
        "{p:?}"
    );
    assert!(
        p.iter()
            .any(|p| p.starts_with("$.coordination[0]") && p.contains("message, inbox, wait")),
        "{p:?}"
    );
}

#[test]
fn every_problem_is_reported_not_just_the_first() {
    let p = problems(&json!({"tasks": [
        {"assignment": " ", "profile": "scout"},
        {"assignment": "ok", "profile": "boss"},
        {"assignment": "ok", "profile": "scout", "limits": {"requests": 0}}
    ]}));
    assert_eq!(p.len(), 3, "{p:?}");
}

#[test]
fn compat_launch_defaults_to_async_and_maps_agents() {
    let SubagentRequest::Launch(call) =
        parse_subagent(&json!({"agent": "worker", "task": "Fix it"})).unwrap()
    else {
        panic!("launch expected");
    };
    assert!(call.background, "async defaults to true");
    assert_eq!(call.tasks[0].profile, Role::Implementation);
    let SubagentRequest::Launch(call) =
        parse_subagent(&json!({"agent": "scout", "task": "Look", "async": false, "cwd": "sub"}))
            .unwrap()
    else {
        panic!("launch expected");
    };
    assert!(!call.background);
    assert_eq!(call.tasks[0].cwd.as_deref(), Some("sub"));
}

#[test]
fn compat_batch_shares_cwd_for_items_lacking_one() {
    let SubagentRequest::Launch(call) = parse_subagent(&json!({
        "tasks": [{"agent": "scout", "task": "a"}, {"agent": "review", "task": "b", "cwd": "/abs"}],
        "cwd": "shared"
    }))
    .unwrap() else {
        panic!("launch expected");
    };
    assert_eq!(call.tasks[0].cwd.as_deref(), Some("shared"));
    assert_eq!(call.tasks[1].cwd.as_deref(), Some("/abs"));
}

#[test]
fn compat_unknown_agents_are_rejected_not_mapped() {
    let p = compat_problems(&json!({"agent": "planner", "task": "x"}));
    assert!(
        p.iter()
            .any(|p| p.contains("$.agent = \"planner\"")
                && p.contains("custom roles are unsupported")),
        "{p:?}"
    );
    let p = compat_problems(&json!({"agent": "scout", "task": "x", "models": []}));
    assert!(
        p.iter()
            .any(|p| p.starts_with("$.models") && p.contains("unknown property")),
        "{p:?}"
    );
}

#[test]
fn compat_actions_take_exact_uuid_at_generation_ids() {
    let id: ChildRef = "0b6a1f3e-4c2d-4e8a-9b1c-2d3e4f5a6b7c@2".parse().unwrap();
    assert_eq!(
        parse_subagent(&json!({"action": "agents"})).unwrap(),
        SubagentRequest::Agents
    );
    assert_eq!(
        parse_subagent(&json!({"action": "list"})).unwrap(),
        SubagentRequest::Agents
    );
    assert_eq!(
        parse_subagent(&json!({"action": "status", "id": id.to_string()})).unwrap(),
        SubagentRequest::Status(id)
    );
    assert_eq!(
        parse_subagent(&json!({"action": "stop", "id": id.to_string()})).unwrap(),
        SubagentRequest::Stop(id)
    );
    assert_eq!(
        parse_subagent(&json!({"action": "resume", "id": id.to_string(), "message": "Continue"}))
            .unwrap(),
        SubagentRequest::Resume {
            id,
            message: "Continue".into()
        }
    );
    for bad in [
        "0b6a1f3e",
        "0b6a1f3e-4c2d-4e8a-9b1c-2d3e4f5a6b7c",
        "0b6a1f3e-4c2d-4e8a-9b1c-2d3e4f5a6b7c@latest",
        "0b6a1f3e-4c2d-4e8a-9b1c-2d3e4f5a6b7c@0",
    ] {
        let p = compat_problems(&json!({"action": "stop", "id": bad}));
        assert!(p.iter().any(|p| p.starts_with("$.id")), "{bad}: {p:?}");
    }
    let p = compat_problems(&json!({"action": "steer", "id": id.to_string()}));
    assert!(
        p.iter().any(|p| p.starts_with("$.message: required")),
        "{p:?}"
    );
    let p = compat_problems(&json!({"action": "explode"}));
    assert!(p.iter().any(|p| p.starts_with("$.action")), "{p:?}");
}

fn arbitrary_json() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i64>().prop_map(|n| json!(n)),
        any::<f64>().prop_map(|f| json!(f)),
        ".{0,12}".prop_map(Value::String),
        prop_oneof![
            Just("tasks"),
            Just("assignment"),
            Just("profile"),
            Just("agent"),
            Just("action"),
            Just("scout"),
            Just("limits")
        ]
        .prop_map(|s| json!(s)),
    ];
    leaf.prop_recursive(4, 48, 6, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..5).prop_map(Value::Array),
            prop::collection::btree_map(
                prop_oneof![
                    Just("tasks".to_owned()),
                    Just("assignment".to_owned()),
                    Just("profile".to_owned()),
                    Just("taskFile".to_owned()),
                    Just("agent".to_owned()),
                    Just("task".to_owned()),
                    Just("action".to_owned()),
                    Just("id".to_owned()),
                    Just("limits".to_owned()),
                    Just("background".to_owned()),
                    ".{0,6}".prop_map(|s| s)
                ],
                inner,
                0..6
            )
            .prop_map(|m| Value::Object(m.into_iter().collect())),
        ]
    })
}

proptest! {
    #[test]
    fn request_parsers_never_panic(input in arbitrary_json()) {
        let _ = parse_delegate_task(&input);
        let _ = parse_subagent(&input);
    }
}

/// `reason` [002 Action contract]: non-blank text of at most 200 characters, on native and
/// compatibility tasks; whether the task may carry one is policy's (logical models only).
#[test]
fn reason_rules_name_the_field() {
    let table: [(Value, &str); 5] = [
        (
            json!({"tasks": [{"assignment": "a", "profile": "scout", "model": "luna-6", "reason": ""}]}),
            "$.tasks[0].reason = \"\": must contain non-whitespace text",
        ),
        (
            json!({"assignment": "a", "profile": "scout", "model": "luna-6", "reason": "\n "}),
            "$.reason = \"\\n \": must contain non-whitespace text",
        ),
        (
            json!({"assignment": "a", "profile": "scout", "model": "luna-6", "reason": ["x"]}),
            "$.reason = [\"x\"]: must be a string",
        ),
        (
            json!({"tasks": [{"assignment": "a", "profile": "scout"}, {"assignment": "b", "profile": "scout", "model": "luna-6", "reason": "r".repeat(201)}]}),
            "$.tasks[1].reason = ",
        ),
        (
            json!({"tasks": [{"assignment": "a", "profile": "scout", "model": "luna-6", "reason": "r".repeat(250)}]}),
            "at most 200 characters (this one has 250)",
        ),
    ];
    for (input, want) in table {
        let p = problems(&input);
        assert!(p.iter().any(|x| x.contains(want)), "want {want:?} in {p:?}");
    }
    let p =
        compat_problems(&json!({"agent": "scout", "task": "t", "model": "luna-6", "reason": " "}));
    assert!(p.iter().any(|x| x.starts_with("$.reason")), "{p:?}");
    let ok = parse_delegate_task(
        &json!({"assignment": "a", "profile": "scout", "model": "luna-6", "reason": "ü".repeat(200)}),
    )
    .unwrap();
    assert_eq!(
        ok.tasks[0].reason.as_deref().map(|r| r.chars().count()),
        Some(200)
    );
}

//! Policy wired into admission: a request is parsed, resolved by policy (profiles, grants,
//! workspaces, task files, schemas, models, capabilities), then admitted atomically.

#![allow(clippy::unwrap_used, reason = "test fixtures fail loudly")]

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use serde_json::{Value, json};
use slate::core::{
    BuiltinTool, Coordinator, Effect, Input, ModelSelection, Party, Reply, RequestId, Role,
    TaskSpec,
};
use slate::policy::Problem;
use slate::policy::capabilities::pi_offered_tools;
use slate::policy::model::{Effort, ModelContext, ModelGrant};
use slate::policy::profiles::{ConfigFile, ResolvedProfiles, resolve};
use slate::policy::request::parse_delegate_task;
use slate::policy::resolve::{Delegator, ResolveContext, resolve_call};
use slate::policy::scheduling::SchedulingPolicy;
use slate::store::fs::RealFs;

struct Workspace {
    root: PathBuf,
}

impl Workspace {
    fn new(name: &str) -> Self {
        let root =
            std::env::temp_dir().join(format!("slate-resolve-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&root);
        std::fs::create_dir_all(root.join("sub")).unwrap();
        std::fs::create_dir_all(root.join("tasks")).unwrap();
        std::fs::write(
            root.join("tasks/review.txt"),
            "Review the retry backoff for off-by-one errors.\n",
        )
        .unwrap();
        Self {
            root: std::fs::canonicalize(&root).unwrap(),
        }
    }
}

impl Drop for Workspace {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.root);
    }
}

fn profiles(operator: Option<&str>) -> ResolvedProfiles {
    resolve(
        ConfigFile {
            path: "/agent/delegation.json",
            text: operator,
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

fn parent_model() -> ModelSelection {
    ModelSelection {
        provider: "anthropic".into(),
        id: "claude-sonnet-5.5".into(),
        effort: Some("medium".into()),
    }
}

fn models(grants: Vec<ModelGrant>) -> ModelContext {
    ModelContext {
        parent: parent_model(),
        known_providers: BTreeSet::from(["anthropic".to_owned(), "openai".to_owned()]),
        operator_grants: grants,
        parent_allowlist: None,
    }
}

fn resolve_json(
    input: &Value,
    ws: &Path,
    profiles: &ResolvedProfiles,
    models: &ModelContext,
    delegator: Option<Delegator<'_>>,
) -> Result<Vec<TaskSpec>, Vec<String>> {
    let call = parse_delegate_task(input)
        .map_err(|p| p.iter().map(ToString::to_string).collect::<Vec<_>>())?;
    let offered = pi_offered_tools();
    let ctx = ResolveContext {
        profiles,
        root_cwd: ws,
        delegator,
        offered: &offered,
        models,
        fs: &RealFs,
        routing: None,
    };
    resolve_call(&call, &ctx).map_err(|p: Vec<Problem>| p.iter().map(ToString::to_string).collect())
}

#[test]
fn a_request_resolves_into_admitted_children_with_effective_grants() {
    let ws = Workspace::new("ok");
    let p = profiles(None);
    let specs = resolve_json(
        &json!({"tasks": [
            {"assignment": "Locate startup code", "profile": "scout"},
            {"taskFile": "tasks/review.txt", "profile": "review", "cwd": ".", "resultSchema": {"type": "object", "properties": {"summary": {"type": "string"}}, "required": ["summary"], "additionalProperties": false}},
            {"assignment": "Fix it", "profile": "worker", "cwd": "sub", "limits": {"requests": 20}}
        ]}),
        &ws.root,
        &p,
        &models(vec![]),
        None,
    )
    .unwrap();
    assert_eq!(
        specs[0].tools,
        vec![
            BuiltinTool::Read,
            BuiltinTool::Grep,
            BuiltinTool::Find,
            BuiltinTool::Ls
        ]
    );
    assert_eq!(
        specs[0].cwd,
        ws.root.display().to_string(),
        "cwd defaults to the root cwd, canonical"
    );
    assert_eq!(
        specs[0].model,
        Some(parent_model()),
        "the parent's selection is captured by default"
    );
    assert_eq!(specs[0].spawn, vec![Role::Scout, Role::Review]);
    assert_eq!(
        specs[1].assignment, "Review the retry backoff for off-by-one errors.\n",
        "task file text is the assignment snapshot"
    );
    assert!(specs[1].result_schema.is_some());
    assert_eq!(specs[2].profile, Role::Implementation);
    assert_eq!(specs[2].tools, BuiltinTool::ALL.to_vec());
    assert_eq!(specs[2].cwd, ws.root.join("sub").display().to_string());
    assert!(specs[2].is_writer());
    assert!(!specs[0].is_writer(), "read-only needs no writer lease");

    let mut coord =
        Coordinator::new(uuid::Uuid::from_u128(1), SchedulingPolicy::default(), 9).unwrap();
    let effects = coord.handle(
        Input::Admit {
            request: RequestId(1),
            actor: Party::Root,
            tasks: specs,
            background: true,
        },
        0,
    );
    let admitted = effects.iter().find_map(|e| match e {
        Effect::Reply {
            result: Ok(Reply::Admitted { children, .. }),
            ..
        } => Some(children.clone()),
        _ => None,
    });
    let children = admitted.expect("admitted");
    assert_eq!(children.len(), 3);
    assert_eq!(
        children[1].outcome.as_ref().map(|o| o.validation),
        Some(slate::core::Validation::Awaiting)
    );
    assert_eq!(
        children[0].model.as_deref(),
        Some("anthropic/claude-sonnet-5.5")
    );
    assert_eq!(children[0].effort.as_deref(), Some("medium"));
}

#[test]
fn every_problem_of_every_task_is_reported_and_nothing_is_admitted() {
    let ws = Workspace::new("bad");
    let p = profiles(None);
    let problems = resolve_json(
        &json!({"tasks": [
            {"assignment": "ok", "profile": "scout"},
            {"taskFile": "../escape.txt", "profile": "review"},
            {"assignment": "x", "profile": "review", "cwd": "missing-dir"},
            {"assignment": "x", "profile": "review", "resultSchema": {"$ref": "#/defs/a"}},
            {"assignment": "x", "profile": "scout", "spawn": ["general"]},
            {"assignment": "x", "profile": "scout", "model": "openai/gpt-9"},
            {"assignment": "x", "profile": "scout", "coordination": ["wait"]}
        ]}),
        &ws.root,
        &p,
        &models(vec![]),
        None,
    )
    .unwrap_err();
    let has = |path: &str| problems.iter().any(|p| p.starts_with(path));
    assert!(has("$.tasks[1].taskFile"), "{problems:?}");
    assert!(has("$.tasks[2].cwd"), "{problems:?}");
    assert!(has("$.tasks[3].resultSchema"), "{problems:?}");
    assert!(
        problems.iter().any(
            |p| p.starts_with("$.tasks[4].spawn[0] = general") && p.contains("can only narrow")
        ),
        "{problems:?}"
    );
    assert!(has("$.tasks[5].model"), "{problems:?}");
    assert!(
        problems
            .iter()
            .any(|p| p.starts_with("$.tasks[6].coordination[0] = wait")
                && p.contains("granted: none")),
        "{problems:?}"
    );
    assert!(
        !has("$.tasks[0]"),
        "a valid task has no problem: {problems:?}"
    );
}

#[test]
fn model_overrides_need_an_exact_operator_grant() {
    let ws = Workspace::new("model");
    let p = profiles(None);
    let input = json!({"assignment": "x", "profile": "scout", "model": "openai/gpt-9:high"});
    assert!(resolve_json(&input, &ws.root, &p, &models(vec![]), None).is_err());
    let granted = models(vec![ModelGrant {
        provider: "openai".into(),
        id: "gpt-9".into(),
        efforts: vec![Effort::High],
    }]);
    let specs = resolve_json(&input, &ws.root, &p, &granted, None).unwrap();
    assert_eq!(
        specs[0].model.as_ref().map(|m| m.id.as_str()),
        Some("gpt-9")
    );
}

#[test]
fn nested_tasks_default_to_the_delegators_workspace_and_need_its_read_grant_for_task_files() {
    let ws = Workspace::new("nested");
    let p = profiles(None);
    let sub = ws.root.join("sub");
    std::fs::write(sub.join("t.txt"), "Look at sub.\n").unwrap();
    let mut parent = TaskSpec::new("parent", Role::General, sub.display().to_string());
    parent.tools = vec![BuiltinTool::Read, BuiltinTool::Grep];
    let delegator = Delegator {
        workspace: &sub,
        spec: &parent,
    };
    let specs = resolve_json(
        &json!({"taskFile": "t.txt", "profile": "scout"}),
        &ws.root,
        &p,
        &models(vec![]),
        Some(delegator),
    )
    .unwrap();
    assert_eq!(specs[0].cwd, sub.display().to_string());
    assert_eq!(specs[0].assignment, "Look at sub.\n");
    parent.tools = vec![BuiltinTool::Grep];
    let delegator = Delegator {
        workspace: &sub,
        spec: &parent,
    };
    let problems = resolve_json(
        &json!({"taskFile": "t.txt", "profile": "scout"}),
        &ws.root,
        &p,
        &models(vec![]),
        Some(delegator),
    )
    .unwrap_err();
    assert!(
        problems
            .iter()
            .any(|p| p.contains("$.taskFile") && p.contains("read grant")),
        "{problems:?}"
    );
}

#[test]
fn leaf_grants_are_recorded_as_capability_denials_when_the_worker_cannot_call_them() {
    let ws = Workspace::new("leaf");
    let p = profiles(Some(r#"{"general": {"leafTools": ["mcp__docs__lookup"]}}"#));
    let specs = resolve_json(
        &json!({"assignment": "x", "profile": "general"}),
        &ws.root,
        &p,
        &models(vec![]),
        None,
    )
    .unwrap();
    assert!(specs[0].leaf_tools.is_empty());
    assert_eq!(specs[0].capability_denials.len(), 1);
    assert_eq!(specs[0].capability_denials[0].name, "mcp__docs__lookup");
    assert!(
        specs[0].capability_denials[0]
            .reason
            .contains("not offered")
    );
}

#[test]
fn an_empty_effective_tool_set_rejects_the_batch() {
    let ws = Workspace::new("empty");
    let p = profiles(Some(r#"{"scout": {"tools": []}}"#));
    let problems = resolve_json(&json!({"tasks": [{"assignment": "x", "profile": "review"}, {"assignment": "y", "profile": "scout"}]}), &ws.root, &p, &models(vec![]), None).unwrap_err();
    assert_eq!(problems.len(), 1, "{problems:?}");
    assert!(
        problems[0]
            .starts_with("$.tasks[1].profile = scout: the effective builtin tool set is empty"),
        "{problems:?}"
    );
}

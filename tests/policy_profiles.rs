//! Profiles and spawn grants [Subagent Profiles and explicit spawn grants; Restricted general
//! inheritance] and effective capabilities.

#![allow(clippy::unwrap_used, reason = "test fixtures fail loudly")]

use std::path::PathBuf;

use slate::core::{BuiltinTool, CoordinationAction, Role};
use slate::policy::capabilities::{OfferedTool, ToolKind, effective, pi_offered_tools};
use slate::policy::profiles::{ConfigFile, ResolvedProfiles, SourceStatus, bundled, resolve};
use slate::store::fs::RealFs;

const OP: &str = "/agent/delegation.json";
const PROJ: &str = "/project/.pi/delegation.json";

fn resolve_with(
    operator: Option<&str>,
    project: Option<&str>,
    trusted: bool,
) -> Result<ResolvedProfiles, Vec<String>> {
    resolve(
        ConfigFile {
            path: OP,
            text: operator,
        },
        ConfigFile {
            path: PROJ,
            text: project,
        },
        trusted,
        &RealFs,
    )
    .map_err(|ps| ps.iter().map(ToString::to_string).collect())
}

fn refused(operator: Option<&str>, project: Option<&str>, trusted: bool) -> Vec<String> {
    resolve_with(operator, project, trusted).expect_err("should be refused")
}

fn temp_dir(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("slate-profiles-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

#[test]
fn bundled_profiles_have_their_ceilings_prompts_and_default_spawn() {
    let p = bundled();
    let read_only = vec![
        BuiltinTool::Read,
        BuiltinTool::Grep,
        BuiltinTool::Find,
        BuiltinTool::Ls,
    ];
    assert_eq!(p[0].name, Role::Scout);
    assert_eq!(p[0].tools, read_only);
    assert_eq!(p[1].name, Role::Review);
    assert_eq!(p[1].tools, read_only);
    assert_eq!(p[2].tools, BuiltinTool::ALL.to_vec());
    assert_eq!(p[3].tools, BuiltinTool::ALL.to_vec());
    for profile in &p {
        assert_eq!(
            profile.spawn,
            vec![Role::Scout, Role::Review],
            "{:?}",
            profile.name
        );
        assert!(
            profile.coordination.is_empty(),
            "coordination is operator default-off"
        );
        assert!(profile.leaf_tools.is_empty() && profile.skills.is_empty());
        assert!(
            profile.prompt.len() > 400,
            "{:?} needs a real role prompt",
            profile.name
        );
    }
    assert!(p[0].prompt.contains("cannot change anything"));
    assert!(p[3].prompt.contains("writer lease"));
    let resolved = resolve_with(None, None, false).unwrap();
    assert_eq!(resolved.profiles, p);
    assert_eq!(
        resolved.scheduling,
        slate::policy::scheduling::SchedulingPolicy::default()
    );
    assert_eq!(resolved.sources[0].status, SourceStatus::Absent);
}

#[test]
fn absent_arrays_inherit_and_empty_arrays_remove() {
    let r = resolve_with(
        Some(r#"{"general": {"spawn": [], "description": "Mine"}}"#),
        None,
        false,
    )
    .unwrap();
    let general = r.profile(Role::General);
    assert!(general.spawn.is_empty(), "[] removes");
    assert_eq!(general.tools, BuiltinTool::ALL.to_vec(), "absent inherits");
    assert_eq!(general.description, "Mine");
}

#[test]
fn operator_tools_only_narrow_bundled_tools() {
    let r = resolve_with(
        Some(r#"{"general": {"tools": ["ls", "read"]}}"#),
        None,
        false,
    )
    .unwrap();
    assert_eq!(
        r.profile(Role::General).tools,
        vec![BuiltinTool::Read, BuiltinTool::Ls],
        "role order"
    );
    let p = refused(
        Some(r#"{"scout": {"tools": ["read", "bash"]}}"#),
        None,
        false,
    );
    assert!(p.iter().any(|p| p == "/agent/delegation.json: $.scout.tools[1] = bash: operator tool can only narrow the bundled tool"), "{p:?}");
    let p = refused(Some(r#"{"scout": {"tools": ["read", "rm"]}}"#), None, false);
    assert!(
        p.iter()
            .any(|p| p.contains("$.scout.tools[1] = \"rm\": must be a builtin tool")),
        "{p:?}"
    );
}

#[test]
fn only_the_operator_adds_spawn_roles_and_the_project_only_narrows() {
    let op = r#"{"scheduling": {"concurrency": 2, "depth": 2, "spawns": 4}, "general": {"tools": ["read", "grep", "find", "ls"], "spawn": ["general"]}}"#;
    let r = resolve_with(Some(op), None, false).unwrap();
    assert_eq!(r.profile(Role::General).spawn, vec![Role::General]);
    assert_eq!(r.scheduling.concurrency, 2);
    assert_eq!(r.scheduling.spawns, 4);
    let p = refused(
        Some(op),
        Some(r#"{"general": {"spawn": ["general", "implementation"]}}"#),
        true,
    );
    assert!(
        p.iter().any(|p| p.starts_with(PROJ)
            && p.contains("$.general.spawn[1] = implementation")
            && p.contains("cannot re-enable")),
        "{p:?}"
    );
    let r = resolve_with(Some(op), Some(r#"{"general": {"spawn": []}}"#), true).unwrap();
    assert!(r.profile(Role::General).spawn.is_empty());
}

#[test]
fn a_trusted_project_never_re_enables_what_the_operator_removed() {
    let op = r#"{"implementation": {"tools": ["read", "edit"]}}"#;
    let p = refused(
        Some(op),
        Some(r#"{"implementation": {"tools": ["read", "bash"]}}"#),
        true,
    );
    assert!(
        p.iter()
            .any(|p| p.contains("$.implementation.tools[1] = bash")
                && p.contains("cannot re-enable")),
        "{p:?}"
    );
    let r = resolve_with(
        Some(op),
        Some(r#"{"implementation": {"tools": ["read"], "prompt": "Project-specific rules."}}"#),
        true,
    )
    .unwrap();
    assert_eq!(
        r.profile(Role::Implementation).tools,
        vec![BuiltinTool::Read]
    );
    assert_eq!(
        r.profile(Role::Implementation).prompt,
        "Project-specific rules."
    );
}

#[test]
fn an_untrusted_project_file_is_ignored() {
    let r = resolve_with(
        None,
        Some(r#"{"scout": {"tools": ["read"]}, "nonsense": 1}"#),
        false,
    )
    .unwrap();
    assert_eq!(r.profile(Role::Scout).tools.len(), 4);
    assert_eq!(r.sources[1].status, SourceStatus::IgnoredUntrusted);
}

#[test]
fn unknown_keys_and_custom_roles_fail_visibly() {
    let p = refused(
        Some(
            r#"{"architect": {}, "worker": {}, "scout": {"color": "red"}, "scheduling": {"retries": 1}}"#,
        ),
        None,
        false,
    );
    assert!(
        p.iter()
            .any(|p| p.contains("$.architect: unknown key: custom roles are unsupported")),
        "{p:?}"
    );
    assert!(
        p.iter()
            .any(|p| p.contains("$.worker: `worker` is only a request alias")),
        "{p:?}"
    );
    assert!(
        p.iter()
            .any(|p| p.contains("$.scout.color: unknown profile key")),
        "{p:?}"
    );
    assert!(
        p.iter()
            .any(|p| p.contains("$.scheduling.retries: unknown field")),
        "{p:?}"
    );
    assert_eq!(p.len(), 4, "every problem is reported: {p:?}");
    let p = refused(Some("{not json"), None, false);
    assert!(
        p[0].starts_with("/agent/delegation.json: $: invalid JSON"),
        "{p:?}"
    );
    let p = refused(Some(r#"{"scout": []}"#), None, false);
    assert!(
        p[0].contains("$.scout = []: a profile must be a JSON object"),
        "{p:?}"
    );
}

#[test]
fn scheduling_values_are_within_ceilings_positive_and_only_narrowed_by_projects() {
    let cases = [
        (
            r#"{"scheduling": {"concurrency": 17}}"#,
            "$.scheduling.concurrency = 17: exceeds the operator ceiling of 16",
        ),
        (
            r#"{"scheduling": {"queue": 257}}"#,
            "$.scheduling.queue = 257: exceeds the operator ceiling of 256",
        ),
        (
            r#"{"scheduling": {"batch": 65}}"#,
            "$.scheduling.batch = 65: exceeds the operator ceiling of 64",
        ),
        (
            r#"{"scheduling": {"depth": 5}}"#,
            "$.scheduling.depth = 5: exceeds the operator ceiling of 4",
        ),
        (
            r#"{"scheduling": {"spawns": 33}}"#,
            "$.scheduling.spawns = 33: exceeds the operator ceiling of 32",
        ),
        (
            r#"{"scheduling": {"deadlineMs": 3600001}}"#,
            "$.scheduling.deadlineMs = 3600001: exceeds the operator ceiling of 3600000",
        ),
        (
            r#"{"scheduling": {"requests": 1001}}"#,
            "$.scheduling.requests = 1001: exceeds the operator ceiling of 1000",
        ),
        (
            r#"{"scheduling": {"tools": 1001}}"#,
            "$.scheduling.tools = 1001: exceeds the operator ceiling of 1000",
        ),
        (
            r#"{"scheduling": {"concurrency": 0}}"#,
            "$.scheduling.concurrency = 0: must be positive",
        ),
        (
            r#"{"scheduling": {"batch": 0}}"#,
            "$.scheduling.batch = 0: must be positive",
        ),
        (
            r#"{"scheduling": {"deadlineMs": 0}}"#,
            "$.scheduling.deadlineMs = 0: must be positive",
        ),
        (
            r#"{"scheduling": {"requests": 0}}"#,
            "$.scheduling.requests = 0: must be positive",
        ),
        (
            r#"{"scheduling": {"tools": 0}}"#,
            "$.scheduling.tools = 0: must be positive",
        ),
        (
            r#"{"scheduling": {"queue": -1}}"#,
            "$.scheduling.queue = -1: must be a non-negative safe integer",
        ),
        (
            r#"{"scheduling": {"queue": 1.5}}"#,
            "$.scheduling.queue = 1.5: must be a non-negative safe integer",
        ),
    ];
    for (config, want) in cases {
        let p = refused(Some(config), None, false);
        assert!(p.iter().any(|p| p.contains(want)), "{config}: {p:?}");
    }
    // Ceilings themselves and zero where allowed are accepted.
    let r = resolve_with(Some(r#"{"scheduling": {"concurrency": 16, "queue": 0, "batch": 64, "depth": 0, "spawns": 0, "deadlineMs": 3600000, "requests": 1000, "tools": 1000}}"#), None, false).unwrap();
    assert_eq!(r.scheduling.queue, 0);
    assert_eq!(r.scheduling.tools, 1000);
    // A trusted project narrows operator values and cannot raise them.
    let op = r#"{"scheduling": {"concurrency": 4}}"#;
    let r = resolve_with(
        Some(op),
        Some(r#"{"scheduling": {"concurrency": 2}}"#),
        true,
    )
    .unwrap();
    assert_eq!(r.scheduling.concurrency, 2);
    let p = refused(
        Some(op),
        Some(r#"{"scheduling": {"concurrency": 8}}"#),
        true,
    );
    assert!(
        p.iter().any(|p| p.contains(
            "$.scheduling.concurrency = 8: a trusted project can only narrow the operator value 4"
        )),
        "{p:?}"
    );
}

#[test]
fn operator_skills_are_exact_absolute_readable_distinct_markdown_files() {
    let dir = temp_dir("skills");
    let good = dir.join("review-checklist.md");
    std::fs::write(&good, "# Checklist\n").unwrap();
    std::fs::write(dir.join("notes.txt"), "x").unwrap();
    std::fs::create_dir_all(dir.join("folder.md")).unwrap();
    std::os::unix::fs::symlink(&good, dir.join("alias.md")).unwrap();
    let good_s = good.display().to_string();
    let r = resolve_with(
        Some(&format!(r#"{{"review": {{"skills": ["{good_s}"]}}}}"#)),
        None,
        false,
    )
    .unwrap();
    assert_eq!(r.profile(Role::Review).skills, vec![good_s.clone()]);
    let cases = [
        ("relative.md".to_owned(), "exact absolute paths"),
        (
            dir.join("notes.txt").display().to_string(),
            "Markdown files",
        ),
        (
            dir.join("missing.md").display().to_string(),
            "missing or unreadable",
        ),
        (dir.join("folder.md").display().to_string(), "regular files"),
    ];
    for (skill, rule) in cases {
        let p = refused(
            Some(&format!(r#"{{"review": {{"skills": ["{skill}"]}}}}"#)),
            None,
            false,
        );
        assert!(
            p.iter()
                .any(|p| p.contains("$.review.skills[0]") && p.contains(rule)),
            "{skill}: {p:?}"
        );
    }
    let alias = dir.join("alias.md").display().to_string();
    let p = refused(
        Some(&format!(
            r#"{{"review": {{"skills": ["{good_s}", "{alias}"]}}}}"#
        )),
        None,
        false,
    );
    assert!(
        p.iter()
            .any(|p| p.contains("$.review.skills[1]") && p.contains("duplicate skill")),
        "{p:?}"
    );
    let p = refused(
        Some(&format!(r#"{{"review": {{"skills": ["{good_s}"]}}}}"#)),
        Some(&format!(r#"{{"review": {{"skills": ["{alias}"]}}}}"#)),
        true,
    );
    assert!(
        p.iter()
            .any(|p| p.starts_with(PROJ) && p.contains("can only remove skills")),
        "{p:?}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn only_the_operator_mints_general_leaf_tools() {
    let r = resolve_with(
        Some(r#"{"general": {"leafTools": ["mcp__docs__lookup"]}}"#),
        None,
        false,
    )
    .unwrap();
    assert_eq!(
        r.profile(Role::General).leaf_tools,
        vec!["mcp__docs__lookup".to_owned()]
    );
    let p = refused(
        Some(r#"{"scout": {"leafTools": ["mcp__docs__lookup"]}}"#),
        None,
        false,
    );
    assert!(
        p.iter()
            .any(|p| p.contains("only general supports reviewed leaf tools")),
        "{p:?}"
    );
    let p = refused(
        None,
        Some(r#"{"general": {"leafTools": ["mcp__docs__lookup"]}}"#),
        true,
    );
    assert!(p.iter().any(|p| p.starts_with(PROJ) && p.contains("only the operator mints general.leafTools")), "{p:?}");
    for name in [
        "delegate_task",
        "submit_result",
        "codemode",
        "tool_search",
        "delegate_coordinate",
        "subagent",
        "bash",
    ] {
        let p = refused(
            Some(&format!(r#"{{"general": {{"leafTools": ["{name}"]}}}}"#)),
            None,
            false,
        );
        assert!(
            p.iter().any(|p| p.contains("$.general.leafTools[0]")),
            "{name}: {p:?}"
        );
    }
    let r = resolve_with(
        Some(r#"{"general": {"leafTools": ["a", "b"]}}"#),
        Some(r#"{"general": {"leafTools": ["b"]}}"#),
        true,
    )
    .unwrap();
    assert_eq!(r.profile(Role::General).leaf_tools, vec!["b".to_owned()]);
}

#[test]
fn coordination_is_operator_default_off_and_project_narrowed() {
    let r = resolve_with(
        Some(r#"{"general": {"coordination": ["message", "wait"]}}"#),
        None,
        false,
    )
    .unwrap();
    assert_eq!(
        r.profile(Role::General).coordination,
        vec![CoordinationAction::Message, CoordinationAction::Wait]
    );
    let p = refused(
        Some(r#"{"general": {"coordination": ["message"]}}"#),
        Some(r#"{"general": {"coordination": ["inbox"]}}"#),
        true,
    );
    assert!(
        p.iter()
            .any(|p| p.contains("$.general.coordination[0] = inbox")
                && p.contains("cannot re-enable")),
        "{p:?}"
    );
}

fn offered(name: &str, kind: ToolKind, reaches_tools: bool) -> OfferedTool {
    OfferedTool {
        name: name.into(),
        kind,
        reaches_tools,
        hidden: false,
    }
}

#[test]
fn effective_tools_are_the_ceiling_intersected_with_genuine_offered_builtins() {
    let offered_default = vec![
        offered("read", ToolKind::Builtin, false),
        offered("bash", ToolKind::Builtin, false),
        offered("edit", ToolKind::Builtin, false),
        offered("write", ToolKind::Builtin, false),
    ];
    let scout = effective(
        Role::Scout,
        &bundled()[0].tools,
        &[],
        &offered_default,
        true,
    );
    assert_eq!(
        scout.tools,
        vec![BuiltinTool::Read],
        "scouts receive only read under pi's default loadout"
    );
    assert!(!scout.needs_writer(), "read-only needs no writer lease");
    assert_eq!(scout.denials.len(), 3);
    let general = effective(
        Role::General,
        &bundled()[2].tools,
        &[],
        &offered_default,
        true,
    );
    assert_eq!(
        general.tools,
        vec![
            BuiltinTool::Read,
            BuiltinTool::Write,
            BuiltinTool::Edit,
            BuiltinTool::Bash
        ],
        "role order"
    );
    assert!(general.needs_writer());
    let all = effective(
        Role::Scout,
        &bundled()[0].tools,
        &[],
        &pi_offered_tools(),
        true,
    );
    assert_eq!(all.tools.len(), 4);
    assert!(all.denials.is_empty());
    let replaced = vec![offered("read", ToolKind::BuiltinReplacement, false)];
    let none = effective(Role::Scout, &[BuiltinTool::Read], &[], &replaced, true);
    assert!(
        none.tools.is_empty(),
        "a replacement is not a genuine builtin"
    );
    assert!(none.denials[0].reason.contains("replacement"));
}

#[test]
fn leaf_classification_fails_closed() {
    let inventory = vec![
        offered("read", ToolKind::Builtin, false),
        offered("mcp__docs__lookup", ToolKind::Extension, false),
        offered("orchestrate", ToolKind::Extension, true),
        OfferedTool {
            name: "secret".into(),
            kind: ToolKind::Extension,
            reaches_tools: false,
            hidden: true,
        },
    ];
    let grants: Vec<String> = [
        "mcp__docs__lookup",
        "orchestrate",
        "secret",
        "unknown_tool",
        "delegate_task",
    ]
    .iter()
    .map(|s| (*s).to_owned())
    .collect();
    let caps = effective(
        Role::General,
        &[BuiltinTool::Read],
        &grants,
        &inventory,
        true,
    );
    assert_eq!(caps.leaf_tools, vec!["mcp__docs__lookup".to_owned()]);
    assert!(
        caps.needs_writer(),
        "any admitted leaf reserves the writer lease"
    );
    let reason = |name: &str| {
        caps.denials
            .iter()
            .find(|d| d.name == name)
            .map(|d| d.reason.clone())
            .unwrap_or_default()
    };
    assert!(reason("orchestrate").contains("reachesTools"));
    assert!(reason("secret").contains("hidden"));
    assert!(reason("unknown_tool").contains("not offered"));
    assert!(reason("delegate_task").contains("never forwarded"));
    let elsewhere = effective(
        Role::General,
        &[BuiltinTool::Read],
        &grants[..1],
        &inventory,
        false,
    );
    assert!(elsewhere.leaf_tools.is_empty());
    assert!(elsewhere.denials[0].reason.contains("root workspace"));
    let pi = effective(
        Role::General,
        &[BuiltinTool::Read],
        &grants[..1],
        &pi_offered_tools(),
        true,
    );
    assert!(
        pi.leaf_tools.is_empty(),
        "pi workers run without extensions: no leaf is callable"
    );
}

mod arbitrary {
    use proptest::prelude::*;
    use slate::policy::profiles::{ConfigFile, resolve};
    use slate::store::fs::RealFs;

    fn config_json() -> impl Strategy<Value = String> {
        let leaf = prop_oneof![
            Just("null".to_owned()),
            Just("true".to_owned()),
            any::<i64>().prop_map(|n| n.to_string()),
            prop_oneof![
                Just("\"read\""),
                Just("\"bash\""),
                Just("\"scout\""),
                Just("\"general\""),
                Just("\"message\""),
                Just("\"/x.md\"")
            ]
            .prop_map(str::to_owned),
        ];
        let keys = prop_oneof![
            Just("scout"),
            Just("review"),
            Just("general"),
            Just("implementation"),
            Just("scheduling"),
            Just("tools"),
            Just("spawn"),
            Just("skills"),
            Just("leafTools"),
            Just("coordination"),
            Just("concurrency"),
            Just("prompt"),
            Just("x"),
        ];
        leaf.prop_recursive(3, 40, 5, move |inner| {
            prop_oneof![
                prop::collection::vec(inner.clone(), 0..4)
                    .prop_map(|v| format!("[{}]", v.join(","))),
                prop::collection::vec((keys.clone(), inner), 0..5).prop_map(|kv| format!(
                    "{{{}}}",
                    kv.iter()
                        .map(|(k, v)| format!("\"{k}\":{v}"))
                        .collect::<Vec<_>>()
                        .join(",")
                )),
            ]
        })
    }

    proptest! {
        #[test]
        fn resolution_never_panics_on_arbitrary_config(operator in config_json(), project in config_json(), bytes in ".{0,40}") {
            let _ = resolve(ConfigFile { path: "/a", text: Some(&operator) }, ConfigFile { path: "/p", text: Some(&project) }, true, &RealFs);
            let _ = resolve(ConfigFile { path: "/a", text: Some(&bytes) }, ConfigFile { path: "/p", text: None }, false, &RealFs);
        }
    }
}

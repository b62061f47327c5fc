//! Subagent profiles and explicit grants: bundled → operator (`<agentDir>/delegation.json`)
//! → trusted project (`.pi/delegation.json`).
//!
//! * Root keys: `scout`, `review`, `general`, `implementation`, `scheduling`.
//! * Profile keys: `description`, `prompt`, `tools`, `skills`, `leafTools`, `spawn`,
//!   `coordination`. Absent arrays inherit; `[]` removes.
//! * The operator may only narrow bundled tools; grants skills (exact absolute readable distinct
//!   Markdown files); is the only one who adds spawn roles beyond scout/review, mints
//!   `general.leafTools` and grants coordination actions; chooses scheduling within ceilings.
//! * A trusted project may only narrow what the operator left (tools, leaf tools, skills,
//!   spawn roles, coordination, scheduling maximums) and never re-enables anything; it may
//!   specialise descriptions and prompts. An untrusted project's file is ignored.

use std::path::Path;

use serde::Serialize;
use serde_json::{Map, Value};

use crate::core::task::{BuiltinTool, CoordinationAction, Role};
use crate::policy::capabilities::NEVER_FORWARDED;
use crate::policy::fs_view::{FileKind, FsView};
use crate::policy::pool::PoolPolicy;
use crate::policy::problem::{Problem, index, key};
use crate::policy::request::safe_integer;
use crate::policy::scheduling::{FIELD_RULES, SchedulingPolicy};

/// One resolved role: its ceilings and instructions (not guaranteed session rights).
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Profile {
    pub name: Role,
    pub description: String,
    pub prompt: String,
    /// Builtin ceiling, in role order.
    pub tools: Vec<BuiltinTool>,
    /// Exact absolute skill file paths.
    pub skills: Vec<String>,
    /// Reviewed leaf tools (general only, operator-minted).
    pub leaf_tools: Vec<String>,
    /// Roles this profile may delegate to.
    pub spawn: Vec<Role>,
    pub coordination: Vec<CoordinationAction>,
}

/// Where each layer came from and whether it applied.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Source {
    pub layer: Layer,
    pub file: String,
    pub status: SourceStatus,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Layer {
    Operator,
    Project,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum SourceStatus {
    Applied,
    Absent,
    /// The project is not trusted: its file is ignored.
    IgnoredUntrusted,
}

/// The resolved policy: every profile plus scheduling and provenance.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ResolvedProfiles {
    pub profiles: Vec<Profile>,
    pub scheduling: SchedulingPolicy,
    /// Pre-started worker processes (operator only, `policy::pool`).
    pub pool: PoolPolicy,
    pub sources: Vec<Source>,
}

impl ResolvedProfiles {
    pub fn profile(&self, role: Role) -> &Profile {
        let i = Role::ALL.iter().position(|r| *r == role).unwrap_or(0);
        &self.profiles[i]
    }
}

/// A configuration file as read by the caller: its path and text (`None` when absent).
#[derive(Clone, Copy, Debug)]
pub struct ConfigFile<'a> {
    pub path: &'a str,
    pub text: Option<&'a str>,
}

const ROOT_KEYS: [&str; 6] = [
    "scout",
    "review",
    "general",
    "implementation",
    "scheduling",
    "pool",
];
const PROFILE_KEYS: [&str; 7] = [
    "description",
    "prompt",
    "tools",
    "skills",
    "leafTools",
    "spawn",
    "coordination",
];

/// The four bundled profiles.
pub fn bundled() -> Vec<Profile> {
    let read_only = BuiltinTool::ALL[..4].to_vec();
    let all = BuiltinTool::ALL.to_vec();
    let make = |name, description: &str, prompt: &str, tools: &Vec<BuiltinTool>| Profile {
        name,
        description: description.to_owned(),
        prompt: prompt.to_owned(),
        tools: tools.clone(),
        skills: Vec::new(),
        leaf_tools: Vec::new(),
        spawn: vec![Role::Scout, Role::Review],
        coordination: Vec::new(),
    };
    vec![
        make(
            Role::Scout,
            "Read-only investigator: finds facts in the workspace and reports them with references.",
            include_str!("../../assets/prompts/scout.md"),
            &read_only,
        ),
        make(
            Role::Review,
            "Read-only reviewer: checks existing work against criteria and reports findings by severity.",
            include_str!("../../assets/prompts/review.md"),
            &read_only,
        ),
        make(
            Role::General,
            "General analyst: answers one explicit assignment with evidence; may delegate scouts and reviewers.",
            include_str!("../../assets/prompts/general.md"),
            &all,
        ),
        make(
            Role::Implementation,
            "Implementer: makes one well-defined change in the workspace and verifies it.",
            include_str!("../../assets/prompts/implementation.md"),
            &all,
        ),
    ]
}

/// Resolve bundled → operator → (trusted) project. Every problem in either file is
/// reported; nothing is partially applied.
pub fn resolve(
    operator: ConfigFile<'_>,
    project: ConfigFile<'_>,
    project_trusted: bool,
    fs: &dyn FsView,
) -> Result<ResolvedProfiles, Vec<Problem>> {
    let mut problems = Vec::new();
    let mut profiles = bundled();
    let mut scheduling = SchedulingPolicy::default();
    let mut pool = PoolPolicy::default();
    let mut sources = Vec::new();

    let mut source = |layer, file: &ConfigFile<'_>, applies: bool| {
        sources.push(Source {
            layer,
            file: file.path.to_owned(),
            status: match (file.text, applies) {
                (None, _) => SourceStatus::Absent,
                (Some(_), false) => SourceStatus::IgnoredUntrusted,
                (Some(_), true) => SourceStatus::Applied,
            },
        });
    };
    source(Layer::Operator, &operator, true);
    source(Layer::Project, &project, project_trusted);

    if let Some(root) = parse_root(operator, &mut problems) {
        if let Some(value) = root.get("pool") {
            let mut layer_problems = Vec::new();
            pool = crate::policy::pool::apply(value, pool, &mut layer_problems);
            problems.extend(layer_problems.into_iter().map(|p| p.in_file(operator.path)));
        }
        apply_layer(
            &root,
            Layer::Operator,
            operator.path,
            &mut profiles,
            &mut scheduling,
            fs,
            &mut problems,
        );
    }
    if project_trusted && let Some(root) = parse_root(project, &mut problems) {
        if root.contains_key("pool") {
            problems.push(crate::policy::pool::project_refusal().in_file(project.path));
        }
        apply_layer(
            &root,
            Layer::Project,
            project.path,
            &mut profiles,
            &mut scheduling,
            fs,
            &mut problems,
        );
    }
    if problems.is_empty() {
        Ok(ResolvedProfiles {
            profiles,
            scheduling,
            pool,
            sources,
        })
    } else {
        Err(problems)
    }
}

fn parse_root(file: ConfigFile<'_>, problems: &mut Vec<Problem>) -> Option<Map<String, Value>> {
    let text = file.text?;
    // Strict: a repeated member name or a byte order mark is refused, not read silently.
    match crate::json::strict::from_str(text) {
        Ok(Value::Object(root)) => {
            for name in root.keys() {
                if !ROOT_KEYS.contains(&name.as_str()) {
                    let rule = if name == "worker" {
                        "`worker` is only a request alias; configure `implementation`".to_owned()
                    } else if Role::from_name(name).is_none() && !name.starts_with('$') {
                        format!(
                            "unknown key: custom roles are unsupported; allowed: {}",
                            ROOT_KEYS.join(", ")
                        )
                    } else {
                        format!("unknown key; allowed: {}", ROOT_KEYS.join(", "))
                    };
                    problems.push(Problem::new(key("$", name), rule).in_file(file.path));
                }
            }
            Some(root)
        }
        Ok(other) => {
            problems.push(
                Problem::new("$", "delegation config must be a JSON object")
                    .json(&other)
                    .in_file(file.path),
            );
            None
        }
        Err(e) => {
            problems.push(Problem::new("$", format!("invalid JSON: {e}")).in_file(file.path));
            None
        }
    }
}

#[allow(clippy::too_many_arguments)]
fn apply_layer(
    root: &Map<String, Value>,
    layer: Layer,
    file: &str,
    profiles: &mut [Profile],
    scheduling: &mut SchedulingPolicy,
    fs: &dyn FsView,
    problems: &mut Vec<Problem>,
) {
    let bundled = bundled();
    for (i, role) in Role::ALL.into_iter().enumerate() {
        let Some(value) = root.get(role.as_str()) else {
            continue;
        };
        let path = key("$", role.as_str());
        let Some(object) = value.as_object() else {
            problems.push(
                Problem::new(path, "a profile must be a JSON object")
                    .json(value)
                    .in_file(file),
            );
            continue;
        };
        let mut layer_problems = Vec::new();
        let updated = apply_profile(
            object,
            layer,
            &path,
            &profiles[i],
            &bundled[i],
            fs,
            &mut layer_problems,
        );
        for p in layer_problems {
            problems.push(p.in_file(file));
        }
        profiles[i] = updated;
    }
    if let Some(value) = root.get("scheduling") {
        let mut layer_problems = Vec::new();
        *scheduling = apply_scheduling(value, layer, scheduling, &mut layer_problems);
        for p in layer_problems {
            problems.push(p.in_file(file));
        }
    }
}

#[allow(clippy::too_many_lines)]
fn apply_profile(
    object: &Map<String, Value>,
    layer: Layer,
    path: &str,
    current: &Profile,
    bundled: &Profile,
    fs: &dyn FsView,
    problems: &mut Vec<Problem>,
) -> Profile {
    let mut next = current.clone();
    for name in object.keys() {
        if !PROFILE_KEYS.contains(&name.as_str()) {
            problems.push(Problem::new(
                key(path, name),
                format!("unknown profile key; allowed: {}", PROFILE_KEYS.join(", ")),
            ));
        }
    }
    for text_key in ["description", "prompt"] {
        match object.get(text_key) {
            None => {}
            Some(Value::String(s)) if !s.trim().is_empty() => {
                if text_key == "description" {
                    next.description.clone_from(s);
                } else {
                    next.prompt.clone_from(s);
                }
            }
            Some(other) => problems
                .push(Problem::new(key(path, text_key), "must be non-blank text").json(other)),
        }
    }
    // What this layer may not exceed: bundled for the operator, the operator's result for a
    // project (which can only narrow).
    let ceiling = match layer {
        Layer::Operator => bundled,
        Layer::Project => current,
    };
    let narrow_rule = |what: &str| match layer {
        Layer::Operator => format!("operator {what} can only narrow the bundled {what}"),
        Layer::Project => {
            format!("a trusted project can only narrow; it cannot re-enable this {what}")
        }
    };

    if let Some(tools) = names(
        object,
        path,
        "tools",
        problems,
        BuiltinTool::from_name,
        "a builtin tool: read, grep, find, ls, write, edit, bash",
    ) {
        let mut kept = Vec::new();
        for (i, t) in tools {
            if ceiling.tools.contains(&t) {
                kept.push(t);
            } else {
                problems.push(
                    Problem::new(index(&key(path, "tools"), i), narrow_rule("tool")).value(t),
                );
            }
        }
        next.tools = BuiltinTool::ALL
            .into_iter()
            .filter(|t| kept.contains(t))
            .collect();
    }
    if let Some(spawn) = names(
        object,
        path,
        "spawn",
        problems,
        Role::from_name,
        "a role: scout, review, general, implementation",
    ) {
        let mut kept = Vec::new();
        for (i, r) in spawn {
            // Only the operator adds spawn roles beyond the bundled scout/review.
            let allowed = match layer {
                Layer::Operator => true,
                Layer::Project => current.spawn.contains(&r),
            };
            if allowed {
                kept.push(r);
            } else {
                problems.push(
                    Problem::new(index(&key(path, "spawn"), i), narrow_rule("spawn role")).value(r),
                );
            }
        }
        next.spawn = Role::ALL.into_iter().filter(|r| kept.contains(r)).collect();
    }
    if let Some(actions) = names(
        object,
        path,
        "coordination",
        problems,
        coordination_action,
        "an action: message, inbox, wait",
    ) {
        let mut kept = Vec::new();
        for (i, a) in actions {
            let allowed = match layer {
                Layer::Operator => true,
                Layer::Project => current.coordination.contains(&a),
            };
            if allowed {
                kept.push(a);
            } else {
                problems.push(
                    Problem::new(
                        index(&key(path, "coordination"), i),
                        narrow_rule("coordination action"),
                    )
                    .value(a.as_str()),
                );
            }
        }
        next.coordination = kept;
    }
    if let Some(leaves) = names(
        object,
        path,
        "leafTools",
        problems,
        |s| Some(s.to_owned()),
        "an exact tool name",
    ) {
        let mut kept = Vec::new();
        for (i, name) in leaves {
            let at = index(&key(path, "leafTools"), i);
            if BuiltinTool::from_name(&name).is_some() {
                problems.push(
                    Problem::new(at, "builtins are granted through `tools`, not `leafTools`")
                        .value(&name),
                );
            } else if NEVER_FORWARDED.contains(&name.as_str()) {
                problems.push(
                    Problem::new(at, "this tool can never be forwarded to a child").value(&name),
                );
            } else if current.name != Role::General {
                problems.push(
                    Problem::new(at, "only general supports reviewed leaf tools").value(&name),
                );
            } else if layer == Layer::Project && !current.leaf_tools.contains(&name) {
                problems.push(Problem::new(at, "only the operator mints general.leafTools; a trusted project may only remove them").value(&name));
            } else {
                kept.push(name);
            }
        }
        next.leaf_tools = kept;
    }
    if let Some(skills) = names(
        object,
        path,
        "skills",
        problems,
        |s| Some(s.to_owned()),
        "an absolute path",
    ) {
        let mut kept: Vec<String> = Vec::new();
        for (i, skill) in skills {
            let at = index(&key(path, "skills"), i);
            match layer {
                Layer::Project if !current.skills.contains(&skill) => {
                    problems.push(
                        Problem::new(
                            at,
                            "a trusted project can only remove skills the operator granted",
                        )
                        .value(&skill),
                    );
                }
                Layer::Project => kept.push(skill),
                Layer::Operator => match check_skill(&skill, fs) {
                    Ok(canonical)
                        if kept
                            .iter()
                            .any(|k| check_skill(k, fs).is_ok_and(|c| c == canonical)) =>
                    {
                        problems.push(
                            Problem::new(at, "duplicate skill: the same file is already granted")
                                .value(&skill),
                        );
                    }
                    Ok(_) => kept.push(skill),
                    Err(rule) => problems.push(Problem::new(at, rule).value(&skill)),
                },
            }
        }
        next.skills = kept;
    }
    next
}

/// An operator skill: an exact absolute path to a readable regular Markdown file.
fn check_skill(skill: &str, fs: &dyn FsView) -> Result<String, String> {
    let path = Path::new(skill);
    if !path.is_absolute() {
        return Err("skills must be exact absolute paths".to_owned());
    }
    if path
        .extension()
        .is_none_or(|e| !e.eq_ignore_ascii_case("md"))
    {
        return Err("skills must be Markdown files (.md)".to_owned());
    }
    let meta = fs
        .metadata(path)
        .map_err(|e| format!("skill file is missing or unreadable: {e}"))?;
    if meta.kind != FileKind::File {
        return Err("skills must be regular files".to_owned());
    }
    if !fs.can_read(path) {
        return Err("skill file is not readable".to_owned());
    }
    let canonical = fs
        .canonicalize(path)
        .map_err(|e| format!("skill path cannot be resolved: {e}"))?;
    Ok(canonical.to_string_lossy().into_owned())
}

fn coordination_action(name: &str) -> Option<CoordinationAction> {
    match name {
        "message" => Some(CoordinationAction::Message),
        "inbox" => Some(CoordinationAction::Inbox),
        "wait" => Some(CoordinationAction::Wait),
        _ => None,
    }
}

/// An optional array of distinct names, each parsed; `None` when absent.
fn names<T: PartialEq>(
    object: &Map<String, Value>,
    path: &str,
    name: &str,
    problems: &mut Vec<Problem>,
    parse: impl Fn(&str) -> Option<T>,
    what: &str,
) -> Option<Vec<(usize, T)>> {
    let field = key(path, name);
    let value = object.get(name)?;
    let Some(items) = value.as_array() else {
        problems.push(Problem::new(field, "must be an array").json(value));
        return None;
    };
    let mut out: Vec<(usize, T)> = Vec::new();
    let mut seen: Vec<&str> = Vec::new();
    for (i, item) in items.iter().enumerate() {
        let at = index(&field, i);
        match item.as_str() {
            Some(s) if seen.contains(&s) => {
                problems.push(Problem::new(at, "duplicate entry").json(item));
            }
            Some(s) => match parse(s) {
                Some(parsed) => {
                    seen.push(s);
                    out.push((i, parsed));
                }
                None => problems.push(Problem::new(at, format!("must be {what}")).json(item)),
            },
            None => problems.push(Problem::new(at, format!("must be {what}")).json(item)),
        }
    }
    Some(out)
}

/// `scheduling`: the operator chooses within ceilings; a trusted project only narrows.
fn apply_scheduling(
    value: &Value,
    layer: Layer,
    current: &SchedulingPolicy,
    problems: &mut Vec<Problem>,
) -> SchedulingPolicy {
    let Some(object) = value.as_object() else {
        problems.push(Problem::new("$.scheduling", "must be an object").json(value));
        return *current;
    };
    let mut values = current.values();
    for (name, v) in object {
        let at = key("$.scheduling", name);
        let Some(i) = FIELD_RULES.iter().position(|r| r.name == name) else {
            let allowed: Vec<&str> = FIELD_RULES.iter().map(|r| r.name).collect();
            problems.push(Problem::new(
                at,
                format!("unknown field; allowed: {}", allowed.join(", ")),
            ));
            continue;
        };
        let rule = &FIELD_RULES[i];
        let Some(n) = safe_integer(v, &at, problems) else {
            continue;
        };
        if rule.positive && n == 0 {
            problems.push(
                Problem::new(at, "must be positive (there is no unlimited sentinel)").json(v),
            );
        } else if n > rule.ceiling {
            problems.push(
                Problem::new(
                    at,
                    format!("exceeds the operator ceiling of {}", rule.ceiling),
                )
                .json(v),
            );
        } else if layer == Layer::Project && n > values[i] {
            problems.push(
                Problem::new(
                    at,
                    format!(
                        "a trusted project can only narrow the operator value {}",
                        values[i]
                    ),
                )
                .json(v),
            );
        } else {
            values[i] = n;
        }
    }
    let narrow = |i: usize| u32::try_from(values[i]).unwrap_or(u32::MAX);
    SchedulingPolicy {
        concurrency: narrow(0),
        queue: narrow(1),
        batch: narrow(2),
        depth: narrow(3),
        spawns: narrow(4),
        deadline_ms: values[5],
        requests: narrow(6),
        tools: narrow(7),
    }
}

//! Request shapes: native `delegate_task` (single or batch) and the compatibility
//! `subagent` tool (launch, batch, actions). Both parse into one internal [`DelegateCall`].
//!
//! Parsing is structural only (shapes, types, names); grants, limits ceilings, models, task
//! files, schemas and workspaces are resolved afterwards against policy. Every problem is
//! reported with the JSON path of its field.

use serde_json::{Map, Value};

use crate::core::ChildRef;
use crate::core::bounds::ASSIGNMENT_BYTES;
use crate::core::task::is_nonblank;
use crate::core::task::{CoordinationAction, LimitOverrides, Role};
use crate::policy::problem::{Problem, index, key};

/// Where an assignment's text comes from.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum TaskSource {
    Assignment(String),
    /// A workspace-relative path, checked and read before admission.
    TaskFile(String),
}

/// One task as requested, before policy resolution.
#[derive(Clone, Debug, PartialEq)]
pub struct TaskRequest {
    /// JSON path of this task in the request (`$` or `$.tasks[2]`), for later problems.
    pub path: String,
    pub source: TaskSource,
    pub profile: Role,
    /// Exact selection object or `provider/id[:effort]`, resolved by `policy::model`, or a
    /// logical model name (no `/`), resolved by `policy::logical`.
    pub model: Option<Value>,
    /// Why the logical model fits (non-blank, at most [`MAX_REASON_CHARS`] characters);
    /// only a logical model takes one.
    pub reason: Option<String>,
    pub models: Option<Value>,
    /// `None` inherits; `Some([])` removes.
    pub spawn: Option<Vec<Role>>,
    pub coordination: Option<Vec<CoordinationAction>>,
    pub limits: LimitOverrides,
    pub cwd: Option<String>,
    pub result_schema: Option<Value>,
}

/// One call: ordered tasks and whether the caller waits for the window outcome.
#[derive(Clone, Debug, PartialEq)]
pub struct DelegateCall {
    pub tasks: Vec<TaskRequest>,
    pub background: bool,
}

/// A compatibility `subagent` request.
#[derive(Clone, Debug, PartialEq)]
pub enum SubagentRequest {
    Launch(DelegateCall),
    /// `agents` and `list` both read current presence and generations.
    Agents,
    Status(ChildRef),
    Stop(ChildRef),
    Steer {
        id: ChildRef,
        message: String,
    },
    Resume {
        id: ChildRef,
        message: String,
    },
}

const NATIVE_TASK_KEYS: [&str; 11] = [
    "assignment",
    "taskFile",
    "profile",
    "model",
    "reason",
    "models",
    "spawn",
    "coordination",
    "limits",
    "cwd",
    "resultSchema",
];

/// The longest `reason` a logical-model task may give, in characters (spec 002).
pub const MAX_REASON_CHARS: usize = 200;

/// Largest integer JSON numbers carry exactly (`Number.MAX_SAFE_INTEGER`).
pub const MAX_SAFE_INTEGER: u64 = (1 << 53) - 1;

/// Parse native `delegate_task` input: exactly one of the single or the batch shape.
pub fn parse_delegate_task(input: &Value) -> Result<DelegateCall, Vec<Problem>> {
    let mut problems = Vec::new();
    let Some(object) = input.as_object() else {
        return Err(vec![
            Problem::new("$", "delegate_task input must be a JSON object").json(input),
        ]);
    };
    let call = if object.contains_key("tasks") {
        if let Some(stray) = NATIVE_TASK_KEYS.iter().find(|k| object.contains_key(**k)) {
            problems.push(Problem::new(
                key("$", stray),
                "exactly one shape is allowed: a batch {tasks, background} has no top-level task fields",
            ));
        }
        reject_unknown(object, "$", &["tasks", "background"], &mut problems);
        let background = boolean(object, "$", "background", false, &mut problems);
        let tasks = match object.get("tasks") {
            Some(Value::Array(items)) if !items.is_empty() => items
                .iter()
                .enumerate()
                .filter_map(|(i, item)| native_task(item, &index("$.tasks", i), &mut problems))
                .collect(),
            Some(Value::Array(_)) => {
                problems.push(Problem::new("$.tasks", "a batch needs at least one task"));
                Vec::new()
            }
            Some(other) => {
                problems.push(Problem::new("$.tasks", "must be an array of tasks").json(other));
                Vec::new()
            }
            None => Vec::new(),
        };
        DelegateCall { tasks, background }
    } else {
        // The call is its one task: `native_task` names each unknown property once.
        let background = boolean(object, "$", "background", false, &mut problems);
        let mut task_only = object.clone();
        task_only.remove("background");
        let tasks = native_task(&Value::Object(task_only), "$", &mut problems)
            .into_iter()
            .collect();
        DelegateCall { tasks, background }
    };
    if problems.is_empty() {
        Ok(call)
    } else {
        Err(problems)
    }
}

fn native_task(item: &Value, path: &str, problems: &mut Vec<Problem>) -> Option<TaskRequest> {
    let Some(object) = item.as_object() else {
        problems.push(Problem::new(path, "a task must be a JSON object").json(item));
        return None;
    };
    let before = problems.len();
    let mut allowed = NATIVE_TASK_KEYS.to_vec();
    allowed.push("background");
    reject_unknown(object, path, &allowed, problems);
    if object.contains_key("background") {
        problems.push(Problem::new(
            key(path, "background"),
            "background belongs to the call, not to individual batch items",
        ));
    }
    let source = task_source(object, path, "assignment", problems);
    let profile = role(object.get("profile"), &key(path, "profile"), problems);
    let task = TaskRequest {
        path: path.to_owned(),
        source: source.unwrap_or(TaskSource::Assignment(String::new())),
        profile: profile.unwrap_or(Role::Scout),
        model: object.get("model").cloned(),
        reason: reason(object, path, problems),
        models: object.get("models").cloned(),
        spawn: optional_list(object, path, "spawn", problems, |v, p, probs| {
            role(Some(v), p, probs)
        }),
        coordination: optional_list(object, path, "coordination", problems, coordination_action),
        limits: limits(object.get("limits"), &key(path, "limits"), problems),
        cwd: optional_string(object, path, "cwd", problems),
        result_schema: object.get("resultSchema").cloned(),
    };
    (problems.len() == before).then_some(task)
}

/// An inline assignment is at most [`ASSIGNMENT_BYTES`] (the task-file bound); the text
/// itself is not repeated in the problem.
fn check_inline_len(text: &str, path: &str, problems: &mut Vec<Problem>) -> bool {
    if text.len() <= ASSIGNMENT_BYTES {
        return true;
    }
    problems.push(Problem::new(
        path,
        format!(
            "an inline assignment is at most {ASSIGNMENT_BYTES} UTF-8 bytes (the task-file bound); this one is {} bytes",
            text.len()
        ),
    ));
    false
}

/// Exactly one of `assignment` (non-blank) or `taskFile` (non-empty path).
fn task_source(
    object: &Map<String, Value>,
    path: &str,
    text_key: &str,
    problems: &mut Vec<Problem>,
) -> Option<TaskSource> {
    match (object.get(text_key), object.get("taskFile")) {
        (Some(_), Some(_)) => {
            problems.push(Problem::new(
                path,
                format!("give exactly one of `{text_key}` or `taskFile`, not both"),
            ));
            None
        }
        (None, None) => {
            problems.push(Problem::new(
                key(path, text_key),
                format!("required: give exactly one of `{text_key}` or `taskFile`"),
            ));
            None
        }
        (Some(Value::String(text)), None) if is_nonblank(text) => {
            check_inline_len(text, &key(path, text_key), problems)
                .then(|| TaskSource::Assignment(text.clone()))
        }
        (Some(other), None) => {
            problems.push(
                Problem::new(key(path, text_key), "must contain non-whitespace text").json(other),
            );
            None
        }
        (None, Some(Value::String(file))) if !file.is_empty() => {
            Some(TaskSource::TaskFile(file.clone()))
        }
        (None, Some(other)) => {
            problems.push(
                Problem::new(key(path, "taskFile"), "must be a non-empty relative path")
                    .json(other),
            );
            None
        }
    }
}

/// `reason`: a string with non-whitespace text of at most [`MAX_REASON_CHARS`] characters.
/// Whether the task may carry one at all (only with a logical model) is decided by policy.
fn reason(object: &Map<String, Value>, path: &str, problems: &mut Vec<Problem>) -> Option<String> {
    let at = key(path, "reason");
    match object.get("reason")? {
        Value::String(text) if !is_nonblank(text) => {
            problems.push(
                Problem::new(at, "must contain non-whitespace text").value(format!("{text:?}")),
            );
            None
        }
        Value::String(text) if text.chars().count() > MAX_REASON_CHARS => {
            problems.push(
                Problem::new(
                    at,
                    format!(
                        "at most {MAX_REASON_CHARS} characters (this one has {})",
                        text.chars().count()
                    ),
                )
                .value(format!("{text:?}")),
            );
            None
        }
        Value::String(text) => Some(text.clone()),
        other => {
            problems.push(Problem::new(at, "must be a string").json(other));
            None
        }
    }
}

/// A role name; `worker` is the compatibility alias of `implementation`.
fn role(value: Option<&Value>, path: &str, problems: &mut Vec<Problem>) -> Option<Role> {
    match value {
        None => {
            problems.push(Problem::new(path, "required: one of scout, review, general, implementation (or worker)"));
            None
        }
        Some(Value::String(name)) => Role::from_name(name).or_else(|| {
            problems.push(
                Problem::new(
                    path,
                    "unknown role: custom roles are unsupported; use scout, review, general, implementation (or worker)",
                )
                .value(format!("{name:?}")),
            );
            None
        }),
        Some(other) => {
            problems.push(Problem::new(path, "must be a role name").json(other));
            None
        }
    }
}

fn coordination_action(
    value: &Value,
    path: &str,
    problems: &mut Vec<Problem>,
) -> Option<CoordinationAction> {
    match value.as_str() {
        Some("message") => Some(CoordinationAction::Message),
        Some("inbox") => Some(CoordinationAction::Inbox),
        Some("wait") => Some(CoordinationAction::Wait),
        _ => {
            problems.push(Problem::new(path, "must be one of message, inbox, wait").json(value));
            None
        }
    }
}

/// An optional array of names; duplicates rejected. `None` when absent.
fn optional_list<T: PartialEq>(
    object: &Map<String, Value>,
    path: &str,
    name: &str,
    problems: &mut Vec<Problem>,
    item: impl Fn(&Value, &str, &mut Vec<Problem>) -> Option<T>,
) -> Option<Vec<T>> {
    let field = key(path, name);
    match object.get(name)? {
        Value::Array(items) => {
            let mut out = Vec::new();
            for (i, v) in items.iter().enumerate() {
                let at = index(&field, i);
                if let Some(parsed) = item(v, &at, problems) {
                    if out.contains(&parsed) {
                        problems.push(Problem::new(at, "duplicate entry").json(v));
                    } else {
                        out.push(parsed);
                    }
                }
            }
            Some(out)
        }
        other => {
            problems.push(Problem::new(field, "must be an array").json(other));
            None
        }
    }
}

fn optional_string(
    object: &Map<String, Value>,
    path: &str,
    name: &str,
    problems: &mut Vec<Problem>,
) -> Option<String> {
    match object.get(name)? {
        Value::String(s) => Some(s.clone()),
        other => {
            problems.push(Problem::new(key(path, name), "must be a string").json(other));
            None
        }
    }
}

fn boolean(
    object: &Map<String, Value>,
    path: &str,
    name: &str,
    default: bool,
    problems: &mut Vec<Problem>,
) -> bool {
    match object.get(name) {
        None => default,
        Some(Value::Bool(b)) => *b,
        Some(other) => {
            problems.push(Problem::new(key(path, name), "must be true or false").json(other));
            default
        }
    }
}

fn reject_unknown(
    object: &Map<String, Value>,
    path: &str,
    allowed: &[&str],
    problems: &mut Vec<Problem>,
) {
    for name in object.keys() {
        if !allowed.contains(&name.as_str()) {
            problems.push(Problem::new(
                key(path, name),
                format!("unknown property; allowed: {}", allowed.join(", ")),
            ));
        }
    }
}

/// A non-negative safe integer.
pub fn safe_integer(value: &Value, path: &str, problems: &mut Vec<Problem>) -> Option<u64> {
    match value.as_u64() {
        Some(n) if n <= MAX_SAFE_INTEGER => Some(n),
        _ => {
            let integral_float = value
                .as_f64()
                .filter(|f| f.fract() == 0.0 && *f >= 0.0 && *f <= 9_007_199_254_740_991.0);
            if let Some(f) = integral_float {
                // `3.0` is the integer 3 in JSON; the cast is exact below 2^53.
                #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)]
                return Some(f as u64);
            }
            problems.push(Problem::new(path, "must be a non-negative safe integer").json(value));
            None
        }
    }
}

/// `limits`: `deadlineMs`, `requests`, `tools`, `depth`, `spawns`; each can only narrow
/// (the ceiling is checked at admission); `deadlineMs`, `requests`, `tools` positive.
pub fn limits(value: Option<&Value>, path: &str, problems: &mut Vec<Problem>) -> LimitOverrides {
    let mut out = LimitOverrides::default();
    let Some(value) = value else { return out };
    let Some(object) = value.as_object() else {
        problems.push(Problem::new(path, "must be an object").json(value));
        return out;
    };
    for (name, v) in object {
        let at = key(path, name);
        let Some(n) = safe_integer(v, &at, problems) else {
            continue;
        };
        let positive = matches!(name.as_str(), "deadlineMs" | "requests" | "tools");
        if positive && n == 0 {
            problems.push(Problem::new(at, "must be positive").json(v));
            continue;
        }
        let small = || u32::try_from(n).ok();
        match name.as_str() {
            "deadlineMs" => out.deadline_ms = Some(n),
            "requests" => out.requests = small().or(Some(u32::MAX)),
            "tools" => out.tools = small().or(Some(u32::MAX)),
            "depth" => out.depth = small().or(Some(u32::MAX)),
            "spawns" => out.spawns = small().or(Some(u32::MAX)),
            _ => problems.push(Problem::new(
                at,
                "unknown limit; allowed: deadlineMs, requests, tools, depth, spawns",
            )),
        }
    }
    out
}

/// Parse a compatibility `subagent` request.
pub fn parse_subagent(input: &Value) -> Result<SubagentRequest, Vec<Problem>> {
    let mut problems = Vec::new();
    let Some(object) = input.as_object() else {
        return Err(vec![
            Problem::new("$", "subagent input must be a JSON object").json(input),
        ]);
    };
    let request = if let Some(action) = object.get("action") {
        subagent_action(object, action, &mut problems)
    } else if object.contains_key("tasks") {
        reject_unknown(object, "$", &["tasks", "cwd", "async"], &mut problems);
        let background = boolean(object, "$", "async", true, &mut problems);
        let shared_cwd = optional_string(object, "$", "cwd", &mut problems);
        let tasks = match object.get("tasks") {
            Some(Value::Array(items)) if !items.is_empty() => items
                .iter()
                .enumerate()
                .filter_map(|(i, item)| {
                    let mut task = compat_task(item, &index("$.tasks", i), &mut problems)?;
                    if task.cwd.is_none() {
                        task.cwd.clone_from(&shared_cwd);
                    }
                    Some(task)
                })
                .collect(),
            other => {
                problems.push(with_value(
                    Problem::new("$.tasks", "must be a non-empty array of {agent, task}"),
                    other,
                ));
                Vec::new()
            }
        };
        Some(SubagentRequest::Launch(DelegateCall { tasks, background }))
    } else {
        let background = boolean(object, "$", "async", true, &mut problems);
        let mut task_only = object.clone();
        task_only.remove("async");
        compat_task(&Value::Object(task_only), "$", &mut problems).map(|task| {
            SubagentRequest::Launch(DelegateCall {
                tasks: vec![task],
                background,
            })
        })
    };
    match request {
        Some(request) if problems.is_empty() => Ok(request),
        _ => Err(problems),
    }
}

fn compat_task(item: &Value, path: &str, problems: &mut Vec<Problem>) -> Option<TaskRequest> {
    let Some(object) = item.as_object() else {
        problems.push(Problem::new(path, "a task must be a JSON object").json(item));
        return None;
    };
    let before = problems.len();
    reject_unknown(
        object,
        path,
        &["agent", "task", "cwd", "model", "reason", "limits"],
        problems,
    );
    let profile = role(object.get("agent"), &key(path, "agent"), problems);
    let text = match object.get("task") {
        Some(Value::String(t)) if is_nonblank(t) => {
            check_inline_len(t, &key(path, "task"), problems).then(|| t.clone())
        }
        other => {
            problems.push(with_value(
                Problem::new(key(path, "task"), "required: non-whitespace task text"),
                other,
            ));
            None
        }
    };
    let task = TaskRequest {
        path: path.to_owned(),
        source: TaskSource::Assignment(text.unwrap_or_default()),
        profile: profile.unwrap_or(Role::Scout),
        model: object.get("model").cloned(),
        reason: reason(object, path, problems),
        models: None,
        spawn: None,
        coordination: None,
        limits: limits(object.get("limits"), &key(path, "limits"), problems),
        cwd: optional_string(object, path, "cwd", problems),
        result_schema: None,
    };
    (problems.len() == before).then_some(task)
}

fn subagent_action(
    object: &Map<String, Value>,
    action: &Value,
    problems: &mut Vec<Problem>,
) -> Option<SubagentRequest> {
    let id = |problems: &mut Vec<Problem>| -> Option<ChildRef> {
        match object.get("id") {
            Some(Value::String(s)) => match s.parse::<ChildRef>() {
                Ok(r) => Some(r),
                Err(e) => {
                    problems.push(Problem::new("$.id", e.to_string()).value(format!("{s:?}")));
                    None
                }
            },
            other => {
                problems.push(with_value(
                    Problem::new("$.id", "required: the exact \"UUID@generation\""),
                    other,
                ));
                None
            }
        }
    };
    let message = |problems: &mut Vec<Problem>| -> Option<String> {
        match object.get("message") {
            Some(Value::String(m)) if is_nonblank(m) => Some(m.clone()),
            other => {
                problems.push(with_value(
                    Problem::new("$.message", "required: non-whitespace text"),
                    other,
                ));
                None
            }
        }
    };
    match action.as_str() {
        Some("agents" | "list") => {
            reject_unknown(object, "$", &["action"], problems);
            Some(SubagentRequest::Agents)
        }
        Some(name @ ("status" | "stop")) => {
            reject_unknown(object, "$", &["action", "id"], problems);
            let id = id(problems)?;
            Some(if name == "status" {
                SubagentRequest::Status(id)
            } else {
                SubagentRequest::Stop(id)
            })
        }
        Some(name @ ("steer" | "resume")) => {
            reject_unknown(object, "$", &["action", "id", "message"], problems);
            let id = id(problems);
            let message = message(problems);
            let (id, message) = (id?, message?);
            Some(if name == "steer" {
                SubagentRequest::Steer { id, message }
            } else {
                SubagentRequest::Resume { id, message }
            })
        }
        _ => {
            problems.push(
                Problem::new(
                    "$.action",
                    "must be one of agents, list, status, stop, steer, resume",
                )
                .json(action),
            );
            None
        }
    }
}

/// Attach the offending value, if there was one (a missing field shows none).
fn with_value(problem: Problem, value: Option<&Value>) -> Problem {
    match value {
        Some(v) => problem.json(v),
        None => problem,
    }
}

//! The tool definitions: names, labels, descriptions and parameter schemas, per caller.
//!
//! Each tool's input is described by a typed struct below; its JSON Schema is generated from
//! it by schemars (bounds from [`crate::core::bounds`]) and then *loosened* for the host
//! ([`loosen`]): every top-level property keeps its description, with its type and bounds
//! written into that description, and loses the keywords a host coerces by. pi coerces a
//! loosely typed argument to its declared type before a tool sees it (`"42"` becomes `42`
//! where the schema says integer, a lone value becomes an array), and Slate's validation is
//! strict and non-coercing, so the host must have nothing to coerce by: the input reaches
//! [`super::call`] exactly as the model wrote it, and Slate's own parsers name each problem.

#![allow(
    clippy::doc_markdown,
    reason = "the input structs' doc comments are the descriptions the model reads"
)]

use std::sync::OnceLock;

use schemars::JsonSchema;
use serde_json::{Map, Value, json};

use super::{Caller, ToolSpec};
use crate::control::methods::{self, NoParams, StatusParams, TargetParams};
use crate::core::bounds;

pub const DELEGATE_TASK: &str = "delegate_task";
pub const DELEGATE_COORDINATE: &str = "delegate_coordinate";
pub const SUBAGENT: &str = "subagent";
pub const SUBMIT_RESULT: &str = "submit_result";

/// The contract's `delegate_coordinate` actions, and those a child may use.
pub const ACTIONS: [&str; 9] = [
    "status", "stop", "park", "resume", "followup", "revive", "message", "inbox", "wait",
];
pub const CHILD_ACTIONS: [&str; 3] = ["message", "inbox", "wait"];

const TASK_FIELDS: &str = "assignment or taskFile (exactly one), and optionally profile, cwd, model, models, resultSchema, limits, spawn, coordination";

/// Narrowing limits of one task.
#[derive(JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
#[allow(dead_code, reason = "a schema source only")]
struct LimitsInput {
    #[schemars(range(min = 1))]
    deadline_ms: Option<u64>,
    #[schemars(range(min = 1))]
    requests: Option<u32>,
    #[schemars(range(min = 1))]
    tools: Option<u32>,
    #[schemars(range(min = 1))]
    depth: Option<u32>,
    #[schemars(range(min = 1))]
    spawns: Option<u32>,
}

/// One task of `delegate_task` (the policy parser `parse_delegate_task` reads it).
#[derive(JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
#[allow(dead_code, reason = "a schema source only")]
struct TaskInput {
    /// The complete task for one subagent (non-blank text). It inherits nothing else: include what it needs to know.
    #[schemars(extend("x-maxBytes" = bounds::ASSIGNMENT_BYTES))]
    assignment: Option<String>,
    /// Instead of assignment: a task text file, relative to the task's cwd (no absolute paths, '..', hidden or node_modules components).
    task_file: Option<String>,
    /// The subagent profile to run it with (e.g. scout, review, general, implementation).
    profile: Option<String>,
    /// Optional: an existing directory to work in (default: the delegator's directory).
    cwd: Option<String>,
    /// Optional: an exact model selection 'provider/id[:effort]' (or a logical model with a reason), if granted.
    model: Option<String>,
    /// With a logical model: why it fits.
    #[schemars(length(max = 200))]
    reason: Option<String>,
    /// Optional: a model allowlist that narrows the grants.
    models: Option<Vec<String>>,
    /// Optional: a JSON Schema (supported subset) the subagent's submit_result value must match.
    result_schema: Option<Map<String, Value>>,
    /// Optional, narrowing only: {deadlineMs, requests, tools, depth, spawns} (positive integers).
    limits: Option<LimitsInput>,
    /// Optional, narrowing only: the profiles the subagent may spawn ([] for none).
    spawn: Option<Vec<String>>,
    /// Optional, narrowing only: the delegate_coordinate actions it may use ([] for none).
    coordination: Option<Vec<String>>,
}

/// `delegate_task`: one task, or an ordered batch in `tasks`.
#[derive(JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
#[allow(dead_code, reason = "a schema source only")]
struct DelegateTaskInput {
    #[serde(flatten)]
    task: TaskInput,
    /// Instead of a single task: an ordered batch of task objects.
    tasks: Option<Vec<TaskInput>>,
    /// Optional: true to return the accepted identities (UUID@generation) at once; the outcomes arrive later as one message.
    background: Option<bool>,
}

/// One task of a compatibility `subagent` batch.
#[derive(JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
#[allow(dead_code, reason = "a schema source only")]
struct SubagentTask {
    agent: String,
    task: String,
    cwd: Option<String>,
    model: Option<String>,
    limits: Option<LimitsInput>,
}

/// The compatibility `subagent` tool (`policy::request::parse_subagent` reads it).
#[derive(JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
#[allow(dead_code, reason = "a schema source only")]
struct SubagentInput {
    /// Launch: general, scout, review, implementation (or worker, the same as implementation).
    agent: Option<String>,
    /// Launch: the complete task text; the subagent inherits nothing else.
    #[schemars(extend("x-maxBytes" = bounds::ASSIGNMENT_BYTES))]
    task: Option<String>,
    /// Optional: an existing directory to work in (for a batch: the default of its tasks).
    cwd: Option<String>,
    /// Optional: an exact model 'provider/id[:effort]' you are granted.
    model: Option<String>,
    /// Optional, narrowing only: {deadlineMs, requests, tools, depth, spawns}.
    limits: Option<LimitsInput>,
    /// Batch: an ordered array of {agent, task, cwd?, model?, limits?}.
    tasks: Option<Vec<SubagentTask>>,
    /// Optional, default true: return the accepted ids at once; one message with the outcomes wakes you after they finish. false waits for the results.
    #[serde(rename = "async")]
    run_async: Option<bool>,
    /// Instead of a launch: agents (or list), status, stop, steer or resume.
    #[schemars(extend("enum" = ["agents", "list", "status", "stop", "steer", "resume"]))]
    action: Option<String>,
    /// status, stop, steer, resume: the exact 'UUID@generation' (never a prefix).
    id: Option<String>,
    /// steer, resume: the text.
    message: Option<String>,
}

/// `submit_result`.
#[derive(JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
#[allow(dead_code, reason = "a schema source only")]
struct SubmitInput {
    /// The result itself, as a JSON value that matches the task's result schema exactly (no string where the schema wants a number).
    value: Value,
}

fn generator() -> schemars::SchemaGenerator {
    schemars::generate::SchemaSettings::draft2020_12()
        .with(|s| s.inline_subschemas = true)
        .into_generator()
}

fn schema_of<T: JsonSchema>() -> Value {
    generator().root_schema_for::<T>().to_value()
}

/// The tools `caller` has, in a fixed order; generated once per kind of caller.
pub fn tools_for(caller: Caller) -> &'static [ToolSpec] {
    static ROOT: OnceLock<Vec<ToolSpec>> = OnceLock::new();
    static CHILD: OnceLock<Vec<Vec<ToolSpec>>> = OnceLock::new();
    match caller {
        Caller::Root => ROOT.get_or_init(|| generate(caller)),
        Caller::Child(g) => {
            let all = CHILD.get_or_init(|| {
                (0..8_u8)
                    .map(|bits| {
                        generate(Caller::Child(super::Grants {
                            submit: bits & 1 != 0,
                            delegate: bits & 2 != 0,
                            coordinate: bits & 4 != 0,
                        }))
                    })
                    .collect()
            });
            let bits = usize::from(g.submit)
                | usize::from(g.delegate) << 1
                | usize::from(g.coordinate) << 2;
            &all[bits]
        }
    }
}

fn generate(caller: Caller) -> Vec<ToolSpec> {
    match caller {
        Caller::Root => vec![delegate_task(true), delegate_coordinate(true), subagent()],
        Caller::Child(grants) => {
            let mut tools = Vec::new();
            if grants.submit {
                tools.push(submit_result());
            }
            if grants.delegate {
                tools.push(delegate_task(false));
            }
            if grants.coordinate {
                tools.push(delegate_coordinate(false));
            }
            tools
        }
    }
}

fn spec(
    name: &str,
    label: &str,
    description: String,
    snippet: &str,
    guidelines: &[&str],
    parameters: Value,
) -> ToolSpec {
    ToolSpec {
        name: name.to_owned(),
        label: label.to_owned(),
        description,
        prompt_snippet: snippet.to_owned(),
        prompt_guidelines: guidelines.iter().map(|&g| g.to_owned()).collect(),
        parameters,
    }
}

fn delegate_task(root: bool) -> ToolSpec {
    let mut parameters = loosen(&schema_of::<DelegateTaskInput>(), &[]);
    if root {
        spec(
            DELEGATE_TASK,
            "Delegate task",
            format!(
                "Delegate work to Slate subagents (pi workers). Give one task ({TASK_FIELDS}) or an ordered batch in tasks. Slate checks the whole call before anything starts. Foreground by default: the call waits and returns the ordered outcomes. With background: true it returns the accepted identities (UUID@generation) at once, and one message with the outcomes follows after they drain."
            ),
            "Delegate tasks to Slate subagents (foreground by default, or background) and get their ordered outcomes",
            &[],
            parameters,
        )
    } else {
        if let Some(props) = parameters
            .get_mut("properties")
            .and_then(Value::as_object_mut)
        {
            props.insert(
                "background".to_owned(),
                json!({"description": "Leave out: a subagent's own delegations are foreground only (it waits for the outcomes)."}),
            );
        }
        spec(
            DELEGATE_TASK,
            "Delegate task",
            format!(
                "Delegate work to subagents and wait for their outcomes. Give one task ({TASK_FIELDS}) or an ordered batch in tasks. Slate checks the whole call before anything starts; each task gets its own outcome, in order."
            ),
            "Delegate tasks to subagents (foreground) and get their ordered outcomes",
            &[],
            parameters,
        )
    }
}

fn subagent() -> ToolSpec {
    spec(
        SUBAGENT,
        "Subagent",
        "Run Slate subagents in the compatibility shape: launch one ({agent, task}) or a batch ({tasks}); async by default (returns exact ids at once, one message with the outcomes wakes you later). Or control them by exact id: {action: agents|list|status|stop|steer|resume}.".to_owned(),
        "Launch and control Slate subagents (async by default; ids are exact UUID@generation)",
        &[
            "Use subagent to hand self-contained work to a Slate subagent: give agent (general, scout, review or implementation) and a complete task; the subagent sees nothing else of this conversation.",
            "subagent launches are async by default: do not poll with subagent status; the outcomes arrive as one message when the work is done.",
            "subagent ids are exact 'UUID@generation' handles: copy them from the launch result; never shorten them.",
        ],
        loosen(&schema_of::<SubagentInput>(), &[]),
    )
}

fn submit_result() -> ToolSpec {
    let mut parameters = loosen(&schema_of::<SubmitInput>(), &["value"]);
    if let Value::Object(map) = &mut parameters {
        map.insert("additionalProperties".to_owned(), Value::Bool(false));
    }
    spec(
        SUBMIT_RESULT,
        "Submit result",
        format!(
            "Submit the structured result your task asks for. Slate checks the value strictly against the task's result schema; an invalid value is reported with JSON-Pointer errors (at most {}) and may be corrected within your limits. The first valid value is final. Submitting does not end your work: finish with a short final answer.",
            bounds::SUBMISSION_ERRORS
        ),
        "Submit the task's structured result as a JSON value",
        &[],
        parameters,
    )
}

fn delegate_coordinate(root: bool) -> ToolSpec {
    let actions: &[&str] = if root { &ACTIONS } else { &CHILD_ACTIONS };
    let (description, snippet, action) = if root {
        (
            "Control and talk to your Slate subagents by exact identity (UUID@generation): status, stop, park, resume, followup, revive, message, inbox, wait. A resume, followup or revive runs in the background; one message with its outcome arrives after it drains.",
            "Inspect, stop, park, resume, follow up, revive, message or wait for Slate subagents",
            "status (the fleet as a table, or one exact generation), stop, park, resume (a paused generation), followup (an idle one: a new generation), revive (a parked one), message, inbox (read and empty the root inbox) or wait.",
        )
    } else {
        (
            "Message your parent, your direct children or your siblings (exact UUID@generation), read your inbox, or wait for an outcome or a message. Identities come from your task text or earlier results; there is no registry lookup.",
            "Message the parent, children or siblings; read the inbox; wait for outcomes",
            "message (send text; without target to your parent's inbox), inbox (read and empty your mailbox) or wait (for one outcome, one receipt, or your inbox).",
        )
    };
    spec(
        DELEGATE_COORDINATE,
        "Coordinate",
        description.to_owned(),
        snippet,
        &[],
        coordinate_schema(actions, action),
    )
}

/// One property's schemas, the actions that require it and those that take it optionally.
type Taken<'a> = (String, Vec<Value>, Vec<&'a str>, Vec<&'a str>);

/// The params schema of one action (the protocol's own params types).
fn action_schema(action: &str) -> Value {
    let mut g = generator();
    let schema = match action {
        "status" => g.root_schema_for::<StatusParams>(),
        "stop" | "park" => g.root_schema_for::<TargetParams>(),
        "resume" => g.root_schema_for::<methods::ResumeParams>(),
        "followup" | "revive" => g.root_schema_for::<methods::RenewParams>(),
        "message" => g.root_schema_for::<methods::MessageParams>(),
        "wait" => g.root_schema_for::<methods::WaitParams>(),
        _ => g.root_schema_for::<NoParams>(),
    };
    schema.to_value()
}

/// One object for every action: `action`, and the union of each action's params' properties
/// (a name two actions type differently becomes an `anyOf`), each saying which actions take
/// it. Hosts (and model APIs) want one object at the top, not a `oneOf`.
fn coordinate_schema<'a>(actions: &[&'a str], action_description: &str) -> Value {
    let mut props: Vec<Taken<'a>> = Vec::new();
    for &action in actions {
        let value = action_schema(action);
        let required: Vec<&str> = value
            .get("required")
            .and_then(Value::as_array)
            .map(|r| r.iter().filter_map(Value::as_str).collect())
            .unwrap_or_default();
        let Some(Value::Object(own)) = value.get("properties") else {
            continue;
        };
        for (name, prop) in own {
            let prop = non_null(prop.clone());
            let at = props
                .iter()
                .position(|(n, ..)| n == name)
                .unwrap_or_else(|| {
                    props.push((name.clone(), Vec::new(), Vec::new(), Vec::new()));
                    props.len() - 1
                });
            let entry = &mut props[at];
            if !entry.1.contains(&prop) {
                entry.1.push(prop);
            }
            if required.contains(&name.as_str()) {
                entry.2.push(action);
            } else {
                entry.3.push(action);
            }
        }
    }
    let mut properties = Map::new();
    properties.insert(
        "action".to_owned(),
        json!({"description": action_description, "enum": actions}),
    );
    for (name, mut schemas, required, optional) in props {
        let mut said = Vec::new();
        if !required.is_empty() {
            said.push(format!("required by {}", required.join(", ")));
        }
        if !optional.is_empty() {
            said.push(format!("optional for {}", optional.join(", ")));
        }
        let said = said.join("; ");
        let prop = if schemas.len() == 1 {
            let mut prop = schemas.remove(0);
            if let Value::Object(prop) = &mut prop {
                let own = prop
                    .get("description")
                    .and_then(Value::as_str)
                    .map(|d| format!(" {d}"))
                    .unwrap_or_default();
                prop.insert(
                    "description".to_owned(),
                    Value::String(format!("{said}.{own}")),
                );
            }
            prop
        } else {
            json!({"description": format!("{said}."), "anyOf": schemas})
        };
        properties.insert(name, prop);
    }
    loosen(
        &json!({"type": "object", "properties": properties}),
        &["action"],
    )
}

/// An optional member's schema without its `null`: leaving the member out is how a tool call
/// says "none".
fn non_null(mut prop: Value) -> Value {
    let is_null = |v: &Value| v.get("type").and_then(Value::as_str) == Some("null");
    if let Some(Value::Array(options)) = prop.get("anyOf")
        && options.len() == 2
        && let Some(other) = options.iter().find(|v| !is_null(v))
        && options.iter().any(is_null)
    {
        return other.clone();
    }
    if let Some(Value::Array(types)) = prop.get("type")
        && types.len() == 2
        && types.iter().any(|t| t == "null")
        && let Some(other) = types.iter().find(|t| *t != "null").cloned()
        && let Value::Object(map) = &mut prop
    {
        map.insert("type".to_owned(), other);
    }
    prop
}

/// The host's form of a typed object schema: each top-level property becomes `{description}`
/// alone, its type, enum and bounds written at the end of the description (`"… (integer, 1
/// to 60000)"`), so a coercing host has nothing to coerce by; `required` is kept as given.
pub fn loosen(schema: &Value, required: &[&str]) -> Value {
    let mut properties = Map::new();
    if let Some(Value::Object(props)) = schema.get("properties") {
        for (name, prop) in props {
            let prop = non_null(prop.clone());
            let description = prop
                .get("description")
                .and_then(Value::as_str)
                .unwrap_or_default()
                .trim_end()
                .to_owned();
            let kind = type_note(&prop);
            let text = match (description.is_empty(), kind.is_empty()) {
                (true, _) => kind,
                (false, true) => description,
                (false, false) => format!("{description} ({kind})"),
            };
            properties.insert(name.clone(), json!({"description": text}));
        }
    }
    let mut out = Map::new();
    out.insert("type".to_owned(), Value::String("object".to_owned()));
    out.insert("properties".to_owned(), Value::Object(properties));
    if !required.is_empty() {
        out.insert("required".to_owned(), json!(required));
    }
    Value::Object(out)
}

/// `"integer, 1 to 60000"`, `"string, at most 50000 characters"`, `"one of: a, b"`, …
fn type_note(prop: &Value) -> String {
    if let Some(Value::Array(options)) = prop.get("enum") {
        let names: Vec<String> = options
            .iter()
            .map(|o| o.as_str().map_or_else(|| o.to_string(), str::to_owned))
            .collect();
        return format!("one of: {}", names.join(", "));
    }
    if let Some(Value::Array(options)) = prop.get("anyOf").or_else(|| prop.get("oneOf")) {
        let notes: Vec<String> = options
            .iter()
            .map(type_note)
            .filter(|n| !n.is_empty())
            .collect();
        return notes.join(" or ");
    }
    let kind = match prop.get("type") {
        Some(Value::String(t)) => t.clone(),
        Some(Value::Array(ts)) => ts
            .iter()
            .filter_map(Value::as_str)
            .filter(|t| *t != "null")
            .collect::<Vec<_>>()
            .join(" or "),
        _ => String::new(),
    };
    let mut notes = vec![];
    if kind == "array"
        && let Some(items) = prop.get("items")
    {
        let inner = type_note(items);
        notes.push(if inner.is_empty() {
            "array".to_owned()
        } else {
            format!("array of {inner}")
        });
    } else if !kind.is_empty() {
        notes.push(kind);
    }
    let num = |k: &str| prop.get(k).and_then(Value::as_u64);
    match (num("minimum"), num("maximum")) {
        (Some(lo), Some(hi)) => notes.push(format!("{lo} to {hi}")),
        (Some(lo), None) if lo > 0 => notes.push(format!("at least {lo}")),
        (None, Some(hi)) => notes.push(format!("at most {hi}")),
        _ => {}
    }
    if let Some(max) = num("maxLength") {
        notes.push(format!("at most {max} characters"));
    }
    if let Some(max) = num("x-maxBytes") {
        notes.push(format!("at most {max} UTF-8 bytes"));
    }
    if let Some(pattern) = prop.get("pattern").and_then(Value::as_str)
        && pattern.contains('@')
    {
        notes.push("'UUID@generation'".to_owned());
    }
    notes.join(", ")
}

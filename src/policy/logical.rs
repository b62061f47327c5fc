//! Logical models in assignments (spec 002 "Action contract"): a task names a logical `model`
//! and a `reason` instead of an exact selection, and gets its route plan at admission.
//!
//! * A `model` string without `/` is a logical name; the exact forms (`provider/id[:effort]`
//!   or the selection object) keep their meaning and never fall back.
//! * The name must be in the routing policy's ordinary membership, and the task must give a
//!   non-blank `reason` (at most 200 characters, checked by `policy::request`). Only a logical
//!   model takes a reason.
//! * Logical work is refused while routing is blocked (`slate effective` names the errors).
//! * A logical task has no `models` allowlist and cannot run under a parent's allowlist: its
//!   routes come from the routing policy's exact permissions, not from operator grants.
//! * The first route is the session's remembered successful provider of the model, else its
//!   preferred provider, at the definition's fixed effort; the rest of the plan is the pure
//!   recovery order after that route ([`ordinary_plan`]).

use serde_json::Value;

use crate::core::task::{LogicalAction, ModelSelection, PlannedRoute};
use crate::policy::problem::{Problem, key};
use crate::policy::recovery::{Admission, Remembered, RouteAttempt, ordinary_plan};
use crate::policy::request::MAX_REASON_CHARS;
use crate::policy::routing::{LogicalModel, RoutingPolicy};

/// What logical tasks are resolved against.
#[derive(Clone, Copy, Debug)]
pub struct LogicalContext<'a> {
    /// The resolved policy; `None` while routing is blocked.
    pub policy: Option<&'a RoutingPolicy>,
    /// How many blocking errors the routing report has (for the refusal text).
    pub blocking_errors: usize,
    /// The session's remembered successful providers.
    pub remembered: &'a Remembered,
    /// The admission number of the call's first task; task `i` gets `first_admission + i`.
    pub first_admission: Admission,
}

/// The logical name in `model`, if it is one: a string without `/`.
pub fn logical_name(model: Option<&Value>) -> Option<&str> {
    match model {
        Some(Value::String(name)) if !name.contains('/') => Some(name),
        _ => None,
    }
}

/// A resolved logical task: its first route (the task's `model`) and its action.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ResolvedLogical {
    pub selection: ModelSelection,
    pub action: LogicalAction,
}

/// Everything a logical task needs besides its name.
pub struct LogicalTask<'a> {
    /// The task's JSON path (`$` or `$.tasks[i]`).
    pub path: &'a str,
    pub name: &'a str,
    pub reason: Option<&'a str>,
    /// Whether the task gave its own `models` allowlist.
    pub has_models: bool,
    /// Whether the delegating parent runs under a `models` allowlist.
    pub parent_restricted: bool,
    /// The task's index in its call.
    pub index: usize,
}

/// Resolve a logical task.
///
/// # Errors
/// Every problem found: no reason, blocked routing, no routing here, an unknown or
/// non-ordinary name, an allowlist, or a definition without any route.
pub fn resolve_logical(
    task: &LogicalTask<'_>,
    ctx: Option<&LogicalContext<'_>>,
) -> Result<ResolvedLogical, Vec<Problem>> {
    let mut problems = Vec::new();
    let model_path = key(task.path, "model");
    if task.reason.is_none() {
        problems.push(Problem::new(
            key(task.path, "reason"),
            format!(
                "required with a logical model: say in at most {MAX_REASON_CHARS} characters why `{}` fits this task",
                task.name
            ),
        ));
    }
    if task.has_models {
        problems.push(Problem::new(
            key(task.path, "models"),
            "`models` narrows exact selections only; a logical model's routes come from the routing policy",
        ));
    }
    if task.parent_restricted {
        problems.push(
            Problem::new(
                &model_path,
                "the delegating parent runs under a `models` allowlist, which a logical model's routes cannot be checked against: name an exact selection",
            )
            .value(task.name),
        );
    }
    let definition = find_definition(task, ctx, &mut problems);
    let (Some((policy, definition)), Some(ctx), Some(reason)) = (definition, ctx, task.reason)
    else {
        return Err(problems);
    };
    let plan = ordinary_plan(policy, definition, ctx.remembered);
    let Some(first) = plan.first() else {
        problems.push(
            Problem::new(&model_path, "the definition permits no provider route").value(task.name),
        );
        return Err(problems);
    };
    if !problems.is_empty() {
        return Err(problems);
    }
    let index = u64::try_from(task.index).unwrap_or(u64::MAX);
    Ok(ResolvedLogical {
        selection: selection(first),
        action: LogicalAction {
            model: definition.model.clone(),
            reason: reason.to_owned(),
            admission: ctx.first_admission.saturating_add(index),
            routes: plan
                .iter()
                .map(|r| PlannedRoute {
                    logical: r.model.clone(),
                    selection: selection(r),
                })
                .collect(),
        },
    })
}

/// The ordinary definition the task names, with its policy; a problem when routing is
/// absent or blocked, or the name is unknown or not ordinary.
fn find_definition<'p>(
    task: &LogicalTask<'_>,
    ctx: Option<&LogicalContext<'p>>,
    problems: &mut Vec<Problem>,
) -> Option<(&'p RoutingPolicy, &'p LogicalModel)> {
    let model_path = key(task.path, "model");
    let policy = match ctx {
        None => {
            problems.push(
                Problem::new(
                    &model_path,
                    "logical models are not available here (no routing policy): name an exact selection provider/id[:effort]",
                )
                .value(task.name),
            );
            None
        }
        Some(LogicalContext {
            policy: None,
            blocking_errors,
            ..
        }) => {
            problems.push(
                Problem::new(
                    &model_path,
                    format!(
                        "logical work is refused while the routing policy is blocked ({blocking_errors} error(s)); run `slate effective` to see them, or name an exact selection"
                    ),
                )
                .value(task.name),
            );
            None
        }
        Some(LogicalContext {
            policy: Some(policy),
            ..
        }) => Some(*policy),
    };
    policy.and_then(|policy| {
        let found = policy.ordinary_definitions().find(|d| d.model == task.name);
        if found.is_none() {
            let rule = if policy.definition(task.name).is_some() {
                format!(
                    "`{}` is defined but not in the ordinary membership (ordinary: {})",
                    task.name,
                    policy.ordinary.join(", ")
                )
            } else {
                format!(
                    "unknown logical model (ordinary: {}); an exact selection is provider/id[:effort]",
                    if policy.ordinary.is_empty() {
                        "none".to_owned()
                    } else {
                        policy.ordinary.join(", ")
                    }
                )
            };
            problems.push(Problem::new(&model_path, rule).value(task.name));
        }
        found.map(|d| (policy, d))
    })
}

fn selection(route: &RouteAttempt) -> ModelSelection {
    ModelSelection {
        provider: route.provider.clone(),
        id: route.id.clone(),
        effort: Some(route.effort.as_str().to_owned()),
    }
}

/// A `reason` on a task without a logical model.
pub fn stray_reason(path: &str) -> Problem {
    Problem::new(
        key(path, "reason"),
        "only a logical model takes a reason; an exact selection (provider/id[:effort]) or the parent's model needs none",
    )
}

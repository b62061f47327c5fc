//! Resolve a parsed call into admission-ready [`TaskSpec`]s: profiles, spawn and
//! coordination narrowing, workspaces, task files, result schemas, model selections and
//! effective capabilities. Every problem of every task is reported; if there is any, nothing
//! is admitted. The coordinator then checks the resolved batch against registry state
//! (ancestry, subsets, capacity, limits) and admits it atomically.

use std::path::Path;

use crate::core::BuiltinTool;
use crate::core::task::{CoordinationAction, LogicalAction, ModelSelection, Role, TaskSpec};
use crate::policy::capabilities::{OfferedTool, effective};
use crate::policy::fs_view::FsView;
use crate::policy::logical::{
    LogicalContext, LogicalTask, logical_name, resolve_logical, stray_reason,
};
use crate::policy::model::{ModelContext, resolve_model_policy};
use crate::policy::problem::{Problem, index, key};
use crate::policy::profiles::ResolvedProfiles;
use crate::policy::request::{DelegateCall, TaskRequest, TaskSource};
use crate::policy::schema::validate_schema;
use crate::policy::task_file::check_task_file;
use crate::policy::workspace::resolve_cwd;

/// The delegating child of a nested call.
#[derive(Clone, Copy, Debug)]
pub struct Delegator<'a> {
    /// Its admitted workspace (nested tasks default to it).
    pub workspace: &'a Path,
    /// Its admitted spec (grants, model allowlist).
    pub spec: &'a TaskSpec,
}

/// Everything a call is resolved against.
pub struct ResolveContext<'a> {
    pub profiles: &'a ResolvedProfiles,
    /// The root parent's canonical working directory.
    pub root_cwd: &'a Path,
    /// `None` for a root call.
    pub delegator: Option<Delegator<'a>>,
    /// What the worker backend can actually call.
    pub offered: &'a [OfferedTool],
    /// Model selection context (the delegator's model for nested calls).
    pub models: &'a ModelContext,
    pub fs: &'a dyn FsView,
    /// Routing for logical-model tasks (`None`: logical models are refused here).
    pub routing: Option<LogicalContext<'a>>,
}

/// Resolve every task of `call`, in order.
pub fn resolve_call(
    call: &DelegateCall,
    ctx: &ResolveContext<'_>,
) -> Result<Vec<TaskSpec>, Vec<Problem>> {
    let mut problems = Vec::new();
    let mut specs = Vec::with_capacity(call.tasks.len());
    for (i, task) in call.tasks.iter().enumerate() {
        match resolve_task(task, i, ctx) {
            Ok(spec) => specs.push(spec),
            Err(found) => problems.extend(found),
        }
    }
    if problems.is_empty() {
        Ok(specs)
    } else {
        Err(problems)
    }
}

#[allow(
    clippy::too_many_lines,
    reason = "one step per policy paragraph, in order"
)]
fn resolve_task(
    task: &TaskRequest,
    index_in_call: usize,
    ctx: &ResolveContext<'_>,
) -> Result<TaskSpec, Vec<Problem>> {
    let mut problems = Vec::new();
    let path = task.path.as_str();
    let profile = ctx.profiles.profile(task.profile);

    let spawn = narrow(
        task.spawn.as_deref(),
        &profile.spawn,
        &key(path, "spawn"),
        "spawn role",
        &mut problems,
        Role::as_str,
    );
    let coordination = narrow(
        task.coordination.as_deref(),
        &profile.coordination,
        &key(path, "coordination"),
        "coordination action",
        &mut problems,
        CoordinationAction::as_str,
    );

    let cwd = resolve_cwd(
        task.cwd.as_deref(),
        ctx.root_cwd,
        ctx.delegator.map(|d| d.workspace),
        ctx.fs,
        &key(path, "cwd"),
    )
    .map_err(|p| problems.push(p))
    .ok();

    let assignment = match (&task.source, &cwd) {
        (TaskSource::Assignment(text), _) => Some(text.clone()),
        (TaskSource::TaskFile(spelling), Some(cwd)) => {
            let at = key(path, "taskFile");
            if ctx
                .delegator
                .is_some_and(|d| !d.spec.tools.contains(&BuiltinTool::Read))
            {
                problems.push(
                    Problem::new(at, "a task file is read with the delegating parent's read grant, which it does not hold")
                        .value(spelling),
                );
                None
            } else {
                check_task_file(spelling, cwd, ctx.fs, &at)
                    .map(|t| t.text)
                    .map_err(|found| problems.extend(found))
                    .ok()
            }
        }
        // The workspace itself was refused: its problem is already reported.
        (TaskSource::TaskFile(_), None) => None,
    };

    let result_schema = task.result_schema.as_ref().and_then(|schema| {
        validate_schema(schema, &key(path, "resultSchema"))
            .map(crate::policy::schema::CheckedSchema::into_value)
            .map_err(|found| problems.extend(found))
            .ok()
    });

    let model = resolve_selection(task, index_in_call, ctx)
        .map_err(|found| problems.extend(found))
        .ok();

    let in_root = cwd.as_deref() == Some(ctx.root_cwd);
    let caps = effective(
        task.profile,
        &profile.tools,
        &profile.leaf_tools,
        ctx.offered,
        in_root,
    );
    if caps.tools.is_empty() {
        let denied: Vec<String> = caps
            .denials
            .iter()
            .map(|d| format!("{} ({})", d.name, d.reason))
            .collect();
        problems.push(
            Problem::new(
                key(path, "profile"),
                format!(
                    "the effective builtin tool set is empty (role ceiling ∩ what the worker offers); the whole batch is rejected. Denied: {}",
                    if denied.is_empty() { "—".to_owned() } else { denied.join("; ") }
                ),
            )
            .value(task.profile),
        );
    }

    let (Some(cwd), Some(assignment), Some((model, allowlist, logical))) = (cwd, assignment, model)
    else {
        return Err(problems);
    };
    if !problems.is_empty() {
        return Err(problems);
    }
    Ok(TaskSpec {
        assignment,
        profile: task.profile,
        role_prompt: profile.prompt.clone(),
        cwd: cwd.to_string_lossy().into_owned(),
        model: Some(model),
        logical,
        models: allowlist,
        tools: caps.tools,
        leaf_tools: caps.leaf_tools,
        skills: profile.skills.clone(),
        spawn,
        coordination,
        limits: task.limits,
        result_schema,
        capability_denials: caps.denials,
        prewalk: None,
    })
}

/// The task's model: a logical model (with its action), or an exact selection resolved by
/// `policy::model` (with the child's allowlist).
type Selected = (
    ModelSelection,
    Option<Vec<ModelSelection>>,
    Option<LogicalAction>,
);

fn resolve_selection(
    task: &TaskRequest,
    index_in_call: usize,
    ctx: &ResolveContext<'_>,
) -> Result<Selected, Vec<Problem>> {
    if let Some(name) = logical_name(task.model.as_ref()) {
        let logical = LogicalTask {
            path: &task.path,
            name,
            reason: task.reason.as_deref(),
            has_models: task.models.is_some(),
            parent_restricted: ctx.models.parent_allowlist.is_some(),
            index: index_in_call,
        };
        return resolve_logical(&logical, ctx.routing.as_ref())
            .map(|r| (r.selection, None, Some(r.action)));
    }
    let exact = resolve_model_policy(
        task.model.as_ref(),
        task.models.as_ref(),
        ctx.models,
        &task.path,
    );
    match (exact, task.reason.is_some()) {
        (Ok(resolved), false) => Ok((resolved.selection, resolved.allowlist, None)),
        (Ok(_), true) => Err(vec![stray_reason(&task.path)]),
        (Err(mut found), stray) => {
            if stray {
                found.push(stray_reason(&task.path));
            }
            Err(found)
        }
    }
}

/// A request list may only narrow the profile's grant; absent inherits it.
fn narrow<T: Copy + PartialEq>(
    requested: Option<&[T]>,
    granted: &[T],
    path: &str,
    what: &str,
    problems: &mut Vec<Problem>,
    name: fn(T) -> &'static str,
) -> Vec<T> {
    let Some(requested) = requested else {
        return granted.to_vec();
    };
    let mut out = Vec::new();
    for (i, item) in requested.iter().enumerate() {
        if granted.contains(item) {
            out.push(*item);
        } else {
            let allowed: Vec<&str> = granted.iter().map(|g| name(*g)).collect();
            problems.push(
                Problem::new(
                    index(path, i),
                    format!(
                        "a request can only narrow the profile's {what}s (granted: {})",
                        if allowed.is_empty() {
                            "none".to_owned()
                        } else {
                            allowed.join(", ")
                        }
                    ),
                )
                .value(name(*item)),
            );
        }
    }
    out
}

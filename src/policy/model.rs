//! Model selection for one assignment: an optional exact `model` override and an optional
//! `models` allowlist, resolved against the parent's selection and the operator's grants.
//!
//! # Accepted forms
//!
//! * The exact selection object `{"provider": "...", "id": "...", "effort"?: "..."}`. Any other
//!   key is rejected. Use this form for ids that the string form cannot express (an id that
//!   itself ends in `:<effort>`).
//! * The string `provider/id[:effort]`, split like pi 1.6 splits `--model`:
//!   1. **Provider**: the longest *known* provider `P` such that the text starts with `P/`
//!      (exact, case-sensitive). pi allows provider ids that contain `/`, so the split is made
//!      against the registry's provider names rather than at a fixed slash. When no known
//!      provider matches, the text before the first `/` is reported as the unknown provider.
//!      With no `/` at all the text is a bare id and is rejected: ids are never guessed.
//!   2. **Effort**: if the rest contains `:` and the text after the **last** `:` is exactly one
//!      of `off|minimal|low|medium|high|xhigh|max`, that suffix is the effort. Otherwise the
//!      whole rest is the id, colons included.
//!
//!   So `openrouter/anthropic/claude:beta` is provider `openrouter`, id `anthropic/claude:beta`,
//!   no effort; `openrouter/anthropic/claude:beta:high` has effort `high`; `anthropic/m:HIGH`
//!   is id `m:HIGH` (effort names are lowercase and exact).
//!
//! # Resolution
//!
//! * No `model`: the child captures the parent's exact selection, effort included.
//! * A `model` without an effort inherits the parent's effort.
//! * A `model` whose provider, id and resolved effort all equal the parent's changes nothing and
//!   needs no grant. Anything else is an **override** and needs an exact operator grant: a
//!   [`ModelGrant`] whose provider and id are byte-for-byte equal, and whose `efforts` contain the
//!   resolved effort. The caller fills `efforts` with what the operator granted *and* the model
//!   supports (pi's `get_available_thinking_levels`, `["off"]` for a non-reasoning model), so an
//!   empty list grants the model at no effort at all. A resolved selection without any effort
//!   (the parent had none and none was named) selects no thinking level and is not checked.
//! * `models` only narrows. Each entry is a selection in either form; an entry without an effort
//!   allows that model at every effort, an entry with an effort allows exactly that effort
//!   (an allowlist entry does not inherit the parent's effort). The chosen selection must be
//!   allowed by the task's own list and by the parent's list, and every entry of the task's list
//!   must be allowed by some entry of the parent's list. `models` never selects a model.
//!
//! Availability, configured auth and scope are runtime facts checked by the caller.

mod selection;

use std::collections::BTreeSet;

use serde_json::Value;

use crate::core::task::ModelSelection;
use crate::policy::problem::{Problem, index, key};

use selection::list_or_none;
pub use selection::{EFFORT_NAMES, Effort, label, parse_selection, parse_selection_text};

/// One exact model the operator granted for overrides, with the efforts allowed on it
/// (operator grant ∩ model support).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ModelGrant {
    pub provider: String,
    pub id: String,
    pub efforts: Vec<Effort>,
}

/// What a selection is resolved against.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ModelContext {
    /// The parent's physical selection, captured by default.
    pub parent: ModelSelection,
    /// Provider ids of pi's model registry.
    pub known_providers: BTreeSet<String>,
    /// Exact models the operator granted for overrides.
    pub operator_grants: Vec<ModelGrant>,
    /// The parent's effective `models` allowlist (`None`: unrestricted).
    pub parent_allowlist: Option<Vec<ModelSelection>>,
}

/// A resolved selection and the allowlist the child passes on to its own children.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ResolvedModel {
    pub selection: ModelSelection,
    /// The task's own `models` when given, else the parent's.
    pub allowlist: Option<Vec<ModelSelection>>,
}

/// Resolves `model` and `models` of one assignment at `path` (e.g. `$.tasks[2]`).
///
/// # Errors
///
/// Every problem found, each naming the field (`$.….model`, `$.….models[i]`), the value
/// and the rule.
pub fn resolve_model(
    request: Option<&Value>,
    models: Option<&Value>,
    ctx: &ModelContext,
    path: &str,
) -> Result<ModelSelection, Vec<Problem>> {
    resolve_model_policy(request, models, ctx, path).map(|r| r.selection)
}

/// [`resolve_model`], also returning the child's effective allowlist.
///
/// # Errors
///
/// Every problem found, as [`resolve_model`].
pub fn resolve_model_policy(
    request: Option<&Value>,
    models: Option<&Value>,
    ctx: &ModelContext,
    path: &str,
) -> Result<ResolvedModel, Vec<Problem>> {
    let mut problems = Vec::new();
    let model_path = key(path, "model");
    let models_path = key(path, "models");

    // `None`: omitted; `Some(None)`: present but invalid.
    let requested = request.map(|value| {
        parse_selection(value, &ctx.known_providers, &model_path)
            .map_err(|found| problems.extend(found))
            .ok()
    });
    let allowlist =
        models.and_then(|value| parse_allowlist(value, ctx, &models_path, &mut problems));

    let chosen = match requested {
        None => Some(ctx.parent.clone()),
        Some(None) => None,
        Some(Some(selection)) => {
            let explicit_effort = selection.effort.is_some();
            let chosen = ModelSelection {
                effort: selection.effort.or_else(|| ctx.parent.effort.clone()),
                ..selection
            };
            if chosen != ctx.parent {
                check_grant(&chosen, explicit_effort, ctx, &model_path, &mut problems);
            }
            Some(chosen)
        }
    };

    if let Some(chosen) = &chosen {
        let inherited = request.is_none();
        if let Some(list) = allowlist
            .as_ref()
            .filter(|list| !list.iter().any(|entry| allows(entry, chosen)))
        {
            let (at, rule) = if inherited {
                (
                    models_path.clone(),
                    format!(
                        "the parent's model {} (inherited because `model` is omitted) is not in this \
                         allowlist; `models` only narrows and never selects a model: add it, or \
                         choose an allowed model with `model` (allowed: {})",
                        label(chosen),
                        labels(list)
                    ),
                )
            } else {
                (
                    model_path.clone(),
                    format!(
                        "{} is not in this task's `models` allowlist (allowed: {})",
                        label(chosen),
                        labels(list)
                    ),
                )
            };
            problems.push(Problem::new(at, rule).value(label(chosen)));
        }
        if let Some(list) = ctx
            .parent_allowlist
            .as_ref()
            .filter(|list| !list.iter().any(|entry| allows(entry, chosen)))
        {
            let what = if inherited {
                "the inherited parent model"
            } else {
                "the selection"
            };
            problems.push(
                Problem::new(
                    model_path.clone(),
                    format!(
                        "{what} {} is not in the parent's `models` allowlist (allowed: {})",
                        label(chosen),
                        labels(list)
                    ),
                )
                .value(label(chosen)),
            );
        }
    }

    match chosen {
        Some(selection) if problems.is_empty() => Ok(ResolvedModel {
            selection,
            allowlist: allowlist.or_else(|| ctx.parent_allowlist.clone()),
        }),
        _ => Err(problems),
    }
}

/// Whether allowlist `entry` allows `selection`: same provider and id, and either no effort on
/// the entry (every effort) or the same effort. The same test decides whether a parent's entry
/// covers a child's entry, so a child entry without an effort needs a parent entry without one.
pub fn allows(entry: &ModelSelection, selection: &ModelSelection) -> bool {
    entry.provider == selection.provider
        && entry.id == selection.id
        && (entry.effort.is_none() || entry.effort == selection.effort)
}

fn check_grant(
    chosen: &ModelSelection,
    explicit_effort: bool,
    ctx: &ModelContext,
    path: &str,
    problems: &mut Vec<Problem>,
) {
    let grant = ctx
        .operator_grants
        .iter()
        .find(|g| g.provider == chosen.provider && g.id == chosen.id);
    let Some(grant) = grant else {
        let granted: Vec<String> = ctx
            .operator_grants
            .iter()
            .map(|g| format!("{}/{}", g.provider, g.id))
            .collect();
        let hint = if chosen.id.contains(':') {
            format!(
                "; the text after ':' in the id is not an effort ({EFFORT_NAMES}), so it is part \
                 of the id"
            )
        } else {
            String::new()
        };
        problems.push(
            Problem::new(
                path,
                format!(
                    "overriding the parent's model {} requires an exact operator grant for {}/{} \
                     (granted: {}){hint}",
                    label(&ctx.parent),
                    chosen.provider,
                    chosen.id,
                    list_or_none(&granted)
                ),
            )
            .value(label(chosen)),
        );
        return;
    };
    let Some(effort) = &chosen.effort else {
        return;
    };
    if Effort::from_name(effort).is_some_and(|e| grant.efforts.contains(&e)) {
        return;
    }
    let granted: Vec<String> = grant
        .efforts
        .iter()
        .map(|e| e.as_str().to_owned())
        .collect();
    let rule = if explicit_effort {
        format!(
            "effort {effort:?} is not granted or not supported for {}/{} (granted efforts: {})",
            grant.provider,
            grant.id,
            list_or_none(&granted)
        )
    } else {
        format!(
            "the omitted effort inherits the parent's effort {effort:?}, which is not granted or \
             not supported for {}/{} (granted efforts: {}); name a granted effort explicitly",
            grant.provider,
            grant.id,
            list_or_none(&granted)
        )
    };
    problems.push(Problem::new(path, rule).value(label(chosen)));
}

fn parse_allowlist(
    value: &Value,
    ctx: &ModelContext,
    path: &str,
    problems: &mut Vec<Problem>,
) -> Option<Vec<ModelSelection>> {
    let Value::Array(items) = value else {
        problems.push(
            Problem::new(
                path,
                "must be an array of model selections ({provider, id, effort?} or \
                 \"provider/id[:effort]\")",
            )
            .json(value),
        );
        return None;
    };
    if items.is_empty() {
        problems.push(
            Problem::new(
                path,
                "must list at least one model selection: an empty allowlist admits no model; \
                 omit `models` to keep the parent's allowlist",
            )
            .json(value),
        );
        return None;
    }
    let mut list = Vec::with_capacity(items.len());
    let mut complete = true;
    for (i, item) in items.iter().enumerate() {
        let at = index(path, i);
        match parse_selection(item, &ctx.known_providers, &at) {
            Ok(entry) => {
                if let Some(parent) = ctx
                    .parent_allowlist
                    .as_ref()
                    .filter(|parent| !parent.iter().any(|p| allows(p, &entry)))
                {
                    problems.push(
                        Problem::new(
                            at,
                            format!(
                                "{} is not allowed by the parent's `models` allowlist: a child \
                                 allowlist can only narrow (parent allows: {})",
                                describe_entry(&entry),
                                labels(parent)
                            ),
                        )
                        .json(item),
                    );
                }
                list.push(entry);
            }
            Err(found) => {
                complete = false;
                problems.extend(found);
            }
        }
    }
    complete.then_some(list)
}

fn describe_entry(entry: &ModelSelection) -> String {
    if entry.effort.is_some() {
        label(entry)
    } else {
        format!("{} at every effort", label(entry))
    }
}

fn labels(list: &[ModelSelection]) -> String {
    let names: Vec<String> = list.iter().map(label).collect();
    list_or_none(&names)
}

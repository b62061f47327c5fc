//! "Is this model and effort permitted?" — the question an `adoption` pause asks before it
//! clears.
//!
//! [`ModelGate`] is the seam; [`RoutingGate`] is what `slate handoff` / `slate resume` use:
//! the routing policy of the directory (spec 002) — an exact permission of a logical model in
//! ordinary membership, at that model's fixed effort. [`ExactSelectionGate`] checks the shape
//! only (an exact `provider/id[:effort]` and one of pi's level names); tests use it.

use crate::core::task::ModelSelection;
use crate::policy::Problem;
use crate::policy::model::{EFFORT_NAMES, Effort, parse_selection_text};

/// A model and effort chosen for a session: `--model`/`--effort`, or what a record saved.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ModelChoice {
    /// `provider/id` (an exact selection; a `:effort` suffix is split off into `effort`).
    pub model: Option<String>,
    pub effort: Option<String>,
}

/// Decides whether a choice may clear an `adoption` pause.
pub trait ModelGate {
    /// The normalized choice when permitted, else every problem, each naming `--model` /
    /// `--effort` (or the record field the value came from) and the rule.
    fn permit(&self, choice: &ModelChoice) -> Result<Selected, Vec<Problem>>;
}

/// A permitted choice, split into its parts.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Selected {
    /// `None` when no model was chosen or recorded: pi's own default applies.
    pub model: Option<ModelSelection>,
    pub effort: Option<Effort>,
}

/// Shape only: the exact-selection parser plus pi's effort names (see the module doc).
#[derive(Clone, Copy, Debug, Default)]
pub struct ExactSelectionGate;

impl ModelGate for ExactSelectionGate {
    fn permit(&self, choice: &ModelChoice) -> Result<Selected, Vec<Problem>> {
        parse_choice(choice)
    }
}

/// Parse a choice for its shape: `provider/id[:effort]` with the provider taken as written
/// (the text before the first `/`), and an effort name. A `:effort` suffix and `--effort`
/// must agree.
pub fn parse_choice(choice: &ModelChoice) -> Result<Selected, Vec<Problem>> {
    let mut problems = Vec::new();
    let model = choice.model.as_deref().and_then(|text| {
        let provider = text.split('/').next().unwrap_or_default().to_owned();
        let known = std::collections::BTreeSet::from([provider]);
        parse_selection_text(text, &known, "--model")
            .map_err(|p| problems.extend(p))
            .ok()
    });
    let effort = match choice.effort.as_deref() {
        None => None,
        Some(name) => {
            let parsed = Effort::from_name(name);
            if parsed.is_none() {
                problems.push(
                    Problem::new(
                        "--effort",
                        format!("must be one of {EFFORT_NAMES} (exact, lowercase)"),
                    )
                    .value(format!("{name:?}")),
                );
            }
            parsed
        }
    };
    let suffix = model
        .as_ref()
        .and_then(|m| m.effort.as_deref())
        .and_then(Effort::from_name);
    let effort = match (suffix, effort) {
        (Some(a), Some(b)) if a != b => {
            problems.push(
                Problem::new(
                    "--effort",
                    format!("conflicts with the effort `{a}` in --model; give it once"),
                )
                .value(b.as_str()),
            );
            None
        }
        (a, b) => b.or(a),
    };
    if !problems.is_empty() {
        return Err(problems);
    }
    Ok(Selected {
        model: model.map(|m| ModelSelection { effort: None, ..m }),
        effort,
    })
}

/// The routing policy's answer (spec 002): the model must be an exact permission
/// (`provider/id`) of a logical model in ordinary membership, and the effort that model's
/// fixed effort (taken from the definition when none is given). A blocked policy permits
/// nothing: logical work waits until `slate.json` is fixed.
pub struct RoutingGate<'a> {
    pub report: &'a crate::policy::routing::RoutingReport,
}

impl ModelGate for RoutingGate<'_> {
    fn permit(&self, choice: &ModelChoice) -> Result<Selected, Vec<Problem>> {
        let selected = parse_choice(choice)?;
        let Some(policy) = self.report.policy.as_ref().filter(|_| !self.report.blocked) else {
            return Err(vec![Problem::new(
                "slate.json",
                format!(
                    "routing is blocked by {} error(s): no model can be validated until they are fixed (see `slate effective`)",
                    self.report.errors.len()
                ),
            )]);
        };
        let Some(model) = &selected.model else {
            return Ok(selected);
        };
        let Some(definition) = policy.ordinary_definitions().find(|d| {
            d.providers
                .iter()
                .any(|(provider, id)| *provider == model.provider && *id == model.id)
        }) else {
            return Err(vec![
                Problem::new(
                    "--model",
                    "is not an exact permission of any logical model in ordinary membership (see `slate effective`)",
                )
                .value(format!("{}/{}", model.provider, model.id)),
            ]);
        };
        match selected.effort {
            Some(effort) if effort != definition.effort => Err(vec![
                Problem::new(
                    "--effort",
                    format!(
                        "must be `{}`, the fixed effort of logical model {}",
                        definition.effort.as_str(),
                        definition.model
                    ),
                )
                .value(effort.as_str()),
            ]),
            _ => Ok(Selected {
                effort: Some(definition.effort),
                ..selected
            }),
        }
    }
}

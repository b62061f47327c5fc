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

    /// How to make a refused choice permitted, in words a person can follow (e.g. the
    /// `slate.json` entry to add); `None` when the gate knows no fix.
    fn fix(&self, _choice: &ModelChoice) -> Option<String> {
        None
    }
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
    /// The home `slate.json` a fix names (`<agentDir>/slate.json`).
    pub home_file: Option<&'a std::path::Path>,
}

/// A logical-model name for an added definition of `id`: `[a-z0-9][a-z0-9._-]*`, not a
/// shipped name.
fn added_name(id: &str) -> String {
    let mut name: String = id
        .chars()
        .map(|c| {
            let c = c.to_ascii_lowercase();
            if c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-') {
                c
            } else {
                '-'
            }
        })
        .collect();
    if !name.starts_with(|c: char| c.is_ascii_alphanumeric()) {
        name.insert(0, 'm');
    }
    if crate::policy::routing::SHIPPED
        .iter()
        .any(|m| m.model == name)
    {
        name.push_str("-local");
    }
    name
}

impl ModelGate for RoutingGate<'_> {
    fn fix(&self, choice: &ModelChoice) -> Option<String> {
        let file = self.home_file.map_or_else(
            || "`slate.json` in the agent dir".to_owned(),
            |f| format!("`{}`", f.display()),
        );
        if self.report.blocked || self.report.policy.is_none() {
            return Some(format!(
                "routing is blocked: fix the errors `slate effective` lists ({file} or the \
                 project's `.pi/slate.json`)"
            ));
        }
        let selected = parse_choice(choice).ok()?;
        let model = selected.model?;
        let policy = self.report.policy.as_ref()?;
        let permits = |d: &&crate::policy::routing::LogicalModel| {
            d.providers
                .iter()
                .any(|(p, id)| *p == model.provider && *id == model.id)
        };
        if policy.ordinary_definitions().any(|d| permits(&d)) {
            // Permitted; a refusal is about the effort, which `--effort` fixes.
            return None;
        }
        if let Some(d) = policy.definitions.iter().find(permits) {
            return Some(format!(
                "logical model `{}` permits {}/{} but is not in ordinary membership: in {file}, \
                 remove it from `router.models.exclude` or list it in `router.models.include`",
                d.model, model.provider, model.id
            ));
        }
        let effort = selected.effort.map_or("medium", Effort::as_str);
        let mut providers = serde_json::Map::new();
        providers.insert(model.provider.clone(), model.id.clone().into());
        let entry = serde_json::json!({
            "model": added_name(&model.id),
            "capabilityRating": 50,
            "costRating": 50,
            "effort": effort,
            "preferredProvider": model.provider,
            "providers": providers,
            "guidelines": [],
            "cautions": [],
        });
        Some(format!(
            "to permit {}/{}, add this definition to `router.models.add` in {file} (the ratings, \
             1 to 100, are your judgment; `slate effective` checks the file):\n{}",
            model.provider,
            model.id,
            serde_json::json!({"router": {"models": {"add": [entry]}}})
        ))
    }

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

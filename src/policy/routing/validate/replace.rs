//! `router.models.replace`: entries that change a shipped definition field by field.

use super::super::RoutingPolicy;
use super::super::definition::{LogicalModel, Origin, Supplied, parse_fields};
use super::super::issue::{ErrorClass, Issue};
use super::super::json::{Json, JsonPath};
use super::Validator;

impl Validator<'_> {
    /// Apply every valid `replace` entry to the shipped definitions in `policy`.
    pub(super) fn replaces(
        &mut self,
        value: &Json,
        path: &JsonPath,
        added: &[String],
        policy: &mut RoutingPolicy,
    ) {
        let mut seen: Vec<String> = Vec::new();
        for (i, item) in self.array(value, path, "`replace`").iter().enumerate() {
            let at = path.index(i);
            let Some(members) = self.entry_members(item, &at, "a `replace` entry") else {
                continue;
            };
            let before = self.issues.len();
            let mut s = parse_fields(members, &at, &mut self.issues);
            let Some(name) = s.model.take() else {
                if !s.present.contains(&"model") {
                    self.push(Issue::new(
                        ErrorClass::IncompleteDefinition,
                        at.clone(),
                        "a `replace` entry requires `model`, naming the shipped definition it changes",
                    ));
                }
                continue;
            };
            if added.contains(&name) {
                self.push(
                    Issue::new(
                        ErrorClass::AmbiguousOperation,
                        at.key("model"),
                        format!("`{name}` is added by `add` in the same configuration and cannot also be replaced"),
                    )
                    .value(&name),
                );
                continue;
            }
            let Some(base) = policy.definitions.iter().position(|d| d.model == name) else {
                self.unknown_model(at.key("model"), &name, "replace");
                continue;
            };
            if seen.contains(&name) {
                self.push(
                    Issue::new(
                        ErrorClass::DuplicateName,
                        at.key("model"),
                        format!("`{name}` is replaced more than once"),
                    )
                    .value(&name),
                );
                continue;
            }
            seen.push(name.clone());
            let current = &policy.definitions[base];
            if s.effort.is_some_and(|e| e != current.effort)
                && !(s.present.contains(&"capabilityRating") && s.present.contains(&"costRating"))
            {
                self.push(Issue::new(
                    ErrorClass::IncompleteDefinition,
                    at.clone(),
                    format!(
                        "this replacement changes the effort of `{name}` from `{}`, so it must also supply both `capabilityRating` and `costRating`",
                        current.effort
                    ),
                ));
            }
            let providers = s
                .providers
                .clone()
                .or_else(|| Some(current.providers.clone()));
            if s.preferred_provider.is_none() && s.providers.is_some() {
                s.preferred_provider = Some(current.preferred_provider.clone());
            }
            self.preferred_in_map(&s, providers.as_deref(), &at);
            if self.issues.len() != before {
                continue;
            }
            let file = (self.file_of)(&at);
            apply(&mut policy.definitions[base], s, &file, at);
        }
    }
}

/// Apply a valid replacement: supplied fields replace whole fields; the others keep their
/// values and their source attribution.
fn apply(model: &mut LogicalModel, s: Supplied, file: &str, at: JsonPath) {
    let mut changed: Vec<&str> = Vec::new();
    if let Some(v) = s.effort {
        model.effort = v;
        changed.push("effort");
    }
    if let Some(v) = s.capability_rating {
        model.capability_rating = v;
        changed.push("capabilityRating");
    }
    if let Some(v) = s.cost_rating {
        model.cost_rating = v;
        changed.push("costRating");
    }
    if let Some(v) = s
        .preferred_provider
        .filter(|_| s.present.contains(&"preferredProvider"))
    {
        model.preferred_provider = v;
        changed.push("preferredProvider");
    }
    if let Some(v) = s.providers {
        model.providers = v;
        changed.push("providers");
    }
    if let Some(v) = s.guidelines {
        model.guidelines = v;
        changed.push("guidelines");
    }
    if let Some(v) = s.cautions {
        model.cautions = v;
        changed.push("cautions");
    }
    for field in changed {
        model.sources.insert(field.to_owned(), file.to_owned());
    }
    model.origin = Origin::Replaced;
    model.defined_at = Some(at);
}

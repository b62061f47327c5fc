//! One model selection in either accepted form, and the effort names (the split rule is in the
//! parent module's docs).

use std::collections::BTreeSet;
use std::fmt;
use std::fmt::Write as _;

use serde_json::Value;

use crate::core::task::ModelSelection;
use crate::policy::problem::{Problem, key};

/// A thinking level, exactly as pi names them.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Effort {
    Off,
    Minimal,
    Low,
    Medium,
    High,
    Xhigh,
    Max,
}

impl Effort {
    pub const ALL: [Effort; 7] = [
        Effort::Off,
        Effort::Minimal,
        Effort::Low,
        Effort::Medium,
        Effort::High,
        Effort::Xhigh,
        Effort::Max,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            Effort::Off => "off",
            Effort::Minimal => "minimal",
            Effort::Low => "low",
            Effort::Medium => "medium",
            Effort::High => "high",
            Effort::Xhigh => "xhigh",
            Effort::Max => "max",
        }
    }

    /// Exact, case-sensitive lookup.
    pub fn from_name(name: &str) -> Option<Effort> {
        Effort::ALL.into_iter().find(|e| e.as_str() == name)
    }
}

impl fmt::Display for Effort {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The accepted effort names, for messages.
pub const EFFORT_NAMES: &str = "off|minimal|low|medium|high|xhigh|max";

/// Parses one selection in either form. Providers must be in `known_providers`; the effort,
/// when present, is a valid effort name.
///
/// # Errors
///
/// Every problem of the value, each naming `path` or a key below it.
pub fn parse_selection(
    value: &Value,
    known_providers: &BTreeSet<String>,
    path: &str,
) -> Result<ModelSelection, Vec<Problem>> {
    match value {
        Value::String(text) => parse_selection_text(text, known_providers, path),
        Value::Object(map) => {
            let mut problems = Vec::new();
            for (name, field) in map {
                if !matches!(name.as_str(), "provider" | "id" | "effort") {
                    problems.push(
                        Problem::new(
                            key(path, name),
                            "additional property is not allowed: a model selection has exactly \
                             `provider`, `id` and an optional `effort`",
                        )
                        .json(field),
                    );
                }
            }
            let provider_path = key(path, "provider");
            let provider = required_text(
                map.get("provider"),
                &provider_path,
                "provider",
                &mut problems,
            );
            if let Some(provider) = provider.filter(|p| !known_providers.contains(*p)) {
                problems.push(unknown_provider(&provider_path, provider, known_providers));
            }
            let id = required_text(map.get("id"), &key(path, "id"), "model id", &mut problems);
            let effort = match map.get("effort") {
                None => None,
                Some(Value::String(name)) if Effort::from_name(name).is_some() => {
                    Some(name.clone())
                }
                Some(other) => {
                    problems.push(
                        Problem::new(
                            key(path, "effort"),
                            format!(
                                "effort must be one of {EFFORT_NAMES} (exact, lowercase), or \
                                 omitted to inherit the parent's effort"
                            ),
                        )
                        .json(other),
                    );
                    None
                }
            };
            match (provider, id) {
                (Some(provider), Some(id)) if problems.is_empty() => Ok(ModelSelection {
                    provider: provider.to_owned(),
                    id: id.to_owned(),
                    effort,
                }),
                _ => Err(problems),
            }
        }
        Value::Null => Err(vec![
            Problem::new(
                path,
                "null is not a model selection: omit the field to keep the parent's model, or \
                 give {provider, id, effort?} or \"provider/id[:effort]\"",
            )
            .json(value),
        ]),
        Value::Bool(_) | Value::Number(_) | Value::Array(_) => Err(vec![
            Problem::new(
                path,
                "must be an exact model selection object {provider, id, effort?} or a string \
                 \"provider/id[:effort]\"",
            )
            .json(value),
        ]),
    }
}

/// Parses the string form `provider/id[:effort]` (see the module docs for the split rule).
///
/// # Errors
///
/// Every problem of the text, each naming `path`.
pub fn parse_selection_text(
    text: &str,
    known_providers: &BTreeSet<String>,
    path: &str,
) -> Result<ModelSelection, Vec<Problem>> {
    let quoted = Value::String(text.to_owned());
    let Some(first_slash) = text.find('/') else {
        let rule = if text.is_empty() {
            "an empty string is not a model selection: write \"provider/id[:effort]\"".to_owned()
        } else {
            "bare model id without a provider: model ids and providers are never guessed, \
             write \"provider/id[:effort]\""
                .to_owned()
        };
        return Err(vec![Problem::new(path, rule).json(&quoted)]);
    };
    let provider = known_providers
        .iter()
        .filter(|p| !p.is_empty())
        .filter(|p| {
            text.strip_prefix(p.as_str())
                .is_some_and(|rest| rest.starts_with('/'))
        })
        .max_by_key(|p| p.len());
    let Some(provider) = provider else {
        let named = &text[..first_slash];
        let problem = if named.is_empty() {
            Problem::new(
                path,
                "the provider before the first '/' is empty: write \"provider/id[:effort]\"",
            )
            .json(&quoted)
        } else {
            unknown_provider(path, named, known_providers).json(&quoted)
        };
        return Err(vec![problem]);
    };
    let rest = &text[provider.len() + 1..];
    let (id, effort) = match rest.rfind(':') {
        Some(colon) if Effort::from_name(&rest[colon + 1..]).is_some() => {
            (&rest[..colon], Some(rest[colon + 1..].to_owned()))
        }
        _ => (rest, None),
    };
    if id.trim().is_empty() {
        return Err(vec![
            Problem::new(
                path,
                format!("the model id after \"{provider}/\" must contain non-whitespace text"),
            )
            .json(&quoted),
        ]);
    }
    Ok(ModelSelection {
        provider: provider.clone(),
        id: id.to_owned(),
        effort,
    })
}

/// `provider/id` or `provider/id:effort`, for messages.
pub fn label(selection: &ModelSelection) -> String {
    match &selection.effort {
        Some(effort) => format!("{}/{}:{effort}", selection.provider, selection.id),
        None => format!("{}/{}", selection.provider, selection.id),
    }
}

fn required_text<'a>(
    value: Option<&'a Value>,
    path: &str,
    what: &str,
    problems: &mut Vec<Problem>,
) -> Option<&'a str> {
    match value {
        None => {
            problems.push(Problem::new(
                path,
                format!("required: the {what} of the exact model selection"),
            ));
            None
        }
        Some(Value::String(text)) if text.trim().is_empty() => {
            problems.push(
                Problem::new(path, format!("the {what} must contain non-whitespace text"))
                    .value(format!("{text:?}")),
            );
            None
        }
        Some(Value::String(text)) => Some(text),
        Some(other) => {
            problems.push(Problem::new(path, format!("the {what} must be a string")).json(other));
            None
        }
    }
}

fn unknown_provider(path: &str, provider: &str, known: &BTreeSet<String>) -> Problem {
    let known: Vec<String> = known.iter().cloned().collect();
    Problem::new(
        path,
        format!(
            "unknown provider {provider:?}: providers are matched exactly and never guessed \
             (known: {})",
            list_or_none(&known)
        ),
    )
    .value(format!("{provider:?}"))
}

/// `a, b, c`, at most eight names, or `none`.
pub(super) fn list_or_none(names: &[String]) -> String {
    const SHOWN: usize = 8;
    if names.is_empty() {
        return "none".to_owned();
    }
    let mut text = names
        .iter()
        .take(SHOWN)
        .map(String::as_str)
        .collect::<Vec<_>>()
        .join(", ");
    if names.len() > SHOWN {
        let _ = write!(text, ", … and {} more", names.len() - SHOWN);
    }
    text
}

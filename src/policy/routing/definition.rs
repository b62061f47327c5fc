//! One logical definition and the rules of its eight fields (shared by `add`, which needs all of
//! them, and `replace`, which may supply any subset of the seven besides `model`).

use std::collections::{BTreeMap, HashSet};

use serde::{Serialize, Serializer};

use super::issue::{ErrorClass, Issue};
use super::json::{Json, JsonPath};
use super::shipped::ShippedModel;
use crate::policy::model::{EFFORT_NAMES, Effort};

/// The eight fields of a definition, in the order the spec tables them.
pub const FIELDS: [&str; 8] = [
    "model",
    "capabilityRating",
    "effort",
    "costRating",
    "preferredProvider",
    "providers",
    "guidelines",
    "cautions",
];

/// Provider names that would collide with JavaScript object internals.
pub const RESERVED_PROVIDERS: [&str; 3] = ["__proto__", "prototype", "constructor"];

/// Where a definition came from.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub enum Origin {
    Shipped,
    /// Shipped, with some fields replaced by a configuration file.
    Replaced,
    /// A custom definition from `router.models.add`.
    Added,
}

/// One logical model: a fixed ordinary effort, ratings, a preferred provider, the exact
/// provider → Pi model permissions (in configured order), guidance and cautions.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct LogicalModel {
    pub model: String,
    #[serde(serialize_with = "effort_name")]
    pub effort: Effort,
    pub capability_rating: u8,
    pub cost_rating: u8,
    pub preferred_provider: String,
    /// Exact permissions, provider → physical model id, in configured order.
    #[serde(serialize_with = "ordered_map")]
    pub providers: Vec<(String, String)>,
    pub guidelines: Vec<String>,
    pub cautions: Vec<String>,
    pub origin: Origin,
    /// For each field, `shipped` or the file that supplied it.
    pub sources: BTreeMap<String, String>,
    /// Where the definition was written (an `add` or `replace` entry); `None` when shipped.
    #[serde(skip)]
    pub defined_at: Option<JsonPath>,
}

impl LogicalModel {
    pub fn from_shipped(shipped: &ShippedModel) -> Self {
        Self {
            model: shipped.model.to_owned(),
            effort: shipped.effort,
            capability_rating: shipped.capability_rating,
            cost_rating: shipped.cost_rating,
            preferred_provider: shipped.preferred_provider.to_owned(),
            providers: shipped
                .providers
                .iter()
                .map(|(p, id)| ((*p).to_owned(), (*id).to_owned()))
                .collect(),
            guidelines: shipped.guidelines.iter().map(|s| (*s).to_owned()).collect(),
            cautions: shipped.cautions.iter().map(|s| (*s).to_owned()).collect(),
            origin: Origin::Shipped,
            sources: FIELDS
                .iter()
                .map(|f| ((*f).to_owned(), "shipped".to_owned()))
                .collect(),
            defined_at: None,
        }
    }

    /// The exact Pi model id this definition permits on `provider`.
    pub fn route(&self, provider: &str) -> Option<&str> {
        self.providers
            .iter()
            .find(|(p, _)| p == provider)
            .map(|(_, id)| id.as_str())
    }
}

pub fn effort_name<S: Serializer>(effort: &Effort, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_str(effort.as_str())
}

fn ordered_map<S: Serializer>(pairs: &[(String, String)], s: S) -> Result<S::Ok, S::Error> {
    s.collect_map(pairs.iter().map(|(k, v)| (k, v)))
}

/// The fields one `add` or `replace` entry supplied and could parse. A field with a problem is
/// `None` and its problem is in the issues.
#[derive(Clone, Debug, Default)]
pub struct Supplied {
    pub model: Option<String>,
    pub capability_rating: Option<u8>,
    pub effort: Option<Effort>,
    pub cost_rating: Option<u8>,
    pub preferred_provider: Option<String>,
    pub providers: Option<Vec<(String, String)>>,
    pub guidelines: Option<Vec<String>>,
    pub cautions: Option<Vec<String>>,
    /// Which of [`FIELDS`] were present (valid or not).
    pub present: Vec<&'static str>,
}

/// Parse every field of one entry object at `path`; unknown fields are critical errors.
pub fn parse_fields(
    members: &[(String, Json)],
    path: &JsonPath,
    issues: &mut Vec<Issue>,
) -> Supplied {
    let mut out = Supplied::default();
    let mut seen: HashSet<&str> = HashSet::new();
    for (name, value) in members {
        let at = path.key(name);
        if !seen.insert(name) {
            issues.push(
                Issue::new(
                    ErrorClass::DuplicateName,
                    at,
                    format!("the field `{name}` is given more than once"),
                )
                .json(value),
            );
            continue;
        }
        let Some(field) = FIELDS.iter().find(|f| **f == name) else {
            issues.push(
                Issue::new(
                    ErrorClass::UnknownField,
                    at,
                    format!(
                        "unknown field `{name}`: a definition has exactly `{}`",
                        FIELDS.join("`, `")
                    ),
                )
                .json(value),
            );
            continue;
        };
        out.present.push(field);
        match *field {
            "model" => out.model = model_name(value, &at, issues),
            "capabilityRating" => out.capability_rating = rating(value, &at, issues),
            "costRating" => out.cost_rating = rating(value, &at, issues),
            "effort" => out.effort = effort(value, &at, issues),
            "preferredProvider" => out.preferred_provider = provider_name(value, &at, issues),
            "providers" => out.providers = providers(value, &at, issues),
            "guidelines" => out.guidelines = texts(value, &at, issues),
            _ => out.cautions = texts(value, &at, issues),
        }
    }
    out
}

/// `[a-z0-9][a-z0-9._-]*`: logical model and provider names.
pub fn is_name(text: &str) -> bool {
    let mut chars = text.chars();
    chars
        .next()
        .is_some_and(|c| c.is_ascii_lowercase() || c.is_ascii_digit())
        && chars
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || matches!(c, '.' | '_' | '-'))
}

/// `[A-Za-z0-9][A-Za-z0-9._:/-]*`: a physical Pi model identifier.
pub fn is_physical_id(text: &str) -> bool {
    let mut chars = text.chars();
    chars.next().is_some_and(|c| c.is_ascii_alphanumeric())
        && chars.all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | ':' | '/' | '-'))
}

pub fn model_name(value: &Json, at: &JsonPath, issues: &mut Vec<Issue>) -> Option<String> {
    match value {
        Json::String(s) if is_name(s) => Some(s.clone()),
        _ => {
            issues.push(
                Issue::new(
                    ErrorClass::InvalidValue,
                    at.clone(),
                    "a logical model name is a string that starts with a lowercase letter or \
                     digit; later characters can also be `.`, `_` or `-`",
                )
                .json(value),
            );
            None
        }
    }
}

fn rating(value: &Json, at: &JsonPath, issues: &mut Vec<Issue>) -> Option<u8> {
    let n = match value {
        Json::Number(n) => n.as_u64().or_else(|| {
            n.as_f64()
                .filter(|f| f.fract() == 0.0 && (1.0..=100.0).contains(f))
                .map(|f| {
                    // Integral and within 1..=100: the cast is exact.
                    #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)]
                    let whole = f as u64;
                    whole
                })
        }),
        _ => None,
    };
    if let Some(n) = n
        .and_then(|n| u8::try_from(n).ok())
        .filter(|n| (1..=100).contains(n))
    {
        return Some(n);
    }
    issues.push(
        Issue::new(
            ErrorClass::InvalidRating,
            at.clone(),
            "a rating is an integer from 1 through 100",
        )
        .json(value),
    );
    None
}

pub fn effort(value: &Json, at: &JsonPath, issues: &mut Vec<Issue>) -> Option<Effort> {
    match value {
        Json::String(s) if Effort::from_name(s).is_some() => Effort::from_name(s),
        _ => {
            issues.push(
                Issue::new(
                    ErrorClass::InvalidEffort,
                    at.clone(),
                    format!("effort is one fixed value from {EFFORT_NAMES} (exact, lowercase)"),
                )
                .json(value),
            );
            None
        }
    }
}

fn check_provider(name: &str) -> Option<&'static str> {
    if RESERVED_PROVIDERS.contains(&name) {
        Some("the provider names `__proto__`, `prototype` and `constructor` are invalid")
    } else if !is_name(name) {
        Some(
            "a provider name starts with a lowercase letter or digit; later characters can \
             also be `.`, `_` or `-`",
        )
    } else {
        None
    }
}

fn provider_name(value: &Json, at: &JsonPath, issues: &mut Vec<Issue>) -> Option<String> {
    let Json::String(name) = value else {
        issues.push(
            Issue::new(
                ErrorClass::InvalidValue,
                at.clone(),
                "must be a provider name string",
            )
            .json(value),
        );
        return None;
    };
    match check_provider(name) {
        None => Some(name.clone()),
        Some(rule) => {
            issues.push(Issue::new(ErrorClass::InvalidValue, at.clone(), rule).json(value));
            None
        }
    }
}

fn providers(
    value: &Json,
    at: &JsonPath,
    issues: &mut Vec<Issue>,
) -> Option<Vec<(String, String)>> {
    let Json::Object(members) = value else {
        issues.push(
            Issue::new(
                ErrorClass::InvalidValue,
                at.clone(),
                "must be an object mapping each provider name to one exact Pi model identifier",
            )
            .json(value),
        );
        return None;
    };
    if members.is_empty() {
        issues.push(
            Issue::new(
                ErrorClass::IncompleteDefinition,
                at.clone(),
                "must map at least one provider: an empty provider map permits no route",
            )
            .json(value),
        );
        return None;
    }
    let before = issues.len();
    let mut out: Vec<(String, String)> = Vec::new();
    let mut seen: HashSet<&str> = HashSet::new();
    for (provider, id) in members {
        let here = at.key(provider);
        if !seen.insert(provider) {
            issues.push(
                Issue::new(
                    ErrorClass::DuplicateName,
                    here.clone(),
                    format!("the provider `{provider}` is mapped more than once"),
                )
                .json(id),
            );
        }
        if let Some(rule) = check_provider(provider) {
            issues.push(Issue::new(ErrorClass::InvalidValue, here.clone(), rule).value(provider));
        }
        match id {
            Json::String(s) if is_physical_id(s) => out.push((provider.clone(), s.clone())),
            _ => issues.push(
                Issue::new(
                    ErrorClass::InvalidValue,
                    here,
                    "a physical model identifier is a string that starts with a letter or digit; \
                     later characters can also be `.`, `_`, `:`, `/` or `-`",
                )
                .json(id),
            ),
        }
    }
    (issues.len() == before).then_some(out)
}

fn texts(value: &Json, at: &JsonPath, issues: &mut Vec<Issue>) -> Option<Vec<String>> {
    let Json::Array(items) = value else {
        issues.push(
            Issue::new(
                ErrorClass::InvalidValue,
                at.clone(),
                "must be an array of non-empty strings (the array can be empty)",
            )
            .json(value),
        );
        return None;
    };
    let before = issues.len();
    let mut out = Vec::with_capacity(items.len());
    for (i, item) in items.iter().enumerate() {
        match item {
            Json::String(s) if !s.trim().is_empty() => out.push(s.clone()),
            _ => issues.push(
                Issue::new(
                    ErrorClass::InvalidValue,
                    at.index(i),
                    "must be a non-empty string (not blank)",
                )
                .json(item),
            ),
        }
    }
    (issues.len() == before).then_some(out)
}

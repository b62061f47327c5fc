//! Common recovery (spec 002 "Common recovery"; "Ownership, success, and stops"): the ordered
//! route attempts after a failed route, pure over a [`RoutingPolicy`].
//!
//! Within one logical model the order is: the remembered successful provider, then the
//! configured preferred provider, then the remaining exact provider-map order. Every provider
//! of one logical identity is tried before another model. Ordinary recovery then takes the
//! other ordinary models at the active capability rating by ascending cost rating (configured
//! membership order breaks ties), then the occupied ratings nearest to the active one by rating
//! distance, higher first on equal distance, continuing on the other side when one side is
//! exhausted. Compression follows configured entry order from the failed entry, never backward
//! and never wrapping. Each exact provider/model pair is entered at most once in one operation.

mod classify;
mod memory;

use std::collections::BTreeMap;
use std::fmt;

use serde::Serialize;

use crate::policy::model::Effort;
use crate::policy::routing::{LogicalModel, RoutingPolicy, effort_name};

pub use classify::{Exhaustion, FailureKind, RecoveryDecision, classify_message, decide};
pub use memory::{ActionOutcome, Admission, SessionPreferences};

/// One physical route attempt: an exact provider and Pi model id for a logical model, at the
/// effort that route runs with.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct RouteAttempt {
    pub model: String,
    pub provider: String,
    pub id: String,
    #[serde(serialize_with = "effort_name")]
    pub effort: Effort,
}

impl fmt::Display for RouteAttempt {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} → {}/{} at {}",
            self.model, self.provider, self.id, self.effort
        )
    }
}

/// Remembered successful providers of the session, logical model → provider.
pub type Remembered = BTreeMap<String, String>;

/// Why recovery cannot start (a visible stop that asks the user for a model choice).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, thiserror::Error)]
#[serde(tag = "stop", rename_all = "camelCase")]
pub enum RecoveryStop {
    /// No definition names this logical model.
    #[error("no logical definition is named `{model}`: choose a model")]
    UnknownModel { model: String },
    /// No definition permits the active physical route.
    #[error("no logical definition permits the route {provider}/{id}: choose a model")]
    UnmappedRoute { provider: String, id: String },
    /// Several definitions permit it and the session has no explicit trusted logical identity.
    #[error(
        "the route {provider}/{id} belongs to several logical definitions ({}); Slate never picks the first: choose a model",
        models.join(", ")
    )]
    AmbiguousRoute {
        provider: String,
        id: String,
        models: Vec<String>,
    },
}

/// Main recovery's reverse mapping of the active physical route to its logical model. An
/// `explicit` trusted logical identity resolves several matches when it is one of them.
///
/// # Errors
/// A [`RecoveryStop`]: zero matches, or several without a matching explicit identity.
pub fn reverse_map<'p>(
    policy: &'p RoutingPolicy,
    provider: &str,
    id: &str,
    explicit: Option<&str>,
) -> Result<&'p LogicalModel, RecoveryStop> {
    let matches: Vec<&LogicalModel> = policy
        .definitions
        .iter()
        .filter(|d| d.route(provider) == Some(id))
        .collect();
    match matches.as_slice() {
        [] => Err(RecoveryStop::UnmappedRoute {
            provider: provider.to_owned(),
            id: id.to_owned(),
        }),
        [one] => Ok(one),
        several => several
            .iter()
            .find(|d| explicit == Some(d.model.as_str()))
            .copied()
            .ok_or_else(|| RecoveryStop::AmbiguousRoute {
                provider: provider.to_owned(),
                id: id.to_owned(),
                models: several.iter().map(|d| d.model.clone()).collect(),
            }),
    }
}

/// The providers of one definition in recovery order: remembered, preferred, then map order
/// (each once; a remembered provider the map no longer permits is passed over).
pub fn provider_order(model: &LogicalModel, remembered: Option<&str>) -> Vec<(String, String)> {
    let mut out: Vec<(String, String)> = Vec::new();
    let first = remembered
        .into_iter()
        .chain([model.preferred_provider.as_str()]);
    for provider in first.chain(model.providers.iter().map(|(p, _)| p.as_str())) {
        if let Some(id) = model.route(provider)
            && !out.iter().any(|(p, _)| p == provider)
        {
            out.push((provider.to_owned(), id.to_owned()));
        }
    }
    out
}

/// The first route of an action on `model`: its remembered provider, else its preferred one.
pub fn initial_route(model: &LogicalModel, remembered: &Remembered) -> Option<RouteAttempt> {
    provider_order(model, remembered.get(&model.model).map(String::as_str))
        .into_iter()
        .next()
        .map(|(provider, id)| RouteAttempt {
            model: model.model.clone(),
            provider,
            id,
            effort: model.effort,
        })
}

/// Pushes `model`'s unvisited routes at `effort`, marking them visited.
fn push_routes(
    model: &LogicalModel,
    effort: Effort,
    remembered: &Remembered,
    visited: &mut Vec<(String, String)>,
    out: &mut Vec<RouteAttempt>,
) {
    for (provider, id) in provider_order(model, remembered.get(&model.model).map(String::as_str)) {
        let pair = (provider, id);
        if visited.contains(&pair) {
            continue;
        }
        visited.push(pair.clone());
        out.push(RouteAttempt {
            model: model.model.clone(),
            provider: pair.0,
            id: pair.1,
            effort,
        });
    }
}

/// The other ordinary models in ordinary recovery order around `active`'s capability rating.
pub fn model_order<'p>(policy: &'p RoutingPolicy, active: &LogicalModel) -> Vec<&'p LogicalModel> {
    let candidates: Vec<(usize, &LogicalModel)> = policy
        .ordinary_definitions()
        .enumerate()
        .filter(|(_, d)| d.model != active.model)
        .collect();
    let at = |rating: u8| -> Vec<&LogicalModel> {
        let mut level: Vec<&(usize, &LogicalModel)> = candidates
            .iter()
            .filter(|(_, d)| d.capability_rating == rating)
            .collect();
        level.sort_by_key(|(i, d)| (d.cost_rating, *i));
        level.into_iter().map(|(_, d)| *d).collect()
    };
    let rating = active.capability_rating;
    let mut ratings: Vec<u8> = candidates
        .iter()
        .map(|(_, d)| d.capability_rating)
        .collect();
    ratings.sort_unstable();
    ratings.dedup();
    let mut higher = ratings.iter().copied().filter(|r| *r > rating).peekable();
    let mut lower = ratings
        .iter()
        .rev()
        .copied()
        .filter(|r| *r < rating)
        .peekable();
    let mut out = at(rating);
    loop {
        let next = match (higher.peek().copied(), lower.peek().copied()) {
            (Some(h), Some(l)) if h - rating <= rating - l => higher.next(),
            (Some(_) | None, Some(_)) => lower.next(),
            (Some(_), None) => higher.next(),
            (None, None) => break,
        };
        if let Some(r) = next {
            out.extend(at(r));
        }
    }
    out
}

/// The ordered route attempts after the route `failed` (`(provider, id)`) of the logical model
/// `active` failed: `active`'s other providers, then the other ordinary models in
/// [`model_order`]. The failed pair is never entered again.
pub fn ordinary_recovery(
    policy: &RoutingPolicy,
    active: &LogicalModel,
    failed: (&str, &str),
    remembered: &Remembered,
) -> Vec<RouteAttempt> {
    let mut visited = vec![(failed.0.to_owned(), failed.1.to_owned())];
    let mut out = Vec::new();
    push_routes(active, active.effort, remembered, &mut visited, &mut out);
    for model in model_order(policy, active) {
        push_routes(model, model.effort, remembered, &mut visited, &mut out);
    }
    out
}

/// The whole ordinary plan of an action on `active`: its initial route, then the recovery
/// order if that route fails.
pub fn ordinary_plan(
    policy: &RoutingPolicy,
    active: &LogicalModel,
    remembered: &Remembered,
) -> Vec<RouteAttempt> {
    let Some(first) = initial_route(active, remembered) else {
        return Vec::new();
    };
    let rest = ordinary_recovery(policy, active, (&first.provider, &first.id), remembered);
    std::iter::once(first).chain(rest).collect()
}

/// Compression routes from entry `start` on, in configured entry order, each entry at its own
/// compression effort (a remembered later entry as `start` excludes the earlier ones).
pub fn compressor_plan(
    policy: &RoutingPolicy,
    start: usize,
    remembered: &Remembered,
) -> Vec<RouteAttempt> {
    compression(policy, start, Vec::new(), remembered)
}

/// The compression attempts after the route `failed` of compressor entry `entry` failed: the
/// entry's other providers, then the later entries. Never backward, never wrapping.
pub fn compressor_recovery(
    policy: &RoutingPolicy,
    entry: usize,
    failed: (&str, &str),
    remembered: &Remembered,
) -> Vec<RouteAttempt> {
    let visited = vec![(failed.0.to_owned(), failed.1.to_owned())];
    compression(policy, entry, visited, remembered)
}

fn compression(
    policy: &RoutingPolicy,
    start: usize,
    mut visited: Vec<(String, String)>,
    remembered: &Remembered,
) -> Vec<RouteAttempt> {
    let mut out = Vec::new();
    for entry in policy.compressor.iter().skip(start) {
        if let Some(model) = policy.definition(&entry.model) {
            push_routes(model, entry.effort, remembered, &mut visited, &mut out);
        }
    }
    out
}

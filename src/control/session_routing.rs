//! The routing state of one coordinator session: the routing report loaded when the session
//! started, the admission counter that orders logical actions, and the session's remembered
//! successful providers ([`SessionPreferences`]).
//!
//! Resolution borrows a [`LogicalContext`] while the lock is held and reserves one admission
//! number per task of the call. Publication watches the session's registry events: a
//! generation that settled without error publishes the provider of its latest accepted route
//! for that route's logical model; failure, cancellation and any other end publish nothing.
//! Admission order, not finish order, decides which success wins.
//!
//! The session also keeps what its host pi last reported of its own model registry
//! ([`HostModel`], `routingFacts`): only pi knows which `provider/id` pairs it has and which
//! of them have credentials, and `slate effective --parent` words what that means for routing.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::core::{ChildSnapshot, LogicalSnapshot, Status};
use crate::policy::logical::LogicalContext;
use crate::policy::recovery::{ActionOutcome, Admission, Remembered, SessionPreferences};
use crate::policy::routing::RoutingReport;
use crate::runtime::{RuntimeEvent, RuntimeHandle};

#[derive(Debug)]
struct Inner {
    /// `None` when the routing files could not even be located (no agent dir).
    report: Option<RoutingReport>,
    prefs: SessionPreferences,
    next_admission: Admission,
    /// What the host pi last reported of its model registry (`None` until it does).
    host_models: Option<Vec<HostModel>>,
}

/// One model in the host pi's registry, as pi reports it: `provider/id`, and whether pi has
/// credentials for it (`ModelRegistry.hasConfiguredAuth`).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct HostModel {
    pub provider: String,
    pub id: String,
    pub credentials: bool,
}

/// At most this many models in one report (pi's whole catalog is a few hundred).
pub const HOST_MODELS_MAX: usize = 20_000;

/// `routingFacts` (operator-only): with `hostModels`, the host pi's registry replaces the
/// session's last report first; either way, the session's routing facts are answered.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct RoutingFactsParams {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub host_models: Option<Vec<HostModel>>,
}

/// What a running session knows about routing that the files do not say.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct RoutingFacts {
    /// The session's remembered successful providers, logical model → provider.
    pub remembered_providers: BTreeMap<String, String>,
    /// The host pi's registry as last reported; `null` when no host reported one.
    pub host_models: Option<Vec<HostModel>>,
}

/// Shared by every surface that resolves delegations in this session.
#[derive(Debug)]
pub struct SessionRouting {
    inner: Mutex<Inner>,
}

/// How a generation in `status` ended, for publication (`None` while it has not ended).
pub fn outcome(status: Status, failed: bool) -> Option<ActionOutcome> {
    match status {
        Status::Settled if !failed => Some(ActionOutcome::Ok),
        Status::Settled | Status::Failed => Some(ActionOutcome::Failed),
        Status::Cancelled => Some(ActionOutcome::Cancelled),
        Status::Queued
        | Status::Setup
        | Status::Running
        | Status::Pausing
        | Status::Paused
        | Status::Draining => None,
    }
}

impl SessionRouting {
    pub fn new(report: Option<RoutingReport>) -> Arc<Self> {
        Arc::new(Self {
            inner: Mutex::new(Inner {
                report,
                prefs: SessionPreferences::new(),
                next_admission: 1,
                host_models: None,
            }),
        })
    }

    fn lock(&self) -> MutexGuard<'_, Inner> {
        // The state stays consistent even if a holder panicked: every update is one assignment.
        self.inner.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Run `f` with the logical context of a call of `tasks` tasks, reserving their
    /// admission numbers.
    pub fn with_context<R>(
        &self,
        tasks: usize,
        f: impl FnOnce(Option<LogicalContext<'_>>) -> R,
    ) -> R {
        let mut inner = self.lock();
        let first = inner.next_admission;
        inner.next_admission = first.saturating_add(u64::try_from(tasks).unwrap_or(u64::MAX));
        let remembered: Remembered = inner.prefs.remembered();
        let Some(report) = inner.report.as_ref() else {
            return f(None);
        };
        f(Some(LogicalContext {
            policy: report.policy.as_ref().filter(|_| !report.blocked),
            blocking_errors: report.errors.len(),
            remembered: &remembered,
            first_admission: first,
        }))
    }

    /// The session's `workerExtensions` patterns (none without a routing report).
    pub fn worker_extensions(&self) -> Vec<String> {
        self.lock()
            .report
            .as_ref()
            .map(|r| r.worker_extensions.clone())
            .unwrap_or_default()
    }

    /// Publish what a finished generation proves: only a settled one without error publishes.
    /// Returns whether the remembered provider changed.
    pub fn observe(&self, snapshot: &ChildSnapshot) -> bool {
        match (
            &snapshot.logical,
            outcome(snapshot.status, snapshot.error.is_some()),
        ) {
            (Some(action), Some(outcome)) => self.publish(action, outcome),
            _ => false,
        }
    }

    /// Publish the latest accepted route of `action` for an action that ended with `outcome`.
    pub fn publish(&self, action: &LogicalSnapshot, outcome: ActionOutcome) -> bool {
        self.lock().prefs.publish_provider(
            action.admission,
            outcome,
            &action.route_model,
            &action.route_provider,
        )
    }

    /// The session's remembered successful providers, logical model → provider.
    pub fn remembered(&self) -> Remembered {
        self.lock().prefs.remembered()
    }

    /// `routingFacts`: keep `host_models` when given (the newest report wins), then the facts.
    pub fn facts(&self, host_models: Option<Vec<HostModel>>) -> RoutingFacts {
        let mut inner = self.lock();
        if let Some(models) = host_models {
            inner.host_models = Some(models);
        }
        RoutingFacts {
            remembered_providers: inner.prefs.remembered(),
            host_models: inner.host_models.clone(),
        }
    }

    /// Watch `rt`'s registry events and publish from every finished logical generation, until
    /// the runtime shuts down.
    pub fn watch(self: &Arc<Self>, rt: &RuntimeHandle) {
        let mut events = rt.subscribe();
        let this = Arc::clone(self);
        tokio::spawn(async move {
            loop {
                match events.recv().await {
                    Ok(RuntimeEvent::Registry(e)) => {
                        this.observe(&e.child);
                    }
                    Ok(RuntimeEvent::Outcome(_))
                    | Err(tokio::sync::broadcast::error::RecvError::Lagged(_)) => {}
                    Ok(RuntimeEvent::ShutdownComplete)
                    | Err(tokio::sync::broadcast::error::RecvError::Closed) => break,
                }
            }
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn action(admission: u64, provider: &str) -> LogicalSnapshot {
        LogicalSnapshot {
            model: "duo".into(),
            reason: "fits".into(),
            admission,
            route_model: "duo".into(),
            route_provider: provider.into(),
            switches: 0,
        }
    }

    fn remembered(routing: &SessionRouting) -> Option<String> {
        routing.remembered().get("duo").cloned()
    }

    #[test]
    fn only_a_settled_generation_without_error_is_a_success() {
        assert_eq!(outcome(Status::Settled, false), Some(ActionOutcome::Ok));
        assert_eq!(outcome(Status::Settled, true), Some(ActionOutcome::Failed));
        assert_eq!(outcome(Status::Failed, true), Some(ActionOutcome::Failed));
        assert_eq!(
            outcome(Status::Cancelled, false),
            Some(ActionOutcome::Cancelled)
        );
        for live in [
            Status::Queued,
            Status::Running,
            Status::Paused,
            Status::Draining,
        ] {
            assert_eq!(outcome(live, false), None);
        }
    }

    #[test]
    fn failure_cancellation_and_unknown_publish_nothing() {
        let routing = SessionRouting::new(None);
        for failed in [
            ActionOutcome::Failed,
            ActionOutcome::Cancelled,
            ActionOutcome::Interrupted,
            ActionOutcome::Unknown,
        ] {
            assert!(!routing.publish(&action(1, "alpha"), failed));
        }
        assert_eq!(remembered(&routing), None);
    }

    #[test]
    fn a_later_started_success_wins_whatever_order_they_finish_in() {
        let routing = SessionRouting::new(None);
        assert!(routing.publish(&action(2, "beta"), ActionOutcome::Ok));
        // Admitted earlier, finished later: stale.
        assert!(!routing.publish(&action(1, "alpha"), ActionOutcome::Ok));
        assert_eq!(remembered(&routing).as_deref(), Some("beta"));
        assert!(routing.publish(&action(3, "alpha"), ActionOutcome::Ok));
        assert_eq!(remembered(&routing).as_deref(), Some("alpha"));
    }

    #[test]
    fn each_call_reserves_one_admission_per_task() {
        let routing = SessionRouting::new(None);
        let first = routing.with_context(3, |ctx| ctx.map(|c| c.first_admission));
        assert_eq!(first, None, "no routing report: no logical context");
        let report = crate::policy::routing::resolve(
            &crate::policy::routing::SlateFile::absent("home"),
            &crate::policy::routing::ProjectFile::Absent,
        );
        let routing = SessionRouting::new(Some(report));
        let a = routing.with_context(3, |ctx| ctx.map(|c| c.first_admission));
        let b = routing.with_context(1, |ctx| ctx.map(|c| c.first_admission));
        assert_eq!((a, b), (Some(1), Some(4)));
    }
}

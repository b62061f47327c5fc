//! The routing state of one coordinator session: the routing report loaded when the session
//! started, the admission counter that orders logical actions, and the session's remembered
//! successful providers ([`SessionPreferences`]).
//!
//! Resolution borrows a [`LogicalContext`] while the lock is held and reserves one admission
//! number per task of the call. Publication watches the session's registry events: a
//! generation that settled without error publishes the provider of its latest accepted route
//! for that route's logical model; failure, cancellation and any other end publish nothing.
//! Admission order, not finish order, decides which success wins.

use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use crate::core::{ChildSnapshot, Status};
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
}

/// Shared by every surface that resolves delegations in this session.
#[derive(Debug)]
pub struct SessionRouting {
    inner: Mutex<Inner>,
}

impl SessionRouting {
    pub fn new(report: Option<RoutingReport>) -> Arc<Self> {
        Arc::new(Self {
            inner: Mutex::new(Inner {
                report,
                prefs: SessionPreferences::new(),
                next_admission: 1,
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

    /// Publish what a finished generation proves: only a settled one without error publishes.
    /// Returns whether the remembered provider changed.
    pub fn observe(&self, snapshot: &ChildSnapshot) -> bool {
        let Some(action) = &snapshot.logical else {
            return false;
        };
        let outcome = match snapshot.status {
            Status::Settled if snapshot.error.is_none() => ActionOutcome::Ok,
            Status::Settled | Status::Failed => ActionOutcome::Failed,
            Status::Cancelled => ActionOutcome::Cancelled,
            Status::Queued
            | Status::Setup
            | Status::Running
            | Status::Pausing
            | Status::Paused
            | Status::Draining => return false,
        };
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

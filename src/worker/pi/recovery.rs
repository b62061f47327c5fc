//! Route recovery of one logical-model worker (spec 002 "Common recovery"), sans IO.
//!
//! The plan comes with the task (`TaskSpec.logical.routes`: the first route, then the pure
//! recovery order). When a prompt settles with an error, [`RouteRecovery::on_failure`]
//! classifies it with `policy::recovery`: only a connection, timeout, rate-limit or server
//! failure after pi's known retry exhaustion begins a transition; authentication, billing and
//! context-window failures end the action; cancellation and unknown exhaustion stop it
//! visibly. A transition switches the SAME pi process: `set_model` to the next route, then
//! `set_thinking_level` when the effort differs. A route pi refuses (unknown model, no
//! credentials) is passed over for the next one. Once pi accepts the switch the driver sends
//! [`CONTINUATION`] as a new prompt: pi keeps the session (completed tool calls and their
//! results stay in the history and are not executed again).

use std::collections::VecDeque;

use crate::core::task::{LogicalAction, ModelSelection, PlannedRoute};
use crate::policy::recovery::{Exhaustion, RecoveryDecision, classify_message, decide};
use crate::worker::pi::mapper::Sent;

/// The prompt that continues the work after a route switch. pi 1.6's RPC has no command that
/// continues a session without a new user message, so recovery costs this one short message
/// (and the request that carries it).
pub const CONTINUATION: &str = "The previous model request failed, and Slate switched you to \
another model. Continue the task from where it stopped. Tool calls that already completed \
have their results above: do not repeat them.";

/// What the driver does next.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Step {
    /// Write this switch command and wait for its response.
    Send(Sent),
    /// pi accepted `route`: report it and send [`CONTINUATION`].
    Continue(PlannedRoute),
    /// No recovery: the prompt settles with this error.
    Settle(String),
}

#[derive(Clone, Debug, PartialEq, Eq)]
enum Phase {
    Idle,
    /// Waiting for `set_model` of this route (and then maybe `set_thinking_level`).
    Model(PlannedRoute),
    Effort(PlannedRoute),
}

/// The recovery state of one worker.
#[derive(Clone, Debug)]
pub struct RouteRecovery {
    remaining: VecDeque<PlannedRoute>,
    current: PlannedRoute,
    phase: Phase,
    /// The failure that began the transition (reported if no route takes over).
    failure: String,
    /// Routes pi refused during this transition, with pi's reason.
    refused: Vec<String>,
}

impl RouteRecovery {
    /// `None` for an exact selection (never falls back) or an empty plan. `current` is the
    /// route the worker starts on: the first of the plan, or — for a resumed window — the
    /// latest accepted one, whose earlier routes count as visited.
    pub fn new(action: Option<&LogicalAction>, current: Option<&ModelSelection>) -> Option<Self> {
        let mut routes: VecDeque<PlannedRoute> = action?.routes.iter().cloned().collect();
        if let Some(at) = current.and_then(|c| routes.iter().position(|r| &r.selection == c)) {
            routes.drain(..at);
        }
        let current = routes.pop_front()?;
        Some(Self {
            remaining: routes,
            current,
            phase: Phase::Idle,
            failure: String::new(),
            refused: Vec::new(),
        })
    }

    /// Whether a switch is under way (the prompt has failed, the next has not started).
    pub fn switching(&self) -> bool {
        self.phase != Phase::Idle
    }

    /// The prompt settled with `error`. `cancelled` when it was aborted (by pi or Slate);
    /// `retries_ended` false when pi started a retry and never reported its end.
    pub fn on_failure(&mut self, error: String, cancelled: bool, retries_ended: bool) -> Step {
        let exhaustion = if retries_ended {
            Exhaustion::Known
        } else {
            Exhaustion::Unknown
        };
        let kind = if cancelled {
            crate::policy::recovery::FailureKind::Cancelled
        } else {
            classify_message(&error)
        };
        match decide(kind, exhaustion) {
            RecoveryDecision::Recover => {
                self.failure = error;
                self.refused.clear();
                self.next_route()
            }
            RecoveryDecision::Fail => Step::Settle(error),
            RecoveryDecision::Stop if cancelled => Step::Settle(error),
            RecoveryDecision::Stop => Step::Settle(format!(
                "{error} (recovery stopped: the failure is {} with {} exhaustion evidence)",
                kind_name(kind),
                match exhaustion {
                    Exhaustion::Known => "known",
                    Exhaustion::Unknown => "unknown",
                }
            )),
        }
    }

    fn next_route(&mut self) -> Step {
        let Some(route) = self.remaining.pop_front() else {
            self.phase = Phase::Idle;
            let mut error = format!(
                "{} (recovery exhausted every route of the plan",
                self.failure
            );
            if !self.refused.is_empty() {
                error.push_str("; pi refused: ");
                error.push_str(&self.refused.join("; "));
            }
            error.push(')');
            return Step::Settle(error);
        };
        let sent = Sent::SetModel {
            provider: route.selection.provider.clone(),
            id: route.selection.id.clone(),
        };
        self.phase = Phase::Model(route);
        Step::Send(sent)
    }

    /// pi answered the pending switch command.
    pub fn on_switched(&mut self, result: Result<(), String>) -> Step {
        let phase = std::mem::replace(&mut self.phase, Phase::Idle);
        match (phase, result) {
            (Phase::Idle, _) => Step::Settle(self.failure.clone()),
            (Phase::Model(route) | Phase::Effort(route), Err(e)) => {
                self.refused.push(format!(
                    "{}/{}: {e}",
                    route.selection.provider, route.selection.id
                ));
                self.next_route()
            }
            (Phase::Model(route), Ok(()))
                if route.selection.effort != self.current.selection.effort =>
            {
                let level = route
                    .selection
                    .effort
                    .clone()
                    .unwrap_or_else(|| "off".to_owned());
                self.phase = Phase::Effort(route);
                Step::Send(Sent::SetThinkingLevel { level })
            }
            (Phase::Model(route) | Phase::Effort(route), Ok(())) => {
                self.current = route.clone();
                Step::Continue(route)
            }
        }
    }

    /// Slate aborted while a switch was under way: the prompt settles with the failure.
    pub fn cancel(&mut self) -> Option<String> {
        self.switching().then(|| {
            self.phase = Phase::Idle;
            format!("{} (recovery cancelled)", self.failure)
        })
    }
}

fn kind_name(kind: crate::policy::recovery::FailureKind) -> &'static str {
    use crate::policy::recovery::FailureKind as K;
    match kind {
        K::Connection => "a connection failure",
        K::Timeout => "a timeout",
        K::RateLimit => "a rate limit",
        K::Server => "a server failure",
        K::Authentication => "an authentication failure",
        K::Billing => "a billing failure",
        K::ContextWindow => "a context-window failure",
        K::Cancelled => "a cancellation",
        K::Unknown => "of an unknown kind",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn route(logical: &str, provider: &str, id: &str, effort: &str) -> PlannedRoute {
        PlannedRoute {
            logical: logical.into(),
            selection: ModelSelection {
                provider: provider.into(),
                id: id.into(),
                effort: Some(effort.into()),
            },
        }
    }

    fn plan(routes: Vec<PlannedRoute>) -> RouteRecovery {
        RouteRecovery::new(
            Some(&LogicalAction {
                model: "m".into(),
                reason: "r".into(),
                admission: 1,
                routes,
            }),
            None,
        )
        .expect("a plan")
    }

    #[test]
    fn a_server_failure_after_known_exhaustion_switches_to_the_next_route() {
        let mut r = plan(vec![
            route("m", "a", "x", "high"),
            route("m", "b", "y", "high"),
        ]);
        assert_eq!(
            r.on_failure("500: boom".into(), false, true),
            Step::Send(Sent::SetModel {
                provider: "b".into(),
                id: "y".into()
            })
        );
        assert!(r.switching());
        assert_eq!(
            r.on_switched(Ok(())),
            Step::Continue(route("m", "b", "y", "high"))
        );
        assert!(!r.switching());
    }

    #[test]
    fn a_different_effort_also_sets_the_thinking_level() {
        let mut r = plan(vec![
            route("m", "a", "x", "high"),
            route("n", "b", "y", "low"),
        ]);
        r.on_failure("503 service unavailable".into(), false, true);
        assert_eq!(
            r.on_switched(Ok(())),
            Step::Send(Sent::SetThinkingLevel {
                level: "low".into()
            })
        );
        assert_eq!(
            r.on_switched(Ok(())),
            Step::Continue(route("n", "b", "y", "low"))
        );
    }

    #[test]
    fn a_refused_route_is_passed_over_and_named_when_nothing_is_left() {
        let mut r = plan(vec![
            route("m", "a", "x", "high"),
            route("m", "b", "y", "high"),
        ]);
        r.on_failure("429 rate limit".into(), false, true);
        let Step::Settle(error) = r.on_switched(Err("Model not found: b/y".into())) else {
            panic!("settles")
        };
        assert!(
            error.starts_with("429 rate limit (recovery exhausted"),
            "{error}"
        );
        assert!(error.contains("b/y: Model not found"), "{error}");
    }

    #[test]
    fn auth_billing_and_context_failures_never_recover() {
        for error in [
            "401 unauthorized",
            "insufficient_quota",
            "prompt is too long",
        ] {
            let mut r = plan(vec![
                route("m", "a", "x", "high"),
                route("m", "b", "y", "high"),
            ]);
            assert_eq!(
                r.on_failure(error.into(), false, true),
                Step::Settle(error.into())
            );
        }
    }

    #[test]
    fn cancellation_and_unknown_exhaustion_stop_visibly() {
        let mut r = plan(vec![
            route("m", "a", "x", "high"),
            route("m", "b", "y", "high"),
        ]);
        assert_eq!(
            r.on_failure("Request was aborted".into(), true, true),
            Step::Settle("Request was aborted".into())
        );
        let Step::Settle(error) = r.on_failure("500: boom".into(), false, false) else {
            panic!("settles")
        };
        assert!(error.contains("unknown exhaustion"), "{error}");
        let Step::Settle(error) = r.on_failure("something odd".into(), false, true) else {
            panic!("settles")
        };
        assert!(error.contains("recovery stopped"), "{error}");
    }

    #[test]
    fn an_exact_selection_has_no_recovery() {
        assert!(RouteRecovery::new(None, None).is_none());
    }

    #[test]
    fn a_resumed_window_starts_after_its_latest_accepted_route() {
        let routes = vec![
            route("m", "a", "x", "high"),
            route("m", "b", "y", "high"),
            route("n", "c", "z", "low"),
        ];
        let action = LogicalAction {
            model: "m".into(),
            reason: "r".into(),
            admission: 1,
            routes,
        };
        let mut r =
            RouteRecovery::new(Some(&action), Some(&route("m", "b", "y", "high").selection))
                .expect("a plan");
        assert_eq!(
            r.on_failure("500: boom".into(), false, true),
            Step::Send(Sent::SetModel {
                provider: "c".into(),
                id: "z".into()
            })
        );
    }

    #[test]
    fn a_cancel_during_a_switch_settles_with_the_failure() {
        let mut r = plan(vec![
            route("m", "a", "x", "high"),
            route("m", "b", "y", "high"),
        ]);
        r.on_failure("500: boom".into(), false, true);
        assert_eq!(
            r.cancel().as_deref(),
            Some("500: boom (recovery cancelled)")
        );
        assert_eq!(r.cancel(), None);
    }
}

//! The dispatch guard: whether one model request, compaction or tool execution may start.
//!
//! One decision, one wording, for both ways a worker reports dispatches: the simulated
//! worker's `RequestStart` / `ToolStart` events (it has no way to hear the answer, so a denial
//! only commits what it commits) and a pi worker extension's `guard` request, asked before the
//! request is forwarded or the tool runs ([Limit outcomes and cancellation]: "Request guards
//! check before forwarding"; tool guards count entered executions). A denial counts nothing;
//! the first request or tool over its limit commits that hard limit (the first committed
//! reason is kept) and cancels the subtree, exactly as the events always did.
//!
//! Every denial reason starts with `out of budget:` so pi never takes it for a transient
//! failure to retry.

use crate::core::bounds::ACTIVITY_CHARS;
use crate::core::coordinator::Coordinator;
use crate::core::effect::Reply;
use crate::core::ids::{ChildRef, RequestId};
use crate::core::input::GuardKind;
use crate::core::lifecycle::{CancelCause, LimitReason, PauseReason};
use crate::core::refusal::Refusal;
use crate::core::registry::Intent;
use crate::core::task::Limits;
use crate::core::worker_events::clip_owned;

impl Coordinator {
    /// `Input::Guard`: the decision for a live worker, a denial for one whose window ended.
    pub(crate) fn guard(&mut self, request: RequestId, child: ChildRef, kind: GuardKind) {
        let result = match self.reg.generation(child) {
            None => Err(Refusal::UnknownIdentity(child)),
            Some(g) if !g.worker.live() => Ok(Err(format!(
                "out of budget: {child} has no running window; no new {}",
                noun(&kind)
            ))),
            Some(_) => Ok(self.dispatch_guard(child, kind)),
        };
        let reply = result.map(|decision| match decision {
            Ok(()) => Reply::Guard {
                allow: true,
                reason: None,
            },
            Err(reason) => Reply::Guard {
                allow: false,
                reason: Some(reason),
            },
        });
        self.reply(request, reply);
    }

    /// May `kind` start for the live worker of `r`? `Ok` counts it (a request or compaction
    /// in `telemetry.requests`, a tool in `toolCalls` with its activity line); `Err` is the
    /// model-facing reason and counts nothing. Denied: a resolved prompt, a committed intent
    /// (stop, pause, limit), or the limit itself — the first dispatch over it commits it.
    pub(crate) fn dispatch_guard(&mut self, r: ChildRef, kind: GuardKind) -> Result<(), String> {
        let g = self.gen_ref(r);
        if g.worker.settled {
            return Err(format!(
                "out of budget: this generation's prompt has resolved; no new {}",
                noun(&kind)
            ));
        }
        if let Some(intent) = g.intent {
            return Err(intent_denial(intent, &g.snap.limits, &kind));
        }
        match kind {
            GuardKind::Request | GuardKind::Compaction => {
                let used = g.snap.telemetry.requests.unwrap_or(0);
                let limit = g.snap.limits.requests;
                if used >= limit {
                    self.commit_limit(r, LimitReason::Requests);
                    return Err(limit_denial(LimitReason::Requests, limit));
                }
                self.gen_mut(r).snap.telemetry.requests = Some(used + 1);
            }
            GuardKind::Tool { name } => {
                let limit = g.snap.limits.tools;
                if g.snap.tool_calls >= limit {
                    self.commit_limit(r, LimitReason::Tools);
                    return Err(limit_denial(LimitReason::Tools, limit));
                }
                self.gen_mut(r).snap.tool_calls += 1;
                self.tool_activity(r, name);
            }
        }
        Ok(())
    }

    /// `"{name} …"` as the newest activity, reusing the name's allocation.
    pub(crate) fn tool_activity(&mut self, r: ChildRef, name: String) {
        let mut line = name;
        line.push_str(" …");
        self.gen_mut(r).snap.activity = Some(clip_owned(line, ACTIVITY_CHARS));
    }
}

/// What a denial refuses, in its reason.
fn noun(kind: &GuardKind) -> &'static str {
    match kind {
        GuardKind::Request => "model requests",
        GuardKind::Compaction => "compactions",
        GuardKind::Tool { .. } => "tool calls",
    }
}

fn limit_denial(reason: LimitReason, limit: u32) -> String {
    match reason {
        LimitReason::Requests => format!("out of budget: request limit of {limit} reached"),
        LimitReason::Tools => format!("out of budget: tool limit of {limit} reached"),
    }
}

/// The committed intent, as the reason a dispatch is denied.
fn intent_denial(intent: Intent, limits: &Limits, kind: &GuardKind) -> String {
    let noun = noun(kind);
    match intent {
        Intent::Cancel(CancelCause::Limit(reason)) => {
            let limit = match reason {
                LimitReason::Requests => limits.requests,
                LimitReason::Tools => limits.tools,
            };
            limit_denial(reason, limit)
        }
        Intent::Cancel(cause) => format!(
            "out of budget: this generation is stopping ({}); no new {noun}",
            cause.explanation(limits)
        ),
        Intent::Pause(reason) => {
            let why = match reason {
                PauseReason::Deadline => "its window deadline passed",
                PauseReason::AncestorDeadline => "an ancestor's window deadline passed",
            };
            format!("out of budget: this generation is pausing ({why}); no new {noun}")
        }
    }
}

//! Structured-result submissions ([Required structured results]): one `submit_result`
//! attempt, already validated against the generation's `resultSchema` by policy, recorded
//! with the contract's rules. Attempts count validated values only; the first valid one is
//! immutable; a duplicate changes nothing and is not an attempt; a resolved prompt accepts
//! nothing more. Both the simulated worker's `Submission` event and a pi worker's `submit`
//! request come here; only the request hears the answer.

use std::fmt::Write as _;

use serde::{Deserialize, Serialize};

use crate::core::bounds::SUBMISSION_ERRORS;
use crate::core::coordinator::Coordinator;
use crate::core::effect::Reply;
use crate::core::ids::{ChildRef, RequestId};
use crate::core::refusal::Refusal;
use crate::core::snapshot::Validation;

/// What became of one attempt.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum SubmitStatus {
    /// The value passed validation and is now the generation's structured result (which
    /// is not task success).
    Submitted,
    /// It failed validation; it may be corrected and submitted again.
    Invalid,
    /// A valid value was accepted before; nothing changed and no attempt was counted.
    Duplicate,
}

/// The recorded attempt: its status, the attempts so far and the errors of this attempt.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Receipt {
    pub status: SubmitStatus,
    pub attempts: u32,
    pub errors: Vec<String>,
}

impl Receipt {
    /// As the reply to `submit`, with the model-facing message.
    fn into_reply(self) -> Reply {
        let message = self.message();
        Reply::Submit {
            status: self.status,
            attempts: self.attempts,
            errors: self.errors,
            message,
        }
    }

    /// What the model is told (the `submit_result` tool's output).
    fn message(&self) -> String {
        match self.status {
            SubmitStatus::Submitted => format!(
                "submitted: attempt {} is valid against the resultSchema and is now the final structured result; it cannot be replaced. Continue to your final answer.",
                self.attempts
            ),
            SubmitStatus::Duplicate => format!(
                "duplicate: a valid result was already submitted and cannot be replaced; this call changed nothing and is not an attempt ({} so far).",
                self.attempts
            ),
            SubmitStatus::Invalid => {
                let n = self.errors.len();
                let mut message = format!(
                    "invalid: attempt {} does not match the resultSchema ({n} {}, each a JSON Pointer into the value):",
                    self.attempts,
                    if n == 1 { "error" } else { "errors" },
                );
                for error in &self.errors {
                    let _ = write!(message, "\n{error}");
                }
                message.push_str(
                    "\nCorrect the value and call submit_result again. Each attempt counts against the remaining request, tool and deadline limits; no extra budget is given.",
                );
                message
            }
        }
    }
}

impl Coordinator {
    /// `Input::Submit`: record the attempt and answer with its receipt.
    pub(crate) fn submit(
        &mut self,
        request: RequestId,
        child: ChildRef,
        value: serde_json::Value,
        errors: Vec<String>,
    ) {
        let result = self
            .record_submission(child, value, errors)
            .map(Receipt::into_reply);
        self.reply(request, result);
    }

    /// One attempt of `r`, `errors` empty when `value` is valid. Refused (changing nothing)
    /// for an unknown generation, one without a `resultSchema`, and one whose prompt has
    /// resolved or whose worker is gone (a late submission cannot change a decided outcome).
    pub(crate) fn record_submission(
        &mut self,
        r: ChildRef,
        value: serde_json::Value,
        errors: Vec<String>,
    ) -> Result<Receipt, Refusal> {
        let g = self.reg.generation(r).ok_or(Refusal::UnknownIdentity(r))?;
        let Some(outcome) = &g.snap.outcome else {
            return Err(Refusal::NoResultSchema { actor: r });
        };
        if !g.worker.live() || g.worker.settled || outcome.finalized {
            return Err(Refusal::ActorEnded {
                action: "submit",
                actor: r,
            });
        }
        // The first valid submission is immutable; duplicates are not attempts.
        if outcome.validation == Validation::Submitted {
            return Ok(Receipt {
                status: SubmitStatus::Duplicate,
                attempts: outcome.attempts,
                errors: Vec::new(),
            });
        }
        let g = self.gen_mut(r);
        let Some(outcome) = g.snap.outcome.as_mut() else {
            unreachable!("checked above: {r} has an outcome");
        };
        outcome.attempts += 1;
        let status = if errors.is_empty() {
            outcome.validation = Validation::Submitted;
            outcome.errors.clear();
            outcome.value = Some(value);
            SubmitStatus::Submitted
        } else {
            outcome.validation = Validation::Invalid;
            outcome.errors = errors.into_iter().take(SUBMISSION_ERRORS).collect();
            SubmitStatus::Invalid
        };
        Ok(Receipt {
            status,
            attempts: outcome.attempts,
            errors: outcome.errors.clone(),
        })
    }
}

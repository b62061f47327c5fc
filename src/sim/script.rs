//! What a simulated worker does, step by step.

use serde::{Deserialize, Serialize};

use crate::core::{Millis, Tokens, Usage, WorkerEvent};

/// One scripted worker run.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct Script {
    /// Fail setup with this error instead of starting.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub setup_error: Option<String>,
    pub steps: Vec<Step>,
}

/// One step. Time is virtual milliseconds.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(
    rename_all = "camelCase",
    rename_all_fields = "camelCase",
    deny_unknown_fields
)]
pub enum Step {
    /// Nothing visible happens for a while.
    Think(Millis),
    /// One model request that streams for `ms` and ends with `text` and usage.
    Request {
        ms: Millis,
        text: String,
        input_tokens: u64,
        output_tokens: u64,
        cost: Option<f64>,
    },
    /// One tool execution.
    Tool {
        name: String,
        ms: Millis,
        error: bool,
        /// The call's arguments, as recorded in the transcript (`{}` when absent).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        args: Option<serde_json::Value>,
        /// The tool's result text, as recorded in the transcript.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        output: Option<String>,
    },
    Progress(String),
    /// One `submit_result` attempt (errors empty = valid).
    Submit {
        value: serde_json::Value,
        errors: Vec<String>,
    },
    /// The prompt resolves with a provider error.
    Fail(String),
    /// The process dies without resolving its prompt.
    Crash,
    /// The worker stops responding and ignores abort.
    Hang,
}

impl Step {
    /// The events this step produces, with offsets from its start, and its duration.
    pub fn expand(&self) -> (Vec<(Millis, WorkerEvent)>, Millis) {
        match self {
            Step::Think(ms) => (Vec::new(), *ms),
            Step::Request {
                ms,
                text,
                input_tokens,
                output_tokens,
                cost,
            } => (
                vec![
                    (0, WorkerEvent::RequestStart),
                    (
                        *ms,
                        WorkerEvent::AssistantMessage {
                            text: text.clone(),
                            usage: Some(Usage {
                                tokens: Tokens {
                                    input: *input_tokens,
                                    output: *output_tokens,
                                    cache_read: 0,
                                    cache_write: 0,
                                    total: input_tokens + output_tokens,
                                },
                                cost: *cost,
                            }),
                        },
                    ),
                ],
                *ms,
            ),
            Step::Tool {
                name, ms, error, ..
            } => (
                vec![
                    (0, WorkerEvent::ToolStart { name: name.clone() }),
                    (
                        *ms,
                        WorkerEvent::ToolEnd {
                            name: name.clone(),
                            is_error: *error,
                        },
                    ),
                ],
                *ms,
            ),
            Step::Progress(text) => (vec![(0, WorkerEvent::Progress(text.clone()))], 1),
            Step::Submit { value, errors } => (
                vec![(
                    0,
                    WorkerEvent::Submission {
                        value: value.clone(),
                        errors: errors.clone(),
                    },
                )],
                1,
            ),
            Step::Fail(error) => (
                vec![(
                    0,
                    WorkerEvent::Settled {
                        error: Some(error.clone()),
                    },
                )],
                0,
            ),
            Step::Crash => (
                vec![(
                    0,
                    WorkerEvent::Exited {
                        reason: "signal 9".to_owned(),
                    },
                )],
                0,
            ),
            Step::Hang => (Vec::new(), 0),
        }
    }
}

impl Script {
    /// `n` request/tool rounds followed by a final answer.
    pub fn rounds(n: usize, text: &str) -> Script {
        let mut steps = Vec::new();
        for i in 0..n {
            steps.push(Step::Request {
                ms: 120,
                text: format!("Looking at part {}", i + 1),
                input_tokens: 900,
                output_tokens: 60,
                cost: Some(0.0011),
            });
            steps.push(Step::Tool {
                name: "read".to_owned(),
                ms: 30,
                error: false,
                args: None,
                output: None,
            });
        }
        steps.push(Step::Request {
            ms: 200,
            text: text.to_owned(),
            input_tokens: 1400,
            output_tokens: 180,
            cost: Some(0.0024),
        });
        Script {
            setup_error: None,
            steps,
        }
    }
}

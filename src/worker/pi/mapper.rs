//! `PiMapper`: a sans-IO state machine that turns pi's stdout lines into Slate worker events.
//!
//! The runtime tells it every command it wrote ([`PiMapper::sent`], with the command's string
//! id) and hands it every stdout line ([`PiMapper::line`]); it returns [`Output`]s. No clock,
//! no IO, no panics: a line that is not a pi record becomes [`Output::Evidence`] and mapping
//! goes on.
//!
//! # Mapping (pi 1.6, checked against every trace in `shared/pi/traces`)
//!
//! | pi record | output |
//! | --- | --- |
//! | assistant `message_start` | `AssistantStart` (the message streams from the start; **not counted**) — also for each retry, which starts a new low-level run without a user message. **Not** when the message starts already `aborted`: pi then adds an empty turn after an abort that caught a tool (`rpc_abort_tool`: 2 assistant messages, 1 HTTP request). |
//! | user `message_start` | `MessageDelivered` when its text equals a pending steer / follow-up (see below) |
//! | assistant `message_end` | `AssistantMessage { text, usage }`, then `Activity(first non-blank line)` when there is text. `text` is the exact concatenation of the text blocks, except for an `aborted` message, whose partial text pi keeps (`"word0 "`) but which the contract publishes as an empty result. Usage is reported as given, zeros included (errors and aborts carry zero usage). |
//! | `tool_execution_start` | `ToolRunning { name }` (activity `"name …"`; **not counted**), then `Activity("name summary")` when the arguments have a string to show (first line of `command`, `path`, …; see [`ArgsSummary`](super::protocol::ArgsSummary)) |
//! | `message_update` with a `text_delta` | `TextDelta(delta)` (an empty delta, and every other update — thinking, tool-call arguments, `text_start`/`text_end` — maps to nothing). The coordinator coalesces them into `progress` (see `core::worker_events`). |
//! | `tool_execution_update` | `ToolOutput { name, text }`: the partial result's text so far (not a delta); nothing while it is empty |
//! | `tool_execution_end` | `ToolEnd { name, is_error }` |
//! | `agent_settled` | [`Output::Settled`] once pi has answered every prompt Slate sent (see **Order** below), else [`Output::Evidence`]; never `agent_end`, which ends each retry attempt |
//! | `auto_retry_start` / `auto_retry_end` | `Retry(Some { attempt, maxAttempts, delayMs, rateLimited })` / `Retry(None)`; `rateLimited` when pi's `errorMessage` starts with the HTTP status `429` |
//! | response to `steer` / `follow_up` | `MessageQueued` (`queued`), `MessageHandled` (`handled`), `MessageFailed` (failure) |
//! | response to `abort` | [`Output::AbortAcknowledged`]; pi sends it *after* `agent_settled` |
//! | response to `get_state` | [`Output::SessionFile`] when `sessionFile` is present |
//! | response to `get_session_stats` | [`Output::SessionStats`] |
//! | failed response to a prompt (or `handled`) | [`Output::PromptRefused`] |
//! | any other failed response | [`Output::ResponseError`] (`parse`, unknown command, an id Slate never sent) |
//! | anything else | nothing (`agent_start`, `turn_*`, other `message_update`s, `queue_update`, `entry_appended`, `compaction_*`, unknown types, …) |
//!
//! **Counting.** A pi worker's model requests and tool executions are counted (and refused
//! over their limits) only by Slate's worker extension, which asks the coordinator's `guard`
//! before pi forwards a request (`before_provider_request`) and before a tool runs
//! (`tool_call`): that is the contract's "before forwarding", which pi's RPC events cannot
//! give (they report a request after it was sent). So nothing here is `RequestStart` or
//! `ToolStart`, the simulated worker's counted events; counting both would count twice.
//!
//! **Failure.** `Settled.error` is the `errorMessage` of the last assistant message of the
//! prompt when its `stopReason` is `error`. pi has no other failure flag: after retries are
//! exhausted (`auto_retry_end{success:false}`, then `agent_settled{aborted:false}`) or with
//! no retry at all (a 400) the last assistant message is the failed one; after a recovered
//! retry it is the successful one, so there is no error. If no assistant message was seen
//! but a retry ended unsuccessfully, its `finalError` is used.
//!
//! **Order.** A worker's terminal state comes only from pi's answers to Slate's own commands,
//! in their order: pi answers a `prompt` (`started`) before its run emits anything, so an
//! `agent_settled` counts only once pi answered one of Slate's prompts (the assignment, a
//! continuation) since the last settle; one run settles once. Anything earlier — a
//! record a wrapper prints before pi starts, a leftover of an earlier run — is
//! [`Output::Evidence`], never state. Likewise only the response to Slate's own prompt id can
//! refuse the prompt ([`Output::PromptRefused`]); a failed response with an unknown id is a
//! plain [`Output::ResponseError`].
//!
//! **Responses** are matched by `id` only, never by order or by `command`: a response whose
//! id was not [`sent`](PiMapper::sent) (or has no id) is reported only if it failed.
//!
//! **Delivery of steers and follow-ups.** pi never says which queued message it delivers;
//! it starts a user message with the exact text. A user `message_start` whose text
//! (concatenated text blocks) equals the text of a pending prompt, steer or follow-up
//! consumes the *oldest* such entry; for a steer or follow-up that is `MessageDelivered`.
//! Prompts are entries too, so a prompt's own echo is never taken for a steer with the same
//! text (pi echoes the prompt first, then a steer queued while idle: `rpc_commands`).
//! Limits: equal texts are delivered oldest first whatever pi's steer/follow-up queues
//! decided; a text pi rewrites (prompt templates or skills, both off for Slate workers)
//! never matches; a message pi drops without delivering (`clear_queue`, which Slate does
//! not send, or a run that ends first) stays pending — [`PiMapper::undelivered`] lists them.

use std::collections::{HashMap, VecDeque};

use crate::core::ids::MessageId;
use crate::core::input::{Usage, WorkerEvent};
use crate::core::snapshot::{ContextUsage, Retry, Tokens};
use crate::worker::pi::protocol::{
    Command, Disposition, DispositionData, Message, ParseError, Record, Response, Role,
    SessionStatsData, StateData, StopReason, first_line,
};

/// Evidence strings are cut to this many bytes.
pub const EVIDENCE_BYTES: usize = 2048;

/// A command Slate wrote to pi, as the mapper needs to remember it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Sent {
    /// The assignment (or a resume continuation). `text` is the exact message sent.
    Prompt {
        text: String,
    },
    Steer {
        message: MessageId,
        text: String,
    },
    FollowUp {
        message: MessageId,
        text: String,
    },
    Abort,
    GetState,
    GetSessionStats,
    /// Recovery's route switch: `set_model{provider, modelId}`.
    SetModel {
        provider: String,
        id: String,
    },
    /// Recovery's effort switch: `set_thinking_level{level}`.
    SetThinkingLevel {
        level: String,
    },
}

impl Sent {
    /// The wire command for this, with `id`.
    pub fn command<'a>(&'a self, id: &'a str) -> Command<'a> {
        match self {
            Sent::Prompt { text } => Command::Prompt { id, message: text },
            Sent::Steer { text, .. } => Command::Steer { id, message: text },
            Sent::FollowUp { text, .. } => Command::FollowUp { id, message: text },
            Sent::Abort => Command::Abort { id },
            Sent::GetState => Command::GetState { id },
            Sent::GetSessionStats => Command::GetSessionStats { id },
            Sent::SetModel {
                provider,
                id: model,
            } => Command::SetModel {
                id,
                provider,
                model_id: model,
            },
            Sent::SetThinkingLevel { level } => Command::SetThinkingLevel { id, level },
        }
    }
}

/// What one stdout line means for Slate.
#[derive(Clone, Debug, PartialEq)]
pub enum Output {
    /// A worker event for the coordinator.
    Event(WorkerEvent),
    /// pi's session file (from `get_state`); it may not exist yet.
    SessionFile(String),
    /// `agent_settled`: pi will do nothing more on its own. `retries_ended` is false when a
    /// retry had started and pi never reported its end (unknown exhaustion).
    Settled {
        error: Option<String>,
        aborted: bool,
        retries_ended: bool,
    },
    /// The response to a recovery switch (`set_model` / `set_thinking_level`).
    Switched(Result<(), String>),
    /// The `abort` response (after `agent_settled`).
    AbortAcknowledged,
    /// The `get_session_stats` response.
    SessionStats(SessionStats),
    /// The response to one of Slate's prompts (matched by id) refused it, or pi handled it
    /// without starting a run: no `agent_settled` will come for it.
    PromptRefused { command: String, error: String },
    /// A failed response that is not a steer/follow-up receipt or a prompt's answer.
    ResponseError { command: String, error: String },
    /// A line that is not a pi record, at most [`EVIDENCE_BYTES`] bytes, unsanitized.
    Evidence(String),
}

/// Session totals from `get_session_stats`, as reported (`None` = not reported).
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct SessionStats {
    pub context: Option<ContextUsage>,
    pub tokens: Option<Tokens>,
    /// US dollars.
    pub cost: Option<f64>,
    pub user_messages: Option<u64>,
    pub assistant_messages: Option<u64>,
    pub tool_calls: Option<u64>,
    pub tool_results: Option<u64>,
}

/// Which command an id belongs to, until its response arrives.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Awaiting {
    Prompt,
    Steer(MessageId),
    FollowUp(MessageId),
    Abort,
    GetState,
    GetSessionStats,
    Switch,
}

/// A prompt, steer or follow-up whose user message has not started yet.
#[derive(Clone, Debug)]
struct Echo {
    id: String,
    /// `None` for a prompt.
    message: Option<MessageId>,
    text: String,
}

/// How the last assistant message of the current prompt ended, for `Settled.error`.
#[derive(Clone, Debug, PartialEq, Eq)]
enum LastAssistant {
    Error(String),
    NotError,
}

/// The pi RPC protocol state machine of one worker process. See the module docs.
#[derive(Debug, Default)]
pub struct PiMapper {
    awaiting: HashMap<String, Awaiting>,
    echoes: VecDeque<Echo>,
    last_assistant: Option<LastAssistant>,
    retry_failure: Option<String>,
    /// An `auto_retry_start` without its `auto_retry_end` yet.
    retry_open: bool,
    /// pi accepted a prompt and that run has not settled yet (see **Order**).
    run_open: bool,
}

impl PiMapper {
    pub fn new() -> Self {
        Self::default()
    }

    /// Record a command Slate wrote with string id `id` (ids must be unique among commands
    /// still awaiting their response; a reused id replaces the older entry).
    pub fn sent(&mut self, id: &str, what: Sent) {
        let (awaiting, echo) = match what {
            Sent::Prompt { text } => (Awaiting::Prompt, Some((None, text))),
            Sent::Steer { message, text } => {
                (Awaiting::Steer(message), Some((Some(message), text)))
            }
            Sent::FollowUp { message, text } => {
                (Awaiting::FollowUp(message), Some((Some(message), text)))
            }
            Sent::Abort => (Awaiting::Abort, None),
            Sent::GetState => (Awaiting::GetState, None),
            Sent::GetSessionStats => (Awaiting::GetSessionStats, None),
            Sent::SetModel { .. } | Sent::SetThinkingLevel { .. } => (Awaiting::Switch, None),
        };
        self.awaiting.insert(id.to_owned(), awaiting);
        if let Some((message, text)) = echo {
            self.echoes.push_back(Echo {
                id: id.to_owned(),
                message,
                text,
            });
        }
    }

    /// Steers and follow-ups pi has not (yet) started as user messages, oldest first.
    pub fn undelivered(&self) -> impl Iterator<Item = MessageId> + '_ {
        self.echoes.iter().filter_map(|e| e.message)
    }

    /// Map one stdout line (with or without its `\n` / `\r\n`). A blank line maps to nothing.
    pub fn line(&mut self, line: &[u8]) -> Vec<Output> {
        let line = line.strip_suffix(b"\n").unwrap_or(line);
        let line = line.strip_suffix(b"\r").unwrap_or(line);
        if line.iter().all(u8::is_ascii_whitespace) {
            return Vec::new();
        }
        match Record::parse(line) {
            Ok(record) => self.record(record),
            Err(error) => vec![Output::Evidence(evidence(&error, line))],
        }
    }

    fn record(&mut self, record: Record<'_>) -> Vec<Output> {
        match record {
            Record::Response(response) => self.response(&response),
            Record::MessageStart(message) => self.message_start(message),
            Record::MessageEnd(message) if message.role == Role::Assistant => {
                self.assistant_end(message)
            }
            Record::ToolExecutionStart(tool) => {
                // After `ToolRunning`, whose own activity line (`"name …"`) it refines.
                let activity = tool.args.0.map(|summary| {
                    event(WorkerEvent::Activity(format!(
                        "{} {summary}",
                        tool.tool_name
                    )))
                });
                let mut out = vec![event(WorkerEvent::ToolRunning {
                    name: tool.tool_name,
                })];
                out.extend(activity);
                out
            }
            Record::MessageUpdate(Some(delta)) if !delta.is_empty() => {
                vec![event(WorkerEvent::TextDelta(delta.into_owned()))]
            }
            Record::ToolExecutionUpdate(update) => {
                let text = update.text();
                if text.is_empty() {
                    Vec::new()
                } else {
                    vec![event(WorkerEvent::ToolOutput {
                        name: update.tool_name,
                        text,
                    })]
                }
            }
            Record::ToolExecutionEnd(tool) => vec![event(WorkerEvent::ToolEnd {
                name: tool.tool_name,
                is_error: tool.is_error,
            })],
            Record::AutoRetryStart(start) => {
                self.retry_open = true;
                vec![event(WorkerEvent::Retry(Some(Retry {
                    attempt: start.attempt,
                    max_attempts: start.max_attempts,
                    delay_ms: start.delay_ms,
                    rate_limited: start
                        .error_message
                        .as_deref()
                        .is_some_and(|m| m.trim_start().starts_with("429")),
                })))]
            }
            Record::AutoRetryEnd(end) => {
                self.retry_open = false;
                self.retry_failure = (!end.success).then(|| {
                    end.final_error
                        .unwrap_or_else(|| "pi gave up retrying".to_owned())
                });
                vec![event(WorkerEvent::Retry(None))]
            }
            Record::AgentSettled { .. } if !self.settle_allowed() => {
                vec![Output::Evidence(
                    "agent_settled before pi answered Slate's prompt: not a result, ignored"
                        .to_owned(),
                )]
            }
            Record::AgentSettled { aborted } => {
                self.run_open = false;
                let retry_failure = self.retry_failure.take();
                let error = match self.last_assistant.take() {
                    Some(LastAssistant::Error(message)) => Some(message),
                    Some(LastAssistant::NotError) => None,
                    None => retry_failure,
                };
                let retries_ended = !std::mem::take(&mut self.retry_open);
                vec![Output::Settled {
                    error,
                    aborted,
                    retries_ended,
                }]
            }
            Record::MessageEnd(_)
            | Record::AgentStart
            | Record::AgentEnd
            | Record::TurnStart
            | Record::TurnEnd
            | Record::MessageUpdate(_)
            | Record::QueueUpdate(_)
            | Record::Other(_) => Vec::new(),
        }
    }

    /// Whether an `agent_settled` now settles a run: pi answered one of Slate's prompts
    /// since the last settle.
    fn settle_allowed(&self) -> bool {
        self.run_open
    }

    fn message_start(&mut self, message: Message) -> Vec<Output> {
        match message.role {
            // A message that starts aborted made no model request (see the module docs).
            Role::Assistant if message.stop_reason != Some(StopReason::Aborted) => {
                vec![event(WorkerEvent::AssistantStart)]
            }
            Role::User if !self.echoes.is_empty() => {
                let text = message.into_text();
                let Some(at) = self.echoes.iter().position(|e| e.text == text) else {
                    return Vec::new();
                };
                self.echoes
                    .remove(at)
                    .and_then(|echo| echo.message)
                    .map(|message| vec![event(WorkerEvent::MessageDelivered { message })])
                    .unwrap_or_default()
            }
            _ => Vec::new(),
        }
    }

    fn assistant_end(&mut self, mut message: Message) -> Vec<Output> {
        self.last_assistant = Some(match message.stop_reason {
            Some(StopReason::Error) => LastAssistant::Error(
                message
                    .error_message
                    .take()
                    .unwrap_or_else(|| "pi stopped with an error but gave no message".to_owned()),
            ),
            _ => LastAssistant::NotError,
        });
        let usage = message.usage.map(|u| Usage {
            tokens: Tokens {
                input: u.input,
                output: u.output,
                cache_read: u.cache_read,
                cache_write: u.cache_write,
                total: u.total_tokens,
            },
            cost: u.cost.and_then(|c| c.total),
        });
        // The contract publishes an empty result for an aborted last message; pi keeps the
        // partial text in it.
        let text = if message.stop_reason == Some(StopReason::Aborted) {
            String::new()
        } else {
            message.into_text()
        };
        let activity = first_line(&text);
        let activity = (!activity.is_empty()).then(|| activity.to_owned());
        let mut out = vec![event(WorkerEvent::AssistantMessage { text, usage })];
        if let Some(line) = activity {
            out.push(event(WorkerEvent::Activity(line)));
        }
        out
    }

    fn response(&mut self, response: &Response<'_>) -> Vec<Output> {
        let awaiting = response
            .id
            .as_deref()
            .and_then(|id| self.awaiting.remove(id));
        let Some(awaiting) = awaiting else {
            return if response.success {
                Vec::new()
            } else {
                vec![response_error(response)]
            };
        };
        match awaiting {
            Awaiting::Prompt => self.prompt_response(response),
            Awaiting::Steer(message) | Awaiting::FollowUp(message) => {
                self.message_response(response, message)
            }
            Awaiting::Abort if response.success => vec![Output::AbortAcknowledged],
            Awaiting::GetState if response.success => match response.data::<StateData>() {
                Ok(data) => data
                    .and_then(|d| d.session_file)
                    .map(|path| vec![Output::SessionFile(path)])
                    .unwrap_or_default(),
                Err(e) => vec![data_evidence(response, &e)],
            },
            Awaiting::GetSessionStats if response.success => {
                match response.data::<SessionStatsData>() {
                    Ok(Some(data)) => vec![Output::SessionStats(session_stats(data))],
                    Ok(None) => vec![Output::SessionStats(SessionStats::default())],
                    Err(e) => vec![data_evidence(response, &e)],
                }
            }
            Awaiting::Switch if response.success => vec![Output::Switched(Ok(()))],
            Awaiting::Switch => vec![Output::Switched(Err(error_text(response)))],
            Awaiting::Abort | Awaiting::GetState | Awaiting::GetSessionStats => {
                vec![response_error(response)]
            }
        }
    }

    fn prompt_response(&mut self, response: &Response<'_>) -> Vec<Output> {
        if !response.success {
            self.drop_echo(response);
            return vec![Output::PromptRefused {
                command: response.command.clone().into_owned(),
                error: error_text(response),
            }];
        }
        match response.data::<DispositionData>() {
            Ok(Some(DispositionData {
                disposition: Some(Disposition::Handled),
            })) => {
                // No run starts, so no `agent_settled` will come: for a Slate worker whose
                // prompt is its assignment, that is a failure to start.
                self.drop_echo(response);
                vec![Output::PromptRefused {
                    command: response.command.clone().into_owned(),
                    error: "pi handled the prompt without starting a run (disposition \"handled\")"
                        .to_owned(),
                }]
            }
            Ok(_) => {
                self.run_open = true;
                Vec::new()
            }
            Err(e) => vec![data_evidence(response, &e)],
        }
    }

    fn message_response(&mut self, response: &Response<'_>, message: MessageId) -> Vec<Output> {
        if !response.success {
            self.drop_echo(response);
            return vec![event(WorkerEvent::MessageFailed {
                message,
                error: error_text(response),
            })];
        }
        let disposition = match response.data::<DispositionData>() {
            Ok(data) => data.and_then(|d| d.disposition),
            Err(e) => return vec![data_evidence(response, &e)],
        };
        if disposition == Some(Disposition::Handled) {
            self.drop_echo(response);
            vec![event(WorkerEvent::MessageHandled { message })]
        } else {
            vec![event(WorkerEvent::MessageQueued { message })]
        }
    }

    fn drop_echo(&mut self, response: &Response<'_>) {
        if let Some(id) = response.id.as_deref() {
            self.echoes.retain(|e| e.id != id);
        }
    }
}

fn event(e: WorkerEvent) -> Output {
    Output::Event(e)
}

fn error_text(response: &Response<'_>) -> String {
    response.error.as_deref().map_or_else(
        || "pi reported a failure without an error message".to_owned(),
        str::to_owned,
    )
}

fn response_error(response: &Response<'_>) -> Output {
    Output::ResponseError {
        command: response.command.clone().into_owned(),
        error: error_text(response),
    }
}

fn data_evidence(response: &Response<'_>, error: &serde_json::Error) -> Output {
    let mut out = String::new();
    push_clipped(
        &mut out,
        &format!(
            "pi response {:?} has unexpected data: {error}",
            response.command
        ),
    );
    Output::Evidence(out)
}

fn session_stats(data: SessionStatsData) -> SessionStats {
    SessionStats {
        context: data.context_usage.and_then(|c| {
            Some(ContextUsage {
                tokens: c.tokens,
                context_window: c.context_window?,
                percent: c.percent,
            })
        }),
        tokens: data.tokens.map(|t| Tokens {
            input: t.input,
            output: t.output,
            cache_read: t.cache_read,
            cache_write: t.cache_write,
            total: t.total,
        }),
        cost: data.cost,
        user_messages: data.user_messages,
        assistant_messages: data.assistant_messages,
        tool_calls: data.tool_calls,
        tool_results: data.tool_results,
    }
}

/// `"<why> (<n> bytes): <the line's start>"`, at most [`EVIDENCE_BYTES`] bytes.
fn evidence(error: &ParseError, line: &[u8]) -> String {
    let mut out = String::with_capacity(EVIDENCE_BYTES.min(256 + line.len()));
    push_clipped(&mut out, &format!("{error} ({} bytes): ", line.len()));
    let prefix = &line[..line.len().min(EVIDENCE_BYTES)];
    push_clipped(&mut out, &String::from_utf8_lossy(prefix));
    out
}

/// Append `text`, cut at a char boundary so `out` stays within [`EVIDENCE_BYTES`]
/// (with `…` when something was cut).
fn push_clipped(out: &mut String, text: &str) {
    let room = EVIDENCE_BYTES.saturating_sub(out.len());
    if text.len() <= room {
        out.push_str(text);
        return;
    }
    let ellipsis = '…'.len_utf8();
    let mut cut = room.saturating_sub(ellipsis);
    while !text.is_char_boundary(cut) {
        cut -= 1;
    }
    out.push_str(&text[..cut]);
    if out.len() + ellipsis <= EVIDENCE_BYTES {
        out.push('…');
    }
}

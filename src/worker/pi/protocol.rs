//! Typed models of pi's RPC wire (`pi --mode rpc`, pi 1.6): the stdout records Slate reads
//! and the stdin commands it writes. Pure data and parsing, no IO.
//!
//! The reference is `shared/pi/NOTES.md` and the real pi 1.6 traces beside it, not only pi's
//! docs: where they differ the traces win (for example `agent_settled` arrives before the
//! `abort` response, and usage carries `reasoning` and `cost.totalFromProvider`).
//!
//! # Parsing
//!
//! [`Record::parse`] reads one LF-framed stdout line in two steps:
//!
//! 1. an envelope pass reads only `type` (and, for responses, `id`, `command`, `success`,
//!    `error`), skipping every other value without allocating. Its fields are *lenient*: a
//!    value of an unexpected JSON type is skipped, so a record of an unknown type can never
//!    fail here. Unknown types become [`Record::Other`] carrying the raw type name.
//! 2. only for the record types whose payload Slate needs, a second pass deserializes the
//!    typed payload ([`Message`], [`ToolStart`], …). Unknown fields are ignored everywhere;
//!    a known record whose payload has the wrong shape is a [`ParseError::Shape`].
//!
//! Response `data` is parsed lazily with [`Response::data`], only for the commands the
//! mapper matched by `id` (a `get_messages` reply can be hundreds of kilobytes and is never
//! needed). Fields Slate does not use (`agent_end.messages`, `message_update` deltas other
//! than `text_delta`, tool-call arguments inside messages, thinking text, image bytes, the
//! system message's `sections`) are skipped, never copied.
//!
//! # Why not the `pi-codes` crate
//!
//! `pi-codes` 1.4.0 (crates.io, serde models of pi's JSON/RPC streams, tested against pi
//! 1.4.0) was evaluated against every line of every trace in `shared/pi/traces` and is not
//! used:
//!
//! * it parses every JSON line of every trace (1,143 of 1,144 lines; the other is
//!   `print_text`'s plain-text output), but its `PiEvent` models only agent/turn/message/tool
//!   events: `agent_settled` (36 records), `queue_update`, `auto_retry_start`/`_end` and
//!   `response` (105 records) all land in `PiEvent::Unknown` as untyped `serde_json::Value`,
//!   so the records Slate's completion, failure and receipt rules depend on would still be
//!   hand-parsed;
//! * responses are a separate `RpcResponse` (id: `Option<String>`, modelled) that the caller
//!   must route to by peeking at `type` itself; `usage.cost.total` is modelled (tokens as
//!   `f64`), but the assistant `errorMessage` is not (it falls into an untyped `extra` map);
//! * `PiEvent::from_value` first builds a full `serde_json::Value` of the line and then
//!   clones sub-trees out of it (`v.get("message").cloned()`), so every `agent_end` copies
//!   the whole conversation including the system prompt; every unmodelled field is also
//!   retained in `extra` maps. Parsing here skips what Slate does not read;
//! * its content-block and role enums have no fallback variant, so a new block type or role
//!   fails the whole record; the default features pull in tokio, `log` and `which`;
//! * on the benchmark corpus (the traces' stdout repeated to 50,336 lines), parsing with it
//!   (`Value`, then `PiEvent::from_value` or `RpcResponse`) took about 280 ms, 7× the
//!   38 ms of [`Record::parse`] and 1.8× a bare `serde_json::Value` parse: about 180,000
//!   lines/s before any mapping, under the 300,000 events/s ingestion target.
//!
//! Figures: `docs/performance.md` ("pi stdout ingestion").

mod lenient;
mod message;

use std::borrow::Cow;
use std::fmt;

use serde::de::{self, Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor};
use serde::{Deserialize, Serialize};

use lenient::{Scalar, cow_str};
pub use message::{Content, ContentBlock, Cost, Message, Role, StopReason, Usage};

// ---- stdin: commands --------------------------------------------------------------------

/// A command Slate writes to pi's stdin. Always carries a string `id`: responses are
/// correlated by it, never by order (pi answers `abort` only after `agent_settled`).
///
/// Serialized as pi's envelope: `{"type":"prompt","id":"c1","message":"…"}`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum Command<'a> {
    Prompt {
        id: &'a str,
        message: &'a str,
    },
    Steer {
        id: &'a str,
        message: &'a str,
    },
    FollowUp {
        id: &'a str,
        message: &'a str,
    },
    Abort {
        id: &'a str,
    },
    GetState {
        id: &'a str,
    },
    GetSessionStats {
        id: &'a str,
    },
    SetModel {
        id: &'a str,
        provider: &'a str,
        #[serde(rename = "modelId")]
        model_id: &'a str,
    },
    SetThinkingLevel {
        id: &'a str,
        level: &'a str,
    },
}

impl Command<'_> {
    /// The wire `type` (what pi echoes as the response's `command`).
    pub fn name(&self) -> &'static str {
        match self {
            Command::Prompt { .. } => "prompt",
            Command::Steer { .. } => "steer",
            Command::FollowUp { .. } => "follow_up",
            Command::Abort { .. } => "abort",
            Command::GetState { .. } => "get_state",
            Command::GetSessionStats { .. } => "get_session_stats",
            Command::SetModel { .. } => "set_model",
            Command::SetThinkingLevel { .. } => "set_thinking_level",
        }
    }

    /// One LF-terminated JSON line (pi splits its stdin on `\n` only, so U+2028/U+2029 in
    /// the text need no escaping).
    pub fn to_line(&self) -> Result<Vec<u8>, serde_json::Error> {
        let mut line = crate::json::to_vec(self)?;
        line.push(b'\n');
        Ok(line)
    }
}

// ---- stdout: records --------------------------------------------------------------------

/// One stdout record of pi in RPC (or JSON) mode.
#[derive(Clone, Debug, PartialEq)]
pub enum Record<'a> {
    /// `{"type":"response"}`: the answer to one command.
    Response(Response<'a>),
    AgentStart,
    /// End of one low-level run. Not completion (retries, steering and follow-ups can
    /// follow); `messages` and `willRetry` are not read.
    AgentEnd,
    /// "Done, no more automatic work": the only completion signal.
    AgentSettled {
        aborted: bool,
    },
    TurnStart,
    /// `message` (a copy of the assistant `message_end`) and `toolResults` are not read.
    TurnEnd,
    MessageStart(Message),
    /// A streaming update of the assistant message: the text of a `text_delta`, else
    /// `None` (other deltas, thinking, tool-call arguments and the rest are skipped).
    /// `message_end` stays authoritative for the message's text.
    MessageUpdate(Option<Cow<'a, str>>),
    MessageEnd(Message),
    ToolExecutionStart(ToolStart),
    /// Partial output of a running tool (the output so far, not a delta).
    ToolExecutionUpdate(ToolUpdate),
    ToolExecutionEnd(ToolEnd),
    QueueUpdate(QueueUpdate),
    AutoRetryStart(AutoRetryStart),
    AutoRetryEnd(AutoRetryEnd),
    /// Any other record type (`session`, `entry_appended`, `compaction_*`,
    /// `thinking_level_changed`, extension UI records, future types), by its raw type name.
    Other(Cow<'a, str>),
}

/// Why a line is not a pi record. Every variant is evidence, never a reason to stop reading.
#[derive(Debug, thiserror::Error)]
pub enum ParseError {
    #[error("not valid JSON: {0}")]
    Json(serde_json::Error),
    #[error("valid JSON but not an object")]
    NotObject,
    #[error("JSON object without a string \"type\"")]
    NoType,
    /// Valid JSON that no record can be read from, such as an object with a duplicated key.
    #[error("JSON object not readable as a pi record: {0}")]
    Envelope(serde_json::Error),
    #[error("pi record {kind:?} does not have the expected shape: {error}")]
    Shape {
        kind: String,
        error: serde_json::Error,
    },
}

impl<'a> Record<'a> {
    /// Parse one stdout line (without its LF; a trailing CR is the caller's to strip).
    pub fn parse(line: &'a [u8]) -> Result<Self, ParseError> {
        let first = line.iter().copied().find(|b| !b.is_ascii_whitespace());
        if first != Some(b'{') {
            // Tell "not JSON" from "JSON, but not an object" for the evidence line.
            return Err(match serde_json::from_slice::<IgnoredAny>(line) {
                Ok(_) => ParseError::NotObject,
                Err(e) => ParseError::Json(e),
            });
        }
        let envelope: Envelope<'a> = serde_json::from_slice(line).map_err(|e| {
            if e.is_data() {
                ParseError::Envelope(e)
            } else {
                ParseError::Json(e)
            }
        })?;
        let Some(kind) = envelope.kind.into_str() else {
            return Err(ParseError::NoType);
        };
        let shape = |error| ParseError::Shape {
            kind: kind.clone().into_owned(),
            error,
        };
        Ok(match kind.as_ref() {
            "response" => Record::Response(Response {
                id: envelope.id.into_str(),
                command: envelope.command.into_str().unwrap_or(Cow::Borrowed("")),
                success: envelope.success.as_bool().unwrap_or(false),
                error: envelope.error.into_str(),
                line,
            }),
            "agent_start" => Record::AgentStart,
            "agent_end" => Record::AgentEnd,
            "agent_settled" => {
                let settled: Settled = serde_json::from_slice(line).map_err(shape)?;
                Record::AgentSettled {
                    aborted: settled.aborted,
                }
            }
            "turn_start" => Record::TurnStart,
            "turn_end" => Record::TurnEnd,
            "message_start" => Record::MessageStart(
                serde_json::from_slice::<WithMessage>(line)
                    .map_err(shape)?
                    .message,
            ),
            // A delta of an unexpected shape is no reason to lose the record's type.
            "message_update" => Record::MessageUpdate(
                serde_json::from_slice::<Update<'a>>(line)
                    .ok()
                    .and_then(Update::text_delta),
            ),
            "message_end" => Record::MessageEnd(
                serde_json::from_slice::<WithMessage>(line)
                    .map_err(shape)?
                    .message,
            ),
            "tool_execution_start" => {
                Record::ToolExecutionStart(serde_json::from_slice(line).map_err(shape)?)
            }
            "tool_execution_update" => {
                Record::ToolExecutionUpdate(serde_json::from_slice(line).map_err(shape)?)
            }
            "tool_execution_end" => {
                Record::ToolExecutionEnd(serde_json::from_slice(line).map_err(shape)?)
            }
            "queue_update" => Record::QueueUpdate(serde_json::from_slice(line).map_err(shape)?),
            "auto_retry_start" => {
                Record::AutoRetryStart(serde_json::from_slice(line).map_err(shape)?)
            }
            "auto_retry_end" => Record::AutoRetryEnd(serde_json::from_slice(line).map_err(shape)?),
            _ => Record::Other(kind),
        })
    }
}

/// The first pass: the record type plus the response envelope, every field lenient.
#[derive(Deserialize)]
struct Envelope<'a> {
    #[serde(rename = "type", borrow, default)]
    kind: Scalar<'a>,
    #[serde(borrow, default)]
    id: Scalar<'a>,
    #[serde(borrow, default)]
    command: Scalar<'a>,
    #[serde(borrow, default)]
    success: Scalar<'a>,
    #[serde(borrow, default)]
    error: Scalar<'a>,
}

/// `{"type":"response","id"?,"command","success","data"?,"error"?}`.
#[derive(Clone, PartialEq)]
pub struct Response<'a> {
    /// Echo of the command's id; absent when the command had none (and on parse errors).
    pub id: Option<Cow<'a, str>>,
    /// The command type pi answers (`"parse"` for an unparseable command line).
    pub command: Cow<'a, str>,
    pub success: bool,
    pub error: Option<Cow<'a, str>>,
    /// The whole line, for [`Response::data`].
    line: &'a [u8],
}

impl fmt::Debug for Response<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Response")
            .field("id", &self.id)
            .field("command", &self.command)
            .field("success", &self.success)
            .field("error", &self.error)
            .finish_non_exhaustive()
    }
}

impl Response<'_> {
    /// `data` as `T` (`None` when absent or null). Parsed on demand: only the responses a
    /// caller matched by id pay for it.
    pub fn data<T: de::DeserializeOwned>(&self) -> Result<Option<T>, serde_json::Error> {
        #[derive(Deserialize)]
        #[serde(bound = "T: de::DeserializeOwned")]
        struct DataOnly<T> {
            data: Option<T>,
        }
        serde_json::from_slice::<DataOnly<T>>(self.line).map(|d| d.data)
    }
}

/// `data` of `prompt`, `steer` and `follow_up` responses.
#[derive(Clone, Debug, Default, PartialEq, Eq, Deserialize)]
pub struct DispositionData {
    pub disposition: Option<Disposition>,
}

/// What pi did with a submitted `prompt` / `steer` / `follow_up`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Disposition {
    /// A run started (`prompt` only).
    Started,
    /// Held for delivery at a later turn.
    Queued,
    /// An input handler (extension) consumed it: no run, no delivery.
    Handled,
    Other(String),
}

impl<'de> Deserialize<'de> for Disposition {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let s = cow_str(d)?;
        Ok(match s.as_ref() {
            "started" => Disposition::Started,
            "queued" => Disposition::Queued,
            "handled" => Disposition::Handled,
            _ => Disposition::Other(s.into_owned()),
        })
    }
}

/// `data` of a `get_state` response: only what Slate reads.
#[derive(Clone, Debug, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct StateData {
    /// Absent with `--no-session`; reported before the file exists (pi creates it lazily).
    pub session_file: Option<String>,
    pub session_id: Option<String>,
}

/// `data` of a `get_session_stats` response (sums over the session).
#[derive(Clone, Copy, Debug, Default, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SessionStatsData {
    pub user_messages: Option<u64>,
    pub assistant_messages: Option<u64>,
    pub tool_calls: Option<u64>,
    pub tool_results: Option<u64>,
    pub total_messages: Option<u64>,
    pub tokens: Option<StatsTokens>,
    /// US dollars.
    pub cost: Option<f64>,
    pub context_usage: Option<ContextUsageData>,
}

/// `tokens` of `get_session_stats` (`total` = input + output + cacheRead + cacheWrite).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct StatsTokens {
    pub input: u64,
    pub output: u64,
    pub cache_read: u64,
    pub cache_write: u64,
    pub total: u64,
}

/// `contextUsage`: `tokens` and `percent` are `null` right after a compaction.
#[derive(Clone, Copy, Debug, Default, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ContextUsageData {
    pub tokens: Option<u64>,
    pub context_window: Option<u64>,
    pub percent: Option<f64>,
}

/// `message_update`: only `assistantMessageEvent.{type, delta}` is read.
#[derive(Deserialize)]
struct Update<'a> {
    #[serde(rename = "assistantMessageEvent", borrow)]
    event: Option<AssistantEvent<'a>>,
}

#[derive(Deserialize)]
struct AssistantEvent<'a> {
    #[serde(rename = "type", borrow, default)]
    kind: Scalar<'a>,
    #[serde(borrow, default)]
    delta: Scalar<'a>,
}

impl<'a> Update<'a> {
    fn text_delta(self) -> Option<Cow<'a, str>> {
        let event = self.event?;
        match event.kind.into_str()?.as_ref() {
            "text_delta" => event.delta.into_str(),
            _ => None,
        }
    }
}

#[derive(Deserialize)]
struct Settled {
    #[serde(default)]
    aborted: bool,
}

#[derive(Deserialize)]
struct WithMessage {
    message: Message,
}

/// `tool_execution_start`.
#[derive(Clone, Debug, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ToolStart {
    #[serde(default)]
    pub tool_call_id: String,
    pub tool_name: String,
    /// A short summary of `args`, see [`ArgsSummary`].
    #[serde(default)]
    pub args: ArgsSummary,
}

/// `tool_execution_end` (`result` is not read).
#[derive(Clone, Debug, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ToolEnd {
    #[serde(default)]
    pub tool_call_id: String,
    pub tool_name: String,
    #[serde(default)]
    pub is_error: bool,
}

/// `tool_execution_update`: the tool's output so far (`partialResult.content` text blocks).
#[derive(Clone, Debug, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ToolUpdate {
    #[serde(default)]
    pub tool_call_id: String,
    pub tool_name: String,
    #[serde(default)]
    pub partial_result: PartialResult,
}

/// `partialResult` of a tool update: its content blocks (images and the rest are skipped).
#[derive(Clone, Debug, Default, PartialEq, Deserialize)]
pub struct PartialResult {
    #[serde(default)]
    pub content: Content,
}

impl ToolUpdate {
    /// The text blocks of the partial result, concatenated.
    pub fn text(&self) -> String {
        self.partial_result
            .content
            .0
            .iter()
            .filter_map(ContentBlock::text)
            .collect()
    }
}

/// `queue_update`: the whole queue each time.
#[derive(Clone, Debug, Default, PartialEq, Eq, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub struct QueueUpdate {
    pub steering: Vec<String>,
    pub follow_up: Vec<String>,
}

/// `auto_retry_start`: a retryable failure (5xx, 429, a dropped stream) will be retried.
#[derive(Clone, Debug, Default, PartialEq, Eq, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub struct AutoRetryStart {
    pub attempt: u32,
    pub max_attempts: u32,
    pub delay_ms: u64,
    pub error_message: Option<String>,
}

/// `auto_retry_end`: `success:false` means the retries are exhausted (or were cancelled).
#[derive(Clone, Debug, Default, PartialEq, Eq, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub struct AutoRetryEnd {
    pub success: bool,
    pub attempt: u32,
    pub final_error: Option<String>,
}

// ---- tool arguments ----------------------------------------------------------------------

/// A one-line summary of a tool call's `args` for the activity line: the first line of the
/// most telling string argument (`command`, `pattern`, `path`, `file_path`, `query`, `url`,
/// else the first string argument). Only that line is copied; every other value (a
/// `write`'s file content, nested objects) is skipped.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ArgsSummary(pub Option<String>);

const PREFERRED_ARGS: [&str; 6] = ["command", "pattern", "path", "file_path", "query", "url"];

impl<'de> Deserialize<'de> for ArgsSummary {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_any(Summary { top: true }).map(ArgsSummary)
    }
}

/// The first non-blank line of a string; at the top level, of the best string argument of
/// an object. Anything else is skipped.
#[derive(Clone, Copy)]
struct Summary {
    top: bool,
}

impl<'de> de::DeserializeSeed<'de> for Summary {
    type Value = Option<String>;
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for Summary {
    type Value = Option<String>;
    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("tool arguments")
    }
    fn visit_str<E: de::Error>(self, v: &str) -> Result<Self::Value, E> {
        let line = first_line(v);
        Ok((!line.is_empty()).then(|| line.to_owned()))
    }
    fn visit_bool<E: de::Error>(self, _: bool) -> Result<Self::Value, E> {
        Ok(None)
    }
    fn visit_i64<E: de::Error>(self, _: i64) -> Result<Self::Value, E> {
        Ok(None)
    }
    fn visit_u64<E: de::Error>(self, _: u64) -> Result<Self::Value, E> {
        Ok(None)
    }
    fn visit_f64<E: de::Error>(self, _: f64) -> Result<Self::Value, E> {
        Ok(None)
    }
    fn visit_unit<E: de::Error>(self) -> Result<Self::Value, E> {
        Ok(None)
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
        while seq.next_element::<IgnoredAny>()?.is_some() {}
        Ok(None)
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
        // Lower rank wins; unranked keys rank after every preferred one, the first kept.
        let mut best: Option<(usize, String)> = None;
        while let Some(key) = map.next_key::<Scalar<'de>>()? {
            let key = key.into_str().unwrap_or_default();
            let rank = PREFERRED_ARGS
                .iter()
                .position(|k| *k == key)
                .unwrap_or(PREFERRED_ARGS.len());
            if self.top && best.as_ref().is_none_or(|(r, _)| rank < *r) {
                if let Some(line) = map.next_value_seed(Summary { top: false })? {
                    best = Some((rank, line));
                }
            } else {
                map.next_value::<IgnoredAny>()?;
            }
        }
        Ok(best.map(|(_, line)| line))
    }
}

/// The first non-blank line, trimmed (`""` when there is none).
pub fn first_line(text: &str) -> &str {
    text.lines()
        .map(str::trim)
        .find(|l| !l.is_empty())
        .unwrap_or("")
}

//! Wire types of the control socket (`docs/protocol.md`).
//!
//! One JSON object per line. A client sends requests `{"id", "method", "params"?}`; the server
//! answers each with `{"id", "result"}` or `{"id", "error": {code, message, data?}}` and may send
//! notifications `{"method", "params"}` (no id). The first request must be `hello`.

use std::fmt;
use std::sync::Arc;

use serde::{Deserialize, Serialize};
use serde_json::{Map, Number, Value};

use super::codec::Line;
use crate::core::Refusal;
use crate::policy::Problems;

pub use super::methods::{Notification, PROTOCOL_VERSION, SUPPORTED_PROTOCOLS};

/// Longest request line the server reads, in bytes, without its newline.
pub const MAX_REQUEST_LINE: usize = 1024 * 1024;

/// Longest line the server writes (and a client reads). Larger than the request cap because a
/// status of a large fleet is legitimately bigger than any request; still bounded so a client
/// never buffers without limit.
pub const MAX_SERVER_LINE: usize = 16 * 1024 * 1024;

/// Bytes of responses and events one connection may have waiting for its peer to read
/// (a single larger line is still sent when nothing else waits); past it the peer is not
/// reading and is disconnected.
pub const MAX_OUTPUT_BYTES: usize = 4 * 1024 * 1024;

/// Transport error codes (the service adds the coordinator's refusal codes).
pub mod codes {
    pub const PARSE_ERROR: &str = "parse-error";
    pub const LINE_TOO_LONG: &str = "line-too-long";
    pub const INVALID_REQUEST: &str = "invalid-request";
    pub const UNKNOWN_METHOD: &str = "unknown-method";
    pub const HELLO_REQUIRED: &str = "hello-required";
    pub const UNSUPPORTED_PROTOCOL: &str = "unsupported-protocol";
    pub const BUSY: &str = "busy";
    pub const SHUTTING_DOWN: &str = "shutting-down";
    pub const RESPONSE_TOO_LARGE: &str = "response-too-large";
    pub const INTERNAL: &str = "internal";
    /// `hello.capability` admits nothing (forged, ended, replaced, presented from outside its
    /// worker's process tree, or not the worker the peer descends from).
    pub const CAPABILITY_REFUSED: &str = "capability-refused";
    /// The connection's generation ended or was replaced after `hello`.
    pub const ACTOR_ENDED: &str = "actor-ended";
    /// The peer speaks for nobody: no pid, a worker's leftover, another fleet's process, or
    /// an ancestry that cannot be read (`runtime::lineage`).
    pub const ACTOR_UNKNOWN: &str = "actor-unknown";
    /// `hello.client.extension` is not the content hash of the extension embedded in this
    /// binary: the installed extension and the binary do not match.
    pub const EXTENSION_MISMATCH: &str = "extension-mismatch";
    /// The host pi version (`slate serve --host-version`) fails the supported-host gate:
    /// delegated execution and model-delivering messages are refused.
    pub const UNSUPPORTED_HOST: &str = "unsupported-host";
}

/// A request id: a string or an integer, echoed verbatim in the response.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(untagged)]
pub enum RequestId {
    Number(Number),
    Text(String),
}

impl RequestId {
    /// Accepts a JSON string or integer; anything else (floats, null, objects) is not an id.
    fn from_value(value: &Value) -> Option<Self> {
        match value {
            Value::String(s) => Some(Self::Text(s.clone())),
            Value::Number(n) if n.is_i64() || n.is_u64() => Some(Self::Number(n.clone())),
            _ => None,
        }
    }
}

impl From<u64> for RequestId {
    fn from(n: u64) -> Self {
        Self::Number(n.into())
    }
}

impl fmt::Display for RequestId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Number(n) => write!(f, "{n}"),
            Self::Text(s) => write!(f, "{s:?}"),
        }
    }
}

/// One request line as sent by a client, before its params are read (that is
/// [`super::methods::Request::parse`]).
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct RequestLine {
    pub id: RequestId,
    pub method: String,
    /// Always an object; an absent or `null` `params` reads as `{}`.
    pub params: Value,
}

impl RequestLine {
    /// Parses one line. A line that is not JSON is a `parse-error`; JSON that is not a valid
    /// request is an `invalid-request` that still carries the id when one could be read, so
    /// the error can be matched to its request. Members other than `id`, `method` and
    /// `params` are refused by name.
    pub fn parse(line: &str) -> Result<Self, (Option<RequestId>, ControlError)> {
        let value: Value = serde_json::from_str(line).map_err(|e| {
            (
                None,
                ControlError::parse_error(&format!("invalid JSON: {e}")),
            )
        })?;
        let Value::Object(mut object) = value else {
            return Err((
                None,
                ControlError::invalid_request("a request must be a JSON object"),
            ));
        };
        let id = match object.get("id") {
            None => {
                return Err((
                    None,
                    ControlError::invalid_request("id: required (a string or an integer)"),
                ));
            }
            Some(raw) => RequestId::from_value(raw).ok_or_else(|| {
                (
                    None,
                    ControlError::invalid_request(&format!(
                        "id: must be a string or an integer, not {}",
                        kind(raw)
                    )),
                )
            })?,
        };
        let method = match object.remove("method") {
            Some(Value::String(m)) => m,
            Some(other) => {
                return Err((
                    Some(id),
                    ControlError::invalid_request(&format!(
                        "method: must be a string, not {}",
                        kind(&other)
                    )),
                ));
            }
            None => {
                return Err((Some(id), ControlError::invalid_request("method: required")));
            }
        };
        let params = match object.remove("params") {
            None | Some(Value::Null) => Value::Object(Map::new()),
            Some(p @ Value::Object(_)) => p,
            Some(other) => {
                return Err((
                    Some(id),
                    ControlError::invalid_request(&format!(
                        "params: must be an object, not {}",
                        kind(&other)
                    )),
                ));
            }
        };
        if let Some(extra) = object.keys().find(|k| *k != "id") {
            return Err((
                Some(id),
                ControlError::invalid_request(&format!(
                    "{extra}: unknown member; a request has only id, method and params"
                )),
            ));
        }
        Ok(Self { id, method, params })
    }
}

/// The JSON type of a value, for messages.
fn kind(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a non-integer number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

/// A response: the request's id (null when it could not be read) and a result or an error.
/// The server writes these; the client reads them member by member (see `client.rs`).
#[derive(Clone, Debug, Serialize)]
pub struct Response {
    pub id: Option<RequestId>,
    #[serde(flatten)]
    pub outcome: Outcome,
}

#[derive(Clone, Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub enum Outcome {
    Result(Payload),
    Error(ControlError),
}

/// A result as a handler produced it: a JSON tree, or JSON text already written (large
/// answers are serialized once, straight from typed rows), possibly kept to answer again.
#[derive(Clone, Debug, Serialize)]
#[serde(untagged)]
pub enum Payload {
    Value(Value),
    Raw(Box<serde_json::value::RawValue>),
    Shared(#[serde(serialize_with = "shared_raw")] Arc<serde_json::value::RawValue>),
}

fn shared_raw<S: serde::Serializer>(
    raw: &Arc<serde_json::value::RawValue>,
    serializer: S,
) -> Result<S::Ok, S::Error> {
    raw.serialize(serializer)
}

impl Payload {
    /// The length of the text when it is already written (to size the response line).
    fn text_len(&self) -> Option<usize> {
        match self {
            Self::Value(_) => None,
            Self::Raw(raw) => Some(raw.get().len()),
            Self::Shared(raw) => Some(raw.get().len()),
        }
    }
}

impl From<Value> for Payload {
    fn from(value: Value) -> Self {
        Self::Value(value)
    }
}

impl Response {
    pub fn result(id: RequestId, payload: impl Into<Payload>) -> Self {
        Self {
            id: Some(id),
            outcome: Outcome::Result(payload.into()),
        }
    }

    pub fn error(id: Option<RequestId>, error: ControlError) -> Self {
        Self {
            id,
            outcome: Outcome::Error(error),
        }
    }

    /// The response as one line for a connection's writer. A result kept to answer again
    /// ([`Payload::Shared`]) is not copied: the line is its head (`{"id":N,"result":`), the
    /// shared text and `}`, the same bytes serializing the response writes. A result already
    /// written as text is copied into a line sized for it (no growing buffer, which for a
    /// 394 KB status answer copied it again at every doubling).
    pub fn encode_line(&self) -> serde_json::Result<Line> {
        if let Outcome::Result(Payload::Shared(body)) = &self.outcome {
            let mut head = b"{\"id\":".to_vec();
            crate::json::to_writer(&mut head, &self.id)?;
            head.extend_from_slice(b",\"result\":");
            let body = Arc::clone(body);
            return Ok(Line::Shared { head, body });
        }
        let text = match &self.outcome {
            Outcome::Result(payload) => payload.text_len(),
            Outcome::Error(_) => None,
        };
        let mut line = Vec::with_capacity(text.map_or(128, |len| len + 64));
        crate::json::to_writer(&mut line, self)?;
        line.push(b'\n');
        Ok(Line::Owned(line))
    }
}

/// An error as it travels on the wire: a stable `code` naming the rule, a message that names
/// the offending field or identity, and optional structured `data`.
#[derive(
    Clone, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema, thiserror::Error,
)]
#[serde(deny_unknown_fields)]
#[error("{code}: {message}")]
pub struct ControlError {
    /// Stable; names the rule (`invalid-request`, `stale-generation`, …).
    pub code: String,
    /// For people; names the offending field or identity.
    pub message: String,
    /// Structured detail, documented per code.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub data: Option<Value>,
}

impl ControlError {
    pub fn new(code: impl Into<String>, message: impl Into<String>) -> Self {
        Self {
            code: code.into(),
            message: message.into(),
            data: None,
        }
    }

    #[must_use]
    pub fn with_data(mut self, data: Value) -> Self {
        self.data = Some(data);
        self
    }

    pub fn parse_error(detail: &str) -> Self {
        Self::new(codes::PARSE_ERROR, detail)
    }

    pub fn line_too_long(max: usize) -> Self {
        Self::new(
            codes::LINE_TOO_LONG,
            format!(
                "line: a request line is at most {max} bytes; this one was longer and was skipped up to its newline"
            ),
        )
        .with_data(serde_json::json!({ "max": max }))
    }

    /// Refused by the client before sending: the request's line would be `bytes` long.
    pub fn request_too_large(bytes: usize, max: usize) -> Self {
        Self::new(
            codes::LINE_TOO_LONG,
            format!(
                "line: a request line is at most {max} bytes; this request is {bytes} bytes and was not sent"
            ),
        )
        .with_data(serde_json::json!({ "max": max, "bytes": bytes }))
    }

    pub fn invalid_request(detail: &str) -> Self {
        Self::new(codes::INVALID_REQUEST, detail)
    }

    pub fn unknown_method(method: &str) -> Self {
        Self::new(
            codes::UNKNOWN_METHOD,
            format!("method: {method:?} is not a method of protocol {PROTOCOL_VERSION}"),
        )
    }

    pub fn hello_required(method: &str) -> Self {
        Self::new(
            codes::HELLO_REQUIRED,
            format!("method: the first request must be \"hello\", not {method:?}"),
        )
    }

    /// `hello` offered no version this server speaks; `data.supported` lists the ones it does.
    pub fn unsupported_protocol(offered: &[u32]) -> Self {
        Self::new(
            codes::UNSUPPORTED_PROTOCOL,
            format!(
                "params.protocols: none of {offered:?} is supported; this server speaks {SUPPORTED_PROTOCOLS:?}"
            ),
        )
        .with_data(serde_json::json!({ "supported": SUPPORTED_PROTOCOLS }))
    }

    pub fn busy(limit: usize) -> Self {
        Self::new(
            codes::BUSY,
            format!(
                "connections: the coordinator already serves its limit of {limit} connections; try again later"
            ),
        )
        .with_data(serde_json::json!({ "limit": limit }))
    }

    /// A method other than `allowed` on a connection of the reserved lane.
    pub fn reserved_lane(limit: usize, method: &str, allowed: &[&str]) -> Self {
        Self::new(
            codes::BUSY,
            format!(
                "connections: the coordinator already serves its limit of {limit} connections; this connection is on the reserved lane, which serves only {}, not {method:?}; try again later",
                allowed.join(", ")
            ),
        )
        .with_data(serde_json::json!({ "limit": limit, "lane": "reserved", "allowed": allowed }))
    }

    pub fn shutting_down() -> Self {
        Self::new(
            codes::SHUTTING_DOWN,
            "server: the coordinator is shutting down; no new requests are accepted",
        )
    }

    pub fn response_too_large(bytes: usize, max: usize) -> Self {
        Self::new(
            codes::RESPONSE_TOO_LARGE,
            format!("response: {bytes} bytes exceed the line limit of {max}"),
        )
    }

    pub fn internal(detail: &str) -> Self {
        Self::new(codes::INTERNAL, detail)
    }

    /// `method` would deliver work or text to a model under a host pi that fails the
    /// supported-host gate ([Supported host]); `data` is `{detected, minimum}`.
    pub fn unsupported_host(method: &str, error: &crate::policy::version::VersionError) -> Self {
        Self::new(
            codes::UNSUPPORTED_HOST,
            format!(
                "{method}: unsupported host: {error}; status, stop, inbox and shutdown stay available"
            ),
        )
        .with_data(serde_json::json!({
            "detected": error.detected(),
            "minimum": crate::policy::version::MINIMUM_VERSION.to_string(),
        }))
    }

    /// `hello.client.extension` names another extension build than the one embedded in this
    /// binary; `data` is `{client, embedded}`.
    pub fn extension_mismatch(client: &str, embedded: &str) -> Self {
        Self::mismatch(
            format!(
                "hello.client.extension: the installed Slate pi extension {client} does not match the extension {embedded} of this slate binary; run `slate pi install` and restart pi"
            ),
            client,
            embedded,
        )
    }

    /// The same refusal for a worker (it presents a capability), whose extension hashes the
    /// files it was loaded from: they changed on disk after the coordinator wrote them.
    pub fn worker_extension_mismatch(client: &str, embedded: &str) -> Self {
        Self::mismatch(
            format!(
                "hello.client.extension: this worker's Slate extension files hash to {client}, not to the extension {embedded} of this slate binary (they changed on disk after Slate wrote them); the worker is not started"
            ),
            client,
            embedded,
        )
    }

    fn mismatch(message: String, client: &str, embedded: &str) -> Self {
        Self::new(codes::EXTENSION_MISMATCH, message)
            .with_data(serde_json::json!({ "client": client, "embedded": embedded }))
    }

    /// Invalid request input found by a policy validator: every problem, each naming its field.
    pub fn from_problems(problems: &Problems) -> Self {
        let data = serde_json::to_value(problems).unwrap_or(Value::Null);
        Self::new(codes::INVALID_REQUEST, problems.to_string()).with_data(data)
    }
}

/// A coordinator refusal keeps its rule code and wording.
impl From<Refusal> for ControlError {
    fn from(refusal: Refusal) -> Self {
        Self::new(refusal.code(), refusal.to_string())
    }
}

impl From<Problems> for ControlError {
    fn from(problems: Problems) -> Self {
        Self::from_problems(&problems)
    }
}

/// The runtime ends only by shutting down; anything else it reports is the server's fault.
impl From<crate::runtime::RuntimeError> for ControlError {
    fn from(error: crate::runtime::RuntimeError) -> Self {
        match error {
            crate::runtime::RuntimeError::Gone => Self::shutting_down(),
            other => Self::internal(&other.to_string()),
        }
    }
}

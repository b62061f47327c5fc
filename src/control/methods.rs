//! The typed protocol (`docs/protocol.md`, `docs/protocol.schema.json`): one marker type per
//! method tying its name to its `Params` and `Result` (the lsp-types shape), and one
//! [`Request`] enum with a variant per method (the mini-redis shape). Server, CLI, Hub and tests
//! all speak through these types; a request's params are read once, here, and every wrong type or
//! unknown field is refused naming it (`params.background: invalid type: string "yes", expected
//! a boolean`).
//!
//! Adding a method is local: one line in the `methods!` table below (name, params, result), one
//! arm in the service's `dispatch`. The compiler points at every other place.
//!
//! Schemas: generated from these types with `schemars` (derive-based, no runtime cost unless
//! [`protocol_schema`] is called; the alternative of a hand-written schema would drift from the
//! code, which is exactly what the checked-in schema test guards against).

use std::fmt;

use schemars::JsonSchema;
use serde::de::DeserializeOwned;
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::Value;
use uuid::Uuid;

use crate::control::protocol::ControlError;
use crate::control::summary::FleetSummary;
use crate::control::table::{FleetTable, FleetText};
use crate::core::{
    AgentPresence, ChildRef, ChildSnapshot, MessageId, MessageMode, RegistryEvent, Reply,
    StatusView, SubmitStatus, WindowOutcome,
};
use crate::policy::scheduling::SchedulingPolicy;

/// The protocol version this build prefers; `hello` negotiates it.
pub const PROTOCOL_VERSION: u32 = 2;

/// Every version this build speaks, oldest first. Protocol 1 (untyped params, unknown members
/// ignored) is not among them: its silently ignored fields are what protocol 2 fixes.
pub const SUPPORTED_PROTOCOLS: [u32; 1] = [PROTOCOL_VERSION];

/// One method of the protocol: its wire name and the types of its params and result.
pub trait Method {
    const NAME: &'static str;
    type Params: Serialize + DeserializeOwned + JsonSchema + Send + Sync + 'static;
    type Result: Serialize + DeserializeOwned + JsonSchema + Send + 'static;
}

/// Reads a request's params into `T`; a failure names the field by its path.
pub fn decode<T: DeserializeOwned>(params: Value) -> Result<T, ControlError> {
    serde_path_to_error::deserialize(params).map_err(|e| {
        let path = e.path().to_string();
        let field = if path == "." {
            "params".to_owned()
        } else {
            format!("params.{path}")
        };
        ControlError::invalid_request(&format!("{field}: {}", e.into_inner()))
    })
}

/// An exact generation (never a prefix, never "latest"). Read from `"UUID@generation"` or
/// from the contract's `ChildRef` object `{"id": "UUID", "generation": N}` (`generation` an
/// integer from 1, no other member); always written as the string.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Target(pub ChildRef);

impl From<ChildRef> for Target {
    fn from(r: ChildRef) -> Self {
        Self(r)
    }
}

impl fmt::Display for Target {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.0.fmt(f)
    }
}

impl Serialize for Target {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_str(&self.0)
    }
}

impl<'de> Deserialize<'de> for Target {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_any(TargetVisitor)
    }
}

struct TargetVisitor;

impl<'de> serde::de::Visitor<'de> for TargetVisitor {
    type Value = Target;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(r#""UUID@generation" or {"id": "UUID", "generation": N}"#)
    }

    fn visit_str<E: serde::de::Error>(self, text: &str) -> Result<Target, E> {
        text.parse().map(Target).map_err(E::custom)
    }

    fn visit_map<A: serde::de::MapAccess<'de>>(self, mut map: A) -> Result<Target, A::Error> {
        use serde::de::Error as _;
        let (mut id, mut generation) = (None, None);
        while let Some(key) = map.next_key::<String>()? {
            match key.as_str() {
                "id" if id.is_none() => {
                    let text = map.next_value::<String>()?;
                    id = Some(crate::core::ids::parse_full_uuid(&text).map_err(A::Error::custom)?);
                }
                "generation" if generation.is_none() => {
                    generation = Some(map.next_value::<TargetGeneration>()?.0);
                }
                "id" | "generation" => {
                    return Err(A::Error::custom(format_args!("duplicate field `{key}`")));
                }
                other => return Err(A::Error::unknown_field(other, &["id", "generation"])),
            }
        }
        let id = id.ok_or_else(|| A::Error::missing_field("id"))?;
        let generation = generation.ok_or_else(|| A::Error::missing_field("generation"))?;
        Ok(Target(ChildRef::new(id, generation)))
    }
}

/// An object target's `generation`: a JSON integer from 1 to 4294967295 (no float, string
/// or sign).
struct TargetGeneration(u32);

impl<'de> Deserialize<'de> for TargetGeneration {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct Visitor;
        impl serde::de::Visitor<'_> for Visitor {
            type Value = TargetGeneration;

            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a generation: an integer from 1 to 4294967295")
            }

            fn visit_u64<E: serde::de::Error>(self, n: u64) -> Result<TargetGeneration, E> {
                u32::try_from(n)
                    .ok()
                    .filter(|&g| g >= 1)
                    .map(TargetGeneration)
                    .ok_or_else(|| E::invalid_value(serde::de::Unexpected::Unsigned(n), &self))
            }

            fn visit_i64<E: serde::de::Error>(self, n: i64) -> Result<TargetGeneration, E> {
                match u64::try_from(n) {
                    Ok(n) => self.visit_u64(n),
                    Err(_) => Err(E::invalid_value(serde::de::Unexpected::Signed(n), &self)),
                }
            }
        }
        deserializer.deserialize_u64(Visitor)
    }
}

const UUID_PATTERN: &str =
    "[0-9A-Fa-f]{8}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{12}";

impl JsonSchema for Target {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "Target".into()
    }

    fn json_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
        schemars::json_schema!({
            "description": "An exact generation (never a prefix, never \"latest\"): the string \"UUID@generation\" (36-character hyphenated UUID; generation from 1, no leading zero), or the contract's object {\"id\": \"UUID\", \"generation\": N}. Slate always writes the string.",
            "oneOf": [
                {
                    "type": "string",
                    "pattern": format!("^{UUID_PATTERN}@[1-9][0-9]*$"),
                },
                {
                    "type": "object",
                    "properties": {
                        "id": {"type": "string", "pattern": format!("^{UUID_PATTERN}$")},
                        "generation": {"type": "integer", "minimum": 1, "maximum": u32::MAX},
                    },
                    "required": ["id", "generation"],
                    "additionalProperties": false,
                },
            ],
        })
    }
}

/// A message receipt id: exactly the 36-character hyphenated UUID.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct MessageRef(pub MessageId);

impl Serialize for MessageRef {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        self.0.serialize(serializer)
    }
}

impl<'de> Deserialize<'de> for MessageRef {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let text = String::deserialize(deserializer)?;
        crate::core::ids::parse_full_uuid(&text)
            .map(|u| Self(MessageId(u)))
            .map_err(serde::de::Error::custom)
    }
}

impl JsonSchema for MessageRef {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "MessageRef".into()
    }

    fn json_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
        schemars::json_schema!({
            "type": "string",
            "description": "A message receipt id (36-character hyphenated UUID).",
            "pattern": format!("^{UUID_PATTERN}$"),
        })
    }
}

// ---- params ---------------------------------------------------------------------------

/// `hello`: the versions the client speaks; the server picks one or refuses with its list.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct HelloParams {
    /// Protocol versions the client speaks (at least one).
    pub protocols: Vec<u32>,
    /// Who the client is: its name and version, e.g. `"slate 0.1.0"` (first 200 characters
    /// kept), alone or with the content hash of the Slate pi extension it runs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub client: Option<ClientInfo>,
    /// A worker generation's secret capability: the connection then speaks as that
    /// generation (see `control::caller`). Redacted in `Debug`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(with = "Option<String>")]
    pub capability: Option<crate::runtime::Capability>,
}

/// `hello.client`: the string `"name version"`, or `{"name": "…", "extension": "<hash>"}`
/// from Slate's pi extension in a main session, where `extension` is the content hash of the
/// extension files it was installed from (`install.json`). A present hash that is not the
/// running binary's embedded one refuses the `hello` (`extension-mismatch`): the installed
/// extension and the binary disagree about the protocol they were built for.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ClientInfo {
    pub name: String,
    pub extension: Option<String>,
}

impl ClientInfo {
    /// A client known by its name only.
    pub fn named(name: impl Into<String>) -> Self {
        Self {
            name: name.into(),
            extension: None,
        }
    }
}

/// Longest `hello.client.extension` read: a content hash is 32 hex digits.
pub const MAX_EXTENSION_HASH: usize = 64;

impl Serialize for ClientInfo {
    /// The plain string when there is no extension hash.
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeStruct as _;
        match &self.extension {
            None => serializer.serialize_str(&self.name),
            Some(extension) => {
                let mut s = serializer.serialize_struct("ClientInfo", 2)?;
                s.serialize_field("name", &self.name)?;
                s.serialize_field("extension", extension)?;
                s.end()
            }
        }
    }
}

impl<'de> Deserialize<'de> for ClientInfo {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_any(ClientInfoVisitor)
    }
}

struct ClientInfoVisitor;

impl<'de> serde::de::Visitor<'de> for ClientInfoVisitor {
    type Value = ClientInfo;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(r#""name version" or {"name": "…", "extension": "<hex hash>"}"#)
    }

    fn visit_str<E: serde::de::Error>(self, text: &str) -> Result<ClientInfo, E> {
        Ok(ClientInfo::named(text))
    }

    fn visit_map<A: serde::de::MapAccess<'de>>(self, mut map: A) -> Result<ClientInfo, A::Error> {
        use serde::de::Error as _;
        let (mut name, mut extension) = (None, None);
        while let Some(key) = map.next_key::<String>()? {
            match key.as_str() {
                "name" if name.is_none() => name = Some(map.next_value::<String>()?),
                "extension" if extension.is_none() => {
                    extension = Some(map.next_value::<Option<String>>()?);
                }
                "name" | "extension" => {
                    return Err(A::Error::custom(format_args!("duplicate field `{key}`")));
                }
                other => return Err(A::Error::unknown_field(other, &["name", "extension"])),
            }
        }
        let name = name.ok_or_else(|| A::Error::missing_field("name"))?;
        let extension = extension.flatten();
        if let Some(hash) = &extension {
            let hex = |b: u8| b.is_ascii_digit() || (b'a'..=b'f').contains(&b);
            if hash.is_empty() || hash.len() > MAX_EXTENSION_HASH || !hash.bytes().all(hex) {
                return Err(A::Error::custom(format_args!(
                    "extension: must be a content hash of 1 to {MAX_EXTENSION_HASH} lowercase hex digits (`extension` of install.json)"
                )));
            }
        }
        Ok(ClientInfo { name, extension })
    }
}

impl JsonSchema for ClientInfo {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "ClientInfo".into()
    }

    fn json_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
        schemars::json_schema!({
            "description": "Who the client is: \"name version\", or {\"name\", \"extension\"?} where extension is the content hash of Slate's installed pi extension (install.json); a hash other than the running binary's refuses hello with extension-mismatch.",
            "oneOf": [
                {"type": "string"},
                {
                    "type": "object",
                    "properties": {
                        "name": {"type": "string"},
                        "extension": {
                            "type": ["string", "null"],
                            "pattern": format!("^[0-9a-f]{{1,{MAX_EXTENSION_HASH}}}$"),
                        },
                    },
                    "required": ["name"],
                    "additionalProperties": false,
                },
            ],
        })
    }
}

/// Methods without params: `{}` (or absent / `null`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct NoParams {}

/// `status`: one generation (with `target`), the fleet, its summary rows (`summary`), or the
/// table's compact rows (`table`).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct StatusParams {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub target: Option<Target>,
    /// Summary rows instead of full snapshots (ignored with a target).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub summary: bool,
    /// The fleet table's compact rows instead (ignored with a target; over `summary`).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub table: bool,
    /// The fleet table as text, exactly as `slate status` prints it (ignored with a target;
    /// over `table` and `summary`).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub text: bool,
}

/// `delegate`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct DelegateParams {
    /// The contract's native `delegate_task` input or a compatibility `subagent` launch. Its
    /// shape is the user's and is validated by policy (problems name JSON paths like
    /// `$.tasks[0].limits.requests`), not by this schema.
    #[schemars(with = "serde_json::Map<String, Value>")]
    pub request: Value,
    /// Overrides the request's own `background`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub background: Option<bool>,
    /// A root's foreground call only: when the caller stops waiting (its connection closes
    /// before the outcome), the call is cancelled — its unsettled members are marked and
    /// drain, settled ones keep their outcome ([Registry, controls and final delivery]:
    /// "caller foreground cancellation"). Without it the root's window goes on, owned by the
    /// coordinator. `slate mcp` sets it: the MCP host's `notifications/cancelled` is the
    /// caller's cancellation. A child's foreground call is always cancelled so; a background
    /// call has nothing to abandon.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub cancel_on_close: bool,
}

/// `stop`, `park`: one exact generation.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct TargetParams {
    pub target: Target,
}

/// `transcript`: one exact generation's messages, from the start or after a cursor.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct TranscriptParams {
    pub target: Target,
    /// The `cursor` of an earlier answer for the same target: only the messages recorded
    /// after it are returned. Absent: every message.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub after: Option<u64>,
}

/// `stopMany`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct StopManyParams {
    pub targets: Vec<Target>,
}

/// `steer`: a running generation.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct SteerParams {
    pub target: Target,
    pub text: String,
}

/// `message`: root → a direct child (or the root inbox without a target).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct MessageParams {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub target: Option<Target>,
    /// Non-blank text.
    #[schemars(extend("x-maxBytes" = crate::core::bounds::MESSAGE_BYTES))]
    pub text: String,
    #[serde(default)]
    pub mode: MessageMode,
}

/// `wait`: `timeoutMs` 1..=60000; `target` and `messageId` together are refused.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct WaitParams {
    /// How long to wait, in milliseconds.
    // The schema states the bounds; the type takes any `u64`, so a value outside them is
    // refused by the core, in its own words, not by serde.
    #[schemars(range(
        min = crate::core::bounds::WAIT_MIN_MS,
        max = crate::core::bounds::WAIT_MAX_MS
    ))]
    pub timeout_ms: u64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub target: Option<Target>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message_id: Option<MessageRef>,
}

/// `resume`: a paused generation, with a continuation.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ResumeParams {
    pub target: Target,
    /// The complete continuation text.
    #[schemars(extend("x-maxBytes" = crate::core::bounds::ASSIGNMENT_BYTES))]
    pub assignment: String,
}

/// `followup` / `revive`: a new generation of an idle / parked identity.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct RenewParams {
    pub target: Target,
    /// The complete new assignment text.
    #[schemars(extend("x-maxBytes" = crate::core::bounds::ASSIGNMENT_BYTES))]
    pub assignment: String,
    /// A JSON Schema for the structured result, validated by policy (`$.resultSchema`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(with = "Option<serde_json::Map<String, Value>>")]
    pub result_schema: Option<Value>,
}

/// `guard` (child-only): asked by the worker's extension before a model request, a
/// compaction or a tool execution; the coordinator counts it or refuses it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(tag = "kind", rename_all = "camelCase", deny_unknown_fields)]
pub enum GuardParams {
    /// Before an agent-turn model request is forwarded (pi `before_provider_request`).
    Request {},
    /// Before a compaction or branch summary (pi `session_before_compact` /
    /// `session_before_tree`): a model request, counted as one.
    Compaction {},
    /// Before a tool executes (pi `tool_call`).
    Tool {
        /// The tool's name.
        tool: String,
        /// pi's `toolCallId`.
        #[serde(rename = "callId")]
        call_id: String,
    },
}

/// `submit` (child-only): one `submit_result` attempt.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct SubmitParams {
    /// The value exactly as the model wrote it; validated strictly (no coercion) against the
    /// generation's `resultSchema`.
    #[schemars(with = "Value")]
    pub value: Value,
}

/// `parentToolStart` (operator-only): the main session's model is about to run a tool.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ParentToolStartParams {
    /// pi's `toolCallId` (1 to 1024 bytes, not blank, no control character); released by
    /// `parentToolEnd`.
    pub call_id: String,
    /// The tool's name (1 to 256 bytes, no control character). The coordinator decides
    /// whether it mutates (`policy::parent_tools`).
    pub tool: String,
}

/// `parentToolEnd` (operator-only): the call finalized (ran, failed or was blocked).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ParentToolEndParams {
    pub call_id: String,
}

// ---- results --------------------------------------------------------------------------

/// `hello`: who answers, and the version now in use.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct HelloResult {
    pub protocol: u32,
    /// `"slate <version>"`.
    pub server: String,
    pub parent_id: Uuid,
    pub cwd: String,
    pub pid: u32,
    /// Who this connection speaks for.
    pub actor: super::caller::CallerView,
}

/// `subscribe`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct SubscribeResult {
    pub subscribed: bool,
}

/// `shutdown`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ShutdownResult {
    pub shutting_down: bool,
}

/// `hostExtensions`: the extension load units the host pi session has loaded (Slate's
/// extension in the main session reports them once, from pi's tool provenance).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct HostExtensionsParams {
    pub units: Vec<crate::policy::host_extensions::HostUnit>,
}

/// What every worker of this session loads besides Slate's own extension, what a
/// `workerExtensions` pattern matched but is withheld (with the reason), and the doctrine line
/// for the main session's system prompt (`null` when nothing is selected).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct HostExtensionsResult {
    #[serde(flatten)]
    pub selection: crate::policy::host_extensions::Selection,
    pub doctrine: Option<String>,
}

/// The coordinator's counters.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct FleetStats {
    pub active_permits: u32,
    pub queued: u64,
    /// The generation holding the writer lease, `"UUID@generation"`.
    pub writer: Option<Target>,
    pub admitted_messages: u32,
    pub pending_waiters: u64,
    pub live_workers: u32,
    pub open_windows: u64,
    pub root_inbox: u64,
}

/// `status` without a target: every current generation in admission order.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct FleetStatus {
    pub parent_id: Uuid,
    pub children: Vec<ChildSnapshot>,
    pub agents: Vec<AgentPresence>,
    pub stats: FleetStats,
    pub policy: SchedulingPolicy,
}

/// `status`: which answer depends on the params.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(untagged)]
pub enum StatusResult {
    /// With `target`: the pinned snapshot, its generations and presence.
    Generation(Box<StatusView>),
    /// Without: full snapshots.
    Fleet(FleetStatus),
    /// With `summary: true`: summary rows.
    Summary(#[serde(deserialize_with = "FleetSummary::deserialize_owned")] FleetSummary<'static>),
    /// With `table: true`: the table's compact rows.
    Table(#[serde(deserialize_with = "FleetTable::deserialize_owned")] FleetTable<'static>),
    /// With `text: true`: the table as `slate status` prints it.
    Text(#[serde(deserialize_with = "FleetText::deserialize_owned")] FleetText<'static>),
}

/// A foreground `delegate`: the admission, then the drained window.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct DelegateOutcome {
    pub admitted: Reply,
    pub outcome: WindowOutcome,
    /// The model-facing preview of `outcome.outcomes`, in order ([Full output artifacts and
    /// previews]): a references header, then each field clipped to 2048 characters with a
    /// label, within 50 KB / 2000 lines (`policy::preview::preview`).
    pub preview: String,
}

/// `guard`: whether the worker may go ahead.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct GuardResult {
    pub allow: bool,
    /// Why not (model- and user-facing; starts with `out of budget:`). Only when denied.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
}

/// `submit`: what became of the attempt.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct SubmitResult {
    /// `submitted` (valid, and now final), `invalid` (may be corrected and submitted again)
    /// or `duplicate` (a valid value was accepted before; nothing changed, not an attempt).
    pub status: SubmitStatus,
    /// Validation attempts so far (duplicates and refused calls are not attempts).
    pub attempts: u32,
    /// This attempt's errors, `"<JSON Pointer>: <message>"`, at most 32; empty unless invalid.
    #[schemars(length(max = 32))]
    pub errors: Vec<String>,
    /// What to tell the model (the `submit_result` tool's output).
    pub message: String,
}

/// `delegate`: background answers at admission, foreground once the window drains.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(untagged)]
pub enum DelegateResult {
    Background(Reply),
    Foreground(Box<DelegateOutcome>),
}

/// `parentToolStart`: whether the call now holds a parent mutation reservation (`false` for
/// the exempt read-only and delegation tools).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ParentToolStartResult {
    pub reserved: bool,
}

/// `parentToolEnd`: whether a reservation of that call id was released (`false` for an id
/// that held none).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ParentToolEndResult {
    pub released: bool,
}

/// `transcript`: pi session `message` entries of exactly one generation, as pi wrote them.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct TranscriptResult {
    pub target: Target,
    /// pi's own message objects (`role`, `content`, …); their shape is pi's. With `after`,
    /// only those recorded after it (unless `restarted`).
    #[schemars(with = "Vec<serde_json::Map<String, Value>>")]
    pub messages: Vec<Value>,
    /// Where this answer ends (an opaque position in the session file, after its last
    /// complete entry): pass it as `after` to read only what is recorded later.
    pub cursor: u64,
    /// `after` no longer matched the session file (it was replaced or shortened), so
    /// `messages` are every message from the start: the caller replaces what it had.
    #[serde(default)]
    pub restarted: bool,
}

/// `profiles`: as `slate profiles --json` (`{toolPolicy, profiles}`); its shape is the profile
/// loader's and documented in `docs/configuration.md`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(transparent)]
pub struct ProfilesResult(#[schemars(with = "serde_json::Map<String, Value>")] pub Value);

// ---- notifications --------------------------------------------------------------------

/// What a subscribed connection receives as `event` notifications.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(tag = "kind", rename_all = "camelCase", deny_unknown_fields)]
pub enum Event {
    /// Something in the registry changed.
    Registry { event: Box<RegistryEvent> },
    /// A background or silent window drained. `preview` is the model-facing preview of
    /// `outcome.outcomes`, the same as a foreground `DelegateOutcome.preview`.
    Outcome {
        outcome: Box<WindowOutcome>,
        preview: String,
    },
    /// The coordinator's own event stream fell behind and dropped `missed` events.
    Lagged { missed: u64 },
    /// The runtime has shut down; no more events follow.
    ShutdownComplete,
}

/// `lagged` notification: this connection fell behind and `missed` events were dropped.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Lagged {
    pub missed: u64,
}

/// A server → client message without an id.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(tag = "method", content = "params", rename_all = "camelCase")]
pub enum Notification {
    Event(Event),
    Lagged(Lagged),
    /// The live rows of a running `callTool` on this connection.
    ToolUpdate(crate::tools::ToolUpdate),
    /// A background `callTool` of this connection drained.
    ToolOutcome(crate::tools::ToolOutcome),
}

// ---- the method table -----------------------------------------------------------------

macro_rules! methods {
    ($( $(#[$doc:meta])* $variant:ident = $name:literal, $params:ty => $result:ty; )*) => {
        /// Marker types, one per method (`method::Status::NAME == "status"`).
        pub mod method {
            #[allow(clippy::wildcard_imports, reason = "the table names the types")]
            use super::*;
            $(
                $(#[$doc])*
                #[derive(Clone, Copy, Debug)]
                pub enum $variant {}
                impl Method for $variant {
                    const NAME: &'static str = $name;
                    type Params = $params;
                    type Result = $result;
                }
            )*
        }

        /// One request: a variant per method, its params typed.
        #[derive(Clone, Debug, PartialEq)]
        pub enum Request {
            $( $(#[$doc])* $variant($params), )*
        }

        /// Every method name, in table order.
        pub const METHODS: &[&str] = &[$( $name ),*];

        impl Request {
            /// The wire name of this request's method.
            pub fn method(&self) -> &'static str {
                match self {
                    $( Self::$variant(_) => $name, )*
                }
            }

            /// Reads `params` for `method`: `unknown-method`, or `invalid-request` naming the
            /// field.
            pub fn parse(method: &str, params: Value) -> Result<Self, ControlError> {
                match method {
                    $( $name => decode::<$params>(params).map(Self::$variant), )*
                    other => Err(ControlError::unknown_method(other)),
                }
            }

            /// The params as JSON.
            pub fn params(&self) -> serde_json::Result<Value> {
                match self {
                    $( Self::$variant(p) => serde_json::to_value(p), )*
                }
            }

            /// One request line `{"id", "method", "params"}`, newline-terminated.
            pub fn encode_line(&self, id: u64) -> serde_json::Result<Vec<u8>> {
                match self {
                    $( Self::$variant(p) => super::codec::encode_line(&Outgoing { id, method: $name, params: p }), )*
                }
            }
        }

        /// `(name, params schema, result schema)` of every method.
        fn method_schemas(generator: &mut schemars::SchemaGenerator) -> Vec<(&'static str, schemars::Schema, schemars::Schema)> {
            vec![$( ($name, generator.subschema_for::<$params>(), generator.subschema_for::<$result>()), )*]
        }
    };
}

methods! {
    /// The handshake; handled by the connection.
    Hello = "hello", HelloParams => HelloResult;
    /// Starts `event` / `lagged` notifications; handled by the connection.
    Subscribe = "subscribe", NoParams => SubscribeResult;
    Status = "status", StatusParams => StatusResult;
    Agents = "agents", NoParams => Vec<AgentPresence>;
    Delegate = "delegate", DelegateParams => DelegateResult;
    Stop = "stop", TargetParams => Reply;
    StopMany = "stopMany", StopManyParams => Reply;
    Steer = "steer", SteerParams => Reply;
    Message = "message", MessageParams => Reply;
    Inbox = "inbox", NoParams => Reply;
    Wait = "wait", WaitParams => Reply;
    Park = "park", TargetParams => Reply;
    Resume = "resume", ResumeParams => Reply;
    Followup = "followup", RenewParams => Reply;
    Revive = "revive", RenewParams => Reply;
    Transcript = "transcript", TranscriptParams => TranscriptResult;
    Profiles = "profiles", NoParams => ProfilesResult;
    Policy = "policy", NoParams => SchedulingPolicy;
    Shutdown = "shutdown", NoParams => ShutdownResult;
    /// Root-only, once per session: selects the host extensions every worker loads too.
    HostExtensions = "hostExtensions", HostExtensionsParams => HostExtensionsResult;
    /// Child-only: before a model request, compaction or tool execution of the caller.
    Guard = "guard", GuardParams => GuardResult;
    /// Child-only: one structured-result attempt of the caller (`submit_result`).
    Submit = "submit", SubmitParams => SubmitResult;
    /// Operator-only: the main session's model reserves a mutating tool call at preflight.
    ParentToolStart = "parentToolStart", ParentToolStartParams => ParentToolStartResult;
    /// Operator-only: a main-session tool call finalized; its reservation is released.
    ParentToolEnd = "parentToolEnd", ParentToolEndParams => ParentToolEndResult;
    /// Operator-only: the current generations for completion (handle, role, status).
    Targets = "targets", NoParams => crate::control::targets::TargetsResult;
    /// A background outcome the caller started reached it (marks `deliveredAt`).
    OutcomeDelivered = "outcomeDelivered", crate::control::targets::OutcomeDeliveredParams => crate::control::targets::OutcomeDeliveredResult;
    /// Operator-only: the session's remembered providers and the host pi's model registry
    /// (which the host reports with it); `slate effective --parent` reads them.
    RoutingFacts = "routingFacts", crate::control::session_routing::RoutingFactsParams => crate::control::session_routing::RoutingFacts;
    /// The caller's model tools (`src/tools`).
    Tools = "tools", NoParams => crate::tools::ToolsResult;
    /// One model tool call of the caller; see `toolUpdate` and `toolOutcome`.
    CallTool = "callTool", crate::tools::CallToolParams => crate::tools::ToolAnswer;
}

/// A request line as a client writes it.
#[derive(Serialize)]
struct Outgoing<'a, P: Serialize> {
    id: u64,
    method: &'static str,
    params: &'a P,
}

/// A request line for method `M` (generic callers; [`Request::encode_line`] for the enum).
pub fn encode_request<M: Method>(id: u64, params: &M::Params) -> serde_json::Result<Vec<u8>> {
    super::codec::encode_line(&Outgoing {
        id,
        method: M::NAME,
        params,
    })
}

impl Serialize for Request {
    /// `{"method", "params"}` (tests and logs; the wire adds the id).
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        use serde::ser::{Error as _, SerializeStruct};
        let params = self.params().map_err(S::Error::custom)?;
        let mut s = serializer.serialize_struct("Request", 2)?;
        s.serialize_field("method", self.method())?;
        s.serialize_field("params", &params)?;
        s.end()
    }
}

/// The machine-readable schema of the whole protocol (`docs/protocol.schema.json`): every
/// method's params and result, every notification, the error object, under `$defs`.
pub fn protocol_schema() -> Value {
    let mut generator = schemars::generate::SchemaSettings::draft2020_12().into_generator();
    let mut methods = serde_json::Map::new();
    for (name, params, result) in method_schemas(&mut generator) {
        methods.insert(
            name.to_owned(),
            serde_json::json!({"params": params, "result": result}),
        );
    }
    let notification = generator.subschema_for::<Notification>();
    let error = generator.subschema_for::<crate::control::protocol::ControlError>();
    let defs = generator.take_definitions(true);
    let mut schema = serde_json::json!({
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "title": format!("Slate control protocol {PROTOCOL_VERSION}"),
        "description": "Generated from src/control/methods.rs by `SLATE_BLESS=1 cargo test --test protocol_schema`; see docs/protocol.md. `x-methods` maps each method to the schemas of its params and result; a response is {id, result} or {id, error}; notifications are {method, params}.",
        "x-protocol": PROTOCOL_VERSION,
        "x-methods": methods,
        "x-notification": notification,
        "x-error": error,
        "$defs": defs,
    });
    portable_formats(&mut schema);
    schema
}

/// Without schemars' own `format`s (`uint32`, `uint64`, `int64`, `double`, …): no JSON Schema
/// vocabulary defines them and a strict validator (Ajv's default strict mode) refuses a
/// schema that uses them. What they said stays: an unsigned integer keeps its `"minimum": 0`
/// and every integer its `"type": "integer"`. Standard formats (`uuid`) stay.
fn portable_formats(value: &mut Value) {
    match value {
        Value::Object(map) => {
            let nonstandard = map.get("format").and_then(Value::as_str).is_some_and(|f| {
                f.starts_with("uint") || f.starts_with("int") || f == "double" || f == "float"
            });
            if nonstandard {
                map.remove("format");
            }
            map.values_mut().for_each(portable_formats);
        }
        Value::Array(items) => items.iter_mut().for_each(portable_formats),
        _ => {}
    }
}

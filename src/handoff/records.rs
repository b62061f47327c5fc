//! The Slate records kept in pi session files, their JSON shapes and their validation.
//!
//! | `customType` | entry | data |
//! |---|---|---|
//! | `slate-handoff-purpose` | `custom` in the session handed off | [`PurposeRecord`] |
//! | `slate-handoff` | `custom` in the successor | [`HandoffRecord`] |
//! | `slate-state` | `custom` | [`StateRecord`] |
//! | `slate-kickoff-claimed` | `custom` | [`ClaimRecord`] |
//! | `slate-kickoff` | `custom_message`, `display:false` | text; `details` `{kickoffId, purpose?}` |
//!
//! A record is validated as a whole; every problem names the JSON path (`$.snapshot.threads[2]`)
//! and the rule. Unknown fields are kept when read (newer writers may add some).

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::policy::Problem;
use crate::policy::problem::{index, key};

pub const PURPOSE_TYPE: &str = "slate-handoff-purpose";
pub const HANDOFF_TYPE: &str = "slate-handoff";
pub const STATE_TYPE: &str = "slate-state";
pub const CLAIM_TYPE: &str = "slate-kickoff-claimed";
pub const KICKOFF_TYPE: &str = "slate-kickoff";

/// Why a handoff happens: the leading option of `slate handoff`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum Purpose {
    TrackBoundary,
    PostCheck,
    ContextBudget,
    UserRequest,
}

impl Purpose {
    pub const ALL: [Purpose; 4] = [
        Purpose::TrackBoundary,
        Purpose::PostCheck,
        Purpose::ContextBudget,
        Purpose::UserRequest,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            Purpose::TrackBoundary => "track-boundary",
            Purpose::PostCheck => "post-check",
            Purpose::ContextBudget => "context-budget",
            Purpose::UserRequest => "user-request",
        }
    }

    pub fn from_name(name: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|p| p.as_str() == name)
    }
}

/// Why a session is paused. A saved state that is paused without a reason is a legacy pause.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum PauseReason {
    ContextBudget,
    Adoption,
}

impl PauseReason {
    pub fn as_str(self) -> &'static str {
        match self {
            PauseReason::ContextBudget => "context-budget",
            PauseReason::Adoption => "adoption",
        }
    }
}

/// What the handoff carries over: the fleet's threads, the episodes (artifact references)
/// and the pause, if any.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Snapshot {
    /// One object per thread (`id`, `generation`, `status`, …) from the coordinator's registry.
    pub threads: Vec<Value>,
    /// One object per episode: `thread` (`UUID@generation`) and its `artifacts`.
    pub episodes: Vec<Value>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pause_reason: Option<PauseReason>,
}

/// A kickoff waiting to be delivered in the successor.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Kickoff {
    /// Claims name this id.
    pub id: String,
    pub text: String,
    /// `focus` (the command's focus only), `home` or `project` (a kickoff template).
    pub source: KickoffSource,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum KickoffSource {
    Focus,
    /// No template and no focus: the default text naming the fleet.
    Fleet,
    Home,
    Project,
}

impl KickoffSource {
    pub fn as_str(self) -> &'static str {
        match self {
            KickoffSource::Focus => "focus",
            KickoffSource::Fleet => "fleet",
            KickoffSource::Home => "home",
            KickoffSource::Project => "project",
        }
    }
}

/// `slate-handoff-purpose`: one handoff attempt of one session.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PurposeRecord {
    pub session_id: String,
    pub attempt_id: String,
    pub purpose: Purpose,
    pub status: AttemptStatus,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub successor_session_id: Option<String>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum AttemptStatus {
    /// Recorded before the transfer; still pending after a failure or cancellation.
    Pending,
    /// The transfer succeeded.
    Consumed,
}

/// `slate-handoff`: the stable successor-bound entry.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct HandoffRecord {
    pub session_id: String,
    pub snapshot: Snapshot,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub purpose: Option<Purpose>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kickoff: Option<Kickoff>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub thinking_level: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub logical_model: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub summary_visible: Option<bool>,
}

/// `slate-state`: the saved Slate state of one session.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct StateRecord {
    pub session_id: String,
    pub snapshot: Snapshot,
    pub paused: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kickoff: Option<Kickoff>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub thinking_level: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub logical_model: Option<String>,
}

/// `slate-kickoff-claimed`: delivery of one kickoff was claimed; it is never sent again.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ClaimRecord {
    pub session_id: String,
    pub kickoff_id: String,
}

impl PurposeRecord {
    pub fn parse(v: &Value) -> Result<Self, Vec<Problem>> {
        let map = object(v, "$")?;
        let mut p = Vec::new();
        let session_id = required_text(map, "sessionId", &mut p);
        let attempt_id = required_text(map, "attemptId", &mut p);
        let purpose = if let Some(v) = map.get("purpose") {
            purpose(v, "$.purpose", &mut p)
        } else {
            p.push(Problem::new("$.purpose", "required: the attempt's purpose"));
            None
        };
        let status = match map.get("status").and_then(Value::as_str) {
            Some("pending") => Some(AttemptStatus::Pending),
            Some("consumed") => Some(AttemptStatus::Consumed),
            _ => {
                p.push(
                    Problem::new("$.status", "must be \"pending\" or \"consumed\"")
                        .json(map.get("status").unwrap_or(&Value::Null)),
                );
                None
            }
        };
        let successor = optional_text(map, "successorSessionId", &mut p);
        match (session_id, attempt_id, purpose, status) {
            (Some(session_id), Some(attempt_id), Some(purpose), Some(status)) if p.is_empty() => {
                Ok(Self {
                    session_id,
                    attempt_id,
                    purpose,
                    status,
                    successor_session_id: successor,
                })
            }
            _ => Err(p),
        }
    }
}

impl HandoffRecord {
    /// The same record validation as a saved state (spec: "Project trust boundary").
    pub fn parse(v: &Value) -> Result<Self, Vec<Problem>> {
        let map = object(v, "$")?;
        let mut p = Vec::new();
        let common = Common::parse(map, &mut p);
        // An older entry has no purpose: it stays readable, no cause is invented.
        let purpose = map
            .get("purpose")
            .filter(|v| !v.is_null())
            .and_then(|v| purpose(v, "$.purpose", &mut p));
        let summary_visible = match map.get("summaryVisible") {
            None | Some(Value::Null) => None,
            Some(Value::Bool(b)) => Some(*b),
            Some(other) => {
                p.push(Problem::new("$.summaryVisible", "must be a boolean").json(other));
                None
            }
        };
        match common {
            Some(c) if p.is_empty() => Ok(Self {
                session_id: c.session_id,
                snapshot: c.snapshot,
                purpose,
                kickoff: c.kickoff,
                model: c.model,
                thinking_level: c.thinking_level,
                logical_model: c.logical_model,
                summary_visible,
            }),
            _ => Err(p),
        }
    }
}

impl StateRecord {
    pub fn parse(v: &Value) -> Result<Self, Vec<Problem>> {
        let map = object(v, "$")?;
        let mut p = Vec::new();
        let common = Common::parse(map, &mut p);
        let paused = match map.get("paused") {
            Some(Value::Bool(b)) => Some(*b),
            other => {
                p.push(
                    Problem::new("$.paused", "required: a boolean")
                        .json(other.unwrap_or(&Value::Null)),
                );
                None
            }
        };
        if paused == Some(false)
            && let Some(c) = &common
            && let Some(reason) = c.snapshot.pause_reason
        {
            p.push(
                Problem::new(
                    "$.snapshot.pauseReason",
                    "an unpaused state has no pause reason",
                )
                .value(reason.as_str()),
            );
        }
        match (common, paused) {
            (Some(c), Some(paused)) if p.is_empty() => Ok(Self {
                session_id: c.session_id,
                snapshot: c.snapshot,
                paused,
                kickoff: c.kickoff,
                model: c.model,
                thinking_level: c.thinking_level,
                logical_model: c.logical_model,
            }),
            _ => Err(p),
        }
    }
}

impl ClaimRecord {
    pub fn parse(v: &Value) -> Result<Self, Vec<Problem>> {
        let map = object(v, "$")?;
        let mut p = Vec::new();
        let session_id = required_text(map, "sessionId", &mut p);
        let kickoff_id = required_text(map, "kickoffId", &mut p);
        match (session_id, kickoff_id) {
            (Some(session_id), Some(kickoff_id)) => Ok(Self {
                session_id,
                kickoff_id,
            }),
            _ => Err(p),
        }
    }
}

/// Fields shared by the handoff entry and the saved state.
struct Common {
    session_id: String,
    snapshot: Snapshot,
    kickoff: Option<Kickoff>,
    model: Option<String>,
    thinking_level: Option<String>,
    logical_model: Option<String>,
}

impl Common {
    fn parse(map: &Map<String, Value>, p: &mut Vec<Problem>) -> Option<Self> {
        let session_id = required_text(map, "sessionId", p);
        let snapshot = if let Some(v) = map.get("snapshot") {
            parse_snapshot(v, p)
        } else {
            p.push(Problem::new("$.snapshot", "required: the fleet snapshot"));
            None
        };
        let kickoff = match map.get("kickoff") {
            None | Some(Value::Null) => None,
            Some(v) => parse_kickoff(v, p),
        };
        let model = optional_text(map, "model", p);
        if let Some(m) = &model
            && !m.contains('/')
        {
            p.push(
                Problem::new("$.model", "must be an exact \"provider/id\"").value(format!("{m:?}")),
            );
        }
        let thinking_level = optional_text(map, "thinkingLevel", p);
        let logical_model = optional_text(map, "logicalModel", p);
        Some(Self {
            session_id: session_id?,
            snapshot: snapshot?,
            kickoff,
            model,
            thinking_level,
            logical_model,
        })
    }
}

fn parse_snapshot(v: &Value, p: &mut Vec<Problem>) -> Option<Snapshot> {
    let Value::Object(map) = v else {
        p.push(Problem::new("$.snapshot", "must be an object").json(v));
        return None;
    };
    let before = p.len();
    let mut list = |name: &str, what: &str| -> Vec<Value> {
        let path = key("$.snapshot", name);
        match map.get(name) {
            None => Vec::new(),
            Some(Value::Array(items)) => {
                for (i, item) in items.iter().enumerate() {
                    if !item.is_object() {
                        p.push(
                            Problem::new(index(&path, i), format!("each {what} is an object"))
                                .json(item),
                        );
                    }
                }
                items.clone()
            }
            Some(other) => {
                p.push(Problem::new(path, "must be an array").json(other));
                Vec::new()
            }
        }
    };
    let threads = list("threads", "thread");
    let episodes = list("episodes", "episode");
    let pause_reason = match map.get("pauseReason") {
        None | Some(Value::Null) => None,
        Some(Value::String(s)) if s == "context-budget" => Some(PauseReason::ContextBudget),
        Some(Value::String(s)) if s == "adoption" => Some(PauseReason::Adoption),
        Some(other) => {
            p.push(
                Problem::new(
                    "$.snapshot.pauseReason",
                    "must be \"context-budget\" or \"adoption\"",
                )
                .json(other),
            );
            None
        }
    };
    (p.len() == before).then_some(Snapshot {
        threads,
        episodes,
        pause_reason,
    })
}

fn parse_kickoff(v: &Value, p: &mut Vec<Problem>) -> Option<Kickoff> {
    match serde_json::from_value::<Kickoff>(v.clone()) {
        Ok(k) if !k.id.is_empty() => Some(k),
        Ok(_) => {
            p.push(Problem::new("$.kickoff.id", "must be non-empty"));
            None
        }
        Err(e) => {
            p.push(
                Problem::new(
                    "$.kickoff",
                    format!("must be {{id, text, source: \"focus\"|\"home\"|\"project\"}}: {e}"),
                )
                .json(v),
            );
            None
        }
    }
}

fn purpose(v: &Value, path: &str, p: &mut Vec<Problem>) -> Option<Purpose> {
    let found = v.as_str().and_then(Purpose::from_name);
    if found.is_none() {
        p.push(
            Problem::new(
                path,
                "must be one of track-boundary, post-check, context-budget, user-request",
            )
            .json(v),
        );
    }
    found
}

fn object<'a>(v: &'a Value, path: &str) -> Result<&'a Map<String, Value>, Vec<Problem>> {
    v.as_object()
        .ok_or_else(|| vec![Problem::new(path, "must be an object").json(v)])
}

fn required_text(map: &Map<String, Value>, name: &str, p: &mut Vec<Problem>) -> Option<String> {
    match map.get(name) {
        Some(Value::String(s)) if !s.is_empty() => Some(s.clone()),
        other => {
            p.push(
                Problem::new(key("$", name), "required: a non-empty string")
                    .json(other.unwrap_or(&Value::Null)),
            );
            None
        }
    }
}

fn optional_text(map: &Map<String, Value>, name: &str, p: &mut Vec<Problem>) -> Option<String> {
    match map.get(name) {
        None | Some(Value::Null) => None,
        Some(Value::String(s)) if !s.is_empty() => Some(s.clone()),
        Some(other) => {
            p.push(
                Problem::new(key("$", name), "must be a non-empty string when present").json(other),
            );
            None
        }
    }
}

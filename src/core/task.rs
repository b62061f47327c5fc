//! What the coordinator admits: resolved task specifications and their grants.
//!
//! Policy (`src/policy`) resolves profiles, trust, task files and model selections into a
//! [`TaskSpec`]; the core then checks the whole batch against registry state (ancestry,
//! subsets, capacity, limits) and admits it atomically.

use std::fmt;

use serde::{Deserialize, Serialize};

/// The four bundled roles. Custom role names are not supported.
#[derive(
    Clone,
    Copy,
    Debug,
    PartialEq,
    Eq,
    Hash,
    PartialOrd,
    Ord,
    Serialize,
    Deserialize,
    schemars::JsonSchema,
)]
#[serde(rename_all = "lowercase")]
pub enum Role {
    Scout,
    Review,
    General,
    Implementation,
}

impl Role {
    pub const ALL: [Role; 4] = [
        Role::Scout,
        Role::Review,
        Role::General,
        Role::Implementation,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            Role::Scout => "scout",
            Role::Review => "review",
            Role::General => "general",
            Role::Implementation => "implementation",
        }
    }

    /// Parses a role name; `worker` is the compatibility alias of `implementation`.
    pub fn from_name(name: &str) -> Option<Role> {
        match name {
            "scout" => Some(Role::Scout),
            "review" => Some(Role::Review),
            "general" => Some(Role::General),
            "implementation" | "worker" => Some(Role::Implementation),
            _ => None,
        }
    }
}

impl fmt::Display for Role {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// pi's seven builtin tools, in role order.
#[derive(
    Clone,
    Copy,
    Debug,
    PartialEq,
    Eq,
    Hash,
    PartialOrd,
    Ord,
    Serialize,
    Deserialize,
    schemars::JsonSchema,
)]
#[serde(rename_all = "lowercase")]
pub enum BuiltinTool {
    Read,
    Grep,
    Find,
    Ls,
    Write,
    Edit,
    Bash,
}

impl BuiltinTool {
    pub const ALL: [BuiltinTool; 7] = [
        BuiltinTool::Read,
        BuiltinTool::Grep,
        BuiltinTool::Find,
        BuiltinTool::Ls,
        BuiltinTool::Write,
        BuiltinTool::Edit,
        BuiltinTool::Bash,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            BuiltinTool::Read => "read",
            BuiltinTool::Grep => "grep",
            BuiltinTool::Find => "find",
            BuiltinTool::Ls => "ls",
            BuiltinTool::Write => "write",
            BuiltinTool::Edit => "edit",
            BuiltinTool::Bash => "bash",
        }
    }

    pub fn from_name(name: &str) -> Option<BuiltinTool> {
        BuiltinTool::ALL.into_iter().find(|t| t.as_str() == name)
    }

    /// `write`, `edit` and `bash` can change the workspace: holding one needs the writer lease.
    pub fn is_mutating(self) -> bool {
        matches!(
            self,
            BuiltinTool::Write | BuiltinTool::Edit | BuiltinTool::Bash
        )
    }
}

impl fmt::Display for BuiltinTool {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Live-messaging actions a child may be granted (root has them all).
#[derive(
    Clone,
    Copy,
    Debug,
    PartialEq,
    Eq,
    Hash,
    PartialOrd,
    Ord,
    Serialize,
    Deserialize,
    schemars::JsonSchema,
)]
#[serde(rename_all = "lowercase")]
pub enum CoordinationAction {
    Message,
    Inbox,
    Wait,
}

impl CoordinationAction {
    pub fn as_str(self) -> &'static str {
        match self {
            CoordinationAction::Message => "message",
            CoordinationAction::Inbox => "inbox",
            CoordinationAction::Wait => "wait",
        }
    }
}

/// An exact physical model selection.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ModelSelection {
    pub provider: String,
    pub id: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub effort: Option<String>,
}

/// One physical route of a logical action: the logical model it belongs to and the exact
/// provider, Pi model id and fixed effort it runs with.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct PlannedRoute {
    /// The logical model this route serves (recovery can move to another logical model).
    pub logical: String,
    #[serde(flatten)]
    pub selection: ModelSelection,
}

/// A task that named a logical model (spec 002 "Action contract"). `routes[0]` is the first
/// route (the task's `model`); the rest is the pure recovery order after it, computed at
/// admission from the routing policy and the session's remembered providers.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct LogicalAction {
    pub model: String,
    pub reason: String,
    /// Admission order of the action in its session (preference freshness).
    pub admission: u64,
    pub routes: Vec<PlannedRoute>,
}

/// One-way prewalk state recorded on a snapshot.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Prewalk {
    pub target: String,
    pub status: PrewalkStatus,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum PrewalkStatus {
    Armed,
    HandedOff,
    SuppressedExact,
    NoOp,
}

/// A tool the policy declined to forward, with the reason.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct CapabilityDenial {
    pub name: String,
    pub reason: String,
}

/// Execution limits of one generation (all finite; there is no unlimited sentinel).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Limits {
    pub deadline_ms: u64,
    pub requests: u32,
    pub tools: u32,
    pub depth: u32,
    pub spawns: u32,
}

impl Limits {
    /// Field-wise minimum: the narrower of two ceilings.
    #[must_use]
    pub fn min(self, other: Limits) -> Limits {
        Limits {
            deadline_ms: self.deadline_ms.min(other.deadline_ms),
            requests: self.requests.min(other.requests),
            tools: self.tools.min(other.tools),
            depth: self.depth.min(other.depth),
            spawns: self.spawns.min(other.spawns),
        }
    }
}

/// Request-level `limits`: each field can only narrow the effective ceiling.
#[derive(
    Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema,
)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct LimitOverrides {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub deadline_ms: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub requests: Option<u32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tools: Option<u32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub depth: Option<u32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub spawns: Option<u32>,
}

/// A fully resolved assignment, ready for admission. Grants are the *effective* ones after
/// profile, operator, project and request narrowing (policy's job); the core checks them
/// against the delegating ancestor and the registry.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct TaskSpec {
    pub assignment: String,
    pub profile: Role,
    /// The resolved role prompt (bundled, operator or trusted-project text).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub role_prompt: String,
    /// Canonical absolute workspace directory.
    pub cwd: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<ModelSelection>,
    /// A logical-model action: its name, reason and route plan (`None`: an exact selection,
    /// which never falls back).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub logical: Option<LogicalAction>,
    /// The admitted `models` allowlist children of this task are bounded by (`None`:
    /// unrestricted).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub models: Option<Vec<ModelSelection>>,
    /// Effective builtin tools, in role order.
    pub tools: Vec<BuiltinTool>,
    #[serde(default)]
    pub leaf_tools: Vec<String>,
    #[serde(default)]
    pub skills: Vec<String>,
    #[serde(default)]
    pub spawn: Vec<Role>,
    #[serde(default)]
    pub coordination: Vec<CoordinationAction>,
    #[serde(default)]
    pub limits: LimitOverrides,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub result_schema: Option<serde_json::Value>,
    #[serde(default)]
    pub capability_denials: Vec<CapabilityDenial>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prewalk: Option<Prewalk>,
}

impl TaskSpec {
    /// A minimal spec (no leaf tools, skills, spawn or coordination grants).
    pub fn new(assignment: impl Into<String>, profile: Role, cwd: impl Into<String>) -> Self {
        let tools = match profile {
            Role::Scout | Role::Review => BuiltinTool::ALL[..4].to_vec(),
            Role::General | Role::Implementation => BuiltinTool::ALL.to_vec(),
        };
        Self {
            assignment: assignment.into(),
            profile,
            role_prompt: String::new(),
            cwd: cwd.into(),
            model: None,
            logical: None,
            models: None,
            tools,
            leaf_tools: Vec::new(),
            skills: Vec::new(),
            spawn: Vec::new(),
            coordination: Vec::new(),
            limits: LimitOverrides::default(),
            result_schema: None,
            capability_denials: Vec::new(),
            prewalk: None,
        }
    }

    /// A writer holds a mutating builtin or any admitted leaf tool.
    pub fn is_writer(&self) -> bool {
        is_writer(&self.tools, &self.leaf_tools)
    }
}

pub fn is_writer(tools: &[BuiltinTool], leaf_tools: &[String]) -> bool {
    tools.iter().any(|t| t.is_mutating()) || !leaf_tools.is_empty()
}

/// The grants re-resolved by policy for a followup or revive. The core intersects them with
/// the previous generation's admitted grants, so nothing removed is ever restored.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Renewal {
    pub assignment: String,
    pub tools: Vec<BuiltinTool>,
    #[serde(default)]
    pub leaf_tools: Vec<String>,
    #[serde(default)]
    pub skills: Vec<String>,
    #[serde(default)]
    pub spawn: Vec<Role>,
    #[serde(default)]
    pub coordination: Vec<CoordinationAction>,
    #[serde(default)]
    pub limits: LimitOverrides,
    /// A new supported schema replaces the previous one; `None` keeps it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub result_schema: Option<serde_json::Value>,
}

impl Renewal {
    /// A renewal that asks for everything the previous generation had.
    pub fn keep_grants(assignment: impl Into<String>) -> Self {
        Self {
            assignment: assignment.into(),
            tools: BuiltinTool::ALL.to_vec(),
            leaf_tools: Vec::new(),
            skills: Vec::new(),
            spawn: Role::ALL.to_vec(),
            coordination: vec![
                CoordinationAction::Message,
                CoordinationAction::Inbox,
                CoordinationAction::Wait,
            ],
            limits: LimitOverrides::default(),
            result_schema: None,
        }
    }
}

/// True when `text` holds at least one non-whitespace character.
pub fn is_nonblank(text: &str) -> bool {
    text.chars().any(|c| !c.is_whitespace())
}

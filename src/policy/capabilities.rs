//! Effective capabilities: role ceiling ∩ what the worker really offers, and fail-closed
//! classification of reviewed leaf tools, with every denial recorded.

use serde::Serialize;

use crate::core::task::{BuiltinTool, CapabilityDenial, Role};

/// Tools that are never forwarded to a child, whatever is granted.
pub const NEVER_FORWARDED: [&str; 6] = [
    "codemode",
    "tool_search",
    "delegate_task",
    "delegate_coordinate",
    "subagent",
    "submit_result",
];

/// The builtins a pi worker offers (`pi --tools` accepts exactly these).
pub const PI_BUILTINS: [BuiltinTool; 7] = BuiltinTool::ALL;

/// One tool the worker can actually call, as its backend reports it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct OfferedTool {
    pub name: String,
    pub kind: ToolKind,
    /// The tool dispatches other tools (it cannot be restricted to a child's ceiling).
    pub reaches_tools: bool,
    /// Hidden or model-only tools are never forwarded.
    pub hidden: bool,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum ToolKind {
    /// A genuine builtin (`builtin:<name>` provenance).
    Builtin,
    /// A replacement registered under a builtin's name.
    BuiltinReplacement,
    /// An extension or MCP tool.
    Extension,
}

/// The admitted capability set of one task.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Capabilities {
    /// Effective builtins, in role order.
    pub tools: Vec<BuiltinTool>,
    pub leaf_tools: Vec<String>,
    pub denials: Vec<CapabilityDenial>,
}

impl Capabilities {
    /// Any admitted mutating builtin or leaf tool needs the writer lease.
    pub fn needs_writer(&self) -> bool {
        crate::core::task::is_writer(&self.tools, &self.leaf_tools)
    }
}

fn deny(name: &str, reason: &str) -> CapabilityDenial {
    CapabilityDenial {
        name: name.to_owned(),
        reason: reason.to_owned(),
    }
}

/// Role ceiling ∩ genuine offered builtins (in role order), then leaf classification.
///
/// * A builtin in the ceiling that the worker does not offer as a genuine builtin is denied
///   (a callable replacement under a builtin's name is denied too: it is not provenance-safe).
/// * Leaf tools are classified fail-closed: `reachesTools` denied; [`NEVER_FORWARDED`]
///   denied; hidden or model-only denied; builtin names denied; only reviewed (granted) names
///   the worker really offers; only general; only in the root workspace.
pub fn effective(
    role: Role,
    ceiling: &[BuiltinTool],
    leaf_grants: &[String],
    offered: &[OfferedTool],
    in_root_workspace: bool,
) -> Capabilities {
    let mut caps = Capabilities::default();
    for tool in BuiltinTool::ALL {
        if !ceiling.contains(&tool) {
            continue;
        }
        match offered.iter().find(|o| o.name == tool.as_str()) {
            Some(o) if o.kind == ToolKind::Builtin && !o.hidden => caps.tools.push(tool),
            Some(o) if o.kind == ToolKind::BuiltinReplacement => caps.denials.push(deny(
                tool.as_str(),
                "a replacement is registered under this builtin's name; only genuine builtins are forwarded",
            )),
            _ => caps.denials.push(deny(tool.as_str(), "not offered by the worker")),
        }
    }
    for name in leaf_grants {
        let offered_tool = offered.iter().find(|o| &o.name == name);
        let reason = if BuiltinTool::from_name(name).is_some() {
            Some("builtins are granted through the builtin ceiling, not as leaf tools")
        } else if NEVER_FORWARDED.contains(&name.as_str()) {
            Some("this tool is never forwarded to a child")
        } else if role != Role::General {
            Some("only general supports reviewed leaf tools")
        } else if let Some(o) = offered_tool {
            if o.reaches_tools {
                Some(
                    "reachesTools: it dispatches other tools, which cannot be held to this child's ceiling",
                )
            } else if o.hidden {
                Some("hidden or model-only tools are never forwarded")
            } else if o.kind != ToolKind::Extension {
                Some("not a reviewed leaf implementation")
            } else if !in_root_workspace {
                Some("non-builtin leaf tools are admitted only in the root workspace")
            } else {
                None
            }
        } else {
            Some("not offered by the worker (unknown implementation)")
        };
        match reason {
            None => caps.leaf_tools.push(name.clone()),
            Some(reason) => caps.denials.push(deny(name, reason)),
        }
    }
    caps
}

/// What a pi worker offers: the seven genuine builtins. Slate starts pi with extensions and
/// MCP disabled (`-ne --no-mcp`), so no extension tool is ever callable there.
pub fn pi_offered_tools() -> Vec<OfferedTool> {
    PI_BUILTINS
        .iter()
        .map(|t| OfferedTool {
            name: t.as_str().to_owned(),
            kind: ToolKind::Builtin,
            reaches_tools: false,
            hidden: false,
        })
        .collect()
}

//! Which of the main session's own tool calls are parent mutations ([Writer coordination]):
//! "Genuine builtin read/grep/find/ls and owned delegation control calls are exempt"; every
//! other tool — `write`, `edit`, `bash`, and any tool of another extension, whose effects
//! Slate cannot know — reserves at preflight (`parentToolStart`) and releases when the call
//! finalizes (`parentToolEnd`).
//!
//! The decision is the coordinator's, so every client (Slate's pi extension, a script) gets
//! the same answer; the extension only reports the tool's name.

/// pi's read-only builtins and Slate's own delegation tools: they never reserve.
pub const EXEMPT_PARENT_TOOLS: [&str; 7] = [
    "read",
    "grep",
    "find",
    "ls",
    "delegate_task",
    "delegate_coordinate",
    "subagent",
];

/// Longest `callId` accepted (pi's tool call ids are far shorter). Call ids and tool names
/// are also refused with control characters (they are named in refusals).
pub const MAX_CALL_ID_BYTES: usize = 1024;
/// Longest tool name accepted.
pub const MAX_TOOL_NAME_BYTES: usize = 256;

/// Whether a main-session call of `tool` is a parent mutation that must reserve. Names match
/// exactly (case-sensitive, as pi's tool names do): `Read` or `read ` is not `read`.
pub fn is_parent_mutation(tool: &str) -> bool {
    !EXEMPT_PARENT_TOOLS.contains(&tool)
}

/// Checks a `parentToolStart`/`parentToolEnd` `callId`: the problem, naming the field.
pub fn check_call_id(call_id: &str) -> Result<(), String> {
    if call_id.trim().is_empty() {
        return Err("params.callId: must contain non-whitespace text (pi's toolCallId)".to_owned());
    }
    if call_id.len() > MAX_CALL_ID_BYTES {
        return Err(format!(
            "params.callId: {} UTF-8 bytes exceed the limit of {MAX_CALL_ID_BYTES}",
            call_id.len()
        ));
    }
    // It is named in refusals (`parent-mutation-reserved`) that reach models and terminals.
    if call_id.chars().any(char::is_control) {
        return Err("params.callId: must not contain control characters".to_owned());
    }
    Ok(())
}

/// Checks a `parentToolStart` `tool` name: the problem, naming the field.
pub fn check_tool_name(tool: &str) -> Result<(), String> {
    if tool.trim().is_empty() {
        return Err("params.tool: must contain non-whitespace text (the tool's name)".to_owned());
    }
    if tool.len() > MAX_TOOL_NAME_BYTES {
        return Err(format!(
            "params.tool: {} UTF-8 bytes exceed the limit of {MAX_TOOL_NAME_BYTES}",
            tool.len()
        ));
    }
    if tool.chars().any(char::is_control) {
        return Err("params.tool: must not contain control characters".to_owned());
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn read_only_builtins_and_delegation_tools_are_exempt() {
        for tool in EXEMPT_PARENT_TOOLS {
            assert!(!is_parent_mutation(tool), "{tool}");
        }
    }

    #[test]
    fn everything_else_is_a_mutation() {
        for tool in [
            "write", "edit", "bash", "Read", "read ", "grep2", "codemode", "mcp",
        ] {
            assert!(is_parent_mutation(tool), "{tool:?}");
        }
    }

    #[test]
    fn call_ids_and_tool_names_are_bounded_and_not_blank() {
        assert!(check_call_id("call_1").is_ok());
        assert!(
            check_call_id(" \t")
                .unwrap_err()
                .starts_with("params.callId:")
        );
        let long = "x".repeat(MAX_CALL_ID_BYTES + 1);
        assert!(
            check_call_id(&long)
                .unwrap_err()
                .contains("1025 UTF-8 bytes")
        );
        assert!(check_call_id(&"x".repeat(MAX_CALL_ID_BYTES)).is_ok());
        assert!(check_tool_name("").unwrap_err().starts_with("params.tool:"));
        let long = "t".repeat(MAX_TOOL_NAME_BYTES + 1);
        assert!(check_tool_name(&long).is_err());
        for bad in ["call\n2", "call\u{1b}[31m", "call\u{9b}"] {
            assert!(
                check_call_id(bad)
                    .unwrap_err()
                    .contains("control characters"),
                "{bad:?}"
            );
            assert!(check_tool_name(bad).is_err(), "{bad:?}");
        }
    }
}

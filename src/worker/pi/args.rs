//! The `pi --mode rpc` command line and system prompt for one admitted generation.

use std::ffi::OsString;
use std::fmt::Write as _;
use std::path::Path;

use crate::core::WorkerStart;
use crate::runtime::backend::WorkerDirs;

/// Environment variables that belong to Slate and are not passed to workers.
pub fn is_slate_variable(name: &str) -> bool {
    name.starts_with("SLATE_")
}

/// The system prompt: the role prompt, then the worker's identity and its skill paths.
pub fn system_prompt(start: &WorkerStart) -> String {
    let spec = &start.spec;
    let mut prompt = spec.role_prompt.trim_end().to_owned();
    if !prompt.is_empty() {
        prompt.push_str("\n\n");
    }
    let _ = writeln!(prompt, "## Your identity");
    let _ = writeln!(
        prompt,
        "You are the Slate subagent {} (role {}, depth {}), working for parent {}.",
        start.child, spec.profile, start.depth, start.parent
    );
    let _ = writeln!(prompt, "Your workspace is {}.", spec.cwd);
    let _ = writeln!(prompt, "Your tools: {}.", tool_names(start).join(", "));
    if !spec.skills.is_empty() {
        let _ = writeln!(
            prompt,
            "\n## Skills\nRead a skill file when it is relevant to the assignment:"
        );
        for skill in &spec.skills {
            let _ = writeln!(prompt, "- {skill}");
        }
    }
    prompt
}

/// The worker's tools: its effective builtins in role order, then the child-local tools of
/// Slate's extension it is granted. `--tools` is pi's hard ceiling for extension tools too
/// (`shared/pi/EXTENSION.md`): the extension registers all of them, and only the ones named
/// here exist for the model.
pub fn tool_names(start: &WorkerStart) -> Vec<&'static str> {
    let spec = &start.spec;
    let mut tools: Vec<&'static str> = spec.tools.iter().map(|t| t.as_str()).collect();
    if spec.result_schema.is_some() {
        tools.push(SUBMIT_RESULT);
    }
    if !spec.spawn.is_empty() {
        tools.push(DELEGATE_TASK);
    }
    if !spec.coordination.is_empty() {
        tools.push(DELEGATE_COORDINATE);
    }
    tools
}

/// `submit_result`: granted to a task with a `resultSchema`.
pub const SUBMIT_RESULT: &str = "submit_result";
/// `delegate_task`: granted to a task with spawn role grants.
pub const DELEGATE_TASK: &str = "delegate_task";
/// `delegate_coordinate`: granted to a task with coordination actions.
pub const DELEGATE_COORDINATE: &str = "delegate_coordinate";

/// Arguments after the pi command itself; `extension` is the absolute path of Slate's
/// extension entry file.
pub fn arguments(start: &WorkerStart, dirs: &WorkerDirs, extension: &Path) -> Vec<OsString> {
    let spec = &start.spec;
    let mut args: Vec<OsString> = vec!["--mode".into(), "rpc".into()];
    if let Some(model) = &spec.model {
        args.push("--model".into());
        args.push(format!("{}/{}", model.provider, model.id).into());
        if let Some(effort) = &model.effort {
            args.push("--thinking".into());
            args.push(effort.into());
        }
    }
    args.push("--system-prompt".into());
    args.push(system_prompt(start).into());
    args.push("--tools".into());
    args.push(tool_names(start).join(",").into());
    // No discovered, settings-listed or built-in extension, no MCP: only Slate's own,
    // loaded by absolute path (pi resolves `-e` against its cwd).
    for flag in ["-ne", "--no-mcp", "-ns", "-np", "--no-themes", "-nc"] {
        args.push(flag.into());
    }
    args.push("-e".into());
    args.push(extension.as_os_str().to_owned());
    args.push("--session-dir".into());
    args.push(dirs.transcripts.clone().into_os_string());
    if start.resume_session {
        // The task's transcripts directory holds only this generation's session.
        args.push("--continue".into());
    }
    args
}

//! The `pi --mode rpc` command line and system prompt for one admitted generation.

use std::ffi::OsString;
use std::fmt::Write as _;

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
    let tools: Vec<&str> = spec.tools.iter().map(|t| t.as_str()).collect();
    let _ = writeln!(prompt, "Your tools: {}.", tools.join(", "));
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

/// Arguments after the pi command itself.
pub fn arguments(start: &WorkerStart, dirs: &WorkerDirs) -> Vec<OsString> {
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
    let tools: Vec<&str> = spec.tools.iter().map(|t| t.as_str()).collect();
    args.push("--tools".into());
    args.push(tools.join(",").into());
    for flag in ["-ne", "--no-mcp", "-ns", "-np", "--no-themes", "-nc"] {
        args.push(flag.into());
    }
    args.push("--session-dir".into());
    args.push(dirs.transcripts.clone().into_os_string());
    if start.resume_session {
        // The task's transcripts directory holds only this generation's session.
        args.push("--continue".into());
    }
    args
}

//! The `pi --mode rpc` command line and system prompt for one admitted generation.

use std::ffi::OsString;
use std::fmt::Write as _;
use std::path::Path;

use crate::core::WorkerStart;
use crate::policy::host_extensions::WorkerExtension;
use crate::runtime::backend::WorkerDirs;

/// Environment variables that belong to Slate and are not passed to workers.
pub fn is_slate_variable(name: &str) -> bool {
    name.starts_with("SLATE_")
}

/// The system prompt: the role prompt, then the worker's identity and its skill paths.
/// `host`: the host session's extensions it loads too (their tools are among its tools).
pub fn system_prompt(start: &WorkerStart, host: &[WorkerExtension]) -> String {
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
    let _ = writeln!(prompt, "Your tools: {}.", all_tools(start, host).join(", "));
    if let Some(schema) = &spec.result_schema {
        let _ = writeln!(
            prompt,
            "\n## Required result\nThis task requires a structured result. Call submit_result once \
             with {{\"value\": <your result>}}, the value matching this JSON Schema exactly (no \
             type coercion; an invalid value is answered with the errors and can be corrected \
             and submitted again; the first valid value is final). Submitting does not end the \
             task: finish with your final answer as usual.\n{}",
            crate::json::to_string(schema).unwrap_or_default()
        );
    }
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

/// [`tool_names`], then the tools of the host extensions the worker loads (each once).
pub fn all_tools<'a>(start: &WorkerStart, host: &'a [WorkerExtension]) -> Vec<&'a str> {
    let mut tools: Vec<&str> = tool_names(start);
    for tool in host.iter().flat_map(|unit| &unit.tools) {
        if !tools.contains(&tool.as_str()) {
            tools.push(tool);
        }
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
/// extension entry file, `host` the host session's extensions every worker loads after it
/// (`workerExtensions`, `policy::host_extensions`): each by its absolute path, its tools
/// named in `--tools` on top of the worker's own.
pub fn arguments(
    start: &WorkerStart,
    dirs: &WorkerDirs,
    extension: &Path,
    host: &[WorkerExtension],
) -> Vec<OsString> {
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
    args.push(system_prompt(start, host).into());
    args.push("--tools".into());
    args.push(all_tools(start, host).join(",").into());
    // No discovered, settings-listed or built-in extension, no MCP: only Slate's own,
    // loaded by absolute path (pi resolves `-e` against its cwd).
    for flag in ["-ne", "--no-mcp", "-ns", "-np", "--no-themes", "-nc"] {
        args.push(flag.into());
    }
    args.push("-e".into());
    args.push(extension.as_os_str().to_owned());
    for unit in host {
        args.push("-e".into());
        args.push(unit.path.clone().into_os_string());
    }
    args.push("--session-dir".into());
    args.push(dirs.transcripts.clone().into_os_string());
    // Always this generation's one session file, which the backend created (0600) before pi
    // starts (`worker::pi::process::private_session_file`): pi writes its header into an
    // empty one, and a resumed generation (`resume_session`) reopens it.
    args.push("--session".into());
    args.push(dirs.session_file().into_os_string());
    args
}

#[cfg(test)]
mod tests {
    use std::path::PathBuf;

    use super::*;
    use crate::core::{ChildRef, CoordinationAction, Party, Role, TaskSpec};

    fn start(spec: TaskSpec) -> WorkerStart {
        WorkerStart {
            child: ChildRef {
                id: uuid::Uuid::from_u128(7),
                generation: 1,
            },
            directory: "x".into(),
            parent: Party::Root,
            depth: 1,
            spec,
            prompts: vec!["go".into()],
            resume_session: false,
        }
    }

    fn dirs() -> WorkerDirs {
        WorkerDirs {
            task: PathBuf::from("/t"),
            agent: PathBuf::from("/t/agent"),
            transcripts: PathBuf::from("/t/transcripts"),
        }
    }

    #[test]
    fn slate_tools_follow_the_grants_in_role_order_after_the_builtins() {
        let mut spec = TaskSpec::new("a", Role::Scout, "/w");
        assert_eq!(
            tool_names(&start(spec.clone())),
            ["read", "grep", "find", "ls"]
        );
        spec.result_schema = Some(serde_json::json!({"type": "integer"}));
        spec.spawn = vec![Role::Scout];
        spec.coordination = vec![CoordinationAction::Wait];
        assert_eq!(
            tool_names(&start(spec)),
            [
                "read",
                "grep",
                "find",
                "ls",
                SUBMIT_RESULT,
                DELEGATE_TASK,
                DELEGATE_COORDINATE
            ]
        );
    }

    #[test]
    fn host_extensions_load_after_slates_own_and_add_their_tools() {
        let spec = TaskSpec::new("a", Role::Scout, "/w");
        let host = [WorkerExtension {
            source: "npm:pi-web-search@1.3.1".into(),
            path: "/n/pi-web-search/index.ts".into(),
            tools: vec!["web_search".into(), "read".into()],
        }];
        let args = arguments(
            &start(spec.clone()),
            &dirs(),
            Path::new("/cache/ext/index.ts"),
            &host,
        );
        let args: Vec<&str> = args
            .iter()
            .map(|a| a.to_str().unwrap_or_default())
            .collect();
        let loads: Vec<&str> = args
            .windows(2)
            .filter(|w| w[0] == "-e")
            .map(|w| w[1])
            .collect();
        assert_eq!(loads, ["/cache/ext/index.ts", "/n/pi-web-search/index.ts"]);
        let tools = args.windows(2).find(|w| w[0] == "--tools").map(|w| w[1]);
        assert_eq!(
            tools,
            Some("read,grep,find,ls,web_search"),
            "each tool once"
        );
        assert!(
            system_prompt(&start(spec), &host)
                .contains("Your tools: read, grep, find, ls, web_search.")
        );
    }

    #[test]
    fn the_extension_is_loaded_by_absolute_path_with_every_other_extension_off() {
        let spec = TaskSpec::new("a", Role::General, "/w");
        let args = arguments(&start(spec), &dirs(), Path::new("/cache/ext/index.ts"), &[]);
        let args: Vec<&str> = args
            .iter()
            .map(|a| a.to_str().unwrap_or_default())
            .collect();
        let e = args.iter().position(|a| *a == "-e").unwrap_or(usize::MAX);
        assert_eq!(args.get(e + 1), Some(&"/cache/ext/index.ts"), "{args:?}");
        assert!(
            args.contains(&"-ne") && args.contains(&"--no-mcp"),
            "{args:?}"
        );
        let tools = args
            .iter()
            .position(|a| *a == "--tools")
            .unwrap_or(usize::MAX);
        assert_eq!(
            args.get(tools + 1),
            Some(&"read,grep,find,ls,write,edit,bash")
        );
    }

    #[test]
    fn every_generation_names_its_one_session_file() {
        for resume in [false, true] {
            let mut start = start(TaskSpec::new("a", Role::Scout, "/w"));
            start.resume_session = resume;
            let args = arguments(&start, &dirs(), Path::new("/e/index.ts"), &[]);
            let args: Vec<&str> = args
                .iter()
                .map(|a| a.to_str().unwrap_or_default())
                .collect();
            let session = args.iter().position(|a| *a == "--session");
            assert_eq!(
                session.and_then(|i| args.get(i + 1)),
                Some(&"/t/transcripts/session.jsonl")
            );
            assert!(!args.contains(&"--continue"), "{args:?}");
        }
    }

    #[test]
    fn a_schema_task_is_told_the_schema_and_how_to_submit() {
        let mut spec = TaskSpec::new("a", Role::Scout, "/w");
        spec.result_schema = Some(serde_json::json!({"type": "object", "required": ["n"]}));
        let prompt = system_prompt(&start(spec), &[]);
        assert!(prompt.contains("submit_result"), "{prompt}");
        assert!(
            prompt.contains(r#"{"required":["n"],"type":"object"}"#),
            "{prompt}"
        );
        assert!(
            prompt.contains("Your tools: read, grep, find, ls, submit_result."),
            "{prompt}"
        );
    }
}

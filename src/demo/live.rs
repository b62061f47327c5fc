//! The live demo: the same coordinator and runtime as `slate serve`, with simulated workers
//! in real time and a scripted root that drives the fleet through every state the Hub shows —
//! setup, running with tool calls, queued behind capacity, a writer holding the lease while
//! another writer waits, nested children, a deadline pause and a resume, failed, cancelled,
//! settled with a structured result, idle and parked presence — while one long watcher keeps
//! live work on screen.

use std::time::Duration;

use serde_json::{Value, json};

use crate::core::{
    ChildRef, CoordinationAction, Input, LimitOverrides, Party, Reply, Role, TaskSpec,
};
use crate::policy::scheduling::SchedulingPolicy;
use crate::runtime::{RuntimeError, RuntimeHandle};
use crate::sim::{Script, Step};
use crate::worker::sim::{BookEntry, ScriptBook};

/// How long a simulated worker spends in `setup` (about what pi takes to start).
pub const SETUP_MS: u64 = 900;

/// The demo's scheduling: eight permits, so a nested delegation can find free capacity
/// while the second root batch still queues.
pub fn policy() -> SchedulingPolicy {
    SchedulingPolicy {
        concurrency: 8,
        ..SchedulingPolicy::default()
    }
}

fn request(ms: u64, text: &str) -> Step {
    Step::Request {
        ms,
        text: text.to_owned(),
        input_tokens: 1_800 + ms,
        output_tokens: 90 + ms / 20,
        cost: Some(0.0004 + f64::from(u32::try_from(ms).unwrap_or(0)) / 2_000_000.0),
    }
}

fn tool(name: &str, ms: u64, args: Value, output: &str) -> Step {
    Step::Tool {
        name: name.to_owned(),
        ms,
        error: false,
        args: Some(args),
        output: Some(output.to_owned()),
    }
}

fn entry(prefix: &str, steps: Vec<Step>) -> BookEntry {
    BookEntry {
        assignment_prefix: prefix.to_owned(),
        script: Script {
            setup_error: None,
            steps,
        },
    }
}

/// The watcher: a tool call every few seconds for ten minutes.
fn watcher() -> Vec<Step> {
    let mut steps = vec![request(
        1_200,
        "Watching the build log; I will report failures as they appear.",
    )];
    for i in 0..100 {
        steps.push(tool(
            "bash",
            400,
            json!({"command": "tail -n 20 target/build.log"}),
            &format!(
                "[{:>3}s] Compiling slate v0.1.0\n      Finished dev profile",
                i * 6
            ),
        ));
        steps.push(Step::Progress(format!(
            "build log checked {} times, no failures",
            i + 1
        )));
        steps.push(Step::Think(5_600));
    }
    steps.push(request(800, "No build failures in ten minutes."));
    steps
}

/// Every worker's script, chosen by the start of its assignment.
#[allow(clippy::too_many_lines, reason = "one table of scripts")]
pub fn book() -> ScriptBook {
    let scripts = vec![
        entry(
            "Map the config loader",
            vec![
                request(
                    1_400,
                    "I'll map the loader, then split the search between two scouts.",
                ),
                tool(
                    "read",
                    300,
                    json!({"path": "src/config.rs"}),
                    "//! Loading the delegation policy…\npub fn load(cwd: &Path) -> Result<Loaded, Vec<Problem>> {",
                ),
                Step::Progress(
                    "mapped the loader; two scouts search for the config readers".into(),
                ),
                Step::Think(9_000),
                tool(
                    "grep",
                    400,
                    json!({"pattern": "delegation.json", "path": "src"}),
                    "src/config.rs:41: agent_dir.join(\"delegation.json\")\nsrc/config.rs:58: project.join(\".pi/delegation.json\")",
                ),
                request(
                    1_600,
                    "The loader reads the operator file, then the trusted project's, and validates the merge as one policy.",
                ),
            ],
        ),
        entry(
            "Find where",
            vec![
                tool(
                    "grep",
                    700,
                    json!({"pattern": "delegation.json"}),
                    "src/config.rs:41\nsrc/config.rs:58",
                ),
                request(2_200, "Found it in src/config.rs (lines 41 and 58)."),
            ],
        ),
        entry(
            "Implement the --retry-max flag",
            vec![
                request(
                    1_500,
                    "Plan: add the flag to the CLI and thread it to the backoff.",
                ),
                tool(
                    "read",
                    300,
                    json!({"path": "src/cli.rs"}),
                    "pub struct Cli {\n    #[arg(long)]\n    pub retries: Option<u32>,",
                ),
                tool(
                    "edit",
                    500,
                    json!({"path": "src/cli.rs", "edits": [{"oldText": "pub retries: Option<u32>,", "newText": "pub retries: Option<u32>,\n    #[arg(long)]\n    pub retry_max: Option<u32>,"}]}),
                    "Applied 1 edit to src/cli.rs",
                ),
                tool(
                    "bash",
                    2_600,
                    json!({"command": "cargo test backoff"}),
                    "running 12 tests\n............\ntest result: ok. 12 passed; 0 failed",
                ),
                Step::Think(2_500),
                request(1_200, "Added --retry-max; the 12 backoff tests pass."),
            ],
        ),
        entry(
            "Add a regression test for the backoff",
            vec![
                request(
                    1_200,
                    "Writing the regression test next to the backoff tests.",
                ),
                tool(
                    "write",
                    400,
                    json!({"path": "tests/backoff_regression.rs", "content": "#[test]\nfn retry_max_caps_the_attempts() { /* … */ }\n"}),
                    "Wrote 2 lines to tests/backoff_regression.rs",
                ),
                tool(
                    "bash",
                    2_400,
                    json!({"command": "cargo test --test backoff_regression"}),
                    "test result: ok. 1 passed; 0 failed",
                ),
                request(1_000, "Regression test added and passing."),
            ],
        ),
        entry(
            "Survey the docs for stale flags",
            vec![
                request(1_500, "Listing every flag the docs mention."),
                tool(
                    "grep",
                    500,
                    json!({"pattern": "--[a-z-]+", "path": "docs"}),
                    "docs/cli.md: --legacy-auth, --no-color-v1, --json, --parent",
                ),
                Step::Think(30_000),
                request(900, "Done."),
            ],
        ),
        entry(
            "Review the lifecycle tests",
            vec![
                request(1_800, "Reading the lifecycle tests."),
                tool(
                    "read",
                    400,
                    json!({"path": "tests/rules/lifecycle.rs"}),
                    "#[test]\nfn pause_then_resume_keeps_the_conversation() {",
                ),
                Step::Submit {
                    value: json!({"verdict": "approve", "findings": [
                        {"file": "tests/rules/lifecycle.rs", "note": "no test stops a generation while it pauses"}
                    ]}),
                    errors: Vec::new(),
                },
                request(900, "Submitted the review."),
            ],
        ),
        entry(
            "Check the provider error path",
            vec![
                request(1_200, "Calling the provider once more."),
                Step::Fail("provider returned 500: upstream overloaded (after 3 retries)".into()),
            ],
        ),
        entry(
            "Count the TODO comments",
            vec![
                tool(
                    "grep",
                    600,
                    json!({"pattern": "TODO", "path": "."}),
                    "src/worker/pi.rs:212: // TODO: batch writes\nsrc/ui.rs:3: // TODO",
                ),
                Step::Think(60_000),
                request(800, "2 TODOs."),
            ],
        ),
        entry(
            "Audit the lockfile",
            vec![
                tool(
                    "read",
                    300,
                    json!({"path": "Cargo.lock"}),
                    "version = 4\n[[package]]\nname = \"aho-corasick\"",
                ),
                request(
                    1_800,
                    "Every dependency comes from crates.io; no git sources.",
                ),
            ],
        ),
        entry("Watch the build log", watcher()),
        entry(
            "Summarize",
            vec![
                tool("read", 400, json!({"path": "README.md"}), "# Slate\n…"),
                request(2_500, "Summary written."),
            ],
        ),
    ];
    ScriptBook {
        default: Script {
            setup_error: None,
            steps: vec![request(1_000, "Done.")],
        },
        scripts,
        resumed: Some(Script {
            setup_error: None,
            steps: vec![
                tool(
                    "grep",
                    500,
                    json!({"pattern": "legacy-auth|no-color-v1", "path": "src"}),
                    "(no matches)",
                ),
                request(
                    1_800,
                    "Stale flags: --legacy-auth, --no-color-v1 (no code reads them).",
                ),
            ],
        }),
    }
}

fn scout(assignment: &str, cwd: &str) -> TaskSpec {
    TaskSpec::new(assignment, Role::Scout, cwd)
}

/// The first root batch, in admission order: eight tasks for eight permits.
fn first_batch(cwd: &str) -> Vec<TaskSpec> {
    let mut general = TaskSpec::new(
        "Map the config loader (delegates two scouts)",
        Role::General,
        cwd,
    );
    // A read-only coordinator: nested scouts are admissible under it.
    general.tools.retain(|t| !t.is_mutating());
    general.spawn = vec![Role::Scout];
    general.coordination = vec![CoordinationAction::Message, CoordinationAction::Wait];
    let mut survey = scout("Survey the docs for stale flags", cwd);
    survey.limits = LimitOverrides {
        deadline_ms: Some(6_000),
        ..LimitOverrides::default()
    };
    let mut review = TaskSpec::new("Review the lifecycle tests", Role::Review, cwd);
    review.result_schema = Some(json!({
        "type": "object",
        "properties": {
            "verdict": {"type": "string", "enum": ["approve", "request-changes"]},
            "findings": {"type": "array", "items": {"type": "object", "properties": {
                "file": {"type": "string"}, "note": {"type": "string"}},
                "required": ["file", "note"], "additionalProperties": false}}
        },
        "required": ["verdict", "findings"],
        "additionalProperties": false
    }));
    vec![
        general,
        TaskSpec::new("Implement the --retry-max flag", Role::Implementation, cwd),
        survey,
        review,
        scout("Check the provider error path", cwd),
        scout("Count the TODO comments", cwd),
        scout("Audit the lockfile", cwd),
        scout("Watch the build log for failures", cwd),
    ]
}

/// Positions in the first batch.
const GENERAL: usize = 0;
const WRITER: usize = 1;
const SURVEY: usize = 2;
const COUNT: usize = 5;
const AUDIT: usize = 6;

/// What the scripted root does, and when (milliseconds after the start).
enum Action {
    FirstBatch,
    Nested,
    Steer,
    SecondBatch,
    Resume,
    Stop,
    Park,
}

/// The nested delegation needs free permits and an empty queue (no lending, FIFO), so it
/// comes after the provider failure and the audit freed two permits and before the second
/// batch queues.
const PLAN: [(u64, Action); 7] = [
    (0, Action::FirstBatch),
    (3_600, Action::Nested),
    (4_000, Action::Steer),
    (4_500, Action::SecondBatch),
    (10_000, Action::Resume),
    (11_000, Action::Stop),
    (13_000, Action::Park),
];

/// Builds one root request for the runtime (`RuntimeHandle::call`).
type Request = Box<dyn FnOnce(crate::core::RequestId) -> Input + Send>;

/// A root background admission of `tasks`.
fn admit(tasks: Vec<TaskSpec>) -> Request {
    Box::new(move |request| Input::Admit {
        request,
        actor: Party::Root,
        tasks,
        background: true,
    })
}

/// Drives the scenario against `rt`, reporting each step to `note` (`slate demo --serve`
/// prints them). Refusals are reported, not fatal: the fleet is real and the user may have
/// stopped a target first.
pub async fn drive(
    rt: RuntimeHandle,
    cwd: String,
    mut note: impl FnMut(String) + Send,
) -> Result<(), RuntimeError> {
    let started = tokio::time::Instant::now();
    let mut first: Vec<ChildRef> = Vec::new();
    for (at, action) in PLAN {
        tokio::time::sleep_until(started + Duration::from_millis(at)).await;
        let pick = |i: usize| first.get(i).copied();
        // The first batch's identities are what the later steps act on.
        let remember = matches!(action, Action::FirstBatch);
        let (what, request): (&str, Request) = match action {
            Action::FirstBatch => (
                "root delegates 8 tasks (8 permits)",
                admit(first_batch(&cwd)),
            ),
            Action::Nested => {
                let Some(parent) = pick(GENERAL) else {
                    continue;
                };
                let tasks = vec![
                    scout("Find where delegation.json is read", &cwd),
                    scout("Find where .pi/delegation.json is read", &cwd),
                ];
                // Nested calls are foreground: the general's window drains with them.
                let reply = rt
                    .delegate(Party::Child(parent), tasks)
                    .await?
                    .map(|fg| fg.admitted);
                note(describe("the general delegates 2 nested scouts", reply));
                continue;
            }
            Action::Steer => {
                let Some(target) = pick(WRITER) else { continue };
                (
                    "root steers the writer: \"Keep the change minimal.\"",
                    Box::new(move |request| Input::Steer {
                        request,
                        target,
                        text: "Keep the change minimal.".into(),
                    }),
                )
            }
            // The writer goes last: it waits for the lease without holding the others up.
            Action::SecondBatch => (
                "root delegates 4 more: they queue behind capacity, the writer behind the lease",
                admit(vec![
                    scout("Summarize the CLI docs", &cwd),
                    scout("Summarize the protocol docs", &cwd),
                    scout("Summarize the routing docs", &cwd),
                    TaskSpec::new(
                        "Add a regression test for the backoff",
                        Role::Implementation,
                        &cwd,
                    ),
                ]),
            ),
            Action::Resume => {
                let Some(target) = pick(SURVEY) else { continue };
                (
                    "root resumes the paused survey",
                    Box::new(move |request| Input::Resume {
                        request,
                        actor: Party::Root,
                        target,
                        assignment: "Continue: list only the stale flags.".into(),
                    }),
                )
            }
            Action::Stop => {
                let Some(target) = pick(COUNT) else { continue };
                (
                    "root stops the TODO count",
                    Box::new(move |request| Input::Stop {
                        request,
                        actor: Party::Root,
                        target,
                    }),
                )
            }
            Action::Park => {
                let Some(target) = pick(AUDIT) else { continue };
                (
                    "root parks the idle lockfile audit",
                    Box::new(move |request| Input::Park {
                        request,
                        actor: Party::Root,
                        target,
                    }),
                )
            }
        };
        let reply = rt.call(request).await?;
        if remember && let Ok(Reply::Admitted { children, .. }) = &reply {
            first = children
                .iter()
                .map(crate::core::ChildSnapshot::child_ref)
                .collect();
        }
        note(describe(what, reply));
    }
    Ok(())
}

fn describe(what: &str, reply: Result<Reply, crate::core::Refusal>) -> String {
    match reply {
        Ok(_) => what.to_owned(),
        Err(refusal) => format!("{what}: refused [{}] {refusal}", refusal.code()),
    }
}

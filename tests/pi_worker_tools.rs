//! Issue 12, proven with real pi 1.6 workers and the fake LLM: Slate's worker extension gives
//! each generation exactly its granted child-local tools (`submit_result`, `delegate_task`,
//! `delegate_coordinate`) and puts the request and tool guards before forwarding.
//!
//! The fake LLM's `CALLS` scenario makes the model call the named tools in order (see
//! `support/fake_llm.rs`), so each test is a script of model tool calls and the assertions are
//! on what Slate and the tool results say. Without pi these tests print `SKIPPED: …` and pass,
//! except under `CI=true`, where they fail.

#![allow(clippy::unwrap_used, reason = "test fixtures fail loudly")]

#[path = "support/fake_llm.rs"]
mod fake_llm;
#[path = "support/pi_env.rs"]
mod pi_env;
#[path = "support/pi_runtime.rs"]
mod pi_runtime;

use std::sync::Arc;
use std::time::Duration;

use pi_runtime::{Env, OUTCOME_TIMEOUT, admitted, delegate_and_wait, run_one, wait_status};
use serde_json::{Value, json};
use slate::core::{
    ChildSnapshot, CoordinationAction, Input, LimitReason, MessageMode, Party, ReceiptStatus,
    Reply, Role, Status, Validation, WaitResult,
};
use slate::runtime::WorkerBackend as _;
use slate::worker::pi::PiBackend;

/// The host extension of the `workerExtensions` tests (one tool, `host_probe`).
const HOST_PROBE: &str = include_str!("support/host_probe/index.ts");

/// An assignment for the `CALLS` scenario: each `(tool, arguments)` is one model tool call.
fn calls(title: &str, script: &[(&str, Value)]) -> String {
    use std::fmt::Write as _;
    let mut text = format!("SCENARIO:CALLS {title}");
    for (tool, args) in script {
        let _ = write!(text, "\nCALL: {tool} {args}");
    }
    text
}

/// The tool results the model saw, in order, in the last request of the worker whose
/// assignment contains `marker`.
fn tool_results(env: &Env, marker: &str) -> Vec<String> {
    let requests = env.fake.requests();
    let last = requests
        .iter()
        .rev()
        .find(|r| r.last_user_text.contains(marker))
        .unwrap_or_else(|| panic!("no request for {marker:?}"));
    last.messages()
        .iter()
        .filter(|m| m["role"] == "tool")
        .map(|m| match &m["content"] {
            Value::String(text) => text.clone(),
            other => other.to_string(),
        })
        .collect()
}

/// The tool names pi declared to the model in the first request of that worker.
fn declared_tools(env: &Env, marker: &str) -> Vec<String> {
    let requests = env.fake.requests();
    let first = requests
        .iter()
        .find(|r| r.last_user_text.contains(marker))
        .unwrap_or_else(|| panic!("no request for {marker:?}"));
    first.body["tools"]
        .as_array()
        .map(|tools| {
            tools
                .iter()
                .filter_map(|t| t["function"]["name"].as_str().map(str::to_owned))
                .collect()
        })
        .unwrap_or_default()
}

/// A general child whose model calls `delegate_task` for one scout grandchild, with the
/// bundled general spawn grants (a scout's own grants, scout and review, must be a subset of
/// its delegating ancestor's).
fn delegating_general(env: &Env, marker: &str, grandchild: &str) -> slate::core::TaskSpec {
    let mut task = env.task(
        &calls(
            marker,
            &[(
                "delegate_task",
                json!({"assignment": format!("SCENARIO:TEXT {grandchild}"), "profile": "scout"}),
            )],
        ),
        Role::General,
    );
    task.spawn = vec![Role::Scout, Role::Review];
    task
}

fn answer_schema() -> Value {
    json!({
        "type": "object",
        "properties": {"answer": {"type": "integer"}},
        "required": ["answer"],
        "additionalProperties": false,
    })
}

#[tokio::test]
async fn a_submitted_value_becomes_structured_json_exactly_as_written() {
    let Some(env) = Env::real("submit_result_once") else {
        return;
    };
    let marker = "submit-once";
    let mut task = env.task(
        &calls(
            marker,
            &[("submit_result", json!({"value": {"answer": 42}}))],
        ),
        Role::Scout,
    );
    task.result_schema = Some(answer_schema());
    let s = run_one(&env, task).await;

    assert_eq!(s.status, Status::Settled, "{:?}", s.error);
    let outcome = s.outcome.as_ref().unwrap();
    assert_eq!(outcome.validation, Validation::Submitted);
    assert_eq!(outcome.attempts, 1);
    assert!(outcome.finalized);
    let path = s.artifacts.as_ref().unwrap().structured.clone().unwrap();
    let written: Value = serde_json::from_slice(&std::fs::read(path).unwrap()).unwrap();
    assert_eq!(written, json!({"answer": 42}));
    assert_eq!(s.tool_calls, 1, "submission is counted like other tools");

    let declared = declared_tools(&env, marker);
    assert!(
        declared.iter().any(|t| t == "submit_result"),
        "{declared:?}"
    );
    for absent in ["delegate_task", "delegate_coordinate"] {
        assert!(
            !declared.iter().any(|t| t == absent),
            "{absent} is not granted: {declared:?}"
        );
    }
    assert!(env.leftovers().is_empty(), "no process left");
}

#[tokio::test]
async fn invalid_then_valid_then_duplicate_submissions_follow_the_protocol_without_coercion() {
    let Some(env) = Env::real("submit_result_attempts") else {
        return;
    };
    let marker = "submit-attempts";
    let mut task = env.task(
        &calls(
            marker,
            &[
                // A string is not an integer: pi must not coerce it, Slate must refuse it.
                ("submit_result", json!({"value": {"answer": "42"}})),
                ("submit_result", json!({"value": {"answer": 42}})),
                ("submit_result", json!({"value": {"answer": 7}})),
            ],
        ),
        Role::Scout,
    );
    task.result_schema = Some(answer_schema());
    let s = run_one(&env, task).await;

    assert_eq!(s.status, Status::Settled, "{:?}", s.error);
    let outcome = s.outcome.as_ref().unwrap();
    assert_eq!(outcome.validation, Validation::Submitted);
    assert_eq!(outcome.attempts, 2, "a duplicate is not an attempt");
    assert_eq!(
        outcome.value,
        Some(json!({"answer": 42})),
        "the first valid value stays"
    );
    assert_eq!(s.tool_calls, 3);

    let results = tool_results(&env, marker);
    assert_eq!(results.len(), 3, "{results:?}");
    assert!(
        results[0].contains("/answer"),
        "the invalid attempt names the JSON Pointer: {}",
        results[0]
    );
    assert!(
        !results[1].contains("/answer"),
        "the valid one is accepted: {}",
        results[1]
    );
    assert!(
        results[2].contains("already"),
        "the duplicate is refused: {}",
        results[2]
    );
    let path = s.artifacts.as_ref().unwrap().structured.clone().unwrap();
    let written: Value = serde_json::from_slice(&std::fs::read(path).unwrap()).unwrap();
    assert_eq!(written, json!({"answer": 42}));
}

#[tokio::test]
async fn a_request_limit_sends_exactly_the_allowed_requests() {
    let Some(env) = Env::real("request_guard_zero_bytes") else {
        return;
    };
    let marker = "request-guard";
    let mut task = env.task(&format!("SCENARIO:LOOP5 {marker}"), Role::Scout);
    task.limits.requests = Some(2);
    let s = run_one(&env, task).await;

    assert_eq!(s.status, Status::Cancelled, "{:?}", s.error);
    assert_eq!(s.limit_reason, Some(LimitReason::Requests));
    assert_eq!(s.telemetry.requests, Some(2));
    let sent = env
        .fake
        .requests()
        .iter()
        .filter(|r| r.last_user_text.contains(marker))
        .count();
    assert_eq!(sent, 2, "the over-limit request never reached the provider");
    assert!(env.leftovers().is_empty(), "no process left");
}

#[tokio::test]
async fn a_tool_over_the_limit_is_blocked_before_it_runs() {
    let Some(env) = Env::real("tool_guard_blocks") else {
        return;
    };
    let witness = env.sandbox.work.join("touched-by-the-second-tool");
    let mut task = env.task(
        &calls(
            "tool-guard",
            &[
                ("bash", json!({"command": "echo first"})),
                (
                    "bash",
                    json!({"command": format!("touch '{}'", witness.display())}),
                ),
            ],
        ),
        Role::General,
    );
    task.limits.tools = Some(1);
    let s = run_one(&env, task).await;

    assert_eq!(s.status, Status::Cancelled, "{:?}", s.error);
    assert_eq!(s.limit_reason, Some(LimitReason::Tools));
    assert_eq!(s.tool_calls, 1);
    assert!(!witness.exists(), "the blocked tool never ran");
    assert!(env.leftovers().is_empty(), "no process left");
}

/// An assignment for the `BATCH` scenario: every `(tool, arguments)` in one model answer.
fn batch(title: &str, script: &[(&str, Value)]) -> String {
    calls(title, script).replacen("SCENARIO:CALLS", "SCENARIO:BATCH", 1)
}

/// The tool results of the worker's pi session file (`transcripts/session.jsonl` under the
/// delegation directory), in order: `(toolName, text)`.
fn session_tool_results(env: &Env) -> Vec<(String, String)> {
    fn sessions(dir: &std::path::Path, found: &mut Vec<std::path::PathBuf>) {
        for entry in std::fs::read_dir(dir).into_iter().flatten().flatten() {
            let path = entry.path();
            if path.is_dir() {
                sessions(&path, found);
            } else if path.file_name().is_some_and(|n| n == "session.jsonl") {
                found.push(path);
            }
        }
    }
    let mut found = Vec::new();
    sessions(&env.delegation, &mut found);
    assert_eq!(found.len(), 1, "one worker session: {found:?}");
    std::fs::read_to_string(&found[0])
        .unwrap()
        .lines()
        .filter_map(|line| serde_json::from_str::<Value>(line).ok())
        .filter(|entry| entry["message"]["role"] == "toolResult")
        .map(|entry| {
            let message = &entry["message"];
            let text = message["content"]
                .as_array()
                .into_iter()
                .flatten()
                .filter_map(|c| c["text"].as_str())
                .collect::<String>();
            (message["toolName"].as_str().unwrap_or("").to_owned(), text)
        })
        .collect()
}

/// docs/workers.md "Where limits are enforced", a parallel batch (one model answer with four
/// calls, pi 1.6 runs them in parallel) over `limits.tools = 2`: pi asks the guard for every
/// call before it starts any, so the first two are counted, the third is blocked and commits
/// the limit, the fourth is not counted; the abort then reaches the two counted calls before
/// they finish (pi answers them `Operation aborted`, or `Command aborted` if bash had
/// started): `toolCalls` is 2, and those two are calls pi aborted.
#[tokio::test]
async fn a_parallel_batch_over_the_tool_limit_counts_the_granted_calls_pi_then_aborted() {
    let Some(env) = Env::real("tool_guard_batch") else {
        return;
    };
    let witness = |i: usize| env.sandbox.work.join(format!("batch-{i}"));
    let script: Vec<(&str, Value)> = (1..=4)
        .map(|i| {
            let command = format!("touch '{}' && echo ran-{i}", witness(i).display());
            ("bash", json!({ "command": command }))
        })
        .collect();
    let mut task = env.task(&batch("tool-batch", &script), Role::General);
    task.limits.tools = Some(2);
    let s = run_one(&env, task).await;

    assert_eq!(s.status, Status::Cancelled, "{:?}", s.error);
    assert_eq!(s.limit_reason, Some(LimitReason::Tools));
    assert_eq!(s.tool_calls, 2, "the two granted calls are counted");
    assert_eq!(
        s.telemetry.requests,
        Some(1),
        "one model answer, no turn after it"
    );
    let results = session_tool_results(&env);
    let texts: Vec<&str> = results.iter().map(|(_, text)| text.as_str()).collect();
    assert_eq!(
        texts.len(),
        4,
        "pi records a result for every call: {texts:?}"
    );
    let aborted = ["Operation aborted", "Command aborted"];
    let denied = "out of budget: tool limit of 2 reached";
    for (i, text) in texts.iter().enumerate() {
        assert!(
            !text.contains("ran-"),
            "call {} never finished: {texts:?}",
            i + 1
        );
    }
    assert!(
        texts[..2].iter().all(|t| aborted.contains(t)),
        "the counted calls were aborted by pi: {texts:?}"
    );
    assert!(
        texts[2..]
            .iter()
            .all(|t| *t == denied || *t == "Operation aborted"),
        "the call over the limit and the one after it were refused: {texts:?}"
    );
    assert!(
        !witness(3).exists() && !witness(4).exists(),
        "no call over the limit ran"
    );
    assert!(env.leftovers().is_empty(), "no process left");
}

#[tokio::test]
async fn a_general_child_delegates_a_scout_grandchild_in_the_foreground() {
    let Some(env) = Env::real("nested_delegate") else {
        return;
    };
    let marker = "nested-parent";
    let (rt, join) = env.start(4);
    let (refs, outcome) =
        delegate_and_wait(&rt, vec![delegating_general(&env, marker, "grandchild")]).await;
    let child = refs[0];
    let s = &outcome.outcomes[0];
    assert_eq!(s.status, Status::Settled, "{:?}", s.error);
    assert_eq!(s.tool_calls, 1);

    let fleet: Vec<ChildSnapshot> = rt.query(slate::core::Coordinator::list).await.unwrap();
    let grandchild = fleet
        .iter()
        .find(|g| g.depth == 2)
        .unwrap_or_else(|| panic!("no grandchild: {fleet:?}"));
    assert_eq!(grandchild.parent_id, child.id);
    assert_eq!(grandchild.parent_generation, Some(child.generation));
    assert_eq!(grandchild.status, Status::Settled, "{:?}", grandchild.error);

    let results = tool_results(&env, marker);
    assert!(
        results[0].contains("Hello from the fake LLM."),
        "the preview carries the grandchild's text: {}",
        results[0]
    );
    rt.shutdown().await.unwrap();
    join.await.unwrap();
    assert!(env.leftovers().is_empty(), "no process left");
}

#[tokio::test]
async fn a_nested_call_with_the_pool_full_fails_without_lending_a_permit() {
    let Some(env) = Env::real("nested_no_lending") else {
        return;
    };
    let marker = "nested-full";
    let (rt, join) = env.start(1);
    let (_, outcome) =
        delegate_and_wait(&rt, vec![delegating_general(&env, marker, "never")]).await;
    assert_eq!(outcome.outcomes[0].status, Status::Settled);
    let results = tool_results(&env, marker);
    assert!(
        results[0].contains("Nested capacity unavailable; no permit lending"),
        "{results:?}"
    );
    let fleet: Vec<ChildSnapshot> = rt.query(slate::core::Coordinator::list).await.unwrap();
    assert_eq!(fleet.len(), 1, "no identity was allocated: {fleet:?}");
    rt.shutdown().await.unwrap();
    join.await.unwrap();
}

#[tokio::test]
async fn a_child_messages_the_root_inbox_and_slate_inbox_reads_it() {
    let Some(env) = Env::real("child_messages_root") else {
        return;
    };
    let mut task = env.task(
        &calls(
            "message-root",
            &[(
                "delegate_coordinate",
                json!({"action": "message", "text": "findings are ready"}),
            )],
        ),
        Role::General,
    );
    task.coordination = vec![CoordinationAction::Message];
    let served = env.start_served(2, Arc::new(PiBackend::new(env.pi.clone())));
    let fg = served
        .rt
        .delegate(Party::Root, vec![task])
        .await
        .unwrap()
        .unwrap();
    let outcome = tokio::time::timeout(OUTCOME_TIMEOUT, fg.outcome)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(outcome.outcomes[0].status, Status::Settled);

    let out = tokio::process::Command::new(env!("CARGO_BIN_EXE_slate"))
        .args(["inbox", "--json"])
        .env("SLATE_SOCKET", &served.socket)
        .output()
        .await
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{text} {}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(text.contains("findings are ready"), "{text}");
    served.rt.shutdown().await.unwrap();
    served.join.await.unwrap();
}

#[tokio::test]
async fn the_root_messages_a_running_child_which_reads_it_by_waiting_on_its_inbox() {
    let Some(env) = Env::real("root_messages_child") else {
        return;
    };
    let marker = "child-inbox";
    let mut task = env.task(
        &calls(
            marker,
            &[(
                "delegate_coordinate",
                json!({"action": "wait", "timeoutMs": 60000}),
            )],
        ),
        Role::General,
    );
    task.coordination = vec![CoordinationAction::Wait, CoordinationAction::Inbox];
    let (rt, join) = env.start(2);
    let fg = rt.delegate(Party::Root, vec![task]).await.unwrap().unwrap();
    let child = admitted(&fg.admitted)[0];
    // The child is waiting once its tool runs.
    let deadline = tokio::time::Instant::now() + OUTCOME_TIMEOUT;
    while rt
        .snapshot(child)
        .await
        .unwrap()
        .is_none_or(|s| s.tool_calls == 0)
    {
        assert!(
            tokio::time::Instant::now() < deadline,
            "the child never called wait"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let receipt = rt
        .call(move |request| Input::Message {
            request,
            actor: Party::Root,
            target: Some(child),
            text: "the answer is under /srv".into(),
            mode: MessageMode::Inbox,
        })
        .await
        .unwrap()
        .unwrap();
    let Reply::Message { message } = receipt else {
        panic!("not a receipt: {receipt:?}");
    };
    let outcome = tokio::time::timeout(OUTCOME_TIMEOUT, fg.outcome)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(outcome.outcomes[0].status, Status::Settled);
    let results = tool_results(&env, marker);
    assert!(
        results[0].contains("the answer is under /srv"),
        "{results:?}"
    );
    let id = message.id;
    let read = rt
        .query(move |coord| coord.receipt(id).map(|m| m.status))
        .await
        .unwrap();
    assert_eq!(
        read,
        Some(ReceiptStatus::Delivered),
        "the wait returned it: delivered"
    );
    rt.shutdown().await.unwrap();
    join.await.unwrap();
}

#[tokio::test]
async fn a_child_waits_on_a_siblings_outcome_and_a_self_wait_is_refused() {
    let Some(env) = Env::real("sibling_wait") else {
        return;
    };
    let marker = "sibling-waiter";
    let mut waiter = env.task(
        &calls(
            marker,
            &[
                // The root tells it the sibling's id (identities are never enumerated).
                (
                    "delegate_coordinate",
                    json!({"action": "wait", "timeoutMs": 60000}),
                ),
                (
                    "delegate_coordinate",
                    json!({"action": "wait", "target": "$FOUND", "timeoutMs": 60000}),
                ),
                (
                    "delegate_coordinate",
                    json!({"action": "wait", "target": "$SELF", "timeoutMs": 1000}),
                ),
            ],
        ),
        Role::General,
    );
    waiter.coordination = vec![CoordinationAction::Wait];
    let sibling = env.task("SCENARIO:SLOW2 sibling", Role::Scout);
    let (rt, join) = env.start(4);
    let fg = rt
        .delegate(Party::Root, vec![waiter, sibling])
        .await
        .unwrap()
        .unwrap();
    let refs = admitted(&fg.admitted);
    let (waiter, sibling) = (refs[0], refs[1]);
    let deadline = tokio::time::Instant::now() + OUTCOME_TIMEOUT;
    while rt
        .snapshot(waiter)
        .await
        .unwrap()
        .is_none_or(|s| s.tool_calls == 0)
    {
        assert!(
            tokio::time::Instant::now() < deadline,
            "the waiter never called wait"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    rt.call(move |request| Input::Message {
        request,
        actor: Party::Root,
        target: Some(waiter),
        text: format!("your sibling is FOUND:{sibling}"),
        mode: MessageMode::Inbox,
    })
    .await
    .unwrap()
    .unwrap();
    let outcome = tokio::time::timeout(OUTCOME_TIMEOUT, fg.outcome)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(
        outcome.outcomes[0].status,
        Status::Settled,
        "{:?}",
        outcome.outcomes[0].error
    );
    assert_eq!(outcome.outcomes[1].status, Status::Settled);
    let results = tool_results(&env, marker);
    assert_eq!(results.len(), 3, "{results:?}");
    assert!(
        results[1].contains(&sibling.id.to_string()) && results[1].contains("settled"),
        "the sibling's outcome: {}",
        results[1]
    );
    assert!(
        results[2].to_lowercase().contains("self") || results[2].contains("itself"),
        "a self wait is refused: {}",
        results[2]
    );
    wait_status(&rt, sibling, Status::Settled).await;
    rt.shutdown().await.unwrap();
    join.await.unwrap();
}

#[tokio::test]
async fn a_broken_extension_fails_the_generation_at_setup_and_releases_its_permit() {
    let Some(env) = Env::real("broken_extension") else {
        return;
    };
    let broken = env.sandbox.root().join("broken-extension.ts");
    std::fs::write(
        &broken,
        "export default function (pi) { this is not typescript",
    )
    .unwrap();
    let backend = PiBackend::new(env.pi.clone()).with_extension_file(&broken);
    let served = env.start_served(1, Arc::new(backend));
    let first = env.task("SCENARIO:TEXT first", Role::Scout);
    let second = env.task("SCENARIO:TEXT second", Role::Scout);
    let fg = served
        .rt
        .delegate(Party::Root, vec![first, second])
        .await
        .unwrap()
        .unwrap();
    let outcome = tokio::time::timeout(OUTCOME_TIMEOUT, fg.outcome)
        .await
        .unwrap()
        .unwrap();
    for s in &outcome.outcomes {
        assert_eq!(s.status, Status::Failed);
        let error = s.error.as_deref().unwrap_or_default();
        assert!(
            error.starts_with("setup failed") && error.contains("extension"),
            "pi's reason is kept: {error}"
        );
    }
    assert_eq!(env.fake.request_count(), 0, "no model request was made");
    served.rt.shutdown().await.unwrap();
    served.join.await.unwrap();
    assert!(env.leftovers().is_empty(), "no process left");
}

/// pi's automatic retries are model requests too: each asks the guard first, so a retry over
/// the limit is never sent either.
#[tokio::test]
async fn retries_ask_the_request_guard_too() {
    let Some(env) = Env::real("request_guard_retries") else {
        return;
    };
    let marker = "guarded-retries";
    let mut task = env.task(&format!("SCENARIO:FLAKY5 {marker}"), Role::Scout);
    task.limits.requests = Some(2);
    let s = run_one(&env, task).await;

    assert_eq!(s.status, Status::Cancelled, "{:?}", s.error);
    assert_eq!(s.limit_reason, Some(LimitReason::Requests));
    let sent = env
        .fake
        .requests()
        .iter()
        .filter(|r| r.last_user_text.contains(marker))
        .count();
    assert_eq!(sent, 2, "the third attempt (a retry) was not sent");
}

/// The capability reaches the extension on descriptor 3 and nothing the model runs can find
/// it: not in the environment of its bash or of pi (`/proc/$PPID/environ` holds only the
/// descriptor's number, `SLATE_CAPABILITY_FD=3`), not on an inherited descriptor. (The
/// extension presented it: every request was allowed.)
#[tokio::test]
async fn the_models_bash_cannot_read_the_workers_capability() {
    let Some(env) = Env::real("capability_unreadable") else {
        return;
    };
    let probe = "env; echo @@SECTION@@; tr '\\0' '\\n' < /proc/$PPID/environ; echo @@SECTION@@; \
                 ls -l /proc/$PPID/fd /proc/self/fd; echo @@SECTION@@; cat <&3; echo fd3=$?";
    let marker = "look-around";
    let task = env.task(
        &format!("SCENARIO:SHELL {marker}\nCOMMAND: {probe}"),
        Role::General,
    );
    let s = run_one(&env, task).await;
    assert_eq!(s.status, Status::Settled, "{:?}", s.error);
    let seen = tool_results(&env, marker).join("\n");
    let sections: Vec<&str> = seen.split("@@SECTION@@").collect();
    assert_eq!(sections.len(), 4, "the probe ran: {seen}");
    assert!(
        !sections[0].contains("SLATE_CAPABILITY"),
        "the model's environment does not even say where it was: {}",
        sections[0]
    );
    assert!(
        !sections[3].contains("fd3=0"),
        "descriptor 3 is not inherited: {}",
        sections[3]
    );
    let hex_run = seen
        .split(|c: char| !c.is_ascii_hexdigit())
        .map(str::len)
        .max()
        .unwrap_or(0);
    assert!(hex_run < 64, "no 64-hex-digit capability anywhere: {seen}");
    assert!(
        seen.contains("SLATE_SOCKET="),
        "the socket is not secret: {seen}"
    );
}

/// `message` with `mode: "followUp"` to a real running child: `queued` when pi accepts it,
/// `delivered` when it enters the transcript after the current turn, and the child answers it.
#[tokio::test]
async fn a_follow_up_message_reaches_a_real_child_after_its_turn() {
    let Some(env) = Env::real("follow_up_message") else {
        return;
    };
    let (rt, join) = env.start(2);
    let fg = rt
        .delegate(
            Party::Root,
            vec![env.task("SCENARIO:SLOW2 talk slowly", Role::Scout)],
        )
        .await
        .unwrap()
        .unwrap();
    let child = admitted(&fg.admitted)[0];
    wait_status(&rt, child, Status::Running).await;
    let receipt = rt
        .call(move |request| Input::Message {
            request,
            actor: Party::Root,
            target: Some(child),
            text: "And then name one colour.".into(),
            mode: MessageMode::FollowUp,
        })
        .await
        .unwrap()
        .unwrap();
    let Reply::Message { message } = receipt else {
        panic!("not a receipt: {receipt:?}");
    };
    let id = message.id;
    let Reply::Wait { result } = rt
        .call(move |request| Input::Wait {
            request,
            actor: Party::Root,
            target: None,
            message_id: Some(id),
            timeout_ms: 60_000,
        })
        .await
        .unwrap()
        .unwrap()
    else {
        panic!("wait expected")
    };
    match result {
        WaitResult::Message { message } => {
            assert_eq!(message.status, ReceiptStatus::Delivered, "{message:?}");
        }
        other => panic!("{other:?}"),
    }
    let outcome = tokio::time::timeout(OUTCOME_TIMEOUT, fg.outcome)
        .await
        .unwrap()
        .unwrap();
    let s = &outcome.outcomes[0];
    assert_eq!(s.status, Status::Settled, "{:?}", s.error);
    assert!(
        s.result
            .as_deref()
            .unwrap_or_default()
            .contains("And then name one colour"),
        "the follow-up was answered last: {:?}",
        s.result
    );
    rt.shutdown().await.unwrap();
    join.await.unwrap();
}

/// `workerExtensions`: a host extension the session selected is loaded into the worker after
/// Slate's own, and its tool is declared to the model and runs.
#[tokio::test]
async fn a_selected_host_extension_loads_into_the_worker_and_its_tool_runs() {
    let Some(env) = Env::real("host_extension_loads") else {
        return;
    };
    let probe = env.sandbox.root().join("host-probe.ts");
    std::fs::write(&probe, HOST_PROBE).unwrap();
    let backend = Arc::new(PiBackend::new(env.pi.clone()));
    let served = env.start_served(2, backend);
    assert!(served.rt.actors().set_worker_extensions(vec![
        slate::policy::host_extensions::WorkerExtension {
            source: "local".into(),
            path: probe.clone(),
            tools: vec!["host_probe".into()],
        }
    ]));
    let marker = "host-extension-probe";
    let task = env.task(&calls(marker, &[("host_probe", json!({}))]), Role::Scout);
    let (_, outcome) = delegate_and_wait(&served.rt, vec![task]).await;
    let s = &outcome.outcomes[0];
    assert_eq!(s.status, Status::Settled, "{:?}", s.error);
    assert!(
        declared_tools(&env, marker).contains(&"host_probe".to_owned()),
        "declared: {:?}",
        declared_tools(&env, marker)
    );
    assert_eq!(tool_results(&env, marker), ["host probe ran"]);
    served.rt.shutdown().await.unwrap();
    served.join.await.unwrap();
    assert!(env.leftovers().is_empty(), "no process left");
}

/// Waits until `backend` holds `n` idle pre-started processes.
async fn until_pooled(backend: &PiBackend, n: usize) {
    let deadline = tokio::time::Instant::now() + OUTCOME_TIMEOUT;
    while backend.idle_pooled() < n {
        assert!(
            tokio::time::Instant::now() < deadline,
            "the pool never held {n} process(es)"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// No process of `env` is left within 5 s: idle pre-started processes are signalled when the
/// coordinator shuts down and end on their own time (their containment ends what is below).
async fn no_leftovers_soon(env: &Env) {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(5);
    while !env.leftovers().is_empty() {
        assert!(
            tokio::time::Instant::now() < deadline,
            "processes left: {:?}",
            env.leftovers()
        );
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
}

/// A backend keeping `size` pre-started processes, and its coordinator serving `env`'s
/// workspace with the pool started for it.
fn pooled_backend(env: &Env, size: u32) -> (Arc<PiBackend>, pi_runtime::Served) {
    let policy = slate::policy::pool::PoolPolicy {
        size,
        idle_seconds: 600,
    };
    let backend = Arc::new(PiBackend::new(env.pi.clone()).with_pool(policy, 4));
    let served = env.start_served(4, Arc::clone(&backend));
    let work = std::fs::canonicalize(&env.sandbox.work).unwrap();
    backend.prestart(&work, served.rt.actors());
    (backend, served)
}

/// The system prompt of the first request that carried `marker`.
fn system_prompt(env: &Env, marker: &str) -> String {
    let requests = env.fake.requests();
    let first = requests
        .iter()
        .find(|r| r.last_user_text.contains(marker))
        .unwrap_or_else(|| panic!("no request for {marker:?}"));
    first.messages()[0]["content"]
        .as_str()
        .unwrap_or_default()
        .to_owned()
}

/// Issue 23: a pre-started process serves exactly one generation and a fresh one takes the
/// next task, which finds nothing of the first: its own transcript file, model and effort,
/// tools, system prompt, workspace, and its own capability (its requests are counted for it).
#[tokio::test]
async fn pooled_workers_serve_one_generation_each_and_carry_nothing_over() {
    let Some(env) = Env::real("pool_no_leak") else {
        return;
    };
    let (backend, served) = pooled_backend(&env, 1);
    until_pooled(&backend, 1).await;
    let (first, outcome) = delegate_and_wait(
        &served.rt,
        vec![env.task("SCENARIO:TEXT alpha-secret-4711", Role::Scout)],
    )
    .await;
    let a = outcome.outcomes[0].clone();
    assert_eq!(a.status, Status::Settled, "{:?}", a.error);
    until_pooled(&backend, 1).await;
    let mut task = env.task("SCENARIO:BASH beta-marker", Role::General);
    task.model = Some(slate::core::ModelSelection {
        provider: "fake".into(),
        id: "fake-reasoner".into(),
        effort: Some("high".into()),
    });
    let (second, outcome) = delegate_and_wait(&served.rt, vec![task]).await;
    let b = outcome.outcomes[0].clone();
    assert_eq!(b.status, Status::Settled, "{:?}", b.error);

    assert_eq!(
        a.telemetry.launch,
        Some(slate::core::snapshot::Launch::Pooled)
    );
    assert_eq!(
        b.telemetry.launch,
        Some(slate::core::snapshot::Launch::Pooled)
    );
    // Its own transcript, holding nothing of the first task, with its own model and effort.
    let (ta, tb) = (a.transcript.clone().unwrap(), b.transcript.clone().unwrap());
    assert_ne!(ta, tb);
    let text = std::fs::read_to_string(&tb).unwrap();
    assert!(!text.contains("alpha-secret"), "{text}");
    assert!(
        text.contains(r#""modelId":"fake-reasoner""#) && text.contains(r#""thinkingLevel":"high""#),
        "{text}"
    );
    let header: Value = serde_json::from_str(text.lines().next().unwrap()).unwrap();
    let work = std::fs::canonicalize(&env.sandbox.work).unwrap();
    assert_eq!(header["cwd"], work.display().to_string(), "its workspace");
    // Its own tools and system prompt (each names its own generation), and its own model.
    assert_eq!(
        declared_tools(&env, "alpha-secret"),
        ["read", "grep", "find", "ls"]
    );
    assert_eq!(
        declared_tools(&env, "beta-marker"),
        ["read", "grep", "find", "ls", "write", "edit", "bash"]
    );
    let (pa, pb) = (
        system_prompt(&env, "alpha-secret"),
        system_prompt(&env, "beta-marker"),
    );
    assert!(
        pa.contains(&first[0].id.to_string()) && pa.contains("role scout"),
        "{pa}"
    );
    assert!(
        pb.contains(&second[0].id.to_string()) && pb.contains("role general"),
        "{pb}"
    );
    assert!(!pb.contains(&first[0].id.to_string()), "{pb}");
    let requests = env.fake.requests();
    let sent_b: Vec<_> = requests
        .iter()
        .filter(|r| r.last_user_text.contains("beta-marker"))
        .collect();
    assert!(sent_b.iter().all(|r| r.body["model"] == "fake-reasoner"));
    // Its guard spoke with its own capability: its requests are counted for it alone.
    assert_eq!(
        b.telemetry.requests,
        Some(u32::try_from(sent_b.len()).unwrap())
    );
    assert_eq!(a.telemetry.requests, Some(1));
    served.rt.shutdown().await.unwrap();
    served.join.await.unwrap();
    assert!(
        env.leftovers().is_empty(),
        "no process left, the pool's included"
    );
}

/// Issue 23: a pooled process whose extension fails when it is bound fails its generation
/// closed, as a cold start whose extension fails at load does: setup failed, no model request,
/// no process left. (pi itself runs on without an extension whose factory threw; Slate does
/// not take its word and checks that the extension's command exists.)
#[tokio::test]
async fn a_pooled_process_whose_extension_fails_when_bound_fails_closed() {
    let Some(env) = Env::real("pool_mismatch") else {
        return;
    };
    let dir = env.sandbox.root().join("other-build");
    let entry = slate::worker::pi::extension::install_into(&dir).unwrap();
    // Another build, whose worker fails once it has its identity.
    let worker = entry.with_file_name("worker.ts");
    let text = std::fs::read_to_string(&worker).unwrap();
    assert!(text.contains("registerGuards(pi, control);"));
    std::fs::write(
        &worker,
        text.replace(
            "registerGuards(pi, control);",
            "throw new Error(\"another build\");",
        ),
    )
    .unwrap();
    let error = failed_setup_with_extension(&env, &entry, 1, "SCENARIO:TEXT mismatched").await;
    assert!(
        error.starts_with("setup failed: a pre-started pi could not be bound")
            && error.contains("extension did not load"),
        "{error}"
    );
}

/// One scout delegated through a backend whose workers load `entry`, with a pool of
/// `pool_size` full first (0: a cold start): it must fail at setup before any model request,
/// leaving no process. Returns its error.
async fn failed_setup_with_extension(
    env: &Env,
    entry: &std::path::Path,
    pool_size: u32,
    assignment: &str,
) -> String {
    let policy = slate::policy::pool::PoolPolicy {
        size: pool_size,
        idle_seconds: 600,
    };
    let backend = Arc::new(
        PiBackend::new(env.pi.clone())
            .with_extension_file(entry)
            .with_pool(policy, 4),
    );
    let served = env.start_served(4, Arc::clone(&backend));
    if pool_size > 0 {
        let work = std::fs::canonicalize(&env.sandbox.work).unwrap();
        backend.prestart(&work, served.rt.actors());
        until_pooled(&backend, pool_size as usize).await;
    }
    let (_, outcome) = delegate_and_wait(&served.rt, vec![env.task(assignment, Role::Scout)]).await;
    let s = &outcome.outcomes[0];
    assert_eq!(s.status, Status::Failed, "{assignment}");
    assert_eq!(env.fake.request_count(), 0, "no model request was made");
    served.rt.shutdown().await.unwrap();
    served.join.await.unwrap();
    no_leftovers_soon(env).await;
    s.error.clone().unwrap_or_default()
}

/// Issue 23: extension files that changed on disk after Slate wrote them (here one byte of a
/// file a worker does not even load) fail the worker closed: its extension presents the files'
/// hash at `hello` and the coordinator refuses another build (`extension-mismatch`). The same
/// for a pre-started process, discovered at its binding, and for a cold start; no model request
/// either way, no process left.
#[tokio::test]
async fn changed_extension_files_fail_pre_started_and_cold_workers_closed() {
    for (name, pool) in [("hash_pooled", 1), ("hash_cold", 0)] {
        let Some(env) = Env::real(name) else {
            return;
        };
        let entry = slate::worker::pi::extension::install_into(&env.sandbox.root().join("changed"))
            .unwrap();
        let render = entry.with_file_name("render.ts");
        let mut text = std::fs::read_to_string(&render).unwrap();
        text.push('\n');
        std::fs::write(&render, text).unwrap();
        let error =
            failed_setup_with_extension(&env, &entry, pool, "SCENARIO:TEXT changed files").await;
        assert!(
            error.starts_with("setup failed")
                && error.contains("this worker's Slate extension files hash to")
                && error.contains("they changed on disk after Slate wrote them"),
            "{name}: {error}"
        );
        if pool > 0 {
            assert!(
                error.contains("a pre-started pi could not be bound"),
                "{error}"
            );
        }
    }
}

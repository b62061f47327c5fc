//! Slate's runtime with real pi 1.6 workers against the Rust fake LLM (127.0.0.1 only), and
//! fault tests with stand-in pi scripts.
//!
//! pi comes from `SLATE_PI` or `ci/install-pi.sh`'s env file. Without it the real-pi tests
//! print `SKIPPED: …` and pass, except under `CI=true`, where they fail.

#![allow(clippy::unwrap_used, reason = "test fixtures fail loudly")]

#[path = "support/fake_llm.rs"]
mod fake_llm;
#[path = "support/pi_env.rs"]
mod pi_env;
#[path = "support/pi_runtime.rs"]
mod pi_runtime;

use std::ffi::OsString;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use fake_llm::FakeLlm;
use pi_env::PiSandbox;
use pi_runtime::{Env, OUTCOME_TIMEOUT, admitted, run_one, serve_pi, wait_status};
use slate::core::{
    Input, LimitOverrides, LimitReason, Party, Reply, Role, Status, TaskSpec, WaitResult,
};
use slate::policy::scheduling::SchedulingPolicy;
use slate::runtime::{RuntimeConfig, RuntimeEvent, RuntimeHandle, RuntimeReport, spawn};
use slate::store::event_log::read_history;
use slate::worker::pi::{PiBackend, PiCommand};

#[tokio::test]
async fn a_text_task_settles_with_result_txt_and_pis_usage_and_cost() {
    let Some(env) = Env::real("a_text_task_settles") else {
        return;
    };
    let s = run_one(
        &env,
        env.task("SCENARIO:USAGE count carefully", Role::Scout),
    )
    .await;
    assert_eq!(s.status, Status::Settled, "{:?}", s.error);
    let tokens = s.telemetry.tokens.unwrap();
    // NOTES "Usage and cost": input 500, cacheRead 1000, output 300, total 1800, cost 0.0012.
    assert_eq!(
        (tokens.input, tokens.cache_read, tokens.output, tokens.total),
        (500, 1000, 300, 1800)
    );
    assert!(
        (s.telemetry.cost.unwrap() - 0.0012).abs() < 1e-9,
        "{:?}",
        s.telemetry.cost
    );
    assert_eq!(s.telemetry.requests, Some(1));
    assert!(
        s.telemetry.context.is_some(),
        "context usage from get_session_stats"
    );
    let text_path = s.artifacts.as_ref().and_then(|a| a.text.clone()).unwrap();
    let text = std::fs::read_to_string(&text_path).unwrap();
    assert_eq!(s.result.as_deref(), Some(text.trim()));
    // The transcript lands in the task directory.
    let transcript = PathBuf::from(s.transcript.clone().unwrap());
    assert!(
        transcript.starts_with(Path::new(&text_path).parent().unwrap().join("transcripts")),
        "{transcript:?}"
    );
    assert!(transcript.exists());
    assert!(env.leftovers().is_empty(), "no process left");
}

#[tokio::test]
async fn a_tool_task_counts_its_tools() {
    let Some(env) = Env::real("a_tool_task_counts") else {
        return;
    };
    let s = run_one(
        &env,
        env.task("SCENARIO:BASH run the tool", Role::Implementation),
    )
    .await;
    assert_eq!(s.status, Status::Settled, "{:?}", s.error);
    assert_eq!(s.tool_calls, 1);
    assert_eq!(s.telemetry.requests, Some(2));
    assert!(s.result.unwrap().contains("hi-from-bash-tool"));
}

#[tokio::test]
async fn retries_exhausted_end_failed_with_pis_error_message() {
    let Some(env) = Env::real("retries_exhausted") else {
        return;
    };
    let s = run_one(&env, env.task("SCENARIO:ERR500 fail", Role::Scout)).await;
    assert_eq!(s.status, Status::Failed);
    let error = s.error.unwrap();
    assert!(error.starts_with("500: "), "{error}");
    assert_eq!(
        s.telemetry.requests,
        Some(3),
        "1 + 2 retries, each a request"
    );
}

#[tokio::test]
async fn a_request_limit_cancels_with_limit_reason() {
    let Some(env) = Env::real("request_limit") else {
        return;
    };
    let mut task = env.task("SCENARIO:LOOP keep going", Role::Implementation);
    task.limits = LimitOverrides {
        requests: Some(2),
        ..LimitOverrides::default()
    };
    let s = run_one(&env, task).await;
    assert_eq!(s.status, Status::Cancelled);
    assert_eq!(s.limit_reason, Some(LimitReason::Requests));
    assert_eq!(
        s.telemetry.requests,
        Some(2),
        "the request over the limit is not counted"
    );
    assert!(s.error.unwrap().contains("request limit"));
    assert!(env.leftovers().is_empty());
}

#[tokio::test]
async fn a_steer_during_a_slow_stream_is_delivered() {
    let Some(env) = Env::real("steer_slow") else {
        return;
    };
    let (rt, join) = env.start(1);
    let reply = rt
        .call({
            let tasks = vec![env.task("SCENARIO:SLOW2 talk slowly", Role::Scout)];
            move |request| Input::Admit {
                request,
                actor: Party::Root,
                tasks,
                background: true,
            }
        })
        .await
        .unwrap()
        .unwrap();
    let target = admitted(&reply)[0];
    wait_status(&rt, target, Status::Running).await;
    let Reply::Message { message } = rt
        .call(move |request| Input::Steer {
            request,
            target,
            text: "Please also say goodbye.".into(),
        })
        .await
        .unwrap()
        .unwrap()
    else {
        panic!("receipt expected")
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
            assert_eq!(message.status, slate::core::ReceiptStatus::Delivered);
        }
        other => panic!("{other:?}"),
    }
    // Delivered means the user message entered the transcript; the run goes on to answer it.
    let Reply::Wait { result } = rt
        .call(move |request| Input::Wait {
            request,
            actor: Party::Root,
            target: Some(target),
            message_id: None,
            timeout_ms: 60_000,
        })
        .await
        .unwrap()
        .unwrap()
    else {
        panic!("wait expected")
    };
    assert!(
        matches!(result, WaitResult::Outcome { outcome } if outcome.status == Status::Settled),
        "{result:?}"
    );
    rt.shutdown().await.unwrap();
    join.await.unwrap();
    // The steer text reached the model as a user message.
    assert!(
        env.fake
            .requests()
            .iter()
            .any(|r| format!("{:?}", r.messages()).contains("Please also say goodbye."))
    );
}

#[tokio::test]
async fn status_shows_the_streamed_text_before_the_message_ends() {
    let Some(env) = Env::real("stream_status") else {
        return;
    };
    let (rt, join) = env.start(1);
    let mut events = rt.subscribe();
    let reply = rt
        .call({
            let tasks = vec![env.task("SCENARIO:SLOW3 talk slowly", Role::Scout)];
            move |request| Input::Admit {
                request,
                actor: Party::Root,
                tasks,
                background: true,
            }
        })
        .await
        .unwrap()
        .unwrap();
    let target = admitted(&reply)[0];
    // SLOW3: `word0 ` … `word11 `, four a second. Wait until the registry shows part of it
    // while the message is still streaming.
    let deadline = tokio::time::Instant::now() + OUTCOME_TIMEOUT;
    let partial = loop {
        assert!(tokio::time::Instant::now() < deadline, "nothing streamed");
        let s = rt.snapshot(target).await.unwrap().unwrap();
        if s.progress.as_deref().is_some_and(|p| p.contains("word2 ")) {
            break s;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    };
    assert_eq!(partial.status, Status::Running);
    assert_eq!(partial.streaming, Some(slate::core::Streaming::Assistant));
    assert!(partial.result.is_none(), "the message has not ended");
    let progress = partial.progress.clone().unwrap();
    assert!(progress.starts_with("word0 word1 word2 "), "{progress:?}");
    assert!(
        !progress.contains("word11"),
        "seen before the end: {progress:?}"
    );
    assert!(partial.activity.as_deref().unwrap().starts_with("word0"));
    // Subscribers (the Hub, `slate watch`) got it as a registry change too.
    let mut streamed_change = false;
    while let Ok(event) = events.try_recv() {
        if let RuntimeEvent::Registry(e) = event
            && e.child.child_ref() == target
            && e.child.streaming.is_some()
        {
            streamed_change = true;
        }
    }
    assert!(streamed_change);
    let done = loop {
        let s = rt.snapshot(target).await.unwrap().unwrap();
        if s.status.is_terminal() {
            break s;
        }
        assert!(tokio::time::Instant::now() < deadline, "never ended");
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    assert_eq!(done.status, Status::Settled, "{:?}", done.error);
    assert_eq!(
        done.streaming, None,
        "the final message replaced the stream"
    );
    let text = (0..12)
        .map(|i| format!("word{i}"))
        .collect::<Vec<_>>()
        .join(" ")
        + " ";
    assert_eq!(done.progress.as_deref(), Some(text.as_str()));
    assert_eq!(done.result.as_deref(), Some(text.trim()));
    rt.shutdown().await.unwrap();
    // The event log keeps state, not the stream: no growing-output change of a running
    // generation is written, and the final text is.
    let log = std::fs::read_to_string(env.delegation.join("events.jsonl")).unwrap();
    assert!(
        !log.contains("\"streaming\""),
        "streamed changes were logged"
    );
    assert!(log.contains("word11"), "the final text is in the log");
    join.await.unwrap();
}

/// Every file under `dir`, recursively.
fn files_under(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut todo = vec![dir.to_path_buf()];
    while let Some(d) = todo.pop() {
        for entry in std::fs::read_dir(&d).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                todo.push(path);
            } else {
                out.push(path);
            }
        }
    }
    out.sort();
    out
}

/// Spec 000 "Worker pi settings remain nonpersistent": workers use the user's agent dir and
/// its credentials where they are; nothing a run does changes pi's settings files or copies
/// a credential into task directories, transcripts, artifacts or the event log.
#[tokio::test]
async fn workers_leave_pi_settings_and_credentials_untouched_and_uncopied() {
    let Some(env) = Env::real("settings_untouched") else {
        return;
    };
    let agent = &env.sandbox.agent_dir;
    let models_key = "sk-slate-models-SECRET-5f1c";
    let auth_key = "sk-slate-auth-SECRET-9e2d";
    let models = std::fs::read_to_string(agent.join("models.json"))
        .unwrap()
        .replace("\"fake-key\"", &format!("\"{models_key}\""));
    std::fs::write(agent.join("models.json"), models).unwrap();
    std::fs::write(
        agent.join("auth.json"),
        format!("{{\"other\": {{\"type\": \"api_key\", \"key\": \"{auth_key}\"}}}}\n"),
    )
    .unwrap();
    let before: Vec<(PathBuf, Vec<u8>)> = files_under(agent)
        .into_iter()
        .map(|p| {
            let bytes = std::fs::read(&p).unwrap();
            (p, bytes)
        })
        .collect();

    let (rt, join) = env.start(2);
    let tasks = vec![
        env.task("SCENARIO:BASH run the tool", Role::Implementation),
        env.task("SCENARIO:SLOW2 talk slowly", Role::Scout),
    ];
    let fg = rt.delegate(Party::Root, tasks).await.unwrap().unwrap();
    let outcome = tokio::time::timeout(OUTCOME_TIMEOUT, fg.outcome)
        .await
        .unwrap()
        .unwrap();
    rt.shutdown().await.unwrap();
    join.await.unwrap();
    for s in &outcome.outcomes {
        assert_eq!(s.status, Status::Settled, "{:?}", s.error);
    }

    // The user's pi files are byte-identical. The one file that may appear beside them is
    // pi's own provider-catalog cache, which any pi start creates when it is absent.
    let after: Vec<(PathBuf, Vec<u8>)> = files_under(agent)
        .into_iter()
        .filter(|p| !p.ends_with("models-store.json") || before.iter().any(|(b, _)| b == p))
        .map(|p| {
            let bytes = std::fs::read(&p).unwrap();
            (p, bytes)
        })
        .collect();
    assert_eq!(
        before.iter().map(|(p, _)| p).collect::<Vec<_>>(),
        after.iter().map(|(p, _)| p).collect::<Vec<_>>()
    );
    for ((path, old), (_, new)) in before.iter().zip(&after) {
        assert!(old == new, "{} changed", path.display());
    }
    // The credential was used where it is (the provider saw it)…
    assert!(
        env.fake.requests().iter().all(|r| {
            r.header("authorization") == Some(format!("Bearer {models_key}").as_str())
        })
    );
    // … and copied nowhere Slate writes: task dirs, transcripts, artifacts, event log.
    let written = files_under(&env.delegation);
    assert!(
        written.iter().any(|p| p.ends_with("events.jsonl"))
            && written.iter().any(|p| p.ends_with("result.txt"))
            && written
                .iter()
                .any(|p| p.extension().is_some_and(|e| e == "jsonl")
                    && p.components().any(|c| c.as_os_str() == "transcripts")),
        "the run wrote what it should: {written:?}"
    );
    for path in written {
        let text = String::from_utf8_lossy(&std::fs::read(&path).unwrap()).into_owned();
        for secret in [models_key, auth_key] {
            assert!(!text.contains(secret), "{secret} in {}", path.display());
        }
    }
}

#[tokio::test]
async fn a_stop_during_a_stream_ends_cancelled_with_no_process_left() {
    let Some(env) = Env::real("stop_stream") else {
        return;
    };
    let (rt, join) = env.start(1);
    let fg = rt
        .delegate(
            Party::Root,
            vec![env.task("SCENARIO:SLOW talk", Role::Scout)],
        )
        .await
        .unwrap()
        .unwrap();
    let target = admitted(&fg.admitted)[0];
    wait_status(&rt, target, Status::Running).await;
    // Async: the guard of the worker's request is answered on this (current-thread) runtime.
    assert!(env.requests_reach(1).await);
    rt.call(move |request| Input::Stop {
        request,
        actor: Party::Root,
        target,
    })
    .await
    .unwrap()
    .unwrap();
    let outcome = tokio::time::timeout(OUTCOME_TIMEOUT, fg.outcome)
        .await
        .unwrap()
        .unwrap();
    let s = &outcome.outcomes[0];
    assert_eq!(s.status, Status::Cancelled);
    assert!(s.disposed);
    let report = {
        rt.shutdown().await.unwrap();
        join.await.unwrap()
    };
    assert_eq!(
        report.workers_killed, 0,
        "abort drained it: no signal needed"
    );
    assert!(
        env.leftovers().is_empty(),
        "processes left: {:?}",
        env.leftovers()
    );
}

#[tokio::test]
async fn five_tasks_at_concurrency_two_run_in_fifo_order() {
    let Some(env) = Env::real("fifo_five") else {
        return;
    };
    let (rt, join) = env.start(2);
    let tasks = (0..5)
        .map(|i| env.task(&format!("SCENARIO:TEXT number {i}"), Role::Scout))
        .collect();
    let fg = rt.delegate(Party::Root, tasks).await.unwrap().unwrap();
    let refs = admitted(&fg.admitted);
    let outcome = tokio::time::timeout(OUTCOME_TIMEOUT, fg.outcome)
        .await
        .unwrap()
        .unwrap();
    assert!(outcome.outcomes.iter().all(|s| s.status == Status::Settled));
    rt.shutdown().await.unwrap();
    join.await.unwrap();
    // Setup order in the event log follows admission order.
    let history = read_history(&env.delegation.join("events.jsonl")).unwrap();
    let mut started = Vec::new();
    for line in std::fs::read_to_string(env.delegation.join("events.jsonl"))
        .unwrap()
        .lines()
    {
        let v: serde_json::Value = serde_json::from_str(line).unwrap();
        if v["child"]["status"] == "setup" {
            let id: uuid::Uuid = v["child"]["id"].as_str().unwrap().parse().unwrap();
            if !started.contains(&id) {
                started.push(id);
            }
        }
    }
    assert_eq!(started, refs.iter().map(|r| r.id).collect::<Vec<_>>());
    assert_eq!(history.snapshot(refs[4]).unwrap().status, Status::Settled);
}

#[tokio::test]
async fn a_worker_killed_mid_run_fails_with_the_reason_and_releases_its_permit() {
    let Some(env) = Env::real("sigkill_worker") else {
        return;
    };
    let (rt, join) = env.start(1);
    let fg = rt
        .delegate(
            Party::Root,
            vec![
                env.task("SCENARIO:SLOW talk", Role::Scout),
                env.task("SCENARIO:TEXT after", Role::Scout),
            ],
        )
        .await
        .unwrap()
        .unwrap();
    let refs = admitted(&fg.admitted);
    wait_status(&rt, refs[0], Status::Running).await;
    // Async: the guard of the worker's request is answered on this (current-thread) runtime.
    assert!(env.requests_reach(1).await);
    for pid in env.leftovers() {
        let _ = nix::sys::signal::kill(
            nix::unistd::Pid::from_raw(i32::try_from(pid).unwrap()),
            nix::sys::signal::Signal::SIGKILL,
        );
    }
    let outcome = tokio::time::timeout(OUTCOME_TIMEOUT, fg.outcome)
        .await
        .unwrap()
        .unwrap();
    let killed = &outcome.outcomes[0];
    assert_eq!(killed.status, Status::Failed);
    assert!(
        killed.error.as_deref().unwrap().contains("signal 9"),
        "{:?}",
        killed.error
    );
    assert_eq!(
        outcome.outcomes[1].status,
        Status::Settled,
        "the permit was released"
    );
    rt.shutdown().await.unwrap();
    join.await.unwrap();
}

// ---- stand-in pi scripts (no real pi needed) -------------------------------------------------

/// A shell script standing in for pi: `--version` prints 1.6.0; otherwise it runs `body`.
fn fake_pi(dir: &Path, name: &str, body: &str) -> PiCommand {
    let path = dir.join(name);
    let script =
        format!("#!/bin/sh\nif [ \"$1\" = --version ]; then echo 1.6.0; exit 0; fi\n{body}\n");
    std::fs::write(&path, script).unwrap();
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
    PiCommand {
        program: OsString::from(path),
        leading: Vec::new(),
        env: Vec::new(),
    }
}

fn temp_dir(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("slate-pi-e2e-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

fn fake_runtime(
    dir: &Path,
    pi: PiCommand,
    grace: Duration,
) -> (RuntimeHandle, tokio::task::JoinHandle<RuntimeReport>) {
    let config = RuntimeConfig {
        root_id: uuid::Uuid::new_v4(),
        policy: SchedulingPolicy::default(),
        id_seed: 3,
        delegation_dir: dir.join("delegation"),
        event_log: true,
        kill_grace: grace,
    };
    let (rt, join) = spawn(config, Arc::new(PiBackend::new(pi))).unwrap();
    // The stand-in scripts never load Slate's extension or call the coordinator; the backend
    // only needs a socket to tell them (a real pi worker without one fails at setup).
    rt.actors().set_socket(&dir.join("unserved.sock"));
    (rt, join)
}

/// pi's answer to the driver's prompt (`state-1`, then `prompt-2`): only after it can a run
/// settle (issue 14, item 2).
const PROMPT_STARTED: &str = r#"{"id":"prompt-2","type":"response","command":"prompt","success":true,"data":{"disposition":"started"}}"#;
const ASSISTANT_START: &str = r#"{"type":"message_start","message":{"role":"assistant","content":[],"usage":{"input":0,"output":0,"cacheRead":0,"cacheWrite":0,"totalTokens":0,"cost":{"total":0}},"stopReason":"pending"}}"#;
const ASSISTANT_END: &str = r#"{"type":"message_end","message":{"role":"assistant","content":[{"type":"text","text":"Survived the noise."}],"usage":{"input":10,"output":4,"cacheRead":0,"cacheWrite":0,"totalTokens":14,"cost":{"total":0.0001}},"stopReason":"stop"}}"#;

#[tokio::test]
async fn garbage_on_stdout_is_survived() {
    let dir = temp_dir("garbage");
    let body = format!(
        "echo 'this is not json'\nprintf '\\377\\376 binary\\n'\necho '{{\"half\": '\necho '[1,2,3]'\necho '{PROMPT_STARTED}'\necho '{ASSISTANT_START}'\necho 'more garbage'\necho '{ASSISTANT_END}'\necho '{{\"type\":\"agent_settled\",\"aborted\":false}}'\ncat > /dev/null"
    );
    let (rt, join) = fake_runtime(
        &dir,
        fake_pi(&dir, "pi-garbage", &body),
        Duration::from_secs(5),
    );
    let fg = rt
        .delegate(
            Party::Root,
            vec![TaskSpec::new(
                "anything",
                Role::Scout,
                dir.display().to_string(),
            )],
        )
        .await
        .unwrap()
        .unwrap();
    let outcome = tokio::time::timeout(OUTCOME_TIMEOUT, fg.outcome)
        .await
        .unwrap()
        .unwrap();
    let s = &outcome.outcomes[0];
    assert_eq!(s.status, Status::Settled, "{:?}", s.error);
    assert_eq!(s.result.as_deref(), Some("Survived the noise."));
    // The stand-in loads no Slate extension, so it never asked the guard: nothing was
    // counted. Real pi workers are counted by the guard.
    assert_eq!(s.telemetry.requests, Some(0));
    rt.shutdown().await.unwrap();
    join.await.unwrap();
    let _ = std::fs::remove_dir_all(&dir);
}

#[tokio::test]
async fn a_worker_that_ignores_abort_stays_draining_until_shutdown_escalates() {
    let dir = temp_dir("ignore-abort");
    let body = format!("trap '' TERM INT\necho '{ASSISTANT_START}'\nwhile :; do sleep 1; done");
    let (rt, join) = fake_runtime(
        &dir,
        fake_pi(&dir, "pi-stubborn", &body),
        Duration::from_millis(500),
    );
    let mut events = rt.subscribe();
    let reply = rt
        .call({
            let tasks = vec![TaskSpec::new(
                "anything",
                Role::Scout,
                dir.display().to_string(),
            )];
            move |request| Input::Admit {
                request,
                actor: Party::Root,
                tasks,
                background: true,
            }
        })
        .await
        .unwrap()
        .unwrap();
    let target = admitted(&reply)[0];
    wait_status(&rt, target, Status::Running).await;
    rt.call(move |request| Input::Stop {
        request,
        actor: Party::Root,
        target,
    })
    .await
    .unwrap()
    .unwrap();
    tokio::time::sleep(Duration::from_millis(800)).await;
    assert_eq!(
        rt.snapshot(target).await.unwrap().unwrap().status,
        Status::Draining,
        "no fake success, no fake end"
    );
    tokio::time::timeout(Duration::from_secs(20), rt.shutdown())
        .await
        .unwrap()
        .unwrap();
    let report = join.await.unwrap();
    assert!(report.workers_killed >= 1);
    let mut last = None;
    while let Ok(event) = events.try_recv() {
        if let RuntimeEvent::Registry(e) = event {
            last = Some(e.child);
        }
    }
    let last = last.unwrap();
    assert_eq!(last.status, Status::Cancelled);
    assert!(last.disposed);
    let _ = std::fs::remove_dir_all(&dir);
}

#[tokio::test]
async fn an_unsupported_pi_version_fails_closed_naming_both_versions() {
    let dir = temp_dir("old-pi");
    let path = dir.join("pi-old");
    std::fs::write(&path, "#!/bin/sh\necho 1.4.9\n").unwrap();
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
    let pi = PiCommand {
        program: path.into_os_string(),
        leading: Vec::new(),
        env: Vec::new(),
    };
    let error = PiBackend::check_version(&pi).await.unwrap_err();
    assert!(
        error.contains("1.4.9") && error.contains("1.5.2"),
        "{error}"
    );
    let (rt, join) = fake_runtime(&dir, pi, Duration::from_secs(1));
    let fg = rt
        .delegate(
            Party::Root,
            vec![TaskSpec::new(
                "anything",
                Role::Scout,
                dir.display().to_string(),
            )],
        )
        .await
        .unwrap()
        .unwrap();
    let outcome = tokio::time::timeout(OUTCOME_TIMEOUT, fg.outcome)
        .await
        .unwrap()
        .unwrap();
    let s = &outcome.outcomes[0];
    assert_eq!(s.status, Status::Failed);
    assert!(
        s.error.as_deref().unwrap().contains("1.4.9"),
        "{:?}",
        s.error
    );
    assert!(s.artifacts.is_none(), "setup failures publish nothing");
    rt.shutdown().await.unwrap();
    join.await.unwrap();
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn sigterm_to_slate_run_with_16_running_and_32_queued_leaves_no_worker_and_every_entry_terminal() {
    let Some(located) = pi_env::pi_or_skip("sigterm_slate_run") else {
        return;
    };
    let fake = FakeLlm::start().unwrap();
    let sandbox = PiSandbox::new("sigterm-run", &fake.base_url()).unwrap();
    std::fs::write(
        sandbox.agent_dir.join("delegation.json"),
        r#"{"scheduling": {"batch": 64}}"#,
    )
    .unwrap();
    let tasks: Vec<serde_json::Value> = (0..48)
        .map(|i| serde_json::json!({"assignment": format!("SCENARIO:SLOW talk {i}"), "profile": "scout"}))
        .collect();
    let request = sandbox.root().join("many.json");
    std::fs::write(&request, serde_json::json!({ "tasks": tasks }).to_string()).unwrap();
    let template = sandbox.command(&located, &[] as &[&str]);
    let mut slate = std::process::Command::new(env!("CARGO_BIN_EXE_slate"));
    slate
        .args(["run", request.to_str().unwrap()])
        .current_dir(&sandbox.work);
    for (k, v) in template.get_envs() {
        match v {
            Some(v) => slate.env(k, v),
            None => slate.env_remove(k),
        };
    }
    slate
        .env("SLATE_PI", located.argv.join(" "))
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped());
    let mut child = slate.spawn().unwrap();
    // Wait for 16 running workers (their model requests reach the fake server).
    assert!(
        fake.wait_for_requests(16, Duration::from_secs(120)),
        "only {} requests",
        fake.request_count()
    );
    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(i32::try_from(child.id()).unwrap()),
        nix::sys::signal::Signal::SIGTERM,
    )
    .unwrap();
    let deadline = std::time::Instant::now() + Duration::from_secs(90);
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "slate did not exit after SIGTERM"
        );
        std::thread::sleep(Duration::from_millis(100));
    };
    assert_eq!(status.code(), Some(1), "an interrupted run exits 1");
    assert!(
        sandbox.leftover_processes().is_empty(),
        "worker processes left: {:?}",
        sandbox.leftover_processes()
    );
    let sessions = sandbox.agent_dir.join("sessions");
    let log = std::fs::read_dir(&sessions)
        .unwrap()
        .flat_map(|d| std::fs::read_dir(d.unwrap().path().join("delegation")).unwrap())
        .map(|d| d.unwrap().path().join("events.jsonl"))
        .next()
        .unwrap();
    let history = read_history(&log).unwrap();
    let mut entries = 0;
    // Children that reached setup (each is logged in setup more than once: admitted to it,
    // then its process launched).
    let mut started = std::collections::HashSet::new();
    for line in std::fs::read_to_string(&log).unwrap().lines() {
        let v: serde_json::Value = serde_json::from_str(line).unwrap();
        if v["child"]["status"] == "setup" {
            started.insert(v["child"]["id"].as_str().unwrap_or_default().to_owned());
        }
    }
    let started = started.len();
    for s in &history.snapshots {
        entries += 1;
        assert!(s.disposed, "{} not disposed", s.child_ref());
        assert_eq!(s.status, Status::Cancelled, "{}", s.child_ref());
    }
    assert_eq!(entries, 48);
    assert_eq!(
        started, 16,
        "only 16 ever started; 32 stayed queued until cancelled"
    );
}

/// A logical task whose preferred route (`fake-b/fake-down`) serves the first request (a bash
/// tool call) and then answers 500 once the tool result is in the history. pi retries it
/// twice, reports exhaustion, and Slate switches the same worker to `fake/fake-model` with
/// `set_model`, then continues with one short prompt: the tool is not run again and the final
/// request carries the completed call and its result exactly once.
#[tokio::test]
async fn logical_recovery_switches_the_same_worker_to_the_next_route_without_repeating_the_tool() {
    use serde_json::Value;
    use slate::policy::logical::{LogicalTask, resolve_logical};
    use slate::worker::pi::recovery::CONTINUATION;

    let Some(env) = Env::real("logical_recovery") else {
        return;
    };
    add_down_provider(&env.sandbox.agent_dir);
    let routing = fallback_routing();
    let logical = |index| LogicalTask {
        path: "$",
        name: "fallback-test",
        reason: Some("cheap model for a one-command task"),
        has_models: false,
        parent_restricted: false,
        index,
    };
    let resolved = routing
        .with_context(1, |ctx| resolve_logical(&logical(0), ctx.as_ref()))
        .unwrap();
    let mut task = env.task("SCENARIO:BASH run the tool", Role::Implementation);
    task.model = Some(resolved.selection);
    task.logical = Some(resolved.action);

    let s = run_one(&env, task).await;
    assert_eq!(s.status, Status::Settled, "{:?}", s.error);
    assert_eq!(s.requested_model.as_deref(), Some("fake-b/fake-down"));
    assert_eq!(s.requested_effort.as_deref(), Some("off"));
    assert_eq!(s.model.as_deref(), Some("fake/fake-model"));
    assert_eq!(s.effort.as_deref(), Some("off"));
    let action = s.logical.clone().unwrap();
    assert_eq!(
        (action.model.as_str(), action.route_model.as_str()),
        ("fallback-test", "fallback-test")
    );
    assert_eq!(
        (action.route_provider.as_str(), action.switches),
        ("fake", 1)
    );
    assert_eq!(s.tool_calls, 1, "the completed bash call ran once");
    let snippet: String = CONTINUATION.chars().take(60).collect();
    assert_eq!(
        s.result.as_deref(),
        Some(format!("ACK: {snippet}").as_str())
    );

    // The HTTP log: the tool call on the preferred route, its 500 and pi's two retries, then
    // one request on the next route.
    let log = env.fake.requests();
    let served: Vec<&str> = log
        .iter()
        .map(|r| r.body["model"].as_str().unwrap_or_default())
        .collect();
    assert_eq!(
        served,
        [
            "fake-down",
            "fake-down",
            "fake-down",
            "fake-down",
            "fake-model"
        ],
        "{}",
        env.fake.requests_jsonl()
    );
    let last = log.last().unwrap();
    assert_eq!(last.last_user_text, CONTINUATION);
    let messages = last.messages();
    let tool_calls: usize = messages
        .iter()
        .filter_map(|m| m.get("tool_calls").and_then(Value::as_array))
        .map(Vec::len)
        .sum();
    let tool_results = messages.iter().filter(|m| m["role"] == "tool").count();
    assert_eq!((tool_calls, tool_results), (1, 1), "{messages:#?}");
    assert_eq!(s.telemetry.requests, Some(5));

    // Only the success publishes: the next action on this model starts on the provider that
    // served it.
    assert!(routing.observe(&s));
    assert_eq!(
        routing
            .remembered()
            .get("fallback-test")
            .map(String::as_str),
        Some("fake")
    );
    let next = routing
        .with_context(1, |ctx| resolve_logical(&logical(0), ctx.as_ref()))
        .unwrap();
    assert_eq!(next.selection.provider, "fake");
    assert_eq!(next.action.admission, 2, "admission order");
    assert!(env.leftovers().is_empty(), "no process left");
}

/// A second provider, `fake-b`, on the same fake server, whose only model is `fake-down`
/// (the fake answers 500 for it once a tool result is in the history).
fn add_down_provider(agent_dir: &Path) {
    use serde_json::{Value, json};
    let models_path = agent_dir.join("models.json");
    let mut models: Value =
        serde_json::from_str(&std::fs::read_to_string(&models_path).unwrap()).unwrap();
    let mut down = models["providers"]["fake"].clone();
    let mut model = down["models"][0].clone();
    model["id"] = json!("fake-down");
    model["name"] = json!("Fake Down");
    down["name"] = json!("Fake B (fails after a tool)");
    down["models"] = json!([model]);
    models["providers"]["fake-b"] = down;
    std::fs::write(&models_path, serde_json::to_vec_pretty(&models).unwrap()).unwrap();
}

/// A session whose routing policy has one logical model, `fallback-test`: preferred route
/// `fake-b/fake-down`, then `fake/fake-model`, both at `off`.
fn fallback_routing() -> std::sync::Arc<slate::control::session_routing::SessionRouting> {
    use serde_json::json;
    use slate::policy::routing::{ProjectFile, SlateFile, resolve};
    let file = json!({"router": {"models": {"include": [], "add": [{
        "model": "fallback-test",
        "capabilityRating": 50,
        "effort": "off",
        "costRating": 10,
        "preferredProvider": "fake-b",
        "providers": {"fake-b": "fake-down", "fake": "fake-model"},
        "guidelines": [],
        "cautions": []
    }]}}})
    .to_string();
    let report = resolve(
        &SlateFile {
            label: "test slate.json",
            bytes: Some(file.as_bytes()),
        },
        &ProjectFile::Absent,
    );
    assert!(!report.blocked, "{:?}", report.errors);
    slate::control::session_routing::SessionRouting::new(Some(report))
}

/// A failure that is not eligible for recovery (pi's 400, not retried, classified as
/// unknown) stops visibly on the first route: no `set_model`, no continuation, nothing
/// published.
#[tokio::test]
async fn logical_recovery_stops_visibly_on_an_ineligible_failure() {
    use slate::policy::logical::{LogicalTask, resolve_logical};

    let Some(env) = Env::real("logical_stop") else {
        return;
    };
    add_down_provider(&env.sandbox.agent_dir);
    let routing = fallback_routing();
    let resolved = routing
        .with_context(1, |ctx| {
            resolve_logical(
                &LogicalTask {
                    path: "$",
                    name: "fallback-test",
                    reason: Some("bad request on purpose"),
                    has_models: false,
                    parent_restricted: false,
                    index: 0,
                },
                ctx.as_ref(),
            )
        })
        .unwrap();
    let mut task = env.task("SCENARIO:ERR400 refuse", Role::Scout);
    task.model = Some(resolved.selection);
    task.logical = Some(resolved.action);
    let s = run_one(&env, task).await;
    assert_eq!(s.status, Status::Failed);
    let error = s.error.clone().unwrap();
    assert!(error.starts_with("400"), "{error}");
    assert!(error.contains("(recovery stopped:"), "{error}");
    assert_eq!(s.model.as_deref(), Some("fake-b/fake-down"));
    assert_eq!(s.logical.as_ref().unwrap().switches, 0);
    let served: Vec<String> = env
        .fake
        .requests()
        .iter()
        .map(|r| r.body["model"].as_str().unwrap_or_default().to_owned())
        .collect();
    assert_eq!(served, ["fake-down"]);
    assert!(!routing.observe(&s), "a failure publishes nothing");
    assert!(routing.remembered().is_empty());
    assert!(env.leftovers().is_empty(), "no process left");
}

/// The real control service and server for `rt` on a short temp socket (Unix socket paths are
/// limited to about 107 bytes), with the bundled profiles for `work`.
/// Issue 11, "nothing escapes through the shell": a real pi worker with `spawns: 0` runs
/// `slate delegate` in its bash tool. The CLI finds the coordinator through the worker's
/// `SLATE_SOCKET`, presents no capability, and is recognised by its process ancestry as that
/// worker's generation: the nested call is refused by the spawn budget, naming the child,
/// and nothing is admitted.
#[tokio::test]
async fn slate_delegate_typed_into_a_real_workers_bash_acts_as_that_child() {
    let Some(env) = Env::real("shell_delegate_as_child") else {
        return;
    };
    let work = std::fs::canonicalize(&env.sandbox.work).unwrap();
    let root_id = uuid::Uuid::new_v4();
    let config = RuntimeConfig {
        root_id,
        policy: SchedulingPolicy::default(),
        id_seed: 29,
        delegation_dir: env.delegation.clone(),
        event_log: true,
        kill_grace: Duration::from_secs(10),
    };
    let (rt, join) = spawn(config, Arc::new(PiBackend::new(env.pi.clone()))).unwrap();
    let (socket, server, stop) = serve_pi(&env, &rt, root_id, &work);
    let operator = slate::control::Client::connect_path(&socket, Duration::from_secs(10))
        .await
        .unwrap();

    let command = format!(
        "{} delegate --profile scout Look-deeper > delegate.out 2>&1; echo exit=$? >> delegate.out",
        env!("CARGO_BIN_EXE_slate")
    );
    let request = serde_json::json!({
        "request": {
            "assignment": format!("SCENARIO:SHELL run one command\nCOMMAND: {command}"),
            "profile": "general",
            "limits": {"spawns": 0},
        },
    });
    let reply = tokio::time::timeout(OUTCOME_TIMEOUT, operator.call("delegate", request))
        .await
        .unwrap()
        .unwrap();
    let child = &reply["outcome"]["outcomes"][0];
    assert_eq!(child["status"], "settled", "{reply}");
    assert_eq!(child["toolCalls"], 1, "{reply}");
    let me = format!("{}@1", child["id"].as_str().unwrap());

    let out = std::fs::read_to_string(work.join("delegate.out")).unwrap();
    assert!(
        out.contains(&format!(
            "refused [spawn-budget-exhausted]: spawns: {me} has admitted 0 of 0 direct children"
        )) && out.trim_end().ends_with("exit=1"),
        "the worker's bash acted as {me}: {out}"
    );
    let status = operator
        .call("status", serde_json::json!({}))
        .await
        .unwrap();
    assert_eq!(
        status["children"].as_array().unwrap().len(),
        1,
        "nothing was admitted from the worker's shell: {status}"
    );

    drop(operator);
    let _ = stop.send(());
    server.await.unwrap();
    rt.shutdown().await.unwrap();
    drop(rt);
    join.await.unwrap();
    if let Some(run) = socket.parent() {
        let _ = std::fs::remove_dir_all(run);
    }
    assert!(env.leftovers().is_empty(), "no process left");
}

//! The pi RPC protocol layer (`slate::worker::pi::{protocol, mapper}`) against the real
//! pi 1.6 traces in `shared/pi/traces`: every line of every trace parses, and the canonical
//! scenarios map to exact worker-event sequences. Garbage never panics and becomes bounded
//! evidence.

use std::collections::HashMap;
use std::fs;
use std::path::PathBuf;

use proptest::prelude::*;
use serde_json::Value;
use slate::core::{ContextUsage, MessageId, Retry, Tokens, Usage, WorkerEvent};
use slate::worker::pi::mapper::{EVIDENCE_BYTES, Output, PiMapper, Sent, SessionStats};
use slate::worker::pi::protocol::{Command, Record, StopReason};
use uuid::Uuid;

const TRACES: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../shared/pi/traces");

// ---- trace replay --------------------------------------------------------------------------

fn trace_path(file: &str) -> PathBuf {
    PathBuf::from(TRACES).join(file)
}

/// Every `<name>.jsonl` (pi stdout byte for byte), sorted by name.
fn trace_names() -> Vec<String> {
    let mut names: Vec<String> = fs::read_dir(TRACES)
        .unwrap_or_else(|e| panic!("read {TRACES}: {e}"))
        .map(|e| {
            e.expect("dir entry")
                .file_name()
                .into_string()
                .expect("utf-8 name")
        })
        .filter_map(|f| {
            let stem = f.strip_suffix(".jsonl")?;
            (!stem.contains('.')).then(|| stem.to_owned())
        })
        .collect();
    names.sort();
    assert!(
        names.len() >= 30,
        "expected the pi 1.6 traces, found {names:?}"
    );
    names
}

/// The stdout lines of a trace (LF-split; a missing final LF is tolerated).
fn stdout_lines(name: &str) -> Vec<Vec<u8>> {
    let bytes = fs::read(trace_path(&format!("{name}.jsonl"))).expect("trace stdout");
    let mut lines: Vec<Vec<u8>> = bytes.split(|b| *b == b'\n').map(<[u8]>::to_vec).collect();
    if lines.last().is_some_and(Vec::is_empty) {
        lines.pop();
    }
    lines
}

fn msg(n: u128) -> MessageId {
    MessageId(Uuid::from_u128(n))
}

/// What Slate would have recorded for each command in `<name>.stdin.jsonl`: prompt, steer,
/// follow-up, abort, `get_state`, `get_session_stats`. A `prompt` with `streamingBehavior`
/// queues exactly like `steer` / `follow_up` (NOTES), so it is recorded as one. Other
/// commands are pi experiments Slate never sends; their responses arrive with unknown ids.
/// Message ids are `msg(1)`, `msg(2)`, … in stdin order; the map gives them by command id.
fn record_stdin(name: &str, mapper: &mut PiMapper) -> HashMap<String, MessageId> {
    let stdin = fs::read_to_string(trace_path(&format!("{name}.stdin.jsonl"))).unwrap_or_default();
    let mut ids = HashMap::new();
    let mut next = 0;
    for line in stdin.lines() {
        let Ok(cmd) = serde_json::from_str::<Value>(line) else {
            continue; // rpc_commands sends one broken line on purpose
        };
        let Some(id) = cmd["id"].as_str() else {
            continue;
        };
        let text = cmd["message"].as_str().unwrap_or_default().to_owned();
        let mut message = || {
            next += 1;
            ids.insert(id.to_owned(), msg(next));
            msg(next)
        };
        let sent = match (cmd["type"].as_str(), cmd["streamingBehavior"].as_str()) {
            (Some("prompt"), None) => Sent::Prompt { text },
            (Some("steer"), _) | (Some("prompt"), Some("steer")) => Sent::Steer {
                message: message(),
                text,
            },
            (Some("follow_up"), _) | (Some("prompt"), Some("followUp")) => Sent::FollowUp {
                message: message(),
                text,
            },
            (Some("abort"), _) => Sent::Abort,
            (Some("get_state"), _) => Sent::GetState,
            (Some("get_session_stats"), _) => Sent::GetSessionStats,
            _ => continue,
        };
        mapper.sent(id, sent);
    }
    ids
}

/// Replay a trace: record its stdin, then map every stdout line. Streaming output
/// (`TextDelta`, `ToolOutput`) is left out; [`replay_all`] keeps it.
fn replay(name: &str) -> (Vec<Output>, HashMap<String, MessageId>) {
    let (mut out, ids) = replay_all(name);
    out.retain(|o| !is_streaming(o));
    (out, ids)
}

fn replay_all(name: &str) -> (Vec<Output>, HashMap<String, MessageId>) {
    let mut mapper = PiMapper::new();
    let ids = record_stdin(name, &mut mapper);
    if name.starts_with("json_") {
        // JSON mode takes its prompt from the command line and answers nothing; a Slate
        // worker's run is open once pi answered its prompt, so the replay stands in for that.
        mapper.sent(
            "json",
            Sent::Prompt {
                text: String::new(),
            },
        );
        mapper.line(br#"{"id":"json","type":"response","command":"prompt","success":true}"#);
    }
    let mut out = Vec::new();
    for line in stdout_lines(name) {
        out.extend(mapper.line(&line));
    }
    (out, ids)
}

fn is_streaming(o: &Output) -> bool {
    matches!(
        o,
        Output::Event(WorkerEvent::TextDelta(_) | WorkerEvent::ToolOutput { .. })
    )
}

// ---- expected-output helpers ------------------------------------------------------------

fn ev(e: WorkerEvent) -> Output {
    Output::Event(e)
}

/// An assistant message starts: one model request, streaming from the start (not counted
/// here: pi workers are counted by their extension's guard).
fn request() -> Output {
    ev(WorkerEvent::AssistantStart)
}

fn usage(input: u64, output: u64, total: u64, cost: f64) -> Usage {
    Usage {
        tokens: Tokens {
            input,
            output,
            cache_read: 0,
            cache_write: 0,
            total,
        },
        cost: Some(cost),
    }
}

/// A number as the mapper reads it from pi's JSON. pi prints the shortest repr of its
/// double; `serde_json` without its `float_roundtrip` feature can land one ULP away
/// (`0.00015999999999999999` reads as `0.00016`), see `costs_are_read_within_one_ulp`.
fn c(json: &str) -> f64 {
    serde_json::from_str(json).expect("a JSON number")
}

fn zero_usage() -> Usage {
    usage(0, 0, 0, c("0.0"))
}

fn assistant(text: &str, usage: Usage) -> Output {
    ev(WorkerEvent::AssistantMessage {
        text: text.to_owned(),
        usage: Some(usage),
    })
}

fn activity(line: &str) -> Output {
    ev(WorkerEvent::Activity(line.to_owned()))
}

/// `AssistantMessage` plus the `Activity` of its first non-blank line.
fn said(text: &str, usage: Usage) -> [Output; 2] {
    [assistant(text, usage), activity(text.trim())]
}

fn tool(name: &str, summary: &str, is_error: bool) -> [Output; 3] {
    [
        ev(WorkerEvent::ToolRunning {
            name: name.to_owned(),
        }),
        activity(&format!("{name} {summary}")),
        ev(WorkerEvent::ToolEnd {
            name: name.to_owned(),
            is_error,
        }),
    ]
}

/// pi's `auto_retry_start` (the fixtures' template allows 2 retries).
fn retrying(attempt: u32, delay_ms: u64, rate_limited: bool) -> Output {
    Output::Event(WorkerEvent::Retry(Some(Retry {
        attempt,
        max_attempts: 2,
        delay_ms,
        rate_limited,
    })))
}

/// pi's `auto_retry_end`.
fn retry_over() -> Output {
    Output::Event(WorkerEvent::Retry(None))
}

fn settled(error: Option<&str>, aborted: bool) -> Output {
    Output::Settled {
        error: error.map(str::to_owned),
        aborted,
        retries_ended: true,
    }
}

fn seq(parts: &[&[Output]]) -> Vec<Output> {
    parts.iter().flat_map(|p| p.iter().cloned()).collect()
}

fn slow_text() -> String {
    let mut text = String::new();
    for i in 0..40 {
        text.push_str("word");
        text.push_str(&i.to_string());
        text.push(' ');
    }
    text
}

const HELLO: &str = "Hello from the fake LLM.";
const TOOL_INTRO: &str = "Let me run a tool. ";
const TOOL_DONE: &str = "The tool returned: hi-from-bash-tool.";

fn events_only(out: &[Output]) -> Vec<&WorkerEvent> {
    out.iter()
        .filter_map(|o| match o {
            Output::Event(e) => Some(e),
            _ => None,
        })
        .collect()
}

// ---- every line of every trace -----------------------------------------------------------

#[test]
fn every_line_of_every_trace_parses() {
    // Record types pi 1.6 emitted that Slate deliberately does not model.
    let unmodelled = [
        "session",
        "entry_appended",
        "compaction_start",
        "compaction_end",
        "thinking_level_changed",
        "session_info_changed",
        "bash_execution_update",
    ];
    let mut lines = 0;
    for name in trace_names() {
        for line in stdout_lines(&name) {
            lines += 1;
            let parsed = Record::parse(&line);
            if name == "print_text" {
                // `pi -p` prints plain text, not records.
                assert!(parsed.is_err(), "print_text parsed as a record");
                continue;
            }
            match parsed {
                Ok(Record::Other(kind)) => assert!(
                    unmodelled.contains(&kind.as_ref()),
                    "{name}: modelled type {kind:?} fell through to Other"
                ),
                Ok(_) => {}
                Err(e) => panic!("{name}: {e}: {}", String::from_utf8_lossy(&line)),
            }
        }
    }
    assert!(lines > 1_000, "only {lines} trace lines read");
}

#[test]
fn no_trace_line_maps_to_evidence() {
    for name in trace_names() {
        let (out, _) = replay(&name);
        let evidence: Vec<_> = out
            .iter()
            .filter(|o| matches!(o, Output::Evidence(_)))
            .collect();
        if name == "print_text" {
            assert_eq!(evidence.len(), 1, "print_text: {evidence:?}");
        } else {
            assert!(evidence.is_empty(), "{name}: {evidence:?}");
        }
    }
}

/// An assistant message starts for every model request pi made in the agent loop (the fake
/// LLM's request log; compaction summaries, which carry no `tools`, are not agent requests) —
/// including every retry, and not the empty message pi adds after an abort caught a tool.
#[test]
fn assistant_starts_equal_model_requests_in_every_trace() {
    for name in trace_names() {
        if name.starts_with("print_") {
            continue;
        }
        let (out, _) = replay(&name);
        let requests = events_only(&out)
            .into_iter()
            .filter(|e| **e == WorkerEvent::AssistantStart)
            .count();
        let log =
            fs::read_to_string(trace_path(&format!("{name}.requests.jsonl"))).expect("request log");
        let http = log
            .lines()
            .map(|l| serde_json::from_str::<Value>(l).expect("request log line"))
            .filter(|r| r["body"].get("tools").is_some())
            .count();
        assert_eq!(requests, http, "{name}");
    }
}

/// pi workers are counted only by their extension's `guard` (before forwarding, before a
/// tool runs): counting pi's RPC events as well would count every request and tool twice.
#[test]
fn no_trace_maps_to_a_counted_request_or_tool_start() {
    let mut tools = 0;
    for name in trace_names() {
        let (out, _) = replay_all(&name);
        let events = events_only(&out);
        let counted: Vec<&&WorkerEvent> = events
            .iter()
            .filter(|e| matches!(e, WorkerEvent::RequestStart | WorkerEvent::ToolStart { .. }))
            .collect();
        assert!(counted.is_empty(), "{name}: {counted:?}");
        tools += events
            .iter()
            .filter(|e| matches!(e, WorkerEvent::ToolRunning { .. }))
            .count();
    }
    assert!(
        tools > 0,
        "the traces run tools: they are reported as running"
    );
}

#[test]
fn settles_once_per_agent_settled_and_never_on_agent_end() {
    for name in trace_names() {
        let settled_records = stdout_lines(&name)
            .iter()
            .filter(|l| matches!(Record::parse(l), Ok(Record::AgentSettled { .. })))
            .count();
        let (out, _) = replay(&name);
        let settles = out
            .iter()
            .filter(|o| matches!(o, Output::Settled { .. }))
            .count();
        assert_eq!(settles, settled_records, "{name}");
    }
}

// ---- canonical scenarios -----------------------------------------------------------------

#[test]
fn text_prompt() {
    let (out, _) = replay("rpc_text");
    let stats = SessionStats {
        context: Some(ContextUsage {
            tokens: Some(125),
            context_window: 128_000,
            percent: Some(0.097_656_25),
        }),
        tokens: Some(usage(120, 5, 125, c("0.0")).tokens),
        cost: Some(0.00013),
        user_messages: Some(1),
        assistant_messages: Some(1),
        tool_calls: Some(0),
        tool_results: Some(0),
    };
    // get_state s0 has no sessionFile (--no-session); get_messages / get_last_assistant_text
    // are not Slate's commands and succeeded, so they map to nothing.
    assert_eq!(
        out,
        seq(&[
            &[request()],
            &said(HELLO, usage(120, 5, 125, c("0.00013"))),
            &[settled(None, false), Output::SessionStats(stats)],
        ])
    );
}

#[test]
fn json_mode_text_maps_like_rpc() {
    let (out, _) = replay("json_text");
    assert_eq!(
        out,
        seq(&[
            &[request()],
            &said(HELLO, usage(120, 5, 125, c("0.00013"))),
            &[settled(None, false)],
        ])
    );
}

#[test]
fn tool_call() {
    let (out, _) = replay("rpc_bash_tool");
    assert_eq!(
        out,
        seq(&[
            &[request()],
            &said(TOOL_INTRO, usage(120, 20, 140, c("0.00015999999999999999"))),
            &tool("bash", "echo hi-from-bash-tool", false),
            &[request()],
            &said(TOOL_DONE, usage(140, 4, 144, c("0.000148"))),
            &[settled(None, false)],
        ])
    );
}

#[test]
fn read_tool_activity_names_the_path() {
    let (out, _) = replay("rpc_read_tool");
    assert!(out.contains(&activity("read hello.txt")), "{out:?}");
}

#[test]
fn steer_during_stream_is_queued_then_delivered_at_the_next_turn() {
    let (out, ids) = replay("rpc_steer_stream");
    let st1 = ids["st1"];
    assert_eq!(
        out,
        seq(&[
            &[
                request(),
                // p2: a prompt without streamingBehavior while streaming is refused.
                Output::PromptRefused {
                    command: "prompt".to_owned(),
                    error: "Agent is already processing. Specify streamingBehavior ('steer' or \
                            'followUp') to queue the message."
                        .to_owned(),
                },
                ev(WorkerEvent::MessageQueued { message: st1 }),
            ],
            // The stream is not interrupted: it finishes, then the steer is delivered.
            &said(
                &slow_text(),
                usage(120, 40, 160, c("0.00019999999999999998"))
            ),
            &[
                ev(WorkerEvent::MessageDelivered { message: st1 }),
                request()
            ],
            &said(HELLO, usage(140, 5, 145, c("0.00015"))),
            &[settled(None, false)],
        ])
    );
}

#[test]
fn steers_during_a_tool_are_delivered_one_per_turn_after_it() {
    let (out, ids) = replay("rpc_steer_during_tool");
    let (st1, p2) = (ids["st1"], ids["p2"]);
    let [tool_start, tool_activity, tool_end] = tool("bash", "sleep 3; echo slept", false);
    assert_eq!(
        out,
        seq(&[
            &[request()],
            &said(TOOL_INTRO, usage(120, 20, 140, c("0.00015999999999999999"))),
            &[
                tool_start,
                tool_activity,
                ev(WorkerEvent::MessageQueued { message: st1 }),
                ev(WorkerEvent::MessageQueued { message: p2 }),
                tool_end,
                ev(WorkerEvent::MessageDelivered { message: st1 }),
                request(),
            ],
            &said(HELLO, usage(150, 5, 155, c("0.00015999999999999999"))),
            &[ev(WorkerEvent::MessageDelivered { message: p2 }), request()],
            &said(HELLO, usage(170, 5, 175, c("0.00017999999999999998"))),
            &[settled(None, false)],
        ])
    );
}

#[test]
fn follow_ups_are_delivered_after_the_run_inside_the_same_settle() {
    let (out, ids) = replay("rpc_follow_up");
    let (f1, f2) = (ids["f1"], ids["f2"]);
    assert_eq!(
        out,
        seq(&[
            &[
                request(),
                ev(WorkerEvent::MessageQueued { message: f1 }),
                ev(WorkerEvent::MessageQueued { message: f2 }),
            ],
            &said(
                &slow_text(),
                usage(120, 40, 160, c("0.00019999999999999998"))
            ),
            &[ev(WorkerEvent::MessageDelivered { message: f1 }), request()],
            &said(HELLO, usage(140, 5, 145, c("0.00015"))),
            &[ev(WorkerEvent::MessageDelivered { message: f2 }), request()],
            &said(TOOL_INTRO, usage(160, 20, 180, c("0.00019999999999999998"))),
            &tool("bash", "echo hi-from-bash-tool", false),
            &[request()],
            &said(TOOL_DONE, usage(180, 4, 184, c("0.000188"))),
            &[settled(None, false)],
        ])
    );
}

/// Steer and follow-up queued while idle are delivered after the prompt's own echo, which is
/// not mistaken for them; idle abort is still acknowledged; failed responses of other
/// commands (and the one without an id) are reported.
#[test]
fn idle_queueing_and_failed_responses() {
    let (out, ids) = replay("rpc_commands");
    let (c22, c23) = (ids["c22"], ids["c23"]);
    let failed = |command: &str, error: &str| Output::ResponseError {
        command: command.to_owned(),
        error: error.to_owned(),
    };
    assert_eq!(
        out,
        seq(&[
            &[
                failed("set_model", "Model not found: nope/missing"),
                failed("no_such_command", "Unknown command: no_such_command"),
                Output::AbortAcknowledged,
                ev(WorkerEvent::MessageQueued { message: c22 }),
                ev(WorkerEvent::MessageQueued { message: c23 }),
                failed(
                    "parse",
                    "Failed to parse command: Expected double-quoted property name in JSON at \
                     position 13 (line 1 column 14)",
                ),
                ev(WorkerEvent::MessageDelivered { message: c22 }),
                request(),
            ],
            &said(
                "ACK: steer while idle",
                usage(130, 2, 132, c("0.00013399999999999998"))
            ),
            &[
                ev(WorkerEvent::MessageDelivered { message: c23 }),
                request()
            ],
            &said(
                "ACK: follow-up while idle",
                usage(150, 2, 152, c("0.00015399999999999998")),
            ),
            &[settled(None, false)],
        ])
    );
}

#[test]
fn abort_during_stream_settles_aborted_with_an_empty_result_then_acknowledges() {
    let (out, _) = replay("rpc_abort_stream");
    assert_eq!(
        out,
        seq(&[
            // pi keeps the partial text ("word0 … word4 ") in the aborted message; the
            // contract publishes an empty result for an aborted last message.
            &[request(), assistant("", zero_usage())],
            // agent_settled comes before the abort response.
            &[settled(None, true), Output::AbortAcknowledged],
            // The session keeps working.
            &[request()],
            &said(HELLO, usage(130, 5, 135, c("0.00014"))),
            &[settled(None, false)],
        ])
    );
}

#[test]
fn graceful_stop_is_abort_then_settle_then_acknowledgement() {
    let (out, _) = replay("rpc_graceful_stop");
    assert_eq!(
        out,
        vec![
            request(),
            assistant("", zero_usage()),
            settled(None, true),
            Output::AbortAcknowledged,
        ]
    );
}

#[test]
fn abort_during_tool_fails_the_tool_and_counts_no_extra_request() {
    let (out, _) = replay("rpc_abort_tool");
    assert_eq!(
        out,
        seq(&[
            &[request()],
            &said(TOOL_INTRO, usage(120, 20, 140, c("0.00015999999999999999"))),
            &tool("bash", "sleep 3; echo slept", true),
            // pi's extra turn: an assistant message that starts already aborted and made no
            // request (one HTTP request in the whole trace).
            &[assistant("", zero_usage())],
            &[settled(None, true), Output::AbortAcknowledged],
        ])
    );
}

#[test]
fn retry_recovered_settles_without_error() {
    let (out, _) = replay("rpc_retry_recover");
    assert_eq!(
        out,
        seq(&[
            &[
                request(),
                assistant("", zero_usage()),
                retrying(1, 300, false),
            ],
            // The retry is a new request without a new user message.
            &[request()],
            &said(
                "Recovered after 1 failures.",
                usage(120, 4, 124, c("0.000128")),
            ),
            &[retry_over(), settled(None, false)],
        ])
    );
}

fn failed_three_times(name: &str, text: &str, error: &str, rate_limited: bool) {
    let (out, _) = replay(name);
    let attempt: Vec<Output> = if text.is_empty() {
        vec![request(), assistant("", zero_usage())]
    } else {
        seq(&[&[request()], &said(text, zero_usage())])
    };
    assert_eq!(
        out,
        seq(&[
            &attempt,
            &[retrying(1, 300, rate_limited)],
            &attempt,
            &[retrying(2, 600, rate_limited)],
            &attempt,
            &[retry_over(), settled(Some(error), false)]
        ]),
        "{name}"
    );
}

#[test]
fn retries_exhausted_fail_with_the_last_error() {
    failed_three_times(
        "rpc_retry_exhausted",
        "",
        r#"500: {"message":"fake internal server error","type":"server_error"}"#,
        false,
    );
}

#[test]
fn rate_limited_retries_exhausted_fail_with_the_429() {
    failed_three_times(
        "rpc_429",
        "",
        r#"429: {"message":"fake rate limit exceeded","type":"rate_limit_error","code":"rate_limit_exceeded"}"#,
        true,
    );
}

#[test]
fn dropped_streams_keep_their_partial_text_and_fail() {
    failed_three_times(
        "rpc_drop",
        "This stream will break",
        "Stream ended without finish_reason",
        false,
    );
}

#[test]
fn json_mode_retries_exhausted_fail_too() {
    failed_three_times(
        "json_err500_exhausted",
        "",
        r#"500: {"message":"fake internal server error","type":"server_error"}"#,
        false,
    );
}

#[test]
fn bad_request_is_not_retried_and_fails() {
    let (out, _) = replay("rpc_err400");
    assert_eq!(
        out,
        vec![
            request(),
            assistant("", zero_usage()),
            settled(
                Some(
                    r#"400: {"message":"fake bad request: unsupported parameter","type":"invalid_request_error"}"#
                ),
                false
            ),
        ]
    );
}

#[test]
fn cancelled_retry_fails_with_the_provider_error_not_aborted() {
    let (out, _) = replay("rpc_abort_retry");
    assert_eq!(
        out,
        vec![
            request(),
            assistant("", zero_usage()),
            retrying(1, 300, false),
            retry_over(),
            settled(
                Some(r#"500: {"message":"fake internal server error","type":"server_error"}"#),
                false
            ),
        ]
    );
}

#[test]
fn length_stop_is_not_an_error() {
    let (out, _) = replay("rpc_length");
    assert_eq!(
        out,
        seq(&[
            &[request()],
            &said(
                "Truncated answer because of ",
                usage(120, 4, 124, c("0.000128"))
            ),
            &[settled(None, false)],
        ])
    );
}

/// NOTES "Usage and cost": prompt 1500 (1000 cached), completion 300 (120 reasoning) →
/// input 500, cacheRead 1000, output 300, totalTokens 1800, cost 0.0012.
#[test]
fn usage_mapping() {
    let (out, _) = replay("rpc_usage");
    let first = out
        .iter()
        .find(|o| matches!(o, Output::Event(WorkerEvent::AssistantMessage { .. })));
    assert_eq!(
        first,
        Some(&assistant(
            "Usage numbers attached.",
            Usage {
                tokens: Tokens {
                    input: 500,
                    output: 300,
                    cache_read: 1000,
                    cache_write: 0,
                    total: 1800,
                },
                cost: Some(0.0012),
            }
        ))
    );
    let stats = out.iter().find_map(|o| match o {
        Output::SessionStats(s) => Some(*s),
        _ => None,
    });
    assert_eq!(
        stats,
        Some(SessionStats {
            context: Some(ContextUsage {
                tokens: Some(164),
                context_window: 128_000,
                percent: Some(c("0.12812500000000002")),
            }),
            tokens: Some(Tokens {
                input: 800,
                output: 324,
                cache_read: 1000,
                cache_write: 0,
                total: 2124,
            }),
            cost: Some(0.001_548),
            user_messages: Some(2),
            assistant_messages: Some(3),
            tool_calls: Some(1),
            tool_results: Some(1),
        })
    );
}

#[test]
fn context_usage_after_compaction_is_unknown_not_zero() {
    let (out, _) = replay("rpc_compact");
    let stats = out
        .iter()
        .find_map(|o| match o {
            Output::SessionStats(s) => Some(*s),
            _ => None,
        })
        .expect("session stats");
    assert_eq!(
        stats.context,
        Some(ContextUsage {
            tokens: None,
            context_window: 128_000,
            percent: None,
        })
    );
}

#[test]
fn session_file_comes_from_get_state() {
    let (out, _) = replay("rpc_new_session");
    let files: Vec<&str> = out
        .iter()
        .filter_map(|o| match o {
            Output::SessionFile(f) => Some(f.as_str()),
            _ => None,
        })
        .collect();
    let dir = "/home/user/pi-live/runs/rpc_new_session/sessions/";
    assert_eq!(
        files,
        [
            format!("{dir}2026-11-30T02-50-52-388Z_01a22a5c-c464-7694-9393-3d527d3a82c3.jsonl"),
            format!("{dir}2026-11-30T02-50-52-568Z_01a22a5c-c517-7694-9393-3d540cade3dc.jsonl"),
        ]
    );
}

#[test]
fn eof_or_sigterm_mid_run_never_settles() {
    for name in ["rpc_eof_midrun", "rpc_sigterm"] {
        let (out, _) = replay(name);
        assert_eq!(out, vec![request()], "{name}");
    }
}

#[test]
fn thinking_blocks_are_not_text() {
    let (out, _) = replay("rpc_thinking");
    assert!(out.contains(&assistant(
        "Thought about it.",
        usage(120, 6, 126, c("0.00045000000000000004"))
    )));
}

#[test]
fn costs_are_read_within_one_ulp() {
    for text in [
        "0.00015999999999999999",
        "0.00019999999999999998",
        "0.00045000000000000004",
    ] {
        let exact: f64 = text.parse().expect("std parses exactly");
        let read = c(text);
        let ulp = f64::from_bits(exact.to_bits() + 1) - exact;
        assert!((read - exact).abs() <= ulp, "{text}: {read} vs {exact}");
    }
}

// ---- responses by id ----------------------------------------------------------------------

#[test]
fn responses_are_matched_by_id_not_by_order() {
    let mut mapper = PiMapper::new();
    let (a, b) = (msg(1), msg(2));
    mapper.sent(
        "s1",
        Sent::Steer {
            message: a,
            text: "one".into(),
        },
    );
    mapper.sent(
        "s2",
        Sent::FollowUp {
            message: b,
            text: "two".into(),
        },
    );
    mapper.sent("x", Sent::Abort);
    // Answers arrive in reverse order.
    let out: Vec<Output> = [
        r#"{"id":"x","type":"response","command":"abort","success":true}"#,
        r#"{"id":"s2","type":"response","command":"follow_up","success":false,"error":"nope"}"#,
        r#"{"id":"s1","type":"response","command":"steer","success":true,"data":{"disposition":"handled"}}"#,
        // Repeated and unknown ids: nothing left to match.
        r#"{"id":"x","type":"response","command":"abort","success":true}"#,
        r#"{"id":"zz","type":"response","command":"steer","success":true,"data":{"disposition":"queued"}}"#,
    ]
    .iter()
    .flat_map(|l| mapper.line(l.as_bytes()))
    .collect();
    assert_eq!(
        out,
        vec![
            Output::AbortAcknowledged,
            ev(WorkerEvent::MessageFailed {
                message: b,
                error: "nope".into()
            }),
            ev(WorkerEvent::MessageHandled { message: a }),
        ]
    );
    // Neither a failed nor a handled message can be delivered later.
    assert_eq!(mapper.undelivered().count(), 0);
    let echo = r#"{"type":"message_start","message":{"role":"user","content":[{"type":"text","text":"one"}]}}"#;
    assert!(mapper.line(echo.as_bytes()).is_empty());
}

#[test]
fn equal_texts_are_delivered_oldest_first_and_prompts_consume_their_own_echo() {
    let mut mapper = PiMapper::new();
    mapper.sent(
        "p",
        Sent::Prompt {
            text: "same".into(),
        },
    );
    mapper.sent(
        "s",
        Sent::Steer {
            message: msg(1),
            text: "same".into(),
        },
    );
    mapper.sent(
        "f",
        Sent::FollowUp {
            message: msg(2),
            text: "same".into(),
        },
    );
    let echo = br#"{"type":"message_start","message":{"role":"user","content":"same"}}"#;
    assert!(mapper.line(echo).is_empty(), "the prompt's own echo");
    assert_eq!(
        mapper.line(echo),
        vec![ev(WorkerEvent::MessageDelivered { message: msg(1) })]
    );
    assert_eq!(mapper.undelivered().collect::<Vec<_>>(), vec![msg(2)]);
    assert_eq!(
        mapper.line(echo),
        vec![ev(WorkerEvent::MessageDelivered { message: msg(2) })]
    );
    assert!(mapper.line(echo).is_empty());
}

#[test]
fn a_refused_prompt_never_consumes_an_echo() {
    let mut mapper = PiMapper::new();
    mapper.sent("p", Sent::Prompt { text: "go".into() });
    mapper.sent(
        "s",
        Sent::Steer {
            message: msg(7),
            text: "go".into(),
        },
    );
    let refused =
        br#"{"id":"p","type":"response","command":"prompt","success":false,"error":"busy"}"#;
    assert_eq!(
        mapper.line(refused),
        vec![Output::PromptRefused {
            command: "prompt".into(),
            error: "busy".into()
        }]
    );
    let echo = br#"{"type":"message_start","message":{"role":"user","content":[{"type":"text","text":"g"},{"type":"text","text":"o"}]}}"#;
    assert_eq!(
        mapper.line(echo),
        vec![ev(WorkerEvent::MessageDelivered { message: msg(7) })]
    );
}

#[test]
fn a_handled_prompt_is_reported_because_no_run_will_settle() {
    let mut mapper = PiMapper::new();
    mapper.sent(
        "p",
        Sent::Prompt {
            text: "/cmd".into(),
        },
    );
    let out = mapper.line(
        br#"{"id":"p","type":"response","command":"prompt","success":true,"data":{"disposition":"handled"}}"#,
    );
    assert!(
        matches!(&out[..], [Output::PromptRefused { command, .. }] if command == "prompt"),
        "{out:?}"
    );
}

/// Issue 14, item 2: a record before pi's answer to Slate's prompt is evidence, never state.
/// A wrapper that printed `agent_settled` before starting pi made a task `settled` with no
/// request and an empty result; now only the run pi started by answering the prompt settles,
/// once, and a failed response Slate never asked for refuses nothing.
#[test]
fn a_stdout_line_before_the_prompt_response_cannot_fake_a_success_2() {
    let mut mapper = PiMapper::new();
    mapper.sent("state-1", Sent::GetState);
    mapper.sent("prompt-2", Sent::Prompt { text: "go".into() });
    let fake = br#"{"type":"agent_settled","aborted":false}"#;
    let out = mapper.line(fake);
    assert!(
        matches!(&out[..], [Output::Evidence(e)] if e.contains("before pi answered")),
        "{out:?}"
    );
    let stray = br#"{"type":"response","command":"prompt","success":false,"error":"no"}"#;
    assert!(
        matches!(&mapper.line(stray)[..], [Output::ResponseError { .. }]),
        "an unmatched failure is not the prompt's refusal"
    );
    // pi's own answers, in order.
    let state =
        br#"{"id":"state-1","type":"response","command":"get_state","success":true,"data":{}}"#;
    assert_eq!(mapper.line(state), vec![]);
    assert!(
        matches!(&mapper.line(fake)[..], [Output::Evidence(_)]),
        "the prompt is still unanswered"
    );
    let started = br#"{"id":"prompt-2","type":"response","command":"prompt","success":true,"data":{"disposition":"started"}}"#;
    assert_eq!(mapper.line(started), vec![]);
    assert_eq!(mapper.line(fake), vec![settled(None, false)]);
    assert!(
        matches!(&mapper.line(fake)[..], [Output::Evidence(_)]),
        "a run settles once"
    );
}

// ---- commands ------------------------------------------------------------------------------

#[test]
fn commands_serialize_as_pi_expects() {
    let m = msg(1);
    let cases: [(Sent, &str); 6] = [
        (
            Sent::Prompt {
                text: "do it\n\u{2028}".into(),
            },
            r#"{"type":"prompt","id":"c1","message":"do it\n\u2028"}"#,
        ),
        (
            Sent::Steer {
                message: m,
                text: "left".into(),
            },
            r#"{"type":"steer","id":"c1","message":"left"}"#,
        ),
        (
            Sent::FollowUp {
                message: m,
                text: "then".into(),
            },
            r#"{"type":"follow_up","id":"c1","message":"then"}"#,
        ),
        (Sent::Abort, r#"{"type":"abort","id":"c1"}"#),
        (Sent::GetState, r#"{"type":"get_state","id":"c1"}"#),
        (
            Sent::GetSessionStats,
            r#"{"type":"get_session_stats","id":"c1"}"#,
        ),
    ];
    for (sent, json) in cases {
        let command = sent.command("c1");
        let line = command.to_line().expect("serializes");
        assert_eq!(line.last(), Some(&b'\n'));
        assert!(!line[..line.len() - 1].contains(&b'\n'), "one line");
        let got: Value = serde_json::from_slice(&line).expect("json");
        let want: Value = serde_json::from_str(json).expect("json");
        assert_eq!(got, want);
        assert_eq!(got["type"], command.name());
    }
    assert_eq!(
        Command::GetState { id: "c9" }
            .to_line()
            .expect("serializes"),
        b"{\"type\":\"get_state\",\"id\":\"c9\"}\n"
    );
}

// ---- protocol details ----------------------------------------------------------------------

/// Slate's prompt `p0`, answered `started`: the run that an `agent_settled` settles.
fn open_run(mapper: &mut PiMapper) {
    mapper.sent(
        "p0",
        Sent::Prompt {
            text: String::new(),
        },
    );
    let started = br#"{"id":"p0","type":"response","command":"prompt","success":true,"data":{"disposition":"started"}}"#;
    assert_eq!(mapper.line(started), vec![]);
}

#[test]
fn unknown_fields_and_types_are_ignored() {
    let mut mapper = PiMapper::new();
    open_run(&mut mapper);
    for line in [
        r#"{"type":"future_event","id":5,"success":"yes","command":{},"error":[1],"message":"x"}"#,
        r#"{"type":"agent_settled","aborted":false,"extra":{"deep":[1,2,{"a":null}]}}"#,
        r#"{"type":"extension_ui_request","id":"u1","method":"notify","message":"hello"}"#,
    ] {
        let out = mapper.line(line.as_bytes());
        assert!(
            out.iter().all(|o| !matches!(o, Output::Evidence(_))),
            "{line}: {out:?}"
        );
    }
    let m = br#"{"type":"message_end","new":1,"message":{"role":"assistant","x":{},"content":[{"type":"text","text":"a","textSignature":"s"},{"type":"hologram","text":"not text"},{"type":"text","text":"b"}],"stopReason":"stop","usage":{"input":1,"output":2,"cacheRead":3,"cacheWrite":4,"cacheWrite1h":4,"reasoning":1,"totalTokens":10,"cost":{"total":0.5,"totalFromProvider":true}}}}"#;
    assert_eq!(
        mapper.line(m),
        vec![
            assistant(
                "ab",
                Usage {
                    tokens: Tokens {
                        input: 1,
                        output: 2,
                        cache_read: 3,
                        cache_write: 4,
                        total: 10
                    },
                    cost: Some(0.5)
                }
            ),
            activity("ab"),
        ]
    );
}

#[test]
fn message_text_is_the_exact_concatenation() {
    let line = br#"{"type":"message_end","message":{"role":"assistant","content":[{"type":"text","text":"  \n"},{"type":"thinking","thinking":"hmm"},{"type":"text","text":"line one\nline two  "},{"type":"toolCall","id":"t","name":"bash","arguments":{"command":"ls"}}],"stopReason":"toolUse"}}"#;
    let Ok(Record::MessageEnd(message)) = Record::parse(line) else {
        panic!("message_end");
    };
    assert_eq!(message.stop_reason, Some(StopReason::ToolUse));
    assert_eq!(message.text(), "  \nline one\nline two  ");
    let out = PiMapper::new().line(line);
    assert_eq!(
        out,
        vec![
            ev(WorkerEvent::AssistantMessage {
                text: "  \nline one\nline two  ".into(),
                usage: None,
            }),
            activity("line one"),
        ]
    );
}

#[test]
fn crlf_and_blank_lines() {
    let mut mapper = PiMapper::new();
    open_run(&mut mapper);
    assert!(mapper.line(b"").is_empty());
    assert!(mapper.line(b"\n").is_empty());
    assert!(mapper.line(b"  \r\n").is_empty());
    assert_eq!(
        mapper.line(b"{\"type\":\"agent_settled\",\"aborted\":true}\r\n"),
        vec![settled(None, true)]
    );
}

/// Recovery needs known exhaustion: a retry that started and never reported its end (pi
/// settled during the retry delay) is unknown evidence.
#[test]
fn a_retry_without_its_end_settles_with_unknown_exhaustion() {
    let mut mapper = PiMapper::new();
    open_run(&mut mapper);
    mapper.line(
        br#"{"type":"auto_retry_start","attempt":1,"maxAttempts":2,"delayMs":300,"errorMessage":"500: boom"}"#,
    );
    assert_eq!(
        mapper.line(br#"{"type":"agent_settled","aborted":false}"#),
        vec![Output::Settled {
            error: None,
            aborted: false,
            retries_ended: false,
        }]
    );
    // The next run starts clean.
    open_run(&mut mapper);
    assert_eq!(
        mapper.line(br#"{"type":"agent_settled","aborted":false}"#),
        vec![settled(None, false)]
    );
}

/// Recovery's switch commands: pi's answer to `set_model` / `set_thinking_level` is matched by
/// id; a refusal carries pi's error text.
#[test]
fn set_model_and_set_thinking_level_responses_are_switch_results() {
    let mut mapper = PiMapper::new();
    mapper.sent(
        "route-1",
        Sent::SetModel {
            provider: "fake".into(),
            id: "fake-model".into(),
        },
    );
    mapper.sent(
        "route-2",
        Sent::SetThinkingLevel {
            level: "high".into(),
        },
    );
    assert_eq!(
        mapper.line(
            br#"{"type":"response","id":"route-2","command":"set_thinking_level","success":true}"#
        ),
        vec![Output::Switched(Ok(()))]
    );
    assert_eq!(
        mapper.line(
            br#"{"type":"response","id":"route-1","command":"set_model","success":false,"error":"Model not found: fake/nope"}"#
        ),
        vec![Output::Switched(Err("Model not found: fake/nope".into()))]
    );
    let wire = Sent::SetModel {
        provider: "fake".into(),
        id: "fake-model".into(),
    };
    assert_eq!(
        String::from_utf8(wire.command("c9").to_line().unwrap()).unwrap(),
        "{\"type\":\"set_model\",\"id\":\"c9\",\"provider\":\"fake\",\"modelId\":\"fake-model\"}\n"
    );
}

// ---- garbage ------------------------------------------------------------------------------

fn assert_evidence(out: &[Output], what: &str) {
    assert_eq!(out.len(), 1, "{what}: {out:?}");
    let Output::Evidence(text) = &out[0] else {
        panic!("{what}: not evidence: {out:?}");
    };
    assert!(text.len() <= EVIDENCE_BYTES, "{what}: {} bytes", text.len());
    assert!(!text.is_empty());
}

#[test]
fn garbage_becomes_bounded_evidence_and_mapping_goes_on() {
    let mut mapper = PiMapper::new();
    let ten_mb = 10 * 1024 * 1024;
    let mut huge_string = Vec::with_capacity(ten_mb + 2);
    huge_string.push(b'"');
    huge_string.resize(ten_mb + 1, b'a');
    huge_string.push(b'"');
    let deep = "[".repeat(100_000);
    let deep_object = r#"{"type":"message_end","message":"#.to_owned() + &"[".repeat(10_000);
    let cases: Vec<(&str, Vec<u8>)> = vec![
        ("invalid utf-8", vec![0xff, 0xfe, b'{', 0x80, b'}']),
        ("invalid utf-8 in a string", b"{\"type\":\"a\xffb\"}".to_vec()),
        ("half json", br#"{"type":"message_end","message":{"role":"assist"#.to_vec()),
        ("10 MB of garbage", vec![b'x'; ten_mb]),
        ("10 MB string", huge_string),
        ("array", br#"[{"type":"agent_settled","aborted":false}]"#.to_vec()),
        ("number", b"42".to_vec()),
        ("null", b"null".to_vec()),
        ("string", br#""agent_settled""#.to_vec()),
        ("object without type", br#"{"aborted":true}"#.to_vec()),
        ("non-string type", br#"{"type":7}"#.to_vec()),
        ("known type, wrong shape", br#"{"type":"message_end","message":5}"#.to_vec()),
        ("known type, wrong usage", br#"{"type":"message_end","message":{"role":"assistant","content":[],"usage":{"input":"many"}}}"#.to_vec()),
        ("deep nesting", deep.into_bytes()),
        ("deep nesting in a record", deep_object.into_bytes()),
        ("trailing garbage", br#"{"type":"agent_settled"} {"#.to_vec()),
        ("duplicate key", br#"{"type":"agent_settled","type":"agent_start"}"#.to_vec()),
        ("nul bytes", vec![0; 64]),
    ];
    for (what, line) in &cases {
        assert_evidence(&mapper.line(line), what);
    }
    // A 10 MB assistant message is a record, not garbage.
    let big_text = "b".repeat(ten_mb);
    let big = format!(
        r#"{{"type":"message_end","message":{{"role":"assistant","content":[{{"type":"text","text":"{big_text}"}}],"stopReason":"stop"}}}}"#
    );
    let out = mapper.line(big.as_bytes());
    assert!(
        matches!(&out[0], Output::Event(WorkerEvent::AssistantMessage { text, .. }) if text.len() == ten_mb)
    );
    // The mapper still maps a whole trace afterwards.
    let ids = record_stdin("rpc_text", &mut mapper);
    assert!(ids.is_empty());
    let out: Vec<Output> = stdout_lines("rpc_text")
        .iter()
        .flat_map(|l| mapper.line(l))
        .collect();
    assert_eq!(out, replay_all("rpc_text").0);
}

#[test]
fn evidence_keeps_the_start_of_the_line_and_cuts_at_a_char_boundary() {
    let mut line = "é".repeat(5_000).into_bytes();
    line.insert(0, b'<');
    let out = PiMapper::new().line(&line);
    assert_evidence(&out, "multibyte");
    let Output::Evidence(text) = &out[0] else {
        unreachable!()
    };
    assert!(text.contains("not valid JSON"), "{text}");
    assert!(text.contains("<éé"), "{text}");
    assert!(text.ends_with('…'), "{text}");
}

fn trace_line() -> impl Strategy<Value = Vec<u8>> {
    let mut all = Vec::new();
    for name in trace_names() {
        all.extend(stdout_lines(&name));
    }
    proptest::sample::select(all)
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2_000))]

    #[test]
    fn line_never_panics_on_arbitrary_bytes(bytes in proptest::collection::vec(any::<u8>(), 0..2048)) {
        let mut mapper = PiMapper::new();
        for o in mapper.line(&bytes) {
            if let Output::Evidence(text) = o {
                prop_assert!(text.len() <= EVIDENCE_BYTES);
            }
        }
    }

    /// Real lines cut short or with one byte changed: never a panic, evidence bounded.
    #[test]
    fn line_never_panics_on_damaged_trace_lines(
        line in trace_line(),
        cut in any::<prop::sample::Index>(),
        at in any::<prop::sample::Index>(),
        byte in any::<u8>(),
    ) {
        let mut mapper = PiMapper::new();
        mapper.sent("p1", Sent::Prompt { text: "x".into() });
        mapper.sent("st1", Sent::Steer { message: msg(1), text: "x".into() });
        mapper.sent("s0", Sent::GetState);
        mapper.sent("st1", Sent::GetSessionStats);
        let mut damaged = line[..cut.index(line.len() + 1)].to_vec();
        if !damaged.is_empty() {
            let i = at.index(damaged.len());
            damaged[i] = byte;
        }
        for o in mapper.line(&damaged).into_iter().chain(mapper.line(&line)) {
            if let Output::Evidence(text) = o {
                prop_assert!(text.len() <= EVIDENCE_BYTES);
            }
        }
    }
}

#[test]
fn tool_activity_summarises_arguments_without_copying_them() {
    let mut mapper = PiMapper::new();
    let start = |args: &str| {
        format!(
            r#"{{"type":"tool_execution_start","toolCallId":"t","toolName":"x","args":{args}}}"#
        )
    };
    let big = "y".repeat(100_000);
    let cases = [
        (
            r#"{"command":"\n  cargo test\nsecond"}"#.to_owned(),
            Some("x cargo test"),
        ),
        (
            format!(r#"{{"content":"{big}","path":"src/a.rs"}}"#),
            Some("x src/a.rs"),
        ),
        (
            r#"{"n":1,"flag":true,"note":"free text"}"#.to_owned(),
            Some("x free text"),
        ),
        (
            r#"{"pattern":"fn main","path":"src"}"#.to_owned(),
            Some("x fn main"),
        ),
        ("{}".to_owned(), None),
        (
            r#"{"list":["a"],"obj":{"command":"nested"}}"#.to_owned(),
            None,
        ),
    ];
    for (args, want) in cases {
        let mut expected = vec![ev(WorkerEvent::ToolRunning { name: "x".into() })];
        expected.extend(want.map(activity));
        assert_eq!(mapper.line(start(&args).as_bytes()), expected, "{args:.80}");
    }
}

// ---- streaming (live observation) ---------------------------------------------------------

/// The text deltas of each assistant message, in order, paired with how it ended.
fn streamed_messages(out: &[Output]) -> Vec<(String, String)> {
    let mut messages = Vec::new();
    let mut streamed = String::new();
    for o in out {
        match o {
            Output::Event(WorkerEvent::AssistantStart) => streamed.clear(),
            Output::Event(WorkerEvent::TextDelta(d)) => streamed.push_str(d),
            Output::Event(WorkerEvent::AssistantMessage { text, .. }) => {
                messages.push((std::mem::take(&mut streamed), text.clone()));
            }
            _ => {}
        }
    }
    messages
}

#[test]
fn text_deltas_add_up_to_the_final_text_in_every_trace() {
    let mut checked = 0;
    for name in trace_names() {
        let (out, _) = replay_all(&name);
        for (streamed, text) in streamed_messages(&out) {
            // An aborted message publishes an empty result; what streamed is its prefix.
            if text.is_empty() {
                continue;
            }
            assert_eq!(streamed, text, "{name}");
            checked += 1;
        }
    }
    assert!(checked >= 20, "only {checked} streamed messages checked");
}

#[test]
fn slow_text_streams_word_by_word_before_the_message_ends() {
    let (out, _) = replay_all("rpc_follow_up");
    let end = out
        .iter()
        .position(|o| matches!(o, Output::Event(WorkerEvent::AssistantMessage { .. })))
        .unwrap();
    let deltas: Vec<&str> = out[..end]
        .iter()
        .filter_map(|o| match o {
            Output::Event(WorkerEvent::TextDelta(d)) => Some(d.as_str()),
            _ => None,
        })
        .collect();
    assert!(deltas.len() >= 10, "{deltas:?}");
    assert_eq!(deltas[..3], ["word0 ", "word1 ", "word2 "]);
}

#[test]
fn an_aborted_stream_shows_its_partial_text_before_the_abort() {
    let (out, _) = replay_all("rpc_abort_stream");
    let messages = streamed_messages(&out);
    assert_eq!(
        messages[0],
        ("word0 word1 word2 word3 word4 ".to_owned(), String::new()),
        "streamed, then published empty"
    );
}

#[test]
fn tool_output_streams_between_tool_start_and_end() {
    let (out, _) = replay_all("rpc_bash_tool");
    let events = events_only(&out);
    let start = events
        .iter()
        .position(|e| matches!(e, WorkerEvent::ToolRunning { .. }))
        .unwrap();
    let end = events
        .iter()
        .position(|e| matches!(e, WorkerEvent::ToolEnd { .. }))
        .unwrap();
    let outputs: Vec<&WorkerEvent> = events[start..end]
        .iter()
        .copied()
        .filter(|e| matches!(e, WorkerEvent::ToolOutput { .. }))
        .collect();
    // pi's first update has empty content (nothing to show); the second has the output.
    assert_eq!(
        outputs,
        [&WorkerEvent::ToolOutput {
            name: "bash".into(),
            text: "hi-from-bash-tool\n".into(),
        }]
    );
}

#[test]
fn thinking_and_tool_call_deltas_are_not_streamed_text() {
    for name in ["rpc_thinking", "rpc_usage"] {
        let (out, _) = replay_all(name);
        for (streamed, text) in streamed_messages(&out) {
            assert!(
                text.starts_with(&streamed),
                "{name}: {streamed:?} vs {text:?}"
            );
        }
    }
}

// ---- worker settings stay nonpersistent ---------------------------------------------------

/// pi 1.6's RPC commands whose handlers persist into `<agentDir>/settings.json` (NOTES.md,
/// and `dist/modes/rpc/rpc-mode.js`: these four call `settingsManager.set*`; `set_model`,
/// `cycle_model`, `set_thinking_level` and `cycle_thinking_level` run without `persist`).
const PERSISTING_COMMANDS: [&str; 4] = [
    "set_auto_retry",
    "set_steering_mode",
    "set_follow_up_mode",
    "set_auto_compaction",
];

#[test]
fn slate_sends_no_pi_command_that_persists_settings() {
    let all = [
        Command::Prompt {
            id: "c",
            message: "m",
        },
        Command::Steer {
            id: "c",
            message: "m",
        },
        Command::FollowUp {
            id: "c",
            message: "m",
        },
        Command::Abort { id: "c" },
        Command::GetState { id: "c" },
        Command::GetSessionStats { id: "c" },
        // RPC `set_model` / `set_thinking_level` call pi without `persist`: session only.
        Command::SetModel {
            id: "c",
            provider: "p",
            model_id: "m",
        },
        Command::SetThinkingLevel {
            id: "c",
            level: "low",
        },
    ];
    for command in &all {
        // Exhaustive: a new command fails to compile here until it is listed above.
        match command {
            Command::Prompt { .. }
            | Command::Steer { .. }
            | Command::FollowUp { .. }
            | Command::Abort { .. }
            | Command::GetState { .. }
            | Command::GetSessionStats { .. }
            | Command::SetModel { .. }
            | Command::SetThinkingLevel { .. } => {}
        }
        let line: Value = serde_json::from_slice(&command.to_line().unwrap()).unwrap();
        let name = line["type"].as_str().unwrap();
        assert_eq!(name, command.name());
        assert!(!PERSISTING_COMMANDS.contains(&name), "{name} persists");
    }
}

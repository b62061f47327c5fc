//! Real pi 1.6.0 (`pi --mode rpc`) against the Rust fake LLM server.
//!
//! pi comes from `SLATE_PI` or from the env file of `ci/install-pi.sh` (see
//! `tests/support/pi_env.rs`). Without it these tests print `SKIPPED: ...` and pass, except under
//! `CI=true`, where they fail. The fake server's own tests at the bottom need no pi.
//!
//! The pi tests check the fake server's wire format against pi's strict stream parser as much as
//! the launch recipe: each scenario must produce the events `shared/pi/NOTES.md` recorded with
//! the Python server.

#[path = "support/fake_llm.rs"]
mod fake_llm;
#[path = "support/pi_env.rs"]
mod pi_env;

use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::{Duration, Instant};

use fake_llm::FakeLlm;
use pi_env::{PiSandbox, RpcPi, message_text, record_type};
use serde_json::{Value, json};

/// Generous: two cores, and cargo may be building next to us.
const RUN_TIMEOUT: Duration = Duration::from_secs(90);
const EXIT_TIMEOUT: Duration = Duration::from_secs(20);

/// One RPC pi with its fake server and sandbox (dropped in field order: pi first).
struct Run {
    pi: RpcPi,
    sandbox: PiSandbox,
    fake: FakeLlm,
}

impl Run {
    /// Start the fake server, a sandbox and `pi --mode rpc --no-session`; `None` when skipped.
    fn start(test: &str) -> Option<Self> {
        let pi_cmd = pi_env::pi_or_skip(test)?;
        let fake = FakeLlm::start().expect("start fake LLM");
        let sandbox = PiSandbox::new(test, &fake.base_url()).expect("create pi sandbox");
        let pi = RpcPi::spawn(&sandbox, &pi_cmd, &["--no-session"]).expect("spawn pi");
        Some(Self { pi, sandbox, fake })
    }

    fn prompt(&mut self, id: &str, message: &str) {
        self.pi
            .send(&json!({"id": id, "type": "prompt", "message": message}))
            .expect("write prompt");
    }

    /// Read until `agent_settled`; panics with the transcript on timeout or EOF.
    fn settle(&mut self) -> Value {
        self.read_until_type("agent_settled")
    }

    fn read_until_type(&mut self, kind: &str) -> Value {
        match self.pi.read_until_type(kind, RUN_TIMEOUT) {
            Ok(r) => r,
            Err(e) => panic!(
                "no {kind} from pi ({e:?}) after {:?}; records:\n{}\nrequests:\n{}",
                self.pi.elapsed(),
                self.pi.transcript(),
                self.fake.requests_jsonl()
            ),
        }
    }

    /// Close stdin; pi must exit 0 and leave no process behind.
    fn finish(mut self) {
        self.pi.close_stdin();
        let status = self.pi.wait_exit(EXIT_TIMEOUT).expect("wait for pi");
        let status = status
            .unwrap_or_else(|| panic!("pi did not exit within {EXIT_TIMEOUT:?} of stdin EOF"));
        assert_eq!(
            status.code(),
            Some(0),
            "pi exit status {status}; stderr: {}",
            self.pi.stderr_text()
        );
        assert_eq!(
            pi_env::process_group_members(self.pi.pid()),
            Vec::<u32>::new(),
            "process group left"
        );
        assert_eq!(
            self.sandbox.leftover_processes(),
            Vec::<u32>::new(),
            "pi descendants left"
        );
        assert_eq!(self.pi.stderr_text(), "", "pi wrote to stderr");
    }

    fn last_assistant(&self) -> Value {
        let Some(m) = self.pi.assistant_messages().last().copied() else {
            panic!(
                "no assistant message_end; records:\n{}",
                self.pi.transcript()
            );
        };
        m.clone()
    }
}

fn str_at<'a>(v: &'a Value, pointer: &str) -> &'a str {
    v.pointer(pointer)
        .and_then(Value::as_str)
        .unwrap_or_else(|| panic!("no string at {pointer} in {v}"))
}

fn u64_at(v: &Value, pointer: &str) -> u64 {
    v.pointer(pointer)
        .and_then(Value::as_u64)
        .unwrap_or_else(|| panic!("no integer at {pointer} in {v}"))
}

fn f64_at(v: &Value, pointer: &str) -> f64 {
    v.pointer(pointer)
        .and_then(Value::as_f64)
        .unwrap_or_else(|| panic!("no number at {pointer} in {v}"))
}

fn assert_close(a: f64, b: f64, what: &str) {
    assert!((a - b).abs() < 1e-12, "{what}: {a} != {b}");
}

// ---------------------------------------------------------------------------------------------
// Real pi.

#[test]
fn pi_version_is_pinned() {
    let Some(pi) = pi_env::pi_or_skip("pi_version_is_pinned") else {
        return;
    };
    let sandbox = PiSandbox::new("version", "http://127.0.0.1:9/v1").expect("sandbox");
    let out = sandbox
        .command(&pi, &["--version"])
        .output()
        .expect("run pi --version");
    assert!(out.status.success(), "pi --version: {out:?}");
    assert_eq!(
        String::from_utf8_lossy(&out.stdout).trim(),
        pi_env::PI_VERSION,
        "from {}",
        pi.source
    );
}

#[test]
fn rpc_text_prompt_settles_and_exits_cleanly() {
    let Some(mut run) = Run::start("rpc_text") else {
        return;
    };
    let t0 = Instant::now();
    run.prompt("p1", "SCENARIO:TEXT say hello");
    let settled = run.settle();
    assert_eq!(settled["aborted"], json!(false));
    let response = run.pi.response("p1").expect("prompt response").clone();
    assert_eq!(response["success"], json!(true), "{response}");
    assert_eq!(response["data"]["disposition"], json!("started"));

    let answer = run.last_assistant();
    assert_eq!(message_text(&answer), "Hello from the fake LLM.");
    assert_eq!(answer["stopReason"], json!("stop"));
    // prompt_tokens = 100 + 10 * 2 messages (system, user); completion = 5 chunks.
    assert_eq!(u64_at(&answer, "/usage/input"), 120);
    assert_eq!(u64_at(&answer, "/usage/output"), 5);
    assert_eq!(u64_at(&answer, "/usage/totalTokens"), 125);
    assert_eq!(run.pi.of_type("agent_settled").len(), 1);

    let requests = run.fake.requests();
    assert_eq!(requests.len(), 1);
    let r = &requests[0];
    assert_eq!(r.path, "/v1/chat/completions");
    assert_eq!(r.header("authorization"), Some("Bearer fake-key"));
    assert_eq!(r.body["model"], json!("fake-model"));
    assert_eq!(r.body["stream"], json!(true));
    assert_eq!(r.body["stream_options"], json!({"include_usage": true}));
    assert_eq!(r.last_user_text, "SCENARIO:TEXT say hello");
    let tools: Vec<&str> = r.body["tools"]
        .as_array()
        .expect("tools")
        .iter()
        .map(|t| str_at(t, "/function/name"))
        .collect();
    assert_eq!(tools, ["read", "bash", "edit", "write"]);
    let settled_after = t0.elapsed();
    run.finish();
    eprintln!("rpc_text: settled after {settled_after:?}");
}

#[test]
fn rpc_usage_maps_cached_and_reasoning_tokens() {
    let Some(mut run) = Run::start("rpc_usage") else {
        return;
    };
    run.prompt("p1", "SCENARIO:USAGE numbers please");
    run.settle();
    let m = run.last_assistant();
    assert_eq!(message_text(&m), "Usage numbers attached.");
    // NOTES "Usage and cost": input = prompt - cached; reasoning is inside output.
    assert_eq!(u64_at(&m, "/usage/input"), 500);
    assert_eq!(u64_at(&m, "/usage/cacheRead"), 1000);
    assert_eq!(u64_at(&m, "/usage/output"), 300);
    assert_eq!(u64_at(&m, "/usage/reasoning"), 120);
    assert_eq!(u64_at(&m, "/usage/totalTokens"), 1800);
    assert_close(f64_at(&m, "/usage/cost/input"), 0.0005, "cost.input");
    assert_close(f64_at(&m, "/usage/cost/output"), 0.0006, "cost.output");
    assert_close(
        f64_at(&m, "/usage/cost/cacheRead"),
        0.0001,
        "cost.cacheRead",
    );
    assert_close(f64_at(&m, "/usage/cost/total"), 0.0012, "cost.total");
    run.finish();
}

#[test]
fn rpc_bash_tool_then_text() {
    let Some(mut run) = Run::start("rpc_bash") else {
        return;
    };
    run.prompt("p1", "SCENARIO:BASH run it");
    run.settle();
    let starts = run.pi.of_type("tool_execution_start");
    assert_eq!(starts.len(), 1, "{}", run.pi.transcript());
    assert_eq!(starts[0]["toolName"], json!("bash"));
    assert_eq!(
        starts[0]["args"],
        json!({"command": "echo hi-from-bash-tool"})
    );
    let end = run.pi.of_type("tool_execution_end")[0].clone();
    assert_eq!(end["isError"], json!(false));
    let assistants = run.pi.assistant_messages();
    assert_eq!(assistants.len(), 2);
    assert_eq!(assistants[0]["stopReason"], json!("toolUse"));
    assert_eq!(message_text(assistants[0]), "Let me run a tool. ");
    assert_eq!(
        message_text(assistants[1]),
        "The tool returned: hi-from-bash-tool."
    );
    let requests = run.fake.requests();
    assert_eq!(requests.len(), 2);
    assert_eq!(requests[1].tool_results_after_user, 1);
    run.finish();
}

#[test]
fn rpc_err500_retries_then_fails() {
    let Some(mut run) = Run::start("rpc_err500") else {
        return;
    };
    run.prompt("p1", "SCENARIO:ERR500 fail please");
    run.settle();
    // retry.maxRetries 2 in the template: 1 + 2 requests.
    assert_eq!(run.fake.request_count(), 3);
    let retry_end = run.pi.of_type("auto_retry_end");
    assert_eq!(retry_end.len(), 1, "{}", run.pi.transcript());
    assert_eq!(retry_end[0]["success"], json!(false));
    let m = run.last_assistant();
    assert_eq!(m["stopReason"], json!("error"));
    assert_eq!(
        str_at(&m, "/errorMessage"),
        r#"500: {"message":"fake internal server error","type":"server_error"}"#
    );
    run.finish();
}

#[test]
fn rpc_err400_is_not_retried() {
    let Some(mut run) = Run::start("rpc_err400") else {
        return;
    };
    run.prompt("p1", "SCENARIO:ERR400 bad");
    run.settle();
    assert_eq!(run.fake.request_count(), 1);
    assert!(run.pi.of_type("auto_retry_start").is_empty());
    let m = run.last_assistant();
    assert_eq!(m["stopReason"], json!("error"));
    assert!(str_at(&m, "/errorMessage").starts_with("400: "), "{m}");
    run.finish();
}

#[test]
fn rpc_loop_asks_for_tools_until_its_bound() {
    let Some(mut run) = Run::start("rpc_loop") else {
        return;
    };
    run.prompt("p1", "SCENARIO:LOOP3 go");
    run.settle();
    assert_eq!(run.pi.of_type("tool_execution_end").len(), 3);
    assert_eq!(run.fake.request_count(), 4);
    assert_eq!(
        message_text(&run.last_assistant()),
        "Loop done after 3 tool calls."
    );
    run.finish();
}

#[test]
fn rpc_abort_during_slow_stream() {
    let Some(mut run) = Run::start("rpc_abort") else {
        return;
    };
    run.prompt("p1", "SCENARIO:SLOW take your time");
    // Wait for the first streamed text, then abort.
    run.pi
        .read_until(RUN_TIMEOUT, |r| {
            record_type(r) == "message_update"
                && r.pointer("/assistantMessageEvent/type") == Some(&json!("text_delta"))
        })
        .expect("a text delta");
    let t_abort = Instant::now();
    run.pi
        .send(&json!({"id": "a1", "type": "abort"}))
        .expect("write abort");
    let settled = run.settle();
    assert_eq!(settled["aborted"], json!(true));
    // NOTES: agent_settled comes before the abort response.
    run.pi
        .read_until(RUN_TIMEOUT, |r| r.get("id") == Some(&json!("a1")))
        .expect("abort response");
    assert!(
        t_abort.elapsed() < Duration::from_secs(5),
        "abort took {:?}",
        t_abort.elapsed()
    );
    let m = run.last_assistant();
    assert_eq!(m["stopReason"], json!("aborted"));
    run.finish();
}

// ---------------------------------------------------------------------------------------------
// The fake server alone (no pi needed).

/// POST a chat-completions body; the whole response (the server closes the connection).
fn post(fake: &FakeLlm, body: &Value) -> String {
    let body = body.to_string();
    let mut s = TcpStream::connect(fake.addr()).expect("connect");
    write!(
        s,
        "POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n{body}",
        body.len()
    )
    .expect("send");
    let mut out = String::new();
    s.read_to_string(&mut out).expect("read");
    out
}

fn chat(user: &str) -> Value {
    json!({
        "model": "fake-model",
        "stream": true,
        "messages": [{"role": "system", "content": "sys"}, {"role": "user", "content": [{"type": "text", "text": user}]}],
        "tools": [{"type": "function", "function": {"name": "bash"}}],
    })
}

/// `data:` payloads with `"created": <n>` replaced by 0.
fn events(response: &str) -> Vec<String> {
    let (_, body) = response.split_once("\r\n\r\n").expect("head/body");
    body.split("\n\n")
        .filter_map(|e| e.strip_prefix("data: "))
        .map(|e| {
            let Some(i) = e.find("\"created\": ") else {
                return e.to_owned();
            };
            let start = i + "\"created\": ".len();
            let end = start + e[start..].find(',').expect("created value");
            format!("{}0{}", &e[..start], &e[end..])
        })
        .collect()
}

#[test]
fn fake_text_stream_is_byte_compatible_with_fake_llm_py() {
    let fake = FakeLlm::start().expect("start");
    let response = post(&fake, &chat("SCENARIO:TEXT hi"));
    assert!(response.starts_with("HTTP/1.0 200 OK\r\n"), "{response}");
    assert!(response.contains("\r\nContent-Type: text/event-stream\r\n"));
    let ev = events(&response);
    let head = r#"{"id": "chatcmpl-fake-1", "object": "chat.completion.chunk", "created": 0, "model": "fake-model", "choices": "#;
    assert_eq!(
        ev[0],
        format!(
            r#"{head}[{{"index": 0, "delta": {{"role": "assistant", "content": ""}}, "finish_reason": null}}]}}"#
        )
    );
    assert_eq!(
        ev[1],
        format!(
            r#"{head}[{{"index": 0, "delta": {{"content": "Hello "}}, "finish_reason": null}}]}}"#
        )
    );
    assert_eq!(
        ev[6],
        format!(r#"{head}[{{"index": 0, "delta": {{}}, "finish_reason": "stop"}}]}}"#)
    );
    assert_eq!(
        ev[7],
        format!(
            r#"{head}[], "usage": {{"prompt_tokens": 120, "completion_tokens": 5, "total_tokens": 125}}}}"#
        )
    );
    assert_eq!(ev[8], "[DONE]");
    assert_eq!(ev.len(), 9);
    assert_eq!(fake.request_count(), 1);
    assert_eq!(fake.requests()[0].scenario, "TEXT");
}

#[test]
fn fake_tool_call_deltas_and_errors() {
    let fake = FakeLlm::start().expect("start");
    let ev = events(&post(&fake, &chat("SCENARIO:BASH x")));
    let deltas: Vec<Value> = ev[..ev.len() - 1]
        .iter()
        .map(|e| serde_json::from_str::<Value>(e).expect("json"))
        .collect();
    assert_eq!(
        deltas[2]["choices"][0]["delta"],
        json!({"tool_calls": [{"index": 0, "id": "call_fake_1", "type": "function", "function": {"name": "bash", "arguments": ""}}]})
    );
    let args: String = deltas[3..]
        .iter()
        .filter_map(|d| {
            d.pointer("/choices/0/delta/tool_calls/0/function/arguments")?
                .as_str()
        })
        .collect();
    assert_eq!(args, r#"{"command": "echo hi-from-bash-tool"}"#);
    assert!(
        deltas
            .iter()
            .any(|d| d["choices"][0]["finish_reason"] == json!("tool_calls"))
    );

    let r500 = post(&fake, &chat("SCENARIO:ERR500"));
    assert!(
        r500.starts_with("HTTP/1.0 500 Internal Server Error\r\n"),
        "{r500}"
    );
    assert!(r500.ends_with(
        r#"{"error": {"message": "fake internal server error", "type": "server_error"}}"#
    ));
    let r429 = post(&fake, &chat("SCENARIO:ERR429"));
    assert!(r429.contains("\r\nRetry-After: 1\r\n"), "{r429}");
    let echo = events(&post(&fake, &chat("plain \u{e9}")));
    assert!(
        echo[2].contains(r#""content": "plain \u00e9""#),
        "{}",
        echo[2]
    );
    assert_eq!(fake.request_count(), 4);
}

#[test]
fn fake_calls_makes_the_named_calls_in_order_then_reports_the_results() {
    let fake = FakeLlm::start().expect("start");
    let user = "SCENARIO:CALLS\nCALL: submit_result {\"value\": \"42\"}\nCALL: read {\"path\": \"caf\u{e9}.txt\"}\n";
    let call_of = |messages: Value| {
        let mut body = chat(user);
        body["messages"] = messages;
        let ev = events(&post(&fake, &body));
        let deltas: Vec<Value> = ev[..ev.len() - 1]
            .iter()
            .map(|e| serde_json::from_str::<Value>(e).expect("json"))
            .collect();
        let name = deltas
            .iter()
            .find_map(|d| {
                d.pointer("/choices/0/delta/tool_calls/0/function/name")?
                    .as_str()
            })
            .map(str::to_owned);
        let args: String = deltas
            .iter()
            .filter_map(|d| {
                d.pointer("/choices/0/delta/tool_calls/0/function/arguments")?
                    .as_str()
            })
            .collect();
        let text: String = deltas
            .iter()
            .filter_map(|d| d.pointer("/choices/0/delta/content")?.as_str())
            .collect();
        (name, args, text)
    };
    let user_msg = json!({"role": "user", "content": [{"type": "text", "text": user}]});
    let tool = |text: &str| json!({"role": "tool", "tool_call_id": "x", "content": text});
    // The k-th request after the user message makes the k-th call, its JSON exactly as written.
    let (name, args, _) = call_of(json!([user_msg]));
    assert_eq!(name.as_deref(), Some("submit_result"));
    assert_eq!(args, r#"{"value": "42"}"#);
    let (name, args, _) =
        call_of(json!([user_msg, {"role": "assistant", "content": ""}, tool("Accepted.")]));
    assert_eq!(name.as_deref(), Some("read"));
    assert_eq!(args, "{\"path\": \"caf\u{e9}.txt\"}");
    // After the last call: the results it saw, in order.
    let (name, _, text) = call_of(json!([
        user_msg,
        tool("Accepted."),
        tool("line one\nline two")
    ]));
    assert_eq!(name, None);
    assert_eq!(text, "Calls done.\n[1] Accepted.\n[2] line one\nline two");
    // A bad line is answered, not guessed at.
    let mut bad = chat("SCENARIO:CALLS\nCALL: bash [1]\n");
    bad["messages"][1]["content"][0]["text"] = json!("SCENARIO:CALLS\nCALL: bash [1]\n");
    let ev = events(&post(&fake, &bad));
    assert!(
        ev.iter()
            .any(|e| e.contains("bad CALL line 1: the arguments are not a JSON object")),
        "{ev:?}"
    );
}

#[test]
fn fake_drop_cuts_slow_streams_and_joins() {
    let fake = FakeLlm::start().expect("start");
    let addr = fake.addr();
    let reader = std::thread::spawn(move || {
        let body = chat("SCENARIO:SLOW100").to_string();
        let mut s = TcpStream::connect(addr).expect("connect");
        write!(
            s,
            "POST /v1/chat/completions HTTP/1.0\r\nContent-Length: {}\r\n\r\n{body}",
            body.len()
        )
        .expect("send");
        let mut out = Vec::new();
        let _ = s.read_to_end(&mut out);
        out
    });
    assert!(fake.wait_for_requests(1, Duration::from_secs(10)));
    std::thread::sleep(Duration::from_millis(300));
    let t = Instant::now();
    drop(fake);
    assert!(
        t.elapsed() < Duration::from_secs(2),
        "drop took {:?}",
        t.elapsed()
    );
    let out = String::from_utf8(reader.join().expect("reader")).expect("utf8");
    assert!(out.contains("word0 ") && !out.contains("[DONE]"), "{out}");
}

#[test]
fn vendored_agent_template_matches_shared_pi() {
    // tests/support/agent_template is a copy of shared/pi/agent_template (the config the traces
    // in shared/pi were recorded with); compare when that folder is beside the checkout.
    let shared =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../shared/pi/agent_template");
    if !shared.is_dir() {
        return;
    }
    for name in ["models.json", "settings.json"] {
        let ours = std::fs::read(pi_env::template_dir().join(name)).expect("vendored template");
        let theirs = std::fs::read(shared.join(name)).expect("shared template");
        assert!(
            ours == theirs,
            "tests/support/agent_template/{name} differs from {}",
            shared.display()
        );
    }
}

//! The typed protocol (`src/control/methods.rs`): params refused by field, the checked-in JSON
//! Schema equal to the types (`SLATE_BLESS=1` regenerates it), and round trips of every
//! request, reply and event through JSON, each checked against the published schema.

#![allow(clippy::unwrap_used, reason = "test fixtures fail loudly")]

#[path = "support/protocol_schema.rs"]
mod protocol_schema;

use std::cell::RefCell;
use std::path::Path;

use proptest::prelude::*;
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::{Value, json};
use slate::control::Method;
use slate::control::methods::{
    ClientInfo, DelegateOutcome, DelegateParams, DelegateResult, Event, FleetStats, FleetStatus,
    GuardParams, GuardResult, HelloParams, HelloResult, Lagged, METHODS, MessageParams, MessageRef,
    NoParams, Notification, ParentToolEndParams, ParentToolEndResult, ParentToolStartParams,
    ParentToolStartResult, ProfilesResult, RenewParams, Request, ResumeParams, ShutdownResult,
    StatusParams, StatusResult, SteerParams, StopManyParams, SubmitParams, SubmitResult,
    SubscribeResult, Target, TargetParams, TranscriptParams, TranscriptResult, WaitParams, method,
    protocol_schema,
};
use slate::control::protocol::codes;
use slate::control::summary::SummaryRow;
use slate::core::task::{Limits, Role};
use slate::core::{
    AgentPresence, CallId, ChildRef, ChildSnapshot, Delivery, Message, MessageId, MessageMode,
    Party, Presence, ReceiptStatus, RegistryEvent, RegistryEventKind, Reply, RequestId, Status,
    StatusView, SubmitStatus, Telemetry, Tokens, WaitOutcome, WaitResult, Window, WindowOutcome,
};
use slate::policy::scheduling::SchedulingPolicy;
use uuid::Uuid;

use protocol_schema::ProtocolSchema;

// ---- params refused by field ------------------------------------------------------------

fn refusal(method: &str, params: Value) -> String {
    match Request::parse(method, params) {
        Ok(request) => panic!("{method}: accepted {request:?}"),
        Err(e) => {
            assert_eq!(e.code, codes::INVALID_REQUEST, "{e}");
            e.message
        }
    }
}

#[test]
fn wrong_types_and_unknown_fields_are_refused_naming_the_field() {
    let message = refusal("delegate", json!({"request": {}, "background": "yes"}));
    assert!(
        message.starts_with("params.background: ") && message.ends_with("expected a boolean"),
        "{message}"
    );
    let message = refusal("status", json!({"summary": "yes"}));
    assert!(
        message.starts_with("params.summary: ") && message.contains("expected a boolean"),
        "{message}"
    );
    let message = refusal("status", json!({"summmary": true}));
    assert!(message.contains("unknown field `summmary`"), "{message}");
    let message = refusal("stop", json!({}));
    assert!(message.contains("missing field `target`"), "{message}");
    let message = refusal("stop", json!({"target": "abc@1"}));
    assert!(
        message.starts_with("params.target: the id part \"abc\""),
        "{message}"
    );
    let good = "00000000-0000-4000-8000-000000000001@1";
    let message = refusal("stopMany", json!({"targets": [good, 7]}));
    assert!(message.starts_with("params.targets[1]: "), "{message}");
    let message = refusal("wait", json!({"timeoutMs": -1}));
    assert!(message.starts_with("params.timeoutMs: "), "{message}");
    let message = refusal("wait", json!({"timeoutMs": 5, "messageId": "0000"}));
    assert!(message.starts_with("params.messageId: "), "{message}");
    let message = refusal("message", json!({"text": "hi", "mode": "loud"}));
    assert!(message.starts_with("params.mode: "), "{message}");
    let message = refusal("agents", json!({"all": true}));
    assert!(message.contains("unknown field `all`"), "{message}");
    let message = refusal("followup", json!({"target": good, "assignment": 3}));
    assert!(message.starts_with("params.assignment: "), "{message}");
    // Absent optional members and null read as absent.
    assert_eq!(
        Request::parse("status", json!({"target": null})).unwrap(),
        Request::Status(StatusParams::default())
    );
    let unknown = Request::parse("nope", json!({})).unwrap_err();
    assert_eq!(unknown.code, codes::UNKNOWN_METHOD);
}

#[test]
fn a_target_is_the_string_or_the_contracts_object_and_is_written_as_the_string() {
    let id = "0b6a0000-0000-4000-8000-000000000001";
    let want = Target(ChildRef::new(id.parse().unwrap(), 3));
    let stop = |target: Value| Request::parse("stop", json!({"target": target}));
    for form in [
        json!(format!("{id}@3")),
        json!({"id": id, "generation": 3}),
        json!({"generation": 3, "id": id}),
    ] {
        assert_eq!(
            stop(form.clone()).unwrap(),
            Request::Stop(TargetParams { target: want }),
            "{form}"
        );
        with_schema(|s| s.params("stop", &json!({"target": form}))).unwrap();
    }
    assert_eq!(
        serde_json::to_value(want).unwrap(),
        json!(format!("{id}@3"))
    );
    let message = Request::parse(
        "message",
        json!({"target": {"id": id, "generation": 1}, "text": "hi"}),
    )
    .unwrap();
    assert_eq!(message.params().unwrap()["target"], format!("{id}@1"));

    // Strict: an integer generation from 1, the full UUID, no other member; each refused
    // naming the field, and refused by the schema too.
    let refused = [
        (
            json!({"id": id, "generation": 0}),
            "invalid value: integer `0`",
        ),
        (
            json!({"id": id, "generation": -1}),
            "invalid value: integer `-1`",
        ),
        (
            json!({"id": id, "generation": 1.0}),
            "invalid type: floating point `1.0`",
        ),
        (
            json!({"id": id, "generation": "1"}),
            "invalid type: string \"1\"",
        ),
        (
            json!({"id": id, "generation": 4_294_967_296_u64}),
            "invalid value: integer `4294967296`",
        ),
        (
            json!({"id": "0b6a0000", "generation": 1}),
            "not a full hyphenated UUID",
        ),
        (json!({"id": id}), "missing field `generation`"),
        (json!({"generation": 1}), "missing field `id`"),
        (
            json!({"id": id, "generation": 1, "latest": true}),
            "unknown field `latest`, expected `id` or `generation`",
        ),
        (json!([id, 1]), "invalid type: sequence"),
        (json!(7), "invalid type: integer `7`"),
    ];
    for (form, why) in refused {
        let message = refusal("stop", json!({"target": form.clone()}));
        assert!(
            message.starts_with("params.target") && message.contains(why),
            "{form}: {message}"
        );
        // JSON Schema's `integer` is any number with no fraction, so `1.0` passes the schema
        // (a JavaScript client never writes it: `JSON.stringify(1.0)` is `1`); the server is
        // stricter than its schema here, never looser.
        if !form["generation"].is_f64() {
            assert!(
                with_schema(|s| s.params("stop", &json!({"target": form.clone()}))).is_err(),
                "the schema accepts {form}"
            );
        }
    }
}

#[test]
fn guard_and_submit_params_are_strict() {
    assert_eq!(
        Request::parse("guard", json!({"kind": "request"})).unwrap(),
        Request::Guard(GuardParams::Request {})
    );
    assert_eq!(
        Request::parse(
            "guard",
            json!({"kind": "tool", "tool": "bash", "callId": "c1"})
        )
        .unwrap(),
        Request::Guard(GuardParams::Tool {
            tool: "bash".into(),
            call_id: "c1".into()
        })
    );
    for (params, why) in [
        (
            json!({"kind": "request", "tool": "bash"}),
            "unknown field `tool`",
        ),
        (
            json!({"kind": "compaction", "extra": 1}),
            "unknown field `extra`",
        ),
        (
            json!({"kind": "tool", "tool": "bash"}),
            "missing field `callId`",
        ),
        (
            json!({"kind": "tool", "tool": "bash", "callId": "c", "args": {}}),
            "unknown field `args`",
        ),
        (json!({"kind": "turn"}), "unknown variant `turn`"),
        (json!({}), "missing field `kind`"),
    ] {
        let message = refusal("guard", params.clone());
        assert!(message.contains(why), "{params}: {message}");
        assert!(
            with_schema(|s| s.params("guard", &params)).is_err(),
            "{params}"
        );
    }
    // The value is passed through exactly, whatever it is (null included).
    for value in [
        json!(null),
        json!("42"),
        json!({"summary": "x", "n": [1, 2.5]}),
    ] {
        assert_eq!(
            Request::parse("submit", json!({"value": value.clone()})).unwrap(),
            Request::Submit(SubmitParams { value })
        );
    }
    let message = refusal("submit", json!({}));
    assert!(message.contains("missing field `value`"), "{message}");
    let message = refusal("submit", json!({"value": 1, "schema": {}}));
    assert!(message.contains("unknown field `schema`"), "{message}");
}

#[test]
fn parent_tool_params_and_hello_client_are_strict() {
    assert_eq!(
        Request::parse("parentToolStart", json!({"callId": "c1", "tool": "bash"})).unwrap(),
        Request::ParentToolStart(ParentToolStartParams {
            call_id: "c1".into(),
            tool: "bash".into()
        })
    );
    assert_eq!(
        Request::parse("parentToolEnd", json!({"callId": "c1"})).unwrap(),
        Request::ParentToolEnd(ParentToolEndParams {
            call_id: "c1".into()
        })
    );
    for (method, params, why) in [
        (
            "parentToolStart",
            json!({"callId": "c1"}),
            "missing field `tool`",
        ),
        (
            "parentToolStart",
            json!({"tool": "bash"}),
            "missing field `callId`",
        ),
        (
            "parentToolStart",
            json!({"callId": "c1", "tool": "bash", "readOnly": true}),
            "unknown field `readOnly`",
        ),
        (
            "parentToolStart",
            json!({"callId": 7, "tool": "bash"}),
            "params.callId",
        ),
        (
            "parentToolEnd",
            json!({"callId": "c1", "tool": "bash"}),
            "unknown field `tool`",
        ),
        ("parentToolEnd", json!({}), "missing field `callId`"),
    ] {
        let message = refusal(method, params.clone());
        assert!(message.contains(why), "{params}: {message}");
        assert!(
            with_schema(|s| s.params(method, &params)).is_err(),
            "{params}"
        );
    }
    // `client`: the string, or the object with the installed extension's hash.
    let hello = |client: Value| json!({"protocols": [2], "client": client});
    let Request::Hello(plain) = Request::parse("hello", hello(json!("slate 0.1.0"))).unwrap()
    else {
        panic!("not a hello");
    };
    assert_eq!(plain.client, Some(ClientInfo::named("slate 0.1.0")));
    let object = hello(json!({"name": "slate-pi-extension 0.1.0", "extension": "0a1b"}));
    let Request::Hello(described) = Request::parse("hello", object.clone()).unwrap() else {
        panic!("not a hello");
    };
    assert_eq!(
        described
            .client
            .as_ref()
            .and_then(|c| c.extension.as_deref()),
        Some("0a1b")
    );
    assert!(with_schema(|s| s.params("hello", &object)).is_ok());
    for (client, why) in [
        (json!({"extension": "0a1b"}), "missing field `name`"),
        (
            json!({"name": "x", "version": "1"}),
            "unknown field `version`",
        ),
        (
            json!({"name": "x", "extension": "0A1B"}),
            "params.client: extension: must be a content hash",
        ),
        (
            json!({"name": "x", "extension": ""}),
            "must be a content hash",
        ),
        (
            json!({"name": "x", "extension": "a".repeat(65)}),
            "must be a content hash",
        ),
        (
            json!({"name": "x", "extension": "\u{1b}[31m"}),
            "must be a content hash",
        ),
        (json!(7), "params.client: invalid type: integer `7`"),
    ] {
        let message = refusal("hello", hello(client.clone()));
        assert!(message.contains(why), "{client}: {message}");
        assert!(
            with_schema(|s| s.params("hello", &hello(client.clone()))).is_err(),
            "{client}"
        );
    }
}

#[test]
fn every_method_of_the_table_parses_its_own_empty_or_minimal_params() {
    // The table and `Request::method` agree, in order.
    let names: Vec<&str> = METHODS.to_vec();
    assert_eq!(names.len(), 29);
    assert!(names.contains(&method::Status::NAME) && names.contains(&method::Hello::NAME));
    for name in names {
        let schema = &protocol_schema()["x-methods"][name];
        assert!(schema["params"].is_object(), "{name}");
        assert!(schema["result"].is_object(), "{name}");
    }
}

// ---- the checked-in schema ----------------------------------------------------------------

#[test]
fn the_checked_in_schema_matches_the_types() {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("docs/protocol.schema.json");
    let generated = format!(
        "{}\n",
        serde_json::to_string_pretty(&protocol_schema()).unwrap()
    );
    let ts_path = Path::new(env!("CARGO_MANIFEST_DIR")).join("extension/protocol.gen.ts");
    let ts = slate::control::typescript::declarations(&protocol_schema());
    if std::env::var_os("SLATE_BLESS").is_some() {
        std::fs::write(&path, &generated).unwrap();
        std::fs::write(&ts_path, &ts).unwrap();
        return;
    }
    let checked_in = std::fs::read_to_string(&path).unwrap_or_default();
    assert!(
        checked_in == generated,
        "{} differs from the schema generated from src/control/methods.rs; \
         regenerate it with SLATE_BLESS=1 cargo test --test protocol",
        path.display()
    );
    let checked_in = std::fs::read_to_string(&ts_path).unwrap_or_default();
    assert!(
        checked_in == ts,
        "{} differs from the declarations generated from the schema; \
         regenerate it with SLATE_BLESS=1 cargo test --test protocol",
        ts_path.display()
    );
}

// ---- round trips, each checked against the schema -----------------------------------------

thread_local! {
    /// Compiled once per test thread (the validator is not `Send`).
    static SCHEMA: RefCell<ProtocolSchema> = RefCell::new(ProtocolSchema::load());
}

fn with_schema<T>(check: impl FnOnce(&mut ProtocolSchema) -> T) -> T {
    SCHEMA.with(|s| check(&mut s.borrow_mut()))
}

/// `value` → JSON → checked at `pointer` → back, equal.
fn round_trip<T>(pointer: &str, value: &T) -> Result<(), TestCaseError>
where
    T: Serialize + DeserializeOwned + PartialEq + std::fmt::Debug,
{
    let json = serde_json::to_value(value).unwrap();
    let checked = with_schema(|s| s.check(pointer, &json));
    prop_assert!(checked.is_ok(), "{}", checked.unwrap_err());
    let back: T = serde_json::from_value(json.clone())
        .map_err(|e| TestCaseError::fail(format!("{e}: {json}")))?;
    prop_assert_eq!(&back, value);
    Ok(())
}

fn text() -> impl Strategy<Value = String> {
    prop_oneof![
        "[a-z ]{0,12}",
        any::<String>(),
        Just("\u{9b}[31m\u{202e}\u{7f}".to_owned()),
    ]
}

fn child_ref() -> impl Strategy<Value = ChildRef> {
    (any::<u128>(), 1_u32..=u32::MAX).prop_map(|(n, g)| ChildRef::new(Uuid::from_u128(n), g))
}

fn target() -> impl Strategy<Value = Target> {
    child_ref().prop_map(Target)
}

fn status() -> impl Strategy<Value = Status> {
    prop_oneof![
        Just(Status::Queued),
        Just(Status::Running),
        Just(Status::Settled),
        Just(Status::Failed),
        Just(Status::Cancelled),
        Just(Status::Paused),
    ]
}

fn presence() -> impl Strategy<Value = Presence> {
    prop_oneof![
        Just(Presence::Active),
        Just(Presence::Idle),
        Just(Presence::Parked),
        Just(Presence::Paused),
    ]
}

/// Money with an exact short decimal form (the JSON round trip is then exact).
fn cost() -> impl Strategy<Value = Option<f64>> {
    proptest::option::of((0_u32..1_000_000).prop_map(|n| f64::from(n) / 1024.0))
}

fn snapshot() -> impl Strategy<Value = ChildSnapshot> {
    (
        child_ref(),
        status(),
        text(),
        proptest::option::of(text()),
        proptest::option::of(0_u32..1000),
        proptest::option::of(any::<u64>()),
        cost(),
        any::<bool>(),
    )
        .prop_map(
            |(r, status, assignment, activity, requests, tokens, cost, lease)| ChildSnapshot {
                id: r.id,
                generation: r.generation,
                parent_id: Uuid::from_u128(1),
                parent_generation: None,
                depth: 1,
                status,
                profile: Role::Scout,
                cwd: "/work/project".to_owned(),
                assignment,
                activity,
                progress: None,
                streaming: None,
                result: None,
                model: Some("anthropic/claude-sonnet-4".to_owned()),
                effort: None,
                requested_model: None,
                requested_effort: None,
                logical: None,
                prewalk: None,
                telemetry: Telemetry {
                    requests,
                    tokens: tokens.map(|total| Tokens {
                        total,
                        ..Tokens::default()
                    }),
                    cost,
                    ..Telemetry::default()
                },
                error: None,
                transcript: None,
                limits: Limits {
                    deadline_ms: 600_000,
                    requests: 40,
                    tools: 80,
                    depth: 2,
                    spawns: 4,
                },
                limit_reason: None,
                tool_calls: 0,
                spawns: 0,
                writer_lease: lease,
                disposed: status.is_terminal(),
                created_at: 1_700_000_000_000,
                ended_at: status.is_terminal().then_some(1_700_000_009_000),
                outcome: None,
                artifacts: None,
                tools: Vec::new(),
                leaf_tools: Vec::new(),
                skills: Vec::new(),
                capability_denials: Vec::new(),
                pause_reason: None,
                retained_context: false,
                retry: None,
                delivered_at: None,
                window: Window {
                    number: 1,
                    started_at: 1_700_000_000_000,
                    deadline_at: 1_700_000_600_000,
                },
            },
        )
}

fn message() -> impl Strategy<Value = Message> {
    (any::<u128>(), child_ref(), text(), any::<bool>()).prop_map(|(n, r, text, queued)| Message {
        id: MessageId(Uuid::from_u128(n)),
        sender: Party::Root,
        recipient: Party::Child(r),
        text,
        mode: MessageMode::Steer,
        status: if queued {
            ReceiptStatus::Queued
        } else {
            ReceiptStatus::Error
        },
        error: (!queued).then(|| "not running".to_owned()),
    })
}

fn agents() -> impl Strategy<Value = Vec<AgentPresence>> {
    proptest::collection::vec(
        (child_ref(), presence()).prop_map(|(r, presence)| AgentPresence {
            id: r.id,
            generation: r.generation,
            presence,
        }),
        0..3,
    )
}

fn wait_result() -> impl Strategy<Value = WaitResult> {
    prop_oneof![
        (child_ref(), status()).prop_map(|(r, status)| WaitResult::Outcome {
            outcome: WaitOutcome {
                id: r.id,
                generation: r.generation,
                status,
                limit_reason: None,
                pause_reason: None,
            }
        }),
        proptest::collection::vec(message(), 0..3)
            .prop_map(|messages| WaitResult::Messages { messages }),
        message().prop_map(|message| WaitResult::Message { message }),
        Just(WaitResult::Timeout),
        Just(WaitResult::Cancelled),
        Just(WaitResult::Shutdown),
    ]
}

fn snapshots() -> impl Strategy<Value = Vec<ChildSnapshot>> {
    proptest::collection::vec(snapshot(), 0..3)
}

fn reply() -> impl Strategy<Value = Reply> {
    prop_oneof![
        (any::<u64>(), snapshots()).prop_map(|(call, children)| Reply::Admitted {
            call: CallId(call),
            children
        }),
        snapshot().prop_map(|child| Reply::Snapshot {
            child: Box::new(child)
        }),
        snapshots().prop_map(|children| Reply::Stopped { children }),
        message().prop_map(|message| Reply::Message { message }),
        proptest::collection::vec(message(), 0..3).prop_map(|messages| Reply::Inbox { messages }),
        wait_result().prop_map(|result| Reply::Wait { result }),
        status_view().prop_map(|view| Reply::Status {
            view: Box::new(view)
        }),
        Just(Reply::Ok),
    ]
}

fn status_view() -> impl Strategy<Value = StatusView> {
    (snapshot(), snapshots(), agents()).prop_map(|(snapshot, generations, agents)| StatusView {
        snapshot,
        generations,
        agents,
    })
}

fn window_outcome() -> impl Strategy<Value = WindowOutcome> {
    (any::<u64>(), any::<u64>(), snapshots()).prop_map(|(call, request, outcomes)| WindowOutcome {
        call: CallId(call),
        request: RequestId(request),
        initiator: Party::Root,
        delivery: Delivery::Background,
        outcomes,
    })
}

fn stats() -> impl Strategy<Value = FleetStats> {
    (any::<u32>(), any::<u64>(), proptest::option::of(target())).prop_map(
        |(active_permits, queued, writer)| FleetStats {
            active_permits,
            queued,
            writer,
            root_inbox: queued / 2,
            ..FleetStats::default()
        },
    )
}

fn status_result() -> impl Strategy<Value = StatusResult> {
    prop_oneof![
        status_view().prop_map(|v| StatusResult::Generation(Box::new(v))),
        (snapshots(), agents(), stats()).prop_map(|(children, agents, stats)| {
            StatusResult::Fleet(FleetStatus {
                parent_id: Uuid::from_u128(1),
                children,
                agents,
                stats,
                policy: SchedulingPolicy::default(),
            })
        }),
        (
            snapshots(),
            proptest::collection::vec(presence(), 3),
            stats()
        )
            .prop_map(|(children, presences, stats)| {
                let rows = children
                    .iter()
                    .zip(presences)
                    .map(|(s, presence)| SummaryRow {
                        presence: Some(presence),
                        ..SummaryRow::of(s).into_owned()
                    })
                    .collect();
                StatusResult::Summary(slate::control::summary::FleetSummary {
                    parent_id: Uuid::from_u128(1),
                    children: rows,
                    stats,
                    policy: SchedulingPolicy::default(),
                })
            }),
        (snapshots(), proptest::collection::vec(presence(), 3)).prop_map(
            |(children, presences)| {
                let root = Uuid::from_u128(1);
                let rows = children
                    .iter()
                    .zip(presences)
                    .map(|(s, presence)| {
                        let row = SummaryRow {
                            presence: Some(presence),
                            ..SummaryRow::of(s)
                        };
                        slate::control::table::TableRow::of(&row, root).into_owned()
                    })
                    .collect();
                StatusResult::Table(slate::control::table::FleetTable {
                    parent_id: root,
                    rows,
                })
            }
        ),
    ]
}

fn request() -> impl Strategy<Value = Request> {
    let maybe_target = || proptest::option::of(target());
    prop_oneof![
        (
            proptest::collection::vec(1_u32..5, 1..3),
            proptest::option::of((text(), proptest::option::of("[0-9a-f]{1,64}"))),
            proptest::option::of("[0-9a-f]{64}"),
        )
            .prop_map(
                |(protocols, client, capability)| Request::Hello(HelloParams {
                    protocols,
                    client: client.map(|(name, extension)| ClientInfo { name, extension }),
                    capability: capability.map(slate::runtime::Capability::from_presented),
                })
            ),
        Just(Request::Subscribe(NoParams {})),
        (maybe_target(), any::<bool>(), any::<bool>(), any::<bool>()).prop_map(
            |(target, summary, table, text)| {
                Request::Status(StatusParams {
                    target,
                    summary,
                    table,
                    text,
                })
            }
        ),
        Just(Request::Agents(NoParams {})),
        (text(), proptest::option::of(any::<bool>()), any::<bool>()).prop_map(
            |(assignment, background, cancel_on_close)| {
                Request::Delegate(DelegateParams {
                    request: json!({"assignment": assignment, "profile": "scout"}),
                    background,
                    cancel_on_close,
                })
            }
        ),
        target().prop_map(|target| Request::Stop(TargetParams { target })),
        proptest::collection::vec(target(), 0..4)
            .prop_map(|targets| Request::StopMany(StopManyParams { targets })),
        (target(), text()).prop_map(|(target, text)| Request::Steer(SteerParams { target, text })),
        (maybe_target(), text()).prop_map(|(target, text)| Request::Message(MessageParams {
            target,
            text,
            mode: MessageMode::FollowUp,
        })),
        Just(Request::Inbox(NoParams {})),
        (
            // The schema's bounds; the core refuses the rest (`messaging.rs`).
            slate::core::bounds::WAIT_MIN_MS..=slate::core::bounds::WAIT_MAX_MS,
            maybe_target(),
            proptest::option::of(any::<u128>())
        )
            .prop_map(|(timeout_ms, target, message)| Request::Wait(WaitParams {
                timeout_ms,
                target,
                message_id: message.map(|n| MessageRef(MessageId(Uuid::from_u128(n)))),
            })),
        target().prop_map(|target| Request::Park(TargetParams { target })),
        (target(), text())
            .prop_map(|(target, assignment)| Request::Resume(ResumeParams { target, assignment })),
        (target(), text(), any::<bool>()).prop_map(|(target, assignment, schema)| {
            Request::Followup(RenewParams {
                target,
                assignment,
                result_schema: schema.then(|| json!({"type": "object"})),
            })
        }),
        (target(), text()).prop_map(|(target, assignment)| Request::Revive(RenewParams {
            target,
            assignment,
            result_schema: None,
        })),
        (target(), proptest::option::of(any::<u64>()))
            .prop_map(|(target, after)| Request::Transcript(TranscriptParams { target, after })),
        Just(Request::Profiles(NoParams {})),
        Just(Request::Policy(NoParams {})),
        Just(Request::Shutdown(NoParams {})),
        prop_oneof![
            Just(GuardParams::Request {}),
            Just(GuardParams::Compaction {}),
            (text(), text()).prop_map(|(tool, call_id)| GuardParams::Tool { tool, call_id }),
        ]
        .prop_map(Request::Guard),
        json_value().prop_map(|value| Request::Submit(SubmitParams { value })),
        (text(), text()).prop_map(|(call_id, tool)| Request::ParentToolStart(
            ParentToolStartParams { call_id, tool }
        )),
        text().prop_map(|call_id| Request::ParentToolEnd(ParentToolEndParams { call_id })),
    ]
}

/// Any JSON value a model might submit (floats with an exact short form only: the round trip
/// is then exact).
fn json_value() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i64>().prop_map(Value::from),
        (0_u32..1_000_000).prop_map(|n| Value::from(f64::from(n) / 8.0)),
        text().prop_map(Value::String),
    ];
    leaf.prop_recursive(3, 16, 4, |inner| {
        prop_oneof![
            proptest::collection::vec(inner.clone(), 0..4).prop_map(Value::Array),
            proptest::collection::btree_map("[a-z/~]{0,6}", inner, 0..4)
                .prop_map(|m| Value::Object(m.into_iter().collect())),
        ]
    })
}

fn event() -> impl Strategy<Value = Event> {
    prop_oneof![
        (snapshot(), any::<bool>()).prop_map(|(child, sdk)| Event::Registry {
            event: Box::new(RegistryEvent {
                kind: if sdk {
                    RegistryEventKind::Sdk
                } else {
                    RegistryEventKind::Changed
                },
                child,
                event: sdk.then(|| json!({"type": "turn_end"})),
            })
        }),
        window_outcome().prop_map(|outcome| {
            let preview = slate::policy::preview::preview(&outcome.outcomes);
            Event::Outcome {
                outcome: Box::new(outcome),
                preview,
            }
        }),
        any::<u64>().prop_map(|missed| Event::Lagged { missed }),
        Just(Event::ShutdownComplete),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(96))]

    #[test]
    fn every_request_round_trips_through_its_params(request in request()) {
        let method = request.method();
        let params = request.params().unwrap();
        let checked = with_schema(|s| s.params(method, &params));
        prop_assert!(checked.is_ok(), "{}", checked.unwrap_err());
        prop_assert_eq!(Request::parse(method, params).unwrap(), request.clone());
        // The line a client writes carries the same params.
        let line = request.encode_line(9).unwrap();
        let value: Value = serde_json::from_slice(&line).unwrap();
        prop_assert_eq!(&value["method"], method);
        prop_assert_eq!(value["id"].as_u64(), Some(9));
    }

    #[test]
    fn every_core_reply_round_trips(reply in reply()) {
        for name in ["stop", "stopMany", "steer", "message", "inbox", "wait", "park", "resume", "followup", "revive"] {
            round_trip(&format!("/x-methods/{name}/result"), &reply)?;
        }
    }

    #[test]
    fn status_answers_round_trip(result in status_result()) {
        round_trip("/x-methods/status/result", &result)?;
    }

    #[test]
    fn delegate_answers_round_trip(reply in reply(), outcome in window_outcome(), background in any::<bool>()) {
        let result = if background {
            DelegateResult::Background(reply)
        } else {
            let preview = slate::policy::preview::preview(&outcome.outcomes);
            DelegateResult::Foreground(Box::new(DelegateOutcome { admitted: reply, outcome, preview }))
        };
        round_trip("/x-methods/delegate/result", &result)?;
    }

    #[test]
    fn the_other_answers_round_trip(
        agents in agents(),
        target in target(),
        protocol in 1_u32..9,
        words in text(),
    ) {
        round_trip("/x-methods/agents/result", &agents)?;
        round_trip("/x-methods/hello/result", &HelloResult {
            protocol,
            server: format!("slate {words}"),
            parent_id: Uuid::from_u128(7),
            cwd: words.clone(),
            pid: protocol,
            actor: if protocol % 2 == 0 {
                slate::control::caller::CallerView::Operator
            } else {
                slate::control::caller::CallerView::Child { target: target.to_string() }
            },
        })?;
        round_trip("/x-methods/transcript/result", &TranscriptResult {
            target,
            messages: vec![json!({"role": "user", "content": words})],
            cursor: u64::from(protocol),
            restarted: protocol % 2 == 1,
        })?;
        round_trip("/x-methods/subscribe/result", &SubscribeResult { subscribed: true })?;
        round_trip("/x-methods/shutdown/result", &ShutdownResult { shutting_down: true })?;
        round_trip("/x-methods/policy/result", &SchedulingPolicy::default())?;
        round_trip("/x-methods/profiles/result", &ProfilesResult(json!({"toolPolicy": {}, "profiles": []})))?;
        round_trip("/x-methods/guard/result", &GuardResult { allow: true, reason: None })?;
        round_trip("/x-methods/guard/result", &GuardResult {
            allow: false,
            reason: Some(format!("out of budget: {words}")),
        })?;
        round_trip("/x-methods/parentToolStart/result", &ParentToolStartResult { reserved: protocol % 2 == 0 })?;
        round_trip("/x-methods/parentToolEnd/result", &ParentToolEndResult { released: protocol % 2 == 1 })?;
        for status in [SubmitStatus::Submitted, SubmitStatus::Invalid, SubmitStatus::Duplicate] {
            round_trip("/x-methods/submit/result", &SubmitResult {
                status,
                attempts: protocol,
                errors: vec![format!("/{words}: expected integer, found string \"42\"")],
                message: words.clone(),
            })?;
        }
    }

    #[test]
    fn every_notification_round_trips(event in event(), missed in any::<u64>()) {
        round_trip("/x-notification", &Notification::Event(event))?;
        round_trip("/x-notification", &Notification::Lagged(Lagged { missed }))?;
    }
}

#[test]
fn a_wrong_reply_fails_the_schema_and_the_typed_read() {
    // A renamed member must fail loudly, not read as nothing.
    let renamed = json!({"kind": "message", "msg": {}});
    assert!(with_schema(|s| s.result("steer", &renamed)).is_err());
    assert!(serde_json::from_value::<Reply>(renamed).is_err());
    let stats =
        json!({"parentId": Uuid::nil(), "children": [], "agents": [], "stats": {}, "policy": {}});
    assert!(with_schema(|s| s.result("status", &stats)).is_err());
    assert!(serde_json::from_value::<StatusResult>(stats).is_err());
}

/// The schema is portable (issue 22 item 11): only formats JSON Schema defines, so a strict
/// validator (Ajv's strict mode) accepts it; unsigned integers say so with `minimum`.
#[test]
fn the_protocol_schema_uses_only_standard_formats() {
    fn walk(value: &serde_json::Value, formats: &mut Vec<String>) {
        match value {
            serde_json::Value::Object(map) => {
                if let Some(f) = map.get("format").and_then(serde_json::Value::as_str) {
                    formats.push(f.to_owned());
                }
                map.values().for_each(|v| walk(v, formats));
            }
            serde_json::Value::Array(items) => items.iter().for_each(|v| walk(v, formats)),
            _ => {}
        }
    }
    let mut formats = Vec::new();
    walk(&protocol_schema(), &mut formats);
    formats.sort();
    formats.dedup();
    assert_eq!(
        formats,
        ["uuid"],
        "non-standard formats in the protocol schema"
    );
    let wait = protocol_schema()["$defs"].to_string();
    assert!(
        wait.contains("\"minimum\":0"),
        "unsigned integers keep their minimum"
    );
}

/// Bounds are JSON Schema's own `minimum`/`maximum` (issue 22 item 11): `wait`'s `timeoutMs`
/// says 1..=60000, exactly what the core enforces, and no `x-minimum`/`x-maximum` (which a
/// validator ignores) is left anywhere. The vendor keywords that stay have no standard
/// counterpart (`x-maxBytes` counts UTF-8 bytes, `maxLength` characters) or annotate the
/// document itself; the list is exact, so a new one is a decision.
#[test]
fn the_protocol_schema_states_bounds_as_minimum_and_maximum() {
    fn walk(value: &serde_json::Value, at: &str, found: &mut Vec<String>) {
        match value {
            serde_json::Value::Object(map) => {
                for (key, inner) in map {
                    if key.starts_with("x-") {
                        found.push(if at.is_empty() {
                            key.clone()
                        } else {
                            format!("(property) {key}")
                        });
                    }
                    walk(inner, &format!("{at}/{key}"), found);
                }
            }
            serde_json::Value::Array(items) => {
                for item in items {
                    walk(item, &format!("{at}/[]"), found);
                }
            }
            _ => {}
        }
    }
    let schema = protocol_schema();
    let timeout = &schema["$defs"]["WaitParams"]["properties"]["timeoutMs"];
    assert_eq!(
        timeout["minimum"],
        slate::core::bounds::WAIT_MIN_MS,
        "{timeout}"
    );
    assert_eq!(
        timeout["maximum"],
        slate::core::bounds::WAIT_MAX_MS,
        "{timeout}"
    );
    assert_eq!(timeout["type"], "integer", "{timeout}");
    let mut found = Vec::new();
    walk(&schema, "", &mut found);
    found.sort();
    found.dedup();
    assert_eq!(
        found,
        [
            "(property) x-maxBytes",
            "x-error",
            "x-methods",
            "x-notification",
            "x-protocol"
        ],
        "vendor keywords in the protocol schema"
    );
    // The schema and the core agree at the edges.
    with_schema(|s| {
        assert!(s.params("wait", &json!({"timeoutMs": 1})).is_ok());
        assert!(s.params("wait", &json!({"timeoutMs": 60_000})).is_ok());
        assert!(s.params("wait", &json!({"timeoutMs": 0})).is_err());
        assert!(s.params("wait", &json!({"timeoutMs": 60_001})).is_err());
    });
}

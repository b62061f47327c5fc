//! The submission protocol, driven through the coordinator: attempts, immutability,
//! duplicates, finalization, publication and the priority of failures.

use serde_json::{Value, json};
use slate::core::{
    ChildRef, ChildSnapshot, Coordinator, Effect, Input, LimitOverrides, LimitReason, Millis,
    Party, Renewal, Reply, RequestId, Role, Status, SubmitStatus, TaskSpec, Validation,
    WorkerEvent,
};
use slate::policy::scheduling::SchedulingPolicy;
use slate::policy::schema::{CheckedSchema, validate_value};
use uuid::Uuid;

use crate::checked;

/// A coordinator, its clock and every effect it emitted.
struct Run {
    coord: Coordinator,
    now: Millis,
    next_request: u64,
    log: Vec<Effect>,
}

fn summary_schema() -> Value {
    json!({
        "type": "object",
        "properties": {"summary": {"type": "string", "minLength": 1}, "count": {"type": "integer"}},
        "required": ["summary"],
        "additionalProperties": false
    })
}

impl Run {
    fn new() -> Self {
        let root = Uuid::from_u128(0x0b6a_0000_0000_4000_8000_0000_0000_00aa);
        Self {
            coord: Coordinator::new(root, SchedulingPolicy::default(), 7).expect("valid policy"),
            now: 1_000,
            next_request: 1,
            log: Vec::new(),
        }
    }

    fn handle(&mut self, input: Input) -> Vec<Effect> {
        self.now += 1;
        let effects = self.coord.handle(input, self.now);
        self.log.extend(effects.iter().cloned());
        effects
    }

    fn request(&mut self) -> RequestId {
        self.next_request += 1;
        RequestId(self.next_request)
    }

    /// Admit one root task, bring it to `running`.
    fn running(&mut self, spec: TaskSpec) -> ChildRef {
        let request = self.request();
        let effects = self.handle(Input::Admit {
            request,
            actor: Party::Root,
            tasks: vec![spec],
            background: false,
        });
        let child = admitted(&effects);
        self.event(child, WorkerEvent::Ready { transcript: None });
        assert_eq!(self.snap(child).status, Status::Running);
        child
    }

    fn event(&mut self, child: ChildRef, event: WorkerEvent) -> Vec<Effect> {
        self.handle(Input::Worker { child, event })
    }

    /// What the `submit_result` backend does: one tool execution, native validation, the
    /// validated attempt reported to the core.
    fn submit(&mut self, child: ChildRef, schema: &CheckedSchema, value: Value) {
        let name = "submit_result".to_owned();
        self.event(child, WorkerEvent::ToolStart { name: name.clone() });
        let errors = validate_value(schema, &value);
        let is_error = !errors.is_empty();
        self.event(child, WorkerEvent::Submission { value, errors });
        self.event(child, WorkerEvent::ToolEnd { name, is_error });
    }

    fn settle(&mut self, child: ChildRef, error: Option<&str>) -> Vec<Effect> {
        self.event(
            child,
            WorkerEvent::AssistantMessage {
                text: "done".into(),
                usage: None,
            },
        );
        self.event(
            child,
            WorkerEvent::Settled {
                error: error.map(str::to_owned),
            },
        )
    }

    fn publish_and_exit(&mut self, child: ChildRef) {
        let structured = self.log.iter().rev().find_map(|e| match e {
            Effect::Publish {
                child: c,
                structured,
                ..
            } if *c == child => Some(structured.clone()),
            _ => None,
        });
        if let Some(structured) = structured {
            let base = format!("/t/{}", child.directory_name());
            self.handle(Input::Published {
                child,
                result: Ok(slate::core::Artifacts {
                    text: Some(format!("{base}/result.txt")),
                    structured: structured.map(|_| format!("{base}/structured.json")),
                    error: None,
                }),
            });
        }
        self.event(
            child,
            WorkerEvent::Exited {
                reason: "exit 0".into(),
            },
        );
    }

    fn snap(&self, child: ChildRef) -> ChildSnapshot {
        self.coord.snapshot(child).expect("a snapshot")
    }

    fn outcome(&self, child: ChildRef) -> slate::core::StructuredOutcome {
        self.snap(child)
            .outcome
            .expect("a resultSchema task has an outcome")
    }
}

fn admitted(effects: &[Effect]) -> ChildRef {
    effects
        .iter()
        .find_map(|e| match e {
            Effect::Reply {
                result: Ok(Reply::Admitted { children, .. }),
                ..
            } => Some(children[0].child_ref()),
            _ => None,
        })
        .expect("admitted")
}

fn schema_task(schema: &CheckedSchema) -> TaskSpec {
    let mut spec = TaskSpec::new("Summarize the repo", Role::Scout, "/work/repo");
    spec.result_schema = Some(schema.as_value().clone());
    spec
}

/// The `structured` value of every `Publish` effect in `effects`.
fn published_structured(effects: &[Effect]) -> Vec<Option<Value>> {
    effects
        .iter()
        .filter_map(|e| match e {
            Effect::Publish { structured, .. } => Some(structured.clone()),
            _ => None,
        })
        .collect()
}

const MISSING: &str = "missing required result";

#[test]
fn attempts_count_each_validation_and_the_first_valid_value_is_immutable() {
    let schema = checked(&summary_schema());
    let mut run = Run::new();
    let a = run.running(schema_task(&schema));
    let fresh = run.outcome(a);
    assert_eq!(
        (fresh.validation, fresh.attempts, fresh.finalized),
        (Validation::Awaiting, 0, false)
    );

    run.submit(a, &schema, json!({"count": "3"}));
    let o = run.outcome(a);
    assert_eq!((o.validation, o.attempts), (Validation::Invalid, 1));
    assert_eq!(
        o.errors,
        vec![
            "/summary: required property is missing",
            "/count: expected integer, found string \"3\"",
        ]
    );
    assert!(o.value.is_none());

    run.submit(a, &schema, json!({"summary": ""}));
    let o = run.outcome(a);
    assert_eq!((o.validation, o.attempts), (Validation::Invalid, 2));
    assert_eq!(
        o.errors,
        vec!["/summary: must be at least 1 characters long, found 0"]
    );

    let first = json!({"summary": "three crates", "count": 3.0});
    run.submit(a, &schema, first.clone());
    let o = run.outcome(a);
    assert_eq!((o.validation, o.attempts), (Validation::Submitted, 3));
    assert!(
        o.errors.is_empty(),
        "a valid attempt clears the earlier errors"
    );
    assert_eq!(o.value.as_ref(), Some(&first));

    // Duplicates, valid or not, neither count nor replace.
    run.submit(a, &schema, json!({"summary": "another"}));
    run.submit(a, &schema, json!({"nope": true}));
    let o = run.outcome(a);
    assert_eq!((o.validation, o.attempts), (Validation::Submitted, 3));
    assert_eq!(o.value.as_ref(), Some(&first));
    assert!(o.errors.is_empty());
    assert!(!o.finalized);
    // Each submission was an executable tool call.
    assert_eq!(run.snap(a).tool_calls, 5);
}

#[test]
fn a_submitted_value_settles_is_published_and_finalizes_at_disposal() {
    let schema = checked(&summary_schema());
    let mut run = Run::new();
    let a = run.running(schema_task(&schema));
    let value = json!({"summary": "ok"});
    run.submit(a, &schema, value.clone());
    let effects = run.settle(a, None);
    assert_eq!(published_structured(&effects), vec![Some(value.clone())]);
    let snap = run.snap(a);
    assert_eq!(snap.status, Status::Draining);
    assert!(!snap.disposed);
    assert!(
        !run.outcome(a).finalized,
        "not finalized while publication drains"
    );
    assert!(
        snap.artifacts.is_none(),
        "no artifact reference before publication"
    );

    run.publish_and_exit(a);
    let snap = run.snap(a);
    assert_eq!(snap.status, Status::Settled);
    assert!(snap.disposed);
    assert!(snap.error.is_none());
    let artifacts = snap.artifacts.expect("artifacts");
    assert!(
        artifacts
            .structured
            .is_some_and(|p| p.ends_with("/structured.json"))
    );
    let o = run.outcome(a);
    assert_eq!(
        (o.validation, o.attempts, o.finalized),
        (Validation::Submitted, 1, true)
    );
    assert_eq!(o.value, Some(value));
}

#[test]
fn missing_or_invalid_submission_at_normal_completion_fails_with_the_missing_result_error() {
    for submit in [None, Some(json!({"summary": 7}))] {
        let schema = checked(&summary_schema());
        let mut run = Run::new();
        let a = run.running(schema_task(&schema));
        if let Some(value) = submit.clone() {
            run.submit(a, &schema, value);
        }
        let effects = run.settle(a, None);
        assert_eq!(
            published_structured(&effects),
            vec![None],
            "{submit:?}: result.txt is published, structured.json is not"
        );
        assert!(!run.outcome(a).finalized);
        run.publish_and_exit(a);
        let snap = run.snap(a);
        assert_eq!(snap.status, Status::Failed, "{submit:?}");
        assert!(
            snap.error
                .as_deref()
                .is_some_and(|e| e.starts_with(MISSING)),
            "{submit:?}: {:?}",
            snap.error
        );
        assert!(snap.disposed);
        let o = run.outcome(a);
        assert!(o.finalized);
        assert!(o.value.is_none());
        if submit.is_some() {
            assert_eq!((o.validation, o.attempts), (Validation::Invalid, 1));
            assert_eq!(o.errors, vec!["/summary: expected string, found number 7"]);
        } else {
            assert_eq!((o.validation, o.attempts), (Validation::Awaiting, 0));
        }
    }
}

#[test]
fn provider_failure_takes_priority_over_submission() {
    for submitted in [false, true] {
        let schema = checked(&summary_schema());
        let mut run = Run::new();
        let a = run.running(schema_task(&schema));
        if submitted {
            run.submit(a, &schema, json!({"summary": "kept as evidence"}));
        }
        run.settle(a, Some("provider error: 529 overloaded"));
        run.publish_and_exit(a);
        let snap = run.snap(a);
        assert_eq!(snap.status, Status::Failed);
        assert_eq!(
            snap.error.as_deref(),
            Some("provider error: 529 overloaded")
        );
        let o = run.outcome(a);
        assert!(o.finalized);
        assert_eq!(
            o.validation == Validation::Submitted,
            submitted,
            "retained as evidence only"
        );
    }
}

#[test]
fn cancellation_takes_priority_over_submission() {
    for submitted in [false, true] {
        let schema = checked(&summary_schema());
        let mut run = Run::new();
        let a = run.running(schema_task(&schema));
        if submitted {
            run.submit(a, &schema, json!({"summary": "x"}));
        }
        let request = run.request();
        run.handle(Input::Stop {
            request,
            actor: Party::Root,
            target: a,
        });
        assert!(!run.outcome(a).finalized, "draining, not yet disposed");
        run.event(
            a,
            WorkerEvent::Settled {
                error: Some("aborted".into()),
            },
        );
        run.publish_and_exit(a);
        let snap = run.snap(a);
        assert_eq!(snap.status, Status::Cancelled, "submitted: {submitted}");
        assert!(!snap.error.as_deref().unwrap_or("").starts_with(MISSING));
        assert!(run.outcome(a).finalized);
    }
}

#[test]
fn limits_take_priority_over_submission() {
    let schema = checked(&summary_schema());
    let mut run = Run::new();
    let mut spec = schema_task(&schema);
    spec.limits = LimitOverrides {
        tools: Some(1),
        ..LimitOverrides::default()
    };
    let a = run.running(spec);
    // The submission is the one allowed tool call; the next tool exceeds the limit.
    run.submit(a, &schema, json!({"summary": "x"}));
    run.event(
        a,
        WorkerEvent::ToolStart {
            name: "read".into(),
        },
    );
    run.event(
        a,
        WorkerEvent::Settled {
            error: Some("aborted".into()),
        },
    );
    run.publish_and_exit(a);
    let snap = run.snap(a);
    assert_eq!(snap.status, Status::Cancelled);
    assert_eq!(snap.limit_reason, Some(LimitReason::Tools));
    let o = run.outcome(a);
    assert!(o.finalized);
    assert_eq!(
        o.validation,
        Validation::Submitted,
        "kept as evidence, not success"
    );
}

#[test]
fn a_submission_over_the_tool_limit_is_never_validated() {
    let schema = checked(&summary_schema());
    let mut run = Run::new();
    let mut spec = schema_task(&schema);
    spec.limits = LimitOverrides {
        tools: Some(1),
        ..LimitOverrides::default()
    };
    let a = run.running(spec);
    run.event(
        a,
        WorkerEvent::ToolStart {
            name: "read".into(),
        },
    );
    // The tool guard runs before the tool: the call over the limit cancels instead of
    // reaching validation, so it is neither a tool call nor an attempt.
    run.event(
        a,
        WorkerEvent::ToolStart {
            name: "submit_result".into(),
        },
    );
    let snap = run.snap(a);
    assert_eq!(snap.tool_calls, 1);
    assert_eq!(run.outcome(a).attempts, 0);
    assert_eq!(snap.limit_reason, Some(LimitReason::Tools));
    assert_eq!(snap.status, Status::Draining);
}

#[test]
fn setup_failure_and_shutdown_finalize_the_protocol() {
    let schema = checked(&summary_schema());
    let mut run = Run::new();
    let request = run.request();
    let effects = run.handle(Input::Admit {
        request,
        actor: Party::Root,
        tasks: vec![schema_task(&schema)],
        background: false,
    });
    let a = admitted(&effects);
    run.event(
        a,
        WorkerEvent::SetupFailed {
            error: "no auth".into(),
        },
    );
    run.event(
        a,
        WorkerEvent::Exited {
            reason: "exit 1".into(),
        },
    );
    let snap = run.snap(a);
    assert_eq!(snap.status, Status::Failed);
    assert!(
        snap.error
            .as_deref()
            .is_some_and(|e| e.starts_with("setup failed"))
    );
    assert!(run.outcome(a).finalized);

    let b = run.running(schema_task(&schema));
    let request = run.request();
    run.handle(Input::Shutdown { request });
    assert!(!run.outcome(b).finalized);
    run.event(
        b,
        WorkerEvent::Settled {
            error: Some("aborted".into()),
        },
    );
    run.publish_and_exit(b);
    let snap = run.snap(b);
    assert_eq!(snap.status, Status::Cancelled);
    assert!(run.outcome(b).finalized);
}

#[test]
fn schema_free_tasks_have_no_outcome_and_publish_no_structured_value() {
    let mut run = Run::new();
    let a = run.running(TaskSpec::new("Look around", Role::Scout, "/work/repo"));
    run.event(
        a,
        WorkerEvent::Submission {
            value: json!({"summary": "ignored"}),
            errors: Vec::new(),
        },
    );
    assert!(run.snap(a).outcome.is_none());
    let effects = run.settle(a, None);
    assert_eq!(published_structured(&effects), vec![None]);
    run.publish_and_exit(a);
    assert_eq!(run.snap(a).status, Status::Settled);
}

#[test]
fn each_renewed_generation_starts_with_fresh_submission_state() {
    let schema = checked(&summary_schema());
    let mut run = Run::new();
    let a = run.running(schema_task(&schema));
    run.submit(a, &schema, json!({"summary": "first"}));
    run.settle(a, None);
    run.publish_and_exit(a);
    assert_eq!(run.snap(a).status, Status::Settled);

    let request = run.request();
    let effects = run.handle(Input::Followup {
        request,
        actor: Party::Root,
        target: a,
        renewal: Renewal::keep_grants("Summarize again"),
    });
    let next = admitted(&effects);
    assert_eq!(next.generation, 2);
    let o = run.outcome(next);
    assert_eq!(
        (o.validation, o.attempts, o.finalized),
        (Validation::Awaiting, 0, false)
    );
    assert!(o.value.is_none() && o.errors.is_empty());
    // The previous generation keeps its closed outcome.
    let old = run.outcome(a);
    assert!(old.finalized && old.value.is_some());
}

// ---- the `submit` request: the same rules, answered --------------------------------------

impl Run {
    /// What a pi worker's `submit` does: the value validated by policy, then `Input::Submit`
    /// (the tool execution itself went through the tool guard, as any tool does).
    fn submit_request(
        &mut self,
        child: ChildRef,
        schema: &CheckedSchema,
        value: Value,
    ) -> Result<Reply, slate::core::Refusal> {
        let errors = validate_value(schema, &value);
        let request = self.request();
        let effects = self.handle(Input::Submit {
            request,
            child,
            value,
            errors,
        });
        effects
            .into_iter()
            .find_map(|e| match e {
                Effect::Reply { request: r, result } if r == request => Some(result),
                _ => None,
            })
            .expect("submit is answered at once")
    }
}

fn receipt(reply: &Result<Reply, slate::core::Refusal>) -> (SubmitStatus, u32, &[String], &str) {
    match reply {
        Ok(Reply::Submit {
            status,
            attempts,
            errors,
            message,
        }) => (*status, *attempts, errors, message),
        other => panic!("submit answered {other:?}"),
    }
}

#[test]
fn the_submit_request_answers_each_attempt_with_the_rules_of_the_submission_event() {
    let schema = checked(&summary_schema());
    let attempts = [
        json!({"count": "3"}),
        json!({"summary": "three crates", "count": 3}),
        json!({"summary": "a replacement"}),
        json!({"nope": true}),
    ];
    let mut by_request = Run::new();
    let mut by_event = Run::new();
    let a = by_request.running(schema_task(&schema));
    let b = by_event.running(schema_task(&schema));
    let mut replies = Vec::new();
    for value in attempts {
        replies.push(by_request.submit_request(a, &schema, value.clone()));
        let errors = validate_value(&schema, &value);
        by_event.event(b, WorkerEvent::Submission { value, errors });
        assert_eq!(by_request.outcome(a), by_event.outcome(b), "one rule");
    }

    let (status, n, errors, message) = receipt(&replies[0]);
    assert_eq!((status, n), (SubmitStatus::Invalid, 1));
    assert_eq!(
        errors,
        [
            "/summary: required property is missing",
            "/count: expected integer, found string \"3\"",
        ]
    );
    assert!(
        message.starts_with("invalid: attempt 1 does not match the resultSchema (2 errors")
            && message.contains("\n/summary: required property is missing\n")
            && message.contains("\n/count: expected integer, found string \"3\"\n")
            && message.contains("call submit_result again")
            && message.contains("remaining request, tool and deadline limits"),
        "{message}"
    );

    let (status, n, errors, message) = receipt(&replies[1]);
    assert_eq!((status, n), (SubmitStatus::Submitted, 2));
    assert!(errors.is_empty());
    assert!(message.contains("cannot be replaced"), "{message}");

    for reply in &replies[2..] {
        let (status, n, errors, message) = receipt(reply);
        assert_eq!((status, n), (SubmitStatus::Duplicate, 2), "not an attempt");
        assert!(
            errors.is_empty(),
            "a duplicate is not validated against: {errors:?}"
        );
        assert!(
            message.contains("a valid result was already submitted and cannot be replaced"),
            "{message}"
        );
    }
    assert_eq!(
        by_request.outcome(a).value,
        Some(json!({"summary": "three crates", "count": 3}))
    );
    assert_eq!(
        by_request.snap(a).tool_calls,
        0,
        "submit itself counts no tool"
    );
}

#[test]
fn thirty_two_errors_at_most_are_answered_and_kept() {
    let schema = checked(&json!({
        "type": "object",
        "additionalProperties": {"type": "integer"}
    }));
    let mut run = Run::new();
    let a = run.running(schema_task(&schema));
    let value: serde_json::Map<String, Value> =
        (0..40).map(|i| (format!("k{i:02}"), json!("x"))).collect();
    let reply = run.submit_request(a, &schema, Value::Object(value));
    let (status, _, errors, message) = receipt(&reply);
    assert_eq!(status, SubmitStatus::Invalid);
    assert_eq!(errors.len(), 32);
    assert!(message.contains("(32 errors"), "{message}");
    assert_eq!(run.outcome(a).errors.len(), 32);
}

#[test]
fn submit_is_refused_without_a_schema_after_the_prompt_resolved_and_for_a_stranger() {
    let schema = checked(&summary_schema());
    let mut run = Run::new();
    let free = run.running(TaskSpec::new("Look around", Role::Scout, "/work/repo"));
    let before = run.coord.clone();
    let refused = run.submit_request(free, &schema, json!({"summary": "x"}));
    assert_eq!(refused.unwrap_err().code(), "no-result-schema");
    assert!(run.coord == before, "a refused submit changes nothing");

    let a = run.running(schema_task(&schema));
    run.settle(a, None);
    let refused = run.submit_request(a, &schema, json!({"summary": "late"}));
    let refusal = refused.unwrap_err();
    assert_eq!(refusal.code(), "actor-ended");
    assert!(
        refusal
            .to_string()
            .starts_with(&format!("submit: {a} has ended")),
        "{refusal}"
    );
    assert_eq!(
        run.outcome(a).attempts,
        0,
        "a late submission is not an attempt"
    );
    run.publish_and_exit(a);
    assert_eq!(
        run.submit_request(a, &schema, json!({"summary": "later"}))
            .unwrap_err()
            .code(),
        "actor-ended"
    );
    assert_eq!(
        run.snap(a).status,
        Status::Failed,
        "still the missing result"
    );

    let stranger = ChildRef::new(Uuid::from_u128(5), 1);
    assert_eq!(
        run.submit_request(stranger, &schema, json!({"summary": "x"}))
            .unwrap_err()
            .code(),
        "unknown-identity"
    );
}

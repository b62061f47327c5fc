//! Logical models through the control service's `delegate` [002 Action contract; Ownership]:
//! the session's routing resolves the task, the snapshot keeps the requested pair and the
//! logical action, a success publishes the remembered provider, and blocked routing refuses
//! logical work (naming the rule and `slate effective`) while exact selections still run.

#![allow(clippy::unwrap_used, reason = "test fixtures fail loudly")]

#[path = "support/service_fixture.rs"]
mod service_fixture;
use service_fixture::{loaded, models};
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use serde_json::{Value, json};
use slate::control::service::Service;
use slate::control::session_routing::SessionRouting;
use slate::policy::capabilities::pi_offered_tools;
use slate::policy::routing::{ProjectFile, SlateFile, resolve};
use slate::policy::scheduling::SchedulingPolicy;
use slate::runtime::{RuntimeConfig, spawn};
use slate::sim::{Script, Step};
use slate::worker::sim::{ScriptBook, SimBackend};

const DUO: &str = r#"{"router": {"models": {"include": [], "add": [{
    "model": "duo", "capabilityRating": 50, "effort": "low", "costRating": 10,
    "preferredProvider": "beta", "providers": {"alpha": "duo-a", "beta": "duo-b"},
    "guidelines": [], "cautions": []}]}}}"#;

fn book() -> ScriptBook {
    ScriptBook {
        scripts: Vec::new(),
        default: Script {
            setup_error: None,
            steps: vec![Step::Request {
                ms: 5,
                text: "done".into(),
                input_tokens: 10,
                output_tokens: 2,
                cost: None,
            }],
        },
        resumed: None,
    }
}

fn base(name: &str) -> PathBuf {
    service_fixture::base("slate-ctl-logical", name)
}

async fn call(service: &Service, method: &str, params: Value) -> Result<Value, String> {
    service_fixture::operator_call(service, method, params)
        .await
        .map_err(|e| e.to_string())
}

fn snapshot(answer: &Value) -> &Value {
    &answer["outcome"]["outcomes"][0]
}

#[tokio::test]
async fn a_logical_task_runs_on_its_first_route_and_its_success_is_remembered() {
    let base = base("ok");
    let config = RuntimeConfig {
        root_id: uuid::Uuid::new_v4(),
        policy: SchedulingPolicy::default(),
        id_seed: 3,
        delegation_dir: base.join("delegation"),
        event_log: false,
        kill_grace: Duration::from_millis(300),
    };
    let (rt, join) = spawn(config, Arc::new(SimBackend::new(book()))).unwrap();
    let report = resolve(
        &SlateFile {
            label: "/agent/slate.json",
            bytes: Some(DUO.as_bytes()),
        },
        &ProjectFile::Absent,
    );
    let routing = SessionRouting::new(Some(report));
    let service = Service::new(
        rt.clone(),
        loaded(&base.join("work"), &base.join("agent")),
        models(),
        pi_offered_tools(),
    )
    .with_routing(Arc::clone(&routing));

    let answer = call(
        &service,
        "delegate",
        json!({"request": {"assignment": "survey", "profile": "scout", "model": "duo", "reason": "two providers, cheap"}}),
    )
    .await
    .unwrap();
    let s = snapshot(&answer);
    assert_eq!(s["status"], "settled", "{s:#}");
    assert_eq!(s["requestedModel"], "beta/duo-b");
    assert_eq!(s["requestedEffort"], "low");
    assert_eq!(s["model"], "beta/duo-b");
    assert_eq!(s["effort"], "low");
    assert_eq!(
        s["logical"],
        json!({"model": "duo", "reason": "two providers, cheap", "admission": 1,
               "routeModel": "duo", "routeProvider": "beta", "switches": 0})
    );
    // Publication follows the registry event of the settled generation.
    let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
    while !routing.remembered().contains_key("duo") {
        assert!(tokio::time::Instant::now() < deadline, "never published");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    assert_eq!(routing.remembered()["duo"], "beta");

    // An exact selection keeps the parent's pair and has no logical action.
    let answer = call(
        &service,
        "delegate",
        json!({"request": {"assignment": "survey", "profile": "scout"}}),
    )
    .await
    .unwrap();
    let s = snapshot(&answer);
    assert_eq!(s["requestedModel"], "fake/model");
    assert!(s.get("logical").is_none(), "{s:#}");

    rt.shutdown().await.unwrap();
    join.await.unwrap();
    let _ = std::fs::remove_dir_all(&base);
}

#[tokio::test]
async fn blocked_routing_refuses_logical_work_but_not_exact_selections() {
    let base = base("blocked");
    let config = RuntimeConfig {
        root_id: uuid::Uuid::new_v4(),
        policy: SchedulingPolicy::default(),
        id_seed: 4,
        delegation_dir: base.join("delegation"),
        event_log: false,
        kill_grace: Duration::from_millis(300),
    };
    let (rt, join) = spawn(config, Arc::new(SimBackend::new(book()))).unwrap();
    let report = resolve(
        &SlateFile {
            label: "/agent/slate.json",
            bytes: Some(br#"{"router": {"bogus": true}}"#),
        },
        &ProjectFile::Absent,
    );
    assert!(report.blocked);
    let service = Service::new(
        rt.clone(),
        loaded(&base.join("work"), &base.join("agent")),
        models(),
        pi_offered_tools(),
    )
    .with_routing(SessionRouting::new(Some(report)));
    let refusal = call(
        &service,
        "delegate",
        json!({"request": {"assignment": "survey", "profile": "scout", "model": "luna-6", "reason": "cheap"}}),
    )
    .await
    .unwrap_err();
    assert!(refusal.contains("invalid-request"), "{refusal}");
    assert!(refusal.contains("$.model"), "{refusal}");
    assert!(
        refusal.contains("logical work is refused while the routing policy is blocked"),
        "{refusal}"
    );
    assert!(refusal.contains("slate effective"), "{refusal}");
    let answer = call(
        &service,
        "delegate",
        json!({"request": {"assignment": "survey", "profile": "scout"}}),
    )
    .await
    .unwrap();
    assert_eq!(snapshot(&answer)["status"], "settled");
    rt.shutdown().await.unwrap();
    join.await.unwrap();
    let _ = std::fs::remove_dir_all(&base);
}

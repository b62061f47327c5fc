//! `hostExtensions` through the control service (spec 000 "Worker extensions"): the session's
//! `workerExtensions` patterns select from the units the host session reported, matched units
//! that cannot be loaded are withheld with the reason, the doctrine line names what workers
//! gain, the selection is what every worker started afterwards loads, and it is resolved once.

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
use slate::sim::Script;
use slate::worker::sim::{ScriptBook, SimBackend};

fn base(name: &str) -> PathBuf {
    service_fixture::base("slate-ctl-hostext", name)
}

async fn call(service: &Service, method: &str, params: Value) -> Result<Value, Value> {
    service_fixture::operator_call(service, method, params).await
}

fn unit(source: &str, path: &str, tools: &[&str]) -> Value {
    let tools: Vec<Value> = tools
        .iter()
        .map(|name| json!({"name": name, "path": path}))
        .collect();
    json!({"source": source, "path": path, "tools": tools})
}

#[tokio::test]
async fn the_session_patterns_select_host_units_once() {
    let base = base("select");
    let config = RuntimeConfig {
        root_id: uuid::Uuid::new_v4(),
        policy: SchedulingPolicy::default(),
        id_seed: 5,
        delegation_dir: base.join("delegation"),
        event_log: false,
        kill_grace: Duration::from_millis(300),
    };
    let book = ScriptBook {
        scripts: Vec::new(),
        default: Script {
            setup_error: None,
            steps: Vec::new(),
        },
        resumed: None,
    };
    let (rt, join) = spawn(config, Arc::new(SimBackend::new(book))).unwrap();
    let slate_json = br#"{"workerExtensions": ["pi-web-search", "codemode-pack", "slate"]}"#;
    let report = resolve(
        &SlateFile {
            label: "/agent/slate.json",
            bytes: Some(slate_json),
        },
        &ProjectFile::Absent,
    );
    let service = Service::new(
        rt.clone(),
        loaded(&base.join("work"), &base.join("agent")),
        models(),
        pi_offered_tools(),
    )
    .with_routing(SessionRouting::new(Some(report)));

    // A field over its bound is refused naming it, and resolves nothing.
    let bad = call(
        &service,
        "hostExtensions",
        json!({"units": [unit("local", "/x/a.ts", &["bad\u{7}tool"])]}),
    )
    .await
    .unwrap_err();
    assert_eq!(bad["code"], "invalid-request", "{bad}");
    assert!(
        bad["message"]
            .as_str()
            .unwrap()
            .contains("params.units[0].tools[0].name"),
        "{bad}"
    );
    assert!(rt.actors().worker_extensions().is_empty());

    let units = json!({"units": [
        unit("npm:pi-web-search@1.3.1", "/n/pi-web-search/index.ts", &["web_search"]),
        unit("npm:codemode-pack@2.0.0", "/n/codemode-pack/index.ts", &["codemode"]),
        unit("local", "/home/u/.local/share/slate/pi-extension/index.ts", &["delegate_task", "subagent"]),
        unit("npm:unrelated@1.0.0", "/n/unrelated/index.ts", &["other"]),
    ]});
    let answer = call(&service, "hostExtensions", units.clone())
        .await
        .unwrap();
    assert_eq!(
        answer["selected"],
        json!([{"source": "npm:pi-web-search@1.3.1", "path": "/n/pi-web-search/index.ts", "tools": ["web_search"]}])
    );
    let withheld: Vec<&str> = answer["withheld"]
        .as_array()
        .unwrap()
        .iter()
        .map(|w| w["reason"].as_str().unwrap())
        .collect();
    assert_eq!(withheld.len(), 2, "{answer:#}");
    assert!(withheld[0].contains("`codemode`"), "{withheld:?}");
    assert!(
        withheld[1].contains("Slate's own tool `delegate_task`"),
        "{withheld:?}"
    );
    assert!(
        answer["doctrine"]
            .as_str()
            .unwrap()
            .contains("npm:pi-web-search@1.3.1 (web_search)"),
        "{answer:#}"
    );
    let loaded = rt.actors().worker_extensions();
    assert_eq!(loaded.len(), 1);
    assert_eq!(loaded[0].path, PathBuf::from("/n/pi-web-search/index.ts"));

    // Once per session.
    let again = call(&service, "hostExtensions", units).await.unwrap_err();
    assert_eq!(again["code"], "already-resolved", "{again}");
    assert_eq!(rt.actors().worker_extensions().len(), 1, "unchanged");

    rt.shutdown().await.unwrap();
    join.await.unwrap();
    let _ = std::fs::remove_dir_all(&base);
}

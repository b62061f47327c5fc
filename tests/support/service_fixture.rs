//! The delegation policy and model context the in-process service tests start a `Service`
//! with (one copy instead of one per test file).

use std::path::Path;

use slate::config::Loaded;
use slate::core::ModelSelection;
use slate::policy::model::ModelContext;
use slate::policy::profiles::{ConfigFile, resolve};
use slate::store::fs::RealFs;

/// Profiles resolved for `agent_dir`'s `delegation.json` with `operator_text` (the bundled
/// defaults when `None`), no project file, untrusted.
pub fn loaded_with(cwd: &Path, agent_dir: &Path, operator_text: Option<&str>) -> Loaded {
    let operator = agent_dir.join("delegation.json").display().to_string();
    let project = cwd
        .join(".pi")
        .join("delegation.json")
        .display()
        .to_string();
    let profiles = resolve(
        ConfigFile {
            path: &operator,
            text: operator_text,
        },
        ConfigFile {
            path: &project,
            text: None,
        },
        false,
        &RealFs,
    )
    .unwrap();
    Loaded {
        cwd: cwd.to_owned(),
        agent_dir: agent_dir.to_owned(),
        trust: None,
        profiles,
    }
}

/// The bundled profiles.
#[allow(dead_code, reason = "not every test file uses it")]
pub fn loaded(cwd: &Path, agent_dir: &Path) -> Loaded {
    loaded_with(cwd, agent_dir, None)
}

/// The root runs `fake/model`; no grants, no allowlist.
pub fn models() -> ModelContext {
    let parent = ModelSelection {
        provider: "fake".into(),
        id: "model".into(),
        effort: None,
    };
    ModelContext {
        known_providers: std::iter::once(parent.provider.clone()).collect(),
        parent,
        operator_grants: Vec::new(),
        parent_allowlist: None,
    }
}

/// A fresh `work` + `agent` fixture directory under the temp dir, canonical.
#[allow(dead_code, reason = "not every test file uses it")]
pub fn base(prefix: &str, name: &str) -> std::path::PathBuf {
    let base = std::env::temp_dir().join(format!("{prefix}-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&base);
    for dir in ["work", "agent"] {
        std::fs::create_dir_all(base.join(dir)).unwrap();
    }
    std::fs::canonicalize(base).unwrap()
}

/// `method` handled by `service` as the operator: the result, or the error's wire form.
#[allow(dead_code, reason = "not every test file uses it")]
pub async fn operator_call(
    service: &slate::control::service::Service,
    method: &str,
    params: serde_json::Value,
) -> Result<serde_json::Value, serde_json::Value> {
    use slate::control::protocol::Payload;
    use slate::control::server::{Handler as _, Session};
    let session = Session {
        id: 1,
        peer_pid: None,
        client: None,
        caller: slate::control::caller::Caller::Operator,
        notices: slate::control::Notices::default(),
    };
    match service.handle(method, params, &session).await {
        Ok(Payload::Value(v)) => Ok(v),
        Ok(Payload::Raw(raw)) => Ok(serde_json::from_str(raw.get()).unwrap()),
        Ok(Payload::Shared(raw)) => Ok(serde_json::from_str(raw.get()).unwrap()),
        Err(e) => Err(serde_json::to_value(&e).unwrap()),
    }
}

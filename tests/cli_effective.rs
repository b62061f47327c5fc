//! `slate effective`: the effective routing policy for a directory, exit 2 when blocked.

#![allow(clippy::unwrap_used, reason = "test fixtures fail loudly")]

use std::path::PathBuf;
use std::process::{Command, Output};

struct Fixture {
    agent: PathBuf,
    project: PathBuf,
}

impl Fixture {
    fn new(name: &str) -> Self {
        let base =
            std::env::temp_dir().join(format!("slate-cli-effective-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&base);
        let agent = base.join("agent");
        let project = base.join("project");
        std::fs::create_dir_all(&agent).unwrap();
        std::fs::create_dir_all(project.join(".pi")).unwrap();
        Self { agent, project }
    }

    fn run(&self, args: &[&str]) -> Output {
        Command::new(env!("CARGO_BIN_EXE_slate"))
            .arg("effective")
            .args(args)
            .current_dir(&self.project)
            .env("PI_CODING_AGENT_DIR", &self.agent)
            .output()
            .unwrap()
    }

    fn json(&self, args: &[&str], code: i32) -> serde_json::Value {
        let mut all = vec!["--json"];
        all.extend_from_slice(args);
        let out = self.run(&all);
        assert_eq!(
            out.status.code(),
            Some(code),
            "{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        serde_json::from_slice(&out.stdout).unwrap()
    }

    fn home(&self, text: &str) {
        std::fs::write(self.agent.join("slate.json"), text).unwrap();
    }

    fn project(&self, text: &str) {
        std::fs::write(self.project.join(".pi/slate.json"), text).unwrap();
    }
}

impl Drop for Fixture {
    fn drop(&mut self) {
        if let Some(base) = self.agent.parent() {
            let _ = std::fs::remove_dir_all(base);
        }
    }
}

#[test]
fn shipped_policy_without_config_exits_0_with_the_documented_shape() {
    let f = Fixture::new("shipped");
    let v = f.json(&[], 0);
    for key in [
        "cwd",
        "agentDir",
        "sources",
        "blocked",
        "policy",
        "prompt",
        "workerExtensions",
        "errors",
        "warnings",
        "evidenceLimits",
        "preferredProviders",
        "rememberedProviders",
        "rememberedNote",
        "compressorRoutes",
    ] {
        assert!(v.get(key).is_some(), "missing {key}: {v:#}");
    }
    assert_eq!(v["blocked"], false);
    assert_eq!(v["policy"]["ordinary"].as_array().unwrap().len(), 6);
    let sol = &v["policy"]["definitions"][2];
    assert_eq!(sol["model"], "sol-6.1");
    assert_eq!(sol["effort"], "high");
    assert_eq!(sol["capabilityRating"], 85);
    assert_eq!(sol["costRating"], 20);
    assert_eq!(sol["preferredProvider"], "openai");
    assert_eq!(
        sol["providers"],
        serde_json::json!({"openai": "gpt-6.1-sol"})
    );
    assert_eq!(sol["origin"], "shipped");
    assert_eq!(
        v["policy"]["compressor"],
        serde_json::json!([{"model": "claude-sonnet-5.5", "effort": "medium"}])
    );
    assert_eq!(v["preferredProviders"]["gemini-3.8-flash"], "google-vertex");
    assert_eq!(v["rememberedProviders"], serde_json::json!({}));
    assert_eq!(v["sources"][0]["status"], "absent");
    assert!(v.get("recovery").is_none());
    assert!(v["prompt"]["characters"].as_u64().unwrap() <= 19_400);
}

#[test]
fn a_blocked_config_exits_2_listing_every_error() {
    let f = Fixture::new("blocked");
    f.home(r#"{"router": {"models": {"include": ["gpt-5.6-sol", "nope"]}, "compressor": {"models": []}}}"#);
    let v = f.json(&[], 2);
    assert_eq!(v["blocked"], true);
    assert!(v["policy"].is_null());
    let errors = v["errors"].as_array().unwrap();
    assert_eq!(errors.len(), 3, "{errors:#?}");
    assert_eq!(errors[0]["class"], "unknown-reference");
    assert_eq!(errors[0]["path"], "$.router.models.include[0]");
    assert!(
        errors[0]["rule"]
            .as_str()
            .unwrap()
            .contains("use `sol-6.1`")
    );
    assert!(
        errors[0]["file"]
            .as_str()
            .unwrap()
            .ends_with("agent/slate.json")
    );
    assert_eq!(errors[2]["class"], "empty-compressor");
    assert_eq!(v["sources"][0]["status"], "invalid");
    // Text mode: same exit code, errors listed.
    let out = f.run(&[]);
    assert_eq!(out.status.code(), Some(2));
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains("routing: BLOCKED (3 critical errors"),
        "{text}"
    );
    assert!(text.contains("$.router.models.include[1]"), "{text}");
}

#[test]
fn project_config_needs_trust() {
    let f = Fixture::new("trust");
    f.home(r#"{"router": {"models": {"exclude": ["luna-6"]}}}"#);
    f.project(r#"{"router": {"models": {"exclude": ["luna-6", "gpt-6-astra"]}}, "workerExtensions": ["pi-web-search"]}"#);
    let untrusted = f.json(&[], 0);
    assert_eq!(untrusted["policy"]["ordinary"].as_array().unwrap().len(), 5);
    assert_eq!(untrusted["sources"][1]["status"], "ignored-untrusted");
    assert_eq!(untrusted["projectTrust"]["trusted"], false);
    assert_eq!(untrusted["workerExtensions"], serde_json::json!([]));
    let trusted = f.json(&["--approve"], 0);
    assert_eq!(trusted["policy"]["ordinary"].as_array().unwrap().len(), 4);
    assert_eq!(trusted["sources"][1]["status"], "applied");
    assert_eq!(
        trusted["workerExtensions"],
        serde_json::json!(["pi-web-search"])
    );
    // An invalid trusted project blocks even though home is valid.
    f.project(r#"{"router": {"models": {"include": ["sol-6"]}}}"#);
    let blocked = f.json(&["--approve"], 2);
    assert_eq!(blocked["sources"][1]["status"], "invalid");
    assert_eq!(f.json(&["--no-approve"], 0)["blocked"], false);
}

#[test]
fn recovery_order_for_a_model_and_for_an_exact_route() {
    let f = Fixture::new("recovery");
    let v = f.json(&["--recovery", "sol-6.1"], 0);
    let r = &v["recovery"];
    assert_eq!(r["model"], "sol-6.1");
    assert_eq!(r["failed"]["provider"], "openai");
    let attempts: Vec<&str> = r["attempts"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| a["model"].as_str().unwrap())
        .collect();
    assert_eq!(
        attempts,
        [
            "gpt-6-astra",
            "claude-opus-5.5",
            "gemini-3.8-flash",
            "luna-6",
            "claude-sonnet-5.5"
        ]
    );
    let by_route = f.json(&["--recovery", "anthropic/claude-opus-5-5"], 0);
    assert_eq!(by_route["recovery"]["model"], "claude-opus-5.5");
    let unmapped = f.json(&["--recovery", "acme/nothing"], 0);
    assert_eq!(unmapped["recovery"]["stop"]["stop"], "unmappedRoute");
    // An unknown logical name is a usage error.
    let out = f.run(&["--recovery", "sol-6"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("no logical definition is named `sol-6`")
    );
    let text = String::from_utf8_lossy(&f.run(&["--recovery", "luna-6"]).stdout).into_owned();
    assert!(text.contains("Recovery from luna-6"), "{text}");
    assert!(
        text.contains(" 1. anthropic/claude-sonnet-5-5 as claude-sonnet-5.5 at high"),
        "{text}"
    );
}

#[test]
fn no_credentials_are_shown() {
    let f = Fixture::new("secrets");
    std::fs::write(
        f.agent.join("auth.json"),
        r#"{"openai": {"type": "api_key", "key": "sk-SECRET"}}"#,
    )
    .unwrap();
    let out = f.run(&["--json"]);
    assert!(!String::from_utf8_lossy(&out.stdout).contains("sk-SECRET"));
    let out = f.run(&[]);
    assert!(!String::from_utf8_lossy(&out.stdout).contains("sk-SECRET"));
}

#[test]
fn an_unreadable_home_file_blocks_routing() {
    let f = Fixture::new("unreadable");
    std::fs::write(f.agent.join("slate.json"), b"{\"router\": \"\xff\"}").unwrap();
    let v = f.json(&[], 2);
    assert_eq!(v["errors"][0]["class"], "invalid-json");
    assert!(v["errors"][0]["rule"].as_str().unwrap().contains("UTF-8"));
    assert_eq!(v["sources"][0]["status"], "invalid");
}

/// The whole text answer for the shipped policy, paths normalized.
#[test]
fn shipped_text_output_snapshot() {
    let f = Fixture::new("snapshot");
    let out = f.run(&["--recovery", "sol-6.1"]);
    assert_eq!(out.status.code(), Some(0));
    let base = f.agent.parent().unwrap().canonicalize().unwrap();
    let text = String::from_utf8_lossy(&out.stdout)
        .replace(&base.display().to_string(), "<tmp>")
        .replace(&f.agent.parent().unwrap().display().to_string(), "<tmp>");
    insta::assert_snapshot!(text);
}

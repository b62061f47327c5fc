//! `slate profiles`: the resolved `{toolPolicy, profiles}` for the current directory.

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
            std::env::temp_dir().join(format!("slate-cli-profiles-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&base);
        let agent = base.join("agent");
        let project = base.join("project");
        std::fs::create_dir_all(&agent).unwrap();
        std::fs::create_dir_all(project.join(".pi")).unwrap();
        Self { agent, project }
    }

    fn run(&self, args: &[&str]) -> Output {
        Command::new(env!("CARGO_BIN_EXE_slate"))
            .arg("profiles")
            .args(args)
            .current_dir(&self.project)
            .env("PI_CODING_AGENT_DIR", &self.agent)
            .output()
            .unwrap()
    }

    fn json(&self, args: &[&str]) -> serde_json::Value {
        let mut all = vec!["--json"];
        all.extend_from_slice(args);
        let out = self.run(&all);
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        serde_json::from_slice(&out.stdout).unwrap()
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
fn bundled_profiles_without_any_config() {
    let f = Fixture::new("bundled");
    let v = f.json(&[]);
    let profiles = v["profiles"].as_array().unwrap();
    assert_eq!(profiles.len(), 4);
    assert_eq!(profiles[0]["name"], "scout");
    assert_eq!(
        profiles[0]["tools"],
        serde_json::json!(["read", "grep", "find", "ls"])
    );
    assert_eq!(v["toolPolicy"]["scheduling"]["concurrency"], 16);
    assert_eq!(v["toolPolicy"]["sources"][0]["status"], "absent");
    assert_eq!(v["toolPolicy"]["offeredTools"].as_array().unwrap().len(), 7);
}

#[test]
fn operator_config_applies_and_a_project_needs_trust() {
    let f = Fixture::new("layers");
    std::fs::write(
        f.agent.join("delegation.json"),
        r#"{"scheduling": {"concurrency": 4}, "general": {"spawn": ["general", "scout"]}}"#,
    )
    .unwrap();
    std::fs::write(
        f.project.join(".pi/delegation.json"),
        r#"{"scheduling": {"concurrency": 2}}"#,
    )
    .unwrap();
    let v = f.json(&[]);
    assert_eq!(
        v["toolPolicy"]["scheduling"]["concurrency"], 4,
        "untrusted project ignored"
    );
    assert_eq!(v["toolPolicy"]["sources"][1]["status"], "ignored-untrusted");
    assert_eq!(v["toolPolicy"]["projectTrust"]["trusted"], false);
    assert_eq!(
        v["profiles"][2]["spawn"],
        serde_json::json!(["scout", "general"])
    );
    let approved = f.json(&["--approve"]);
    assert_eq!(approved["toolPolicy"]["scheduling"]["concurrency"], 2);
    assert_eq!(
        approved["toolPolicy"]["projectTrust"]["reason"]["source"],
        "override"
    );
    // A saved decision in pi's trust store also trusts it.
    let canonical = std::fs::canonicalize(&f.project).unwrap();
    std::fs::write(
        f.agent.join("trust.json"),
        format!("{{\"{}\": true}}", canonical.display()),
    )
    .unwrap();
    assert_eq!(f.json(&[])["toolPolicy"]["scheduling"]["concurrency"], 2);
    assert_eq!(
        f.json(&["--no-approve"])["toolPolicy"]["scheduling"]["concurrency"],
        4
    );
}

#[test]
fn an_invalid_config_exits_2_listing_every_problem() {
    let f = Fixture::new("invalid");
    std::fs::write(
        f.agent.join("delegation.json"),
        r#"{"scout": {"tools": ["bash"]}, "scheduling": {"concurrency": 99}, "planner": {}}"#,
    )
    .unwrap();
    let out = f.run(&[]);
    assert_eq!(out.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("(3 problems)"), "{stderr}");
    assert!(stderr.contains("$.scout.tools[0] = bash"), "{stderr}");
    assert!(stderr.contains("$.scheduling.concurrency = 99"), "{stderr}");
    assert!(stderr.contains("$.planner"), "{stderr}");
    let out = f.run(&["--json"]);
    assert_eq!(out.status.code(), Some(2));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["error"]["code"], "invalid-config", "{v}");
    assert_eq!(v["error"]["data"].as_array().unwrap().len(), 3);
    assert_eq!(
        v["error"]["data"][0]["file"],
        f.agent.join("delegation.json").display().to_string()
    );
}

#[test]
fn human_output_lists_each_profile() {
    let f = Fixture::new("human");
    // Without a terminal the default is the structured answer; --text asks for prose.
    let piped: serde_json::Value = serde_json::from_slice(&f.run(&[]).stdout).unwrap();
    assert!(piped["toolPolicy"].is_object());
    let out = f.run(&["--text"]);
    assert!(out.status.success());
    let text = String::from_utf8_lossy(&out.stdout);
    for name in ["scout —", "review —", "general —", "implementation —"] {
        assert!(text.contains(name), "{text}");
    }
    assert!(
        text.contains("project trust: no project delegation config"),
        "{text}"
    );
    let with_prompts =
        String::from_utf8_lossy(&f.run(&["--text", "--prompts"]).stdout).into_owned();
    assert!(with_prompts.contains("You are a scout"));
    assert!(with_prompts.lines().count() > text.lines().count() + 40);
}

//! `slate pi install` / `uninstall` against real pi 1.6 with a private agent dir
//! (`PI_CODING_AGENT_DIR`): after install, pi started with no `-e` loads Slate's extension from
//! its settings; `pi -ne` (how Slate starts workers) does not; after uninstall the settings
//! file is byte for byte what it was and pi loads nothing of Slate's.
//!
//! The extension is checked in both roles. As the user's own session (no worker identity) pi
//! lists the extension's slash commands in `get_commands`, each from the installed directory.
//! As a worker (a capability on descriptor 3, a fake coordinator on `SLATE_SOCKET`, as
//! `tests/pi_extension.rs` does) the extension's `hello` and request guard reach the fake
//! coordinator. Without pi these tests print `SKIPPED` and pass, except under `CI=true` (see
//! `tests/support/pi_env.rs`).

#![allow(clippy::unwrap_used, reason = "test fixtures fail loudly")]

#[path = "support/fake_coordinator.rs"]
mod fake_coordinator;
#[path = "support/fake_llm.rs"]
mod fake_llm;
#[path = "support/pi_env.rs"]
mod pi_env;

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::time::Duration;

use fake_coordinator::{FakeCoordinator, allow_all};
use fake_llm::FakeLlm;
use pi_env::{PiCommand, PiSandbox, RpcPi};
use serde_json::{Value, json};

const TIMEOUT: Duration = Duration::from_secs(90);
const CAPABILITY: &str = "5a7e0000c0ffee11deadbeef22aa33bb44cc55dd66ee77ff8899aabbccddeeff";
const CLIENT: &str = concat!("slate-pi-extension ", env!("CARGO_PKG_VERSION"));

struct Fixture {
    pi: PiCommand,
    sandbox: PiSandbox,
    llm: FakeLlm,
    data: PathBuf,
}

impl Fixture {
    fn new(test: &str) -> Option<Self> {
        let pi = pi_env::pi_or_skip(test)?;
        let llm = FakeLlm::start().unwrap();
        let sandbox = PiSandbox::new(test, &llm.base_url()).unwrap();
        let data = sandbox.root().join("data");
        Some(Self {
            pi,
            sandbox,
            llm,
            data,
        })
    }

    fn settings(&self) -> PathBuf {
        self.sandbox.agent_dir.join("settings.json")
    }

    fn extension_dir(&self) -> PathBuf {
        self.data.join("slate/slate")
    }

    /// `slate <args>` with the sandbox's home, agent dir and a private data dir.
    fn slate(&self, args: &[&str]) -> Output {
        Command::new(env!("CARGO_BIN_EXE_slate"))
            .args(args)
            .current_dir(&self.sandbox.work)
            .env("HOME", &self.sandbox.home)
            .env("PI_CODING_AGENT_DIR", &self.sandbox.agent_dir)
            .env("XDG_DATA_HOME", &self.data)
            .env("XDG_RUNTIME_DIR", self.sandbox.root().join("run"))
            .env_remove("SLATE_SOCKET")
            .output()
            .unwrap()
    }

    fn slate_ok(&self, args: &[&str]) -> String {
        let out = self.slate(args);
        assert!(
            out.status.success(),
            "slate {args:?}: {}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8(out.stdout).unwrap()
    }

    /// pi in RPC mode with no `-e`: only what its settings name is loaded. With `identity`,
    /// as a Slate worker would be (capability on descriptor 3, the socket in `SLATE_SOCKET`).
    fn pi(&self, extra: &[&str], identity: Option<&Path>) -> RpcPi {
        let mut args = vec!["--mode", "rpc", "--no-session", "--no-mcp"];
        args.extend_from_slice(extra);
        let mut command = if let Some(socket) = identity {
            let mut c = self
                .sandbox
                .command(&self.pi.with_first_stdin_line_on_fd3(), &args);
            c.env("SLATE_CAPABILITY_FD", "3")
                .env("SLATE_SOCKET", socket);
            c
        } else {
            let mut c = self.sandbox.command(&self.pi, &args);
            c.env_remove("SLATE_CAPABILITY_FD")
                .env_remove("SLATE_SOCKET");
            c
        };
        command.env_remove("SLATE_CAPABILITY");
        let mut pi = RpcPi::spawn_command(&self.sandbox, command).unwrap();
        if identity.is_some() {
            pi.write_line(CAPABILITY).unwrap();
        }
        pi
    }

    /// pi's commands from `get_commands`, or `None` when pi exited first.
    fn commands(pi: &mut RpcPi) -> Option<Vec<Value>> {
        pi.send(&json!({"id": "c1", "type": "get_commands"})).ok()?;
        let response = pi
            .read_until(TIMEOUT, |r| r["type"] == "response" && r["id"] == "c1")
            .ok()?;
        assert_eq!(response["success"], true, "{response}");
        Some(response["data"]["commands"].as_array().unwrap().clone())
    }

    /// The commands pi lists from the installed directory when it runs as the user's own
    /// session (no worker identity).
    fn session_commands(&self) -> Vec<String> {
        let mut pi = self.pi(&[], None);
        let Some(commands) = Self::commands(&mut pi) else {
            panic!("pi exited at startup: {}", pi.stderr_text());
        };
        let dir = self.extension_dir();
        let mut ours: Vec<String> = commands
            .iter()
            .filter(|c| {
                c["sourceInfo"]["path"]
                    .as_str()
                    .is_some_and(|p| Path::new(p).starts_with(&dir))
            })
            .map(|c| c["name"].as_str().unwrap_or_default().to_owned())
            .collect();
        ours.sort();
        pi.close_stdin();
        let status = pi
            .wait_exit(TIMEOUT)
            .unwrap()
            .expect("pi exits on stdin EOF");
        assert_eq!(status.code(), Some(0), "{}", pi.stderr_text());
        ours
    }
}

/// The slash commands of the main-session role (`docs/pi.md`).
const COMMANDS: [&str; 6] = [
    "slate",
    "subagent-hub",
    "subagent-profiles",
    "subagent-status",
    "subagent-steer",
    "subagent-stop",
];

#[test]
fn pi_loads_the_installed_extension_and_uninstall_restores_its_settings() {
    let Some(f) = Fixture::new("install-real") else {
        return;
    };
    let before = std::fs::read(f.settings()).unwrap();
    // Before install pi has nothing of Slate's.
    assert_eq!(f.session_commands(), Vec::<String>::new());

    let text = f.slate_ok(&["pi", "install"]);
    assert!(text.contains("added \"extensions\" entry"), "{text}");
    let settings: Value = serde_json::from_slice(&std::fs::read(f.settings()).unwrap()).unwrap();
    assert_eq!(
        settings["extensions"],
        json!([f.extension_dir().to_str().unwrap()])
    );
    assert_eq!(settings["defaultProvider"], "fake", "the rest is kept");

    // As a worker: pi loads the extension from its settings (no -e) and the extension speaks
    // to the coordinator before the model request.
    let coordinator = FakeCoordinator::start(f.sandbox.root(), CAPABILITY, allow_all).unwrap();
    let mut pi = f.pi(&[], Some(coordinator.path()));
    pi.send(&json!({"id": "p1", "type": "prompt", "message": "SCENARIO:TEXT"}))
        .unwrap();
    if let Err(e) = pi.read_until_type("agent_settled", TIMEOUT) {
        panic!("no agent_settled ({e:?}): {}", pi.stderr_text());
    }
    let hellos = coordinator.params_of("hello");
    assert_eq!(hellos.len(), 1, "{:?}", coordinator.log());
    // The worker presents the hash of the files it was loaded from: the installed copy's,
    // which is this binary's (issue 23).
    assert_eq!(
        hellos[0]["client"],
        json!({"name": CLIENT, "extension": slate::worker::pi::extension::content_hash()})
    );
    assert_eq!(hellos[0]["capability"], CAPABILITY);
    // It read this generation's tools from the coordinator's tool layer at load.
    assert_eq!(coordinator.params_of("tools"), [json!({})]);
    assert!(
        !coordinator.params_of("guard").is_empty(),
        "the request guard asked"
    );
    assert_eq!(f.llm.request_count(), 1);
    pi.close_stdin();
    assert_eq!(pi.wait_exit(TIMEOUT).unwrap().unwrap().code(), Some(0));

    // Slate starts its workers with -ne: the installed copy is not loaded beside theirs.
    let mut plain = f.pi(&["-ne"], None);
    assert_eq!(Fixture::commands(&mut plain), Some(Vec::new()));
    plain.close_stdin();
    let _ = plain.wait_exit(TIMEOUT);

    // As the user's own session: the slash commands, from the installed directory.
    assert_eq!(f.session_commands(), COMMANDS);

    let text = f.slate_ok(&["pi", "uninstall"]);
    assert!(text.contains("restored, byte for byte"), "{text}");
    assert_eq!(std::fs::read(f.settings()).unwrap(), before);
    assert!(!f.extension_dir().exists());
    assert_eq!(f.session_commands(), Vec::<String>::new());
    assert_eq!(f.sandbox.leftover_processes(), Vec::<u32>::new());
}

#[test]
fn a_project_install_loads_in_a_trusted_project_only() {
    let Some(f) = Fixture::new("install-real-project") else {
        return;
    };
    let text = f.slate_ok(&["pi", "install", "--project"]);
    assert!(
        text.contains("created, with \"extensions\" entry"),
        "{text}"
    );
    let project = f.sandbox.work.join(".pi/settings.json");
    assert!(project.is_file());

    let coordinator = FakeCoordinator::start(f.sandbox.root(), CAPABILITY, allow_all).unwrap();
    // The template's `defaultProjectTrust` is `never`: untrusted, the project's settings are
    // not read and the extension does not load.
    assert_eq!(f.session_commands(), Vec::<String>::new());
    // Trusted for this run (`--approve`), it loads.
    let mut trusted = f.pi(&["--approve"], Some(coordinator.path()));
    trusted
        .send(&json!({"id": "p1", "type": "prompt", "message": "SCENARIO:TEXT"}))
        .unwrap();
    trusted.read_until_type("agent_settled", TIMEOUT).unwrap();
    assert_eq!(coordinator.params_of("hello").len(), 1);
    trusted.close_stdin();
    let _ = trusted.wait_exit(TIMEOUT);

    let text = f.slate_ok(&["pi", "uninstall", "--project"]);
    assert!(
        text.contains("removed (`slate pi install` had created it)"),
        "{text}"
    );
    assert!(!f.sandbox.work.join(".pi").exists());
    assert!(!f.extension_dir().exists());
}

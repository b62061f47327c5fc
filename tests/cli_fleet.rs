//! The fleet commands against a real `slate serve` (simulated workers) on a private socket:
//! exit codes, human and JSON output, refusals, no coordinator, read-only history.

#![allow(clippy::unwrap_used, reason = "test fixtures fail loudly")]

use std::io::{BufRead, BufReader};
use std::path::PathBuf;
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;

struct Fixture {
    base: PathBuf,
    work: PathBuf,
    server: Option<Child>,
    socket: PathBuf,
    parent: String,
}

impl Fixture {
    fn start(name: &str) -> Self {
        Self::start_with(name, None, None)
    }

    /// A coordinator with an operator `delegation.json` and a script book, if given.
    fn start_with(name: &str, delegation: Option<&Value>, scripts: Option<&Value>) -> Self {
        let base =
            std::env::temp_dir().join(format!("slate-cli-fleet-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&base);
        for d in ["work", "agent", "run", "elsewhere"] {
            std::fs::create_dir_all(base.join(d)).unwrap();
        }
        if let Some(delegation) = delegation {
            std::fs::write(base.join("agent/delegation.json"), delegation.to_string()).unwrap();
        }
        let work = base.join("work");
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_slate"));
        cmd.args(["serve", "--backend", "sim", "--model", "fake/model"]);
        if let Some(scripts) = scripts {
            let path = base.join("scripts.json");
            std::fs::write(&path, scripts.to_string()).unwrap();
            cmd.arg("--scenario").arg(path);
        }
        cmd.current_dir(&work)
            .stdout(Stdio::piped())
            .stderr(Stdio::null());
        Self::env(&base, &mut cmd);
        let mut server = cmd.spawn().unwrap();
        let mut lines = BufReader::new(server.stdout.take().unwrap()).lines();
        let parent = lines
            .next()
            .unwrap()
            .unwrap()
            .trim_start_matches("slate serve: parent ")
            .to_owned();
        let socket = PathBuf::from(
            lines
                .next()
                .unwrap()
                .unwrap()
                .trim_start_matches("socket ")
                .to_owned(),
        );
        Self {
            base,
            work,
            server: Some(server),
            socket,
            parent,
        }
    }

    fn env(base: &std::path::Path, cmd: &mut Command) {
        cmd.env("PI_CODING_AGENT_DIR", base.join("agent"))
            .env("XDG_RUNTIME_DIR", base.join("run"))
            .env_remove("SLATE_SOCKET");
    }

    fn slate(&self, args: &[&str]) -> Output {
        self.slate_in(&self.work, args)
    }

    fn slate_in(&self, dir: &std::path::Path, args: &[&str]) -> Output {
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_slate"));
        cmd.args(args).current_dir(dir);
        Self::env(&self.base, &mut cmd);
        cmd.output().unwrap()
    }

    fn json(&self, args: &[&str]) -> Value {
        let mut all = vec!["--json"];
        all.extend_from_slice(args);
        let out = self.slate(&all);
        assert!(
            out.status.success(),
            "{args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        serde_json::from_slice(&out.stdout)
            .unwrap_or_else(|e| panic!("{args:?}: {e}: {}", String::from_utf8_lossy(&out.stdout)))
    }

    fn stop_server(&mut self) -> std::process::ExitStatus {
        let mut server = self.server.take().unwrap();
        nix::sys::signal::kill(
            nix::unistd::Pid::from_raw(i32::try_from(server.id()).unwrap()),
            nix::sys::signal::Signal::SIGTERM,
        )
        .unwrap();
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            if let Some(status) = server.try_wait().unwrap() {
                return status;
            }
            assert!(Instant::now() < deadline, "slate serve did not stop");
            std::thread::sleep(Duration::from_millis(50));
        }
    }
}

impl Drop for Fixture {
    fn drop(&mut self) {
        if let Some(mut server) = self.server.take() {
            let _ = server.kill();
            let _ = server.wait();
        }
        let _ = std::fs::remove_dir_all(&self.base);
    }
}

fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

/// `status --width` fits the live table: no line wider, handles instead of identities (`id`
/// is one of the fleet's), every row there; under 56 columns or with `--json` it is a usage
/// error.
fn assert_status_fits_widths(f: &Fixture, id: &str) {
    for width in [56usize, 80, 160] {
        let fitted = f.slate(&["status", "--width", &width.to_string()]);
        assert_eq!(fitted.status.code(), Some(0), "{}", stderr(&fitted));
        let text = String::from_utf8(fitted.stdout).unwrap();
        for line in text.lines() {
            assert!(
                slate::text::width(line) <= width,
                "{width}: {line:?} is {} columns",
                slate::text::width(line)
            );
        }
        assert!(text.contains(&id[..8]) && !text.contains(id), "{text}");
        let rows = text.lines().filter(|l| l.contains(" scout ")).count();
        assert!(rows >= 2, "{width}: {text}");
    }
    let narrow = f.slate(&["status", "--width", "55"]);
    assert_eq!(narrow.status.code(), Some(2), "{}", stderr(&narrow));
    let with_json = f.slate(&["--json", "status", "--width", "80"]);
    assert_eq!(with_json.status.code(), Some(2));
}

#[test]
fn fleet_commands_against_a_live_coordinator() {
    let mut f = Fixture::start("live");
    assert!(f.socket.exists());

    // Background delegation returns the accepted identity at once.
    let accepted = f.json(&["delegate", "--background", "Locate the startup code"]);
    assert_eq!(accepted["kind"], "admitted");
    let id = accepted["children"][0]["id"].as_str().unwrap().to_owned();
    let target = format!("{id}@1");

    // Foreground prints ordered outcomes and exits 0 when all settled, 1 when one failed.
    let ok = f.slate(&[
        "delegate",
        "--profile",
        "review",
        "Review the lifecycle tests",
    ]);
    assert_eq!(ok.status.code(), Some(0), "all settled: {}", stderr(&ok));
    assert!(String::from_utf8_lossy(&ok.stdout).contains("settled"));
    let failed = f.slate(&["delegate", "Check the error messages of the CLI"]);
    assert_eq!(failed.status.code(), Some(1), "a failed outcome exits 1");
    assert!(String::from_utf8_lossy(&failed.stdout).contains("failed"));

    // Status: fleet table and one generation (both spellings).
    let fleet = f.json(&["status"]);
    assert_eq!(fleet["parentId"], f.parent);
    assert!(fleet["children"].as_array().unwrap().len() >= 3);
    let one = f.json(&["status", &target]);
    assert_eq!(one["snapshot"]["id"], id);
    let two = f.json(&["status", &id, "1"]);
    assert_eq!(two["snapshot"]["generation"], 1);
    let table = f.slate(&["status"]);
    assert!(String::from_utf8_lossy(&table.stdout).contains("current generations"));
    assert_status_fits_widths(&f, &id);

    // Refusals exit 1 and name the rule; malformed input exits 2.
    let followup = f.json(&["followup", &target, "Also list the tests"]);
    assert_eq!(followup["children"][0]["generation"], 2);
    let stale = f.slate(&["stop", &target]);
    assert_eq!(stale.status.code(), Some(1));
    assert!(
        stderr(&stale).contains("refused [stale-generation]"),
        "{}",
        stderr(&stale)
    );
    let unknown = f.slate(&["steer", "00000000-0000-4000-8000-000000000000@1", "hi"]);
    assert_eq!(unknown.status.code(), Some(1));
    assert!(stderr(&unknown).contains("unknown-identity"));
    let prefix = f.slate(&["stop", &id[..8]]);
    assert_eq!(prefix.status.code(), Some(2), "prefixes are never matched");
    let bad_json = f.base.join("bad.json");
    std::fs::write(&bad_json, "{not json").unwrap();
    let bad = f.slate(&["delegate", "--file", bad_json.to_str().unwrap()]);
    assert_eq!(bad.status.code(), Some(2));
    let custom = f.slate(&["delegate", "--profile", "architect", "x"]);
    assert_eq!(custom.status.code(), Some(2));
    assert!(
        stderr(&custom).contains("custom roles are unsupported"),
        "{}",
        stderr(&custom)
    );
    let inbox = f.json(&["inbox"]);
    assert_eq!(inbox["kind"], "inbox");

    // wait --all follows events: a short timeout expires while work still runs.
    let slow = f.json(&[
        "delegate",
        "--background",
        "Survey the docs for stale flags",
    ]);
    assert_eq!(slow["kind"], "admitted");
    let early = f.slate(&["wait", "--all", "--timeout", "300"]);
    assert_eq!(early.status.code(), Some(1));
    assert!(stderr(&early).contains("timed out"), "{}", stderr(&early));
    // wait --all: every current assignment drained; a failure makes it exit 1.
    let waited = f.slate(&["--json", "wait", "--all", "--timeout", "20000"]);
    assert_eq!(waited.status.code(), Some(1));
    let summary: Value = serde_json::from_slice(&waited.stdout).unwrap();
    assert!(summary["failed"].as_u64().unwrap() >= 1);

    // Nothing serves another directory: exit 3 with how to start one.
    let none = f.slate_in(&f.base.join("elsewhere"), &["status"]);
    assert_eq!(none.status.code(), Some(3));
    assert!(stderr(&none).contains("slate serve"), "{}", stderr(&none));

    // SIGTERM drains and removes the socket; the history stays readable.
    assert!(f.stop_server().success());
    assert!(!f.socket.exists(), "socket removed on shutdown");
    let parent = f.parent.clone();
    let history = f.json(&["status", "--parent", &parent]);
    assert_eq!(history["readOnlyHistory"], true);
    assert!(history["children"].as_array().unwrap().len() >= 3);
    let text = f.slate(&["status", "--parent", &parent]);
    assert!(String::from_utf8_lossy(&text.stdout).contains("read-only history"));
    let fitted = f.slate(&["status", "--parent", &parent, "--width", "60"]);
    let fitted = String::from_utf8(fitted.stdout).unwrap();
    assert!(fitted.contains("read-only history"), "{fitted}");
    assert!(
        fitted.lines().skip(2).all(|l| slate::text::width(l) <= 60),
        "{fitted}"
    );
}

/// Every refusal class the root can meet from the command line: exit 1, nothing on stdout,
/// `refused [code]: message` on stderr naming the rule, and `{"error": {code, message}}` with
/// `--json`. (Classes only a child can meet — depth, spawn grants, nested capacity, writer
/// under writer — are covered against the core in tests/rules.)
#[test]
#[allow(clippy::too_many_lines, reason = "one table of cases")]
fn every_root_refusal_class_exits_1_with_its_code_and_rule() {
    let slow = serde_json::json!({"steps": [{"think": 60000}, {"request": {
        "ms": 10, "text": "late", "inputTokens": 1, "outputTokens": 1}}]});
    let scripts = serde_json::json!({
        "default": slow,
        "scripts": [{"assignmentPrefix": "quick", "script": {"steps": [{"request": {
            "ms": 10, "text": "done", "inputTokens": 1, "outputTokens": 1}}]}}]
    });
    let policy = serde_json::json!({"scheduling": {"concurrency": 1, "queue": 1, "batch": 2}});
    let f = Fixture::start_with("refusals", Some(&policy), Some(&scripts));

    let running = f.json(&["delegate", "--background", "Hold the only permit"]);
    let running = format!("{}@1", running["children"][0]["id"].as_str().unwrap());
    let queued = f.json(&["delegate", "--background", "Wait behind it"]);
    let queued = format!("{}@1", queued["children"][0]["id"].as_str().unwrap());
    let three = f.base.join("three.json");
    std::fs::write(
        &three,
        serde_json::json!({"tasks": [{"assignment": "a", "profile": "scout"}, {"assignment": "b", "profile": "scout"}, {"assignment": "c", "profile": "scout"}]})
            .to_string(),
    )
    .unwrap();
    let long = "x".repeat(5000);
    let never = running.replace("@1", "@2");
    let cases: Vec<(&str, Vec<&str>)> = vec![
        (
            "queue-full",
            vec!["delegate", "--background", "One too many"],
        ),
        (
            "batch-too-large",
            vec![
                "delegate",
                "--background",
                "--file",
                three.to_str().unwrap(),
            ],
        ),
        (
            "limit-not-narrowing",
            vec![
                "delegate",
                "--background",
                "--limits",
                r#"{"requests": 1000000}"#,
                "Too much",
            ],
        ),
        ("invalid-state", vec!["steer", &queued, "Not running yet"]),
        ("invalid-presence", vec!["park", &running]),
        ("blank-text", vec!["steer", &running, "   "]),
        ("text-too-long", vec!["steer", &running, &long]),
        ("root-self-message", vec!["message", "To nobody"]),
        (
            "unknown-message",
            vec![
                "wait",
                "--message",
                "00000000-0000-4000-8000-000000000000",
                "--timeout",
                "10",
            ],
        ),
        (
            "wait-timeout-out-of-range",
            vec!["wait", "--target", &running, "--timeout", "60001"],
        ),
        (
            "unknown-identity",
            vec!["stop", "00000000-0000-4000-8000-000000000000@1"],
        ),
        ("unknown-identity", vec!["stop", &never]),
    ];
    for (code, args) in &cases {
        let out = f.slate(args);
        let err = stderr(&out);
        assert_eq!(out.status.code(), Some(1), "{code}: {args:?}: {err}");
        assert!(out.stdout.is_empty(), "{code}: nothing on stdout");
        assert!(
            err.starts_with(&format!("error: refused [{code}]: ")),
            "{code}: {args:?}: {err}"
        );
        assert!(
            err.trim_end().len() > format!("refused [{code}]: ").len() + 10,
            "{code}: the message says why: {err}"
        );
        let mut json_args = vec!["--json"];
        json_args.extend_from_slice(args);
        let out = f.slate(&json_args);
        assert_eq!(out.status.code(), Some(1), "{code} (--json)");
        let v: Value = serde_json::from_slice(&out.stdout).unwrap();
        assert_eq!(v["error"]["code"], *code, "{code} (--json): {v}");
        assert!(
            v["error"]["message"]
                .as_str()
                .is_some_and(|m| !m.is_empty())
        );
    }
    // Nothing refused changed the fleet: still one running, one queued.
    let fleet = f.json(&["status"]);
    let statuses: Vec<&str> = fleet["children"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["status"].as_str().unwrap())
        .collect();
    assert_eq!(statuses, ["running", "queued"], "refusals change nothing");
}

/// Terminal-control text in an assignment (and so in the transcript) never reaches the CLI's
/// human output: CSI, OSC 52 clipboard writes, OSC 8 links, DCS, C1 controls, bidi overrides
/// and `ESC c` are all removed before printing.
#[test]
fn terminal_injection_never_reaches_the_cli_output() {
    let corpus = concat!(
        "Audit \u{1b}[31mred\u{1b}[0m ",
        "\u{1b}]52;c;cm0gLXJmIC8=\u{7} ",
        "\u{1b}]8;;https://evil.example\u{1b}\\link\u{1b}]8;;\u{1b}\\ ",
        "\u{1b}P1$qm\u{1b}\\ ",
        "\u{9b}2J \u{85} ",
        "\u{202e}txt.exe\u{202c} \u{2066}iso\u{2069} ",
        "\u{1b}c done"
    );
    let f = Fixture::start("inject");
    let accepted = f.json(&["delegate", "--background", corpus]);
    let target = format!("{}@1", accepted["children"][0]["id"].as_str().unwrap());
    f.slate(&["wait", "--target", &target, "--timeout", "10000"]);
    for args in [
        vec!["status"],
        vec!["status", target.as_str()],
        vec!["transcript", target.as_str()],
        vec!["delegate", corpus],
    ] {
        let out = f.slate(&args);
        for (stream, bytes) in [("stdout", &out.stdout), ("stderr", &out.stderr)] {
            let text = String::from_utf8_lossy(bytes);
            let bad: Vec<char> = text
                .chars()
                .filter(|&c| {
                    (c.is_control() && c != '\n' && c != '\t')
                        || ('\u{202a}'..='\u{202e}').contains(&c)
                        || ('\u{2066}'..='\u{2069}').contains(&c)
                })
                .collect();
            assert!(bad.is_empty(), "{args:?} {stream}: {bad:?}\n{text}");
        }
        let text = String::from_utf8_lossy(&out.stdout);
        assert!(
            args[0] == "delegate" || text.contains("Audit"),
            "{args:?}: the visible text stays: {text}"
        );
    }
}

#[test]
fn subagent_status_without_a_coordinator_exits_3_and_bad_targets_exit_2() {
    let base = std::env::temp_dir().join(format!("slate-cli-none-{}", std::process::id()));
    let _ = std::fs::create_dir_all(base.join("run"));
    let run = |args: &[&str]| {
        Command::new(env!("CARGO_BIN_EXE_subagent-status"))
            .args(args)
            .current_dir(&base)
            .env("XDG_RUNTIME_DIR", base.join("run"))
            .env_remove("SLATE_SOCKET")
            .output()
            .unwrap()
    };
    let none = run(&[]);
    assert_eq!(none.status.code(), Some(3));
    assert!(stderr(&none).contains("slate serve"), "{}", stderr(&none));
    let bad = run(&["0b6a"]);
    assert_eq!(bad.status.code(), Some(2));
    assert!(stderr(&bad).contains("UUID"), "{}", stderr(&bad));
    let _ = std::fs::remove_dir_all(&base);
}

#[test]
fn completions_and_man_page_come_from_the_clap_definitions() {
    let run = |args: &[&str]| {
        Command::new(env!("CARGO_BIN_EXE_slate"))
            .args(args)
            .output()
            .unwrap()
    };
    for (shell, marker) in [
        ("bash", "_slate()"),
        ("zsh", "#compdef slate"),
        ("fish", "complete -c slate"),
    ] {
        let out = run(&["completions", shell]);
        assert!(out.status.success());
        let text = String::from_utf8_lossy(&out.stdout);
        assert!(
            text.contains(marker),
            "{shell}: {}",
            &text[..text.len().min(200)]
        );
        assert!(
            text.contains("delegate") && text.contains("followup"),
            "{shell} lists the subcommands"
        );
    }
    let man = run(&["man"]);
    assert!(man.status.success());
    let text = String::from_utf8_lossy(&man.stdout);
    assert!(text.contains(".TH slate 1"));
    assert!(text.contains("serve"));
    assert_eq!(
        run(&["completions", "tcsh"]).status.code(),
        Some(2),
        "unknown shells are usage errors"
    );
}

/// A usage error clap finds while reading the command line (unknown flag, missing argument,
/// bad value, missing subcommand) is the one JSON error shape on stdout when `--json` is on
/// the command line, before or after the subcommand, with exit 2 and every control and bidi
/// character of the quoted argument escaped.
#[test]
fn usage_errors_honour_json_wherever_it_is_on_the_command_line() {
    let run = |bin: &str, args: &[&str]| {
        Command::new(bin)
            .args(args)
            .env_remove("SLATE_SOCKET")
            .output()
            .unwrap()
    };
    let slate = env!("CARGO_BIN_EXE_slate");
    let json_error = |out: &Output| -> Value {
        assert_eq!(out.status.code(), Some(2), "{}", stderr(out));
        assert!(out.stderr.is_empty(), "nothing on stderr: {}", stderr(out));
        let text = String::from_utf8(out.stdout.clone()).unwrap();
        assert_eq!(text.lines().count(), 1, "one line: {text}");
        let v: Value = serde_json::from_str(&text).unwrap();
        let keys: Vec<&str> = v.as_object().unwrap().keys().map(String::as_str).collect();
        assert_eq!(keys, ["error"], "{v}");
        assert_eq!(v["error"]["code"], "usage", "{v}");
        v
    };
    // An unknown flag, `--json` before the subcommand.
    let v = json_error(&run(slate, &["--json", "stop", "--bogus", "x@1"]));
    let message = v["error"]["message"].as_str().unwrap();
    assert!(message.contains("'--bogus'"), "{v}");
    assert!(
        !message.starts_with("error:") && !message.contains("Usage:"),
        "{v}"
    );
    assert!(
        v["error"]["data"]["usage"]
            .as_str()
            .unwrap()
            .starts_with("slate stop "),
        "{v}"
    );
    // A missing argument, `--json` after the subcommand.
    let v = json_error(&run(slate, &["stop", "--json"]));
    assert!(
        v["error"]["message"].as_str().unwrap().contains("<TARGET>"),
        "{v}"
    );
    // A bad value.
    let v = json_error(&run(slate, &["wait", "--timeout", "soon", "--json"]));
    assert!(
        v["error"]["message"].as_str().unwrap().contains("'soon'"),
        "{v}"
    );
    // A missing subcommand.
    json_error(&run(slate, &["--json"]));
    // A nested command without its subcommand (clap would print the help on stderr).
    let v = json_error(&run(slate, &["--json", "pi"]));
    assert_eq!(
        v["error"]["message"], "'slate pi' requires a subcommand but one was not provided",
        "{v}"
    );
    assert_eq!(
        v["error"]["data"]["usage"], "slate pi [OPTIONS] <COMMAND>",
        "{v}"
    );
    // An argument with controls and bidi characters is quoted exactly, every one escaped.
    let hostile = "--x\u{1b}]52;c;QUJD\u{7}\u{9d}\u{202e}";
    let out = run(slate, &["--json", "status", hostile]);
    let raw = String::from_utf8(out.stdout.clone()).unwrap();
    assert!(
        !raw.trim_end()
            .chars()
            .any(|c| c.is_control() || c == '\u{202e}'),
        "no raw control or bidi character: {raw:?}"
    );
    let v = json_error(&out);
    assert!(
        v["error"]["message"].as_str().unwrap().contains(hostile),
        "{v}"
    );
    // subagent-status has the same one exit.
    let v = json_error(&run(
        env!("CARGO_BIN_EXE_subagent-status"),
        &["--bogus", "--json"],
    ));
    assert!(
        v["error"]["message"]
            .as_str()
            .unwrap()
            .contains("'--bogus'"),
        "{v}"
    );
}

/// Without `--json` (or with it only after `--`) a usage error stays clap's text on stderr,
/// and `--help`/`--version` are not errors, `--json` or not.
#[test]
fn usage_errors_without_json_stay_clap_text() {
    let run = |args: &[&str]| {
        Command::new(env!("CARGO_BIN_EXE_slate"))
            .args(args)
            .env_remove("SLATE_SOCKET")
            .output()
            .unwrap()
    };
    for args in [
        &["stop", "--bogus", "x@1"][..],
        &["status", "--bogus", "--", "--json"],
    ] {
        let out = run(args);
        assert_eq!(out.status.code(), Some(2), "{args:?}");
        assert!(
            out.stdout.is_empty(),
            "{args:?}: {}",
            String::from_utf8_lossy(&out.stdout)
        );
        assert!(
            stderr(&out).starts_with("error: "),
            "{args:?}: {}",
            stderr(&out)
        );
    }
    // --help and --version are not errors, --json or not.
    let help = run(&["--json", "stop", "--help"]);
    assert_eq!(help.status.code(), Some(0));
    assert!(String::from_utf8_lossy(&help.stdout).contains("Usage: slate stop"));
    let version = run(&["--version", "--json"]);
    assert_eq!(version.status.code(), Some(0));
    assert!(String::from_utf8_lossy(&version.stdout).starts_with("slate "));
}

/// `--profile` offers the profile names: in help, and in the generated completion scripts
/// (bash run for real: `slate delegate --profile <Tab>`). Any other name still reaches the
/// delegation policy, which names it (the fleet test's `architect`).
#[test]
fn profile_completes_the_profile_names() {
    let names = ["scout", "review", "general", "implementation"];
    let slate = env!("CARGO_BIN_EXE_slate");
    let script = |shell: &str| {
        let out = Command::new(slate)
            .args(["completions", shell])
            .output()
            .unwrap();
        assert!(out.status.success());
        String::from_utf8(out.stdout).unwrap()
    };
    let dir = std::env::temp_dir().join(format!("slate-complete-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let bash_script = dir.join("slate.bash");
    std::fs::write(&bash_script, script("bash")).unwrap();
    let complete = |words: &str, cword: usize| {
        let program = format!(
            "source {}; COMP_WORDS=({words}); COMP_CWORD={cword}; COMP_LINE=\"${{COMP_WORDS[*]}}\"; \
             COMP_POINT=${{#COMP_LINE}}; _slate slate \"${{COMP_WORDS[COMP_CWORD]}}\" \
             \"${{COMP_WORDS[COMP_CWORD-1]}}\"; printf '%s\\n' \"${{COMPREPLY[@]}}\"",
            bash_script.display()
        );
        let out = Command::new("bash")
            .args(["--norc", "--noprofile", "-c", &program])
            .current_dir(&dir)
            .output()
            .unwrap();
        assert!(out.status.success(), "{}", stderr(&out));
        let mut got: Vec<String> = String::from_utf8(out.stdout)
            .unwrap()
            .lines()
            .map(str::to_owned)
            .collect();
        got.sort();
        got
    };
    let mut sorted = names.map(str::to_owned).to_vec();
    sorted.sort();
    assert_eq!(complete("slate delegate --profile ''", 3), sorted);
    assert_eq!(complete("slate delegate --profile re", 3), ["review"]);
    assert_eq!(
        complete("slate --json delegate x --profile i", 5),
        ["implementation"]
    );

    let fish = script("fish");
    let line = fish
        .lines()
        .find(|l| l.contains("__fish_slate_using_subcommand delegate") && l.contains("-l profile"))
        .unwrap_or_else(|| panic!("no fish --profile line"));
    let zsh = script("zsh");
    let zline = zsh
        .lines()
        .find(|l| l.contains("--profile="))
        .unwrap_or_else(|| panic!("no zsh --profile line"));
    for name in names {
        assert!(line.contains(name), "fish offers {name}: {line}");
        assert!(zline.contains(name), "zsh offers {name}: {zline}");
    }
    let help = Command::new(slate)
        .args(["delegate", "--help"])
        .output()
        .unwrap();
    assert!(
        String::from_utf8_lossy(&help.stdout)
            .contains("[possible values: scout, review, general, implementation]"),
        "{}",
        String::from_utf8_lossy(&help.stdout)
    );
    let _ = std::fs::remove_dir_all(&dir);
}

/// `slate man --dir` writes every page the top page refers to (`slate-NAME(1)` for each
/// subcommand, nested ones by their whole path), the top page has the sections clap does not
/// write, and `mandoc -T lint` finds nothing to say where mandoc is installed (`.ci/run`
/// installs it; elsewhere the lint is skipped loudly).
#[test]
fn every_man_page_the_top_page_names_is_written() {
    let run = |args: &[&str]| {
        Command::new(env!("CARGO_BIN_EXE_slate"))
            .args(args)
            .output()
            .unwrap()
    };
    let dir = std::env::temp_dir().join(format!("slate-man-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let out = run(&["man", "--dir", dir.to_str().unwrap()]);
    assert!(out.status.success(), "{}", stderr(&out));
    let top = std::fs::read_to_string(dir.join("slate.1")).unwrap();
    assert_eq!(
        top,
        String::from_utf8_lossy(&run(&["man"]).stdout),
        "--dir writes what man prints"
    );
    for section in ["EXIT STATUS", "ENVIRONMENT", "FILES", "EXAMPLES"] {
        assert!(
            top.contains(&format!(".SH \"{section}\"")) || top.contains(&format!(".SH {section}")),
            "{section} section"
        );
    }
    for code in ["0", "1", "2", "3", "4"] {
        assert!(
            top.contains(&format!("\\fB{code}\\fR")),
            "exit status {code} listed"
        );
    }
    let referenced = regex::Regex::new(r"(slate(?:\\-[a-z]+)+)\\?\(1\)").unwrap();
    let mut names: Vec<String> = referenced
        .captures_iter(&top)
        .map(|c| c[1].replace("\\-", "-"))
        .collect();
    names.sort();
    names.dedup();
    assert!(
        names.len() > 20,
        "the top page lists the subcommands: {names:?}"
    );
    assert!(
        names.contains(&"slate-pi-install".to_owned()) || names.contains(&"slate-pi".to_owned())
    );
    for name in &names {
        assert!(
            dir.join(format!("{name}.1")).is_file(),
            "{name}(1) is referenced but not written"
        );
    }
    assert!(
        dir.join("slate-pi-install.1").is_file(),
        "nested subcommands get their own page"
    );
    assert!(
        !dir.join("slate-help.1").exists(),
        "no page for clap's help subcommand"
    );
    // Every argument has help: an entry (`.TP`, its name line) is followed by text.
    for entry in std::fs::read_dir(&dir).unwrap() {
        let path = entry.unwrap().path();
        let page = std::fs::read_to_string(&path).unwrap();
        let lines: Vec<&str> = page.lines().collect();
        for w in lines.windows(3) {
            if w[0] == ".TP" && !w[1].starts_with('.') {
                assert!(
                    !w[2].starts_with('.') && !w[2].is_empty(),
                    "{}: {} has no help text",
                    path.display(),
                    w[1]
                );
            }
        }
    }
    if Command::new("mandoc").arg("-V").output().is_ok() {
        for entry in std::fs::read_dir(&dir).unwrap() {
            let path = entry.unwrap().path();
            let lint = Command::new("mandoc")
                .args(["-T", "lint", "-W", "warning"])
                .arg(&path)
                .output()
                .unwrap();
            assert!(
                lint.status.success() && lint.stdout.is_empty(),
                "mandoc -T lint {}: {}{}",
                path.display(),
                String::from_utf8_lossy(&lint.stdout),
                String::from_utf8_lossy(&lint.stderr)
            );
        }
    } else {
        assert!(
            !std::env::var("CI").is_ok_and(|v| v == "true"),
            "mandoc is missing under CI=true (.ci/run installs it)"
        );
        eprintln!("SKIPPED: mandoc -T lint of the man pages: mandoc is not installed");
    }
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_root_model_without_a_provider_is_a_usage_error() {
    let base = std::env::temp_dir().join(format!("slate-cli-model-{}", std::process::id()));
    std::fs::create_dir_all(base.join("agent")).unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_slate"))
        .args(["run", "--backend", "sim", "--model", "no-provider", "-"])
        .current_dir(&base)
        .env("PI_CODING_AGENT_DIR", base.join("agent"))
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains("--model"), "{}", stderr(&out));
    let _ = std::fs::remove_dir_all(&base);
}

/// Every `--json` failure has the one shape `{"error": {"code", "message"}}`, and a
/// coordinator at its connection limit exits 4 (`busy`), not 2.
#[test]
fn json_errors_have_one_shape_and_busy_exits_4() {
    let f = Fixture::start("shapes");
    let usage = f.slate(&["--json", "stop", "not-a-target"]);
    assert_eq!(usage.status.code(), Some(2));
    let v: Value = serde_json::from_slice(&usage.stdout).unwrap();
    assert_eq!(v["error"]["code"], "usage", "{v}");
    assert!(
        v["error"]["message"].as_str().unwrap().contains("UUID"),
        "{v}"
    );
    let stranger = "00000000-0000-4000-8000-000000000001@1";
    let refused = f.slate(&["--json", "stop", stranger]);
    assert_eq!(refused.status.code(), Some(1));
    let v: Value = serde_json::from_slice(&refused.stdout).unwrap();
    assert_eq!(v["error"]["code"], "unknown-identity", "{v}");
    // Fill every connection slot (64) with peers that never say hello, then ask.
    let held: Vec<std::os::unix::net::UnixStream> = (0..64)
        .map(|_| std::os::unix::net::UnixStream::connect(&f.socket).unwrap())
        .collect();
    std::thread::sleep(Duration::from_millis(200));
    // The operator's status is never refused for capacity (the reserved lane serves it) ...
    let status = f.slate(&["--json", "status"]);
    assert_eq!(status.status.code(), Some(0), "{}", stderr(&status));
    // ... but other methods over the limit are busy, with their own exit code.
    let busy = f.slate(&["--json", "inbox"]);
    assert_eq!(busy.status.code(), Some(4), "{}", stderr(&busy));
    let v: Value = serde_json::from_slice(&busy.stdout).unwrap();
    assert_eq!(v["error"]["code"], "busy", "{v}");
    let text = f.slate(&["inbox"]);
    assert_eq!(text.status.code(), Some(4));
    assert!(stderr(&text).contains("busy"), "{}", stderr(&text));
    drop(held);
}

/// `slate status --json | head -c 0` (and `subagent-status`): the reader is gone before
/// anything is written; the command ends quietly (no panic, no message) with exit 0.
#[test]
fn a_closed_stdout_ends_quietly() {
    let f = Fixture::start("pipe");
    let _ = f.json(&["delegate", "--background", "Something to list"]);
    let slate = env!("CARGO_BIN_EXE_slate");
    let status = env!("CARGO_BIN_EXE_subagent-status");
    for (program, args) in [
        (slate, &["--json", "status"][..]),
        (slate, &["status"][..]),
        (status, &["--json"][..]),
        (status, &[][..]),
    ] {
        let mut cmd = Command::new(program);
        cmd.args(args)
            .current_dir(&f.work)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        Fixture::env(&f.base, &mut cmd);
        let mut child = cmd.spawn().unwrap();
        drop(child.stdout.take());
        let out = child.wait_with_output().unwrap();
        assert_eq!(out.status.code(), Some(0), "{args:?}: {}", stderr(&out));
        assert_eq!(stderr(&out), "", "{args:?}");
    }
}

/// Regression: `slate serve` kept the `delegation.json` it read at start, so a lowered
/// limit or a corrupt file had no effect until a restart.
#[test]
fn a_serving_coordinator_reads_delegation_json_at_every_invocation() {
    let slow = serde_json::json!({"steps": [{"think": 60000}, {"request": {
        "ms": 10, "text": "late", "inputTokens": 1, "outputTokens": 1}}]});
    let scripts = serde_json::json!({"default": slow, "scripts": []});
    let policy = serde_json::json!({"scheduling": {"concurrency": 2}});
    let f = Fixture::start_with("live-policy", Some(&policy), Some(&scripts));
    let operator = f.base.join("agent/delegation.json");
    let running = f.json(&["delegate", "--background", "Hold a permit"]);
    let running = format!("{}@1", running["children"][0]["id"].as_str().unwrap());

    // The fleet's answer is kept while nothing changes, but not past a policy change: the
    // next status reads the file, with no other input in between.
    let before = f.json(&["status"]);
    assert_eq!(before["policy"]["requests"], 100, "{}", before["policy"]);
    std::fs::write(
        &operator,
        r#"{"scheduling": {"concurrency": 2, "requests": 3}}"#,
    )
    .unwrap();
    let after = f.json(&["status"]);
    assert_eq!(after["policy"]["requests"], 3, "{}", after["policy"]);
    let next = f.json(&["delegate", "--background", "Under the new limit"]);
    assert_eq!(next["children"][0]["limits"]["requests"], 3, "{next}");

    std::fs::write(&operator, "{ not json").unwrap();
    let out = f.slate(&["delegate", "--background", "Refused"]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("refused [invalid-request]"),
        "{}",
        stderr(&out)
    );
    assert!(
        stderr(&out).contains(&operator.display().to_string()),
        "{}",
        stderr(&out)
    );
    let status = f.slate(&["status"]);
    assert_eq!(status.status.code(), Some(0), "{}", stderr(&status));
    let stop = f.slate(&["stop", &running]);
    assert_eq!(stop.status.code(), Some(0), "{}", stderr(&stop));

    std::fs::write(&operator, r#"{"scheduling": {"requests": 5}}"#).unwrap();
    let fixed = f.json(&["delegate", "--background", "Admitted again"]);
    assert_eq!(fixed["children"][0]["limits"]["requests"], 5, "{fixed}");
}

fn now_ms() -> u64 {
    u64::try_from(
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_millis(),
    )
    .unwrap()
}

/// Issue 14, item 4: "a dead coordinator looks alive". After `kill -9` of `slate serve`,
/// `slate status --parent ID` showed its workers `running` forever with a growing elapsed
/// time, and no sign that the coordinator died. Now every surface says it died and since when:
/// `status --parent` (text and the typed `coordinator` member of `--json`), a `slate watch
/// --lines` that was attached (its last document), and one started afterwards (from the log).
/// The last known rows stay as recorded, and their elapsed time does not move.
#[test]
fn a_dead_coordinator_looks_dead_4() {
    let slow = serde_json::json!({"default": {"steps": [{"think": 60000}, {"request": {
        "ms": 10, "text": "late", "inputTokens": 1, "outputTokens": 1}}]}, "scripts": []});
    let mut f = Fixture::start_with("dead", None, Some(&slow));
    let parent = f.parent.clone();
    f.json(&["delegate", "--background", "Hold on for a minute"]);
    let deadline = Instant::now() + Duration::from_secs(20);
    while f.json(&["status"])["children"][0]["status"] != "running" {
        assert!(Instant::now() < deadline, "the worker never ran");
        std::thread::sleep(Duration::from_millis(50));
    }
    // A widget feed attached while it lives.
    let mut watch = Command::new(env!("CARGO_BIN_EXE_slate"));
    watch
        .args(["watch", "--lines", "--width", "100", "--parent", &parent])
        .current_dir(&f.work)
        .stdout(Stdio::piped())
        .stderr(Stdio::null());
    Fixture::env(&f.base, &mut watch);
    let mut watch = watch.spawn().unwrap();
    let mut docs = BufReader::new(watch.stdout.take().unwrap()).lines();
    let first: Value = serde_json::from_str(&docs.next().unwrap().unwrap()).unwrap();
    assert!(first.get("coordinator").is_none(), "{first}");

    let mut server = f.server.take().unwrap();
    server.kill().unwrap(); // SIGKILL: no shutdown, no cleanup
    server.wait().unwrap();
    let killed_at = now_ms();

    let last: Value = serde_json::from_str(&docs.last().unwrap().unwrap()).unwrap();
    assert_eq!(watch.wait().unwrap().code(), Some(0));
    assert_eq!(last["coordinator"]["state"], "died", "{last}");
    let banner = last["lines"][0].as_str().unwrap();
    assert!(banner.contains("coordinator died"), "{last}");
    assert!(
        last["lines"].as_array().unwrap().len() >= 2,
        "the last known rows stay: {last}"
    );

    let v = f.json(&["status", "--parent", &parent]);
    assert_eq!(v["readOnlyHistory"], true);
    assert_eq!(v["coordinator"]["state"], "died", "{v}");
    let seen = v["coordinator"]["lastSignOfLife"].as_u64().unwrap();
    assert!(
        seen <= killed_at && seen + 6_000 >= killed_at,
        "last sign of life {seen} within a heartbeat of the kill at {killed_at}"
    );
    assert_eq!(
        v["children"][0]["status"], "running",
        "last known, as recorded"
    );

    let text = |f: &Fixture| {
        let out = f.slate(&["status", "--parent", &parent]);
        assert!(out.status.success(), "{}", stderr(&out));
        String::from_utf8(out.stdout).unwrap()
    };
    let before = text(&f);
    assert!(
        before.contains("died") && before.contains("last known"),
        "{before}"
    );
    assert!(
        before.contains("had not finished when it stopped"),
        "{before}"
    );
    std::thread::sleep(Duration::from_millis(1_100));
    assert_eq!(text(&f), before, "the elapsed time stands still");

    let out = f.slate(&["watch", "--lines", "--parent", &parent]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let doc: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(doc["coordinator"]["state"], "died", "{doc}");
    assert!(
        doc["lines"][0]
            .as_str()
            .unwrap()
            .contains("coordinator died")
    );

    // The Hub is a live view: on a terminal (`script` gives it one), naming the dead
    // coordinator says how it ended and where its last known states are.
    let mut hub = Command::new("script");
    hub.args(["-qec"])
        .arg(format!(
            "{} hub --parent {parent}",
            env!("CARGO_BIN_EXE_slate")
        ))
        .arg("/dev/null")
        .current_dir(&f.work)
        .stdin(std::process::Stdio::null());
    Fixture::env(&f.base, &mut hub);
    let out = hub.output().unwrap();
    let said = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(3), "{said}");
    assert!(
        said.contains("died") && said.contains(&format!("slate status --parent {parent}")),
        "{said}"
    );
}

/// Item 4's other half: a coordinator that shut down cleanly says so in its log, and
/// `status --parent` tells it apart from one that died.
#[test]
fn a_coordinator_that_shut_down_is_not_called_dead_4() {
    let mut f = Fixture::start("shut-down");
    let parent = f.parent.clone();
    f.json(&["delegate", "Review the lifecycle tests"]);
    let before = now_ms();
    assert!(f.stop_server().success());
    let v = f.json(&["status", "--parent", &parent]);
    assert_eq!(v["coordinator"]["state"], "shutDown", "{v}");
    assert!(v["coordinator"]["at"].as_u64().unwrap() >= before, "{v}");
    let out = f.slate(&["status", "--parent", &parent]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains("shut down at") && !text.contains("died"),
        "{text}"
    );
}

//! A real terminal: `slate demo` inside tmux on a private server. Every step waits for a
//! condition on the captured screen (polling `capture-pane`), never for a fixed time: the
//! roster shows the live demo, a filter narrows it, the tools pane shows a worker's tool
//! calls, `x` then `y` stops the selected generation, the CLI confirms it against the same
//! coordinator, and `q` restores the terminal and removes the socket.
//!
//! Without tmux the test prints SKIPPED, except under `CI=true` (`.ci/run` installs tmux),
//! where a missing tmux fails it.

#![allow(clippy::unwrap_used, reason = "test fixtures fail loudly")]

#[path = "support/fake_llm.rs"]
mod fake_llm;
#[path = "support/pi_env.rs"]
mod pi_env;

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::time::{Duration, Instant};

const SLATE: &str = env!("CARGO_BIN_EXE_slate");

struct Tmux {
    server: String,
    base: PathBuf,
}

impl Tmux {
    fn available() -> bool {
        Command::new("tmux")
            .arg("-V")
            .output()
            .is_ok_and(|o| o.status.success())
    }

    /// A private tmux server running `command` in a 160×45 window.
    fn start(name: &str, command: &str) -> Self {
        Self::start_with(name, |_| command.to_owned())
    }

    /// [`Tmux::start`] at `width`×`height`.
    fn start_sized(name: &str, command: &str, width: u16, height: u16) -> Self {
        Self::start_at(name, |_| command.to_owned(), (width, height))
    }

    /// [`Tmux::start`] with a command built once the directories exist (under `base`).
    fn start_with(name: &str, command: impl FnOnce(&Path) -> String) -> Self {
        Self::start_at(name, command, (160, 45))
    }

    fn start_at(name: &str, command: impl FnOnce(&Path) -> String, size: (u16, u16)) -> Self {
        let base = std::env::temp_dir().join(format!("slate-tmux-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&base);
        for d in ["work", "agent", "run"] {
            std::fs::create_dir_all(base.join(d)).unwrap();
        }
        let tmux = Self {
            server: format!("slate-test-{name}-{}", std::process::id()),
            base,
        };
        let env = tmux.env_prefix();
        let command = command(&tmux.base);
        let out = tmux
            .tmux()
            .args(["new-session", "-d", "-s", "t", "-x"])
            .arg(size.0.to_string())
            .arg("-y")
            .arg(size.1.to_string())
            .arg(format!(
                "cd {} && {env} {command}; echo SLATE-EXIT=$?; sleep 600",
                tmux.work().display()
            ))
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "tmux: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        tmux
    }

    fn work(&self) -> PathBuf {
        self.base.join("work")
    }

    fn env_prefix(&self) -> String {
        format!(
            "env -u SLATE_SOCKET -u NO_COLOR XDG_RUNTIME_DIR={} PI_CODING_AGENT_DIR={} TERM=xterm-256color",
            self.base.join("run").display(),
            self.base.join("agent").display()
        )
    }

    fn tmux(&self) -> Command {
        let mut cmd = Command::new("tmux");
        cmd.args(["-L", &self.server, "-f", "/dev/null"]);
        cmd
    }

    fn screen(&self) -> String {
        let out = self
            .tmux()
            .args(["capture-pane", "-p", "-t", "t"])
            .output()
            .unwrap();
        String::from_utf8_lossy(&out.stdout).into_owned()
    }

    /// The screen with its SGR attributes as escape sequences.
    fn screen_with_attributes(&self) -> String {
        let out = self
            .tmux()
            .args(["capture-pane", "-p", "-e", "-t", "t"])
            .output()
            .unwrap();
        String::from_utf8_lossy(&out.stdout).into_owned()
    }

    fn keys(&self, keys: &[&str]) {
        let out = self
            .tmux()
            .args(["send-keys", "-t", "t"])
            .args(keys)
            .output()
            .unwrap();
        assert!(out.status.success());
    }

    /// Literal text (no key-name lookup).
    fn type_text(&self, text: &str) {
        let out = self
            .tmux()
            .args(["send-keys", "-t", "t", "-l", text])
            .output()
            .unwrap();
        assert!(out.status.success());
    }

    /// Pastes `text` as the terminal would (`paste-buffer -p`: bracketed, when the
    /// application turned bracketed paste on).
    fn paste(&self, text: &str) {
        use std::io::Write as _;
        let mut load = self
            .tmux()
            .args(["load-buffer", "-b", "slate-paste", "-"])
            .stdin(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        load.stdin
            .take()
            .unwrap()
            .write_all(text.as_bytes())
            .unwrap();
        assert!(load.wait().unwrap().success());
        let out = self
            .tmux()
            .args(["paste-buffer", "-p", "-d", "-b", "slate-paste", "-t", "t"])
            .output()
            .unwrap();
        assert!(out.status.success());
    }

    /// Polls the screen until `ready` holds; on timeout fails with the last screen.
    fn wait_for(&self, what: &str, ready: impl Fn(&str) -> bool) -> String {
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            let screen = self.screen();
            if ready(&screen) {
                return screen;
            }
            assert!(
                Instant::now() < deadline,
                "timed out waiting for {what}; the screen was:\n{screen}"
            );
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    fn slate(&self, args: &[&str]) -> Output {
        Command::new(SLATE)
            .args(args)
            .current_dir(self.work())
            .env_remove("SLATE_SOCKET")
            .env("XDG_RUNTIME_DIR", self.base.join("run"))
            .env("PI_CODING_AGENT_DIR", self.base.join("agent"))
            .output()
            .unwrap()
    }
}

impl Drop for Tmux {
    fn drop(&mut self) {
        let _ = self.tmux().arg("kill-server").output();
        let _ = std::fs::remove_dir_all(&self.base);
    }
}

/// The roster row (left of the pane border) that mentions `text`.
fn roster_row<'s>(screen: &'s str, text: &str) -> Option<&'s str> {
    screen
        .lines()
        .map(|l| l.split('│').next().unwrap_or(l))
        .find(|l| l.contains(text))
}

fn sockets(dir: &Path) -> usize {
    std::fs::read_dir(dir.join("run/slate")).map_or(0, |d| {
        d.filter_map(Result::ok)
            .filter(|e| e.path().extension().is_some_and(|x| x == "sock"))
            .count()
    })
}

#[test]
fn the_demo_hub_filters_shows_tools_and_stops_with_confirmation_in_a_real_terminal() {
    if !Tmux::available() {
        assert!(
            std::env::var("CI").as_deref() != Ok("true"),
            "tmux is required in CI (.ci/run installs it)"
        );
        eprintln!("SKIPPED: tmux is not installed; the real-terminal Hub test did not run");
        return;
    }
    let t = Tmux::start("demo", &format!("{SLATE} demo"));

    // The Hub opens on the live demo: the watcher runs among the first batch.
    t.wait_for("the roster with the running watcher", |s| {
        s.contains("Slate Hub")
            && roster_row(s, "Watch the build").is_some_and(|r| r.contains("running"))
    });
    assert_eq!(sockets(&t.base), 1, "the demo serves one control socket");

    // Select: ↓ moves off the first row; the thread follows the new selection.
    let pane = |s: &str| -> String {
        s.lines()
            .filter_map(|l| l.split_once('│').map(|(_, right)| right.to_owned()))
            .collect::<Vec<_>>()
            .join("\n")
    };
    t.wait_for("the first row's thread", |s| {
        pane(s).contains("Map the config loader")
    });
    t.keys(&["Down"]);
    t.wait_for("another generation's thread", |s| {
        let right = pane(s);
        right.contains("▌ user") && !right.contains("Map the config loader")
    });

    // Filter: only the watcher's row stays in the roster.
    t.keys(&["/"]);
    t.type_text("Watch");
    t.keys(&["Enter"]);
    t.wait_for("the filtered roster", |s| {
        s.contains("filter /Watch")
            && roster_row(s, "Watch the build").is_some()
            && roster_row(s, "Audit the lockfile").is_none()
            && roster_row(s, "Map the config").is_none()
    });

    // Tools pane (Tab twice from the thread): complete arguments and results.
    t.keys(&["Tab", "Tab"]);
    t.wait_for("the watcher's tool calls", |s| {
        s.contains("tail -n 20 target/build.log") && s.contains("Compiling slate")
    });

    // Stop: `x` pins the target and asks; `y` confirms.
    t.keys(&["x"]);
    let prompt = t.wait_for("the stop prompt", |s| {
        s.lines()
            .any(|l| l.starts_with("stop ") && l.contains("@1 (running)"))
    });
    let target = prompt
        .lines()
        .find(|l| l.starts_with("stop "))
        .and_then(|l| l.split_whitespace().nth(1))
        .unwrap()
        .to_owned();
    assert_eq!(
        target.len(),
        38,
        "the prompt shows the full UUID@generation: {target}"
    );
    t.keys(&["y"]);
    t.wait_for("the stopped watcher", |s| {
        roster_row(s, "Watch the build").is_some_and(|r| r.contains("cancelled"))
    });

    // The CLI sees the same coordinator and the same outcome.
    let out = t.slate(&["--json", "status", &target]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let status: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(status["snapshot"]["status"], "cancelled");

    // Quit: the terminal is restored, the demo drained and its socket removed.
    t.keys(&["q"]);
    let end = t.wait_for("the shell after the Hub", |s| s.contains("SLATE-EXIT="));
    assert!(end.contains("SLATE-EXIT=0"), "{end}");
    assert!(
        !end.contains("Slate Hub"),
        "the alternate screen is gone:\n{end}"
    );
    assert_eq!(sockets(&t.base), 0, "the socket is removed at exit");
}

/// Issue 21: at 80×24 the demo's Hub is the compact layout, and a newcomer still sees the
/// fleet: one line per generation (status mark, handle, role, status) above the selected
/// generation's thread, and no line wider than the terminal.
#[test]
fn the_demo_at_80x24_lists_the_fleet_above_the_thread() {
    if !Tmux::available() {
        assert!(
            std::env::var("CI").as_deref() != Ok("true"),
            "tmux is required in CI (.ci/run installs it)"
        );
        eprintln!("SKIPPED: tmux is not installed; the real-terminal Hub test did not run");
        return;
    }
    let t = Tmux::start_sized("demo80", &format!("{SLATE} demo"), 80, 24);
    let is_row = |l: &str| {
        let words: Vec<&str> = l.split_whitespace().collect();
        words.len() >= 4
            && ["●", "✓", "⋯", "◌", "‖", "◍", "✗", "⊘"].contains(&words[0])
            && words[1].len() >= 8
            && words[1][..8].chars().all(|c| c.is_ascii_hexdigit())
    };
    let screen = t.wait_for("the compact roster with several generations", |s| {
        s.starts_with("Slate Hub") && s.lines().filter(|l| is_row(l)).count() >= 3
    });
    let lines: Vec<&str> = screen.lines().collect();
    let tabs = lines
        .iter()
        .position(|l| l.contains(" thread ") && l.contains(" details "))
        .unwrap();
    assert!(
        lines[1..tabs].iter().filter(|l| is_row(l)).count() >= 3,
        "the roster is above the thread:\n{screen}"
    );
    assert!(
        lines[tabs - 1].contains('@'),
        "the selected generation's full identity is above the tabs:\n{screen}"
    );
    for line in &lines {
        assert!(
            unicode_width::UnicodeWidthStr::width(*line) <= 80,
            "wider than 80 columns: {line:?}"
        );
    }
    t.keys(&["q"]);
    let end = t.wait_for("the shell after the Hub", |s| s.contains("SLATE-EXIT="));
    assert!(end.contains("SLATE-EXIT=0"), "{end}");
}

/// Issue 14, item 8: a multi-line paste into the steer prompt stays in the prompt; its `x`
/// and `y` lines never open and confirm a stop.
#[test]
fn a_pasted_multi_line_text_stays_in_the_steer_prompt_in_a_real_terminal_8() {
    if !Tmux::available() {
        assert!(
            std::env::var("CI").as_deref() != Ok("true"),
            "tmux is required in CI (.ci/run installs it)"
        );
        eprintln!("SKIPPED: tmux is not installed; the real-terminal paste test did not run");
        return;
    }
    let t = Tmux::start("paste", &format!("{SLATE} demo"));
    t.wait_for("the roster with the running watcher", |s| {
        roster_row(s, "Watch the build").is_some_and(|r| r.contains("running"))
    });
    t.keys(&["/"]);
    t.type_text("Watch");
    t.keys(&["Enter"]);
    t.wait_for("the filtered roster", |s| {
        s.contains("filter /Watch") && roster_row(s, "Map the config").is_none()
    });
    t.keys(&["s"]);
    t.wait_for("the steer prompt", |s| {
        s.lines()
            .any(|l| l.starts_with("steer ") && l.contains("@1 › "))
    });
    t.paste("line one\nx\ny\n");
    let screen = t.wait_for("the pasted text in the prompt", |s| {
        s.lines()
            .any(|l| l.starts_with("steer ") && l.contains("line one↵x↵y↵"))
    });
    assert!(
        !screen.lines().any(|l| l.starts_with("stop ")),
        "no stop prompt opened:\n{screen}"
    );
    // Esc leaves the prompt unsent; the watcher is still running.
    t.keys(&["Escape"]);
    let screen = t.wait_for("the roster after the prompt", |s| {
        !s.lines().any(|l| l.starts_with("steer "))
    });
    assert!(
        roster_row(&screen, "Watch the build").is_some_and(|r| r.contains("running")),
        "{screen}"
    );
    let out = t.slate(&["--json", "status"]);
    assert!(out.status.success());
    let fleet: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let watcher = fleet["children"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| {
            c["assignment"]
                .as_str()
                .is_some_and(|a| a.starts_with("Watch the build"))
        })
        .unwrap();
    assert_eq!(watcher["status"], "running", "{watcher}");
    t.keys(&["q"]);
    t.wait_for("the shell after the Hub", |s| s.contains("SLATE-EXIT=0"));
}

/// Every SGR parameter list in `screen` (the text between `ESC [` and `m`).
fn sgr_params(screen: &str) -> Vec<String> {
    screen
        .split("\u{1b}[")
        .skip(1)
        .filter_map(|rest| rest.split_once('m').map(|(params, _)| params.to_owned()))
        .filter(|p| p.chars().all(|c| c.is_ascii_digit() || c == ';'))
        .collect()
}

/// A foreground or background colour (39/49, "default colour", are resets, not colours).
fn is_colour(param: &str) -> bool {
    param.split(';').any(|code| {
        matches!(
            code.parse::<u32>().unwrap_or(0),
            30..=38 | 40..=48 | 90..=97 | 100..=107
        )
    })
}

#[test]
fn no_color_turns_every_colour_off_in_the_hub() {
    if !Tmux::available() {
        assert!(
            std::env::var("CI").as_deref() != Ok("true"),
            "tmux is required in CI (.ci/run installs it)"
        );
        eprintln!("SKIPPED: tmux is not installed; the NO_COLOR terminal test did not run");
        return;
    }
    let coloured = Tmux::start("colour", &format!("{SLATE} demo"));
    let plain = Tmux::start("nocolor", &format!("env NO_COLOR=1 {SLATE} demo"));
    for t in [&coloured, &plain] {
        t.wait_for("the roster", |s| {
            roster_row(s, "Watch the build").is_some_and(|r| r.contains("running"))
        });
    }
    let with = sgr_params(&coloured.screen_with_attributes());
    assert!(
        with.iter().any(|p| is_colour(p)),
        "colour is on by default: {with:?}"
    );
    let without = sgr_params(&plain.screen_with_attributes());
    assert!(!without.is_empty(), "attributes (reverse, bold) remain");
    assert!(
        without.iter().all(|p| !is_colour(p)),
        "NO_COLOR: no colour at all: {without:?}"
    );
    for t in [&coloured, &plain] {
        t.keys(&["q"]);
        t.wait_for("the shell after the Hub", |s| s.contains("SLATE-EXIT=0"));
    }
}

/// What `docs/cli.md` says of help and usage errors on a terminal: clap styles them (bold and
/// underlined headings, the `error:` label in red), and not at all with `NO_COLOR` set or
/// when the output is not a terminal.
#[test]
fn help_and_usage_errors_are_styled_only_on_a_terminal_without_no_color() {
    if !Tmux::available() {
        assert!(
            std::env::var("CI").as_deref() != Ok("true"),
            "tmux is required in CI (.ci/run installs it)"
        );
        eprintln!("SKIPPED: tmux is not installed; the help colour terminal test did not run");
        return;
    }
    let runs = [
        ("help", format!("{SLATE} stop --help"), "SLATE-EXIT=0"),
        (
            "helpnc",
            format!("env NO_COLOR=1 {SLATE} stop --help"),
            "SLATE-EXIT=0",
        ),
        (
            "helppipe",
            format!("{SLATE} stop --help | cat"),
            "SLATE-EXIT=0",
        ),
        ("usage", format!("{SLATE} stop --bogus"), "SLATE-EXIT=2"),
        (
            "usagenc",
            format!("env NO_COLOR=1 {SLATE} stop --bogus"),
            "SLATE-EXIT=2",
        ),
        (
            "usagepipe",
            format!("{SLATE} stop --bogus 2>&1 | cat"),
            "SLATE-EXIT=0",
        ),
    ];
    let screens: Vec<Vec<String>> = runs
        .iter()
        .map(|(name, command, done)| {
            let t = Tmux::start_sized(&format!("clap-{name}"), command, 100, 40);
            let screen = t.wait_for(done, |s| s.contains(done));
            assert!(screen.contains("Usage: slate stop"), "{name}: {screen}");
            sgr_params(&t.screen_with_attributes())
        })
        .collect();
    let [help, help_nc, help_pipe, usage, usage_nc, usage_pipe] = &screens[..] else {
        unreachable!()
    };
    assert!(
        help.iter().any(|p| p.split(';').any(|c| c == "1")),
        "help on a terminal is styled (bold): {help:?}"
    );
    assert!(
        help.iter().all(|p| !is_colour(p)),
        "help has no colour, only bold and underline: {help:?}"
    );
    assert!(
        usage.iter().any(|p| p.split(';').any(|c| c == "31")),
        "a usage error on a terminal has a red `error:`: {usage:?}"
    );
    for (what, params) in [
        ("help with NO_COLOR", help_nc),
        ("help piped", help_pipe),
        ("usage error with NO_COLOR", usage_nc),
        ("usage error piped", usage_pipe),
    ] {
        assert!(params.is_empty(), "{what}: no escape at all: {params:?}");
    }
}

/// Issue 12, live observation: a real pi worker's streaming text shows in the Hub's LIVE
/// thread before its message ends (the fake LLM streams `SLOW8`: `word0 ` … `word31 `, four a
/// second), and the final message replaces the streaming one.
#[test]
fn the_hub_shows_a_real_workers_streaming_text_before_its_message_ends() {
    if !Tmux::available() {
        assert!(
            std::env::var("CI").as_deref() != Ok("true"),
            "tmux is required in CI (.ci/run installs it)"
        );
        eprintln!("SKIPPED: tmux is not installed; the real-terminal streaming test did not run");
        return;
    }
    let Some(pi) = pi_env::pi_or_skip("hub_streaming_tmux") else {
        return;
    };
    let fake = fake_llm::FakeLlm::start().unwrap();
    // The helper's agent dir, pointed at this test's fake LLM; pi's hermetic environment.
    let t = Tmux::start_with("stream", |base| {
        let agent = base.join("agent");
        let template = pi_env::template_dir();
        let models = std::fs::read_to_string(template.join("models.json"))
            .unwrap()
            .replace("http://127.0.0.1:18080/v1", &fake.base_url());
        std::fs::write(agent.join("models.json"), models).unwrap();
        std::fs::copy(template.join("settings.json"), agent.join("settings.json")).unwrap();
        std::fs::create_dir_all(base.join("home")).unwrap();
        format!(
            "env SLATE_PI='{}' PI_OFFLINE=1 PI_SKIP_VERSION_CHECK=1 PI_TELEMETRY=0 \
                 HOME={} XDG_CACHE_HOME={} {SLATE} hub",
            pi.argv.join(" "),
            base.join("home").display(),
            base.join("cache").display()
        )
    });
    t.wait_for("the Hub on its own coordinator", |s| {
        s.contains("Slate Hub")
    });
    let out = t.slate(&[
        "delegate",
        "--background",
        "--profile",
        "scout",
        "SCENARIO:SLOW8 talk slowly",
    ]);
    assert!(
        out.status.success(),
        "delegate: {}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    let pane = |s: &str| -> String {
        s.lines()
            .filter_map(|l| l.split_once('│').map(|(_, right)| right.to_owned()))
            .collect::<Vec<_>>()
            .join("\n")
    };
    let streaming = t.wait_for("streaming text in the LIVE thread", |s| {
        let right = pane(s);
        right.contains("assistant · streaming") && right.contains("word3")
    });
    assert!(streaming.contains("LIVE"), "{streaming}");
    assert!(
        !pane(&streaming).contains("word31"),
        "shown before the message ended:\n{streaming}"
    );
    // The message ends: the final message replaces the streaming one.
    t.wait_for("the final message", |s| {
        let right = pane(s);
        right.contains("word31") && !right.contains("streaming")
    });
}

//! The user's own interactive pi, in a real terminal: pi 1.6 in a private tmux server, with
//! Slate's extension installed by `slate pi install` into a private agent dir, talking to the
//! fake LLM. What a person sees is read with `capture-pane`; every step waits for a condition on
//! the screen (polling), never for a fixed time.
//!
//! Include with `#[path = "support/pi_tmux.rs"] mod pi_tmux;` next to `fake_llm.rs` and
//! `pi_env.rs`. Without pi or tmux, [`InteractivePi::start`] returns `None` after printing
//! `SKIPPED: …` (a failure under `CI=true`, where `.ci/run` installs both).
//!
//! * [`InteractivePi::screen`] is the pane as text; [`InteractivePi::joined_screen`] joins the
//!   rows tmux wrapped (`capture-pane -J`), so a line wider than the pane shows as one long
//!   line: [`overflowing_lines`] finds them.
//! * [`InteractivePi::resize`] changes the window size as a terminal resize would (pi gets
//!   `SIGWINCH`).
#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::time::{Duration, Instant};

use crate::fake_llm::FakeLlm;
use crate::pi_env::{self, PiCommand, PiSandbox};

const SLATE: &str = env!("CARGO_BIN_EXE_slate");

/// How long one wait may take: real pi starts in about a second, but two cores may be busy
/// building next to the test.
pub const WAIT: Duration = Duration::from_secs(60);

/// Interactive pi in a private tmux server (fields drop in order: tmux first, then the
/// sandbox, which kills stragglers, then the fake LLM).
pub struct InteractivePi {
    server: String,
    pub sandbox: PiSandbox,
    pub llm: FakeLlm,
    pub pi: PiCommand,
    /// The private `XDG_RUNTIME_DIR` (Slate's sockets live below it).
    pub runtime_dir: PathBuf,
    /// One interactive pi at a time in this test binary (dropped last): six at once, each with
    /// its workers, on a two-core machine made the screens lag past the waits.
    _serial: std::sync::MutexGuard<'static, ()>,
}

/// See [`InteractivePi::_serial`].
static SERIAL: std::sync::Mutex<()> = std::sync::Mutex::new(());

impl InteractivePi {
    /// pi at `width`×`height` with Slate installed; `prepare` runs on the sandbox after the
    /// install, before pi starts. `None` when pi or tmux is missing (skipped).
    pub fn start(
        test: &str,
        width: u16,
        height: u16,
        prepare: impl FnOnce(&PiSandbox),
    ) -> Option<Self> {
        let pi = pi_env::pi_or_skip(test)?;
        let serial = SERIAL
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if !tmux_available() {
            assert!(
                !pi_env::in_ci(),
                "{test}: tmux is missing under CI=true (.ci/run installs it)"
            );
            eprintln!("SKIPPED: {test}: tmux is not installed");
            return None;
        }
        let llm = FakeLlm::start().expect("fake LLM");
        let sandbox = PiSandbox::new(test, &llm.base_url()).expect("sandbox");
        let runtime_dir = sandbox.root().join("run");
        std::fs::create_dir(&runtime_dir).expect("runtime dir");
        let this = Self {
            server: format!("slate-pi-{}", sandbox.tag),
            sandbox,
            llm,
            pi,
            runtime_dir,
            _serial: serial,
        };
        let install = this.slate(&["pi", "install"]);
        assert!(
            install.status.success(),
            "slate pi install: {}{}",
            String::from_utf8_lossy(&install.stdout),
            String::from_utf8_lossy(&install.stderr)
        );
        prepare(&this.sandbox);
        let pi_argv = this
            .pi
            .argv
            .iter()
            .map(|a| shell_quote(a))
            .collect::<Vec<_>>()
            .join(" ");
        let out = this
            .tmux()
            .args(["new-session", "-d", "-s", "t", "-x"])
            .arg(width.to_string())
            .arg("-y")
            .arg(height.to_string())
            .arg(format!(
                "cd {} && {pi_argv}; echo PI-EXIT=$?; sleep 600",
                shell_quote(&this.sandbox.work.to_string_lossy())
            ))
            .output()
            .expect("tmux");
        assert!(
            out.status.success(),
            "tmux new-session: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        // A detached session keeps the size it is given (resize-window sets it later).
        let _ = this
            .tmux()
            .args(["set-option", "-g", "window-size", "manual"])
            .output();
        Some(this)
    }

    /// The tmux client of this test's private server, with the sandbox's hermetic environment
    /// (the server, and so pi, inherits it).
    pub fn tmux(&self) -> Command {
        let mut c = Command::new("tmux");
        c.args(["-L", &self.server, "-f", "/dev/null"]);
        for (key, _) in std::env::vars_os() {
            let k = key.to_string_lossy();
            if k.ends_with("_API_KEY") || k.starts_with("PI_") || k.starts_with("SLATE_") {
                c.env_remove(&key);
            }
        }
        c.env_remove("TMUX")
            .env_remove("NO_COLOR")
            .env("TERM", "xterm-256color")
            .env("PI_CODING_AGENT_DIR", &self.sandbox.agent_dir)
            .env("PI_OFFLINE", "1")
            .env("PI_SKIP_VERSION_CHECK", "1")
            .env("PI_TELEMETRY", "0")
            .env("HOME", &self.sandbox.home)
            .env("XDG_RUNTIME_DIR", &self.runtime_dir)
            .env_remove("XDG_DATA_HOME")
            .env("SLATE_PI", self.pi.argv.join(" "))
            .env(pi_env::TAG_VAR, &self.sandbox.tag);
        c
    }

    /// `slate ARGS` in the sandbox's environment (cwd: its work dir).
    pub fn slate(&self, args: &[&str]) -> Output {
        let mut c = Command::new(SLATE);
        c.args(args)
            .current_dir(&self.sandbox.work)
            .env("PI_CODING_AGENT_DIR", &self.sandbox.agent_dir)
            .env("HOME", &self.sandbox.home)
            .env("XDG_RUNTIME_DIR", &self.runtime_dir)
            .env_remove("XDG_DATA_HOME")
            .env_remove("SLATE_SOCKET")
            .env("SLATE_PI", self.pi.argv.join(" "));
        c.output().expect("slate")
    }

    /// The pane as text (trailing blanks trimmed by tmux).
    pub fn screen(&self) -> String {
        self.capture(&["-p"])
    }

    /// The pane with SGR attributes as escape sequences.
    pub fn screen_with_attributes(&self) -> String {
        self.capture(&["-p", "-e"])
    }

    /// The pane with rows that tmux wrapped joined back into one line each.
    pub fn joined_screen(&self) -> String {
        self.capture(&["-p", "-J"])
    }

    fn capture(&self, flags: &[&str]) -> String {
        let out = self
            .tmux()
            .arg("capture-pane")
            .args(flags)
            .args(["-t", "t"])
            .output()
            .expect("tmux capture-pane");
        String::from_utf8_lossy(&out.stdout).into_owned()
    }

    /// The pane's size, `(columns, rows)`.
    pub fn size(&self) -> (u16, u16) {
        let out = self
            .tmux()
            .args([
                "display-message",
                "-p",
                "-t",
                "t",
                "#{pane_width} #{pane_height}",
            ])
            .output()
            .expect("tmux display-message");
        let text = String::from_utf8_lossy(&out.stdout);
        let mut parts = text.split_whitespace().map(|p| p.parse().unwrap_or(0));
        (parts.next().unwrap_or(0), parts.next().unwrap_or(0))
    }

    /// Keys by tmux name (`Enter`, `Escape`, `C-c`, `Tab`, …).
    pub fn keys(&self, keys: &[&str]) {
        let out = self
            .tmux()
            .args(["send-keys", "-t", "t"])
            .args(keys)
            .output()
            .expect("tmux send-keys");
        assert!(out.status.success(), "send-keys {keys:?}");
    }

    /// Literal text (no key-name lookup).
    pub fn type_text(&self, text: &str) {
        let out = self
            .tmux()
            .args(["send-keys", "-t", "t", "-l", text])
            .output()
            .expect("tmux send-keys");
        assert!(out.status.success(), "send-keys -l {text:?}");
    }

    /// Type `line` into pi's editor and press Enter.
    pub fn submit(&self, line: &str) {
        self.type_text(line);
        self.keys(&["Enter"]);
    }

    /// Resize the window as a terminal would.
    pub fn resize(&self, width: u16, height: u16) {
        let out = self
            .tmux()
            .args(["resize-window", "-t", "t", "-x"])
            .arg(width.to_string())
            .arg("-y")
            .arg(height.to_string())
            .output()
            .expect("tmux resize-window");
        assert!(
            out.status.success(),
            "resize-window: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }

    /// Poll the screen until `ready` holds (at most [`WAIT`]); the screen that passed.
    pub fn wait_for(&self, what: &str, ready: impl Fn(&str) -> bool) -> String {
        self.wait_for_within(what, WAIT, ready)
    }

    pub fn wait_for_within(
        &self,
        what: &str,
        timeout: Duration,
        ready: impl Fn(&str) -> bool,
    ) -> String {
        let deadline = Instant::now() + timeout;
        loop {
            let screen = self.screen();
            if ready(&screen) {
                return screen;
            }
            assert!(
                Instant::now() < deadline,
                "timed out waiting for {what}; the screen:\n{screen}"
            );
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    /// The sandbox's work dir (pi's cwd).
    pub fn work(&self) -> &Path {
        &self.sandbox.work
    }
}

impl InteractivePi {
    /// Quit pi as a user does (`ctrl+d` on an empty editor), wait for it to exit and for
    /// everything it started (Slate's coordinator and workers) to end: the processes still
    /// alive after 15 s, if any.
    pub fn quit(&self) -> Vec<String> {
        let deadline = Instant::now() + Duration::from_secs(15);
        let mut asked: Option<Instant> = None;
        while Instant::now() < deadline {
            let exited = self.screen().contains("PI-EXIT=");
            // Again now and then: a key that arrives while pi is still drawing can be lost.
            if !exited && asked.is_none_or(|t| t.elapsed() > Duration::from_secs(2)) {
                self.keys(&["C-d"]);
                asked = Some(Instant::now());
            }
            // The tmux shell's own `sleep` carries the tag too; it is not pi's.
            let left = self.left_behind();
            if exited && left.is_empty() {
                return left;
            }
            std::thread::sleep(Duration::from_millis(100));
        }
        let mut left = self.left_behind();
        if !self.screen().contains("PI-EXIT=") {
            left.insert(0, "pi did not exit".to_owned());
        }
        left
    }

    /// The sandbox's live processes other than the pane's own shell and its `sleep`, as
    /// `pid: command line`.
    fn left_behind(&self) -> Vec<String> {
        self.sandbox
            .leftover_processes()
            .into_iter()
            .filter_map(|pid| {
                let cmdline = std::fs::read(format!("/proc/{pid}/cmdline")).ok()?;
                let cmdline = String::from_utf8_lossy(&cmdline).replace('\0', " ");
                let pane = cmdline.starts_with("sleep 600") || cmdline.contains("echo PI-EXIT=");
                (!pane).then(|| format!("{pid}: {}", cmdline.trim_end()))
            })
            .collect()
    }
}

impl Drop for InteractivePi {
    fn drop(&mut self) {
        let _ = self.quit();
        let _ = self.tmux().arg("kill-server").output();
    }
}

fn tmux_available() -> bool {
    Command::new("tmux")
        .arg("-V")
        .output()
        .is_ok_and(|o| o.status.success())
}

/// A word for `sh -c`, quoted.
pub fn shell_quote(word: &str) -> String {
    if !word.is_empty()
        && word
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"_@%+=:,./-".contains(&b))
    {
        word.to_owned()
    } else {
        format!("'{}'", word.replace('\'', r"'\''"))
    }
}

/// Lines of a joined screen wider than `width` columns (a row the terminal had to wrap),
/// with their widths.
pub fn overflowing_lines(joined: &str, width: u16) -> Vec<(usize, String)> {
    joined
        .lines()
        .map(|l| (display_width(l), l.to_owned()))
        .filter(|(w, _)| *w > usize::from(width))
        .collect()
}

/// Columns a line takes, as the terminal draws it.
pub fn display_width(line: &str) -> usize {
    unicode_width::UnicodeWidthStr::width(line)
}

//! `slate watch --parent P --lines [--width N]` against a real `slate serve --backend sim`:
//! `{"lines": []}` for the empty registry at once, the widget's rows while a task runs (the
//! elapsed time moving at most once a second), nothing while nothing changes, exit 0 when the
//! coordinator goes away.

#![allow(clippy::unwrap_used, reason = "test fixtures fail loudly")]

use std::io::{BufRead as _, BufReader};
use std::os::unix::fs::PermissionsExt as _;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

const WAIT: Duration = Duration::from_secs(30);

struct Fixture {
    _temp: tempfile::TempDir,
    root: PathBuf,
    server: Option<Child>,
    parent: String,
}

impl Fixture {
    /// A coordinator whose workers think for `think_ms`, then answer.
    fn start(think_ms: u64) -> Self {
        let temp = tempfile::Builder::new()
            .prefix("slate-watch-lines-")
            .tempdir()
            .unwrap();
        let root = std::fs::canonicalize(temp.path()).unwrap();
        for d in ["work", "agent", "run"] {
            std::fs::create_dir(root.join(d)).unwrap();
        }
        std::fs::set_permissions(root.join("run"), std::fs::Permissions::from_mode(0o700)).unwrap();
        let scripts = json!({"default": {"steps": [
            {"think": think_ms},
            {"request": {"ms": 10, "text": "done", "inputTokens": 1, "outputTokens": 1}}
        ]}, "scripts": []});
        std::fs::write(root.join("scripts.json"), scripts.to_string()).unwrap();
        let mut f = Self {
            _temp: temp,
            root,
            server: None,
            parent: String::new(),
        };
        let mut server = f
            .command(&[
                "serve",
                "--backend",
                "sim",
                "--model",
                "fake/model",
                "--scenario",
            ])
            .arg(f.root.join("scripts.json"))
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let mut lines = BufReader::new(server.stdout.take().unwrap()).lines();
        let first = lines.next().unwrap().unwrap();
        first
            .trim_start_matches("slate serve: parent ")
            .clone_into(&mut f.parent);
        std::thread::spawn(move || for _ in lines {});
        f.server = Some(server);
        f
    }

    fn command(&self, args: &[&str]) -> Command {
        let mut c = Command::new(env!("CARGO_BIN_EXE_slate"));
        c.args(args)
            .current_dir(self.root.join("work"))
            .env("PI_CODING_AGENT_DIR", self.root.join("agent"))
            .env("XDG_RUNTIME_DIR", self.root.join("run"))
            .env_remove("SLATE_SOCKET");
        c
    }

    /// `slate watch --parent P --lines --width W`, its stdout lines arriving on a channel.
    fn watch(&self, width: &str) -> (Child, Receiver<(Instant, String)>) {
        let mut child = self
            .command(&[
                "watch",
                "--parent",
                &self.parent,
                "--lines",
                "--width",
                width,
            ])
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let (tx, rx) = mpsc::channel();
        let stdout = child.stdout.take().unwrap();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines() {
                let Ok(line) = line else { break };
                if tx.send((Instant::now(), line)).is_err() {
                    break;
                }
            }
        });
        (child, rx)
    }

    fn delegate(&self, text: &str) {
        let out = self
            .command(&["delegate", "--background", text])
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
    }

    fn stop_server(&mut self) {
        let server = self.server.as_ref().unwrap();
        nix::sys::signal::kill(
            nix::unistd::Pid::from_raw(i32::try_from(server.id()).unwrap()),
            nix::sys::signal::Signal::SIGTERM,
        )
        .unwrap();
    }
}

impl Drop for Fixture {
    fn drop(&mut self) {
        if let Some(mut server) = self.server.take() {
            let _ = server.kill();
            let _ = server.wait();
        }
    }
}

/// One document: exactly `{"lines": [strings]}`.
fn rows(line: &str) -> Vec<String> {
    let value: Value = serde_json::from_str(line).unwrap_or_else(|e| panic!("{line}: {e}"));
    let object = value.as_object().unwrap();
    assert_eq!(object.keys().collect::<Vec<_>>(), ["lines"], "{line}");
    object["lines"]
        .as_array()
        .unwrap()
        .iter()
        .map(|l| l.as_str().unwrap().to_owned())
        .collect()
}

fn next(rx: &Receiver<(Instant, String)>, timeout: Duration) -> Option<(Instant, Vec<String>)> {
    match rx.recv_timeout(timeout) {
        Ok((at, line)) => Some((at, rows(&line))),
        Err(RecvTimeoutError::Timeout | RecvTimeoutError::Disconnected) => None,
    }
}

fn wait_exit(child: &mut Child, timeout: Duration) -> Option<std::process::ExitStatus> {
    let deadline = Instant::now() + timeout;
    while Instant::now() < deadline {
        if let Some(status) = child.try_wait().unwrap() {
            return Some(status);
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    None
}

#[test]
fn the_stream_follows_the_fleet_and_stays_quiet_while_nothing_changes() {
    let mut f = Fixture::start(3500);
    let (mut watch, rx) = f.watch("80");
    let (_, first) = next(&rx, WAIT).expect("a first document");
    assert!(first.is_empty(), "the empty registry: {first:?}");
    assert!(
        next(&rx, Duration::from_millis(1500)).is_none(),
        "nothing changes, nothing is written"
    );

    f.delegate("Survey the flaky tests");
    let mut seen: Vec<(Instant, Vec<String>)> = Vec::new();
    let deadline = Instant::now() + WAIT;
    loop {
        let (at, lines) = next(&rx, WAIT).expect("the widget follows the task");
        assert!(lines.len() <= 12, "{lines:?}");
        for line in &lines {
            assert!(
                unicode_width::UnicodeWidthStr::width(line.as_str()) <= 80,
                "{line:?}"
            );
        }
        let settled = lines.iter().any(|l| l.contains("settled"));
        seen.push((at, lines));
        if settled {
            break;
        }
        assert!(Instant::now() < deadline, "never settled: {seen:?}");
    }
    let running: Vec<&(Instant, Vec<String>)> = seen
        .iter()
        .filter(|(_, l)| l.iter().any(|r| r.contains("running")))
        .collect();
    assert!(!running.is_empty(), "{seen:?}");
    assert!(
        running.iter().all(|(_, l)| l[0].starts_with("Subagents")
            && l.iter().any(|r| r.contains("Survey the flaky tests"))),
        "{seen:?}"
    );
    // The elapsed time moved while it ran, never sooner than a second after the document
    // before: two documents that differ only in elapsed times are a tick (registry changes
    // alter status, stats or activity, and may come closer together).
    let without_elapsed = |lines: &[String]| -> Vec<String> {
        let elapsed = |word: &str| {
            word.ends_with('s')
                && word.len() > 1
                && word[..word.len() - 1]
                    .chars()
                    .all(|c| c.is_ascii_digit() || matches!(c, '.' | 'm' | 'h'))
        };
        lines
            .iter()
            .map(|l| {
                l.split(' ')
                    .filter(|w| !elapsed(w))
                    .collect::<Vec<_>>()
                    .join(" ")
            })
            .collect()
    };
    let ticks: Vec<Duration> = seen
        .windows(2)
        .filter(|w| w[0].1 != w[1].1 && without_elapsed(&w[0].1) == without_elapsed(&w[1].1))
        .map(|w| w[1].0 - w[0].0)
        .collect();
    assert!(!ticks.is_empty(), "the elapsed time never moved: {seen:?}");
    assert!(
        ticks.iter().all(|d| *d >= Duration::from_millis(900)),
        "ticks closer than a second: {ticks:?} in {seen:?}"
    );
    assert!(seen.len() <= 12, "at most one line per change: {seen:?}");
    let last = seen.last().unwrap().1.clone();

    // Settled: nothing counts any more, nothing is written.
    if let Some((_, more)) = next(&rx, Duration::from_millis(2500)) {
        panic!("wrote {more:?} after {last:?} while nothing changed");
    }

    // The coordinator goes away: exit 0.
    f.stop_server();
    let status = wait_exit(&mut watch, WAIT).expect("watch --lines exits");
    assert_eq!(status.code(), Some(0));
}

#[test]
fn without_a_coordinator_it_exits_3_and_width_needs_lines() {
    let f = Fixture::start(10);
    let none = f
        .command(&[
            "watch",
            "--parent",
            "00000000-0000-4000-8000-000000000000",
            "--lines",
        ])
        .output()
        .unwrap();
    assert_eq!(none.status.code(), Some(3));
    assert!(none.stdout.is_empty());
    let usage = f.command(&["watch", "--width", "80"]).output().unwrap();
    assert_eq!(usage.status.code(), Some(2));
    let zero = f
        .command(&["watch", "--lines", "--width", "0"])
        .output()
        .unwrap();
    assert_eq!(zero.status.code(), Some(2));
}

//! `slate watch --parent P --lines [--width N]` against a real `slate serve --backend sim`:
//! `{"width": N, "lines": []}` for the empty registry at once, the widget's rows while a task
//! runs (the elapsed time moving at most once a second), nothing while nothing changes, exit 0
//! when the coordinator goes away; size requests on stdin answered at once with SGR-coloured
//! rows that fit; delivered outcomes collapsing.

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
            .stdin(Stdio::null())
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

/// One document: exactly `{"width": N, "lines": [strings]}`; the lines without their SGR
/// colours, each checked to fit N columns.
fn rows(line: &str) -> Vec<String> {
    let (width, lines) = document(line);
    lines
        .iter()
        .map(|l| {
            let plain = strip_sgr(l);
            assert!(
                unicode_width::UnicodeWidthStr::width(plain.as_str()) <= usize::from(width),
                "{plain:?} is wider than {width}"
            );
            plain
        })
        .collect()
}

/// `(width, lines as written)` of one document.
fn document(line: &str) -> (u16, Vec<String>) {
    let value: Value = serde_json::from_str(line).unwrap_or_else(|e| panic!("{line}: {e}"));
    let object = value.as_object().unwrap();
    assert_eq!(
        object.keys().collect::<Vec<_>>(),
        ["lines", "width"],
        "{line}"
    );
    let width = u16::try_from(object["width"].as_u64().unwrap()).unwrap();
    let lines = object["lines"]
        .as_array()
        .unwrap()
        .iter()
        .map(|l| l.as_str().unwrap().to_owned())
        .collect();
    (width, lines)
}

/// A line without its SGR sequences; anything else starting with ESC fails the test.
fn strip_sgr(line: &str) -> String {
    let mut out = String::new();
    let mut rest = line;
    while let Some(at) = rest.find('\x1b') {
        out.push_str(&rest[..at]);
        let tail = &rest[at..];
        let end = tail.find('m').unwrap_or(tail.len());
        assert!(
            tail.starts_with("\x1b[")
                && end < tail.len()
                && tail[2..end].chars().all(|c| c.is_ascii_digit() || c == ';'),
            "only SGR reaches the host: {line:?}"
        );
        rest = &tail[end + 1..];
    }
    out.push_str(rest);
    out
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

impl Fixture {
    /// `slate watch --parent P --lines` with stdin piped for size requests.
    fn watch_sized(&self) -> (Child, std::process::ChildStdin, Receiver<(Instant, String)>) {
        let mut child = self
            .command(&["watch", "--parent", &self.parent, "--lines"])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let stdin = child.stdin.take().unwrap();
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
        (child, stdin, rx)
    }

    /// The current generations' ids, from `slate status --json`.
    fn ids(&self) -> Vec<String> {
        let out = self
            .command(&["status", "--json", "--parent", &self.parent])
            .output()
            .unwrap();
        let value: Value = serde_json::from_slice(&out.stdout).unwrap();
        value["children"]
            .as_array()
            .unwrap()
            .iter()
            .map(|c| c["id"].as_str().unwrap().to_owned())
            .collect()
    }

    /// One request on the coordinator's socket as the operator: the `result`.
    fn call(&self, method: &str, params: &Value) -> Value {
        use std::io::Write as _;
        let socket = self
            .root
            .join("run")
            .join("slate")
            .join(format!("{}.sock", self.parent));
        let stream = std::os::unix::net::UnixStream::connect(&socket).unwrap();
        let mut reader = BufReader::new(stream.try_clone().unwrap());
        let mut writer = stream;
        let mut ask = |id: u64, method: &str, params: &Value| {
            let line = json!({"id": id, "method": method, "params": params});
            writeln!(writer, "{line}").unwrap();
            let mut answer = String::new();
            reader.read_line(&mut answer).unwrap();
            let answer: Value = serde_json::from_str(&answer).unwrap();
            answer
                .get("result")
                .cloned()
                .unwrap_or_else(|| panic!("{method}: {answer}"))
        };
        ask(
            1,
            "hello",
            &json!({"protocols": [2], "client": "cli_watch_lines"}),
        );
        ask(2, method, params)
    }
}

/// The next document of width `width` (an earlier one at another width is skipped).
fn answer(rx: &Receiver<(Instant, String)>, width: u16) -> (Instant, Vec<String>, Vec<String>) {
    loop {
        let (at, line) = rx.recv_timeout(WAIT).expect("an answer");
        let (w, styled) = document(&line);
        if w == width {
            return (at, rows(&line), styled);
        }
    }
}

#[test]
fn size_requests_are_answered_at_once_with_coloured_rows_that_fit_and_show_handles() {
    use std::io::Write as _;
    let f = Fixture::start(120_000);
    f.delegate("Survey the flaky tests in the parser and the 日本語 notes module");
    f.delegate("Review the scheduler");
    let handles: Vec<String> = f.ids().iter().map(|id| id[..8].to_owned()).collect();
    assert_eq!(handles.len(), 2);
    let (mut watch, mut stdin, rx) = f.watch_sized();
    // The first document, at `--width`'s default, once both rows run.
    loop {
        let (_, lines) = next(&rx, WAIT).expect("a document");
        if lines.iter().filter(|l| l.contains("running")).count() == 2 {
            break;
        }
    }
    let mut times = Vec::new();
    for width in 20..=200u16 {
        let asked = Instant::now();
        writeln!(stdin, "{{\"width\": {width}}}").unwrap();
        stdin.flush().unwrap();
        let (at, lines, styled) = answer(&rx, width);
        times.push(at - asked);
        assert_eq!(lines.len(), 3, "header and two rows at {width}: {lines:?}");
        if width >= 40 {
            for handle in &handles {
                assert!(
                    lines.iter().any(|l| l.contains(handle.as_str())),
                    "{handle} at {width}: {lines:?}"
                );
            }
            assert!(
                styled.iter().any(|l| l.contains("\u{1b}[32m")),
                "running is green at {width}: {styled:?}"
            );
        }
    }
    times.sort();
    let median = times[times.len() / 2];
    eprintln!(
        "width answers: median {median:?}, max {:?} over {} requests",
        times.last().unwrap(),
        times.len()
    );
    assert!(median < Duration::from_millis(250), "median {median:?}");

    // The terminal's height bounds the rows: a third of it, at least three.
    writeln!(stdin, "{{\"width\": 100, \"rows\": 9}}").unwrap();
    let (_, lines, _) = answer(&rx, 100);
    assert_eq!(lines.len(), 3, "{lines:?}");

    // The same size again is answered too (the host asked).
    writeln!(stdin, "{{\"width\": 100, \"rows\": 9}}").unwrap();
    let _ = answer(&rx, 100);

    // Not a request: a usage error naming what a request is.
    writeln!(stdin, "{{\"width\": 0}}").unwrap();
    let status = wait_exit(&mut watch, WAIT).expect("it exits");
    assert_eq!(status.code(), Some(2));
    let mut err = String::new();
    std::io::Read::read_to_string(&mut watch.stderr.take().unwrap(), &mut err).unwrap();
    assert!(err.contains("width 0 is not within 1..1000"), "{err}");
}

#[test]
fn delivered_outcomes_collapse_beyond_the_newest_three_and_the_parent_acknowledges_background_ones()
{
    let f = Fixture::start(10);
    // Foreground: each answered caller received its outcome (delivered).
    for n in 1..=5 {
        let out = f
            .command(&["delegate", &format!("foreground {n}")])
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    // Background: the outcome is published, but no parent session said it arrived.
    f.delegate("background 6");
    let widget = |expect: &dyn Fn(&[String]) -> bool| -> Vec<String> {
        let deadline = Instant::now() + WAIT;
        loop {
            let mut watch = f
                .command(&["watch", "--parent", &f.parent, "--lines", "--width", "120"])
                .stdin(Stdio::null())
                .stdout(Stdio::piped())
                .spawn()
                .unwrap();
            let mut first = String::new();
            BufReader::new(watch.stdout.take().unwrap())
                .read_line(&mut first)
                .unwrap();
            let _ = watch.kill();
            let _ = watch.wait();
            let lines = rows(first.trim_end());
            if expect(&lines) {
                return lines;
            }
            assert!(Instant::now() < deadline, "{lines:?}");
            std::thread::sleep(Duration::from_millis(100));
        }
    };
    let lines = widget(&|l: &[String]| l.iter().filter(|r| r.contains("settled")).count() >= 5);
    assert!(lines[0].contains("6 settled"), "{lines:?}");
    assert!(
        lines.iter().any(|l| l.contains("background 6")),
        "undelivered: shown {lines:?}"
    );
    assert!(
        lines.iter().any(|l| l.contains("+2 finished, delivered")),
        "{lines:?}"
    );
    for n in [3, 4, 5] {
        assert!(
            lines.iter().any(|l| l.contains(&format!("foreground {n}"))),
            "{lines:?}"
        );
    }
    for n in [1, 2] {
        assert!(
            !lines.iter().any(|l| l.contains(&format!("foreground {n}"))),
            "{lines:?}"
        );
    }

    // The parent session acknowledges the background outcome (call 6): it is delivered now,
    // once; other calls were marked already (foreground) or are unknown.
    let marked: u64 = (1..=8)
        .map(|call| {
            f.call("outcomeDelivered", &json!({"call": call}))["generations"]
                .as_u64()
                .unwrap()
        })
        .sum();
    assert_eq!(marked, 1);
    assert_eq!(
        f.call("outcomeDelivered", &json!({"call": 6}))["generations"],
        json!(0)
    );
    let status = f.call("status", &json!({}));
    let delivered = status["children"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|c| c["deliveredAt"].is_u64())
        .count();
    assert_eq!(delivered, 6, "{status}");
    let lines = widget(&|l: &[String]| l.iter().any(|r| r.contains("+3 finished")));
    assert!(
        !lines.iter().any(|l| l.contains("foreground 3")),
        "{lines:?}"
    );

    // `targets`: every current generation with its handle, role and status, in admission order.
    let targets = f.call("targets", &json!({}));
    let targets = targets["targets"].as_array().unwrap();
    assert_eq!(targets.len(), 6);
    for t in targets {
        let target = t["target"].as_str().unwrap();
        assert!(target.ends_with("@1") && target.len() == 38, "{t}");
        assert_eq!(t["handle"].as_str().unwrap(), &target[..8], "{t}");
        assert_eq!(t["role"], json!("scout"));
        assert_eq!(t["status"], json!("settled"));
    }
    assert_eq!(targets[0]["headline"], json!("foreground 1"));
}

//! `slate hub --frames`, the Hub for a host that draws it (pi's `/subagent-hub` overlay):
//! the host's lines as the Hub's input, and the real process against the live demo's
//! coordinator — every frame has the size asked for and no row is wider, keys become the
//! same core commands as in the terminal Hub, `q` ends the process.

#![allow(clippy::unwrap_used, reason = "test fixtures fail loudly")]

use std::io::{BufRead as _, BufReader, Lines, Write as _};
use std::path::PathBuf;
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use serde_json::json;
use unicode_width::UnicodeWidthStr as _;

use slate::ui::hub::frames::{Frame, FrameInput};
use slate::ui::hub::{Key, Msg};

const SLATE: &str = env!("CARGO_BIN_EXE_slate");

#[test]
fn the_hosts_lines_are_sizes_keys_in_pis_names_and_pastes() {
    let msg = |line: &str| serde_json::from_str::<FrameInput>(line).map(FrameInput::msg);
    assert!(matches!(
        msg(r#"{"size":[120,40]}"#),
        Ok(Some(Msg::Resize(120, 40)))
    ));
    assert!(matches!(
        msg(r#"{"size":[0,0]}"#),
        Ok(Some(Msg::Resize(1, 1)))
    ));
    for (id, key) in [
        ("q", Key::Char('q')),
        ("x", Key::Char('x')),
        ("/", Key::Char('/')),
        ("é", Key::Char('é')),
        ("space", Key::Char(' ')),
        ("enter", Key::Enter),
        ("escape", Key::Esc),
        ("backspace", Key::Backspace),
        ("tab", Key::Tab),
        ("shift+tab", Key::BackTab),
        ("up", Key::Up),
        ("down", Key::Down),
        ("pageUp", Key::PageUp),
        ("pageDown", Key::PageDown),
        ("home", Key::Home),
        ("end", Key::End),
        ("ctrl+c", Key::Ctrl('c')),
        ("ctrl+u", Key::Ctrl('u')),
    ] {
        let line = json!({ "key": id }).to_string();
        match msg(&line) {
            Ok(Some(Msg::Key(k))) => assert_eq!(k, key, "{id}"),
            other => panic!("{id}: {other:?}"),
        }
    }
    // Keys the Hub has no use for are dropped, as at a terminal.
    for id in ["f1", "alt+x", "left", "ctrl+shift+p", "\u{1b}"] {
        assert!(
            matches!(msg(&json!({ "key": id }).to_string()), Ok(None)),
            "{id}"
        );
    }
    assert!(matches!(
        msg(r#"{"paste":"x\ny"}"#),
        Ok(Some(Msg::Paste(t))) if t == "x\ny"
    ));
    // Anything else is not a line of the protocol.
    for bad in [
        r#"{"key":"q","extra":1}"#,
        r#"{"size":[80]}"#,
        r#"{"resize":[80,24]}"#,
        r#""q""#,
    ] {
        assert!(msg(bad).is_err(), "{bad}");
    }
}

/// The live demo's coordinator (`slate demo --serve`) in a private runtime directory.
struct Demo {
    base: PathBuf,
    server: Child,
    socket: PathBuf,
}

impl Demo {
    fn start(name: &str) -> Self {
        let base =
            std::env::temp_dir().join(format!("slate-hub-frames-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&base);
        for d in ["work", "agent", "run"] {
            std::fs::create_dir_all(base.join(d)).unwrap();
        }
        let mut server = Command::new(SLATE)
            .args(["demo", "--serve"])
            .current_dir(base.join("work"))
            .env("XDG_RUNTIME_DIR", base.join("run"))
            .env("PI_CODING_AGENT_DIR", base.join("agent"))
            .env_remove("SLATE_SOCKET")
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let mut lines = BufReader::new(server.stdout.take().unwrap()).lines();
        let _parent = lines.next().unwrap().unwrap();
        let socket = PathBuf::from(
            lines
                .next()
                .unwrap()
                .unwrap()
                .trim_start_matches("socket ")
                .to_owned(),
        );
        // The demo's notes follow; drained so it never blocks on a full pipe.
        std::thread::spawn(move || lines.for_each(drop));
        Self {
            base,
            server,
            socket,
        }
    }

    /// `slate hub --frames` on this coordinator, as the extension starts it: the socket is
    /// named explicitly, and the runtime directory is another one (as a tmux server's may be).
    fn frames(&self) -> Host {
        let mut child = Command::new(SLATE)
            .args(["hub", "--frames"])
            .current_dir(self.base.join("work"))
            .env("SLATE_SOCKET", &self.socket)
            .env("XDG_RUNTIME_DIR", self.base.join("agent"))
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let stdin = child.stdin.take().unwrap();
        let lines = BufReader::new(child.stdout.take().unwrap()).lines();
        let (tx, rx) = mpsc::channel();
        std::thread::spawn(move || read_frames(lines, &tx));
        Host {
            child,
            stdin,
            frames: rx,
        }
    }

    fn status(&self, target: &str) -> serde_json::Value {
        let out = Command::new(SLATE)
            .args(["--json", "status", target])
            .current_dir(self.base.join("work"))
            .env("SLATE_SOCKET", &self.socket)
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        serde_json::from_slice(&out.stdout).unwrap()
    }
}

impl Drop for Demo {
    fn drop(&mut self) {
        let _ = nix::sys::signal::kill(
            nix::unistd::Pid::from_raw(i32::try_from(self.server.id()).unwrap()),
            nix::sys::signal::Signal::SIGTERM,
        );
        let _ = self.server.wait();
        let _ = std::fs::remove_dir_all(&self.base);
    }
}

fn read_frames(lines: Lines<BufReader<ChildStdout>>, tx: &mpsc::Sender<Frame>) {
    for line in lines {
        let Ok(line) = line else { return };
        let frame: Frame = serde_json::from_str(&line)
            .unwrap_or_else(|e| panic!("not a frame line ({e}): {line}"));
        if tx.send(frame).is_err() {
            return;
        }
    }
}

/// The host's side of one `slate hub --frames`.
struct Host {
    child: Child,
    stdin: ChildStdin,
    frames: mpsc::Receiver<Frame>,
}

impl Host {
    fn send(&mut self, line: &serde_json::Value) {
        writeln!(self.stdin, "{line}").unwrap();
        self.stdin.flush().unwrap();
    }

    fn key(&mut self, id: &str) {
        self.send(&json!({ "key": id }));
    }

    fn size(&mut self, w: u16, h: u16) {
        self.send(&json!({ "size": [w, h] }));
    }

    /// Frames until one holds `ready`; each is checked against the size last asked for.
    fn wait_for(&mut self, what: &str, size: [u16; 2], ready: impl Fn(&str) -> bool) -> String {
        let deadline = Instant::now() + Duration::from_secs(30);
        let mut last = String::new();
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            let Ok(frame) = self.frames.recv_timeout(left) else {
                panic!("timed out waiting for {what}; the last frame was:\n{last}");
            };
            if frame.size != size {
                continue; // drawn before the host's resize arrived
            }
            assert_eq!(frame.rows.len(), usize::from(size[1]), "one row per line");
            let text: Vec<String> = frame.rows.iter().map(|r| plain(r)).collect();
            for row in &text {
                assert!(
                    row.width() <= usize::from(size[0]),
                    "a row wider than {}: {row:?}",
                    size[0]
                );
            }
            last = text.join("\n");
            if ready(&last) {
                return last;
            }
        }
    }
}

impl Drop for Host {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A styled row without its SGR sequences (the only escapes a frame may hold).
fn plain(row: &str) -> String {
    let mut out = String::new();
    let mut chars = row.chars();
    while let Some(c) = chars.next() {
        if c == '\u{1b}' {
            assert_eq!(chars.next(), Some('['), "only CSI in {row:?}");
            for d in chars.by_ref() {
                if d == 'm' {
                    break;
                }
                assert!(d.is_ascii_digit() || d == ';', "only SGR in {row:?}");
            }
            continue;
        }
        assert!(!c.is_control(), "a control character in {row:?}");
        out.push(c);
    }
    out
}

/// The line of the compact roster (or the wide roster row) that mentions `text`.
fn row_with<'s>(screen: &'s str, text: &str) -> Option<&'s str> {
    screen
        .lines()
        .map(|l| l.split('│').next().unwrap_or(l))
        .find(|l| l.contains(text))
}

#[test]
fn the_frames_hub_follows_its_size_stops_a_worker_and_ends_on_q() {
    let demo = Demo::start("stop");
    let mut host = demo.frames();
    host.size(160, 45);
    host.wait_for("the wide roster with the running watcher", [160, 45], |s| {
        s.starts_with("Slate Hub")
            && row_with(s, "Watch the build").is_some_and(|r| r.contains("running"))
    });

    // 80×24: the compact layout lists the fleet (mark, handle, role, status) above the
    // selected thread, as many rows as a third of the body holds.
    host.size(80, 24);
    let compact = host.wait_for("the compact roster", [80, 24], |s| {
        s.starts_with("Slate Hub") && s.lines().filter(|l| l.contains(" settled ")).count() >= 3
    });
    let lines: Vec<&str> = compact.lines().collect();
    let tabs = lines.iter().position(|l| l.contains(" thread ")).unwrap();
    assert!(tabs >= 5, "the roster is above the pane:\n{compact}");
    for row in &lines[1..tabs - 1] {
        let words: Vec<&str> = row.split_whitespace().collect();
        assert!(
            words.len() >= 4
                && words[1].len() == 8
                && words[1].chars().all(|c| c.is_ascii_hexdigit()),
            "mark, handle, role, status: {row:?}"
        );
    }

    // Filter to the watcher: its row, running; then stop it: `x` pins the full identity,
    // `y` confirms.
    for key in ["/", "W", "a", "t", "c", "h", "enter"] {
        host.key(key);
    }
    host.wait_for("the running watcher in the compact roster", [80, 24], |s| {
        row_with(s, "Watch the build").is_some_and(|r| r.contains("● ") && r.contains("running"))
    });
    host.key("x");
    let prompt = host.wait_for("the stop prompt", [80, 24], |s| {
        s.lines()
            .any(|l| l.starts_with("stop ") && l.contains("@1 (running)"))
    });
    let target = prompt
        .lines()
        .find(|l| l.starts_with("stop "))
        .and_then(|l| l.split_whitespace().nth(1))
        .unwrap()
        .to_owned();
    assert_eq!(target.len(), 38, "the full UUID@generation: {target}");
    let handle = &target[..8];
    assert!(
        row_with(&prompt, handle).is_some_and(|r| r.contains("Watch the build")),
        "the roster row shows the handle {handle}:\n{prompt}"
    );
    host.key("y");
    host.wait_for("the cancelled watcher", [80, 24], |s| {
        row_with(s, "Watch the build").is_some_and(|r| r.contains("cancelled"))
    });
    // The coordinator agrees: the same `stop` as the terminal Hub's.
    assert_eq!(demo.status(&target)["snapshot"]["status"], "cancelled");

    // `q` ends the process.
    host.key("q");
    let deadline = Instant::now() + Duration::from_secs(10);
    let status = loop {
        if let Some(status) = host.child.try_wait().unwrap() {
            break status;
        }
        assert!(
            Instant::now() < deadline,
            "slate hub --frames did not exit on q"
        );
        std::thread::sleep(Duration::from_millis(20));
    };
    assert!(status.success(), "{status}");
}

#[test]
fn a_named_socket_that_does_not_answer_is_an_error_not_a_new_coordinator() {
    let base = std::env::temp_dir().join(format!("slate-hub-frames-none-{}", std::process::id()));
    std::fs::create_dir_all(base.join("run")).unwrap();
    for args in [&["hub", "--frames"][..], &["--json", "hub", "--frames"][..]] {
        let out = Command::new(SLATE)
            .args(args)
            .current_dir(&base)
            .env("SLATE_SOCKET", base.join("gone.sock"))
            .env("XDG_RUNTIME_DIR", base.join("run"))
            .stdin(Stdio::null())
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(3), "{args:?}: no coordinator");
        // Said on stderr, or as the JSON error on stdout with `--json`.
        let said = format!(
            "{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        assert!(said.contains("gone.sock"), "{args:?}: {said}");
    }
    let _ = std::fs::remove_dir_all(&base);
}

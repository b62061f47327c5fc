//! The Hub for a host that draws it (`slate hub --frames`): pi's `/subagent-hub` overlay.
//! The same state machine, loop and view as the terminal Hub; only the edges differ. Input
//! is JSON lines on stdin, output one JSON line per drawn frame on stdout:
//!
//! ```text
//! → {"size":[120,40]}            the area the host gives the Hub (columns, rows)
//! → {"key":"down"}               a key, in pi's key identifiers ("x", "ctrl+c", "shift+tab", …)
//! → {"paste":"text"}             a bracketed paste: text for the open input, never keys
//! ← {"size":[120,40],"rows":["…", …]}   one frame: `rows.len()` = rows, each at most
//!                                        `size[0]` columns wide, SGR-styled (`ansi.rs`)
//! ```
//!
//! No frame is written before the first `size`. `q`/Esc (or the end of stdin) ends the
//! process with status 0; a line that is not one of the three is reported on stderr and
//! ignored.

use std::io::{self, BufRead as _};
use std::sync::Arc;

use ratatui::Terminal;
use ratatui::backend::TestBackend;
use serde::{Deserialize, Serialize};
use tokio::sync::mpsc::{UnboundedSender, unbounded_channel};

use super::event_loop::{Surface, forward, perform, run_loop};
use super::keys::Key;
use super::state::{Hub, HubOptions, Msg, UiEffect};
use crate::control::Client;
use crate::runtime::now_ms;
use crate::ui::ansi::styled_rows;

/// One line from the host.
#[derive(Clone, Debug, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case", deny_unknown_fields)]
pub enum FrameInput {
    /// `[columns, rows]`.
    Size([u16; 2]),
    /// A key identifier in pi's vocabulary ([`Key::from_id`]).
    Key(String),
    Paste(String),
}

impl FrameInput {
    /// What this line means to the Hub; `None` for a key the Hub has no use for.
    pub fn msg(self) -> Option<Msg> {
        match self {
            // A zero-sized area is drawn as the smallest one (the tiny placeholder).
            Self::Size([w, h]) => Some(Msg::Resize(w.max(1), h.max(1))),
            Self::Key(id) => Key::from_id(&id).map(Msg::Key),
            Self::Paste(text) => Some(Msg::Paste(text)),
        }
    }
}

/// One frame for the host.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Frame {
    pub size: [u16; 2],
    pub rows: Vec<String>,
}

impl Frame {
    /// The frame the terminal's buffer holds now.
    pub fn of(terminal: &Terminal<TestBackend>) -> Self {
        let buffer = terminal.backend().buffer();
        Self {
            size: [buffer.area.width, buffer.area.height],
            rows: styled_rows(buffer),
        }
    }
}

/// Runs the Hub on `client`, reading the host's lines from stdin and writing frames to
/// stdout, until `q`/Esc or the end of stdin.
pub async fn run_frames(client: Client, options: HubOptions) -> io::Result<()> {
    let client = Arc::new(client);
    let subscription = client
        .subscribe()
        .await
        .map_err(|e| io::Error::other(e.to_string()))?;
    let (tx, mut rx) = unbounded_channel::<Msg>();
    let forwarder = tokio::spawn(forward(subscription, tx.clone()));
    perform(UiEffect::Reload, &client, &tx);
    spawn_stdin(tx.clone())?;
    let mut terminal = Terminal::new(TestBackend::new(1, 1))?;
    let mut hub = Hub::new(options, now_ms());
    let mut host = Host {
        out: io::stdout().lock(),
        sized: false,
    };
    let result = run_loop(&mut hub, &mut rx, &mut terminal, &client, &tx, &mut host).await;
    forwarder.abort();
    result
}

/// The host: frames go to `out` as JSON lines, from its first `size` on.
pub(super) struct Host<W: io::Write> {
    pub(super) out: W,
    pub(super) sized: bool,
}

impl<W: io::Write> Surface<TestBackend> for Host<W> {
    fn before(&mut self, terminal: &mut Terminal<TestBackend>, batch: &[Msg]) -> io::Result<()> {
        if let Some((w, h)) = batch.iter().rev().find_map(|m| match m {
            Msg::Resize(w, h) => Some((*w, *h)),
            _ => None,
        }) {
            terminal.backend_mut().resize(w, h);
            self.sized = true;
        }
        Ok(())
    }

    fn present(&mut self, terminal: &Terminal<TestBackend>) -> io::Result<()> {
        if !self.sized {
            return Ok(());
        }
        serde_json::to_writer(&mut self.out, &Frame::of(terminal))?;
        self.out.write_all(b"\n")?;
        self.out.flush()
    }
}

/// The host's lines, in order, as messages. A `size` resizes the test backend first (the
/// loop's `step` then tells the Hub), so the frame drawn for it has the new size.
fn spawn_stdin(tx: UnboundedSender<Msg>) -> io::Result<std::thread::JoinHandle<()>> {
    std::thread::Builder::new()
        .name("hub-frames-input".to_owned())
        .spawn(move || {
            let stdin = io::stdin().lock();
            for (n, line) in stdin.lines().enumerate() {
                let Ok(line) = line else { break };
                if line.trim().is_empty() {
                    continue;
                }
                let msg = match serde_json::from_str::<FrameInput>(&line) {
                    Ok(input) => input.msg(),
                    Err(e) => {
                        eprintln!("slate hub --frames: line {}: {e}", n + 1);
                        continue;
                    }
                };
                if let Some(msg) = msg
                    && tx.send(msg).is_err()
                {
                    return;
                }
            }
            // The host is gone (or closed stdin): close as `q` would.
            let _ = tx.send(Msg::Key(Key::Char('q')));
        })
}

//! The simulated worker backend in real time: scripted workers that emit the same
//! `WorkerEvent`s as pi (requests, tools, text with usage, progress, submissions, failures,
//! crashes, hangs that ignore abort). Scripts come from a [`ScriptBook`], usually loaded from
//! a JSON file in `assets/`.

use std::collections::VecDeque;
use std::time::Duration;

use serde::Deserialize;
use tokio::sync::mpsc;

use crate::core::{ChildRef, WorkerEvent, WorkerStart};
use crate::runtime::backend::{
    EventSink, WorkerBackend, WorkerCommand, WorkerDirs, WorkerIdentity,
};
use crate::sim::{Script, Step};

mod transcript;
use transcript::Transcript;

/// Scripts chosen by the start of the assignment text.
#[derive(Clone, Debug, Default, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ScriptBook {
    /// First match wins.
    pub scripts: Vec<BookEntry>,
    /// For assignments no entry matches.
    pub default: Script,
    /// For a resumed window that continues a retained conversation (the continuation text
    /// is what the worker receives).
    #[serde(default)]
    pub resumed: Option<Script>,
}

#[derive(Clone, Debug, PartialEq, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct BookEntry {
    /// The assignment starts with this text.
    pub assignment_prefix: String,
    pub script: Script,
}

impl ScriptBook {
    pub fn parse(json: &str) -> Result<Self, serde_json::Error> {
        serde_json::from_str(json)
    }

    pub fn script_for(&self, start: &WorkerStart) -> Script {
        if start.resume_session
            && let Some(resumed) = &self.resumed
        {
            return resumed.clone();
        }
        let text = start.prompts.first().map_or("", String::as_str);
        self.scripts
            .iter()
            .find(|e| text.starts_with(&e.assignment_prefix))
            .map_or_else(|| self.default.clone(), |e| e.script.clone())
    }
}

/// Runs scripts in real time, `scale` real milliseconds per scripted millisecond.
pub struct SimBackend {
    pub book: ScriptBook,
    pub scale: f64,
    /// Scripted milliseconds a worker spends in `setup` before it is ready (pi's own start
    /// takes about 700 ms).
    pub setup_ms: u64,
}

impl SimBackend {
    pub fn new(book: ScriptBook) -> Self {
        Self {
            book,
            scale: 1.0,
            setup_ms: 40,
        }
    }
}

impl WorkerBackend for SimBackend {
    fn start(
        &self,
        start: WorkerStart,
        dirs: WorkerDirs,
        // A simulated worker runs no process: nothing could present the capability or descend
        // from a pid.
        _identity: WorkerIdentity,
        events: EventSink,
    ) -> mpsc::UnboundedSender<WorkerCommand> {
        let (tx, rx) = mpsc::unbounded_channel();
        let script = self.book.script_for(&start);
        let path = dirs.session_file();
        let worker = SimWorker {
            child: start.child,
            events,
            rx,
            scale: self.scale,
            transcript: path.display().to_string(),
            log: Transcript::new(path, start.child, start.spec.cwd.clone()),
            prompts: start.prompts.clone(),
            call: None,
            setup_ms: self.setup_ms,
        };
        tokio::spawn(worker.run(script));
        tx
    }

    fn name(&self) -> &'static str {
        "sim"
    }
}

struct SimWorker {
    child: ChildRef,
    events: EventSink,
    rx: mpsc::UnboundedReceiver<WorkerCommand>,
    scale: f64,
    transcript: String,
    /// The session file behind `transcript`, written in pi's format.
    log: Transcript,
    prompts: Vec<String>,
    /// The tool call in flight (its call id), between its start and its result.
    call: Option<String>,
    setup_ms: u64,
}

enum Interrupt {
    Abort,
    Release,
    Kill,
}

impl SimWorker {
    fn emit(&self, event: WorkerEvent) {
        let _ = self.events.send((self.child, event));
    }

    fn duration(&self, ms: u64) -> Duration {
        #[allow(
            clippy::cast_precision_loss,
            clippy::cast_possible_truncation,
            clippy::cast_sign_loss
        )]
        Duration::from_millis((ms as f64 * self.scale) as u64)
    }

    /// Wait `ms` scripted milliseconds, handling messages; an abort, release or kill ends
    /// the wait early.
    async fn pause(&mut self, ms: u64) -> Option<Interrupt> {
        let deadline = tokio::time::Instant::now() + self.duration(ms);
        loop {
            tokio::select! {
                () = tokio::time::sleep_until(deadline) => return None,
                command = self.rx.recv() => match command {
                    Some(WorkerCommand::Message { id, text, .. }) => {
                        self.emit(WorkerEvent::MessageQueued { message: id });
                        // pi records a delivered steer or message as a user message.
                        self.log.user(&text, crate::runtime::now_ms());
                        self.emit(WorkerEvent::MessageDelivered { message: id });
                    }
                    Some(WorkerCommand::Abort) => return Some(Interrupt::Abort),
                    Some(WorkerCommand::Release) => return Some(Interrupt::Release),
                    Some(WorkerCommand::Kill) | None => return Some(Interrupt::Kill),
                },
            }
        }
    }

    async fn run(mut self, script: Script) {
        if let Some(error) = script.setup_error {
            self.emit(WorkerEvent::SetupFailed { error });
            self.emit(WorkerEvent::Exited {
                reason: "setup failed".to_owned(),
            });
            return;
        }
        if let Some(interrupt) = self.pause(self.setup_ms).await {
            return self.finish(interrupt, false).await;
        }
        self.emit(WorkerEvent::Ready {
            transcript: Some(self.transcript.clone()),
        });
        let now = crate::runtime::now_ms();
        for prompt in std::mem::take(&mut self.prompts) {
            self.log.user(&prompt, now);
        }
        let mut steps: VecDeque<Step> = script.steps.into();
        while let Some(step) = steps.pop_front() {
            if matches!(step, Step::Hang) {
                // Ignores abort and release: only a kill ends it.
                loop {
                    match self.rx.recv().await {
                        Some(WorkerCommand::Kill) | None => {
                            return self.emit(WorkerEvent::Exited {
                                reason: "killed (SIGKILL)".to_owned(),
                            });
                        }
                        Some(_) => {}
                    }
                }
            }
            if matches!(step, Step::Crash) {
                return self.emit(WorkerEvent::Exited {
                    reason: "signal 9".to_owned(),
                });
            }
            let (events, took) = step.expand();
            let mut elapsed = 0;
            for (offset, event) in events {
                if let Some(interrupt) = self.pause(offset.saturating_sub(elapsed)).await {
                    return self.finish(interrupt, true).await;
                }
                elapsed = offset;
                self.record(&step, &event);
                self.emit(event);
            }
            if let Some(interrupt) = self.pause(took.saturating_sub(elapsed)).await {
                return self.finish(interrupt, true).await;
            }
            if matches!(step, Step::Fail(_)) {
                return self.wait_release().await;
            }
        }
        self.emit(WorkerEvent::Settled { error: None });
        self.wait_release().await;
    }

    /// Writes what a pi worker would have persisted for this event.
    fn record(&mut self, step: &Step, event: &WorkerEvent) {
        let now = crate::runtime::now_ms();
        match (step, event) {
            (_, WorkerEvent::AssistantMessage { text, usage }) => {
                self.log.assistant(text, usage.as_ref(), now);
            }
            (Step::Tool { args, .. }, WorkerEvent::ToolStart { name }) => {
                let args = args.clone().unwrap_or_else(|| serde_json::json!({}));
                self.call = Some(self.log.tool_call(name, &args, now));
            }
            (Step::Tool { output, .. }, WorkerEvent::ToolEnd { name, is_error }) => {
                let call = self.call.take().unwrap_or_default();
                let output = output
                    .as_deref()
                    .unwrap_or(if *is_error { "error" } else { "ok" });
                self.log.tool_result(&call, name, output, *is_error, now);
            }
            _ => {}
        }
    }

    async fn finish(mut self, interrupt: Interrupt, started: bool) {
        match interrupt {
            Interrupt::Abort => {
                let _ = self.pause(15).await;
                self.emit(WorkerEvent::Settled {
                    error: Some("aborted".to_owned()),
                });
                if !started {
                    self.emit(WorkerEvent::Exited {
                        reason: "aborted before start".to_owned(),
                    });
                    return;
                }
                self.wait_release().await;
            }
            Interrupt::Release => self.emit(WorkerEvent::Exited {
                reason: "exit 0".to_owned(),
            }),
            Interrupt::Kill => self.emit(WorkerEvent::Exited {
                reason: "killed (SIGTERM)".to_owned(),
            }),
        }
    }

    async fn wait_release(mut self) {
        loop {
            match self.rx.recv().await {
                Some(WorkerCommand::Release) => {
                    return self.emit(WorkerEvent::Exited {
                        reason: "exit 0".to_owned(),
                    });
                }
                Some(WorkerCommand::Kill) | None => {
                    return self.emit(WorkerEvent::Exited {
                        reason: "killed (SIGTERM)".to_owned(),
                    });
                }
                Some(WorkerCommand::Message { id, .. }) => {
                    self.emit(WorkerEvent::MessageFailed {
                        message: id,
                        error: "the worker is no longer running".to_owned(),
                    });
                }
                Some(WorkerCommand::Abort) => {}
            }
        }
    }
}

//! Applying what workers report: setup, requests and tools (through the dispatch guard,
//! `core::guard`), output and telemetry, structured submissions (`core::submission`), prompt
//! resolution, exit, and publication.

use crate::core::bounds::{ACTIVITY_CHARS, PROGRESS_CHARS, STREAM_INTERVAL_MS};
use crate::core::coordinator::Coordinator;
use crate::core::effect::Effect;
use crate::core::ids::ChildRef;
use crate::core::input::{GuardKind, TimerKey, Usage, WorkerEvent};
use crate::core::lifecycle::Status;
use crate::core::message::ReceiptStatus;
use crate::core::registry::Intent;
use crate::core::snapshot::{Artifacts, Streaming};

impl Coordinator {
    pub(crate) fn worker_event(&mut self, r: ChildRef, event: WorkerEvent) {
        // Events for unknown generations, or for a window whose worker is gone, are stale.
        let Some(g) = self.reg.generation(r) else {
            return;
        };
        if !g.worker.live() {
            return;
        }
        match event {
            WorkerEvent::Ready { transcript } => {
                let g = self.gen_mut(r);
                g.worker.ready = true;
                g.session_started = true;
                if transcript.is_some() {
                    g.snap.transcript = transcript;
                }
                if g.snap.status == Status::Setup {
                    g.snap.status = Status::Running;
                }
            }
            WorkerEvent::Launched(launch) => {
                self.gen_mut(r).snap.telemetry.launch = Some(launch);
            }
            WorkerEvent::SetupFailed { error } => {
                self.prompt_resolved(r, Some(format!("setup failed: {error}")), false);
            }
            // The simulated worker's guards: the same decision as `Input::Guard`, whose
            // answer it cannot hear (a denial commits what it commits, nothing is counted).
            WorkerEvent::RequestStart => {
                self.assistant_started(r);
                let _ = self.dispatch_guard(r, GuardKind::Request);
            }
            WorkerEvent::ToolStart { name } => {
                let _ = self.dispatch_guard(r, GuardKind::Tool { name });
            }
            WorkerEvent::AssistantStart => self.assistant_started(r),
            WorkerEvent::ToolRunning { name } => {
                if !self.gen_ref(r).worker.settled {
                    self.tool_activity(r, name);
                }
            }
            WorkerEvent::ToolEnd { name, is_error } => {
                // `"{name} failed"` / `"{name} done"`, reusing the name's allocation.
                let mut line = name;
                line.push_str(if is_error { " failed" } else { " done" });
                let snap = &mut self.gen_mut(r).snap;
                snap.activity = Some(line);
                if snap.streaming == Some(Streaming::Tool) {
                    snap.streaming = None;
                }
            }
            WorkerEvent::TextDelta(delta) => self.text_delta(r, &delta),
            WorkerEvent::ToolOutput { name, text } => self.tool_output(r, &name, &text),
            WorkerEvent::AssistantMessage { text, usage } => self.assistant_message(r, text, usage),
            WorkerEvent::Activity(line) => {
                self.gen_mut(r).snap.activity = Some(clip_owned(line, ACTIVITY_CHARS));
            }
            WorkerEvent::Progress(text) => {
                self.gen_mut(r).snap.progress = Some(clip_owned(text, PROGRESS_CHARS));
            }
            WorkerEvent::Context(usage) => self.gen_mut(r).snap.telemetry.context = Some(usage),
            WorkerEvent::Retry(retry) => self.gen_mut(r).snap.retry = retry,
            WorkerEvent::RouteAccepted {
                logical,
                provider,
                id,
                effort,
            } => self.route_accepted(r, logical, provider, &id, effort),
            WorkerEvent::MessageQueued { message } => {
                self.advance_receipt(r, message, ReceiptStatus::Queued, None);
            }
            WorkerEvent::MessageHandled { message } => {
                self.advance_receipt(r, message, ReceiptStatus::Handled, None);
            }
            WorkerEvent::MessageDelivered { message } => {
                self.advance_receipt(r, message, ReceiptStatus::Delivered, None);
            }
            WorkerEvent::MessageFailed { message, error } => {
                self.advance_receipt(r, message, ReceiptStatus::Error, Some(error));
            }
            WorkerEvent::Submission { value, errors } => {
                // Nobody hears the receipt; a refused (late) attempt changes nothing.
                let _ = self.record_submission(r, value, errors);
            }
            WorkerEvent::Settled { error } => {
                self.gen_mut(r).snap.retry = None;
                self.prompt_resolved(r, error, true);
            }
            WorkerEvent::Exited { reason } => {
                self.gen_mut(r).snap.retry = None;
                self.worker_exited(r, &reason);
            }
        }
    }

    /// More streamed assistant text: `progress` keeps the newest [`PROGRESS_CHARS`] of the
    /// message so far and `activity` its newest non-blank line. Coalesced (see [`Self::stream_changed`]).
    fn text_delta(&mut self, r: ChildRef, delta: &str) {
        let Some(g) = self.reg.generation_mut(r) else {
            return;
        };
        if g.worker.settled || delta.is_empty() {
            return;
        }
        let snap = &mut g.snap;
        let mut text = match (snap.streaming, snap.progress.take()) {
            (Some(Streaming::Assistant), Some(text)) => text,
            _ => String::new(),
        };
        text.push_str(delta);
        if let Some(line) = text.lines().rev().map(str::trim).find(|l| !l.is_empty()) {
            snap.activity = Some(clip_chars(line, ACTIVITY_CHARS));
        }
        snap.progress = Some(keep_tail(text, PROGRESS_CHARS));
        snap.streaming = Some(Streaming::Assistant);
        self.stream_changed(r);
    }

    /// A running tool's partial output so far: `progress` keeps its newest
    /// [`PROGRESS_CHARS`], `activity` says which tool. Coalesced like text deltas.
    fn tool_output(&mut self, r: ChildRef, name: &str, text: &str) {
        let Some(g) = self.reg.generation_mut(r) else {
            return;
        };
        if g.worker.settled {
            return;
        }
        let snap = &mut g.snap;
        snap.progress = Some(keep_tail(text.to_owned(), PROGRESS_CHARS));
        snap.streaming = Some(Streaming::Tool);
        if let Some(line) = text.lines().rev().map(str::trim).find(|l| !l.is_empty()) {
            snap.activity = Some(clip_chars(&format!("{name}: {line}"), ACTIVITY_CHARS));
        }
        self.stream_changed(r);
    }

    /// Streamed output changed the snapshot (without marking it changed). At most one
    /// registry change per [`STREAM_INTERVAL_MS`] per generation carries it: the first at
    /// once, later ones when the interval is over (a `TimerKey::Stream` timer publishes what
    /// is held back). Any other change of the generation carries it too.
    fn stream_changed(&mut self, r: ChildRef) {
        let now = self.scratch.now;
        let Some(g) = self.reg.generation_mut(r) else {
            return;
        };
        let stream = &mut g.stream;
        match stream.last_at {
            Some(last) if now < last.saturating_add(STREAM_INTERVAL_MS) => {
                stream.pending = true;
                if !stream.timer_armed {
                    stream.timer_armed = true;
                    let at = last.saturating_add(STREAM_INTERVAL_MS);
                    self.emit(Effect::ArmTimer {
                        key: TimerKey::Stream(r),
                        at,
                    });
                }
            }
            _ => {
                stream.last_at = Some(now);
                self.mark_changed(r);
            }
        }
    }

    /// The coalescing interval of `r` is over: publish what it held back.
    pub(crate) fn stream_timer(&mut self, r: ChildRef) {
        let now = self.scratch.now;
        let Some(g) = self.reg.generation_mut(r) else {
            return;
        };
        g.stream.timer_armed = false;
        if g.stream.pending {
            g.stream.last_at = Some(now);
            self.mark_changed(r);
        }
    }

    /// Recovery switched the worker to another route of its logical action.
    fn route_accepted(
        &mut self,
        r: ChildRef,
        logical: String,
        provider: String,
        id: &str,
        effort: Option<String>,
    ) {
        let g = self.gen_mut(r);
        // A resumed window continues on the latest accepted route, not the first.
        g.spec.model = Some(crate::core::task::ModelSelection {
            provider: provider.clone(),
            id: id.to_owned(),
            effort: effort.clone(),
        });
        let snap = &mut g.snap;
        snap.activity = Some(clip_owned(
            format!("recovery: switched to {logical} via {provider}/{id}"),
            ACTIVITY_CHARS,
        ));
        snap.model = Some(format!("{provider}/{id}"));
        snap.effort = effort;
        if let Some(action) = snap.logical.as_mut() {
            action.route_model = logical;
            action.route_provider = provider;
            action.switches = action.switches.saturating_add(1);
        }
    }

    /// A new assistant message (or a retry's) streams from the start.
    fn assistant_started(&mut self, r: ChildRef) {
        let g = self.gen_ref(r);
        if !g.worker.settled && g.snap.streaming.is_some() {
            self.gen_mut(r).snap.streaming = None;
        }
    }

    fn assistant_message(&mut self, r: ChildRef, text: String, usage: Option<Usage>) {
        let g = self.gen_mut(r);
        if let Some(usage) = usage {
            let t = &mut g.snap.telemetry;
            t.tokens = Some(t.tokens.unwrap_or_default().plus(usage.tokens));
            if let Some(cost) = usage.cost {
                t.cost = Some(t.cost.unwrap_or(0.0) + cost);
            }
        }
        if let Some(line) = text.lines().find(|l| !l.trim().is_empty()) {
            g.snap.activity = Some(clip_chars(line.trim(), ACTIVITY_CHARS));
        }
        // The final message replaces the streamed one; its text stays the progress.
        if g.snap.streaming == Some(Streaming::Assistant) {
            g.snap.streaming = None;
            if !text.is_empty() {
                g.snap.progress = Some(keep_tail(text.clone(), PROGRESS_CHARS));
            }
        }
        g.last_text = Some(text);
    }

    /// The prompt resolved (or setup failed, or the worker died). Decide the final status
    /// now (intent first), ask the worker to exit, and publish artifacts if a prompt ran:
    /// `result.txt` is the last assistant message, empty for a tool-only or aborted one;
    /// a worker that died without any assistant message publishes nothing.
    fn prompt_resolved(&mut self, r: ChildRef, error: Option<String>, resolved: bool) {
        let g = self.gen_ref(r);
        if g.worker.settled {
            return;
        }
        let ready = g.worker.ready;
        let pausing = matches!(g.intent, Some(Intent::Pause(_)));
        let decided = (!pausing).then(|| self.decide_final(r, error));
        let g = self.gen_mut(r);
        g.worker.settled = true;
        // Nothing streams any more, even if the worker died mid-message.
        g.snap.streaming = None;
        if let Some(decided) = decided {
            g.snap.status = Status::Draining;
            g.snap.result = g.last_text.as_deref().map(|t| t.trim().to_owned());
            let publish = (ready && (resolved || g.last_text.is_some())).then(|| Effect::Publish {
                child: r,
                text: g.last_text.clone().unwrap_or_default(),
                structured: g.snap.outcome.as_ref().and_then(|o| o.value.clone()),
            });
            g.worker.publishing = publish.is_some();
            g.pending_final = Some(decided);
            let exited = g.worker.exited;
            if !exited {
                self.emit(Effect::ReleaseWorker { child: r });
            }
            if let Some(publish) = publish {
                self.emit(publish);
            }
        } else if !g.worker.exited {
            self.emit(Effect::ReleaseWorker { child: r });
        }
    }

    /// The worker process ended. Without a resolved prompt this is a crash (or a drained
    /// abort): the outcome follows the committed intent, else it fails.
    fn worker_exited(&mut self, r: ChildRef, reason: &str) {
        self.live_workers -= 1;
        self.gen_mut(r).worker.exited = true;
        if !self.gen_ref(r).worker.settled {
            let ready = self.gen_ref(r).worker.ready;
            let error = if ready {
                format!("worker exited before its prompt resolved: {reason}")
            } else {
                format!("setup failed: worker exited: {reason}")
            };
            self.prompt_resolved(r, Some(error), false);
        }
        self.try_finish(r);
    }

    pub(crate) fn published(&mut self, r: ChildRef, result: Result<Artifacts, String>) {
        let Some(g) = self.reg.generation(r) else {
            return;
        };
        if !g.worker.publishing {
            return;
        }
        let g = self.gen_mut(r);
        g.worker.publishing = false;
        // A persistence error (even with the text written) fails an otherwise successful
        // generation; earlier provider/limit reasons stay primary.
        let error = match result {
            Ok(artifacts) => {
                let error = artifacts.error.clone();
                g.snap.artifacts = Some(artifacts);
                error
            }
            Err(error) => {
                let mut artifacts = g.snap.artifacts.take().unwrap_or_default();
                artifacts.error = Some(error.clone());
                g.snap.artifacts = Some(artifacts);
                Some(error)
            }
        };
        if let Some(error) = error
            && let Some(pending) = g.pending_final.as_mut()
            && pending.status == Status::Settled
        {
            pending.status = Status::Failed;
            pending.error = Some(format!("artifact persistence failed: {error}"));
        }
        self.try_finish(r);
    }
}

/// At most `max` characters, with `…` marking a cut.
pub fn clip_chars(text: &str, max: usize) -> String {
    // At most `max` bytes is at most `max` characters: nothing to cut, no need to count.
    if text.len() <= max {
        return text.to_owned();
    }
    if text.char_indices().nth(max).is_none() {
        return text.to_owned();
    }
    let cut: String = text.chars().take(max.saturating_sub(1)).collect();
    format!("{cut}…")
}

/// The newest `max` characters of `text`, with `…` first marking a cut (reuses the
/// allocation when nothing is cut).
pub fn keep_tail(text: String, max: usize) -> String {
    if text.len() <= max {
        return text;
    }
    let chars = text.chars().count();
    if chars <= max {
        return text;
    }
    let skip = chars - max.saturating_sub(1);
    let start = text.char_indices().nth(skip).map_or(text.len(), |(i, _)| i);
    let mut out = String::with_capacity(text.len() - start + '…'.len_utf8());
    out.push('…');
    out.push_str(&text[start..]);
    out
}

/// [`clip_chars`] of an owned string, reusing its allocation when nothing is cut.
pub(crate) fn clip_owned(text: String, max: usize) -> String {
    if text.len() <= max {
        text
    } else {
        clip_chars(&text, max)
    }
}

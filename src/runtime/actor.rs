//! The actor loop: receive, apply to the core, execute effects.

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;
use std::time::Duration;

use tokio::sync::{broadcast, mpsc, oneshot};
use tokio::time::Instant;

use crate::core::{
    CallId, ChildRef, Coordinator, Delivery, Effect, Input, Millis, Refusal, RegistryEvent,
    RegistryEventKind, Reply, RequestId, TimerKey, WindowOutcome, WorkerEvent,
};
use crate::runtime::actors::ActorRegistry;
use crate::runtime::backend::{WorkerBackend, WorkerCommand, WorkerDirs, WorkerIdentity};
use crate::runtime::handle::{Epoch, Msg, RequestIds, RuntimeError, RuntimeHandle};
use crate::runtime::{POLICY_POLL, PolicySource, RuntimeConfig, RuntimeEvent, now_ms};
use crate::store::artifacts;
use crate::store::event_log::EventLog;

/// What the runtime did, once it ended.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct RuntimeReport {
    pub workers_started: u64,
    /// Workers still alive after the shutdown grace, terminated by signal.
    pub workers_killed: u64,
    /// Event-log write failures (the log is evidence; the runtime goes on).
    pub event_log_errors: u64,
}

struct Pending {
    reply: oneshot::Sender<Result<Reply, Refusal>>,
    foreground: Option<oneshot::Sender<WindowOutcome>>,
}

struct Actor {
    coord: Coordinator,
    config: RuntimeConfig,
    backend: Arc<dyn WorkerBackend>,
    /// Re-read before requests and dequeue opportunities (`None`: the policy is fixed).
    policy: Option<Arc<dyn PolicySource>>,
    rx: mpsc::UnboundedReceiver<Msg>,
    rx_open: bool,
    worker_tx: mpsc::UnboundedSender<(ChildRef, WorkerEvent)>,
    worker_rx: mpsc::UnboundedReceiver<(ChildRef, WorkerEvent)>,
    publish_tx: mpsc::UnboundedSender<Input>,
    publish_rx: mpsc::UnboundedReceiver<Input>,
    broadcast: broadcast::Sender<RuntimeEvent>,
    workers: HashMap<ChildRef, mpsc::UnboundedSender<WorkerCommand>>,
    /// Capabilities and pids of the live workers, for the control server.
    actors: ActorRegistry,
    dirs: HashMap<ChildRef, artifacts::TaskDir>,
    pending: HashMap<RequestId, Pending>,
    foreground: HashMap<CallId, oneshot::Sender<WindowOutcome>>,
    timers: BTreeMap<(Millis, u64), TimerKey>,
    timer_seq: u64,
    ids: RequestIds,
    /// Advanced after every input the coordinator applies (`RuntimeHandle::registry_epoch`).
    epoch: Epoch,
    event_log: Option<EventLog>,
    shutdown_waiters: Vec<oneshot::Sender<()>>,
    shutdown_since: Option<Instant>,
    escalated: bool,
    done: bool,
    report: RuntimeReport,
}

pub(crate) fn spawn(
    coord: Coordinator,
    config: RuntimeConfig,
    backend: Arc<dyn WorkerBackend>,
    policy: Option<Arc<dyn PolicySource>>,
) -> Result<(RuntimeHandle, tokio::task::JoinHandle<RuntimeReport>), RuntimeError> {
    artifacts::ensure_delegation_dir(&config.delegation_dir)
        .map_err(|e| RuntimeError::Store(e.to_string()))?;
    let event_log = if config.event_log {
        let log = EventLog::create(&config.delegation_dir.join("events.jsonl"))
            .map_err(|e| RuntimeError::Store(e.to_string()))?;
        // The fresh log (`O_EXCL`) proves no other runtime uses this delegation directory,
        // so temporary files found in it are a killed runtime's leftovers.
        artifacts::sweep_leftovers(&config.delegation_dir);
        Some(log)
    } else {
        None
    };
    let (tx, rx) = mpsc::unbounded_channel();
    let (worker_tx, worker_rx) = mpsc::unbounded_channel();
    let (publish_tx, publish_rx) = mpsc::unbounded_channel();
    let (broadcast, _) = broadcast::channel(4096);
    let actors = ActorRegistry::new();
    let ids = RequestIds::default();
    let epoch = Epoch::default();
    let handle = RuntimeHandle {
        tx,
        events: broadcast.clone(),
        actors: actors.clone(),
        ids: ids.clone(),
        epoch: epoch.clone(),
    };
    let actor = Actor {
        coord,
        config,
        backend,
        policy,
        rx,
        rx_open: true,
        worker_tx,
        worker_rx,
        publish_tx,
        publish_rx,
        broadcast,
        workers: HashMap::new(),
        actors,
        dirs: HashMap::new(),
        pending: HashMap::new(),
        foreground: HashMap::new(),
        timers: BTreeMap::new(),
        timer_seq: 0,
        ids,
        epoch,
        event_log,
        shutdown_waiters: Vec::new(),
        shutdown_since: None,
        escalated: false,
        done: false,
        report: RuntimeReport::default(),
    };
    Ok((handle, tokio::spawn(actor.run())))
}

impl Actor {
    async fn run(mut self) -> RuntimeReport {
        // The event log's sign of life (`event_log::HEARTBEAT`): its mtime renewed while the
        // runtime runs, so a reader of a dead coordinator's log knows when it stopped.
        let mut heartbeat = tokio::time::interval(crate::store::event_log::HEARTBEAT);
        heartbeat.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        while !self.done {
            let wake = self.next_wake();
            // Arms only receive; the work happens after `select!` returns.
            tokio::select! {
                _ = heartbeat.tick(), if self.event_log.is_some() => {
                    if let Some(log) = &self.event_log
                        && log.heartbeat().is_err()
                    {
                        self.report.event_log_errors += 1;
                    }
                }
                msg = self.rx.recv(), if self.rx_open => {
                    if let Some(msg) = msg {
                        self.on_message(msg);
                    } else {
                        // Every handle is gone: shut down and drain.
                        self.rx_open = false;
                        self.begin_shutdown(None);
                    }
                }
                Some((child, event)) = self.worker_rx.recv() => {
                    let exited = matches!(event, WorkerEvent::Exited { .. });
                    self.refresh_policy_if_queued();
                    self.apply(Input::Worker { child, event });
                    if exited {
                        self.workers.remove(&child);
                        // Its capability and process admit nothing from here on.
                        self.actors.revoke(child);
                    }
                }
                Some(input) = self.publish_rx.recv() => {
                    self.refresh_policy_if_queued();
                    self.apply(input);
                }
                () = tokio::time::sleep_until(wake) => self.on_clock(),
            }
        }
        self.report
    }

    /// The next moment a timer or the shutdown escalation is due.
    fn next_wake(&self) -> Instant {
        let now = Instant::now();
        let mut wake = now + Duration::from_secs(3600);
        if let Some(((at, _), _)) = self.timers.first_key_value() {
            wake = wake.min(now + Duration::from_millis(at.saturating_sub(now_ms())));
        }
        if let (Some(since), false) = (self.shutdown_since, self.escalated) {
            wake = wake.min(since + self.config.kill_grace);
        }
        if self.policy.is_some() && self.has_queued() {
            wake = wake.min(now + POLICY_POLL);
        }
        wake
    }

    fn has_queued(&self) -> bool {
        self.coord.queued().next().is_some()
    }

    /// Apply the policy as it is now, if it changed (`Configure` validates it and dequeues
    /// under it; an invalid policy keeps the last valid one for already admitted work).
    fn refresh_policy(&mut self) {
        let Some(current) = self.policy.as_ref().and_then(|p| p.scheduling()) else {
            return;
        };
        if current == *self.coord.policy() || self.coord.is_shutting_down() {
            return;
        }
        let request = self.ids.next();
        // Nobody waits for this reply: `reply` drops answers to unknown requests.
        self.apply(Input::Configure {
            request,
            policy: current,
        });
    }

    /// Before an input that can free a permit or the writer lease: a dequeue opportunity
    /// only matters while something waits.
    fn refresh_policy_if_queued(&mut self) {
        if self.has_queued() {
            self.refresh_policy();
        }
    }

    fn on_clock(&mut self) {
        self.refresh_policy_if_queued();
        let now = now_ms();
        while let Some((&(at, seq), _)) = self.timers.first_key_value() {
            if at > now {
                break;
            }
            if let Some(key) = self.timers.remove(&(at, seq)) {
                self.apply(Input::Timer(key));
            }
        }
        if let Some(since) = self.shutdown_since
            && !self.escalated
            && since.elapsed() >= self.config.kill_grace
        {
            self.escalated = true;
            for tx in self.workers.values() {
                if tx.send(WorkerCommand::Kill).is_ok() {
                    self.report.workers_killed += 1;
                }
            }
        }
    }

    fn on_message(&mut self, msg: Msg) {
        match msg {
            Msg::Request {
                request,
                build,
                reply,
                foreground,
            } => {
                // Every admission, renewal and resume sees the policy as it is now.
                self.refresh_policy();
                self.pending.insert(request, Pending { reply, foreground });
                let input = build(request);
                if matches!(input, Input::Shutdown { .. }) && self.shutdown_since.is_none() {
                    self.shutdown_since = Some(Instant::now());
                }
                self.apply(input);
            }
            Msg::Query(read) => {
                // Reads (`status`, `policy`) show what the next dequeue will use.
                self.refresh_policy();
                read(&self.coord);
            }
            Msg::Shutdown(done) => self.begin_shutdown(Some(done)),
            // Only a request still pending can be abandoned; a reply already sent is final.
            Msg::Abandoned(request) => {
                if self.pending.remove(&request).is_some() {
                    self.apply(Input::CancelWait { request });
                }
            }
            Msg::CancelCall(request) => self.apply(Input::CancelCall { request }),
        }
    }

    fn begin_shutdown(&mut self, done: Option<oneshot::Sender<()>>) {
        if let Some(done) = done {
            if self.coord.is_shut_down() {
                let _ = done.send(());
            } else {
                self.shutdown_waiters.push(done);
            }
        }
        if self.shutdown_since.is_none() {
            self.shutdown_since = Some(Instant::now());
            let request = self.ids.next();
            self.apply(Input::Shutdown { request });
        }
    }

    fn apply(&mut self, input: Input) {
        let effects = self.coord.handle(input, now_ms());
        // Before any effect: whoever sees a reply or an event of this input sees its epoch.
        self.epoch.advance();
        for effect in effects {
            self.execute(effect);
        }
    }

    fn execute(&mut self, effect: Effect) {
        match effect {
            Effect::StartWorker(start) => self.start_worker(*start),
            Effect::AbortWorker { child, .. } => self.command(child, WorkerCommand::Abort),
            Effect::SendMessage {
                child,
                message,
                mode,
                text,
            } => self.command(
                child,
                WorkerCommand::Message {
                    id: message,
                    mode,
                    text,
                },
            ),
            Effect::ReleaseWorker { child } => self.command(child, WorkerCommand::Release),
            Effect::Publish {
                child,
                text,
                structured,
            } => self.publish(child, text, structured),
            Effect::ArmTimer { key, at } => {
                self.timer_seq += 1;
                self.timers.insert((at, self.timer_seq), key);
            }
            Effect::Reply { request, result } => self.reply(request, result),
            Effect::WindowOutcome(outcome) => self.deliver(outcome),
            Effect::Changed(child) => self.changed(child),
            Effect::ShutdownComplete => {
                // Nothing is started any more: pre-started processes end now.
                self.backend.drain();
                // The log's last line says the coordinator shut down (it did not die).
                if let Some(log) = self.event_log.as_mut()
                    && log.close(now_ms()).is_err()
                {
                    self.report.event_log_errors += 1;
                }
                for done in self.shutdown_waiters.drain(..) {
                    let _ = done.send(());
                }
                let _ = self.broadcast.send(RuntimeEvent::ShutdownComplete);
                self.done = true;
            }
        }
    }

    fn command(&mut self, child: ChildRef, command: WorkerCommand) {
        if let Some(tx) = self.workers.get(&child) {
            // A closed channel means the worker already ended; its `Exited` is on the way.
            let _ = tx.send(command);
        }
    }

    fn start_worker(&mut self, start: crate::core::WorkerStart) {
        let child = start.child;
        let task_dir = match self.dirs.get(&child) {
            // A resumed window continues in the same task directory.
            Some(dir) => Ok(dir.clone()),
            None => artifacts::create_task_dir(&self.config.delegation_dir, child),
        };
        let launch = task_dir
            .map_err(|e| format!("task directory: {e}"))
            .and_then(|dir| {
                let capability = self
                    .actors
                    .issue(child)
                    .map_err(|e| format!("worker capability: the OS gave no randomness: {e}"))?;
                Ok((
                    dir,
                    WorkerIdentity::new(child, capability, self.actors.clone()),
                ))
            });
        match launch {
            Ok((task_dir, identity)) => {
                let dirs = WorkerDirs {
                    task: task_dir.path().to_path_buf(),
                    agent: task_dir.agent_dir(),
                    transcripts: task_dir.transcripts_dir(),
                };
                self.dirs.insert(child, task_dir);
                let tx = self
                    .backend
                    .start(start, dirs, identity, self.worker_tx.clone());
                self.workers.insert(child, tx);
                self.report.workers_started += 1;
            }
            Err(error) => {
                // No process was started: report the setup failure and the (non-)exit.
                let _ = self
                    .worker_tx
                    .send((child, WorkerEvent::SetupFailed { error }));
                let _ = self.worker_tx.send((
                    child,
                    WorkerEvent::Exited {
                        reason: "not started".to_owned(),
                    },
                ));
            }
        }
    }

    fn publish(&mut self, child: ChildRef, text: String, structured: Option<serde_json::Value>) {
        let Some(task_dir) = self.dirs.get(&child).cloned() else {
            let _ = self.publish_tx.send(Input::Published {
                child,
                result: Err("no task directory for this generation".to_owned()),
            });
            return;
        };
        let tx = self.publish_tx.clone();
        tokio::task::spawn_blocking(move || {
            let published = artifacts::publish(&task_dir, &text, structured.as_ref());
            let _ = tx.send(Input::Published {
                child,
                result: Ok(published.artifacts),
            });
        });
    }

    fn reply(&mut self, request: RequestId, result: Result<Reply, Refusal>) {
        let Some(pending) = self.pending.remove(&request) else {
            return;
        };
        if let (Ok(Reply::Admitted { call, .. }), Some(foreground)) = (&result, pending.foreground)
        {
            self.foreground.insert(*call, foreground);
        }
        let _ = pending.reply.send(result);
    }

    fn deliver(&mut self, outcome: WindowOutcome) {
        let outcome = if outcome.delivery == Delivery::Foreground
            && let Some(waiter) = self.foreground.remove(&outcome.call)
        {
            // The caller went away (a foreground `slate delegate` killed): its window went
            // on, owned by the coordinator, and its outcome is published like a background one.
            let (call, initiator) = (outcome.call, outcome.initiator);
            match waiter.send(outcome) {
                Ok(()) => {
                    // Answered: the outcome reached the party that started the call.
                    let _ = self.publish_tx.send(Input::OutcomeDelivered {
                        request: None,
                        actor: initiator,
                        call,
                    });
                    return;
                }
                Err(outcome) => outcome,
            }
        } else {
            outcome
        };
        let _ = self
            .broadcast
            .send(RuntimeEvent::Outcome(Box::new(outcome)));
    }

    fn changed(&mut self, child: ChildRef) {
        let Some(snapshot) = self.coord.snapshot(child) else {
            return;
        };
        let event = RegistryEvent {
            kind: RegistryEventKind::Changed,
            child: snapshot,
            event: None,
        };
        // The event log is evidence of state, not a stream recorder: a running generation's
        // growing output (up to ten changes a second, 4 KiB each) is left out, and the change
        // that ends the stream (cleared `streaming`, final `progress`) is written.
        let streaming_only =
            event.child.streaming.is_some() && event.child.status == crate::core::Status::Running;
        if !streaming_only
            && let Some(log) = self.event_log.as_mut()
            && log.append(&event).is_err()
        {
            self.report.event_log_errors += 1;
        }
        let _ = self.broadcast.send(RuntimeEvent::Registry(Box::new(event)));
    }
}

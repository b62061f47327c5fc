//! The pi worker backend: one `pi --mode rpc` process per admitted generation.
//!
//! Protocol (see `shared/pi/NOTES.md`): commands and responses are matched by `id`, never by
//! order. The assignment goes out with `prompt`; continuations with `follow_up`; steering
//! messages with `steer`/`follow_up`. Completion is `agent_settled` (never `agent_end`); the
//! driver then asks `get_session_stats` for context usage before reporting `Settled`.
//!
//! Stop: `abort`, wait for `agent_settled` and the abort response, close stdin, wait for exit.
//! Only shutdown escalation (`WorkerCommand::Kill`) signals: SIGTERM to the worker's own
//! process group, then SIGKILL after a grace period.
//!
//! Nothing outlives a worker: on Linux the `slate` binary runs each worker under its
//! containment process (`worker::contain`), which ends everything below it when pi exits,
//! when Slate dies or when it is told to stop; elsewhere each worker leads its own process
//! group, is killed when its handle is dropped, and pi exits when its stdin closes (which the
//! kernel does when Slate dies).
//!
//! pi's stdout is untrusted input: it is read in bounded lines (`worker::pi::lines`), and a
//! worker's terminal state comes only from pi's answers to Slate's own commands in their
//! order (`worker::pi::mapper`, "Order").

use std::collections::VecDeque;
use std::ffi::OsString;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::Arc;
use std::time::Duration;

use command_fds::{CommandFdExt as _, FdMapping};
use nix::sys::signal::{Signal, killpg};
use nix::unistd::Pid;
use serde_json::json;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::process::{Child, ChildStdin, Command};
use tokio::sync::{OnceCell, mpsc};

use crate::core::snapshot::Launch as StartedAs;
use crate::core::{ChildRef, MessageMode, WorkerEvent, WorkerStart};
use crate::policy::host_extensions::WorkerExtension;
use crate::policy::pool::PoolPolicy;
use crate::policy::version::parse_pi_version_output;
use crate::runtime::backend::{
    CAPABILITY_FD, EventSink, WorkerBackend, WorkerCommand, WorkerDirs, WorkerIdentity,
};
use crate::worker::contain::Containment;
use crate::worker::pi::args::{all_tools, arguments, is_slate_variable, system_prompt};
use crate::worker::pi::extension::installed_extension;
use crate::worker::pi::lines::{self, BoundedLines, LINE_MAX, Line};
use crate::worker::pi::mapper::{Output, PiMapper, Sent};
use crate::worker::pi::pool::{BOUND_COMMAND, Pool, PoolKey, Pooled, Starting, Taken};
use crate::worker::pi::recovery::{CONTINUATION, RouteRecovery, Step};
use crate::worker::reaper::Subreaper;

/// Bytes of stderr kept per worker (the tail).
const STDERR_KEEP: usize = 16 * 1024;
/// How long the driver waits for `get_session_stats` after `agent_settled`.
const STATS_WAIT: Duration = Duration::from_secs(2);
/// Lines of stdout evidence kept per worker (the newest).
const EVIDENCE_KEEP: usize = 4;
/// Between SIGTERM and SIGKILL on shutdown escalation.
const TERM_GRACE: Duration = Duration::from_secs(2);

/// How to run pi: a program and leading arguments (`pi`, or `node …/cli.js`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PiCommand {
    pub program: OsString,
    pub leading: Vec<OsString>,
    /// Extra environment for pi (after Slate's own variables are removed).
    pub env: Vec<(OsString, OsString)>,
}

impl PiCommand {
    /// `$SLATE_PI`, else `pi` on PATH. `SLATE_PI` is a path to pi or to a wrapper script;
    /// when it is not an existing path and contains spaces it is split on whitespace
    /// (`/x/node /x/cli.js`, no quoting).
    pub fn from_env() -> Self {
        let plain = |program: OsString| Self {
            program,
            leading: Vec::new(),
            env: Vec::new(),
        };
        match std::env::var_os("SLATE_PI") {
            Some(value) if !value.is_empty() => {
                let text = value.to_string_lossy().into_owned();
                let mut words = text.split_whitespace();
                match (std::path::Path::new(&value).exists(), words.next()) {
                    (false, Some(first)) if text.contains(char::is_whitespace) => Self {
                        program: first.into(),
                        leading: words.map(OsString::from).collect(),
                        env: Vec::new(),
                    },
                    _ => plain(value),
                }
            }
            _ => plain("pi".into()),
        }
    }

    fn command(&self) -> Command {
        self.command_in(&Containment::ProcessGroup)
    }

    /// The pi command, run under `containment`.
    pub(super) fn command_in(&self, containment: &Containment) -> Command {
        let (program, args) = containment.wrap(self.program.clone(), self.leading.clone());
        let mut command = Command::new(program);
        command.args(args);
        for (name, _) in std::env::vars_os() {
            if name.to_str().is_some_and(is_slate_variable) {
                command.env_remove(&name);
            }
        }
        command.envs(self.env.iter().map(|(k, v)| (k, v)));
        command
    }
}

/// Starts pi workers, after checking `pi --version` once through the policy version gate.
pub struct PiBackend {
    pi: PiCommand,
    version: Arc<OnceCell<Result<String, String>>>,
    /// The extension file workers load instead of the embedded one (tests of a broken one).
    extension: Option<Arc<Path>>,
    /// What keeps a worker's processes from outliving it (`worker::contain`).
    containment: Containment,
    /// This process as the workers' subreaper of last resort (`worker::reaper`), held as
    /// long as workers can be started: dropping it ends what is left below this process.
    subreaper: Option<Subreaper>,
    /// Pre-started processes (`worker::pi::pool`), when the coordinator keeps any.
    pool: Option<Arc<Pool>>,
}

impl PiBackend {
    pub fn new(pi: PiCommand) -> Self {
        Self {
            pi,
            version: Arc::new(OnceCell::new()),
            extension: None,
            containment: Containment::default(),
            subreaper: None,
            pool: None,
        }
    }

    /// A backend whose version gate already passed (`slate run` checks before admitting
    /// anything): no second `pi --version` at the first launch.
    pub fn with_version(pi: PiCommand, version: String) -> Self {
        Self {
            pi,
            version: Arc::new(OnceCell::new_with(Some(Ok(version)))),
            extension: None,
            containment: Containment::default(),
            subreaper: None,
            pool: None,
        }
    }

    /// Workers run under `containment` (the default is their own process group only; the
    /// `slate` binary gives [`Containment::this_slate_binary`], tests name the built `slate`).
    #[must_use]
    pub fn with_containment(mut self, containment: Containment) -> Self {
        self.containment = containment;
        self
    }

    /// Keep pre-started processes as `policy` says, never more than `concurrency`
    /// (`worker::pi::pool`); call after [`Self::with_containment`], which they run under too.
    #[must_use]
    pub fn with_pool(mut self, policy: PoolPolicy, concurrency: u32) -> Self {
        self.pool = (policy.effective_size(concurrency) > 0).then(|| {
            Pool::new(
                policy,
                concurrency,
                self.pi.clone(),
                self.containment.clone(),
            )
        });
        self
    }

    /// Pre-started processes idle now (0 without a pool).
    pub fn idle_pooled(&self) -> usize {
        self.pool.as_ref().map_or(0, |pool| pool.idle_count())
    }

    fn extension_path(&self) -> std::io::Result<PathBuf> {
        extension_file(self.extension.as_deref())
    }

    /// This process adopts what leaves its workers' trees (`worker::reaper`); whatever is
    /// left below it when the backend is dropped (the runtime ended) is ended then.
    #[must_use]
    pub fn with_subreaper(mut self, subreaper: Subreaper) -> Self {
        self.subreaper = Some(subreaper);
        self
    }

    /// Workers load the extension at `path` (absolute) instead of Slate's embedded one. For
    /// tests of what a worker does when its extension cannot load.
    #[must_use]
    pub fn with_extension_file(mut self, path: &Path) -> Self {
        self.extension = Some(Arc::from(path));
        self
    }

    /// `pi --version`, checked against the supported host (stable ≥ 1.5.2); fails closed.
    pub async fn check_version(pi: &PiCommand) -> Result<String, String> {
        let output = pi
            .command()
            .arg("--version")
            .stdin(Stdio::null())
            .kill_on_drop(true)
            .output()
            .await
            .map_err(|e| format!("cannot run {} --version: {e}", pi.program.display()))?;
        let stdout = String::from_utf8_lossy(&output.stdout);
        parse_pi_version_output(&stdout)
            .map(|v| v.to_string())
            .map_err(|e| e.to_string())
    }
}

impl WorkerBackend for PiBackend {
    fn start(
        &self,
        start: WorkerStart,
        dirs: WorkerDirs,
        identity: WorkerIdentity,
        events: EventSink,
    ) -> mpsc::UnboundedSender<WorkerCommand> {
        let (tx, rx) = mpsc::unbounded_channel();
        let pi = self.pi.clone();
        let version = Arc::clone(&self.version);
        let extension = self.extension.clone();
        let containment = self.containment.clone();
        let pool = self.pool.clone();
        tokio::spawn(async move {
            let child = start.child;
            let checked = version
                .get_or_init(|| PiBackend::check_version(&pi))
                .await
                .clone();
            if let Err(error) = checked {
                let _ = events.send((child, WorkerEvent::SetupFailed { error }));
                let _ = events.send((
                    child,
                    WorkerEvent::Exited {
                        reason: "not started: unsupported pi".to_owned(),
                    },
                ));
                return;
            }
            let launch = Launch {
                pi: &pi,
                containment: &containment,
                extension: extension.as_deref(),
            };
            // A fresh generation in the workspace the pool was started for binds a pooled
            // process; a resumed one (its session exists) and any other starts cold.
            let taken = pool
                .as_ref()
                .filter(|_| !start.resume_session)
                .and_then(|pool| {
                    let extension = extension_file(extension.as_deref()).ok()?;
                    let key = pool_key(
                        Path::new(&start.spec.cwd),
                        identity.socket()?,
                        extension,
                        identity.extensions(),
                    )?;
                    Some(pool.take(&key))
                });
            run_worker(&launch, start, &dirs, &identity, events, rx, taken).await;
        });
        tx
    }

    fn name(&self) -> &'static str {
        "pi"
    }

    fn drain(&self) {
        if let Some(pool) = &self.pool {
            pool.drain();
        }
    }

    /// Once the coordinator's socket is bound: write (or verify) the extension files workers
    /// load and run the version gate unless it already ran, pool or not, so the first
    /// delegation waits for neither; then start the pool's processes for workspace `cwd` (the
    /// coordinator's own) if the gate passed.
    fn prestart(&self, cwd: &Path, registry: &crate::runtime::actors::ActorRegistry) {
        let pool = self.pool.clone();
        let extension = self.extension_path();
        let (cwd, registry) = (cwd.to_owned(), registry.clone());
        let version = Arc::clone(&self.version);
        let pi = self.pi.clone();
        tokio::spawn(async move {
            let Some(socket) = registry.socket_bound().await else {
                return;
            };
            let checked = version.get_or_init(|| PiBackend::check_version(&pi)).await;
            let (Some(pool), Ok(extension), Ok(_)) = (pool, extension, checked) else {
                return;
            };
            if let Some(key) = pool_key(&cwd, &socket, extension, &registry.worker_extensions()) {
                pool.prestart(key);
            }
        });
    }
}

/// pi with Slate's extension and the generation's identity: the capability on descriptor
/// [`CAPABILITY_FD`] (read and closed by the extension at load), the socket in the
/// environment (after Slate's own variables were removed). The capability never reaches a
/// command line, the environment, a file or a log.
fn spawn_pi(
    pi: &PiCommand,
    containment: &Containment,
    start: &WorkerStart,
    dirs: &WorkerDirs,
    identity: &WorkerIdentity,
    extension: &Path,
) -> std::io::Result<Child> {
    let mut command = pi.command_in(containment);
    command
        .fd_mappings(vec![FdMapping {
            parent_fd: identity.capability_pipe()?,
            child_fd: CAPABILITY_FD,
        }])
        .map_err(|e| std::io::Error::other(e.to_string()))?;
    command
        .envs(identity.environment())
        .args(arguments(start, dirs, extension, identity.extensions()))
        .current_dir(&start.spec.cwd)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .process_group(0)
        // A contained worker is ended by its containment process, which a SIGKILL would
        // leave no time for: dropping it sends SIGTERM to its group instead (`GroupGuard`).
        .kill_on_drop(*containment == Containment::ProcessGroup);
    command.spawn()
}

/// The generation's session file, 0600 like every other file of the task (issue 14, item
/// 11): pi creates its session file with the default mode (0644 under the usual umask), so
/// the backend creates it first — empty, owner-only — and names it with `--session`. pi 1.6
/// writes a fresh session header into an existing empty file (`SessionManager
/// ._setSessionFile`, rewriting it in place, which keeps the mode) and appends to it from
/// then on; a resumed generation finds it again. Only this file: a umask on pi would also
/// make every file the worker's tools create in the user's repository private.
fn private_session_file(dirs: &WorkerDirs) -> std::io::Result<()> {
    use std::os::unix::fs::OpenOptionsExt as _;
    std::fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(false)
        .mode(0o600)
        .open(dirs.session_file())
        .map(drop)
}

/// SIGTERM to a worker's process group if the driver is dropped before the worker was
/// reaped (the runtime went away mid-run): a contained worker's containment process then
/// ends everything below it.
pub struct GroupGuard(pub Option<u32>);

impl Drop for GroupGuard {
    fn drop(&mut self) {
        if let Some(pid) = self.0.and_then(|p| i32::try_from(p).ok()) {
            let _ = killpg(Pid::from_raw(pid), Signal::SIGTERM);
        }
    }
}

/// The prompt resolved; `error` is what `Settled` will carry.
struct Settling {
    error: Option<String>,
}

/// How a worker is started: pi, its containment, the extension file it loads.
#[derive(Clone, Copy)]
struct Launch<'a> {
    pi: &'a PiCommand,
    containment: &'a Containment,
    extension: Option<&'a Path>,
}

#[allow(
    clippy::struct_excessive_bools,
    reason = "four independent facts of one worker's stop and settle state"
)]
struct Driver {
    child_ref: ChildRef,
    events: EventSink,
    mapper: PiMapper,
    stdin: Option<ChildStdin>,
    next_id: u64,
    ready: bool,
    /// `agent_settled` seen, waiting for session stats: the outcome to report.
    settling: Option<Settling>,
    settled: bool,
    pid: Option<u32>,
    /// Route recovery of a logical-model task (`None`: exact selections never fall back).
    recovery: Option<RouteRecovery>,
    /// Slate asked for an abort: nothing recovers after that.
    aborting: bool,
    /// The newest stdout lines that were not state (unparsable, out of order, over-long),
    /// at most [`EVIDENCE_KEEP`], and how many there were in all.
    evidence: VecDeque<String>,
    evidence_seen: u64,
    /// An over-long line lost a record: nothing more this worker writes is believed.
    distrusted: bool,
    /// Kept until the first model response begins: the pool refills after that.
    starting: Option<Starting>,
}

impl Driver {
    fn emit(&self, event: WorkerEvent) {
        let _ = self.events.send((self.child_ref, event));
    }

    /// Keep one line of evidence (the newest few).
    fn evidence(&mut self, text: String) {
        self.evidence_seen += 1;
        if self.evidence.len() == EVIDENCE_KEEP {
            self.evidence.pop_front();
        }
        self.evidence.push_back(text);
    }

    /// A stdout line passed [`LINE_MAX`]. A run summary (`turn_end`, `agent_end`) costs
    /// nothing and is only evidence; any other lost a record Slate needs (a response, the
    /// settle, a message's final text), so whatever this worker reports from now on could
    /// be wrong: it fails with that reason (unless it already settled) and is stopped.
    fn too_long(&mut self, head: &[u8]) -> bool {
        let text = format!(
            "a stdout line passed the {} MiB cap and was discarded unread; it began: {}",
            LINE_MAX / (1024 * 1024),
            String::from_utf8_lossy(head)
        );
        if lines::summary(head) {
            self.evidence(text);
            return false;
        }
        self.evidence(text.clone());
        self.distrusted = true;
        self.settling = None;
        if !self.settled {
            self.settled = true;
            self.ready(None);
            self.emit(WorkerEvent::Settled {
                error: Some(format!("pi's output cannot be trusted any more: {text}")),
            });
        }
        self.stdin = None;
        self.signal_group(Signal::SIGTERM);
        true
    }

    fn ready(&mut self, transcript: Option<String>) {
        if !self.ready {
            self.ready = true;
            self.emit(WorkerEvent::Ready { transcript });
        }
    }

    /// Write one command, remembering its id so the response is matched by id.
    /// `wire` overrides the command type (continuations go out as `follow_up`).
    async fn send(&mut self, prefix: &str, sent: Sent, wire: Option<&str>) {
        self.next_id += 1;
        let id = format!("{prefix}{}", self.next_id);
        let line = match wire {
            Some(kind) => {
                let text = match &sent {
                    Sent::Prompt { text }
                    | Sent::Steer { text, .. }
                    | Sent::FollowUp { text, .. } => text.as_str(),
                    Sent::Abort
                    | Sent::GetState
                    | Sent::GetSessionStats
                    | Sent::SetModel { .. }
                    | Sent::SetThinkingLevel { .. } => "",
                };
                let mut line =
                    crate::json::to_vec(&json!({"id": id, "type": kind, "message": text}))
                        .unwrap_or_default();
                line.push(b'\n');
                Some(line)
            }
            None => sent.command(&id).to_line().ok(),
        };
        self.mapper.sent(&id, sent);
        if let (Some(stdin), Some(line)) = (self.stdin.as_mut(), line)
            && stdin.write_all(&line).await.is_err()
        {
            // pi is gone; its exit is reported when stdout closes.
            self.stdin = None;
        }
    }

    async fn on_output(&mut self, output: Output) {
        match output {
            Output::Event(event) => {
                if matches!(event, WorkerEvent::AssistantStart) {
                    self.starting = None;
                }
                self.ready(None);
                self.emit(event);
            }
            Output::SessionFile(path) => self.ready(Some(path)),
            Output::Settled {
                error,
                aborted,
                retries_ended,
            } => {
                if self.settled || self.settling.is_some() {
                    return;
                }
                match (error, self.recovery.as_mut()) {
                    (Some(error), Some(recovery)) if !self.aborting => {
                        let step = recovery.on_failure(error, aborted, retries_ended);
                        self.step(step).await;
                    }
                    (error, _) => self.begin_settle(error).await,
                }
            }
            Output::Switched(result) => {
                if let Some(recovery) = self.recovery.as_mut() {
                    let step = recovery.on_switched(result);
                    self.step(step).await;
                }
            }
            Output::SessionStats(stats) => {
                if let Some(context) = stats.context {
                    self.emit(WorkerEvent::Context(context));
                }
                self.finish_settle();
            }
            Output::PromptRefused { command, error } if command == "prompt" && !self.settled => {
                // The prompt itself was refused: nothing will run.
                self.ready(None);
                self.settled = true;
                self.emit(WorkerEvent::Settled {
                    error: Some(format!("pi refused the prompt: {error}")),
                });
            }
            Output::Evidence(text) => self.evidence(text),
            Output::PromptRefused { .. }
            | Output::ResponseError { .. }
            | Output::AbortAcknowledged => {}
        }
    }

    async fn begin_settle(&mut self, error: Option<String>) {
        self.settling = Some(Settling { error });
        self.send("stats-", Sent::GetSessionStats, None).await;
    }

    /// Carry out one step of route recovery.
    async fn step(&mut self, step: Step) {
        match step {
            Step::Send(sent) => self.send("route-", sent, None).await,
            Step::Continue(route) => {
                self.emit(WorkerEvent::RouteAccepted {
                    logical: route.logical,
                    provider: route.selection.provider,
                    id: route.selection.id,
                    effort: route.selection.effort,
                });
                let text = CONTINUATION.to_owned();
                self.send("prompt-", Sent::Prompt { text }, None).await;
            }
            Step::Settle(error) => self.begin_settle(Some(error)).await,
        }
    }

    /// Slate aborts: no recovery from here on; a switch under way settles now.
    async fn abort(&mut self) {
        self.aborting = true;
        if let Some(error) = self.recovery.as_mut().and_then(RouteRecovery::cancel) {
            self.begin_settle(Some(error)).await;
        }
        self.send("abort-", Sent::Abort, None).await;
    }

    fn finish_settle(&mut self) {
        if let Some(Settling { error }) = self.settling.take() {
            self.settled = true;
            self.emit(WorkerEvent::Settled { error });
        }
    }

    /// Signals the worker's process group; whether any process was in it.
    fn signal_group(&self, signal: Signal) -> bool {
        self.pid
            .and_then(|p| i32::try_from(p).ok())
            // The worker leads its own process group (`process_group(0)`).
            .is_some_and(|pid| killpg(Pid::from_raw(pid), signal).is_ok())
    }
}

#[allow(
    clippy::too_many_lines,
    reason = "one select loop over the worker's four inputs"
)]
async fn run_worker(
    launch: &Launch<'_>,
    start: WorkerStart,
    dirs: &WorkerDirs,
    identity: &WorkerIdentity,
    events: EventSink,
    mut commands: mpsc::UnboundedReceiver<WorkerCommand>,
    taken: Option<Taken>,
) {
    let Launch {
        pi,
        containment,
        extension,
    } = *launch;
    let child_ref = start.child;
    let (pooled, starting) = taken.map_or((None, None), |t| (t.process, Some(t.starting)));
    let spawned = identity
        .socket()
        .ok_or_else(|| {
            "no control socket: a pi worker's Slate extension asks its coordinator before \
             every model request and tool, so the coordinator must be served on its socket"
                .to_owned()
        })
        .and_then(|_| {
            extension_file(extension).map_err(|e| format!("cannot write Slate's pi extension: {e}"))
        })
        .and_then(|extension| {
            private_session_file(dirs).map_err(|e| {
                format!(
                    "cannot create the transcript {}: {e}",
                    dirs.session_file().display()
                )
            })?;
            Ok(extension)
        })
        .and_then(|extension| match pooled {
            Some(Pooled {
                child,
                binding,
                mut guard,
                ..
            }) => {
                // The driver's own guard below takes over.
                guard.0 = None;
                let bytes = identity.pooled_binding(
                    &system_prompt(&start, identity.extensions()),
                    &all_tools(&start, identity.extensions()),
                );
                Ok((child, Some((binding, bytes))))
            }
            None => spawn_pi(pi, containment, &start, dirs, identity, &extension)
                .map(|child| (child, None))
                .map_err(|e| format!("cannot start pi ({}): {e}", pi.program.display())),
        });
    let (mut child, binding) = match spawned {
        Ok(spawned) => spawned,
        Err(e) => {
            let _ = events.send((child_ref, WorkerEvent::SetupFailed { error: e }));
            let _ = events.send((
                child_ref,
                WorkerEvent::Exited {
                    reason: "not started".to_owned(),
                },
            ));
            return;
        }
    };
    if let Some(pid) = child.id() {
        identity.report_pid(pid);
    }
    let mut guard = GroupGuard(child.id());
    let (Some(stdout), Some(mut stderr)) = (child.stdout.take(), child.stderr.take()) else {
        let _ = child.start_kill();
        let _ = events.send((
            child_ref,
            WorkerEvent::Exited {
                reason: "pi started without pipes".to_owned(),
            },
        ));
        return;
    };
    let stderr_tail = tokio::spawn(async move {
        let mut kept: VecDeque<u8> = VecDeque::with_capacity(STDERR_KEEP);
        let mut buf = [0u8; 4096];
        while let Ok(n) = stderr.read(&mut buf).await {
            if n == 0 {
                break;
            }
            kept.extend(&buf[..n]);
            while kept.len() > STDERR_KEEP {
                kept.pop_front();
            }
        }
        String::from_utf8_lossy(kept.make_contiguous()).into_owned()
    });
    let mut stdin = child.stdin.take();
    let mut lines = BoundedLines::new(stdout, LINE_MAX);
    let started_as = if binding.is_some() {
        StartedAs::Pooled
    } else {
        StartedAs::Cold
    };
    if let Some((pipe, bytes)) = binding {
        let bound = match stdin.as_mut() {
            Some(stdin) => bind(stdin, &mut lines, pipe, bytes, &start, dirs).await,
            None => Err("pi started without pipes".to_owned()),
        };
        if let Err(error) = bound {
            // Fail closed, as a cold start that cannot load the extension: the process ends.
            let _ = child.start_kill();
            drop(guard);
            let _ = tokio::time::timeout(TERM_GRACE, child.wait()).await;
            // What pi said about it (an extension that failed names why on stderr), as a cold
            // start's exit reason carries it.
            let said = tokio::time::timeout(TERM_GRACE, stderr_tail)
                .await
                .ok()
                .and_then(Result::ok)
                .unwrap_or_default();
            let said = said.trim();
            let said = if said.is_empty() {
                String::new()
            } else {
                format!("; pi said: {}", tail_chars(said, 400))
            };
            let _ = events.send((
                child_ref,
                WorkerEvent::SetupFailed {
                    error: format!("a pre-started pi could not be bound: {error}{said}"),
                },
            ));
            let _ = events.send((
                child_ref,
                WorkerEvent::Exited {
                    reason: "not started: the pre-started pi was ended".to_owned(),
                },
            ));
            return;
        }
    }
    let _ = events.send((child_ref, WorkerEvent::Launched(started_as)));
    let mut driver = Driver {
        child_ref,
        events,
        mapper: PiMapper::new(),
        stdin,
        next_id: 0,
        ready: false,
        settling: None,
        settled: false,
        pid: child.id(),
        recovery: RouteRecovery::new(start.spec.logical.as_ref(), start.spec.model.as_ref()),
        aborting: false,
        evidence: VecDeque::new(),
        evidence_seen: 0,
        distrusted: false,
        starting,
    };
    driver.send("state-", Sent::GetState, None).await;
    let mut prompts = start.prompts.iter();
    if let Some(first) = prompts.next() {
        driver
            .send(
                "prompt-",
                Sent::Prompt {
                    text: first.clone(),
                },
                None,
            )
            .await;
    }
    // A resume's continuation (or, before any session, the assignment's continuation)
    // follows the prompt inside the same run.
    for continuation in prompts {
        driver
            .send(
                "prompt-",
                Sent::Prompt {
                    text: continuation.clone(),
                },
                Some("follow_up"),
            )
            .await;
    }

    // A contained worker's child is its containment process, which outlives pi and ends
    // with it. One that ends while pi still runs was killed (by a tool of the same user):
    // pi, no longer contained, is ended at once (`WorkerExited`'s reason says why).
    let contained = *containment != Containment::ProcessGroup;
    let mut containment_ended: Option<std::process::ExitStatus> = None;
    let mut containment_killed = false;
    let mut stdout_open = true;
    let mut commands_open = true;
    let mut stats_deadline: Option<tokio::time::Instant> = None;
    let mut kill_at: Option<tokio::time::Instant> = None;
    let far = || tokio::time::Instant::now() + Duration::from_secs(3600);
    while stdout_open {
        let stats_wake = stats_deadline.unwrap_or_else(far);
        let kill_wake = kill_at.unwrap_or_else(far);
        tokio::select! {
            read = lines.next_line() => {
                match read {
                    Ok(None) | Err(_) => stdout_open = false,
                    // Read to the end (so pi never blocks on a full pipe), believed no more.
                    Ok(Some(_)) if driver.distrusted => {}
                    Ok(Some(Line::TooLong { head })) => {
                        if driver.too_long(&head) {
                            stats_deadline = None;
                            kill_at = Some(tokio::time::Instant::now() + TERM_GRACE);
                        }
                    }
                    Ok(Some(Line::Record(line))) => {
                        let outputs = driver.mapper.line(line);
                        for output in outputs {
                            let was_settling = driver.settling.is_some();
                            driver.on_output(output).await;
                            if !was_settling && driver.settling.is_some() {
                                stats_deadline = Some(tokio::time::Instant::now() + STATS_WAIT);
                            }
                        }
                        if driver.settled {
                            stats_deadline = None;
                        }
                    }
                }
            }
            command = commands.recv(), if commands_open => match command {
                Some(WorkerCommand::Abort) => {
                    driver.abort().await;
                    // A recovery switch cancelled by the abort settles now.
                    if driver.settling.is_some() && stats_deadline.is_none() {
                        stats_deadline = Some(tokio::time::Instant::now() + STATS_WAIT);
                    }
                }
                Some(WorkerCommand::Message { id, mode, text }) => {
                    let sent = match mode {
                        MessageMode::FollowUp => Sent::FollowUp { message: id, text },
                        MessageMode::Steer | MessageMode::Inbox => Sent::Steer { message: id, text },
                    };
                    driver.send("msg-", sent, None).await;
                }
                Some(WorkerCommand::Release) => {
                    // Closing stdin makes pi exit.
                    driver.stdin = None;
                }
                Some(WorkerCommand::Kill) | None => {
                    commands_open = false;
                    driver.stdin = None;
                    driver.signal_group(Signal::SIGTERM);
                    kill_at = Some(tokio::time::Instant::now() + TERM_GRACE);
                }
            },
            () = tokio::time::sleep_until(stats_wake), if stats_deadline.is_some() => {
                stats_deadline = None;
                driver.finish_settle();
            }
            () = tokio::time::sleep_until(kill_wake), if kill_at.is_some() => {
                kill_at = None;
                driver.signal_group(Signal::SIGKILL);
            }
            status = child.wait(), if contained && containment_ended.is_none() => {
                // Normally pi is gone by now and its group with it (the containment reaped
                // everything before it exited): the signal finds no one, and the rest of
                // stdout is still read. Found someone: the containment died before pi.
                containment_ended = Some(status.unwrap_or_default());
                containment_killed = driver.signal_group(Signal::SIGKILL);
            }
        }
    }
    driver.finish_settle();
    driver.stdin = None;
    let status = tokio::select! {
        status = child.wait() => status.ok(),
        () = tokio::time::sleep(TERM_GRACE * 2) => {
            driver.signal_group(Signal::SIGKILL);
            child.wait().await.ok()
        }
    };
    guard.0 = None;
    let stderr = stderr_tail.await.unwrap_or_default();
    let mut reason = match status {
        Some(s) => match (s.code(), std::os::unix::process::ExitStatusExt::signal(&s)) {
            (Some(code), _) => format!("exit {code}"),
            (None, Some(signal)) => format!("signal {signal}"),
            (None, None) => "exited".to_owned(),
        },
        None => "exit status unknown".to_owned(),
    };
    if containment_killed {
        reason = format!(
            "its containment process ended ({reason}) while pi still ran, so pi was killed; what the worker left behind speaks for nobody"
        );
    }
    if let Some(last) = driver.evidence.back() {
        let _ = write!(
            reason,
            " (stdout evidence, {} line(s), the newest: {})",
            driver.evidence_seen,
            head_chars(last, 400)
        );
    }
    let stderr = stderr.trim();
    if !stderr.is_empty() && !reason.ends_with(" 0") {
        reason.push_str(": ");
        reason.push_str(&tail_chars(stderr, 400));
    }
    driver.emit(WorkerEvent::Exited { reason });
}

/// The last `n` characters of `text`.
fn tail_chars(text: &str, n: usize) -> String {
    let skip = text.chars().count().saturating_sub(n);
    text.chars().skip(skip).collect()
}

/// The first `n` characters of `text`, `…` when cut.
fn head_chars(text: &str, n: usize) -> String {
    let mut out: String = text.chars().take(n).collect();
    if out.len() < text.len() {
        out.push('…');
    }
    out
}

/// The extension file workers load: `overridden` (tests of a broken one), else the installed
/// worker entry (installed on first use).
fn extension_file(overridden: Option<&Path>) -> std::io::Result<PathBuf> {
    match overridden {
        Some(path) => Ok(path.to_path_buf()),
        None => installed_extension(),
    }
}

/// The key of a pooled process for workspace `cwd`: Slate's extension, then the host
/// extensions every worker loads, and their tools.
fn pool_key(
    cwd: &Path,
    socket: &Path,
    extension: PathBuf,
    host: &[WorkerExtension],
) -> Option<PoolKey> {
    let mut extensions = vec![extension];
    extensions.extend(host.iter().map(|unit| unit.path.clone()));
    let tools = host.iter().flat_map(|unit| unit.tools.clone()).collect();
    PoolKey::new(cwd, socket, extensions, tools)
}

/// How long each binding step may take before the pooled process is given up.
const BIND_WAIT: Duration = Duration::from_secs(10);

/// Make a pooled process this generation's worker (`worker::pi::pool`): hand over the binding,
/// open the session file, prove the extension loaded, set the model and effort.
async fn bind<R: tokio::io::AsyncRead + Unpin>(
    stdin: &mut ChildStdin,
    lines: &mut BoundedLines<R>,
    pipe: std::os::fd::OwnedFd,
    bytes: Vec<u8>,
    start: &WorkerStart,
    dirs: &WorkerDirs,
) -> Result<(), String> {
    // Written from another thread: a binding larger than the pipe's buffer is read by the
    // extension only once `switch_session` runs its factory.
    let writer = tokio::task::spawn_blocking(move || {
        use std::io::Write as _;
        std::fs::File::from(pipe).write_all(&bytes)
    });
    let session = dirs.session_file();
    let switched = ask(
        stdin,
        lines,
        json!({"id": "bind-session", "type": "switch_session", "sessionPath": session}),
    )
    .await?;
    match writer.await {
        Ok(Ok(())) => {}
        Ok(Err(e)) => return Err(format!("the binding could not be handed over: {e}")),
        Err(e) => return Err(format!("the binding could not be handed over: {e}")),
    }
    if switched.get("cancelled") == Some(&serde_json::Value::Bool(true)) {
        return Err("pi cancelled the switch to the generation's session".to_owned());
    }
    let commands = ask(
        stdin,
        lines,
        json!({"id": "bind-commands", "type": "get_commands"}),
    )
    .await?;
    let loaded = commands
        .get("commands")
        .and_then(serde_json::Value::as_array)
        .is_some_and(|list| {
            list.iter()
                .any(|c| c.get("name").and_then(serde_json::Value::as_str) == Some(BOUND_COMMAND))
        });
    if !loaded {
        return Err(
            "Slate's worker extension did not load for this generation (pi runs on without an \
             extension whose setup failed, so the worker is not started)"
                .to_owned(),
        );
    }
    if let Some(model) = &start.spec.model {
        ask(
            stdin,
            lines,
            json!({"id": "bind-model", "type": "set_model", "provider": model.provider, "modelId": model.id}),
        )
        .await?;
        if let Some(effort) = &model.effort {
            ask(
                stdin,
                lines,
                json!({"id": "bind-effort", "type": "set_thinking_level", "level": effort}),
            )
            .await?;
        }
    }
    Ok(())
}

/// Send one command and wait for its response's `data` (`{}` when it has none); a failure
/// names the command and pi's error. Other lines are not the worker's yet and are dropped.
async fn ask<R: tokio::io::AsyncRead + Unpin>(
    stdin: &mut ChildStdin,
    lines: &mut BoundedLines<R>,
    command: serde_json::Value,
) -> Result<serde_json::Value, String> {
    let id = command["id"].as_str().unwrap_or_default().to_owned();
    let kind = command["type"].as_str().unwrap_or_default().to_owned();
    let mut wire = command.to_string();
    wire.push('\n');
    let answered = tokio::time::timeout(BIND_WAIT, async {
        stdin
            .write_all(wire.as_bytes())
            .await
            .map_err(|e| format!("{kind}: cannot write to pi: {e}"))?;
        loop {
            match lines.next_line().await {
                Ok(Some(Line::Record(line))) => {
                    let Ok(value) = serde_json::from_slice::<serde_json::Value>(line) else {
                        continue;
                    };
                    if value.get("type").and_then(serde_json::Value::as_str) == Some("response")
                        && value.get("id").and_then(serde_json::Value::as_str) == Some(id.as_str())
                    {
                        return Ok(value);
                    }
                }
                Ok(Some(Line::TooLong { .. })) => {}
                Ok(None) | Err(_) => return Err(format!("{kind}: pi exited")),
            }
        }
    })
    .await
    .map_err(|_| format!("{kind}: pi did not answer within {} s", BIND_WAIT.as_secs()))??;
    if answered.get("success") == Some(&serde_json::Value::Bool(true)) {
        Ok(answered.get("data").cloned().unwrap_or_else(|| json!({})))
    } else {
        let error = answered
            .get("error")
            .and_then(serde_json::Value::as_str)
            .unwrap_or("no reason given");
        Err(format!("{kind}: pi refused: {}", head_chars(error, 400)))
    }
}

//! `slate mcp`: the Model Context Protocol on stdio, so that any agent host that speaks MCP
//! (pi, Claude Code, Codex) delegates to Slate (`docs/mcp.md`).
//!
//! The host's MCP session is a parent runtime: the server starts its own coordinator for the
//! current directory in this process, exactly as `slate serve` does (the same plan, socket,
//! event log and [`Service`]), so `slate hub`, `slate status` and the CLI see it like any
//! other; or, with `--parent`, it uses a running one and leaves it running. Its tools are a
//! typed client of that coordinator's socket, one connection per call (the extension's
//! `callOnce`): every input goes through the same [`crate::control::methods`] types, the same
//! policy parsers and the same refusals as the CLI and the pi extension. No semantics are
//! implemented here; this module only maps MCP calls to protocol requests and back.
//!
//! Embedded rather than spawning `slate serve`: one process to start, supervise and signal;
//! the coordinator's lifetime is exactly the MCP session's (stdin end of file, SIGINT/SIGTERM,
//! the host's death via `PR_SET_PDEATHSIG`), with no second lifeline pipe or line parsing.
//!
//! * `delegate_task` / `subagent` launches → `delegate {request, cancelOnClose: true}`. A
//!   foreground call waits; the host's `notifications/cancelled` (or the end of the session)
//!   closes the call's connection, which is the caller's foreground cancellation: the
//!   window's unsettled members are cancelled and drain. Background answers at once with the
//!   accepted snapshots; when the window drains the host gets one `notifications/message`
//!   (logger `slate`, the preview and the outcome), and the outcome stays readable with
//!   `delegate_coordinate wait`/`status`.
//! * While a call waits and the host gave a `progressToken`, `notifications/progress` every
//!   `--progress-ms`: each one restarts the host's request timeout (pi's default 60 s).
//! * Tool text is Slate's model-facing preview (or the reply as JSON), cleaned of terminal
//!   controls ([`SafeText`]); structured content is the full typed answer. Every byte this
//!   server writes goes through [`SafeJsonWriter`], so no JSON string carries a raw C1 or bidi
//!   control (C0 controls are escaped by JSON itself).
//! * The host gate (`--host-version`, `unsupported-host`) does not apply: it guards the pi that
//!   runs Slate's extension as a main session, and an MCP host is no such pi (the workers' pi
//!   is still gated before any launch, as everywhere). Nor can the parent mutation reservation
//!   see the host's own edits: MCP shows a server only the calls made to it (docs/mcp.md).
//!
//! The MCP crate is `rmcp` (the official Rust SDK under the modelcontextprotocol organization,
//! Apache-2.0, 3.x, released often): its stdio transport is tokio `AsyncRead`/`AsyncWrite`
//! (it runs on the multi-thread runtime Slate's coordinator already uses), each request's
//! handler gets a `CancellationToken` fired by `notifications/cancelled` and by the end of the
//! session, and `Peer::notify_progress` sends progress for a request's token. With default
//! features off (`server`, `transport-io`: no macros, HTTP or auth) it adds about 30 small
//! crates, chrono and tracing the largest. Hand-writing JSON-RPC would mean owning version
//! negotiation and the cancellation/progress rules of every MCP revision ourselves.

use std::collections::{HashMap, HashSet};
use std::path::PathBuf;
use std::pin::Pin;
use std::sync::{Arc, Mutex, PoisonError};
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, Implementation,
    JsonObject, ListToolsResult, PaginatedRequestParams, ProgressNotificationParam,
    ServerCapabilities, ServerConfig, Tool,
};
use rmcp::service::{RequestContext, RoleServer};
use rmcp::{ErrorData as McpError, Peer, ServerHandler, ServiceExt as _};
use serde::de::DeserializeOwned;
use serde_json::{Map, Value, json};
use tokio::io::AsyncWrite;
use tokio::signal::unix::{SignalKind, signal};
use tokio_util::sync::CancellationToken;

use crate::cli::embedded::{EmbedArgs, Embedded, Plan, Served};
use crate::cli::{Error, ExitCode, Printer};
use crate::control::client::{CONNECT_TIMEOUT, Client, ClientError};
use crate::control::methods::{
    self, ClientInfo, DelegateParams, DelegateResult, Event, Method, NoParams, Notification,
    StatusParams, StatusResult, Target, TargetParams, method,
};
use crate::control::protocol::ControlError;
use crate::control::{Metadata, Server};
use crate::core::{ChildSnapshot, Presence, Reply};
use crate::policy::Problems;
use crate::policy::request::{SubagentRequest, parse_subagent};
use crate::text::SafeText;

pub struct McpArgs {
    /// A running coordinator to use instead of an own one.
    pub parent: Option<String>,
    /// The own coordinator's plan (backend, policy trust, root model).
    pub embed: EmbedArgs,
    /// How often a waiting call reports progress.
    pub progress_every: Duration,
}

pub fn run(printer: &Printer, args: &McpArgs) -> Result<ExitCode, Error> {
    // Before any other thread exists: the signal comes when the host that started this
    // server dies, even by SIGKILL (its pipe's end of file is the first line of defence).
    nix::sys::prctl::set_pdeathsig(nix::sys::signal::Signal::SIGTERM).map_err(|e| {
        Error::Environment(format!(
            "cannot ask for a signal when the MCP host dies: {e}"
        ))
    })?;
    crate::cli::fleet::block_on_multi(|| session(printer, args))
}

/// This process's own coordinator: stopped, drained and disposed when the session ends.
struct Owned {
    rt: crate::runtime::RuntimeHandle,
    join: tokio::task::JoinHandle<crate::runtime::RuntimeReport>,
    stop: tokio::sync::oneshot::Sender<()>,
    server: tokio::task::JoinHandle<()>,
}

async fn session(printer: &Printer, args: &McpArgs) -> Result<ExitCode, Error> {
    let (Ok(mut sigint), Ok(mut sigterm)) = (
        signal(SignalKind::interrupt()),
        signal(SignalKind::terminate()),
    ) else {
        return Err(Error::Environment(
            "cannot install signal handlers".to_owned(),
        ));
    };
    let (socket, parent_id, owned) = if let Some(parent) = &args.parent {
        let located = crate::cli::fleet::locate(Some(parent.clone()))?;
        let parent_id = located
            .endpoint
            .metadata
            .as_ref()
            .map_or_else(|| parent.clone(), |m: &Metadata| m.parent_id.to_string());
        (located.endpoint.socket, parent_id, None)
    } else {
        let (socket, parent_id, owned) = start(&args.embed).await?;
        (socket, parent_id.to_string(), Some(owned))
    };
    // stdout is the MCP transport: everything for people goes to stderr.
    printer.err_line(&format!(
        "slate mcp: parent {parent_id}, socket {}",
        socket.display()
    ));
    let slate = Slate::new(socket, args.progress_every);
    let outcomes = tokio::spawn(deliver_outcomes(slate.clone()));
    let ct = CancellationToken::new();
    // Non-blocking pipes where the host gave pipes (as every host does): a read of stdin
    // that never ends would otherwise hold up the runtime's exit after a signal.
    let (stdin, stdout) = rmcp::transport::io::stdio_pipes();
    let transport = (stdin, SafeJsonWriter::new(stdout));
    let why = tokio::select! {
        running = slate.clone().serve_with_ct(transport, ct.clone()) => match running {
            Ok(running) => {
                let session_ct = running.cancellation_token();
                tokio::select! {
                    _ = running.waiting() => "stdin closed (the MCP host ended the session)",
                    _ = sigint.recv() => { session_ct.cancel(); "SIGINT received" }
                    _ = sigterm.recv() => { session_ct.cancel(); "SIGTERM received" }
                }
            }
            Err(_) => "the MCP session ended before it was initialized",
        },
        _ = sigint.recv() => { ct.cancel(); "SIGINT received" }
        _ = sigterm.recv() => { ct.cancel(); "SIGTERM received" }
    };
    // Every call still waiting was cancelled with the session (its token is a child of the
    // session's): its connection closes and its foreground window is cancelled.
    outcomes.abort();
    let Some(owned) = owned else {
        printer.err_line(&format!(
            "slate mcp: {why}; the coordinator {parent_id} goes on"
        ));
        return Ok(ExitCode::Ok);
    };
    printer.err_line(&format!(
        "slate mcp: {why}; stopping every worker and draining…"
    ));
    let Owned {
        rt,
        join,
        stop,
        server,
    } = owned;
    let stopping = rt.clone();
    tokio::spawn(async move {
        let _ = stopping.shutdown().await;
    });
    let _ = stop.send(());
    let _ = server.await;
    let _ = rt.shutdown().await;
    drop(rt);
    let report = join.await.unwrap_or_default();
    printer.err_line(&format!(
        "slate mcp: stopped ({} worker(s) started, {} terminated after the grace period)",
        report.workers_started, report.workers_killed
    ));
    Ok(ExitCode::Ok)
}

/// The own coordinator, as `slate serve` starts one: its socket bound, its runtime running,
/// its service answering.
async fn start(embed: &EmbedArgs) -> Result<(PathBuf, uuid::Uuid, Owned), Error> {
    let plan = Plan::new(embed)?;
    let events = plan.events();
    let server =
        Server::bind_logged_coordinator(plan.root_id, plan.loaded.cwd.clone(), Some(events))
            .map_err(|e| Error::Environment(e.to_string()))?;
    let embedded = match Embedded::launch(plan, embed).await {
        Ok(embedded) => embedded,
        Err(e) => {
            server.discard();
            return Err(e);
        }
    };
    let socket = server.socket().to_owned();
    let Served {
        rt,
        join,
        root_id,
        service,
    } = embedded.into_served();
    let (stop, stopped) = tokio::sync::oneshot::channel();
    let server = tokio::spawn(server.run(Arc::new(service), async move {
        let _ = stopped.await;
    }));
    Ok((
        socket,
        root_id,
        Owned {
            rt,
            join,
            stop,
            server,
        },
    ))
}

// ---- the MCP server ---------------------------------------------------------------------

/// Background outcomes that arrived before their call's admission was read, kept at most.
const EARLY_KEEP: usize = 64;

#[derive(Clone)]
struct Slate {
    inner: Arc<Inner>,
}

struct Inner {
    socket: PathBuf,
    progress_every: Duration,
    /// The host's peer, once a call came (background outcomes are sent to it).
    peer: Mutex<Option<Peer<RoleServer>>>,
    /// Calls of this session whose window outcome is still to be sent, and outcomes that
    /// came first.
    background: Mutex<Background>,
    /// Who the host is, for `hello.client`.
    host: Mutex<Option<String>>,
}

#[derive(Default)]
struct Background {
    expected: HashSet<u64>,
    early: HashMap<u64, (Value, String)>,
    early_order: std::collections::VecDeque<u64>,
}

/// Why a tool call failed, as the host's model reads it.
enum Failure {
    /// Slate's refusal (or transport error), in the coordinator's words.
    Control(ControlError),
    /// The coordinator could not be reached or answered badly.
    Client(ClientError),
    /// Not a call Slate can read (no action, unknown action).
    Input(String),
}

impl From<ControlError> for Failure {
    fn from(e: ControlError) -> Self {
        Self::Control(e)
    }
}

impl From<ClientError> for Failure {
    fn from(e: ClientError) -> Self {
        match e {
            ClientError::Remote(e) | ClientError::Refused(e) => Self::Control(e),
            other => Self::Client(other),
        }
    }
}

impl Failure {
    fn into_result(self) -> CallToolResult {
        let (text, structured) = match self {
            Self::Control(e) => {
                let text = e.to_string();
                (text, json!({"error": e}))
            }
            Self::Client(e) => {
                let text = e.to_string();
                (
                    text.clone(),
                    json!({"error": {"code": "unreachable", "message": text}}),
                )
            }
            Self::Input(text) => (
                text.clone(),
                json!({"error": {"code": "invalid-request", "message": text}}),
            ),
        };
        let mut result = CallToolResult::error(vec![ContentBlock::text(
            SafeText::lines(&text).into_string(),
        )]);
        result.structured_content = Some(structured);
        result
    }
}

type Outcome = Result<CallToolResult, Failure>;

impl Slate {
    fn new(socket: PathBuf, progress_every: Duration) -> Self {
        Self {
            inner: Arc::new(Inner {
                socket,
                progress_every,
                peer: Mutex::new(None),
                background: Mutex::new(Background::default()),
                host: Mutex::new(None),
            }),
        }
    }

    /// One connection for one call, saying `slate mcp` and its host in `hello.client`.
    async fn connect(&self) -> Result<Client, ClientError> {
        let host = self
            .inner
            .host
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone();
        let mut name = format!("slate-mcp {}", env!("CARGO_PKG_VERSION"));
        if let Some(host) = host {
            name = format!("{name} (host {host})");
        }
        Client::connect_named(&self.inner.socket, CONNECT_TIMEOUT, ClientInfo::named(name)).await
    }

    /// Remember the host (its peer, for background outcomes, and its name).
    fn note_peer(&self, context: &RequestContext<RoleServer>) {
        let mut peer = self
            .inner
            .peer
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        if peer.is_none() {
            if let Some(info) = context.peer.peer_info() {
                let host = format!("{} {}", info.client_info.name, info.client_info.version);
                *self
                    .inner
                    .host
                    .lock()
                    .unwrap_or_else(PoisonError::into_inner) =
                    Some(SafeText::line(&host).into_string());
            }
            *peer = Some(context.peer.clone());
        }
    }

    /// Send call `call`'s outcome when (or if already) it arrives.
    async fn expect(&self, call: u64) {
        let early = {
            let mut background = self
                .inner
                .background
                .lock()
                .unwrap_or_else(PoisonError::into_inner);
            let arrived = background.early.remove(&call);
            if arrived.is_none() {
                background.expected.insert(call);
            }
            arrived
        };
        if let Some((outcome, preview)) = early {
            self.notify_outcome(call, outcome, &preview).await;
        }
    }

    async fn notify_outcome(&self, call: u64, outcome: Value, preview: &str) {
        let peer = self
            .inner
            .peer
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone();
        let Some(peer) = peer else { return };
        let data = json!({
            "event": "slate-window-outcome",
            "call": call,
            "preview": SafeText::lines(preview).into_string(),
            "outcome": outcome,
        });
        let _ = log_notice(&peer, data).await;
    }

    /// Run `work` for one tool call: cancelled with the host's request (the work's future,
    /// and with it its connection, is dropped), and reporting progress while it waits.
    async fn waiting<F>(&self, context: &RequestContext<RoleServer>, what: &str, work: F) -> Outcome
    where
        F: std::future::Future<Output = Outcome>,
    {
        let token = context.meta.get_progress_token();
        let started = Instant::now();
        let mut ticks = tokio::time::interval_at(
            tokio::time::Instant::now() + self.inner.progress_every,
            self.inner.progress_every,
        );
        tokio::pin!(work);
        let mut sent = 0_u32;
        loop {
            tokio::select! {
                outcome = &mut work => return outcome,
                () = context.ct.cancelled() => {
                    return Err(Failure::Input(format!("{what}: cancelled by the host")));
                }
                _ = ticks.tick(), if token.is_some() => {
                    sent += 1;
                    if let Some(token) = token.clone() {
                        let elapsed = started.elapsed().as_secs();
                        let _ = context
                            .peer
                            .notify_progress(
                                ProgressNotificationParam::new(token, f64::from(sent))
                                    .with_message(format!("{what}: waiting ({elapsed} s)")),
                            )
                            .await;
                    }
                }
            }
        }
    }

    /// `delegate_task`, or a `subagent` launch (`compat`): the input as written.
    async fn delegate(&self, input: JsonObject, compat: bool) -> Outcome {
        let batch = input.contains_key("tasks");
        let client = self.connect().await?;
        let params = DelegateParams {
            request: Value::Object(input),
            background: None,
            cancel_on_close: true,
        };
        match client.request::<method::Delegate>(&params).await? {
            DelegateResult::Foreground(fg) => {
                let outcomes = fg.outcome.outcomes;
                let structured = if batch {
                    json!({"children": outcomes})
                } else {
                    outcomes
                        .into_iter()
                        .next()
                        .map_or(Value::Null, |s| to_value(&s))
                };
                Ok(success(
                    SafeText::lines(&fg.preview).into_string(),
                    structured,
                ))
            }
            DelegateResult::Background(Reply::Admitted { call, children }) => {
                let call = call.0;
                self.expect(call).await;
                let shown: Vec<Value> = children
                    .iter()
                    .map(|c| if compat { compat_child(c) } else { to_value(c) })
                    .collect();
                let n = children.len();
                let text = format!(
                    "Accepted {n} task{} in the background (call {call}); when they drain, Slate sends a notifications/message with the outcomes, and delegate_coordinate wait (with a target) or status reads them.\n{}",
                    if n == 1 { "" } else { "s" },
                    pretty(&shown)
                );
                Ok(success(text, json!({"call": call, "children": shown})))
            }
            DelegateResult::Background(other) => Err(Failure::Input(format!(
                "delegate: Slate answered neither an admission nor a window outcome: {}",
                pretty(&other)
            ))),
        }
    }

    /// `delegate_coordinate`: `action` names the method; the other members are its params,
    /// read by the protocol's own types (a wrong member is refused in the coordinator's
    /// words, `params.<field>: …`).
    async fn coordinate(&self, mut input: JsonObject) -> Outcome {
        let action = input.remove("action");
        let rest = Value::Object(input);
        let Some(Value::String(action)) = action else {
            return Err(Failure::Input(format!(
                "delegate_coordinate: action: required, one of {}",
                ACTIONS.join(", ")
            )));
        };
        let client = self.connect().await?;
        let reply: Value = match action.as_str() {
            "status" => typed::<method::Status>(&client, rest).await?,
            "stop" => typed::<method::Stop>(&client, rest).await?,
            "park" => typed::<method::Park>(&client, rest).await?,
            "resume" => typed::<method::Resume>(&client, rest).await?,
            "followup" => typed::<method::Followup>(&client, rest).await?,
            "revive" => typed::<method::Revive>(&client, rest).await?,
            "message" => typed::<method::Message>(&client, rest).await?,
            "inbox" => typed::<method::Inbox>(&client, rest).await?,
            "wait" => typed::<method::Wait>(&client, rest).await?,
            other => {
                return Err(Failure::Input(format!(
                    "delegate_coordinate: unknown action {}; expected one of {}",
                    crate::json::to_string(other).unwrap_or_default(),
                    ACTIONS.join(", ")
                )));
            }
        };
        if let Some(call) = admitted_call(&reply) {
            self.expect(call).await;
        }
        Ok(success(pretty(&reply), reply))
    }

    /// `subagent`: a launch, or an action by exact id (read by Slate's compatibility parser).
    async fn subagent(&self, input: JsonObject) -> Outcome {
        if !input.contains_key("action") {
            return self.delegate(input, true).await;
        }
        let request = parse_subagent(&Value::Object(input))
            .map_err(|problems| ControlError::from(Problems(problems)))?;
        let client = self.connect().await?;
        let reply = match request {
            SubagentRequest::Launch(_) => {
                return Err(Failure::Input(
                    "subagent: an action request cannot also be a launch".to_owned(),
                ));
            }
            SubagentRequest::Agents => {
                to_value(&client.request::<method::Agents>(&NoParams {}).await?)
            }
            SubagentRequest::Status(id) => to_value(
                &client
                    .request::<method::Status>(&StatusParams {
                        target: Some(Target(id)),
                        ..StatusParams::default()
                    })
                    .await?,
            ),
            SubagentRequest::Stop(id) => to_value(
                &client
                    .request::<method::Stop>(&TargetParams { target: Target(id) })
                    .await?,
            ),
            SubagentRequest::Steer { id, message } => to_value(
                &client
                    .request::<method::Steer>(&methods::SteerParams {
                        target: Target(id),
                        text: message,
                    })
                    .await?,
            ),
            SubagentRequest::Resume { id, message } => {
                let reply = renew(&client, Target(id), message).await?;
                if let Reply::Admitted { call, children } = &reply {
                    self.expect(call.0).await;
                    let shown: Vec<Value> = children.iter().map(compat_child).collect();
                    return Ok(success(pretty(&shown), to_value(&reply)));
                }
                to_value(&reply)
            }
        };
        Ok(success(pretty(&reply), reply))
    }
}

/// One `notifications/message` (level `notice`, logger `slate`). MCP logging is deprecated
/// from protocol 2026-07-28 on (SEP-2577) with no server-to-host message in its place; the
/// hosts in use (pi 1.6 speaks 2025-11-25) receive it.
#[allow(
    deprecated,
    reason = "the one server-to-host message today's hosts receive"
)]
async fn log_notice(peer: &Peer<RoleServer>, data: Value) -> Result<(), rmcp::ServiceError> {
    use rmcp::model::{LoggingLevel, LoggingMessageNotificationParam};
    peer.notify_logging_message(
        LoggingMessageNotificationParam::new(LoggingLevel::Notice, data).with_logger("slate"),
    )
    .await
}

/// The logging capability, for [`log_notice`].
#[allow(deprecated, reason = "see log_notice")]
fn capabilities() -> ServerCapabilities {
    ServerCapabilities::builder()
        .enable_tools()
        .enable_logging()
        .build()
}

/// The contract's `delegate_coordinate` actions.
const ACTIONS: [&str; 9] = [
    "status", "stop", "park", "resume", "followup", "revive", "message", "inbox", "wait",
];

/// One typed request of method `M`: its params read from `params` by the protocol's decoder.
async fn typed<M: Method>(client: &Client, params: Value) -> Result<Value, Failure>
where
    M::Params: DeserializeOwned,
{
    let params: M::Params = methods::decode(params)?;
    Ok(to_value(&client.request::<M>(&params).await?))
}

/// `subagent resume`: continue the generation by its presence (paused → `resume`, idle →
/// `followup`, parked → `revive`; anything else is `resume`, which Slate refuses naming it).
async fn renew(client: &Client, target: Target, assignment: String) -> Result<Reply, Failure> {
    let status = client
        .request::<method::Status>(&StatusParams {
            target: Some(target),
            ..StatusParams::default()
        })
        .await?;
    let presence = match &status {
        StatusResult::Generation(view) => view
            .agents
            .iter()
            .find(|a| a.id == view.snapshot.id)
            .map(|a| a.presence),
        _ => None,
    };
    Ok(match presence {
        Some(Presence::Idle) => {
            client
                .request::<method::Followup>(&methods::RenewParams {
                    target,
                    assignment,
                    result_schema: None,
                })
                .await?
        }
        Some(Presence::Parked) => {
            client
                .request::<method::Revive>(&methods::RenewParams {
                    target,
                    assignment,
                    result_schema: None,
                })
                .await?
        }
        _ => {
            client
                .request::<method::Resume>(&methods::ResumeParams { target, assignment })
                .await?
        }
    })
}

/// The call of an admission reply (`resume`, `followup`, `revive`).
fn admitted_call(reply: &Value) -> Option<u64> {
    (reply.get("kind")?.as_str()? == "admitted")
        .then(|| reply.get("call")?.as_u64())
        .flatten()
}

/// An accepted child as the compatibility shape shows it: `id` is `UUID@generation`.
fn compat_child(child: &ChildSnapshot) -> Value {
    let mut value = to_value(child);
    if let Value::Object(map) = &mut value {
        map.insert(
            "id".to_owned(),
            Value::String(format!("{}@{}", child.id, child.generation)),
        );
        map.insert("taskId".to_owned(), Value::String(child.id.to_string()));
    }
    value
}

fn to_value<T: serde::Serialize>(value: &T) -> Value {
    serde_json::to_value(value).unwrap_or(Value::Null)
}

/// JSON for the model, every control escaped.
fn pretty<T: serde::Serialize + ?Sized>(value: &T) -> String {
    crate::json::to_string_pretty(value).unwrap_or_default()
}

fn success(text: String, structured: Value) -> CallToolResult {
    let mut result = CallToolResult::success(vec![ContentBlock::text(text)]);
    // MCP structured content is an object; a lone non-object is wrapped.
    result.structured_content = Some(match structured {
        Value::Object(_) => structured,
        other => json!({"result": other}),
    });
    result
}

impl ServerHandler for Slate {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(capabilities())
        .with_server_info(Implementation::new("slate", env!("CARGO_PKG_VERSION")))
        .with_instructions(
            "Slate delegates work to pi subagents: delegate_task (one task or an ordered batch; foreground by default, or background: true), delegate_coordinate (status, stop, park, resume, followup, revive, message, inbox, wait by exact UUID@generation) and subagent (the compatibility shape). Slate checks the whole call before anything starts.",
        )
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, McpError> {
        Ok(ListToolsResult::with_all_items(tools()))
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, McpError> {
        self.note_peer(&context);
        let input = request.arguments.unwrap_or_default();
        let name = request.name.as_ref();
        let outcome = match name {
            DELEGATE_TASK => {
                self.waiting(&context, name, self.delegate(input, false))
                    .await
            }
            DELEGATE_COORDINATE => self.waiting(&context, name, self.coordinate(input)).await,
            SUBAGENT => self.waiting(&context, name, self.subagent(input)).await,
            other => {
                return Err(McpError::invalid_params(
                    format!(
                        "tool {}: not a Slate tool; Slate has {DELEGATE_TASK}, {DELEGATE_COORDINATE} and {SUBAGENT}",
                        SafeText::line(other)
                    ),
                    None,
                ));
            }
        };
        Ok(outcome.unwrap_or_else(Failure::into_result).into())
    }
}

/// Sends each background outcome of this session once, as it drains.
async fn deliver_outcomes(slate: Slate) {
    let Ok(client) = slate.connect().await else {
        return;
    };
    let Ok(mut events) = client.subscribe().await else {
        return;
    };
    while let Some(notification) = events.next().await {
        let Notification::Event(Event::Outcome { outcome, preview }) = notification else {
            continue;
        };
        let call = outcome.call.0;
        let expected = {
            let mut background = slate
                .inner
                .background
                .lock()
                .unwrap_or_else(PoisonError::into_inner);
            if background.expected.remove(&call) {
                true
            } else {
                background
                    .early
                    .insert(call, (to_value(&outcome), preview.clone()));
                background.early_order.push_back(call);
                while background.early_order.len() > EARLY_KEEP {
                    if let Some(oldest) = background.early_order.pop_front() {
                        background.early.remove(&oldest);
                    }
                }
                false
            }
        };
        if expected {
            slate
                .notify_outcome(call, to_value(&outcome), &preview)
                .await;
        }
    }
}

// ---- tools and their input schemas ------------------------------------------------------

const DELEGATE_TASK: &str = "delegate_task";
const DELEGATE_COORDINATE: &str = "delegate_coordinate";
const SUBAGENT: &str = "subagent";

const TASK_FIELDS: &str = "assignment or taskFile (exactly one), and optionally profile, cwd, model, models, resultSchema, limits, spawn, coordination";

fn object(value: Value) -> Arc<JsonObject> {
    match value {
        Value::Object(map) => Arc::new(map),
        _ => Arc::new(Map::new()),
    }
}

/// The three tools. `delegate_task` and `subagent` take the contract's input shapes, which
/// Slate's policy parsers validate (every problem named by JSON path): their properties carry
/// descriptions and no types, so a host coerces nothing and the model reads Slate's own
/// refusal. `delegate_coordinate`'s properties are generated from the protocol's params types.
fn tools() -> Vec<Tool> {
    vec![
        Tool::new(
            DELEGATE_TASK,
            format!(
                "Delegate work to Slate subagents (pi workers). Give one task ({TASK_FIELDS}) or an ordered batch in tasks. Slate checks the whole call before anything starts. Foreground by default: the call waits and returns the ordered outcomes. With background: true it returns the accepted identities (UUID@generation) at once; read the outcome later with delegate_coordinate wait or status."
            ),
            object(delegate_task_schema()),
        ),
        Tool::new(
            DELEGATE_COORDINATE,
            "Control and talk to your Slate subagents by exact identity (UUID@generation): status, stop, park, resume, followup, revive, message, inbox, wait. A resume, followup or revive runs in the background; wait or status reads its outcome.",
            object(coordinate_schema()),
        ),
        Tool::new(
            SUBAGENT,
            "Run Slate subagents in the compatibility shape: launch one ({agent, task}) or a batch ({tasks}); async by default (returns exact ids at once). Or control them by exact id: {action: agents|list|status|stop|steer|resume}.",
            object(subagent_schema()),
        ),
    ]
}

fn delegate_task_schema() -> Value {
    json!({
        "type": "object",
        "properties": {
            "assignment": {"description": "The complete task for one subagent (non-blank text). It inherits nothing else: include what it needs to know."},
            "taskFile": {"description": "Instead of assignment: a task text file, relative to the task's cwd (no absolute paths, '..', hidden or node_modules components)."},
            "profile": {"description": "The subagent profile to run it with (e.g. scout, review, general, implementation)."},
            "cwd": {"description": "Optional: an existing directory to work in (default: the coordinator's directory)."},
            "model": {"description": "Optional: an exact model selection 'provider/id[:effort]' (or a logical model with a reason), if granted."},
            "reason": {"description": "With a logical model: why it fits (at most 200 characters)."},
            "models": {"description": "Optional: a model allowlist that narrows the grants."},
            "resultSchema": {"description": "Optional: a JSON Schema (supported subset) the subagent's submit_result value must match."},
            "limits": {"description": "Optional, narrowing only: {deadlineMs, requests, tools, depth, spawns} (positive integers)."},
            "spawn": {"description": "Optional, narrowing only: the profiles the subagent may spawn ([] for none)."},
            "coordination": {"description": "Optional, narrowing only: the delegate_coordinate actions it may use ([] for none)."},
            "tasks": {"description": format!("Instead of a single task: an ordered batch, an array of task objects, each with {TASK_FIELDS}.")},
            "background": {"description": "Optional: true to return the accepted identities at once instead of waiting for the outcomes."},
        },
    })
}

fn subagent_schema() -> Value {
    json!({
        "type": "object",
        "properties": {
            "agent": {"description": "Launch: general, scout, review, implementation (or worker, the same as implementation)."},
            "task": {"description": "Launch: the complete task text; the subagent inherits nothing else."},
            "cwd": {"description": "Optional: an existing directory to work in (for a batch: the default of its tasks)."},
            "model": {"description": "Optional: an exact model 'provider/id[:effort]' you are granted."},
            "limits": {"description": "Optional, narrowing only: {deadlineMs, requests, tools, depth, spawns}."},
            "tasks": {"description": "Batch: an ordered array of {agent, task, cwd?, model?, limits?}."},
            "async": {"description": "Optional, default true: return the accepted ids at once; false waits for the results."},
            "action": {"description": "Instead of a launch: agents (or list), status, stop, steer or resume."},
            "id": {"description": "status, stop, steer, resume: the exact 'UUID@generation' (never a prefix)."},
            "message": {"description": "steer, resume: the text."},
        },
    })
}

/// A property of [`coordinate_schema`]: its name, its distinct schemas, and the actions that
/// require it and that take it optionally.
type Taken<'a> = (String, Vec<Value>, Vec<&'a str>, Vec<&'a str>);

/// One object schema for every action: `action`, and the union of the properties of each
/// action's params type (generated by schemars from `control::methods`), each saying which
/// actions take it. MCP hosts (and model APIs) want one object at the top, not a `oneOf`.
fn coordinate_schema() -> Value {
    let mut generator = schemars::generate::SchemaSettings::draft2020_12()
        .with(|s| s.inline_subschemas = true)
        .into_generator();
    let per_action: [(&str, schemars::Schema); 9] = [
        ("status", generator.root_schema_for::<StatusParams>()),
        ("stop", generator.root_schema_for::<TargetParams>()),
        ("park", generator.root_schema_for::<TargetParams>()),
        (
            "resume",
            generator.root_schema_for::<methods::ResumeParams>(),
        ),
        (
            "followup",
            generator.root_schema_for::<methods::RenewParams>(),
        ),
        (
            "revive",
            generator.root_schema_for::<methods::RenewParams>(),
        ),
        (
            "message",
            generator.root_schema_for::<methods::MessageParams>(),
        ),
        ("inbox", generator.root_schema_for::<NoParams>()),
        ("wait", generator.root_schema_for::<methods::WaitParams>()),
    ];
    // Per property: its distinct schemas (a name two actions give different types, like
    // `text`: status's flag and message's string, becomes an `anyOf`), and the actions that
    // require it or take it optionally.
    let mut props: Vec<Taken<'_>> = Vec::new();
    for (action, schema) in &per_action {
        let value = schema.as_value();
        let required: Vec<&str> = value
            .get("required")
            .and_then(Value::as_array)
            .map(|r| r.iter().filter_map(Value::as_str).collect())
            .unwrap_or_default();
        let Some(Value::Object(own)) = value.get("properties") else {
            continue;
        };
        for (name, prop) in own {
            let prop = &non_null(prop.clone());
            let at = props
                .iter()
                .position(|(n, ..)| n == name)
                .unwrap_or_else(|| {
                    props.push((name.clone(), Vec::new(), Vec::new(), Vec::new()));
                    props.len() - 1
                });
            let entry = &mut props[at];
            if !entry.1.contains(prop) {
                entry.1.push(prop.clone());
            }
            if required.contains(&name.as_str()) {
                entry.2.push(*action);
            } else {
                entry.3.push(*action);
            }
        }
    }
    let mut properties = Map::new();
    for (name, mut schemas, required, optional) in props {
        let mut said = Vec::new();
        if !required.is_empty() {
            said.push(format!("required by {}", required.join(", ")));
        }
        if !optional.is_empty() {
            said.push(format!("optional for {}", optional.join(", ")));
        }
        let said = said.join("; ");
        let prop = if schemas.len() == 1 {
            let mut prop = schemas.remove(0);
            if let Value::Object(prop) = &mut prop {
                let own = prop
                    .get("description")
                    .and_then(Value::as_str)
                    .map(|d| format!(" {d}"))
                    .unwrap_or_default();
                prop.insert(
                    "description".to_owned(),
                    Value::String(format!("{said}.{own}")),
                );
            }
            prop
        } else {
            json!({"description": format!("{said}."), "anyOf": schemas})
        };
        properties.insert(name, prop);
    }
    let mut all = Map::new();
    all.insert(
        "action".to_owned(),
        json!({
            "description": "status (the fleet, or one exact generation), stop, park, resume (a paused generation), followup (an idle one: a new generation), revive (a parked one), message, inbox (read and empty the root inbox) or wait.",
            "enum": ACTIONS,
        }),
    );
    all.extend(properties);
    json!({
        "type": "object",
        "properties": all,
        "required": ["action"],
    })
}

/// An optional member's schema without its `null`: leaving the member out is how a tool
/// call says "none" (and a required one never takes `null`).
fn non_null(mut prop: Value) -> Value {
    let is_null = |v: &Value| v.get("type").and_then(Value::as_str) == Some("null");
    if let Some(Value::Array(options)) = prop.get("anyOf")
        && options.len() == 2
        && let Some(other) = options.iter().find(|v| !is_null(v))
        && options.iter().any(is_null)
    {
        return other.clone();
    }
    if let Some(Value::Array(types)) = prop.get("type")
        && types.len() == 2
        && types.iter().any(|t| t == "null")
        && let Some(other) = types.iter().find(|t| *t != "null").cloned()
        && let Value::Object(map) = &mut prop
    {
        map.insert("type".to_owned(), other);
    }
    prop
}

// ---- the transport's writer -------------------------------------------------------------

/// An `AsyncWrite` in front of stdout that writes every DEL, C1 and bidi control
/// ([`crate::json::needs_escape`] above U+007E) as `\uXXXX`. The stream is JSON-RPC, whose
/// structure is ASCII, so such a character only ever stands inside a JSON string, where the
/// escape decodes to the same text (C0 controls, the newline that ends each message among
/// them, are left to JSON, which escapes them inside strings itself).
struct SafeJsonWriter<W> {
    inner: W,
    /// Escaped bytes not yet written to `inner`.
    pending: Vec<u8>,
    /// The start of a UTF-8 sequence split across writes.
    partial: Vec<u8>,
}

impl<W> SafeJsonWriter<W> {
    fn new(inner: W) -> Self {
        Self {
            inner,
            pending: Vec::new(),
            partial: Vec::new(),
        }
    }

    /// Append `bytes` to `pending`, escaped.
    fn escape(&mut self, bytes: &[u8]) {
        self.partial.extend_from_slice(bytes);
        let data = std::mem::take(&mut self.partial);
        let mut rest: &[u8] = &data;
        loop {
            match std::str::from_utf8(rest) {
                Ok(text) => {
                    push_escaped(&mut self.pending, text);
                    break;
                }
                Err(e) => {
                    let (valid, after) = rest.split_at(e.valid_up_to());
                    push_escaped(
                        &mut self.pending,
                        std::str::from_utf8(valid).unwrap_or_default(),
                    );
                    // Invalid bytes (serde_json never writes them) are passed through; an
                    // incomplete sequence at the end is kept for the next write.
                    let Some(n) = e.error_len() else {
                        self.partial = after.to_vec();
                        break;
                    };
                    self.pending.extend_from_slice(&after[..n]);
                    rest = &after[n..];
                }
            }
        }
    }
}

fn push_escaped(out: &mut Vec<u8>, text: &str) {
    for c in text.chars() {
        if c > '\u{7e}' && crate::json::needs_escape(c) {
            // Writing to a Vec cannot fail.
            let _ = crate::json::write_u_escape(out, c);
        } else {
            let mut buf = [0_u8; 4];
            out.extend_from_slice(c.encode_utf8(&mut buf).as_bytes());
        }
    }
}

impl<W: AsyncWrite + Unpin> SafeJsonWriter<W> {
    /// Write out `pending`; `Ready(Ok)` once it is empty.
    fn poll_pending(&mut self, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        while !self.pending.is_empty() {
            match Pin::new(&mut self.inner).poll_write(cx, &self.pending) {
                Poll::Ready(Ok(0)) => {
                    return Poll::Ready(Err(std::io::ErrorKind::WriteZero.into()));
                }
                Poll::Ready(Ok(n)) => {
                    self.pending.drain(..n);
                }
                Poll::Ready(Err(e)) => return Poll::Ready(Err(e)),
                Poll::Pending => return Poll::Pending,
            }
        }
        Poll::Ready(Ok(()))
    }
}

impl<W: AsyncWrite + Unpin> AsyncWrite for SafeJsonWriter<W> {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<std::io::Result<usize>> {
        let this = self.get_mut();
        // Earlier bytes first; then all of `buf` is taken (escaped into `pending`).
        match this.poll_pending(cx) {
            Poll::Ready(Ok(())) => {}
            Poll::Ready(Err(e)) => return Poll::Ready(Err(e)),
            Poll::Pending => return Poll::Pending,
        }
        this.escape(buf);
        // Start writing now; what is left goes out with the next write or flush.
        match this.poll_pending(cx) {
            Poll::Ready(Err(e)) => Poll::Ready(Err(e)),
            _ => Poll::Ready(Ok(buf.len())),
        }
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        let this = self.get_mut();
        match this.poll_pending(cx) {
            Poll::Ready(Ok(())) => Pin::new(&mut this.inner).poll_flush(cx),
            other => other,
        }
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        let this = self.get_mut();
        match this.poll_pending(cx) {
            Poll::Ready(Ok(())) => Pin::new(&mut this.inner).poll_shutdown(cx),
            other => other,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::SafeJsonWriter;

    #[test]
    fn c1_and_bidi_controls_are_escaped_even_split_across_writes() {
        let message =
            serde_json::json!({"text": "a\u{9b}31mb\u{202e}c\u{7f}d é\n"}).to_string() + "\n";
        let mut writer = SafeJsonWriter::new(Vec::<u8>::new());
        for chunk in message.as_bytes().chunks(1) {
            writer.escape(chunk);
        }
        let out = String::from_utf8(writer.pending).unwrap_or_default();
        assert_eq!(out, "{\"text\":\"a\\u009b31mb\\u202ec\\u007fd é\\n\"}\n");
        let back: serde_json::Value = serde_json::from_str(out.trim_end()).unwrap_or_default();
        assert_eq!(back["text"], "a\u{9b}31mb\u{202e}c\u{7f}d é\n");
    }
}

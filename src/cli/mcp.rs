//! `slate mcp`: the Model Context Protocol on stdio, so that any agent host that speaks MCP
//! (pi, Claude Code, Codex) delegates to Slate (`docs/mcp.md`).
//!
//! The host's MCP session is a parent runtime: the server starts its own coordinator for the
//! current directory in this process, exactly as `slate serve` does (the same plan, socket,
//! event log and [`Service`]), so `slate hub`, `slate status` and the CLI see it like any
//! other; or, with `--parent`, it uses a running one and leaves it running. It is a transport
//! of the coordinator's tool layer (`src/tools`), like the pi extension: `tools/list` is the
//! root's `tools`, each `tools/call` one `callTool` on its own connection. No description,
//! parser or shape of a tool is here; this module only maps MCP onto that layer and back.
//!
//! Embedded rather than spawning `slate serve`: one process to start, supervise and signal;
//! the coordinator's lifetime is exactly the MCP session's (stdin end of file, SIGINT/SIGTERM,
//! the host's death via `PR_SET_PDEATHSIG`), with no second lifeline pipe or line parsing.
//!
//! * A call runs with `cancelOnClose`: the host's `notifications/cancelled` (or the end of
//!   the session) closes the call's connection, which is the caller's foreground
//!   cancellation: the window's unsettled members are cancelled and drain. A background
//!   answer names its window (`pending`); its connection stays open until the one
//!   `toolOutcome`, which the host gets as one `notifications/message` (logger `slate`,
//!   `{event: "slate-window-outcome", call, preview, outcome}`).
//! * While a call waits and the host gave a `progressToken`, `notifications/progress` every
//!   `--progress-ms`: each one restarts the host's request timeout (pi's default 60 s).
//! * Tool text is the layer's `text`, cleaned of terminal controls ([`SafeText`]);
//!   structured content is its `details`. Every byte this server writes goes through one
//!   writer ([`stdio`]) that escapes C1 and bidi controls (C0 controls are escaped by JSON
//!   itself), bounds the output a host leaves unread, and answers the lines rmcp cannot
//!   (not JSON: -32700; a `tools/call` whose `arguments` is not an object: -32602).
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

mod stdio;

use std::path::PathBuf;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, CustomRequest,
    CustomResult, Implementation, JsonObject, ListToolsResult, PaginatedRequestParams,
    ProgressNotificationParam, ServerCapabilities, ServerConfig, Tool,
};
use rmcp::service::{RequestContext, RoleServer};
use rmcp::{ErrorData as McpError, Peer, ServerHandler, ServiceExt as _};
use serde_json::{Map, Value, json};
use tokio::signal::unix::{SignalKind, signal};
use tokio_util::sync::CancellationToken;

use crate::cli::embedded::{EmbedArgs, Embedded, Plan, Served};
use crate::cli::{Error, ExitCode, Printer};
use crate::control::client::{CONNECT_TIMEOUT, Client, ClientError};
use crate::control::methods::{ClientInfo, NoParams, Notification, method};
use crate::control::protocol::ControlError;
use crate::control::{Metadata, Server};
use crate::text::SafeText;
use crate::tools::CallToolParams;
use crate::tools::call::UNKNOWN_TOOL;

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
        match start(&args.embed).await {
            Ok((socket, parent_id, owned)) => (socket, parent_id.to_string(), Some(owned)),
            // A host shows only "failed to connect" for a server that exits before
            // `initialize`: serve anyway, list the tools, and refuse each call with the fix.
            Err(e) => {
                let why = unavailable_reason(&e);
                printer.err_line(&format!(
                    "slate mcp: no coordinator: {why}; serving so the host can say so (every tool call is refused with this)"
                ));
                let slate = Slate::new(PathBuf::new(), args.progress_every, Some(why));
                return serve_unavailable(slate, &mut sigint, &mut sigterm, printer).await;
            }
        }
    };
    // stdout is the MCP transport: everything for people goes to stderr.
    printer.err_line(&format!(
        "slate mcp: parent {parent_id}, socket {}",
        socket.display()
    ));
    let slate = Slate::new(socket, args.progress_every, None);
    let session = serve(slate, &mut sigint, &mut sigterm).await;
    // Every call still waiting was cancelled with the session (its token is a child of the
    // session's): its connection closes and its foreground window is cancelled.
    let Some(owned) = owned else {
        printer.err_line(&format!(
            "slate mcp: {}; the coordinator {parent_id} goes on",
            session.why
        ));
        return Ok(session.finish(ExitCode::Ok).await);
    };
    printer.err_line(&format!(
        "slate mcp: {}; stopping every worker and draining…",
        session.why
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
    Ok(session.finish(ExitCode::Ok).await)
}

/// Why no coordinator could start, as one text with its problems (each naming its fix).
fn unavailable_reason(error: &Error) -> String {
    let mut text = error.to_string();
    if let Error::Problems { problems, .. } = error {
        for p in problems {
            text.push_str("; ");
            text.push_str(&p.to_string());
        }
    }
    SafeText::line(&text).into_string()
}

/// The MCP session of a `slate mcp` whose coordinator could not start, until the host ends it;
/// exit 2 (the configuration or environment problem stays).
async fn serve_unavailable(
    slate: Slate,
    sigint: &mut tokio::signal::unix::Signal,
    sigterm: &mut tokio::signal::unix::Signal,
    printer: &Printer,
) -> Result<ExitCode, Error> {
    let session = serve(slate, sigint, sigterm).await;
    printer.err_line(&format!("slate mcp: {}", session.why));
    // The configuration problem stays: 2 however the session ended.
    let _ = session.finish(ExitCode::Usage).await;
    Ok(ExitCode::Usage)
}

/// How long the last answers may take to reach a host that ended the session.
const FINAL_FLUSH: Duration = Duration::from_secs(10);

/// An MCP session that ended, and the writer of its last output.
struct Ended {
    why: String,
    /// The host left more output unread than [`stdio::MAX_UNREAD_OUTPUT`].
    not_reading: bool,
    output: Arc<stdio::Output>,
    writer: tokio::task::JoinHandle<()>,
}

impl Ended {
    /// Writes what is left (for at most [`FINAL_FLUSH`]; nothing to a host that stopped
    /// reading), and gives the exit code: `otherwise`, or 1 when the host stopped reading
    /// (docs/mcp.md).
    async fn finish(self, otherwise: ExitCode) -> ExitCode {
        if self.not_reading {
            return ExitCode::Refused;
        }
        self.output.close();
        let _ = tokio::time::timeout(FINAL_FLUSH, self.writer).await;
        otherwise
    }
}

/// The MCP session on stdio ([`stdio`] says what sits between rmcp and the pipes), until
/// the host ends it, a signal comes, or the host leaves too much output unread.
async fn serve(
    slate: Slate,
    sigint: &mut tokio::signal::unix::Signal,
    sigterm: &mut tokio::signal::unix::Signal,
) -> Ended {
    let ct = CancellationToken::new();
    let output = stdio::Output::new(stdio::MAX_UNREAD_OUTPUT);
    // Non-blocking pipes where the host gave pipes (as every host does): a read of stdin
    // that never ends would otherwise hold up the runtime's exit after a signal.
    let (stdin, stdout) = rmcp::transport::io::stdio_pipes();
    let writer = tokio::spawn(stdio::write_out(Arc::clone(&output), stdout));
    let transport = (
        stdio::Requests::new(stdin, Arc::clone(&output)),
        stdio::Answers::new(Arc::clone(&output)),
    );
    let overflow = output.overflowed();
    let not_reading = || {
        format!(
            "the MCP host left more than {} bytes of output unread (it does not read stdout)",
            stdio::MAX_UNREAD_OUTPUT
        )
    };
    let why = tokio::select! {
        running = slate.serve_with_ct(transport, ct.clone()) => match running {
            Ok(running) => {
                let session_ct = running.cancellation_token();
                tokio::select! {
                    _ = running.waiting() => "stdin closed (the MCP host ended the session)".to_owned(),
                    () = overflow.cancelled() => { session_ct.cancel(); not_reading() }
                    _ = sigint.recv() => { session_ct.cancel(); "SIGINT received".to_owned() }
                    _ = sigterm.recv() => { session_ct.cancel(); "SIGTERM received".to_owned() }
                }
            }
            Err(_) => "the MCP session ended before it was initialized".to_owned(),
        },
        () = overflow.cancelled() => { ct.cancel(); not_reading() }
        _ = sigint.recv() => { ct.cancel(); "SIGINT received".to_owned() }
        _ = sigterm.recv() => { ct.cancel(); "SIGTERM received".to_owned() }
    };
    Ended {
        why,
        not_reading: overflow.is_cancelled(),
        output,
        writer,
    }
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

#[derive(Clone)]
struct Slate {
    inner: Arc<Inner>,
}

struct Inner {
    socket: PathBuf,
    progress_every: Duration,
    /// Who the host is, for `hello.client`.
    host: Mutex<Option<String>>,
    /// Why there is no coordinator (it could not start): tools are listed from the layer's
    /// definitions and every call is refused with this.
    unavailable: Option<String>,
    /// The least severity the host wants messages of (`logging/setLevel`; [`severity`]), until
    /// it says otherwise: everything.
    level: std::sync::atomic::AtomicU8,
}

/// Why a tool call failed before the tool layer answered (its own refusals are answers).
enum Failure {
    /// The coordinator's error (or transport error), in its words.
    Control(ControlError),
    /// The coordinator could not be reached or answered badly.
    Client(ClientError),
    /// The host cancelled the call.
    Cancelled(String),
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
            Self::Cancelled(text) => (
                text.clone(),
                json!({"error": {"code": "cancelled", "message": text}}),
            ),
        };
        let mut result = CallToolResult::error(vec![ContentBlock::text(
            SafeText::lines(&text).into_string(),
        )]);
        result.structured_content = Some(structured);
        result
    }
}

impl Slate {
    fn new(socket: PathBuf, progress_every: Duration, unavailable: Option<String>) -> Self {
        Self {
            inner: Arc::new(Inner {
                socket,
                progress_every,
                host: Mutex::new(None),
                unavailable,
                level: std::sync::atomic::AtomicU8::new(0),
            }),
        }
    }

    /// One connection, saying `slate mcp` and its host in `hello.client`.
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

    /// Remember the host's name.
    fn note_host(&self, context: &RequestContext<RoleServer>) {
        let mut host = self
            .inner
            .host
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        if host.is_none()
            && let Some(info) = context.peer.peer_info()
        {
            let name = format!("{} {}", info.client_info.name, info.client_info.version);
            *host = Some(SafeText::line(&name).into_string());
        }
    }

    /// One `callTool` on its own connection: cancelled with the host's request (the future,
    /// and with it the connection, is dropped: a foreground window is then cancelled),
    /// reporting progress while it waits. A background call's connection is kept until its
    /// `toolOutcome`, which goes to the host as one `notifications/message`.
    async fn call(
        &self,
        context: &RequestContext<RoleServer>,
        tool: String,
        input: JsonObject,
    ) -> Result<CallToolResult, Failure> {
        let client = self.connect().await?;
        let mut notes = client.notifications()?;
        let params = CallToolParams {
            tool: tool.clone(),
            input: Value::Object(input),
            call_id: None,
            cancel_on_close: true,
        };
        let token = context.meta.get_progress_token();
        let started = Instant::now();
        let mut ticks = tokio::time::interval_at(
            tokio::time::Instant::now() + self.inner.progress_every,
            self.inner.progress_every,
        );
        let mut sent = 0_u32;
        let answer = {
            let work = client.request::<method::CallTool>(&params);
            tokio::pin!(work);
            loop {
                tokio::select! {
                    answer = &mut work => break answer?,
                    () = context.ct.cancelled() => {
                        return Err(Failure::Cancelled(format!("{tool}: cancelled by the host")));
                    }
                    // Live rows are for renderers; an MCP host gets the progress ticks.
                    _ = notes.next() => {}
                    _ = ticks.tick(), if token.is_some() => {
                        sent += 1;
                        if let Some(token) = token.clone() {
                            let elapsed = started.elapsed().as_secs();
                            let _ = context
                                .peer
                                .notify_progress(
                                    ProgressNotificationParam::new(token, f64::from(sent))
                                        .with_message(format!("{tool}: waiting ({elapsed} s)")),
                                )
                                .await;
                        }
                    }
                }
            }
        };
        if let Some(call) = answer.pending {
            let peer = context.peer.clone();
            let inner = Arc::clone(&self.inner);
            tokio::spawn(async move {
                while let Some(note) = notes.next().await {
                    if let Notification::ToolOutcome(outcome) = note
                        && outcome.call == call
                    {
                        let data = json!({
                            "event": "slate-window-outcome",
                            "call": call,
                            "preview": outcome.text,
                            "outcome": outcome.details,
                        });
                        // The host set a level above `notice`: it asked for no outcome
                        // messages (docs/mcp.md says to read them with `wait`/`inbox` then).
                        if inner.level.load(std::sync::atomic::Ordering::Relaxed) <= NOTICE {
                            let _ = log_notice(&peer, data).await;
                        }
                        break;
                    }
                }
                drop(client);
            });
        }
        let blocks = vec![ContentBlock::text(answer.text)];
        let mut result = if answer.is_error {
            CallToolResult::error(blocks)
        } else {
            CallToolResult::success(blocks)
        };
        // MCP structured content is an object; a lone non-object is wrapped.
        result.structured_content = Some(match answer.details {
            Value::Object(_) => answer.details,
            other => json!({"result": other}),
        });
        Ok(result)
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

/// [`log_notice`]'s severity on [`severity`]'s scale.
const NOTICE: u8 = 2;

/// RFC 5424's order, as MCP's `LoggingLevel` lists it: debug 0 … emergency 7.
#[allow(deprecated, reason = "see log_notice")]
fn severity(level: rmcp::model::LoggingLevel) -> u8 {
    use rmcp::model::LoggingLevel as L;
    match level {
        L::Debug => 0,
        L::Info => 1,
        L::Notice => NOTICE,
        L::Warning => 3,
        L::Error => 4,
        L::Critical => 5,
        L::Alert => 6,
        L::Emergency => 7,
    }
}

/// The logging capability, for [`log_notice`].
#[allow(deprecated, reason = "see log_notice")]
fn capabilities() -> ServerCapabilities {
    ServerCapabilities::builder()
        .enable_tools()
        .enable_logging()
        .build()
}

impl ServerHandler for Slate {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(capabilities())
            .with_server_info(Implementation::new("slate", env!("CARGO_PKG_VERSION")))
            .with_instructions(
                "Slate delegates work to pi subagents; its tools say how (tools/list). Slate checks the whole call before anything starts.",
            )
    }

    /// `logging/setLevel`: from now on only messages at `level` or above (Slate sends only
    /// `notice`s: a background call's outcome).
    #[allow(deprecated, reason = "see log_notice")]
    async fn set_level(
        &self,
        request: rmcp::model::SetLevelRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<(), McpError> {
        self.inner.level.store(
            severity(request.level),
            std::sync::atomic::Ordering::Relaxed,
        );
        Ok(())
    }

    /// The root's tools, as the coordinator's tool layer lists them.
    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, McpError> {
        self.note_host(&context);
        if self.inner.unavailable.is_some() {
            return Ok(ListToolsResult::with_all_items(
                crate::tools::tools_for(crate::tools::Caller::Root)
                    .iter()
                    .map(|spec| {
                        Tool::new(
                            spec.name.clone(),
                            spec.description.clone(),
                            object(spec.parameters.clone()),
                        )
                    })
                    .collect(),
            ));
        }
        let unavailable = |e: ClientError| McpError::internal_error(e.to_string(), None);
        let client = self.connect().await.map_err(unavailable)?;
        let listed = client
            .request::<method::Tools>(&NoParams {})
            .await
            .map_err(unavailable)?;
        Ok(ListToolsResult::with_all_items(
            listed
                .tools
                .into_iter()
                .map(|spec| Tool::new(spec.name, spec.description, object(spec.parameters)))
                .collect(),
        ))
    }

    /// rmcp's catch-all: a method it does not know, or a known one whose params it could
    /// not decode.
    async fn on_custom_request(
        &self,
        request: CustomRequest,
        _context: RequestContext<RoleServer>,
    ) -> Result<CustomResult, McpError> {
        Err(invalid_params(&request))
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, McpError> {
        self.note_host(&context);
        if let Some(why) = &self.inner.unavailable {
            return Ok(CallToolResult::error(vec![ContentBlock::text(format!(
                "Slate cannot run {}: it has no coordinator: {why}. `slate mcp` needs pi 1.5.2 or newer on PATH (or SLATE_PI) and a model for the root (--model, or defaultProvider and defaultModel in pi's settings.json); fix that and restart the server (docs/mcp.md).",
                SafeText::line(&request.name)
            ))])
            .into());
        }
        let input = request.arguments.unwrap_or_default();
        let name = request.name.to_string();
        match self.call(&context, name, input).await {
            Ok(result) => Ok(result.into()),
            // Not one of Slate's tools: the host's error, naming the tools there are.
            Err(Failure::Control(e)) if e.code == UNKNOWN_TOOL => Err(McpError::invalid_params(
                SafeText::line(&e.message).into_string(),
                None,
            )),
            Err(failure) => Ok(failure.into_result().into()),
        }
    }
}

/// A request for a method this server answers whose params rmcp could not decode: the host's
/// -32602 naming the field (rmcp would answer -32601, method not found). Anything else is
/// not a method here.
#[allow(deprecated, reason = "logging/setLevel: see log_notice")]
fn invalid_params(request: &CustomRequest) -> McpError {
    fn decode<T: serde::de::DeserializeOwned>(method: &str, params: &Value) -> String {
        match serde_path_to_error::deserialize::<_, T>(params.clone()) {
            Ok(_) => format!("{method}: the params do not fit"),
            Err(e) if e.path().iter().next().is_none() => {
                format!("{method}: params: {}", e.into_inner())
            }
            Err(e) => {
                let path = e.path().to_string();
                format!("{method}: params.{path}: {}", e.into_inner())
            }
        }
    }
    let params = request.params.clone().unwrap_or(Value::Null);
    let message = match request.method.as_str() {
        "tools/call" => match params.get("arguments") {
            Some(Value::Object(_)) | None => decode::<CallToolRequestParams>("tools/call", &params),
            Some(other) => stdio::arguments_not_an_object(crate::json::kind_of(other)),
        },
        "tools/list" => decode::<PaginatedRequestParams>("tools/list", &params),
        "logging/setLevel" => {
            decode::<rmcp::model::SetLevelRequestParams>("logging/setLevel", &params)
        }
        // rmcp's own answer (its default handler's).
        method => {
            return McpError::new(
                rmcp::model::ErrorCode::METHOD_NOT_FOUND,
                SafeText::line(method).into_string(),
                None,
            );
        }
    };
    McpError::invalid_params(SafeText::line(&message).into_string(), None)
}

fn object(value: Value) -> Arc<JsonObject> {
    match value {
        Value::Object(map) => Arc::new(map),
        _ => Arc::new(Map::new()),
    }
}

//! The methods of the control socket: the root's controls over one runtime, with requests
//! resolved by policy first. One vocabulary: the same core commands and refusals as every
//! other surface.

use std::path::PathBuf;
use std::sync::Arc;

use serde_json::{Value, json};
use tokio::sync::broadcast;

use crate::config::live::{LivePolicy, PolicyUnavailable};
use crate::config::{Loaded, ProfilesView};
use crate::control::protocol::{ControlError, Payload};
use crate::control::server::{BoxFuture, Handler, Session};
use crate::control::session_routing::SessionRouting;
use crate::control::summary::{FleetSummary, SummaryRow};
use crate::core::{
    ChildRef, Input, MessageId, MessageMode, Party, Refusal, Renewal, Reply, RequestId,
};
use crate::policy::Problems;
use crate::policy::capabilities::{OfferedTool, effective};
use crate::policy::model::ModelContext;
use crate::policy::request::{DelegateCall, SubagentRequest, parse_delegate_task, parse_subagent};
use crate::policy::resolve::{ResolveContext, resolve_call};
use crate::policy::schema::validate_schema;
use crate::runtime::{RuntimeEvent, RuntimeHandle};
use crate::store::fs::RealFs;

/// Every method the service answers (besides the server's own `hello` and `subscribe`).
pub const METHODS: [&str; 17] = [
    "status",
    "agents",
    "delegate",
    "stop",
    "stopMany",
    "steer",
    "message",
    "inbox",
    "wait",
    "park",
    "resume",
    "followup",
    "revive",
    "transcript",
    "profiles",
    "shutdown",
    "policy",
];

pub struct Service {
    rt: RuntimeHandle,
    /// The delegation policy, read at each invocation (`Loaded` converts to a fixed one).
    policy: Arc<LivePolicy>,
    models: ModelContext,
    offered: Vec<OfferedTool>,
    events: broadcast::Sender<Value>,
    routing: Option<Arc<SessionRouting>>,
}

impl Service {
    /// A service for `rt`; forwards runtime events to subscribers as JSON.
    pub fn new(
        rt: RuntimeHandle,
        policy: impl Into<Arc<LivePolicy>>,
        models: ModelContext,
        offered: Vec<OfferedTool>,
    ) -> Self {
        let policy = policy.into();
        let (events, _) = broadcast::channel(4096);
        let mut source = rt.subscribe();
        let sink = events.clone();
        tokio::spawn(async move {
            loop {
                let event = source.recv().await;
                // Nobody subscribed: no JSON to build (but the end is still announced).
                if sink.receiver_count() == 0 && matches!(event, Ok(RuntimeEvent::Registry(_))) {
                    continue;
                }
                let value = match event {
                    Ok(RuntimeEvent::Registry(e)) => json!({"kind": "registry", "event": e}),
                    Ok(RuntimeEvent::Outcome(o)) => json!({"kind": "outcome", "outcome": o}),
                    Ok(RuntimeEvent::ShutdownComplete) => {
                        let _ = sink.send(json!({"kind": "shutdownComplete"}));
                        break;
                    }
                    Err(broadcast::error::RecvError::Lagged(missed)) => {
                        json!({"kind": "lagged", "missed": missed})
                    }
                    Err(broadcast::error::RecvError::Closed) => break,
                };
                let _ = sink.send(value);
            }
        });
        Self {
            rt,
            policy,
            models,
            offered,
            events,
            routing: None,
        }
    }

    /// Resolve logical-model tasks against `routing` and publish remembered providers from
    /// this runtime's finished generations.
    #[must_use]
    pub fn with_routing(mut self, routing: Arc<SessionRouting>) -> Self {
        routing.watch(&self.rt);
        self.routing = Some(routing);
        self
    }

    async fn core(
        &self,
        build: impl FnOnce(RequestId) -> Input + Send + 'static,
    ) -> Result<Value, ControlError> {
        let reply: Result<Reply, Refusal> = self.rt.call(build).await?;
        to_json(&reply?)
    }

    #[allow(clippy::too_many_lines, reason = "one arm per method")]
    async fn dispatch(&self, method: &str, params: Value) -> Result<Value, ControlError> {
        let p = Params(&params);
        match method {
            "agents" => to_json(&self.rt.query(crate::core::Coordinator::agents).await?),
            "delegate" => self.delegate(&params).await,
            "stop" => {
                let target = p.child_ref("target")?;
                self.core(move |request| Input::Stop {
                    request,
                    actor: Party::Root,
                    target,
                })
                .await
            }
            "stopMany" => {
                let targets = p.child_refs("targets")?;
                self.core(move |request| Input::StopMany {
                    request,
                    actor: Party::Root,
                    targets,
                })
                .await
            }
            "steer" => {
                let (target, text) = (p.child_ref("target")?, p.string("text")?);
                self.core(move |request| Input::Steer {
                    request,
                    target,
                    text,
                })
                .await
            }
            "message" => {
                let (target, text) = (p.optional_ref("target")?, p.string("text")?);
                let mode = p.mode()?;
                self.core(move |request| Input::Message {
                    request,
                    actor: Party::Root,
                    target,
                    text,
                    mode,
                })
                .await
            }
            "inbox" => {
                self.core(|request| Input::Inbox {
                    request,
                    actor: Party::Root,
                })
                .await
            }
            "wait" => {
                let target = p.optional_ref("target")?;
                let message_id = p.message_id()?;
                let timeout_ms = p.u64("timeoutMs")?;
                self.core(move |request| Input::Wait {
                    request,
                    actor: Party::Root,
                    target,
                    message_id,
                    timeout_ms,
                })
                .await
            }
            "park" => {
                let target = p.child_ref("target")?;
                self.core(move |request| Input::Park {
                    request,
                    actor: Party::Root,
                    target,
                })
                .await
            }
            "resume" => {
                let (target, assignment) = (p.child_ref("target")?, p.string("assignment")?);
                // A resume is new work: it fails closed on an invalid policy, and the
                // runtime bounds its window by the current limits.
                self.policy.current()?;
                self.core(move |request| Input::Resume {
                    request,
                    actor: Party::Root,
                    target,
                    assignment,
                })
                .await
            }
            "followup" | "revive" => self.renew(method, &p).await,
            "transcript" => self.transcript(p.child_ref("target")?).await,
            // What admission will use: the files as they are now, or their problems.
            "profiles" => to_json(&ProfilesView::new(Loaded::clone(&*self.policy.current()?))),
            "policy" => to_json(&self.policy.current()?.profiles.scheduling),
            "shutdown" => {
                let rt = self.rt.clone();
                tokio::spawn(async move {
                    let _ = rt.shutdown().await;
                });
                Ok(json!({"shuttingDown": true}))
            }
            other => Err(ControlError::unknown_method(other)),
        }
    }

    /// With a target: the pinned snapshot, its generations and presence. Without: the fleet;
    /// `summary` rows carry only what the fleet table shows (about a tenth of a snapshot).
    /// `{target?, summary?}`: one generation's status, the fleet, or the fleet's table rows.
    async fn status(&self, params: &Value) -> Result<Payload, ControlError> {
        let p = Params(params);
        if let Some(r) = p.optional_ref("target")? {
            let view = self.rt.query(move |c| c.status(r)).await?;
            return to_json(&view?).map(Payload::Value);
        }
        if p.0.get("summary").and_then(Value::as_bool) == Some(true) {
            // Only the table's fields leave the actor; the answer is written once, as text.
            let (parent_id, children, stats, policy) = self
                .rt
                .query(|c| {
                    let rows: Vec<SummaryRow<'static>> = c
                        .iter_current()
                        .map(|(s, presence)| SummaryRow {
                            presence: Some(presence),
                            ..SummaryRow::of(s).into_owned()
                        })
                        .collect();
                    (c.root_id(), rows, stats_json(c), *c.policy())
                })
                .await?;
            let fleet = FleetSummary {
                parent_id,
                children,
                stats,
                policy: to_json(&policy)?,
            };
            return serde_json::value::to_raw_value(&fleet)
                .map(Payload::Raw)
                .map_err(|e| ControlError::internal(&e.to_string()));
        }
        // Inside the actor only the detached copies are taken; JSON is built out here so a
        // large status never holds up worker events.
        let (parent_id, children, agents, stats, policy) = self
            .rt
            .query(|c| {
                (
                    c.root_id(),
                    c.list(),
                    c.agents(),
                    stats_json(c),
                    *c.policy(),
                )
            })
            .await?;
        Ok(Payload::Value(json!({
            "parentId": parent_id,
            "children": children,
            "agents": agents,
            "stats": stats,
            "policy": policy,
        })))
    }

    fn resolve(&self, call: &DelegateCall) -> Result<Vec<crate::core::TaskSpec>, ControlError> {
        let loaded = self.policy.current()?;
        let resolve = |routing: Option<crate::policy::logical::LogicalContext<'_>>| {
            let ctx = ResolveContext {
                profiles: &loaded.profiles,
                root_cwd: &loaded.cwd,
                delegator: None,
                offered: &self.offered,
                models: &self.models,
                fs: &RealFs,
                routing,
            };
            resolve_call(call, &ctx)
        };
        match &self.routing {
            Some(routing) => routing.with_context(call.tasks.len(), resolve),
            None => resolve(None),
        }
        .map_err(|problems| ControlError::from(Problems(problems)))
    }

    /// `{request, background?}`: native `delegate_task` or compatibility `subagent` launch.
    async fn delegate(&self, params: &Value) -> Result<Value, ControlError> {
        let request = params
            .get("request")
            .ok_or_else(|| ControlError::invalid_request("params.request: required"))?;
        let mut call = match parse_delegate_task(request) {
            Ok(call) => call,
            Err(native) => match parse_subagent(request) {
                Ok(SubagentRequest::Launch(call)) => call,
                _ => return Err(ControlError::from(Problems(native))),
            },
        };
        if let Some(background) = params.get("background").and_then(Value::as_bool) {
            call.background = background;
        }
        let tasks = self.resolve(&call)?;
        if call.background {
            return self
                .core(move |request| Input::Admit {
                    request,
                    actor: Party::Root,
                    tasks,
                    background: true,
                })
                .await;
        }
        let fg = self.rt.delegate(Party::Root, tasks).await??;
        let admitted = to_json(&fg.admitted)?;
        let outcome = fg
            .outcome
            .await
            .map_err(|_| ControlError::shutting_down())?;
        Ok(json!({"admitted": admitted, "outcome": outcome}))
    }

    /// Followup or revive: current profile grants for the target's role, intersected by the
    /// core with the previous generation's.
    async fn renew(&self, method: &str, p: &Params<'_>) -> Result<Value, ControlError> {
        let target = p.child_ref("target")?;
        let assignment = p.string("assignment")?;
        let schema = match p.0.get("resultSchema") {
            Some(schema) => Some(
                validate_schema(schema, "$.resultSchema")
                    .map_err(|problems| ControlError::from(Problems(problems)))?
                    .into_value(),
            ),
            None => None,
        };
        let snapshot = self
            .rt
            .snapshot(target)
            .await?
            .ok_or(Refusal::UnknownIdentity(target))?;
        let loaded = self.policy.current()?;
        let profile = loaded.profiles.profile(snapshot.profile);
        let in_root = std::path::Path::new(&snapshot.cwd) == loaded.cwd;
        let caps = effective(
            snapshot.profile,
            &profile.tools,
            &profile.leaf_tools,
            &self.offered,
            in_root,
        );
        let renewal = Renewal {
            assignment,
            tools: caps.tools,
            leaf_tools: caps.leaf_tools,
            skills: profile.skills.clone(),
            spawn: profile.spawn.clone(),
            coordination: profile.coordination.clone(),
            limits: crate::core::LimitOverrides::default(),
            result_schema: schema,
        };
        if method == "followup" {
            self.core(move |request| Input::Followup {
                request,
                actor: Party::Root,
                target,
                renewal,
            })
            .await
        } else {
            self.core(move |request| Input::Revive {
                request,
                actor: Party::Root,
                target,
                renewal,
            })
            .await
        }
    }

    /// The read-only messages of exactly one generation, from its pi session file.
    async fn transcript(&self, target: ChildRef) -> Result<Value, ControlError> {
        let snapshot = self
            .rt
            .snapshot(target)
            .await?
            .ok_or(Refusal::UnknownIdentity(target))?;
        let Some(path) = snapshot.transcript else {
            return Ok(json!({"target": target.to_string(), "messages": []}));
        };
        let messages = tokio::task::spawn_blocking(move || read_transcript(&PathBuf::from(path)))
            .await
            .map_err(|e| ControlError::internal(&e.to_string()))??;
        Ok(json!({"target": target.to_string(), "messages": messages}))
    }
}

/// The coordinator's counters, as `status` reports them.
fn stats_json(c: &crate::core::Coordinator) -> Value {
    let stats = c.stats();
    json!({
        "activePermits": stats.active_permits,
        "queued": stats.queued,
        "writer": stats.writer.map(|w| w.to_string()),
        "admittedMessages": stats.admitted_messages,
        "pendingWaiters": stats.pending_waiters,
        "liveWorkers": stats.live_workers,
        "openWindows": stats.open_windows,
        "rootInbox": c.root_inbox_len(),
    })
}

/// pi session entries of type `message`, in order; provider payloads stay in the file.
fn read_transcript(path: &std::path::Path) -> Result<Vec<Value>, ControlError> {
    let text = match std::fs::read_to_string(path) {
        Ok(text) => text,
        // Created lazily by pi: absent before the first persisted message.
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => return Err(ControlError::internal(&format!("{}: {e}", path.display()))),
    };
    Ok(text
        .lines()
        .filter_map(|line| serde_json::from_str::<Value>(line).ok())
        .filter(|entry| entry.get("type").and_then(Value::as_str) == Some("message"))
        .filter_map(|entry| entry.get("message").cloned())
        .collect())
}

impl Handler for Service {
    fn handle<'a>(
        &'a self,
        method: &'a str,
        params: Value,
        _session: &'a Session,
    ) -> BoxFuture<'a, Result<Payload, ControlError>> {
        Box::pin(async move {
            if method == "status" {
                return self.status(&params).await;
            }
            self.dispatch(method, params).await.map(Payload::Value)
        })
    }

    fn subscribe(&self) -> broadcast::Receiver<Value> {
        self.events.subscribe()
    }
}

/// An invalid policy file refuses new work as `invalid-request`, every problem (file, JSON
/// path, rule) in the message and as `data`.
impl From<PolicyUnavailable> for ControlError {
    fn from(e: PolicyUnavailable) -> Self {
        let data = serde_json::to_value(&e.problems).unwrap_or(Value::Null);
        ControlError::invalid_request(&e.to_string()).with_data(data)
    }
}

fn to_json<T: serde::Serialize>(value: &T) -> Result<Value, ControlError> {
    serde_json::to_value(value).map_err(|e| ControlError::internal(&e.to_string()))
}

/// Typed access to request parameters, each failure naming the field.
struct Params<'a>(&'a Value);

impl Params<'_> {
    fn field(&self, name: &str) -> Option<&Value> {
        self.0.get(name).filter(|v| !v.is_null())
    }

    fn string(&self, name: &str) -> Result<String, ControlError> {
        self.field(name)
            .and_then(Value::as_str)
            .map(str::to_owned)
            .ok_or_else(|| {
                ControlError::invalid_request(&format!("params.{name}: a string is required"))
            })
    }

    fn u64(&self, name: &str) -> Result<u64, ControlError> {
        self.field(name).and_then(Value::as_u64).ok_or_else(|| {
            ControlError::invalid_request(&format!(
                "params.{name}: a non-negative integer is required"
            ))
        })
    }

    fn parse_ref(name: &str, text: &str) -> Result<ChildRef, ControlError> {
        text.parse()
            .map_err(|e| ControlError::invalid_request(&format!("params.{name}: {e}")))
    }

    fn child_ref(&self, name: &str) -> Result<ChildRef, ControlError> {
        Self::parse_ref(name, &self.string(name)?)
    }

    fn optional_ref(&self, name: &str) -> Result<Option<ChildRef>, ControlError> {
        match self.field(name) {
            None => Ok(None),
            Some(Value::String(s)) => Self::parse_ref(name, s).map(Some),
            Some(_) => Err(ControlError::invalid_request(&format!(
                "params.{name}: expected \"UUID@generation\""
            ))),
        }
    }

    fn child_refs(&self, name: &str) -> Result<Vec<ChildRef>, ControlError> {
        let items = self.field(name).and_then(Value::as_array).ok_or_else(|| {
            ControlError::invalid_request(&format!(
                "params.{name}: an array of \"UUID@generation\" is required"
            ))
        })?;
        items
            .iter()
            .enumerate()
            .map(|(i, v)| {
                let text = v.as_str().ok_or_else(|| {
                    ControlError::invalid_request(&format!(
                        "params.{name}[{i}]: expected \"UUID@generation\""
                    ))
                })?;
                Self::parse_ref(&format!("{name}[{i}]"), text)
            })
            .collect()
    }

    fn message_id(&self) -> Result<Option<MessageId>, ControlError> {
        match self.field("messageId") {
            None => Ok(None),
            Some(Value::String(s)) => crate::core::ids::parse_full_uuid(s)
                .map(|u| Some(MessageId(u)))
                .map_err(|e| ControlError::invalid_request(&format!("params.messageId: {e}"))),
            Some(_) => Err(ControlError::invalid_request(
                "params.messageId: expected a UUID string",
            )),
        }
    }

    fn mode(&self) -> Result<MessageMode, ControlError> {
        match self.field("mode").map(Value::as_str) {
            None | Some(Some("inbox")) => Ok(MessageMode::Inbox),
            Some(Some("steer")) => Ok(MessageMode::Steer),
            Some(Some("followUp")) => Ok(MessageMode::FollowUp),
            Some(_) => Err(ControlError::invalid_request(
                "params.mode: one of inbox, steer, followUp",
            )),
        }
    }
}

//! The methods of the control socket: the root's controls over one runtime, with requests
//! resolved by policy first. One vocabulary: the same core commands and refusals as every
//! other surface. Every request acts as its connection's caller (`control::caller`): the
//! operator is the root; a worker generation is that child, limited to [`CHILD_METHODS`].

use std::path::PathBuf;
use std::sync::Arc;

use serde::Serialize;
use serde_json::Value;
use tokio::sync::broadcast;

use crate::config::live::{LivePolicy, PolicyUnavailable};
use crate::config::{Loaded, ProfilesView};
use crate::control::methods::{
    DelegateOutcome, DelegateParams, DelegateResult, Event, FleetStats, FleetStatus, GuardParams,
    GuardResult, HostExtensionsParams, HostExtensionsResult, NoParams, ParentToolEndResult,
    ParentToolStartResult, ProfilesResult, RenewParams, Request, ShutdownResult, StatusParams,
    StatusResult, SubmitParams, SubmitResult, Target, TranscriptResult,
};
use crate::control::protocol::{ControlError, Payload};
use crate::control::server::{BoxFuture, Handler, Session};
use crate::control::session_routing::SessionRouting;
use crate::control::summary_cache::{Summary, SummaryCache};
use crate::core::{
    ChildRef, GuardKind, Input, MessageMode, Party, Refusal, Renewal, Reply, RequestId,
};
use crate::policy::Problems;
use crate::policy::capabilities::{OfferedTool, effective};
use crate::policy::model::ModelContext;
use crate::policy::parent_tools::{check_call_id, check_tool_name, is_parent_mutation};
use crate::policy::request::{DelegateCall, SubagentRequest, parse_delegate_task, parse_subagent};
use crate::policy::resolve::{ResolveContext, resolve_call};
use crate::policy::schema::{validate_schema, validate_value};
use crate::policy::version::{VersionError, check_host_version};
use crate::runtime::{RuntimeEvent, RuntimeHandle, WhenAbandoned};
use crate::store::fs::RealFs;
use crate::tools::Backend as _;

/// What a child generation may ask (the contract's child-local `delegate_task` and
/// `delegate_coordinate` actions, and its extension's request/tool guard and
/// `submit_result`); every other method is root-only: `status`, `stop`, `park`, `resume`,
/// `followup`, `revive` by the contract, and the fleet reads and operator controls because a
/// child gets "no child registry enumeration, transcript read or arbitrary resource lookup".
pub const CHILD_METHODS: [&str; 8] = [
    "delegate", "message", "inbox", "wait", "guard", "submit", "tools", "callTool",
];

/// Methods only a worker generation may call: they act on the caller's own window (its
/// counters, its structured result), and the root has neither ("no UUID/generation-targetable
/// submission API exists").
pub const CHILD_ONLY_METHODS: [&str; 2] = ["guard", "submit"];

// `parentToolStart` and `parentToolEnd` are the root's own model's reservations: not in
// [`CHILD_METHODS`], so a child is refused them (`root-only`) like every operator method.

/// The party every core input of a request acts as: its connection's caller.
fn actor(session: &Session) -> Party {
    session.caller.party()
}

pub struct Service {
    rt: RuntimeHandle,
    /// The delegation policy, read at each invocation (`Loaded` converts to a fixed one).
    policy: Arc<LivePolicy>,
    models: ModelContext,
    offered: Vec<OfferedTool>,
    events: broadcast::Sender<Event>,
    routing: Option<Arc<SessionRouting>>,
    /// The last `status {summary: true}` answer, served again while nothing changed.
    summary: Arc<SummaryCache>,
    /// Why the host pi fails the supported-host gate (`slate serve --host-version`), if it
    /// does: then [`needs_supported_host`] requests are refused.
    unsupported_host: Option<VersionError>,
}

impl Service {
    /// A service for `rt`; forwards runtime events to subscribers.
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
                // Nobody subscribed: nothing to copy or preview (but the end is still
                // announced).
                if sink.receiver_count() == 0
                    && matches!(
                        event,
                        Ok(RuntimeEvent::Registry(_) | RuntimeEvent::Outcome(_))
                    )
                {
                    continue;
                }
                let event = match event {
                    Ok(RuntimeEvent::Registry(event)) => Event::Registry { event },
                    // The same preview a foreground caller gets, so a subscriber delivers a
                    // background window's outcome without rendering it again.
                    Ok(RuntimeEvent::Outcome(outcome)) => {
                        let preview = crate::policy::preview::preview(&outcome.outcomes);
                        Event::Outcome { outcome, preview }
                    }
                    Ok(RuntimeEvent::ShutdownComplete) => {
                        let _ = sink.send(Event::ShutdownComplete);
                        break;
                    }
                    Err(broadcast::error::RecvError::Lagged(missed)) => Event::Lagged { missed },
                    Err(broadcast::error::RecvError::Closed) => break,
                };
                let _ = sink.send(event);
            }
        });
        Self {
            rt,
            policy,
            models,
            offered,
            events,
            routing: None,
            summary: Arc::default(),
            unsupported_host: None,
        }
    }

    /// Apply the supported-host gate ([Supported host]) to the host pi's version `detected`
    /// (pi's `VERSION`, as the main session's extension reports it): when it fails, delegated
    /// execution and model-delivering messages are refused with `unsupported-host`, naming
    /// the detected and the minimum stable version, while status, stop, inbox and the other
    /// reads and controls keep working.
    #[must_use]
    pub fn with_host_version(mut self, detected: &str) -> Self {
        self.unsupported_host = check_host_version(detected).err();
        self
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
    ) -> Result<Reply, ControlError> {
        let reply: Result<Reply, Refusal> = self.rt.call(build).await?;
        Ok(reply?)
    }

    #[allow(clippy::too_many_lines, reason = "one arm per method")]
    /// One typed request, acting as [`actor`] of `session`. Each arm says what its method does;
    /// the result is written once as JSON text.
    async fn dispatch(&self, request: Request, session: &Session) -> Result<Payload, ControlError> {
        let actor = actor(session);
        match request {
            Request::Status(p) => self.status(p).await,
            Request::Agents(_) => raw(&self.rt.query(crate::core::Coordinator::agents).await?),
            Request::Delegate(p) => raw(&self.delegate(p, actor, None).await?),
            Request::Tools(NoParams {}) => {
                let caller = ToolBackend::new(self, session).caller().await?;
                raw(&crate::tools::ToolsResult {
                    tools: crate::tools::tools_for(caller).to_vec(),
                })
            }
            Request::CallTool(p) => {
                // Subscribed before the call, so its window's outcome cannot be missed.
                let events = self.events.subscribe();
                let backend = ToolBackend::new(self, session);
                raw(&crate::tools::serve_call(&backend, p, events, session.notices.clone()).await?)
            }
            Request::Stop(p) => {
                let target = p.target.0;
                let reply = self
                    .core(move |request| Input::Stop {
                        request,
                        actor,
                        target,
                    })
                    .await?;
                raw(&reply)
            }
            Request::StopMany(p) => {
                let targets = p.targets.into_iter().map(|t| t.0).collect();
                let reply = self
                    .core(move |request| Input::StopMany {
                        request,
                        actor,
                        targets,
                    })
                    .await?;
                raw(&reply)
            }
            Request::Steer(p) => {
                let (target, text) = (p.target.0, p.text);
                let reply = self
                    .core(move |request| Input::Steer {
                        request,
                        target,
                        text,
                    })
                    .await?;
                raw(&reply)
            }
            Request::Message(p) => {
                let (target, text, mode) = (p.target.map(|t| t.0), p.text, p.mode);
                let reply = self
                    .core(move |request| Input::Message {
                        request,
                        actor,
                        target,
                        text,
                        mode,
                    })
                    .await?;
                raw(&reply)
            }
            Request::Inbox(_) => raw(&self
                .core(move |request| Input::Inbox { request, actor })
                .await?),
            Request::Wait(p) => {
                let target = p.target.map(|t| t.0);
                let message_id = p.message_id.map(|m| m.0);
                let timeout_ms = p.timeout_ms;
                let reply = self
                    .core(move |request| Input::Wait {
                        request,
                        actor,
                        target,
                        message_id,
                        timeout_ms,
                    })
                    .await?;
                raw(&reply)
            }
            Request::Park(p) => {
                let target = p.target.0;
                let reply = self
                    .core(move |request| Input::Park {
                        request,
                        actor,
                        target,
                    })
                    .await?;
                raw(&reply)
            }
            Request::Resume(p) => {
                let (target, assignment) = (p.target.0, p.assignment);
                // A resume is new work: it fails closed on an invalid policy, and the
                // runtime bounds its window by the current limits.
                self.policy.current()?;
                let reply = self
                    .core(move |request| Input::Resume {
                        request,
                        actor,
                        target,
                        assignment,
                    })
                    .await?;
                raw(&reply)
            }
            Request::Followup(p) => raw(&self.renew(Renew::Followup, p, actor).await?),
            Request::Revive(p) => raw(&self.renew(Renew::Revive, p, actor).await?),
            Request::Transcript(p) => raw(&self.transcript(p.target.0, p.after).await?),
            // What admission will use: the files as they are now, or their problems.
            Request::Profiles(_) => raw(&ProfilesResult(
                serde_json::to_value(ProfilesView::new(Loaded::clone(&*self.policy.current()?)))
                    .map_err(|e| ControlError::internal(&e.to_string()))?,
            )),
            Request::Policy(_) => raw(&self.policy.current()?.profiles.scheduling),
            Request::Guard(p) => {
                let child = own_generation(actor, "guard")?;
                let kind = match p {
                    GuardParams::Request {} => GuardKind::Request,
                    GuardParams::Compaction {} => GuardKind::Compaction,
                    GuardParams::Tool { tool, .. } => GuardKind::Tool { name: tool },
                };
                let reply = self
                    .core(move |request| Input::Guard {
                        request,
                        child,
                        kind,
                    })
                    .await?;
                match reply {
                    Reply::Guard { allow, reason } => raw(&GuardResult { allow, reason }),
                    other => Err(unexpected("guard", &other)),
                }
            }
            Request::Submit(p) => raw(&self.submit(own_generation(actor, "submit")?, p).await?),
            Request::ParentToolStart(p) => {
                check_call_id(&p.call_id).map_err(|e| ControlError::invalid_request(&e))?;
                check_tool_name(&p.tool).map_err(|e| ControlError::invalid_request(&e))?;
                let read_only = !is_parent_mutation(&p.tool);
                let call = p.call_id;
                // The core decides even for an exempt tool (it answers `Ok` at once), so one
                // rule holds the order of every reservation.
                self.core(move |request| Input::ParentToolStart {
                    request,
                    call,
                    read_only,
                })
                .await?;
                raw(&ParentToolStartResult {
                    reserved: !read_only,
                })
            }
            Request::ParentToolEnd(p) => {
                check_call_id(&p.call_id).map_err(|e| ControlError::invalid_request(&e))?;
                let call = p.call_id;
                match self
                    .core(move |request| Input::ParentToolEnd { request, call })
                    .await?
                {
                    Reply::Released { released } => raw(&ParentToolEndResult { released }),
                    other => Err(unexpected("parentToolEnd", &other)),
                }
            }
            Request::Targets(_) => {
                let targets = self
                    .rt
                    .query(|c| {
                        c.iter_current()
                            .map(|(s, _)| crate::control::targets::TargetRow::of(s))
                            .collect()
                    })
                    .await?;
                raw(&crate::control::targets::TargetsResult { targets })
            }
            Request::OutcomeDelivered(p) => {
                let call = p.call;
                match self
                    .core(move |request| Input::OutcomeDelivered {
                        request: Some(request),
                        actor,
                        call,
                    })
                    .await?
                {
                    Reply::Delivered { generations } => {
                        raw(&crate::control::targets::OutcomeDeliveredResult { generations })
                    }
                    other => Err(unexpected("outcomeDelivered", &other)),
                }
            }
            Request::Shutdown(_) => {
                let rt = self.rt.clone();
                tokio::spawn(async move {
                    let _ = rt.shutdown().await;
                });
                raw(&ShutdownResult {
                    shutting_down: true,
                })
            }
            Request::HostExtensions(p) => raw(&self.host_extensions(&p)?),
            Request::RoutingFacts(p) => raw(&self.routing_facts(actor, p)?),
            // The connection answers these itself; reaching here is a bug.
            Request::Hello(_) | Request::Subscribe(_) => Err(ControlError::internal(
                "hello and subscribe are handled by the connection",
            )),
        }
    }

    /// `routingFacts`: the host's registry report kept (the operator's only), then the
    /// session's remembered providers and the last report. A service without routing (no agent
    /// dir) remembers nothing and keeps no report.
    fn routing_facts(
        &self,
        actor: Party,
        p: crate::control::session_routing::RoutingFactsParams,
    ) -> Result<crate::control::session_routing::RoutingFacts, ControlError> {
        if let Party::Child(actor) = actor {
            return Err(Refusal::RootOnly {
                action: "routingFacts",
                actor,
            }
            .into());
        }
        if let Some(models) = &p.host_models
            && models.len() > crate::control::session_routing::HOST_MODELS_MAX
        {
            return Err(ControlError::invalid_request(&format!(
                "params.hostModels: at most {} models, not {}",
                crate::control::session_routing::HOST_MODELS_MAX,
                models.len()
            )));
        }
        Ok(self
            .routing
            .as_ref()
            .map(|r| r.facts(p.host_models))
            .unwrap_or_default())
    }

    /// `hostExtensions`: the session's `workerExtensions` patterns select from the units the
    /// host reported (`policy::host_extensions`); workers started from now on load the
    /// selection. Once per session: the set is resolved when the session starts.
    fn host_extensions(
        &self,
        p: &HostExtensionsParams,
    ) -> Result<HostExtensionsResult, ControlError> {
        if let Err((path, rule)) = crate::policy::host_extensions::check(&p.units) {
            return Err(ControlError::invalid_request(&format!(
                "params{}: {rule}",
                &path[1..]
            )));
        }
        let patterns = self
            .routing
            .as_ref()
            .map(|r| r.worker_extensions())
            .unwrap_or_default();
        let selection = crate::policy::host_extensions::select(&patterns, &p.units);
        if !self
            .rt
            .actors()
            .set_worker_extensions(selection.selected.clone())
        {
            return Err(ControlError::new(
                "already-resolved",
                "hostExtensions: this session's host extensions were already resolved; they are \
                 resolved once per session (start a new pi session to change them)",
            ));
        }
        let doctrine = crate::policy::host_extensions::doctrine(&selection.selected);
        Ok(HostExtensionsResult {
            selection,
            doctrine,
        })
    }

    /// With a target: the pinned snapshot, its generations and presence. Without: the fleet;
    /// `summary` rows carry only what the fleet table shows (about a tenth of a snapshot), `table`
    /// rows the same as compact arrays; both are kept while nothing changes.
    /// Inside the actor only detached copies are taken; the JSON text is written out here, once,
    /// so a large status never holds up worker events.
    async fn status(&self, p: StatusParams) -> Result<Payload, ControlError> {
        if let Some(Target(r)) = p.target {
            let view = self.rt.query(move |c| c.status(r)).await??;
            return raw(&StatusResult::Generation(Box::new(view)));
        }
        if p.summary || p.table || p.text {
            // No input since the last answer, and a read would not apply a new scheduling
            // policy (`Actor::refresh_policy`): that answer again, without the actor.
            let fresh = self
                .summary
                .fresh(self.rt.registry_epoch())
                .filter(|w| self.policy.scheduling().is_none_or(|p| p == *w.policy()));
            let written = if let Some(written) = fresh {
                written
            } else {
                // Unchanged rows after all (inputs that change nothing a row shows): the kept
                // text again; else the rows as they stand, written once.
                let cache = Arc::clone(&self.summary);
                let (epoch, read) = self
                    .rt
                    .query_with_epoch(move |c, epoch| (epoch, cache.read(c, fleet_stats(c), epoch)))
                    .await?;
                match read {
                    Summary::Unchanged(written) => written,
                    Summary::Changed(summary) => self.summary.keep(summary, epoch),
                }
            };
            let text = if p.text {
                written.rendered_text(crate::runtime::now_ms())
            } else if p.table {
                written.table_text()
            } else {
                written.summary_text()
            };
            return text
                .map(Payload::Shared)
                .map_err(|e| ControlError::internal(&e.to_string()));
        }
        let (parent_id, children, agents, stats, policy) = self
            .rt
            .query(|c| {
                (
                    c.root_id(),
                    c.list(),
                    c.agents(),
                    fleet_stats(c),
                    *c.policy(),
                )
            })
            .await?;
        raw(&FleetStatus {
            parent_id,
            children,
            agents,
            stats,
            policy,
        })
    }

    /// Resolve `call` for the root (`delegator: None`) or for the delegating child, against
    /// its admitted spec: its workspace, grants and model (the core then checks its spawn
    /// budget, depth, ancestry and nested capacity at admission). The policy is the one in
    /// force now.
    fn resolve(
        &self,
        call: &DelegateCall,
        delegator: Option<&crate::core::TaskSpec>,
    ) -> Result<Vec<crate::core::TaskSpec>, ControlError> {
        let loaded = self.policy.current()?;
        let workspace = delegator.map(|spec| PathBuf::from(&spec.cwd));
        let nested_models = delegator.map(|spec| ModelContext {
            parent: spec
                .model
                .clone()
                .unwrap_or_else(|| self.models.parent.clone()),
            parent_allowlist: spec.models.clone(),
            ..self.models.clone()
        });
        let resolve = |routing: Option<crate::policy::logical::LogicalContext<'_>>| {
            let ctx = ResolveContext {
                profiles: &loaded.profiles,
                root_cwd: &loaded.cwd,
                delegator: delegator
                    .zip(workspace.as_deref())
                    .map(|(spec, workspace)| crate::policy::resolve::Delegator { workspace, spec }),
                offered: &self.offered,
                models: nested_models.as_ref().unwrap_or(&self.models),
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

    /// Native `delegate_task` or compatibility `subagent` launch; `background` overrides the
    /// request's own.
    async fn delegate(
        &self,
        p: DelegateParams,
        actor: Party,
        watch: Option<&crate::tools::Watch>,
    ) -> Result<DelegateResult, ControlError> {
        let mut call = match parse_delegate_task(&p.request) {
            Ok(call) => call,
            Err(native) => match parse_subagent(&p.request) {
                Ok(SubagentRequest::Launch(call)) => call,
                // A compatibility request (it has `task`) is told its own problems.
                Err(compat) if p.request.get("task").is_some() => {
                    return Err(ControlError::from(Problems(compat)));
                }
                _ => return Err(ControlError::from(Problems(native))),
            },
        };
        if let Some(background) = p.background {
            call.background = background;
        }
        let delegator = match actor {
            Party::Root => None,
            Party::Child(child) => Some(
                self.rt
                    .query(move |c| c.admitted_spec(child).cloned())
                    .await?
                    .ok_or(Refusal::UnknownIdentity(child))?,
            ),
        };
        let tasks = self.resolve(&call, delegator.as_ref())?;
        if call.background {
            let reply = self
                .core(move |request| Input::Admit {
                    request,
                    actor,
                    tasks,
                    background: true,
                })
                .await?;
            if let Some(watch) = watch {
                watch.admitted(&reply);
            }
            return Ok(DelegateResult::Background(reply));
        }
        // A child waits in its `delegate_task`: when that is aborted (its connection closes
        // and this future is dropped) the window is cancelled and drained. The operator's
        // window goes on, owned by the coordinator.
        let abandoned = match actor {
            Party::Root if !p.cancel_on_close => WhenAbandoned::GoesOn,
            Party::Root | Party::Child(_) => WhenAbandoned::Cancels,
        };
        let mut fg = self.rt.delegate_with(actor, tasks, abandoned).await??;
        if let Some(watch) = watch {
            watch.admitted(&fg.admitted);
        }
        let outcome = (&mut fg.outcome)
            .await
            .map_err(|_| ControlError::shutting_down())?;
        let preview = crate::policy::preview::preview(&outcome.outcomes);
        Ok(DelegateResult::Foreground(Box::new(DelegateOutcome {
            admitted: fg.admitted,
            outcome,
            preview,
        })))
    }

    /// `submit_result`: `value` validated strictly against the caller's admitted
    /// `resultSchema`, then recorded by the core.
    async fn submit(&self, child: ChildRef, p: SubmitParams) -> Result<SubmitResult, ControlError> {
        let schema = self
            .rt
            .query(move |c| {
                c.admitted_spec(child)
                    .map(|spec| spec.result_schema.clone())
            })
            .await?
            .ok_or(Refusal::UnknownIdentity(child))?
            .ok_or(Refusal::NoResultSchema { actor: child })?;
        // Checked at admission: a failure here is a bug, not the caller's.
        let schema = validate_schema(&schema, "$.resultSchema").map_err(|problems| {
            ControlError::internal(&format!(
                "the admitted resultSchema of {child} no longer passes the subset guard: {}",
                Problems(problems)
            ))
        })?;
        let errors = validate_value(&schema, &p.value);
        let value = p.value;
        let reply = self
            .core(move |request| Input::Submit {
                request,
                child,
                value,
                errors,
            })
            .await?;
        match reply {
            Reply::Submit {
                status,
                attempts,
                errors,
                message,
            } => Ok(SubmitResult {
                status,
                attempts,
                errors,
                message,
            }),
            other => Err(unexpected("submit", &other)),
        }
    }

    /// Followup or revive: current profile grants for the target's role, intersected by the
    /// core with the previous generation's.
    async fn renew(
        &self,
        kind: Renew,
        p: RenewParams,
        actor: Party,
    ) -> Result<Reply, ControlError> {
        let target = p.target.0;
        let schema = match &p.result_schema {
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
            assignment: p.assignment,
            tools: caps.tools,
            leaf_tools: caps.leaf_tools,
            skills: profile.skills.clone(),
            spawn: profile.spawn.clone(),
            coordination: profile.coordination.clone(),
            limits: crate::core::LimitOverrides::default(),
            result_schema: schema,
        };
        match kind {
            Renew::Followup => {
                self.core(move |request| Input::Followup {
                    request,
                    actor,
                    target,
                    renewal,
                })
                .await
            }
            Renew::Revive => {
                self.core(move |request| Input::Revive {
                    request,
                    actor,
                    target,
                    renewal,
                })
                .await
            }
        }
    }

    /// The read-only messages of exactly one generation, from its pi session file (all of
    /// them, or those after a cursor).
    async fn transcript(
        &self,
        target: ChildRef,
        after: Option<u64>,
    ) -> Result<TranscriptResult, ControlError> {
        let snapshot = self
            .rt
            .snapshot(target)
            .await?
            .ok_or(Refusal::UnknownIdentity(target))?;
        let read = match snapshot.transcript {
            None => TranscriptRead {
                messages: Vec::new(),
                cursor: 0,
                restarted: after.is_some_and(|a| a > 0),
            },
            Some(path) => tokio::task::spawn_blocking(move || {
                read_transcript(&PathBuf::from(path), after.unwrap_or(0))
            })
            .await
            .map_err(|e| ControlError::internal(&e.to_string()))??,
        };
        Ok(TranscriptResult {
            target: Target(target),
            messages: read.messages,
            cursor: read.cursor,
            restarted: read.restarted,
        })
    }
}

/// Which new generation a renewal makes.
#[derive(Clone, Copy, Debug)]
enum Renew {
    Followup,
    Revive,
}

/// The coordinator's counters, as `status` reports them.
fn fleet_stats(c: &crate::core::Coordinator) -> FleetStats {
    let stats = c.stats();
    FleetStats {
        active_permits: stats.active_permits,
        queued: stats.queued as u64,
        writer: stats.writer.map(Target),
        admitted_messages: stats.admitted_messages,
        pending_waiters: stats.pending_waiters as u64,
        live_workers: stats.live_workers,
        open_windows: stats.open_windows as u64,
        root_inbox: c.root_inbox_len() as u64,
    }
}

/// What one read of a session file found.
#[derive(Debug, PartialEq)]
struct TranscriptRead {
    messages: Vec<Value>,
    cursor: u64,
    restarted: bool,
}

/// pi session entries of type `message`, in order, from byte `after` (0, or the end of a
/// complete line an earlier read returned); provider payloads stay in the file. Only
/// complete lines are read: a line pi is still writing is read next time. A cursor past the
/// end, or not at a line's end, means the file was replaced: the read restarts at 0.
fn read_transcript(path: &std::path::Path, after: u64) -> Result<TranscriptRead, ControlError> {
    use std::io::{Read as _, Seek as _, SeekFrom};
    let failed = |e: &std::io::Error| ControlError::internal(&format!("{}: {e}", path.display()));
    let mut file = match std::fs::File::open(path) {
        Ok(file) => file,
        // Created lazily by pi: absent before the first persisted message.
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            return Ok(TranscriptRead {
                messages: Vec::new(),
                cursor: 0,
                restarted: after > 0,
            });
        }
        Err(e) => return Err(failed(&e)),
    };
    let len = file.metadata().map_err(|e| failed(&e))?.len();
    let mut start = after;
    if after > 0 {
        let mut last = [0u8; 1];
        let at_line_end = after <= len
            && file.seek(SeekFrom::Start(after - 1)).is_ok()
            && file.read_exact(&mut last).is_ok()
            && last[0] == b'\n';
        if !at_line_end {
            start = 0;
        }
    }
    file.seek(SeekFrom::Start(start)).map_err(|e| failed(&e))?;
    let mut bytes = Vec::new();
    file.read_to_end(&mut bytes).map_err(|e| failed(&e))?;
    let complete = bytes.iter().rposition(|&b| b == b'\n').map_or(0, |i| i + 1);
    let messages = bytes[..complete]
        .split(|&b| b == b'\n')
        .filter_map(|line| serde_json::from_slice::<Value>(line).ok())
        .filter(|entry| entry.get("type").and_then(Value::as_str) == Some("message"))
        .filter_map(|mut entry| entry.get_mut("message").map(Value::take))
        .collect();
    Ok(TranscriptRead {
        messages,
        cursor: start + complete as u64,
        restarted: start != after,
    })
}

impl Handler for Service {
    fn handle<'a>(
        &'a self,
        method: &'a str,
        params: Value,
        session: &'a Session,
    ) -> BoxFuture<'a, Result<Payload, ControlError>> {
        Box::pin(async move {
            let request = Request::parse(method, params)?;
            match actor(session) {
                Party::Child(child) if !CHILD_METHODS.contains(&request.method()) => {
                    // Refused before anything is looked up: a child learns nothing about others.
                    return Err(Refusal::RootOnly {
                        action: request.method(),
                        actor: child,
                    }
                    .into());
                }
                Party::Root if CHILD_ONLY_METHODS.contains(&request.method()) => {
                    return Err(Refusal::ChildOnly {
                        action: request.method(),
                    }
                    .into());
                }
                _ => {}
            }
            if let Some(error) = &self.unsupported_host
                && needs_supported_host(&request)
            {
                return Err(ControlError::unsupported_host(request.method(), error));
            }
            self.dispatch(request, session).await
        })
    }

    fn subscribe(&self) -> broadcast::Receiver<Event> {
        self.events.subscribe()
    }

    fn actors(&self) -> Option<crate::runtime::ActorRegistry> {
        Some(self.rt.actors().clone())
    }
}

/// The tool layer's view of this service, as one connection's caller.
struct ToolBackend<'a> {
    service: &'a Service,
    session: &'a Session,
}

impl<'a> ToolBackend<'a> {
    fn new(service: &'a Service, session: &'a Session) -> Self {
        Self { service, session }
    }
}

impl crate::tools::Backend for ToolBackend<'_> {
    fn caller(&self) -> BoxFuture<'_, Result<crate::tools::Caller, ControlError>> {
        Box::pin(async move {
            match actor(self.session) {
                Party::Root => Ok(crate::tools::Caller::Root),
                Party::Child(child) => {
                    let grants = self
                        .service
                        .rt
                        .query(move |c| c.admitted_spec(child).map(crate::tools::Grants::of))
                        .await?
                        .ok_or(Refusal::UnknownIdentity(child))?;
                    Ok(crate::tools::Caller::Child(grants))
                }
            }
        })
    }

    fn request(&self, request: Request) -> BoxFuture<'_, Result<Payload, ControlError>> {
        Box::pin(async move {
            let params = request
                .params()
                .map_err(|e| ControlError::internal(&e.to_string()))?;
            self.service
                .handle(request.method(), params, self.session)
                .await
        })
    }

    fn delegate<'b>(
        &'b self,
        params: DelegateParams,
        watch: &'b crate::tools::Watch,
    ) -> BoxFuture<'b, Result<DelegateResult, ControlError>> {
        Box::pin(async move {
            if let Some(error) = &self.service.unsupported_host {
                return Err(ControlError::unsupported_host("delegate", error));
            }
            self.service
                .delegate(params, actor(self.session), Some(watch))
                .await
        })
    }

    fn cwd(&self) -> PathBuf {
        self.service
            .policy
            .current()
            .map(|loaded| loaded.cwd.clone())
            .unwrap_or_default()
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

/// The requests the supported-host gate covers ([Supported host]: "`delegate_task`,
/// compatibility `subagent` launches, resume, followup, revive, steering/model-delivering
/// messages"): everything that starts a generation or puts text into a model's conversation.
/// A `message` in mode `inbox` only lands in a mailbox, and every read and control (status,
/// stop, stopMany, park, inbox, wait, agents, transcript, profiles, policy, shutdown, the
/// parent tool reservations) stays available.
pub fn needs_supported_host(request: &Request) -> bool {
    match request {
        Request::Delegate(_)
        | Request::Resume(_)
        | Request::Followup(_)
        | Request::Revive(_)
        | Request::Steer(_) => true,
        Request::Message(p) => p.mode != MessageMode::Inbox,
        _ => false,
    }
}

/// The generation a child-only method acts on: the caller's own.
fn own_generation(actor: Party, action: &'static str) -> Result<ChildRef, ControlError> {
    match actor {
        Party::Child(child) => Ok(child),
        Party::Root => Err(Refusal::ChildOnly { action }.into()),
    }
}

/// The core answered a request with a reply of another method: a bug.
fn unexpected(method: &str, reply: &Reply) -> ControlError {
    let kind = serde_json::to_value(reply)
        .ok()
        .and_then(|v| v.get("kind").and_then(Value::as_str).map(str::to_owned))
        .unwrap_or_default();
    ControlError::internal(&format!("{method}: the coordinator answered {kind:?}"))
}

/// A typed result as JSON text, written once (no intermediate tree).
fn raw<T: Serialize>(value: &T) -> Result<Payload, ControlError> {
    crate::json::to_raw_value(value)
        .map(Payload::Raw)
        .map_err(|e| ControlError::internal(&e.to_string()))
}

#[cfg(test)]
mod transcript_tests {
    use super::read_transcript;

    fn entry(n: u32) -> String {
        format!("{{\"type\":\"message\",\"message\":{{\"role\":\"user\",\"content\":\"m{n}\"}}}}\n")
    }

    #[test]
    fn a_cursor_reads_only_what_was_appended_and_a_replaced_file_restarts() {
        let dir = tempfile::tempdir().expect("dir");
        let path = dir.path().join("s.jsonl");
        let missing = read_transcript(&path, 0).expect("read");
        assert!(missing.messages.is_empty() && missing.cursor == 0 && !missing.restarted);
        std::fs::write(
            &path,
            format!(
                "{{\"type\":\"session\"}}\n{}{}{{\"type\":\"mess",
                entry(1),
                entry(2)
            ),
        )
        .expect("write");
        let first = read_transcript(&path, 0).expect("read");
        assert_eq!(first.messages.len(), 2, "the half-written line waits");
        assert!(!first.restarted);
        let mut text = std::fs::read_to_string(&path).expect("read");
        text.truncate(usize::try_from(first.cursor).expect("small"));
        text.push_str(&entry(3));
        std::fs::write(&path, &text).expect("write");
        let next = read_transcript(&path, first.cursor).expect("read");
        assert_eq!(
            next.messages,
            vec![serde_json::json!({"role": "user", "content": "m3"})]
        );
        assert!(!next.restarted);
        assert_eq!(next.cursor, text.len() as u64);
        let idle = read_transcript(&path, next.cursor).expect("read");
        assert!(idle.messages.is_empty() && idle.cursor == next.cursor);
        // Replaced by a shorter file, or a cursor that is not at a line's end: from the start.
        std::fs::write(&path, entry(9)).expect("write");
        let again = read_transcript(&path, next.cursor).expect("read");
        assert!(again.restarted);
        assert_eq!(again.messages.len(), 1);
        let odd = read_transcript(&path, 3).expect("read");
        assert!(odd.restarted && odd.messages.len() == 1);
    }
}

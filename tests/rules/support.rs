//! A small test-local driver for the sans-IO coordinator: fresh request ids, a virtual
//! clock, admission that returns refs, and worker-event sequences.

#![allow(dead_code)]

use slate::core::{
    Artifacts, BuiltinTool, CallId, ChildRef, ChildSnapshot, CoordinationAction, Coordinator,
    Effect, Input, LimitOverrides, Message, MessageId, MessageMode, Millis, Party, Presence,
    Refusal, Renewal, Reply, RequestId, Role, Status, TaskSpec, WaitResult, WindowOutcome,
    WorkerEvent, WorkerStart,
};
use slate::policy::scheduling::SchedulingPolicy;
use uuid::Uuid;

pub const ROOT: Party = Party::Root;

pub fn root_id() -> Uuid {
    Uuid::from_u128(0x0b6a_0000_0000_4000_8000_0000_0000_0001)
}

/// A coordinator with a fixed seed, its clock and every effect it emitted.
pub struct Harness {
    pub coord: Coordinator,
    pub now: Millis,
    next_request: u64,
    pub log: Vec<Effect>,
}

pub fn policy(concurrency: u32, queue: u32) -> SchedulingPolicy {
    SchedulingPolicy {
        concurrency,
        queue,
        ..SchedulingPolicy::default()
    }
}

impl Harness {
    pub fn new() -> Self {
        Self::with(SchedulingPolicy::default())
    }

    pub fn with(policy: SchedulingPolicy) -> Self {
        let coord = Coordinator::new(root_id(), policy, 42).expect("valid policy");
        Self {
            coord,
            now: 1_000,
            next_request: 1,
            log: Vec::new(),
        }
    }

    pub fn request(&mut self) -> RequestId {
        let id = RequestId(self.next_request);
        self.next_request += 1;
        id
    }

    pub fn handle(&mut self, input: Input) -> Vec<Effect> {
        let effects = self.coord.handle(input, self.now);
        self.log.extend(effects.iter().cloned());
        effects
    }

    /// Build a request with a fresh id, feed it, and return the reply to it.
    pub fn call(&mut self, build: impl FnOnce(RequestId) -> Input) -> Result<Reply, Refusal> {
        let (request, effects) = self.call_effects(build);
        reply_to(&effects, request).expect("the request is answered at once")
    }

    pub fn call_effects(
        &mut self,
        build: impl FnOnce(RequestId) -> Input,
    ) -> (RequestId, Vec<Effect>) {
        let request = self.request();
        let effects = self.handle(build(request));
        (request, effects)
    }

    // ---- admission ----------------------------------------------------------------------

    pub fn try_admit(
        &mut self,
        actor: Party,
        tasks: Vec<TaskSpec>,
        background: bool,
    ) -> Result<(CallId, Vec<ChildRef>), Refusal> {
        match self.call(|request| Input::Admit {
            request,
            actor,
            tasks,
            background,
        })? {
            Reply::Admitted { call, children } => Ok((
                call,
                children.iter().map(ChildSnapshot::child_ref).collect(),
            )),
            other => panic!("admission answered {other:?}"),
        }
    }

    /// Admit a batch that must be accepted; returns the refs in input order.
    pub fn admit(&mut self, actor: Party, tasks: Vec<TaskSpec>) -> Vec<ChildRef> {
        self.try_admit(actor, tasks, false)
            .unwrap_or_else(|e| panic!("admission refused: {e}"))
            .1
    }

    pub fn admit_one(&mut self, actor: Party, spec: TaskSpec) -> ChildRef {
        self.admit(actor, vec![spec])[0]
    }

    /// Admit a root scout and bring it to `running`.
    pub fn running(&mut self, spec: TaskSpec) -> ChildRef {
        let r = self.admit_one(ROOT, spec);
        self.ready(r);
        assert_eq!(self.status(r), Status::Running);
        r
    }

    // ---- worker events ------------------------------------------------------------------

    pub fn event(&mut self, child: ChildRef, event: WorkerEvent) -> Vec<Effect> {
        self.handle(Input::Worker { child, event })
    }

    pub fn drive(&mut self, child: ChildRef, events: Vec<WorkerEvent>) -> Vec<Effect> {
        let mut out = Vec::new();
        for event in events {
            out.extend(self.event(child, event));
        }
        out
    }

    pub fn ready(&mut self, child: ChildRef) -> Vec<Effect> {
        self.event(child, WorkerEvent::Ready { transcript: None })
    }

    /// Final assistant text and prompt resolution (no publication or exit yet).
    pub fn settle(&mut self, child: ChildRef, text: &str) -> Vec<Effect> {
        self.drive(
            child,
            vec![
                WorkerEvent::AssistantMessage {
                    text: text.to_owned(),
                    usage: None,
                },
                WorkerEvent::Settled { error: None },
            ],
        )
    }

    pub fn published(&mut self, child: ChildRef) -> Vec<Effect> {
        self.handle(Input::Published {
            child,
            result: Ok(Artifacts {
                text: Some(format!("/t/{}/result.txt", child.directory_name())),
                structured: None,
                error: None,
            }),
        })
    }

    pub fn exited(&mut self, child: ChildRef) -> Vec<Effect> {
        self.event(
            child,
            WorkerEvent::Exited {
                reason: "exit 0".to_owned(),
            },
        )
    }

    /// A dispatched generation runs to a settled, disposed end.
    pub fn complete(&mut self, child: ChildRef) -> Vec<Effect> {
        let mut out = Vec::new();
        if self.status(child) == Status::Setup {
            out.extend(self.ready(child));
        }
        out.extend(self.settle(child, "done"));
        out.extend(self.published(child));
        out.extend(self.exited(child));
        assert!(self.snap(child).disposed, "{child} should be disposed");
        out
    }

    /// A dispatched generation resolves with a provider error and disposes.
    pub fn fail(&mut self, child: ChildRef, error: &str) -> Vec<Effect> {
        let mut out = self.drive(
            child,
            vec![WorkerEvent::Settled {
                error: Some(error.to_owned()),
            }],
        );
        out.extend(self.published(child));
        out.extend(self.exited(child));
        out
    }

    pub fn deadline(&mut self, child: ChildRef) -> Vec<Effect> {
        let window = self.snap(child).window.number;
        self.handle(Input::Timer(slate::core::TimerKey::Deadline {
            child,
            window,
        }))
    }

    // ---- controls -----------------------------------------------------------------------

    pub fn stop(&mut self, target: ChildRef) -> Result<Reply, Refusal> {
        self.call(|request| Input::Stop {
            request,
            actor: ROOT,
            target,
        })
    }

    pub fn park(&mut self, target: ChildRef) -> Result<Reply, Refusal> {
        self.call(|request| Input::Park {
            request,
            actor: ROOT,
            target,
        })
    }

    pub fn resume(&mut self, target: ChildRef, text: &str) -> Result<Reply, Refusal> {
        self.call(|request| Input::Resume {
            request,
            actor: ROOT,
            target,
            assignment: text.to_owned(),
        })
    }

    pub fn followup(&mut self, target: ChildRef) -> Result<ChildRef, Refusal> {
        let reply = self.call(|request| Input::Followup {
            request,
            actor: ROOT,
            target,
            renewal: Renewal::keep_grants("next assignment"),
        })?;
        Ok(admitted_one(&reply))
    }

    pub fn revive(&mut self, target: ChildRef) -> Result<ChildRef, Refusal> {
        let reply = self.call(|request| Input::Revive {
            request,
            actor: ROOT,
            target,
            renewal: Renewal::keep_grants("revived assignment"),
        })?;
        Ok(admitted_one(&reply))
    }

    pub fn message(
        &mut self,
        actor: Party,
        target: Option<ChildRef>,
        text: &str,
        mode: MessageMode,
    ) -> Result<Message, Refusal> {
        match self.call(|request| Input::Message {
            request,
            actor,
            target,
            text: text.to_owned(),
            mode,
        })? {
            Reply::Message { message } => Ok(message),
            other => panic!("message answered {other:?}"),
        }
    }

    pub fn inbox(&mut self, actor: Party) -> Result<Vec<Message>, Refusal> {
        match self.call(|request| Input::Inbox { request, actor })? {
            Reply::Inbox { messages } => Ok(messages),
            other => panic!("inbox answered {other:?}"),
        }
    }

    /// Start a wait; `Ok(None)` while it is pending (its request id is returned too).
    pub fn wait(
        &mut self,
        actor: Party,
        target: Option<ChildRef>,
        message_id: Option<MessageId>,
        timeout_ms: u64,
    ) -> (RequestId, Result<Option<WaitResult>, Refusal>) {
        let (request, effects) = self.call_effects(|request| Input::Wait {
            request,
            actor,
            target,
            message_id,
            timeout_ms,
        });
        let result = match reply_to(&effects, request) {
            None => Ok(None),
            Some(Err(e)) => Err(e),
            Some(Ok(Reply::Wait { result })) => Ok(Some(result)),
            Some(Ok(other)) => panic!("wait answered {other:?}"),
        };
        (request, result)
    }

    pub fn shutdown(&mut self) -> Vec<Effect> {
        let request = self.request();
        self.handle(Input::Shutdown { request })
    }

    // ---- reads --------------------------------------------------------------------------

    pub fn snap(&self, r: ChildRef) -> ChildSnapshot {
        self.coord
            .snapshot(r)
            .unwrap_or_else(|| panic!("no snapshot of {r}"))
    }

    pub fn status(&self, r: ChildRef) -> Status {
        self.snap(r).status
    }

    pub fn presence(&self, r: ChildRef) -> Presence {
        self.coord.presence(r.id).expect("known identity")
    }

    /// The answer to `request` anywhere in the effect log.
    pub fn answer(&self, request: RequestId) -> Option<Result<Reply, Refusal>> {
        reply_to(&self.log, request)
    }

    pub fn started(&self) -> Vec<ChildRef> {
        starts(&self.log).iter().map(|s| s.child).collect()
    }

    pub fn window_outcomes(&self) -> Vec<WindowOutcome> {
        window_outcomes(&self.log)
    }
}

pub fn admitted_one(reply: &Reply) -> ChildRef {
    match reply {
        Reply::Admitted { children, .. } => {
            assert_eq!(children.len(), 1);
            children[0].child_ref()
        }
        other => panic!("expected an admission, got {other:?}"),
    }
}

pub fn reply_to(effects: &[Effect], request: RequestId) -> Option<Result<Reply, Refusal>> {
    effects.iter().find_map(|e| match e {
        Effect::Reply { request: r, result } if *r == request => Some(result.clone()),
        _ => None,
    })
}

pub fn starts(effects: &[Effect]) -> Vec<WorkerStart> {
    effects
        .iter()
        .filter_map(|e| match e {
            Effect::StartWorker(s) => Some((**s).clone()),
            _ => None,
        })
        .collect()
}

pub fn window_outcomes(effects: &[Effect]) -> Vec<WindowOutcome> {
    effects
        .iter()
        .filter_map(|e| match e {
            Effect::WindowOutcome(w) => Some(w.clone()),
            _ => None,
        })
        .collect()
}

pub fn aborts(effects: &[Effect]) -> Vec<ChildRef> {
    effects
        .iter()
        .filter_map(|e| match e {
            Effect::AbortWorker { child, .. } => Some(*child),
            _ => None,
        })
        .collect()
}

pub fn code(result: &Result<impl std::fmt::Debug, Refusal>) -> &'static str {
    match result {
        Ok(v) => panic!("expected a refusal, got {v:?}"),
        Err(e) => e.code(),
    }
}

// ---- specs ------------------------------------------------------------------------------

pub fn scout(assignment: &str) -> TaskSpec {
    TaskSpec::new(assignment, Role::Scout, "/work/repo")
}

pub fn writer(assignment: &str) -> TaskSpec {
    TaskSpec::new(assignment, Role::Implementation, "/work/repo")
}

/// A read-only general that may spawn scouts and use every coordination action.
pub fn coordinator_general(assignment: &str) -> TaskSpec {
    let mut spec = TaskSpec::new(assignment, Role::General, "/work/repo");
    spec.tools = BuiltinTool::ALL[..4].to_vec();
    spec.spawn = vec![Role::Scout, Role::Review];
    spec.coordination = all_actions();
    spec
}

/// A scout granted every coordination action.
pub fn talking_scout(assignment: &str) -> TaskSpec {
    let mut spec = scout(assignment);
    spec.coordination = all_actions();
    spec
}

pub fn all_actions() -> Vec<CoordinationAction> {
    vec![
        CoordinationAction::Message,
        CoordinationAction::Inbox,
        CoordinationAction::Wait,
    ]
}

pub fn with_limits(mut spec: TaskSpec, limits: LimitOverrides) -> TaskSpec {
    spec.limits = limits;
    spec
}

/// Feed `input` and require a refusal with `code` that left the coordinator exactly as it
/// was (structural equality and identical debug rendering), emitting only the reply.
pub fn assert_refused_unchanged(h: &mut Harness, label: &str, code: &str, input: Input) {
    let before = h.coord.clone();
    let before_debug = format!("{:?}", h.coord);
    let request = match &input {
        Input::Admit { request, .. }
        | Input::Stop { request, .. }
        | Input::StopMany { request, .. }
        | Input::Steer { request, .. }
        | Input::Message { request, .. }
        | Input::Inbox { request, .. }
        | Input::Wait { request, .. }
        | Input::Park { request, .. }
        | Input::Resume { request, .. }
        | Input::Followup { request, .. }
        | Input::Revive { request, .. }
        | Input::ParentToolStart { request, .. }
        | Input::ParentToolEnd { request, .. }
        | Input::Configure { request, .. }
        | Input::Shutdown { request } => *request,
        other => panic!("{label}: {other:?} is not a request"),
    };
    let effects = h.handle(input);
    match reply_to(&effects, request) {
        Some(Err(refusal)) => assert_eq!(refusal.code(), code, "{label}: {refusal}"),
        other => panic!("{label}: expected refusal {code}, got {other:?}"),
    }
    assert_eq!(
        effects.len(),
        1,
        "{label}: a refusal emits only its reply: {effects:?}"
    );
    assert!(
        h.coord == before,
        "{label}: the refusal changed the coordinator"
    );
    assert_eq!(
        format!("{:?}", h.coord),
        before_debug,
        "{label}: the refusal changed the coordinator's debug rendering"
    );
}

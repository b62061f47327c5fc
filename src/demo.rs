//! `slate demo`: a small fleet run through the real coordinator in virtual time, with
//! scripted workers. No network, no credentials, no processes; the same seed gives the same
//! run.
//!
//! The scenario shows FIFO scheduling with writer head-of-line blocking, nested delegation,
//! a steer with its receipt, a deadline pause and explicit resume, a request-limit
//! cancellation, a provider failure, and a followup that starts generation 2.

use std::collections::HashMap;

pub mod live;

use crate::core::{
    ChildRef, ChildSnapshot, CoordinationAction, Effect, Input, LimitOverrides, Millis, Party,
    Renewal, Reply, Role, Status, TaskSpec, WorkerStart,
};
use crate::policy::scheduling::SchedulingPolicy;
use crate::sim::Fleet;
use crate::worker::sim::ScriptBook;

/// One line of the timeline.
#[derive(Clone, Debug, PartialEq, serde::Serialize)]
#[serde(rename_all = "camelCase")]
pub struct TimelineEntry {
    /// Virtual milliseconds since the demo started.
    pub at: Millis,
    /// The identity the line is about, if any.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub child: Option<ChildRef>,
    pub event: String,
}

/// The whole run: timeline, final snapshots (every generation) and the policy used.
#[derive(Clone, Debug, serde::Serialize)]
#[serde(rename_all = "camelCase")]
pub struct DemoRun {
    pub root_id: uuid::Uuid,
    pub policy: SchedulingPolicy,
    pub timeline: Vec<TimelineEntry>,
    pub generations: Vec<ChildSnapshot>,
}

const WORKSPACE: &str = "/virtual/workspace";

/// The demo's worker scripts (`assets/demo/scripts.json`), chosen by assignment.
pub fn script_book() -> ScriptBook {
    ScriptBook::parse(include_str!("../assets/demo/scripts.json"))
        .unwrap_or_else(|e| unreachable!("the bundled demo scripts are valid JSON: {e}"))
}

fn root_batch() -> Vec<TaskSpec> {
    let mut review = TaskSpec::new(
        "Review the lifecycle tests for missing cases",
        Role::Review,
        WORKSPACE,
    );
    review.limits = LimitOverrides {
        requests: Some(3),
        ..LimitOverrides::default()
    };
    let mut general = TaskSpec::new(
        "Map the config loader (delegates two scouts)",
        Role::General,
        WORKSPACE,
    );
    // A read-only coordinator: nested scouts are allowed under it.
    general.tools.retain(|t| !t.is_mutating());
    general.spawn = vec![Role::Scout, Role::Review];
    general.coordination = vec![CoordinationAction::Message, CoordinationAction::Wait];
    let mut survey = TaskSpec::new("Survey the docs for stale flags", Role::Scout, WORKSPACE);
    survey.limits = LimitOverrides {
        deadline_ms: Some(1_500),
        ..LimitOverrides::default()
    };
    vec![
        general,
        TaskSpec::new(
            "Locate the startup code and list entry points",
            Role::Scout,
            WORKSPACE,
        ),
        review,
        TaskSpec::new(
            "Fix the off-by-one in the retry backoff",
            Role::Implementation,
            WORKSPACE,
        ),
        TaskSpec::new(
            "Add a regression test for the backoff fix",
            Role::Implementation,
            WORKSPACE,
        ),
        survey,
        TaskSpec::new(
            "Check the error messages of the CLI",
            Role::Review,
            WORKSPACE,
        ),
    ]
}

/// Positions of the root batch, by role in the story.
const GENERAL: usize = 0;
const SCOUT: usize = 1;
const FIX: usize = 3;
const SURVEY: usize = 5;

/// What the root does, and when (virtual ms).
enum Action {
    Admit,
    Delegate,
    Steer,
    Resume,
    Followup,
}

/// Run the demo scenario with ids drawn from `seed`.
pub fn run(seed: u64) -> DemoRun {
    let policy = SchedulingPolicy {
        concurrency: 4,
        ..SchedulingPolicy::default()
    };
    let book = script_book();
    let mut fleet = Fleet::new(policy, seed, move |start: &WorkerStart| {
        book.script_for(start)
    })
    .unwrap_or_else(|e| unreachable!("the demo's fixed policy is valid: {e}"));
    let mut demo = Demo {
        timeline: Vec::new(),
        status: HashMap::new(),
        admitted: Vec::new(),
        receipts: Vec::new(),
    };
    let mut plan = vec![
        (0, Action::Admit),
        (300, Action::Delegate),
        (350, Action::Steer),
        (1_450, Action::Delegate),
        (2_200, Action::Resume),
        (2_900, Action::Followup),
    ]
    .into_iter()
    .peekable();
    loop {
        let next_source = fleet.sources().into_iter().min();
        let next_action = plan.peek().map(|(at, _)| *at);
        let effects = match (next_source, next_action) {
            (Some((at, _)), Some(action_at)) if action_at <= at => {
                let (at, action) = plan.next().unwrap_or((action_at, Action::Admit));
                fleet.set_now(at);
                demo.act(&mut fleet, &action)
            }
            (None, Some(_)) => {
                let Some((at, action)) = plan.next() else {
                    break;
                };
                fleet.set_now(at);
                demo.act(&mut fleet, &action)
            }
            (Some((_, source)), _) => {
                if plan.peek().is_none()
                    && fleet.coord.stats().live_workers == 0
                    && fleet.coord.stats().queued == 0
                {
                    break;
                }
                fleet.deliver(source)
            }
            (None, None) => break,
        };
        demo.observe(&fleet, &effects);
    }
    let generations = fleet
        .coord
        .list()
        .iter()
        .flat_map(|s| fleet.coord.generations(s.id))
        .collect();
    DemoRun {
        root_id: fleet.coord.root_id(),
        policy,
        timeline: demo.timeline,
        generations,
    }
}

struct Demo {
    timeline: Vec<TimelineEntry>,
    status: HashMap<ChildRef, (Status, bool)>,
    admitted: Vec<ChildRef>,
    receipts: Vec<(
        crate::core::MessageId,
        Option<ChildRef>,
        crate::core::ReceiptStatus,
    )>,
}

impl Demo {
    fn note(&mut self, at: Millis, child: Option<ChildRef>, event: String) {
        self.timeline.push(TimelineEntry { at, child, event });
    }

    fn act<S: crate::sim::Scripts>(
        &mut self,
        fleet: &mut Fleet<S>,
        action: &Action,
    ) -> Vec<Effect> {
        let now = fleet.now();
        match action {
            Action::Admit => {
                self.note(
                    now,
                    None,
                    "root delegates a foreground batch of 7 (concurrency 4)".into(),
                );
                fleet
                    .request(|request| Input::Admit {
                        request,
                        actor: Party::Root,
                        tasks: root_batch(),
                        background: false,
                    })
                    .1
            }
            Action::Steer => {
                let Some(&target) = self.admitted.get(FIX) else {
                    return Vec::new();
                };
                self.note(
                    now,
                    Some(target),
                    "root steers: \"Keep the change minimal\"".into(),
                );
                fleet
                    .request(|request| Input::Steer {
                        request,
                        target,
                        text: "Keep the change minimal".into(),
                    })
                    .1
            }
            Action::Delegate => {
                let Some(&parent) = self.admitted.get(GENERAL) else {
                    return Vec::new();
                };
                self.note(
                    now,
                    Some(parent),
                    "delegates 2 nested scouts (must dispatch at once: no permit lending)".into(),
                );
                let scout = |a: &str| {
                    let mut t = TaskSpec::new(a, Role::Scout, WORKSPACE);
                    t.tools.truncate(2);
                    t
                };
                fleet
                    .request(|request| Input::Admit {
                        request,
                        actor: Party::Child(parent),
                        tasks: vec![
                            scout("Find where delegation.json is read"),
                            scout("Find where .pi/delegation.json is read"),
                        ],
                        background: false,
                    })
                    .1
            }
            Action::Resume => {
                let Some(&target) = self.admitted.get(SURVEY) else {
                    return Vec::new();
                };
                self.note(
                    now,
                    Some(target),
                    "root resumes the paused survey: \"Continue: list only the flags\"".into(),
                );
                fleet
                    .request(|request| Input::Resume {
                        request,
                        actor: Party::Root,
                        target,
                        assignment: "Continue: list only the flags".into(),
                    })
                    .1
            }
            Action::Followup => {
                let Some(&target) = self.admitted.get(SCOUT) else {
                    return Vec::new();
                };
                self.note(
                    now,
                    Some(target),
                    "root sends a followup to the idle scout: a new generation".into(),
                );
                fleet
                    .request(|request| Input::Followup {
                        request,
                        actor: Party::Root,
                        target,
                        renewal: Renewal::keep_grants("Also list the test entry points"),
                    })
                    .1
            }
        }
    }

    fn observe<S: crate::sim::Scripts>(&mut self, fleet: &Fleet<S>, effects: &[Effect]) {
        let now = fleet.now();
        for effect in effects {
            match effect {
                Effect::Reply {
                    result: Ok(Reply::Admitted { children, .. }),
                    ..
                } => {
                    for c in children {
                        if !self.admitted.contains(&c.child_ref())
                            && c.depth == 1
                            && c.generation == 1
                        {
                            self.admitted.push(c.child_ref());
                        }
                    }
                }
                Effect::Reply {
                    result: Ok(Reply::Message { message }),
                    ..
                } => {
                    self.note(
                        now,
                        message.recipient.child(),
                        format!(
                            "{} receipt: {}",
                            message.mode.as_str(),
                            receipt_word(message.status)
                        ),
                    );
                    self.receipts
                        .push((message.id, message.recipient.child(), message.status));
                }
                Effect::Reply {
                    result: Err(refusal),
                    ..
                } => {
                    self.note(
                        now,
                        None,
                        format!("refused [{}]: {refusal}", refusal.code()),
                    );
                }
                Effect::WindowOutcome(w) => {
                    let summary: Vec<String> =
                        w.outcomes.iter().map(|o| o.status.to_string()).collect();
                    self.note(
                        now,
                        None,
                        format!(
                            "window outcome for call {} ({:?}, {} items): {}",
                            w.call.0,
                            w.delivery,
                            w.outcomes.len(),
                            summary.join(", ")
                        ),
                    );
                }
                Effect::Changed(r) => self.status_change(fleet, now, *r),
                _ => {}
            }
        }
        // Receipts move with worker events: show each real state, never a claimed one.
        let mut moved = Vec::new();
        for (id, child, last) in &mut self.receipts {
            if let Some(m) = fleet.coord.receipt(*id)
                && m.status != *last
            {
                *last = m.status;
                moved.push((
                    *child,
                    format!("{} receipt: {}", m.mode.as_str(), receipt_word(m.status)),
                ));
            }
        }
        for (child, event) in moved {
            self.note(now, child, event);
        }
    }

    fn status_change<S: crate::sim::Scripts>(
        &mut self,
        fleet: &Fleet<S>,
        now: Millis,
        r: ChildRef,
    ) {
        let Some(s) = fleet.coord.snapshot(r) else {
            return;
        };
        let key = (s.status, s.writer_lease);
        if self.status.get(&r) == Some(&key) {
            return;
        }
        self.status.insert(r, key);
        let event = match s.status {
            Status::Setup if s.writer_lease => "setup — holds the writer lease".to_owned(),
            Status::Queued if s.window.number > 1 => {
                format!("queued for window {}", s.window.number)
            }
            Status::Queued if s.generation > 1 => format!(
                "generation {} queued (directory {})",
                s.generation,
                r.directory_name()
            ),
            Status::Paused => format!(
                "paused ({}) — conversation retained: {}",
                s.pause_reason.map_or("deadline", |p| match p {
                    crate::core::PauseReason::Deadline => "deadline",
                    crate::core::PauseReason::AncestorDeadline => "ancestor deadline",
                }),
                s.retained_context
            ),
            Status::Pausing => "pausing: deadline reached, draining".to_owned(),
            Status::Draining => "draining".to_owned(),
            Status::Settled => "settled".to_owned(),
            Status::Failed => format!("failed: {}", s.error.as_deref().unwrap_or("unknown error")),
            Status::Cancelled => format!(
                "cancelled{}: {}",
                s.limit_reason.map_or(String::new(), |l| match l {
                    crate::core::LimitReason::Requests => " (limitReason requests)".to_owned(),
                    crate::core::LimitReason::Tools => " (limitReason tools)".to_owned(),
                }),
                s.error.as_deref().unwrap_or("")
            ),
            other => other.to_string(),
        };
        self.note(now, Some(r), event);
    }
}

fn receipt_word(status: crate::core::ReceiptStatus) -> &'static str {
    match status {
        crate::core::ReceiptStatus::Accepted => "accepted",
        crate::core::ReceiptStatus::Queued => "queued",
        crate::core::ReceiptStatus::Handled => "handled",
        crate::core::ReceiptStatus::Delivered => "delivered",
        crate::core::ReceiptStatus::NotRunning => "not-running",
        crate::core::ReceiptStatus::Error => "error",
    }
}

//! Running one tool call: the input read strictly (Slate's own parsers and the protocol's
//! types, never a host's coercion), mapped onto control requests made as the caller, and
//! answered as `{text, details, isError}`.

use std::path::PathBuf;
use std::sync::{Mutex, PoisonError};

use serde::de::DeserializeOwned;
use serde_json::{Map, Value, json};
use tokio::sync::{broadcast, oneshot};

use super::defs::{ACTIONS, DELEGATE_COORDINATE, DELEGATE_TASK, SUBAGENT, SUBMIT_RESULT};
use super::{
    CallToolParams, Caller, ToolAnswer, ToolOutcome, ToolRow, ToolUpdate, UPDATE_EVERY, text,
    tools_for,
};
use crate::control::methods::{
    self, DelegateParams, DelegateResult, Event, NoParams, Notification, Request, StatusParams,
    StatusResult, SubmitParams, SubmitResult, Target, TargetParams,
};
use crate::control::protocol::{ControlError, Payload};
use crate::control::{BoxFuture, Notices};
use crate::core::{ChildSnapshot, Presence, Reply, SubmitStatus};
use crate::policy::Problems;
use crate::policy::request::{SubagentRequest, parse_subagent};
use crate::text::SafeText;

/// What the layer needs of the coordinator, as one caller.
pub trait Backend: Send + Sync {
    /// Which tools the caller has.
    fn caller(&self) -> BoxFuture<'_, Result<Caller, ControlError>>;
    /// One request, made as the caller (with every refusal the socket would give it).
    fn request(&self, request: Request) -> BoxFuture<'_, Result<Payload, ControlError>>;
    /// `delegate` as the caller, telling `watch` of the admission as soon as there is one.
    fn delegate<'a>(
        &'a self,
        params: DelegateParams,
        watch: &'a Watch,
    ) -> BoxFuture<'a, Result<DelegateResult, ControlError>>;
    /// The directory artifact paths are shown relative to.
    fn cwd(&self) -> PathBuf;
    /// Where artifact paths are shown from: the project, and `~/` for the home directory
    /// (this process's `HOME`: the coordinator runs as the user whose session it serves).
    fn places(&self) -> text::Places {
        text::Places::new(self.cwd(), std::env::var_os("HOME").map(PathBuf::from))
    }
}

/// Where a call's admission goes, once: to the task that follows its window.
#[derive(Default)]
pub struct Watch {
    admitted: Mutex<Option<oneshot::Sender<Admission>>>,
}

/// A window's call number and its admitted children.
type Admission = (u64, Vec<ChildSnapshot>);

impl Watch {
    fn new(tx: oneshot::Sender<Admission>) -> Self {
        Self {
            admitted: Mutex::new(Some(tx)),
        }
    }

    /// Note `reply` if it is an admission (the first one counts).
    pub fn admitted(&self, reply: &Reply) {
        if let Reply::Admitted { call, children } = reply
            && let Some(tx) = self
                .admitted
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .take()
        {
            let _ = tx.send((call.0, children.clone()));
        }
    }
}

/// `callTool` on a connection: [`call`], with the window it starts followed (`toolUpdate`
/// while it runs; for a background call, `toolOutcome` when it drains) on `notices`.
/// `events` must be subscribed before the call, so no outcome is missed.
pub async fn serve_call(
    backend: &dyn Backend,
    params: CallToolParams,
    events: broadcast::Receiver<Event>,
    notices: Notices,
) -> Result<ToolAnswer, ControlError> {
    let (tx, rx) = oneshot::channel();
    let watch = Watch::new(tx);
    let follower = tokio::spawn(follow(
        rx,
        events,
        notices,
        params.call_id.clone(),
        backend.places(),
    ));
    let answer = call(backend, &params, &watch).await;
    if !matches!(
        &answer,
        Ok(ToolAnswer {
            pending: Some(_),
            ..
        })
    ) {
        follower.abort();
    }
    answer
}

/// Sends `toolUpdate`s for the admitted window's children, and `toolOutcome` when it drains
/// (only a background window's drain is an event), until the connection closes.
async fn follow(
    admitted: oneshot::Receiver<Admission>,
    mut events: broadcast::Receiver<Event>,
    notices: Notices,
    call_id: Option<String>,
    places: text::Places,
) {
    let Ok((call, mut children)) = admitted.await else {
        return;
    };
    let rows = |children: &[ChildSnapshot]| -> Vec<ToolRow> {
        let now = crate::runtime::now_ms();
        children
            .iter()
            .map(|c| text::row(c, &places, now))
            .collect()
    };
    let update = |children: &[ChildSnapshot]| {
        let rows = rows(children);
        Notification::ToolUpdate(ToolUpdate {
            call_id: call_id.clone(),
            call,
            text: text::rows_text(&rows),
            rows,
        })
    };
    let _ = notices.send(&update(&children), true);
    let mut next = tokio::time::Instant::now() + UPDATE_EVERY;
    let mut dirty = false;
    loop {
        tokio::select! {
            () = notices.closed() => return,
            () = tokio::time::sleep_until(next), if dirty => {
                dirty = false;
                next = tokio::time::Instant::now() + UPDATE_EVERY;
                let _ = notices.send(&update(&children), true);
            }
            event = events.recv() => match event {
                Ok(Event::Registry { event }) => {
                    let child = event.child;
                    if let Some(slot) = children
                        .iter_mut()
                        .find(|c| c.id == child.id && c.generation == child.generation)
                    {
                        *slot = child;
                        dirty = true;
                    }
                }
                Ok(Event::Outcome { outcome, preview }) if outcome.call.0 == call => {
                    let rows = rows(&outcome.outcomes);
                    let notification = Notification::ToolOutcome(ToolOutcome {
                        call_id: call_id.clone(),
                        call,
                        text: text::outcome(call, &preview),
                        details: to_value(&outcome),
                        rows,
                    });
                    let _ = notices.send(&notification, false);
                    return;
                }
                Ok(Event::ShutdownComplete) | Err(broadcast::error::RecvError::Closed) => return,
                Ok(_) | Err(broadcast::error::RecvError::Lagged(_)) => {}
            },
        }
    }
}

/// `unknown-tool`: not a tool of this caller.
pub const UNKNOWN_TOOL: &str = "unknown-tool";

/// Runs `params.tool` for the backend's caller. A refusal of the work itself (a bad input,
/// a policy or core refusal) is an `isError` answer in Slate's words; an unknown tool is an
/// `unknown-tool` error.
pub async fn call(
    backend: &dyn Backend,
    params: &CallToolParams,
    watch: &Watch,
) -> Result<ToolAnswer, ControlError> {
    let caller = backend.caller().await?;
    let tools = tools_for(caller);
    let tool = params.tool.as_str();
    if !tools.iter().any(|t| t.name == tool) {
        let names: Vec<&str> = tools.iter().map(|t| t.name.as_str()).collect();
        return Err(ControlError::new(
            UNKNOWN_TOOL,
            format!(
                "callTool: {} is not a tool of this caller; its tools: {}",
                crate::json::to_string(&SafeText::line(tool).into_string()).unwrap_or_default(),
                if names.is_empty() {
                    "none".to_owned()
                } else {
                    names.join(", ")
                }
            ),
        ));
    }
    let Value::Object(input) = &params.input else {
        return Ok(failure(ControlError::invalid_request(&format!(
            "{tool}: the input must be a JSON object, not {}",
            crate::json::kind_of(&params.input)
        ))));
    };
    let cx = Cx {
        backend,
        watch,
        places: backend.places(),
    };
    let answer = match tool {
        DELEGATE_TASK => cx.delegate(input, params.cancel_on_close, false).await,
        SUBAGENT => cx.subagent(input, params.cancel_on_close).await,
        DELEGATE_COORDINATE => cx.coordinate(input).await,
        SUBMIT_RESULT => cx.submit(input).await,
        _ => unreachable_tool(tool),
    };
    Ok(answer.unwrap_or_else(failure))
}

fn unreachable_tool(tool: &str) -> Result<ToolAnswer, ControlError> {
    Err(ControlError::internal(&format!(
        "{tool}: listed but not implemented"
    )))
}

/// A refused call, as the model reads it.
fn failure(error: ControlError) -> ToolAnswer {
    let text = SafeText::lines(&error.message).into_string();
    let mut details = Map::new();
    details.insert(
        "error".to_owned(),
        serde_json::to_value(error).unwrap_or(Value::Null),
    );
    ToolAnswer {
        text,
        details: Value::Object(details),
        is_error: true,
        pending: None,
    }
}

fn to_value<T: serde::Serialize>(value: &T) -> Value {
    serde_json::to_value(value).unwrap_or(Value::Null)
}

fn pretty<T: serde::Serialize + ?Sized>(value: &T) -> String {
    crate::json::to_string_pretty(value).unwrap_or_default()
}

/// A payload read as `T`.
fn read<T: DeserializeOwned>(payload: Payload) -> Result<T, ControlError> {
    let parsed = match payload {
        Payload::Value(v) => serde_json::from_value(v),
        Payload::Raw(raw) => serde_json::from_str(raw.get()),
        Payload::Shared(raw) => serde_json::from_str(raw.get()),
    };
    parsed.map_err(|e| ControlError::internal(&format!("an answer Slate cannot read: {e}")))
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

struct Cx<'a> {
    backend: &'a dyn Backend,
    watch: &'a Watch,
    places: text::Places,
}

impl Cx<'_> {
    fn rows(&self, children: &[ChildSnapshot]) -> Vec<ToolRow> {
        let now = crate::runtime::now_ms();
        children
            .iter()
            .map(|c| text::row(c, &self.places, now))
            .collect()
    }

    async fn request<T: DeserializeOwned>(&self, request: Request) -> Result<T, ControlError> {
        read(self.backend.request(request).await?)
    }

    /// An admission: the few lines, the snapshots in `details`, and the window pending.
    fn admitted(&self, call: u64, children: &[ChildSnapshot], compat: bool) -> ToolAnswer {
        let rows = self.rows(children);
        let wake = if compat {
            text::FOLLOW_UP
        } else {
            text::NOTIFY
        };
        let shown: Vec<Value> = children
            .iter()
            .map(|c| if compat { compat_child(c) } else { to_value(c) })
            .collect();
        ToolAnswer {
            text: text::accepted(call, &rows, wake),
            details: json!({"call": call, "rows": rows, "children": shown}),
            is_error: false,
            pending: Some(call),
        }
    }

    /// `delegate_task`, or a `subagent` launch (`compat`): the input as written.
    async fn delegate(
        &self,
        input: &Map<String, Value>,
        cancel_on_close: bool,
        compat: bool,
    ) -> Result<ToolAnswer, ControlError> {
        let params = DelegateParams {
            request: Value::Object(input.clone()),
            background: None,
            cancel_on_close,
        };
        match self.backend.delegate(params, self.watch).await? {
            DelegateResult::Foreground(fg) => {
                let call = fg.outcome.call.0;
                let rows = self.rows(&fg.outcome.outcomes);
                Ok(ToolAnswer {
                    text: SafeText::lines(&fg.preview).into_string(),
                    details: json!({"call": call, "rows": rows, "children": fg.outcome.outcomes}),
                    is_error: false,
                    pending: None,
                })
            }
            DelegateResult::Background(Reply::Admitted { call, children }) => {
                Ok(self.admitted(call.0, &children, compat))
            }
            DelegateResult::Background(other) => Err(ControlError::internal(&format!(
                "delegate: Slate answered neither an admission nor a window outcome: {}",
                pretty(&other)
            ))),
        }
    }

    /// A reply of a control action: an admission pends; a snapshot is its line; the rest
    /// is JSON.
    fn reply(&self, reply: &Reply, compat: bool) -> ToolAnswer {
        match reply {
            Reply::Admitted { call, children } => {
                self.watch.admitted(reply);
                self.admitted(call.0, children, compat)
            }
            Reply::Snapshot { child } => {
                let row = text::row(child, &self.places, crate::runtime::now_ms());
                ToolAnswer {
                    text: format!("{}\n{}", row.line, row.target),
                    details: json!({"rows": [row], "children": [child]}),
                    is_error: false,
                    pending: None,
                }
            }
            other => ToolAnswer {
                text: pretty(other),
                details: to_value(other),
                is_error: false,
                pending: None,
            },
        }
    }

    /// `delegate_coordinate`: `action` names the method; the other members are its params,
    /// read by the protocol's own types (a wrong member is refused naming it).
    async fn coordinate(&self, input: &Map<String, Value>) -> Result<ToolAnswer, ControlError> {
        let mut rest = input.clone();
        let action = rest.remove("action");
        let rest = Value::Object(rest);
        let Some(Value::String(action)) = action else {
            return Err(ControlError::invalid_request(&format!(
                "delegate_coordinate: action: required, one of {}",
                ACTIONS.join(", ")
            )));
        };
        let prefix = |e: ControlError| {
            ControlError::new(
                e.code.clone(),
                format!("delegate_coordinate {action}: {}", e.message),
            )
        };
        macro_rules! params {
            ($t:ty) => {
                methods::decode::<$t>(rest.clone()).map_err(&prefix)?
            };
        }
        let reply: Reply = match action.as_str() {
            "status" => return self.status(params!(StatusParams)).await,
            "stop" => self.request(Request::Stop(params!(TargetParams))).await?,
            "park" => self.request(Request::Park(params!(TargetParams))).await?,
            "resume" => {
                self.request(Request::Resume(params!(methods::ResumeParams)))
                    .await?
            }
            "followup" => {
                self.request(Request::Followup(params!(methods::RenewParams)))
                    .await?
            }
            "revive" => {
                self.request(Request::Revive(params!(methods::RenewParams)))
                    .await?
            }
            "message" => {
                self.request(Request::Message(params!(methods::MessageParams)))
                    .await?
            }
            "inbox" => self.request(Request::Inbox(params!(NoParams))).await?,
            "wait" => {
                self.request(Request::Wait(params!(methods::WaitParams)))
                    .await?
            }
            other => {
                return Err(ControlError::invalid_request(&format!(
                    "delegate_coordinate: unknown action {}; expected one of {}",
                    crate::json::to_string(other).unwrap_or_default(),
                    ACTIONS.join(", ")
                )));
            }
        };
        Ok(self.reply(&reply, false))
    }

    /// `status`: one generation as its preview; the fleet (any form asked) as the table
    /// `slate status` prints, the asked form in `details`.
    async fn status(&self, p: StatusParams) -> Result<ToolAnswer, ControlError> {
        if p.target.is_some() {
            let result: StatusResult = self.request(Request::Status(p)).await?;
            let StatusResult::Generation(view) = &result else {
                return Ok(Self::reply_json(&result));
            };
            let row = text::row(&view.snapshot, &self.places, crate::runtime::now_ms());
            let preview = crate::policy::preview::preview(std::slice::from_ref(&view.snapshot));
            return Ok(ToolAnswer {
                text: format!("{}\n{}", row.line, SafeText::lines(&preview).as_str()),
                details: to_value(&result),
                is_error: false,
                pending: None,
            });
        }
        let table: Value = self
            .request(Request::Status(StatusParams {
                text: true,
                ..StatusParams::default()
            }))
            .await?;
        let details: Value = self.request(Request::Status(p)).await?;
        Ok(ToolAnswer {
            text: table
                .get("text")
                .and_then(Value::as_str)
                .unwrap_or_default()
                .trim_end()
                .to_owned(),
            details,
            is_error: false,
            pending: None,
        })
    }

    fn reply_json<T: serde::Serialize>(value: &T) -> ToolAnswer {
        ToolAnswer {
            text: pretty(value),
            details: to_value(value),
            is_error: false,
            pending: None,
        }
    }

    /// `subagent`: a launch, or an action by exact id (read by Slate's compatibility parser).
    async fn subagent(
        &self,
        input: &Map<String, Value>,
        cancel_on_close: bool,
    ) -> Result<ToolAnswer, ControlError> {
        if !input.contains_key("action") {
            // Read as the compatibility shape first, so a malformed launch (even `{}`) is
            // refused naming that shape's fields (`agent`, `task`), not `delegate_task`'s.
            parse_subagent(&Value::Object(input.clone()))
                .map_err(|problems| ControlError::from(Problems(problems)))?;
            return self.delegate(input, cancel_on_close, true).await;
        }
        let request = parse_subagent(&Value::Object(input.clone()))
            .map_err(|problems| ControlError::from(Problems(problems)))?;
        let reply: Value = match request {
            SubagentRequest::Launch(_) => {
                return Err(ControlError::invalid_request(
                    "subagent: an action request cannot also be a launch",
                ));
            }
            SubagentRequest::Agents => self.request(Request::Agents(NoParams {})).await?,
            SubagentRequest::Status(id) => {
                return self
                    .status(StatusParams {
                        target: Some(Target(id)),
                        ..StatusParams::default()
                    })
                    .await;
            }
            SubagentRequest::Stop(id) => {
                let reply: Reply = self
                    .request(Request::Stop(TargetParams { target: Target(id) }))
                    .await?;
                return Ok(self.reply(&reply, true));
            }
            SubagentRequest::Steer { id, message } => {
                self.request(Request::Steer(methods::SteerParams {
                    target: Target(id),
                    text: message,
                }))
                .await?
            }
            SubagentRequest::Resume { id, message } => {
                let reply = self.renew(Target(id), message).await?;
                return Ok(self.reply(&reply, true));
            }
        };
        Ok(Self::reply_json(&reply))
    }

    /// `subagent resume`: continue the generation by its presence (paused → `resume`, idle →
    /// `followup`, parked → `revive`; anything else is `resume`, which Slate refuses naming
    /// it).
    async fn renew(&self, target: Target, assignment: String) -> Result<Reply, ControlError> {
        let status: StatusResult = self
            .request(Request::Status(StatusParams {
                target: Some(target),
                ..StatusParams::default()
            }))
            .await?;
        let presence = match &status {
            StatusResult::Generation(view) => view
                .agents
                .iter()
                .find(|a| a.id == view.snapshot.id)
                .map(|a| a.presence),
            _ => None,
        };
        let renew = methods::RenewParams {
            target,
            assignment: assignment.clone(),
            result_schema: None,
        };
        let request = match presence {
            Some(Presence::Idle) => Request::Followup(renew),
            Some(Presence::Parked) => Request::Revive(renew),
            _ => Request::Resume(methods::ResumeParams { target, assignment }),
        };
        self.request(request).await
    }

    /// `submit_result`: exactly `{value}`; anything but `submitted` is an error answer, so
    /// the model corrects it (invalid) or stops (duplicate).
    async fn submit(&self, input: &Map<String, Value>) -> Result<ToolAnswer, ControlError> {
        let params: SubmitParams = methods::decode(Value::Object(input.clone())).map_err(|e| {
            ControlError::new(e.code.clone(), format!("submit_result: {}", e.message))
        })?;
        let reply: SubmitResult = self.request(Request::Submit(params)).await?;
        Ok(ToolAnswer {
            text: SafeText::lines(&reply.message).into_string(),
            is_error: reply.status != SubmitStatus::Submitted,
            details: to_value(&reply),
            pending: None,
        })
    }
}

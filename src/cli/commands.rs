//! The fleet commands that map one-to-one onto control methods.

use std::io::IsTerminal as _;
use std::time::Duration;

use serde_json::{Value, json};

use crate::cli::fleet::{block_on, read_json, simple, snapshot_line, target, wait_all};
use crate::cli::watch::{End, Quit, Widget};
use crate::cli::{Command, Error, ExitCode, Printer};
use crate::control::Method;
use crate::control::methods::{
    DelegateParams, DelegateResult, MessageParams, MessageRef, NoParams, RenewParams, ResumeParams,
    SteerParams, Target, TargetParams, TranscriptParams, WaitParams, method,
};
use crate::core::{MessageMode, Reply, Status, WaitResult};
use crate::text::SafeText;

/// `UUID@GEN TEXT` or `UUID GEN TEXT` (clap gives two or three words): the target's words
/// and the text.
fn target_and_text(mut words: Vec<String>) -> Result<(Vec<String>, String), Error> {
    match words.pop() {
        Some(text) if !words.is_empty() => Ok((words, text)),
        _ => Err(Error::Usage(
            "give the generation and the text: `UUID@GEN TEXT` or `UUID GEN TEXT`".to_owned(),
        )),
    }
}

fn parse_target(words: &[String]) -> Result<Target, Error> {
    target(words).map(Target).map_err(Error::Usage)
}

/// A core reply as text lines.
#[allow(clippy::format_collect, reason = "a few lines of output")]
fn snapshot_reply(reply: &Reply) -> String {
    let lines = |children: &[crate::core::ChildSnapshot]| -> String {
        children.iter().map(|s| snapshot_line(s) + "\n").collect()
    };
    match reply {
        Reply::Snapshot { child } => format!("{}\n", snapshot_line(child)),
        Reply::Stopped { children } | Reply::Admitted { children, .. } => lines(children),
        Reply::Message { message } => format!(
            "message {} {}: {}\n",
            message.id,
            message.mode.as_str(),
            wire_name(&message.status)
        ),
        Reply::Inbox { messages } if messages.is_empty() => "(empty)\n".to_owned(),
        Reply::Inbox { messages } => messages
            .iter()
            .map(|m| format!("{} from {}: {}\n", m.id, m.sender, SafeText::line(&m.text)))
            .collect(),
        Reply::Wait { result } => format!("{}\n", SafeText::line(&compact(result))),
        Reply::Status { view } => crate::cli::fleet::status_view(view),
        Reply::Guard { allow, reason } => match reason {
            Some(reason) => format!("allow {allow}: {}\n", SafeText::line(reason)),
            None => format!("allow {allow}\n"),
        },
        Reply::Submit { message, .. } => format!("{}\n", SafeText::lines(message)),
        Reply::Released { released } => format!("released {released}\n"),
        Reply::Delivered { generations } => format!("delivered {generations}\n"),
        Reply::Ok => "ok\n".to_owned(),
    }
}

/// `slate stop`'s answer: one short sentence naming the generation by role and handle, and
/// what the stop did to it (it fits an 80-column pi, where `/subagent-stop` shows it; the
/// table row is `slate status TARGET`'s).
fn stop_answer(reply: &Reply) -> String {
    let Reply::Snapshot { child } = reply else {
        return snapshot_reply(reply);
    };
    let who = format!(
        "{} {}",
        child.profile.as_str(),
        crate::core::ChildRef::new(child.id, child.generation).handle()
    );
    match child.status {
        Status::Cancelled => format!("Stopped {who}: cancelled.\n"),
        Status::Draining => {
            format!("Stopping {who}: it drains, then ends cancelled.\n")
        }
        Status::Settled | Status::Failed => format!(
            "{who} had already ended ({}); nothing of it runs now.\n",
            child.status.as_str()
        ),
        Status::Queued | Status::Setup | Status::Running | Status::Pausing | Status::Paused => {
            format!("Stop asked for {who}; it is {}.\n", child.status.as_str())
        }
    }
}

fn compact<T: serde::Serialize>(value: &T) -> String {
    crate::json::to_string(value).unwrap_or_default()
}

fn wire_name<T: serde::Serialize>(value: &T) -> String {
    compact(value).trim_matches('"').to_owned()
}

/// A method on one target: `params(target)` builds its params.
fn targeted<M: Method<Result = Reply>>(
    printer: &Printer,
    words: &[String],
    parent: Option<String>,
    params: impl FnOnce(Target) -> M::Params,
) -> Result<ExitCode, Error> {
    let t = parse_target(words)?;
    block_on(simple::<M>(printer, parent, params(t), snapshot_reply))
}

#[allow(
    clippy::too_many_lines,
    clippy::format_collect,
    reason = "one arm per command"
)]
pub fn run(printer: &Printer, command: Command) -> Result<ExitCode, Error> {
    let usage = |e: String| Err(Error::Usage(e));
    match command {
        Command::Stop { target, select } => {
            let t = parse_target(&target)?;
            block_on(simple::<method::Stop>(
                printer,
                select.parent,
                TargetParams { target: t },
                stop_answer,
            ))
        }
        Command::Park { target, select } => {
            targeted::<method::Park>(printer, &target, select.parent, |target| TargetParams {
                target,
            })
        }
        Command::Transcript { target, select } => {
            let t = parse_target(&target)?;
            block_on(simple::<method::Transcript>(
                printer,
                select.parent,
                TranscriptParams {
                    target: t,
                    after: None,
                },
                |v| {
                    // pi's message objects: their shape is pi's, read leniently.
                    v.messages
                        .iter()
                        .map(|m| {
                            let role = m["role"].as_str().unwrap_or("?");
                            let text: String = match &m["content"] {
                                Value::String(s) => s.clone(),
                                Value::Array(blocks) => blocks
                                    .iter()
                                    .filter_map(|b| b["text"].as_str())
                                    .collect::<Vec<_>>()
                                    .join(""),
                                _ => String::new(),
                            };
                            format!("[{role}] {}\n", SafeText::lines(&text))
                        })
                        .collect()
                },
            ))
        }
        Command::Steer { words, select } => {
            let (target, text) = target_and_text(words)?;
            targeted::<method::Steer>(printer, &target, select.parent, |target| SteerParams {
                target,
                text,
            })
        }
        Command::Message {
            mut words,
            mode,
            select,
        } => {
            let text = words.pop().unwrap_or_default();
            let target = if words.is_empty() {
                None
            } else {
                Some(parse_target(&words)?)
            };
            let mode = match mode.as_str() {
                "steer" => MessageMode::Steer,
                "followUp" => MessageMode::FollowUp,
                _ => MessageMode::Inbox,
            };
            let params = MessageParams { target, text, mode };
            block_on(simple::<method::Message>(
                printer,
                select.parent,
                params,
                snapshot_reply,
            ))
        }
        Command::Inbox { select } => block_on(simple::<method::Inbox>(
            printer,
            select.parent,
            NoParams {},
            snapshot_reply,
        )),
        Command::Resume {
            mut words,
            model,
            effort,
            session,
            from_pi,
            select,
        } => {
            if model.is_some() || effort.is_some() || session.is_some() || from_pi {
                return usage(
                    "--model, --effort, --session and --from-pi belong to the session form of \
                     `slate resume` (no target); a generation resumes with `slate resume \
                     UUID@GEN TEXT`"
                        .to_owned(),
                );
            }
            let Some(text) = words.pop().filter(|_| !words.is_empty()) else {
                return usage(
                    "give the generation and the continuation: `slate resume UUID@GEN TEXT`"
                        .to_owned(),
                );
            };
            targeted::<method::Resume>(printer, &words, select.parent, |target| ResumeParams {
                target,
                assignment: text,
            })
        }
        Command::Followup { words, select } => {
            let (target, text) = target_and_text(words)?;
            targeted::<method::Followup>(printer, &target, select.parent, |target| RenewParams {
                target,
                assignment: text,
                result_schema: None,
            })
        }
        Command::Revive { words, select } => {
            let (target, text) = target_and_text(words)?;
            targeted::<method::Revive>(printer, &target, select.parent, |target| RenewParams {
                target,
                assignment: text,
                result_schema: None,
            })
        }
        Command::Wait {
            target,
            message,
            all,
            timeout,
            select,
        } => {
            if all {
                return block_on(wait_all(
                    printer,
                    select.parent,
                    Duration::from_millis(timeout),
                ));
            }
            let target = match target {
                None => None,
                Some(t) => Some(parse_target(&[t])?),
            };
            let message_id = match message {
                None => None,
                Some(m) => match crate::core::ids::parse_full_uuid(&m) {
                    Ok(u) => Some(MessageRef(crate::core::MessageId(u))),
                    Err(e) => return usage(format!("--message {m:?}: {e}")),
                },
            };
            let params = WaitParams {
                timeout_ms: timeout,
                target,
                message_id,
            };
            // A wait that timed out prints its answer and exits 1 (docs/cli.md).
            block_on(async {
                let client = crate::cli::fleet::connect(select.parent).await?;
                let reply = client.request::<method::Wait>(&params).await?;
                if printer.json() {
                    printer.value(&reply)?;
                } else {
                    printer.out(&snapshot_reply(&reply))?;
                }
                Ok(match reply {
                    Reply::Wait {
                        result: WaitResult::Timeout,
                    } => ExitCode::Refused,
                    _ => ExitCode::Ok,
                })
            })
        }
        Command::Delegate {
            assignment,
            profile,
            model,
            cwd,
            limits,
            schema,
            task_file,
            file,
            background,
            select,
        } => {
            let request = if let Some(file) = file {
                match read_json(&file) {
                    Ok(v) => v,
                    Err(e) => return usage(e),
                }
            } else {
                let mut task = json!({"profile": profile});
                match (assignment, task_file) {
                    (Some(a), None) => task["assignment"] = json!(a),
                    (None, Some(f)) => task["taskFile"] = json!(f),
                    _ => {
                        return usage(
                            "give exactly one of an assignment, --task-file or --file".to_owned(),
                        );
                    }
                }
                if let Some(m) = model {
                    task["model"] = json!(m);
                }
                if let Some(c) = cwd {
                    task["cwd"] = json!(c);
                }
                if let Some(l) = limits {
                    match crate::json::strict::from_str(&l) {
                        Ok(v) => task["limits"] = v,
                        Err(e) => return usage(format!("--limits: invalid JSON: {e}")),
                    }
                }
                if let Some(s) = schema {
                    match read_json(&s) {
                        Ok(v) => task["resultSchema"] = v,
                        Err(e) => return usage(format!("--schema: {e}")),
                    }
                }
                task
            };
            block_on(delegate(printer, select.parent, request, background))
        }
        Command::Demo { .. }
        | Command::Completions { .. }
        | Command::Hub { .. }
        | Command::Man { .. }
        | Command::Effective { .. }
        | Command::Profiles { .. }
        | Command::Run { .. }
        | Command::Serve { .. }
        | Command::Mcp { .. }
        | Command::Status { .. }
        | Command::Watch { .. }
        | Command::Pi { .. }
        | Command::Handoff { .. } => {
            usage("internal: command routed to the wrong handler".to_owned())
        }
    }
}

async fn delegate(
    printer: &Printer,
    parent: Option<String>,
    body: Value,
    background: bool,
) -> Result<ExitCode, Error> {
    let client = crate::cli::fleet::connect(parent).await?;
    let params = DelegateParams {
        request: body,
        background: Some(background),
        cancel_on_close: false,
    };
    // In a terminal the fleet widget shows the window draining; the printed outcome after
    // it is the same as without a terminal.
    let widget = !background && !printer.json() && std::io::stdout().is_terminal();
    let result = if widget {
        delegate_with_widget(&client, &params).await?
    } else {
        client.request::<method::Delegate>(&params).await?
    };
    if printer.json() {
        printer.value(&result)?;
    }
    match result {
        DelegateResult::Background(reply) => {
            if !printer.json() {
                printer.out(&snapshot_reply(&reply))?;
            }
            Ok(ExitCode::Ok)
        }
        DelegateResult::Foreground(fg) => {
            let outcomes = &fg.outcome.outcomes;
            if !printer.json() {
                printer.out(
                    &outcomes
                        .iter()
                        .map(|s| snapshot_line(s) + "\n")
                        .collect::<String>(),
                )?;
            }
            if outcomes.iter().all(|s| s.status == Status::Settled) {
                Ok(ExitCode::Ok)
            } else {
                Ok(ExitCode::Refused)
            }
        }
    }
}

/// The foreground call with the fleet widget drawn until it returns. Without a usable
/// terminal or subscription the call simply runs without the widget. Ctrl+C detaches:
/// the admitted work stays with the coordinator.
async fn delegate_with_widget(
    client: &crate::control::Client,
    params: &DelegateParams,
) -> Result<DelegateResult, Error> {
    let Ok(mut widget) = Widget::attach(client).await else {
        return Ok(client.request::<method::Delegate>(params).await?);
    };
    let end = widget
        .run_until(
            client,
            client.request::<method::Delegate>(params),
            Quit::Interrupt,
        )
        .await;
    // Restore the terminal before anything is printed.
    drop(widget);
    match end {
        End::Done(result) => Ok(result?),
        End::Quit => Err(Error::Failed(
            "detached from the widget; the admitted work stays with the coordinator \
             (follow it with `slate watch`, `slate status` or `slate wait --all`)"
                .to_owned(),
        )),
        End::Closed => Err(Error::NoCoordinator(
            "the coordinator went away before the outcome arrived".to_owned(),
        )),
        End::Failed(message) => Err(Error::Environment(message)),
    }
}

//! The fleet commands that map one-to-one onto control methods.

use std::io::IsTerminal as _;
use std::time::Duration;

use serde_json::{Value, json};

use crate::cli::fleet::{block_on, read_json, simple, snapshot_line, target, wait_all};
use crate::cli::watch::{End, Quit, Widget};
use crate::cli::{Command, ExitCode, Printer};
use crate::text::SafeText;

fn parse_target(printer: &Printer, words: &[String]) -> Option<String> {
    match target(words) {
        Ok(r) => Some(r.to_string()),
        Err(e) => {
            printer.error(&e);
            None
        }
    }
}

#[allow(clippy::format_collect, reason = "a few lines of output")]
fn snapshot_reply(v: &Value) -> String {
    match v.get("kind").and_then(Value::as_str) {
        Some("snapshot") => format!("{}\n", snapshot_line(&v["child"])),
        Some("stopped") => v["children"].as_array().map_or(String::new(), |c| {
            c.iter().map(|s| snapshot_line(s) + "\n").collect()
        }),
        Some("admitted") => v["children"].as_array().map_or(String::new(), |c| {
            c.iter().map(|s| snapshot_line(s) + "\n").collect()
        }),
        Some("message") => format!(
            "message {} {}: {}\n",
            v["message"]["id"].as_str().unwrap_or(""),
            v["message"]["mode"].as_str().unwrap_or(""),
            v["message"]["status"].as_str().unwrap_or("")
        ),
        Some("inbox") => v["messages"]
            .as_array()
            .map_or("(empty)\n".to_owned(), |m| {
                if m.is_empty() {
                    "(empty)\n".to_owned()
                } else {
                    m.iter()
                        .map(|m| {
                            format!(
                                "{} from {}: {}\n",
                                m["id"].as_str().unwrap_or(""),
                                m["sender"].as_str().unwrap_or(""),
                                SafeText::line(m["text"].as_str().unwrap_or(""))
                            )
                        })
                        .collect()
                }
            }),
        Some("wait") => format!("{}\n", SafeText::line(&v["result"].to_string())),
        _ => format!("{}\n", SafeText::line(&v.to_string())),
    }
}

/// A method on one target; `params` (an object) carries its other fields.
fn targeted(
    printer: &Printer,
    words: &[String],
    parent: Option<String>,
    method: &str,
    mut params: Value,
) -> ExitCode {
    let Some(t) = parse_target(printer, words) else {
        return ExitCode::Usage;
    };
    params["target"] = json!(t);
    block_on(
        printer,
        simple(printer, parent, method, params, snapshot_reply),
    )
}

#[allow(
    clippy::too_many_lines,
    clippy::format_collect,
    reason = "one arm per command"
)]
pub fn run(printer: &Printer, command: Command) -> ExitCode {
    let usage = |e: String| {
        printer.error(&e);
        ExitCode::Usage
    };
    match command {
        Command::Stop { target, select } => {
            targeted(printer, &target, select.parent, "stop", json!({}))
        }
        Command::Park { target, select } => {
            targeted(printer, &target, select.parent, "park", json!({}))
        }
        Command::Transcript { target, select } => {
            let Some(t) = parse_target(printer, &target) else {
                return ExitCode::Usage;
            };
            block_on(
                printer,
                simple(
                    printer,
                    select.parent,
                    "transcript",
                    json!({"target": t}),
                    |v| {
                        v["messages"].as_array().map_or(String::new(), |m| {
                            m.iter()
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
                        })
                    },
                ),
            )
        }
        Command::Steer {
            target,
            text,
            select,
        } => targeted(
            printer,
            &[target],
            select.parent,
            "steer",
            json!({"text": text}),
        ),
        Command::Message {
            mut words,
            mode,
            select,
        } => {
            let text = words.pop().unwrap_or_default();
            let mut params = json!({"text": text, "mode": mode});
            if !words.is_empty() {
                let Some(t) = parse_target(printer, &words) else {
                    return ExitCode::Usage;
                };
                params["target"] = json!(t);
            }
            block_on(
                printer,
                simple(printer, select.parent, "message", params, snapshot_reply),
            )
        }
        Command::Inbox { select } => block_on(
            printer,
            simple(printer, select.parent, "inbox", json!({}), snapshot_reply),
        ),
        Command::Resume {
            mut words,
            model,
            effort,
            session,
            select,
        } => {
            if model.is_some() || effort.is_some() || session.is_some() {
                return usage(
                    "--model, --effort and --session belong to the session form of `slate \
                     resume` (no target); a generation resumes with `slate resume UUID@GEN TEXT`"
                        .to_owned(),
                );
            }
            let Some(text) = words.pop().filter(|_| !words.is_empty()) else {
                return usage(
                    "give the generation and the continuation: `slate resume UUID@GEN TEXT`"
                        .to_owned(),
                );
            };
            targeted(
                printer,
                &words,
                select.parent,
                "resume",
                json!({"assignment": text}),
            )
        }
        Command::Followup {
            target,
            text,
            select,
        } => targeted(
            printer,
            &[target],
            select.parent,
            "followup",
            json!({"assignment": text}),
        ),
        Command::Revive {
            target,
            text,
            select,
        } => targeted(
            printer,
            &[target],
            select.parent,
            "revive",
            json!({"assignment": text}),
        ),
        Command::Wait {
            target,
            message,
            all,
            timeout,
            select,
        } => {
            if all {
                return block_on(
                    printer,
                    wait_all(printer, select.parent, Duration::from_millis(timeout)),
                );
            }
            let mut params = json!({"timeoutMs": timeout});
            if let Some(t) = target {
                let Some(t) = parse_target(printer, &[t]) else {
                    return ExitCode::Usage;
                };
                params["target"] = json!(t);
            }
            if let Some(m) = message {
                params["messageId"] = json!(m);
            }
            block_on(
                printer,
                simple(printer, select.parent, "wait", params, snapshot_reply),
            )
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
                    match serde_json::from_str::<Value>(&l) {
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
            block_on(
                printer,
                delegate(printer, select.parent, request, background),
            )
        }
        Command::Demo { .. }
        | Command::Completions { .. }
        | Command::Hub { .. }
        | Command::Man
        | Command::Effective { .. }
        | Command::Profiles { .. }
        | Command::Run { .. }
        | Command::Serve { .. }
        | Command::Status { .. }
        | Command::Watch { .. }
        | Command::Handoff { .. } => {
            usage("internal: command routed to the wrong handler".to_owned())
        }
    }
}

async fn delegate(
    printer: &Printer,
    parent: Option<String>,
    request: Value,
    background: bool,
) -> ExitCode {
    let client = match crate::cli::fleet::connect(printer, parent).await {
        Ok(c) => c,
        Err(code) => return code,
    };
    let params = json!({"request": request, "background": background});
    // In a terminal the fleet widget shows the window draining; the printed outcome after
    // it is the same as without a terminal.
    let widget = !background && !printer.json() && std::io::stdout().is_terminal();
    let result = if widget {
        delegate_with_widget(printer, &client, params).await
    } else {
        crate::cli::fleet::call(printer, &client, "delegate", params).await
    };
    let result = match result {
        Ok(v) => v,
        Err(code) => return code,
    };
    if printer.json() {
        printer.value(&result);
    } else if background {
        printer.out(&snapshot_reply(&result));
    } else {
        let outcomes = result["outcome"]["outcomes"]
            .as_array()
            .cloned()
            .unwrap_or_default();
        printer.out(
            &outcomes
                .iter()
                .map(|s| snapshot_line(s) + "\n")
                .collect::<String>(),
        );
    }
    if background {
        return ExitCode::Ok;
    }
    let all_settled = result["outcome"]["outcomes"]
        .as_array()
        .is_some_and(|o| o.iter().all(|s| s["status"].as_str() == Some("settled")));
    if all_settled {
        ExitCode::Ok
    } else {
        ExitCode::Refused
    }
}

/// The foreground call with the fleet widget drawn until it returns. Without a usable
/// terminal or subscription the call simply runs without the widget. Ctrl+C detaches:
/// the admitted work stays with the coordinator.
async fn delegate_with_widget(
    printer: &Printer,
    client: &crate::control::Client,
    params: Value,
) -> Result<Value, ExitCode> {
    let Ok(mut widget) = Widget::attach(client).await else {
        return crate::cli::fleet::call(printer, client, "delegate", params).await;
    };
    let end = widget
        .run_until(client, client.call("delegate", params), Quit::Interrupt)
        .await;
    // Restore the terminal before anything is printed.
    drop(widget);
    match end {
        End::Done(result) => result.map_err(|e| crate::cli::fleet::report(printer, &e)),
        End::Quit => {
            printer.error(
                "detached from the widget; the admitted work stays with the coordinator \
                 (follow it with `slate watch`, `slate status` or `slate wait --all`)",
            );
            Err(ExitCode::Refused)
        }
        End::Closed => {
            printer.error("the coordinator went away before the outcome arrived");
            Err(ExitCode::NoCoordinator)
        }
        End::Failed(message) => {
            printer.error(&message);
            Err(ExitCode::Usage)
        }
    }
}

//! Controls: eligibility checked against the latest snapshot, dispatch of pinned actions,
//! and the receipts the coordinator sends back (shown with their real state).

use std::fmt::Write as _;

use serde_json::Value;

use super::state::{Action, Bulk, Failure, Hub, NoticeKind, UiEffect, WAIT_MS};
use crate::core::{ChildRef, ChildSnapshot, Presence, Status};

impl Hub {
    // ----- eligibility, checked against the latest snapshot --------------------------

    pub(super) fn describe(&self, r: ChildRef) -> Result<&ChildSnapshot, String> {
        let entry = self
            .roster
            .get(r)
            .ok_or_else(|| format!("{r} is not in the registry"))?;
        if let Some(current) = self
            .roster
            .current_generation(r.id)
            .filter(|&g| g > r.generation)
        {
            return Err(format!(
                "{r} is a historical generation (the current one is {current})"
            ));
        }
        Ok(&entry.snapshot)
    }

    /// `None` when stop may be sent now: queued, setup, running or paused current targets.
    pub fn stop_refusal(&self, r: ChildRef) -> Option<String> {
        let s = match self.describe(r) {
            Ok(s) => s,
            Err(e) => return Some(e),
        };
        if s.disposed {
            return Some(format!("{r} is disposed; there is nothing to stop"));
        }
        match s.status {
            Status::Queued | Status::Setup | Status::Running | Status::Paused => None,
            Status::Pausing | Status::Draining => Some(format!(
                "{r} is {}; stop is refused until it settles",
                s.status
            )),
            Status::Settled | Status::Failed | Status::Cancelled => {
                Some(format!("{r} has ended ({})", s.status))
            }
        }
    }

    /// `None` when steer may be sent now: running current targets only.
    pub fn steer_refusal(&self, r: ChildRef) -> Option<String> {
        let s = match self.describe(r) {
            Ok(s) => s,
            Err(e) => return Some(e),
        };
        (s.status != Status::Running || s.disposed)
            .then(|| format!("steer takes a running generation; {r} is {}", s.status))
    }

    /// `None` when park may be sent now: the disposed idle current generation.
    pub fn park_refusal(&self, r: ChildRef) -> Option<String> {
        let s = match self.describe(r) {
            Ok(s) => s,
            Err(e) => return Some(e),
        };
        let presence = self.roster.presence(r);
        if s.disposed && presence == Some(Presence::Idle) {
            return None;
        }
        let what = presence.map_or_else(
            || format!("{} (presence unknown)", s.status),
            |p| format!("{} and {p}", s.status),
        );
        Some(format!(
            "park takes a disposed idle identity; {r} is {what}{}",
            if s.disposed { "" } else { ", not disposed" }
        ))
    }

    /// Whether a bulk target would be refused, checked against the latest snapshot.
    pub fn bulk_refusal(&self, action: &Bulk, r: ChildRef) -> Option<String> {
        match action {
            Bulk::Stop => self.stop_refusal(r),
            Bulk::Steer(_) => self.steer_refusal(r),
        }
    }

    pub(super) fn confirm_bulk(
        &mut self,
        action: &Bulk,
        targets: &[ChildRef],
        effects: &mut Vec<UiEffect>,
    ) {
        let mut eligible = Vec::new();
        let mut refused = Vec::new();
        for r in targets {
            match self.bulk_refusal(action, *r) {
                None => eligible.push(*r),
                Some(why) => refused.push(why),
            }
        }
        if !eligible.is_empty() {
            match action {
                Bulk::Stop => effects.push(self.dispatch(Action::StopMany {
                    targets: eligible.clone(),
                })),
                Bulk::Steer(text) => {
                    for target in &eligible {
                        effects.push(self.dispatch(Action::Steer {
                            target: *target,
                            text: text.clone(),
                        }));
                    }
                }
            }
        }
        let verb = match action {
            Bulk::Stop => "stop",
            Bulk::Steer(_) => "steer",
        };
        let mut text = format!("{verb}: sent to {} of {}", eligible.len(), targets.len());
        if !refused.is_empty() {
            let _ = write!(text, "; refused: {}", refused.join("; "));
        }
        let kind = if refused.is_empty() {
            NoticeKind::Info
        } else {
            NoticeKind::Refusal
        };
        self.set_notice(kind, &text);
        self.marks.clear();
    }

    pub(super) fn dispatch(&mut self, action: Action) -> UiEffect {
        let id = self.next_id;
        self.next_id += 1;
        let label = action.label();
        let note = match &action {
            Action::Wait { .. } => format!("{label}: waiting up to {WAIT_MS} ms…"),
            _ => format!("{label}: sent, waiting for the coordinator…"),
        };
        self.set_notice(NoticeKind::Info, &note);
        self.pending.push((id, action.clone()));
        UiEffect::Control { id, action }
    }

    pub(super) fn control_done(
        &mut self,
        id: u64,
        result: Result<Value, Failure>,
        effects: &mut Vec<UiEffect>,
    ) {
        let Some(index) = self.pending.iter().position(|(i, _)| *i == id) else {
            return;
        };
        let (_, action) = self.pending.remove(index);
        let label = action.label();
        let value = match result {
            Ok(v) => v,
            Err(f) => {
                let code = f.code.map(|c| format!(" [{c}]")).unwrap_or_default();
                self.set_notice(
                    NoticeKind::Refusal,
                    &format!("{label}: refused{code}: {}", f.message),
                );
                return;
            }
        };
        let s = |v: &Value| match v {
            Value::String(s) => s.clone(),
            Value::Null => "?".to_owned(),
            other => other.to_string(),
        };
        let text = match &action {
            Action::Steer { .. } | Action::Message { .. } => {
                let m = &value["message"];
                let mut text = format!("{label}: receipt {} is {}", s(&m["id"]), s(&m["status"]));
                if let Some(e) = m.get("error").and_then(Value::as_str) {
                    let _ = write!(text, " ({e})");
                }
                text.push_str(" — the receipt state, not a model acknowledgement");
                text
            }
            Action::Wait { .. } => {
                let r = &value["result"];
                match r["kind"].as_str() {
                    Some("outcome") => format!("{label}: outcome {}", s(&r["outcome"]["status"])),
                    Some("timeout") => format!("{label}: no outcome within {WAIT_MS} ms"),
                    Some(other) => format!("{label}: {other}"),
                    None => format!("{label}: {}", s(r)),
                }
            }
            Action::Stop { .. } | Action::Park { .. } => {
                let c = &value["child"];
                format!(
                    "{label}: the registry reports it {}{}",
                    s(&c["status"]),
                    if c["disposed"].as_bool() == Some(true) {
                        ", disposed"
                    } else {
                        ""
                    }
                )
            }
            Action::StopMany { .. } => {
                let n = value["children"].as_array().map_or(0, Vec::len);
                format!("{label}: the registry reports {n} generations marked")
            }
        };
        if matches!(action, Action::Park { .. }) {
            effects.push(UiEffect::RefreshAgents);
            self.agents_in_flight = true;
        }
        self.set_notice(NoticeKind::Info, &text);
    }
}

//! Controls: eligibility checked against the latest snapshot, dispatch of pinned actions,
//! and the receipts the coordinator sends back (shown with their real state).

use std::fmt::Write as _;

use super::state::{Action, Bulk, Failure, Hub, NoticeKind, UiEffect, WAIT_MS};
use crate::core::{ChildRef, ChildSnapshot, Presence, ReceiptStatus, Reply, Status, WaitResult};

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
        result: Result<Reply, Failure>,
        effects: &mut Vec<UiEffect>,
    ) {
        let Some(index) = self.pending.iter().position(|(i, _)| *i == id) else {
            return;
        };
        let (_, action) = self.pending.remove(index);
        let label = action.label();
        let reply = match result {
            Ok(reply) => reply,
            Err(f) => {
                let code = f.code.map(|c| format!(" [{c}]")).unwrap_or_default();
                self.set_notice(
                    NoticeKind::Refusal,
                    &format!("{label}: refused{code}: {}", f.message),
                );
                return;
            }
        };
        let text = match (&action, &reply) {
            (Action::Steer { .. } | Action::Message { .. }, Reply::Message { message }) => {
                let mut text = format!(
                    "{label}: receipt {} is {}",
                    message.id,
                    receipt_name(message.status)
                );
                if let Some(e) = &message.error {
                    let _ = write!(text, " ({e})");
                }
                text.push_str(" — the receipt state, not a model acknowledgement");
                text
            }
            (Action::Wait { .. }, Reply::Wait { result }) => match result {
                WaitResult::Outcome { outcome } => {
                    format!("{label}: outcome {}", outcome.status.as_str())
                }
                WaitResult::Timeout => format!("{label}: no outcome within {WAIT_MS} ms"),
                WaitResult::Messages { messages } => {
                    format!("{label}: {} messages", messages.len())
                }
                WaitResult::Message { message } => format!(
                    "{label}: message {} is {}",
                    message.id,
                    receipt_name(message.status)
                ),
                WaitResult::Cancelled => format!("{label}: cancelled"),
                WaitResult::Shutdown => format!("{label}: shutdown"),
            },
            (Action::Stop { .. } | Action::Park { .. }, Reply::Snapshot { child }) => format!(
                "{label}: the registry reports it {}{}",
                child.status.as_str(),
                if child.disposed { ", disposed" } else { "" }
            ),
            (Action::StopMany { .. }, Reply::Stopped { children }) => format!(
                "{label}: the registry reports {} generations marked",
                children.len()
            ),
            // The protocol ties each method to its reply; another kind is the server's bug.
            (_, other) => {
                self.set_notice(
                    NoticeKind::Refusal,
                    &format!("{label}: unexpected reply {:?}", reply_kind(other)),
                );
                return;
            }
        };
        if matches!(action, Action::Park { .. }) {
            effects.push(UiEffect::RefreshAgents);
            self.agents_in_flight = true;
        }
        self.set_notice(NoticeKind::Info, &text);
    }
}

fn receipt_name(status: ReceiptStatus) -> &'static str {
    match status {
        ReceiptStatus::Accepted => "accepted",
        ReceiptStatus::Queued => "queued",
        ReceiptStatus::Handled => "handled",
        ReceiptStatus::Delivered => "delivered",
        ReceiptStatus::NotRunning => "not-running",
        ReceiptStatus::Error => "error",
    }
}

fn reply_kind(reply: &Reply) -> &'static str {
    match reply {
        Reply::Admitted { .. } => "admitted",
        Reply::Snapshot { .. } => "snapshot",
        Reply::Stopped { .. } => "stopped",
        Reply::Message { .. } => "message",
        Reply::Inbox { .. } => "inbox",
        Reply::Wait { .. } => "wait",
        Reply::Status { .. } => "status",
        Reply::Guard { .. } => "guard",
        Reply::Submit { .. } => "submit",
        Reply::Released { .. } => "released",
        Reply::Delivered { .. } => "delivered",
        Reply::Ok => "ok",
    }
}

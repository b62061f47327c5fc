//! What `slate handoff` and `slate resume` report: the serde types behind `--json` (schema in
//! docs/handoff.md), and the fleet a handoff snapshots.

use std::path::PathBuf;

use serde::Serialize;
use serde_json::{Value, json};

use super::records::{KickoffSource, PauseReason, Purpose};
use super::rules::ClearedPause;
use crate::policy::Problem;

/// Where the snapshot's threads came from.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Fleet {
    /// `coordinator` or `none`.
    pub source: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub parent_id: Option<String>,
    #[serde(skip)]
    pub threads: Vec<Value>,
    #[serde(skip)]
    pub episodes: Vec<Value>,
    pub thread_count: usize,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
}

impl Fleet {
    /// No coordinator serves the directory: the snapshot holds no threads.
    pub fn none(why: &str) -> Self {
        Self {
            source: "none",
            note: Some(format!("{why}; the snapshot holds no threads")),
            ..Self::default()
        }
    }

    /// Threads and episodes from a coordinator's `status` answer.
    pub fn from_status(status: &Value) -> Self {
        let children = status["children"].as_array().cloned().unwrap_or_default();
        let threads: Vec<Value> = children
            .iter()
            .map(|c| {
                json!({
                    "id": c["id"], "generation": c["generation"], "status": c["status"],
                    "profile": c["profile"], "depth": c["depth"],
                    "assignment": c["assignment"].as_str().map(|a| crate::core::clip_chars(a, 120)),
                })
            })
            .collect();
        let episodes = children
            .iter()
            .filter(|c| c["artifacts"].is_object())
            .map(|c| {
                json!({
                    "thread": format!("{}@{}", c["id"].as_str().unwrap_or(""), c["generation"]),
                    "artifacts": c["artifacts"],
                })
            })
            .collect();
        Self {
            source: "coordinator",
            parent_id: status["parentId"].as_str().map(str::to_owned),
            thread_count: threads.len(),
            threads,
            episodes,
            note: None,
        }
    }
}

/// `slate handoff --json`.
#[derive(Clone, Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct HandoffReport {
    pub session_id: String,
    pub session_file: PathBuf,
    pub successor_session_id: String,
    pub successor_file: PathBuf,
    pub attempt_id: String,
    pub purpose: Purpose,
    /// The purpose, and `context-budget` when the handoff happened during that pause.
    pub causes: Vec<&'static str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub retry_of: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub replaced_purpose: Option<Purpose>,
    pub fleet: Fleet,
    pub episodes: usize,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub kickoff: Option<KickoffReport>,
    pub adoption: AdoptionReport,
    /// `--from-pi`: the kickoff claimed in the successor for pi to send (it is not written).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub claimed_kickoff: Option<ClaimedKickoff>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub warnings: Vec<String>,
}

/// A kickoff that is claimed and left for the host pi to send (`--from-pi`).
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ClaimedKickoff {
    pub id: String,
    pub text: String,
}

#[derive(Clone, Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct KickoffReport {
    pub id: String,
    pub source: KickoffSource,
    pub chars: usize,
}

/// How the successor took the handoff.
#[derive(Clone, Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct AdoptionReport {
    /// `adopted`, `paused`, or `failed` (the successor keeps its handoff entry; `slate resume
    /// --session SUCCESSOR` adopts it later).
    pub status: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub pause_reason: Option<PauseReason>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub problems: Vec<Problem>,
    /// `delivered`, `claimed` (`--from-pi`: claimed, pi sends it), `pending` or `none`.
    pub kickoff: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

/// `slate resume --json` (session form). It says that the pause cleared, never that a turn
/// started.
#[derive(Clone, Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ResumeReport {
    pub session_id: String,
    pub session_file: PathBuf,
    pub pause_cleared: bool,
    pub pause_reason: ClearedPause,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub thinking_level: Option<String>,
    /// `claimed` (claimed and written in the same append as the unpaused state; with
    /// `--from-pi` claimed and left to pi, see `claimed_kickoff`), `already-claimed` (never
    /// replayed) or `none`. A failed write is an error instead: nothing is cleared.
    pub kickoff: &'static str,
    /// `--from-pi`: the claimed kickoff for pi to send.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub claimed_kickoff: Option<ClaimedKickoff>,
}

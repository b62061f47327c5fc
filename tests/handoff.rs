//! `slate handoff` and the session form of `slate resume` (spec 000 "Fresh-session entry",
//! "Project trust boundary"): one table per rule, the runner on real files, the CLI's exit
//! codes and JSON, and real pi 1.6 continuing a session Slate wrote.
//!
//! The real-pi tests need `SLATE_PI` (or `ci/install-pi.sh`'s env file); without it they print
//! `SKIPPED: …` and pass, except under `CI=true`, where they fail.

#![allow(clippy::unwrap_used, reason = "test fixtures fail loudly")]
#![allow(
    clippy::too_many_lines,
    clippy::type_complexity,
    clippy::unnecessary_wraps,
    clippy::items_after_statements,
    reason = "one table per rule, each row a tuple; trust stubs match the Context signature"
)]

#[path = "support/fake_llm.rs"]
mod fake_llm;
#[path = "support/pi_env.rs"]
mod pi_env;

use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use serde_json::{Value, json};
use slate::handoff::gate::{ExactSelectionGate, ModelChoice, ModelGate, Selected, parse_choice};
use slate::handoff::records::{
    HandoffRecord, Kickoff, KickoffSource, PauseReason, Purpose, PurposeRecord, StateRecord,
};
use slate::handoff::rules::{
    self, Adoption, ClearedPause, HandoffInput, ResumeRefusal, SessionView, Template,
};
use slate::handoff::run::{self, Context, Fleet, HandoffError};
use slate::policy::Problem;
use slate::store::session::live::{Holder, LiveProbe, NoProbe};
use slate::store::session::{self, NewEntry, SessionError, append_entries};

// ---------------------------------------------------------------------------------------------
// Fixtures.

const SID: &str = "0b7e2c1e-1111-4000-8000-00000000000a";

/// A gate that refuses everything (stands in for a routing policy that forbids the model).
struct DenyGate;
impl ModelGate for DenyGate {
    fn permit(&self, choice: &ModelChoice) -> Result<Selected, Vec<Problem>> {
        Err(vec![
            Problem::new("--model", "not permitted by the routing policy")
                .value(format!("{:?}", choice.model)),
        ])
    }
}

/// Permits exactly one model (any effort that parses).
struct OnlyGate(&'static str);
impl ModelGate for OnlyGate {
    fn permit(&self, choice: &ModelChoice) -> Result<Selected, Vec<Problem>> {
        let s = parse_choice(choice)?;
        match &s.model {
            Some(m) if format!("{}/{}", m.provider, m.id) == self.0 => Ok(s),
            _ => Err(vec![Problem::new("--model", "not permitted")]),
        }
    }
}

/// Always finds a live pi.
struct AlwaysLive;
impl LiveProbe for AlwaysLive {
    fn holder(&self, _: &Path, _: Option<&Path>) -> Option<Holder> {
        Some(Holder {
            pid: 4242,
            why: "works in the session's directory".to_owned(),
        })
    }
}

fn snapshot(pause: Option<&str>) -> Value {
    let mut s = json!({"threads": [{"id": "t1", "generation": 1}], "episodes": [{"thread": "t1@1", "artifacts": {"result": "/r"}}]});
    if let Some(p) = pause {
        s["pauseReason"] = json!(p);
    }
    s
}

fn kickoff(id: &str, source: &str) -> Value {
    json!({"id": id, "text": "do the next thing", "source": source})
}

fn state(paused: bool, pause: Option<&str>) -> Value {
    json!({"sessionId": SID, "snapshot": snapshot(pause), "paused": paused, "kickoff": kickoff("k1", "focus"), "model": "fake/fake-model", "thinkingLevel": "low"})
}

fn handoff_data(session: &str) -> Value {
    json!({"sessionId": session, "snapshot": snapshot(None), "purpose": "post-check", "kickoff": kickoff("k1", "focus"), "model": "fake/fake-model", "thinkingLevel": "low"})
}

fn custom(t: &str, data: Value) -> NewEntry {
    NewEntry::custom(t, data)
}

static NEXT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);

/// A session file with id `SID` and cwd `cwd`, holding a model, a message and `extra`.
fn session_file(dir: &Path, cwd: &Path, extra: &[NewEntry]) -> PathBuf {
    let s = session::create_session(
        dir,
        SID,
        &cwd.display().to_string(),
        None,
        &[
            NewEntry::ModelChange {
                provider: "fake".to_owned(),
                model_id: "fake-model".to_owned(),
            },
            NewEntry::ThinkingLevelChange {
                level: "off".to_owned(),
            },
        ],
        // A distinct creation time per fixture: the file name includes it.
        1_796_000_000_000 + NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed),
    )
    .unwrap();
    let mut s = session::read(&s.path).unwrap();
    // A user message, as pi writes it.
    let mut f = fs::OpenOptions::new().append(true).open(&s.path).unwrap();
    std::io::Write::write_all(
        &mut f,
        format!(
            "{}\n",
            json!({"type":"message","id":"abcdef12","parentId":s.leaf(),"timestamp":"2026-11-30T02:50:49.589Z","message":{"role":"user","content":[{"type":"text","text":"hi"}],"timestamp":1}})
        )
        .as_bytes(),
    )
    .unwrap();
    s = session::read(&s.path).unwrap();
    append_entries(&mut s, extra, 1_796_000_000_001).unwrap();
    s.path
}

fn view_of(extra: &[NewEntry]) -> Result<SessionView, Vec<Problem>> {
    let d = tempfile::tempdir().unwrap();
    let p = session_file(d.path(), d.path(), extra);
    rules::view(&session::read(&p).unwrap())
}

struct Env {
    _dir: tempfile::TempDir,
    cwd: PathBuf,
    agent: PathBuf,
    sessions: PathBuf,
}

impl Env {
    fn new() -> Self {
        let dir = tempfile::tempdir().unwrap();
        let base = fs::canonicalize(dir.path()).unwrap();
        let cwd = base.join("work");
        let agent = base.join("agent");
        fs::create_dir_all(&cwd).unwrap();
        let sessions = agent.join("sessions").join(format!(
            "--{}--",
            cwd.display()
                .to_string()
                .trim_start_matches('/')
                .replace('/', "-")
        ));
        fs::create_dir_all(&sessions).unwrap();
        Self {
            _dir: dir,
            cwd,
            agent,
            sessions,
        }
    }

    fn session(&self, extra: &[NewEntry]) -> PathBuf {
        session_file(&self.sessions, &self.cwd, extra)
    }

    fn ctx<'a>(
        &self,
        session: Option<&Path>,
        gate: &'a dyn ModelGate,
        probe: &'a dyn LiveProbe,
        trusted: &'a dyn Fn() -> Result<bool, Vec<Problem>>,
    ) -> Context<'a> {
        Context {
            cwd: self.cwd.clone(),
            agent_dir: self.agent.clone(),
            session: session.map(Path::to_owned),
            probe,
            gate,
            project_trusted: trusted,
            now_ms: 1_796_000_001_000,
            host_sends_kickoff: false,
        }
    }
}

fn untrusted() -> Result<bool, Vec<Problem>> {
    Ok(false)
}
fn trusted() -> Result<bool, Vec<Problem>> {
    Ok(true)
}

fn records(path: &Path, custom_type: &str) -> Vec<Value> {
    session::read(path)
        .unwrap()
        .entries
        .iter()
        .filter(|e| e.custom_type() == Some(custom_type))
        .map(|e| e.raw.clone())
        .collect()
}

fn kinds(path: &Path) -> Vec<String> {
    session::read(path)
        .unwrap()
        .entries
        .iter()
        .map(|e| e.custom_type().unwrap_or(&e.kind).to_owned())
        .collect()
}

// ---------------------------------------------------------------------------------------------
// Purpose.

fn pending(purpose: Purpose) -> PurposeRecord {
    PurposeRecord {
        session_id: SID.to_owned(),
        attempt_id: "a1".to_owned(),
        purpose,
        status: slate::handoff::records::AttemptStatus::Pending,
        successor_session_id: None,
    }
}

#[test]
fn purpose_table() {
    use Purpose::{ContextBudget, PostCheck, TrackBoundary, UserRequest};
    // (leading option, pending purpose) -> (purpose, retry of the pending attempt, replaced)
    let rows = [
        (None, None, UserRequest, false, None),
        (None, Some(PostCheck), PostCheck, true, None),
        (
            Some(UserRequest),
            Some(PostCheck),
            UserRequest,
            false,
            Some(PostCheck),
        ),
        (Some(TrackBoundary), None, TrackBoundary, false, None),
        (
            Some(ContextBudget),
            Some(ContextBudget),
            ContextBudget,
            true,
            None,
        ),
        (
            Some(TrackBoundary),
            Some(ContextBudget),
            TrackBoundary,
            false,
            Some(ContextBudget),
        ),
    ];
    for (option, pend, want, retry, replaced) in rows {
        let p = pend.map(pending);
        let got = rules::resolve_purpose(option, p.as_ref());
        assert_eq!(got.purpose, want, "{option:?} {pend:?}");
        assert_eq!(got.retry_of.is_some(), retry, "{option:?} {pend:?}");
        assert_eq!(got.replaced, replaced, "{option:?} {pend:?}");
    }
}

#[test]
fn causes_table() {
    use Purpose::{ContextBudget, TrackBoundary, UserRequest};
    let cb = Some(PauseReason::ContextBudget);
    let rows: [(Option<Purpose>, Option<PauseReason>, &[&str]); 6] = [
        (Some(TrackBoundary), None, &["track-boundary"]),
        // A boundary during a context-budget pause names both causes.
        (
            Some(TrackBoundary),
            cb,
            &["track-boundary", "context-budget"],
        ),
        (Some(UserRequest), cb, &["user-request", "context-budget"]),
        (Some(ContextBudget), cb, &["context-budget"]),
        // An older entry without a purpose: no invented cause.
        (None, None, &[]),
        (None, Some(PauseReason::Adoption), &[]),
    ];
    for (purpose, pause, want) in rows {
        assert_eq!(rules::causes(purpose, pause), want, "{purpose:?} {pause:?}");
    }
}

/// Attempts are session-bound: pending keeps the purpose, consumed clears it, another
/// session's attempt (copied by pi's fork) never counts.
#[test]
fn pending_purpose_table() {
    let attempt = |sid: &str, status: &str| {
        custom(
            "slate-handoff-purpose",
            json!({"sessionId": sid, "attemptId": "a9", "purpose": "track-boundary", "status": status}),
        )
    };
    let rows = [
        (vec![], None),
        (vec![attempt(SID, "pending")], Some(Purpose::TrackBoundary)),
        (
            vec![attempt(SID, "pending"), attempt(SID, "consumed")],
            None,
        ),
        (
            vec![attempt(SID, "consumed"), attempt(SID, "pending")],
            Some(Purpose::TrackBoundary),
        ),
        (vec![attempt("another-session", "pending")], None),
        // A damaged record only loses its retry.
        (
            vec![custom(
                "slate-handoff-purpose",
                json!({"sessionId": SID, "purpose": 3}),
            )],
            None,
        ),
    ];
    for (n, (entries, want)) in rows.into_iter().enumerate() {
        let v = view_of(&entries).unwrap();
        assert_eq!(v.pending.map(|p| p.purpose), want, "row {n}");
    }
}

// ---------------------------------------------------------------------------------------------
// Records.

#[test]
fn handoff_record_validation_table() {
    let ok = handoff_data(SID);
    let with = |f: &dyn Fn(&mut Value)| {
        let mut v = ok.clone();
        f(&mut v);
        v
    };
    let rows: Vec<(&str, Value, Result<(), &str>)> = vec![
        ("full", ok.clone(), Ok(())),
        (
            "older entry without purpose",
            with(&|v| {
                v.as_object_mut().unwrap().remove("purpose");
            }),
            Ok(()),
        ),
        ("minimal", json!({"sessionId": SID, "snapshot": {}}), Ok(())),
        (
            "unknown fields kept readable",
            with(&|v| v["newerField"] = json!(1)),
            Ok(()),
        ),
        (
            "no sessionId",
            with(&|v| {
                v.as_object_mut().unwrap().remove("sessionId");
            }),
            Err("$.sessionId"),
        ),
        (
            "no snapshot",
            with(&|v| {
                v.as_object_mut().unwrap().remove("snapshot");
            }),
            Err("$.snapshot"),
        ),
        (
            "bad pauseReason",
            with(&|v| v["snapshot"]["pauseReason"] = json!("deadline")),
            Err("$.snapshot.pauseReason"),
        ),
        (
            "threads not an array",
            with(&|v| v["snapshot"]["threads"] = json!({})),
            Err("$.snapshot.threads"),
        ),
        (
            "thread not an object",
            with(&|v| v["snapshot"]["threads"] = json!([1])),
            Err("$.snapshot.threads[0]"),
        ),
        (
            "bad purpose",
            with(&|v| v["purpose"] = json!("whim")),
            Err("$.purpose"),
        ),
        (
            "bad kickoff",
            with(&|v| v["kickoff"] = json!({"text": 1})),
            Err("$.kickoff"),
        ),
        (
            "summaryVisible not boolean",
            with(&|v| v["summaryVisible"] = json!("yes")),
            Err("$.summaryVisible"),
        ),
        (
            "model not exact",
            with(&|v| v["model"] = json!("fake-model")),
            Err("$.model"),
        ),
        ("not an object", json!([]), Err("$")),
    ];
    for (what, v, want) in rows {
        match (HandoffRecord::parse(&v), want) {
            (Ok(r), Ok(())) => {
                if what.starts_with("older") {
                    assert_eq!(r.purpose, None, "no invented cause");
                    assert!(rules::causes(r.purpose, r.snapshot.pause_reason).is_empty());
                }
            }
            (Err(p), Err(path)) => assert!(p.iter().any(|p| p.path == path), "{what}: {p:?}"),
            (got, want) => panic!("{what}: got {got:?}, want {want:?}"),
        }
    }
}

#[test]
fn state_record_validation_table() {
    let rows: Vec<(Value, Result<(bool, Option<PauseReason>), &str>)> = vec![
        (
            state(true, Some("adoption")),
            Ok((true, Some(PauseReason::Adoption))),
        ),
        (
            state(true, Some("context-budget")),
            Ok((true, Some(PauseReason::ContextBudget))),
        ),
        (state(true, None), Ok((true, None))), // legacy pause
        (state(false, None), Ok((false, None))),
        (
            state(false, Some("adoption")),
            Err("$.snapshot.pauseReason"),
        ),
        (json!({"sessionId": SID, "snapshot": {}}), Err("$.paused")),
    ];
    for (v, want) in rows {
        match (StateRecord::parse(&v), want) {
            (Ok(s), Ok((paused, reason))) => {
                assert_eq!((s.paused, s.snapshot.pause_reason), (paused, reason));
            }
            (Err(p), Err(path)) => assert!(p.iter().any(|p| p.path == path), "{p:?}"),
            (got, want) => panic!("{v}: got {got:?}, want {want:?}"),
        }
    }
}

/// Adoption rules: only the session whose id equals `sessionId` adopts; a saved state takes
/// precedence; the newest record counts; an invalid newest record is an error.
#[test]
fn view_precedence_table() {
    let h = |sid: &str| custom("slate-handoff", handoff_data(sid));
    let st = |paused: bool, pause: Option<&str>| custom("slate-state", state(paused, pause));
    let v = view_of(&[h("someone-else")]).unwrap();
    assert!(v.handoff.is_none());
    assert_eq!(v.foreign_handoffs, ["someone-else"]);
    assert_eq!(v.pause(), None);

    let v = view_of(&[h(SID)]).unwrap();
    assert!(matches!(v.effective(), rules::Effective::Handoff(_)));
    assert_eq!(
        v.pause(),
        Some(Some(PauseReason::Adoption)),
        "unadopted = adoption pending"
    );

    let v = view_of(&[h(SID), st(false, None)]).unwrap();
    assert!(
        matches!(v.effective(), rules::Effective::State(_)),
        "state wins"
    );
    assert_eq!(v.pause(), None);

    let v = view_of(&[st(true, Some("context-budget")), h(SID)]).unwrap();
    assert_eq!(
        v.pause(),
        Some(Some(PauseReason::ContextBudget)),
        "state wins even when older"
    );

    let v = view_of(&[st(true, None), st(false, None)]).unwrap();
    assert_eq!(v.pause(), None, "newest state counts");

    let v = view_of(&[st(true, None)]).unwrap();
    assert_eq!(v.pause(), Some(None), "legacy pause");

    let mut other = state(true, Some("adoption"));
    other["sessionId"] = json!("forked-from");
    let v = view_of(&[custom("slate-state", other)]).unwrap();
    assert_eq!(v.pause(), None, "another session's state is not ours");

    let err = view_of(&[
        st(false, None),
        custom("slate-state", json!({"sessionId": SID})),
    ])
    .unwrap_err();
    assert!(err.iter().any(|p| p.path == "$.snapshot"), "{err:?}");
    assert!(
        err[0].file.as_deref().unwrap().contains(".jsonl:"),
        "names the line"
    );

    let v = view_of(&[custom(
        "slate-kickoff-claimed",
        json!({"sessionId": SID, "kickoffId": "k1"}),
    )])
    .unwrap();
    assert!(v.claimed.contains("k1"));
}

// ---------------------------------------------------------------------------------------------
// Resume rules.

#[test]
fn resume_rules_table() {
    let st = |paused: bool, pause: Option<&str>| custom("slate-state", state(paused, pause));
    let h = custom("slate-handoff", handoff_data(SID));
    let args = |m: Option<&str>, e: Option<&str>| ModelChoice {
        model: m.map(str::to_owned),
        effort: e.map(str::to_owned),
    };
    type Want = Result<ClearedPause, &'static str>;
    let rows: Vec<(&str, Vec<NewEntry>, ModelChoice, &dyn ModelGate, Want)> = vec![
        (
            "no records",
            vec![],
            args(None, None),
            &ExactSelectionGate,
            Err("no-state"),
        ),
        (
            "not paused",
            vec![st(false, None)],
            args(None, None),
            &ExactSelectionGate,
            Err("not-paused"),
        ),
        (
            "budget pause, any model",
            vec![st(true, Some("context-budget"))],
            args(Some("other/m"), Some("high")),
            &DenyGate,
            Ok(ClearedPause::ContextBudget),
        ),
        (
            "legacy pause, any model",
            vec![st(true, None)],
            args(Some("x/y"), None),
            &DenyGate,
            Ok(ClearedPause::Legacy),
        ),
        (
            "budget pause, malformed --model",
            vec![st(true, Some("context-budget"))],
            args(Some("bare-id"), None),
            &DenyGate,
            Err("usage"),
        ),
        (
            "budget pause, bad --effort",
            vec![st(true, Some("context-budget"))],
            args(None, Some("HIGH")),
            &DenyGate,
            Err("usage"),
        ),
        (
            "adoption, refused by the gate",
            vec![st(true, Some("adoption"))],
            args(Some("fake/fake-model"), None),
            &DenyGate,
            Err("model"),
        ),
        (
            "adoption, saved model permitted",
            vec![st(true, Some("adoption"))],
            args(None, None),
            &OnlyGate("fake/fake-model"),
            Ok(ClearedPause::Adoption),
        ),
        (
            "adoption, chosen model permitted",
            vec![st(true, Some("adoption"))],
            args(Some("fake/fake-reasoner:high"), None),
            &OnlyGate("fake/fake-reasoner"),
            Ok(ClearedPause::Adoption),
        ),
        (
            "adoption, chosen model not permitted",
            vec![st(true, Some("adoption"))],
            args(Some("fake/other"), None),
            &OnlyGate("fake/fake-model"),
            Err("model"),
        ),
        (
            "adoption, bad effort: a usage error before the gate",
            vec![st(true, Some("adoption"))],
            args(None, Some("turbo")),
            &ExactSelectionGate,
            Err("usage"),
        ),
        (
            "adoption, conflicting efforts: a usage error before the gate",
            vec![st(true, Some("adoption"))],
            args(Some("fake/m:low"), Some("high")),
            &ExactSelectionGate,
            Err("usage"),
        ),
        (
            "unadopted handoff",
            vec![h.clone()],
            args(None, None),
            &ExactSelectionGate,
            Ok(ClearedPause::Adoption),
        ),
        (
            "unadopted handoff, refused",
            vec![h],
            args(None, None),
            &DenyGate,
            Err("model"),
        ),
    ];
    for (what, entries, a, gate, want) in rows {
        let v = view_of(&entries).unwrap();
        let got = rules::plan_resume(&v, &a, gate, false);
        match (got, want) {
            (Ok(plan), Ok(cleared)) => {
                assert_eq!(plan.cleared, cleared, "{what}");
                assert!(
                    !plan.state.paused && plan.state.snapshot.pause_reason.is_none(),
                    "{what}"
                );
                assert_eq!(plan.state.snapshot.threads.len(), 1, "{what}: threads kept");
                assert_eq!(
                    plan.deliver.as_ref().map(|k| k.id.as_str()),
                    Some("k1"),
                    "{what}"
                );
            }
            (Err(r), Err(kind)) => {
                let got_kind = match r {
                    ResumeRefusal::NoState => "no-state",
                    ResumeRefusal::NotPaused => "not-paused",
                    ResumeRefusal::Usage(_) => "usage",
                    ResumeRefusal::Model(_) => "model",
                    ResumeRefusal::UntrustedKickoff => "untrusted",
                };
                assert_eq!(got_kind, kind, "{what}");
            }
            (got, want) => panic!("{what}: got {got:?}, want {want:?}"),
        }
    }
}

#[test]
fn claimed_kickoff_is_never_replayed_and_project_kickoff_needs_trust() {
    let claimed = custom(
        "slate-kickoff-claimed",
        json!({"sessionId": SID, "kickoffId": "k1"}),
    );
    let v = view_of(&[
        custom("slate-state", state(true, Some("context-budget"))),
        claimed,
    ])
    .unwrap();
    let plan = rules::plan_resume(&v, &ModelChoice::default(), &ExactSelectionGate, false).unwrap();
    assert_eq!(plan.deliver, None);
    assert_eq!(plan.already_claimed.as_deref(), Some("k1"));

    let mut s = state(true, Some("context-budget"));
    s["kickoff"] = kickoff("k2", "project");
    let v = view_of(&[custom("slate-state", s)]).unwrap();
    assert_eq!(
        rules::plan_resume(&v, &ModelChoice::default(), &ExactSelectionGate, false),
        Err(ResumeRefusal::UntrustedKickoff)
    );
    let plan = rules::plan_resume(&v, &ModelChoice::default(), &ExactSelectionGate, true).unwrap();
    assert_eq!(plan.deliver.unwrap().source, KickoffSource::Project);
}

#[test]
fn adoption_table() {
    let rec = |pause: Option<&str>| {
        HandoffRecord::parse(&{
            let mut h = handoff_data(SID);
            h["snapshot"] = snapshot(pause);
            h
        })
        .unwrap()
    };
    // Permitted: adopted, kickoff to deliver.
    match rules::adopt(&rec(None), &ExactSelectionGate, true) {
        Adoption::Adopted(p) => assert_eq!(p.deliver.unwrap().id, "k1"),
        other @ Adoption::Paused { .. } => panic!("{other:?}"),
    }
    // Refused: paused for adoption, kickoff kept pending, the problems named.
    match rules::adopt(&rec(None), &DenyGate, true) {
        Adoption::Paused {
            state,
            reason,
            problems,
        } => {
            assert_eq!(reason, PauseReason::Adoption);
            assert!(state.paused);
            assert_eq!(state.snapshot.pause_reason, Some(PauseReason::Adoption));
            assert_eq!(state.kickoff.unwrap().id, "k1");
            assert_eq!(problems[0].path, "--model");
        }
        other @ Adoption::Adopted(_) => panic!("{other:?}"),
    }
    // A context-budget pause carried over stays paused, on any gate.
    match rules::adopt(&rec(Some("context-budget")), &ExactSelectionGate, true) {
        Adoption::Paused { reason, .. } => assert_eq!(reason, PauseReason::ContextBudget),
        other @ Adoption::Adopted(_) => panic!("{other:?}"),
    }
}

#[test]
fn handoff_plan_carries_snapshot_and_binds_records() {
    let v = view_of(&[custom("slate-state", state(true, Some("context-budget")))]).unwrap();
    let template = Template {
        text: "Purpose {{purpose}}; causes {{causes}}; focus {{focus}}; from {{previousSession}}"
            .to_owned(),
        source: KickoffSource::Home,
    };
    let plan = rules::plan_handoff(&HandoffInput {
        option: Some(Purpose::TrackBoundary),
        focus: Some("ship it"),
        view: &v,
        threads: vec![json!({"id": "live", "generation": 2})],
        episodes: vec![
            json!({"thread": "live@2", "artifacts": {}}),
            json!({"thread": "t1@1"}),
        ],
        template: Some(&template),
        model: Some("fake/fake-model".to_owned()),
        thinking_level: Some("off".to_owned()),
        successor_id: "succ".to_owned(),
        attempt_id: "att".to_owned(),
        kickoff_id: "kick".to_owned(),
    });
    assert_eq!(plan.causes, ["track-boundary", "context-budget"]);
    let r = &plan.record;
    assert_eq!(r.session_id, "succ");
    assert_eq!(r.purpose, Some(Purpose::TrackBoundary));
    assert_eq!(r.snapshot.pause_reason, Some(PauseReason::ContextBudget));
    assert_eq!(r.snapshot.threads, [json!({"id": "live", "generation": 2})]);
    assert_eq!(
        r.snapshot.episodes.len(),
        2,
        "carried episode kept once, live one added"
    );
    let k = r.kickoff.as_ref().unwrap();
    assert_eq!(
        k.text,
        format!(
            "Purpose track-boundary; causes track-boundary during a context-budget; focus ship it; from {SID}\n\n\
             The fleet (1 thread; its workers stopped with the handoff, their artifacts remain):\n\
             - live@2\n\
             Episodes carried from earlier handoffs:\n\
             - t1@1"
        )
    );
    assert_eq!((k.id.as_str(), k.source), ("kick", KickoffSource::Home));
    assert_eq!(plan.attempt.session_id, SID);
    assert_eq!(plan.consumed.successor_session_id.as_deref(), Some("succ"));
    // The record round-trips through its own validation.
    let back = HandoffRecord::parse(&serde_json::to_value(r).unwrap()).unwrap();
    assert_eq!(&back, r);
    // No focus and no template: no kickoff.
    assert_eq!(
        rules::kickoff_text(None, None, &["user-request"], SID),
        None
    );
    // Focus text is literal: placeholders typed in it are not expanded (one pass over the
    // template), and an unknown placeholder in the template is kept.
    let template = rules::Template {
        text: "[{{purpose}}] {{focus}} {{unknown}} {{".to_owned(),
        source: KickoffSource::Home,
    };
    assert_eq!(
        rules::kickoff_text(
            Some(&template),
            Some("keep {{purpose}} and {{previousSession}} as typed"),
            &["post-check"],
            SID
        ),
        Some((
            "[post-check] keep {{purpose}} and {{previousSession}} as typed {{unknown}} {{"
                .to_owned(),
            KickoffSource::Home
        ))
    );
    let _: Option<Kickoff> = None;
}

#[test]
fn the_kickoff_names_the_fleet_identities_roles_statuses_headlines_and_artifacts() {
    let threads = [
        json!({"id": "0b6a5c1e-1111-4222-8333-444455556666", "generation": 2, "profile": "scout",
               "status": "settled", "headline": "Found the parser's entry points"}),
        json!({"id": "7c1d2e3f-1111-4222-8333-444455556666", "generation": 1, "profile": "worker",
               "status": "failed", "headline": "provider error\u{1b}[31m"}),
    ];
    let episodes = [
        json!({"thread": "0b6a5c1e-1111-4222-8333-444455556666@2",
               "artifacts": {"text": "/tmp/t/result.txt", "structured": "/tmp/t/structured.json"}}),
        json!({"thread": "99999999-1111-4222-8333-444455556666@3", "artifacts": {"text": "/tmp/old/result.txt"}}),
    ];
    let brief = rules::fleet_brief(&threads, &episodes).unwrap();
    assert_eq!(
        brief,
        "The fleet (2 threads; its workers stopped with the handoff, their artifacts remain):\n\
         - 0b6a5c1e-1111-4222-8333-444455556666@2 · scout · settled · Found the parser's entry points\n  \
         artifacts: /tmp/t/result.txt, /tmp/t/structured.json\n\
         - 7c1d2e3f-1111-4222-8333-444455556666@1 · worker · failed · provider error[31m\n\
         Episodes carried from earlier handoffs:\n\
         - 99999999-1111-4222-8333-444455556666@3\n  artifacts: /tmp/old/result.txt"
            .replace("[31m", &slate::text::SafeText::line("\u{1b}[31m").into_string()),
    );
    assert_eq!(rules::fleet_brief(&[], &[]), None, "no fleet, no brief");
    // No template, no focus: the fleet alone makes a kickoff.
    let (text, source) =
        rules::kickoff_with_fleet(None, None, &["user-request"], SID, Some(&brief)).unwrap();
    assert_eq!(source, KickoffSource::Fleet);
    assert_eq!(
        text,
        format!(
            "Slate handoff (user-request) from session {SID}. Continue the work of this fleet.\n\n{brief}"
        )
    );
    // A template places it with {{fleet}}; a focus typed as {{fleet}} stays literal.
    let template = rules::Template {
        text: "{{focus}}\n{{fleet}}\nend".to_owned(),
        source: KickoffSource::Home,
    };
    let (text, _) = rules::kickoff_with_fleet(
        Some(&template),
        Some("{{fleet}}"),
        &["post-check"],
        SID,
        Some("F"),
    )
    .unwrap();
    assert_eq!(text, "{{fleet}}\nF\nend");
    assert_eq!(
        rules::kickoff_with_fleet(None, None, &["user-request"], SID, None),
        None
    );
}

// ---------------------------------------------------------------------------------------------
// The runner on real files.

#[test]
fn handoff_writes_attempt_successor_and_consumes_purpose() {
    let env = Env::new();
    let path = env.session(&[]);
    let original = fs::read(&path).unwrap();
    // An old pending-handoff file is ignored and left untouched.
    let legacy = env.cwd.join(".pi/slate/pending-handoff.json");
    fs::create_dir_all(legacy.parent().unwrap()).unwrap();
    fs::write(
        &legacy,
        br#"{"sessionId":"whatever","purpose":"post-check"}"#,
    )
    .unwrap();
    let legacy_before = (
        fs::read(&legacy).unwrap(),
        fs::metadata(&legacy).unwrap().modified().unwrap(),
    );

    let ctx = env.ctx(None, &ExactSelectionGate, &NoProbe, &untrusted);
    let report = run::handoff(&ctx, None, Some("finish the parser"), Fleet::none("test")).unwrap();
    assert_eq!(report.purpose, Purpose::UserRequest, "bare new request");
    assert_eq!(report.session_file, path);
    assert_eq!(report.adoption.status, "adopted");
    assert_eq!(report.adoption.kickoff, "delivered");

    // The current session: every original byte, then the attempt and its consumption.
    let after = fs::read(&path).unwrap();
    assert_eq!(&after[..original.len()], &original[..]);
    let attempts = records(&path, "slate-handoff-purpose");
    assert_eq!(attempts.len(), 2);
    assert_eq!(attempts[0]["data"]["status"], "pending");
    assert_eq!(attempts[1]["data"]["status"], "consumed");
    assert_eq!(
        attempts[1]["data"]["successorSessionId"],
        json!(report.successor_session_id)
    );
    assert_eq!(attempts[0]["data"]["sessionId"], SID);

    // The successor: version-3 header with parentSession, the handoff entry first.
    let succ = session::read(&report.successor_file).unwrap();
    assert_eq!(succ.header.version, Some(3));
    assert_eq!(
        succ.header.parent_session.as_deref(),
        Some(path.to_str().unwrap())
    );
    assert_eq!(succ.header.cwd.as_deref(), Some(env.cwd.to_str().unwrap()));
    assert_eq!(succ.path.parent(), path.parent());
    assert_eq!(
        kinds(&succ.path),
        [
            "slate-handoff",
            "model_change",
            "thinking_level_change",
            "slate-state",
            "slate-kickoff-claimed",
            "slate-kickoff"
        ]
    );
    let h = &records(&succ.path, "slate-handoff")[0]["data"];
    assert_eq!(h["sessionId"], json!(succ.header.id));
    assert_eq!(h["purpose"], "user-request");
    assert_eq!(h["model"], "fake/fake-model");
    assert_eq!(h["thinkingLevel"], "off");
    assert_eq!(h["snapshot"]["threads"], json!([]));
    let k = &records(&succ.path, "slate-kickoff")[0];
    assert_eq!(k["display"], false);
    assert_eq!(k["details"]["kickoffId"], h["kickoff"]["id"]);
    // The successor does not inherit the purpose.
    let sv = rules::view(&succ).unwrap();
    assert_eq!(sv.pending, None);
    assert!(records(&succ.path, "slate-handoff-purpose").is_empty());
    // A later bare request from the successor is a new user request.
    let ctx = env.ctx(Some(&succ.path), &ExactSelectionGate, &NoProbe, &untrusted);
    let again = run::handoff(&ctx, None, None, Fleet::none("test")).unwrap();
    assert_eq!(again.purpose, Purpose::UserRequest);
    assert_eq!(again.retry_of, None);

    assert_eq!(
        (
            fs::read(&legacy).unwrap(),
            fs::metadata(&legacy).unwrap().modified().unwrap()
        ),
        legacy_before,
        "pending-handoff.json untouched"
    );
}

#[test]
fn retry_keeps_the_pending_purpose_and_user_request_replaces_it() {
    let env = Env::new();
    // What a failed or cancelled attempt leaves behind: a pending attempt.
    let failed = custom(
        "slate-handoff-purpose",
        json!({"sessionId": SID, "attemptId": "failed-1", "purpose": "post-check", "status": "pending"}),
    );
    let path = env.session(std::slice::from_ref(&failed));
    let ctx = env.ctx(Some(&path), &ExactSelectionGate, &NoProbe, &untrusted);
    let r = run::handoff(&ctx, None, None, Fleet::none("test")).unwrap();
    assert_eq!(r.purpose, Purpose::PostCheck);
    assert_eq!(r.retry_of.as_deref(), Some("failed-1"));

    let path = env.session(&[failed]);
    let ctx = env.ctx(Some(&path), &ExactSelectionGate, &NoProbe, &untrusted);
    let r = run::handoff(&ctx, Some(Purpose::UserRequest), None, Fleet::none("test")).unwrap();
    assert_eq!(r.purpose, Purpose::UserRequest);
    assert_eq!(r.replaced_purpose, Some(Purpose::PostCheck));
}

#[test]
fn handoff_during_a_budget_pause_names_both_causes_and_stays_paused() {
    let env = Env::new();
    let path = env.session(&[custom("slate-state", state(true, Some("context-budget")))]);
    let ctx = env.ctx(Some(&path), &DenyGate, &NoProbe, &untrusted);
    let r = run::handoff(
        &ctx,
        Some(Purpose::TrackBoundary),
        Some("go"),
        Fleet::none("t"),
    )
    .unwrap();
    assert_eq!(r.causes, ["track-boundary", "context-budget"]);
    assert_eq!(r.adoption.status, "paused");
    assert_eq!(r.adoption.pause_reason, Some(PauseReason::ContextBudget));
    assert_eq!(r.episodes, 1, "episodes carried");
    // A budget pause resumes on any model, even one the gate refuses.
    let ctx = env.ctx(Some(&r.successor_file), &DenyGate, &NoProbe, &untrusted);
    let out = run::resume(
        &ctx,
        Some("other/model".to_owned()),
        Some("high".to_owned()),
    )
    .unwrap();
    assert_eq!(out.pause_reason, ClearedPause::ContextBudget);
    assert_eq!(out.kickoff, "claimed");
    let s = session::read(&r.successor_file).unwrap();
    assert_eq!(s.model().as_deref(), Some("other/model"));
    assert_eq!(s.thinking_level().as_deref(), Some("high"));
}

#[test]
fn adoption_pause_validates_then_claims_before_delivering_once() {
    let env = Env::new();
    let path = env.session(&[]);
    let ctx = env.ctx(Some(&path), &DenyGate, &NoProbe, &untrusted);
    let r = run::handoff(
        &ctx,
        Some(Purpose::PostCheck),
        Some("check it"),
        Fleet::none("t"),
    )
    .unwrap();
    assert_eq!(r.adoption.status, "paused");
    assert_eq!(r.adoption.pause_reason, Some(PauseReason::Adoption));
    assert_eq!(r.adoption.kickoff, "pending");
    assert!(!r.adoption.problems.is_empty());
    let succ = r.successor_file;
    assert_eq!(
        kinds(&succ),
        ["slate-handoff", "slate-state"],
        "no model turn, no kickoff"
    );

    // A refused model keeps the pause and writes nothing.
    let before = fs::read(&succ).unwrap();
    let ctx = env.ctx(
        Some(&succ),
        &OnlyGate("fake/fake-reasoner"),
        &NoProbe,
        &untrusted,
    );
    let err = run::resume(&ctx, Some("fake/fake-model".to_owned()), None).unwrap_err();
    assert!(err.is_refusal(), "{err}");
    assert_eq!(fs::read(&succ).unwrap(), before);

    // A permitted one clears it: state first, then the claim, then the hidden kickoff.
    let out = run::resume(
        &ctx,
        Some("fake/fake-reasoner".to_owned()),
        Some("medium".to_owned()),
    )
    .unwrap();
    assert!(out.pause_cleared);
    assert_eq!(out.pause_reason, ClearedPause::Adoption);
    assert_eq!(out.kickoff, "claimed");
    assert_eq!(out.model.as_deref(), Some("fake/fake-reasoner"));
    assert_eq!(
        kinds(&succ),
        [
            "slate-handoff",
            "slate-state",
            "model_change",
            "thinking_level_change",
            "slate-state",
            "slate-kickoff-claimed",
            "slate-kickoff"
        ]
    );
    assert_eq!(&fs::read(&succ).unwrap()[..before.len()], &before[..]);
    let states = records(&succ, "slate-state");
    assert_eq!(states[1]["data"]["paused"], false);

    // Not paused any more.
    let err = run::resume(&ctx, None, None).unwrap_err();
    assert!(matches!(err, HandoffError::Refused { .. }), "{err}");

    // Paused again (say, for the budget) with the same kickoff: it is never replayed.
    let mut s = session::read(&succ).unwrap();
    let mut again = state(true, Some("context-budget"));
    again["sessionId"] = json!(s.header.id);
    again["kickoff"] = records(&succ, "slate-handoff")[0]["data"]["kickoff"].clone();
    append_entries(&mut s, &[custom("slate-state", again)], 1).unwrap();
    let out = run::resume(&ctx, None, None).unwrap();
    assert_eq!(out.kickoff, "already-claimed");
    assert_eq!(records(&succ, "slate-kickoff").len(), 1);
}

/// `--from-pi`: the kickoff is claimed in the successor and handed to pi to send (the message
/// that starts the turn is pi's); nothing else changes.
#[test]
fn from_pi_claims_the_kickoff_and_leaves_the_message_to_pi() {
    let env = Env::new();
    env.session(&[]);
    let mut ctx = env.ctx(None, &ExactSelectionGate, &NoProbe, &untrusted);
    ctx.host_sends_kickoff = true;
    let report = run::handoff(&ctx, None, Some("finish the parser"), Fleet::none("test")).unwrap();
    assert_eq!(report.adoption.status, "adopted");
    assert_eq!(report.adoption.kickoff, "claimed");
    let succ = session::read(&report.successor_file).unwrap();
    assert_eq!(
        kinds(&succ.path),
        [
            "slate-handoff",
            "model_change",
            "thinking_level_change",
            "slate-state",
            "slate-kickoff-claimed"
        ]
    );
    let h = &records(&succ.path, "slate-handoff")[0]["data"];
    let claimed = report.claimed_kickoff.clone().expect("the claimed kickoff");
    assert_eq!(json!(claimed.id), h["kickoff"]["id"]);
    assert_eq!(json!(claimed.text), h["kickoff"]["text"]);
    let claim = &records(&succ.path, "slate-kickoff-claimed")[0]["data"];
    assert_eq!(claim["kickoffId"], json!(claimed.id));
    let value = serde_json::to_value(&report).unwrap();
    assert_eq!(value["claimedKickoff"]["id"], json!(claimed.id));
    // Without --from-pi there is no claimedKickoff member.
    let plain = env.ctx(Some(&succ.path), &ExactSelectionGate, &NoProbe, &untrusted);
    let again = run::handoff(&plain, None, Some("next"), Fleet::none("test")).unwrap();
    assert_eq!(
        serde_json::to_value(&again).unwrap().get("claimedKickoff"),
        None
    );
}

#[test]
fn a_live_session_is_refused_and_left_unchanged() {
    let env = Env::new();
    let path = env.session(&[custom("slate-state", state(true, None))]);
    let before = fs::read(&path).unwrap();
    for result in [
        run::handoff(
            &env.ctx(None, &ExactSelectionGate, &AlwaysLive, &untrusted),
            None,
            None,
            Fleet::none("t"),
        )
        .map(|_| ()),
        run::resume(
            &env.ctx(None, &ExactSelectionGate, &AlwaysLive, &untrusted),
            None,
            None,
        )
        .map(|_| ()),
    ] {
        let err = result.unwrap_err();
        assert!(
            matches!(
                err,
                HandoffError::Session(SessionError::Live { pid: 4242, .. })
            ),
            "{err}"
        );
        assert!(err.is_refusal());
        assert!(err.to_string().contains("live pi process"), "{err}");
    }
    assert_eq!(fs::read(&path).unwrap(), before);
    assert_eq!(
        fs::read_dir(&env.sessions).unwrap().count(),
        1,
        "no successor"
    );
}

#[test]
fn kickoff_templates_follow_project_trust() {
    let env = Env::new();
    fs::create_dir_all(env.agent.join("slate")).unwrap();
    fs::write(env.agent.join("slate/kickoff.md"), "HOME {{focus}}").unwrap();
    fs::create_dir_all(env.cwd.join(".pi/slate")).unwrap();
    fs::write(env.cwd.join(".pi/slate/kickoff.md"), "PROJECT {{focus}}").unwrap();

    let path = env.session(&[]);
    let r = run::handoff(
        &env.ctx(Some(&path), &ExactSelectionGate, &NoProbe, &untrusted),
        None,
        Some("x"),
        Fleet::none("t"),
    )
    .unwrap();
    assert_eq!(r.kickoff.as_ref().unwrap().source, KickoffSource::Home);
    assert!(
        r.warnings
            .iter()
            .any(|w| w.contains("require project trust")),
        "{:?}",
        r.warnings
    );

    let path = env.session(&[]);
    let r = run::handoff(
        &env.ctx(Some(&path), &ExactSelectionGate, &NoProbe, &trusted),
        None,
        Some("x"),
        Fleet::none("t"),
    )
    .unwrap();
    assert_eq!(r.kickoff.as_ref().unwrap().source, KickoffSource::Project);
    assert_eq!(
        records(&r.successor_file, "slate-kickoff")[0]["content"],
        "PROJECT x"
    );

    // A trust decision that cannot be made stops the handoff before anything is written.
    let path = env.session(&[]);
    let before = fs::read(&path).unwrap();
    let broken =
        || -> Result<bool, Vec<Problem>> { Err(vec![Problem::new("$", "invalid trust store")]) };
    let err = run::handoff(
        &env.ctx(Some(&path), &ExactSelectionGate, &NoProbe, &broken),
        None,
        None,
        Fleet::none("t"),
    )
    .unwrap_err();
    assert!(!err.is_refusal(), "configuration error: exit 2");
    assert_eq!(fs::read(&path).unwrap(), before);
}

#[test]
fn fleet_from_a_coordinator_status() {
    let status = json!({"parentId": "p", "children": [
        {"id": "u1", "generation": 1, "status": "running", "profile": "scout", "depth": 1, "assignment": "a".repeat(500), "artifacts": {"result": "/x"}},
        {"id": "u2", "generation": 3, "status": "settled", "profile": "general", "depth": 2, "assignment": "b"},
    ]});
    let f = Fleet::from_status(&status);
    assert_eq!(
        (f.source, f.thread_count, f.episodes.len()),
        ("coordinator", 2, 1)
    );
    assert_eq!(f.episodes[0]["thread"], "u1@1");
    assert!(f.threads[0]["assignment"].as_str().unwrap().chars().count() <= 121);
    let none = Fleet::none("no coordinator");
    assert_eq!(none.source, "none");
    assert!(none.note.unwrap().contains("no threads"));
}

// ---------------------------------------------------------------------------------------------
// The CLI.

fn slate(env: &Env, args: &[&str]) -> (i32, String, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_slate"))
        .args(args)
        .current_dir(&env.cwd)
        .env("PI_CODING_AGENT_DIR", &env.agent)
        .env("HOME", env.agent.parent().unwrap())
        .env("XDG_RUNTIME_DIR", env.agent.parent().unwrap())
        .env_remove("SLATE_SOCKET")
        .output()
        .unwrap();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// A home `slate.json` whose routing policy permits `fake/fake-model` at `effort` (an
/// adoption pause validates the model against the routing policy).
fn permit_fake_model(agent: &Path, effort: &str) {
    let slate = json!({"router": {"models": {"add": [{
        "model": "fake-test", "capabilityRating": 50, "costRating": 10, "effort": effort,
        "preferredProvider": "fake", "providers": {"fake": "fake-model"},
        "guidelines": ["tests only"], "cautions": ["offline fake server"]
    }]}}});
    fs::write(agent.join("slate.json"), slate.to_string()).unwrap();
}

#[test]
fn cli_exit_codes_and_json() {
    let env = Env::new();
    permit_fake_model(&env.agent, "off");
    let path = env.session(&[]);
    let p = path.to_str().unwrap();
    let before = fs::read(&path).unwrap();

    // Usage errors: exit 2, nothing written.
    for args in [
        vec!["handoff", "--post-check", "--user-request"],
        vec![
            "resume",
            "--model",
            "fake/m",
            "0b7e2c1e-1111-4000-8000-00000000000a@1",
            "go",
        ],
        vec!["resume", "only-one-word"],
    ] {
        let (code, _, err) = slate(&env, &args);
        assert_eq!(code, 2, "{args:?}: {err}");
    }
    // Not paused / no state: refused, exit 1.
    let (code, out, _) = slate(&env, &["--json", "resume", "--session", p]);
    assert_eq!(code, 1);
    let v: Value = serde_json::from_str(&out).unwrap();
    assert!(
        v["error"]["message"]
            .as_str()
            .unwrap()
            .contains("no Slate state"),
        "{v}"
    );
    assert_eq!(fs::read(&path).unwrap(), before, "nothing changed");

    // A file that is not a session: exit 2.
    let junk = env.cwd.join("junk.jsonl");
    fs::write(&junk, "hello\n").unwrap();
    let (code, _, err) = slate(&env, &["resume", "--session", junk.to_str().unwrap()]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("not a pi session file"), "{err}");

    // The focus is kept apart from the purpose: later option-like words are focus text.
    let (code, out, err) = slate(
        &env,
        &[
            "--json",
            "handoff",
            "--post-check",
            "fix",
            "--user-request",
            "docs",
        ],
    );
    assert_eq!(code, 0, "{err}");
    let v: Value = serde_json::from_str(&out).unwrap();
    for key in [
        "sessionId",
        "sessionFile",
        "successorSessionId",
        "successorFile",
        "attemptId",
        "purpose",
        "causes",
        "fleet",
        "episodes",
        "adoption",
    ] {
        assert!(v.get(key).is_some(), "missing {key}: {v}");
    }
    assert_eq!(v["purpose"], "post-check");
    assert_eq!(v["fleet"]["source"], "none");
    assert_eq!(v["adoption"]["status"], "adopted");
    let succ = PathBuf::from(v["successorFile"].as_str().unwrap());
    let k = &records(&succ, "slate-kickoff")[0]["content"];
    assert!(
        k.as_str().unwrap().ends_with("fix --user-request docs"),
        "{k}"
    );

    // The successor is now the newest session for the directory; resume finds it and says it
    // is not paused.
    let (code, _, err) = slate(&env, &["resume"]);
    assert_eq!(code, 1, "{err}");
    assert!(err.contains("is not paused"), "{err}");

    // A paused session: bad --effort is a usage error, then a good resume clears it.
    let paused = env.session(&[custom("slate-state", state(true, Some("context-budget")))]);
    let pp = paused.to_str().unwrap();
    let before = fs::read(&paused).unwrap();
    let (code, _, err) = slate(&env, &["resume", "--session", pp, "--effort", "HIGH"]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("--effort"), "{err}");
    assert_eq!(fs::read(&paused).unwrap(), before);
    let (code, out, err) = slate(&env, &["resume", "--session", pp]);
    assert_eq!(code, 0, "{err}");
    assert!(out.starts_with("pause cleared (context-budget)"), "{out}");
    assert!(!out.contains("turn"), "never claims a turn started: {out}");
    let (code, out, _) = slate(&env, &["--json", "resume", "--session", pp]);
    assert_eq!(code, 1, "{out}");

    // An adoption pause: a malformed --effort is the same usage error (exit 2), before the
    // model gate is asked, and nothing is written.
    let adoption = env.session(&[custom("slate-state", state(true, Some("adoption")))]);
    let ap = adoption.to_str().unwrap();
    let before = fs::read(&adoption).unwrap();
    let (code, _, err) = slate(&env, &["resume", "--session", ap, "--effort", "HIGH"]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("--effort"), "{err}");
    assert_eq!(fs::read(&adoption).unwrap(), before);
}

// ---------------------------------------------------------------------------------------------
// Real pi 1.6.

const PI_TIMEOUT: Duration = Duration::from_secs(90);

/// Run `pi --mode rpc <args>` in the sandbox: one prompt, wait for it to settle, exit.
/// Returns the records.
fn pi_prompt(
    sandbox: &pi_env::PiSandbox,
    pi: &pi_env::PiCommand,
    args: &[&str],
    text: &str,
) -> Vec<Value> {
    let mut rpc = pi_env::RpcPi::spawn(sandbox, pi, args).unwrap();
    rpc.send(&json!({"id": "s", "type": "get_state"})).unwrap();
    rpc.send(&json!({"id": "p", "type": "prompt", "message": text}))
        .unwrap();
    if let Err(e) = rpc.read_until_type("agent_settled", PI_TIMEOUT) {
        panic!(
            "pi did not settle ({e:?}):\n{}\nstderr: {}",
            rpc.transcript(),
            rpc.stderr_text()
        );
    }
    rpc.close_stdin();
    let status = rpc
        .wait_exit(Duration::from_secs(20))
        .unwrap()
        .expect("pi exits on EOF");
    assert_eq!(status.code(), Some(0), "stderr: {}", rpc.stderr_text());
    assert_eq!(rpc.stderr_text(), "", "pi wrote to stderr");
    let errors: Vec<&Value> = rpc
        .records
        .iter()
        .filter(|r| r["type"] == "extension_error" || r["success"] == false)
        .collect();
    assert!(errors.is_empty(), "pi reported errors: {errors:?}");
    rpc.records.clone()
}

fn slate_in(sandbox: &pi_env::PiSandbox, args: &[&str]) -> (i32, Value, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_slate"))
        .arg("--json")
        .args(args)
        .current_dir(&sandbox.work)
        .env("PI_CODING_AGENT_DIR", &sandbox.agent_dir)
        .env("HOME", &sandbox.home)
        .env("XDG_RUNTIME_DIR", sandbox.root())
        .env_remove("SLATE_SOCKET")
        .output()
        .unwrap();
    (
        out.status.code().unwrap_or(-1),
        serde_json::from_slice(&out.stdout).unwrap_or(Value::Null),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

fn sessions_in(sandbox: &pi_env::PiSandbox) -> Vec<PathBuf> {
    let dir = slate::store::paths::default_session_dir(&sandbox.agent_dir, &sandbox.work).unwrap();
    let mut v: Vec<PathBuf> =
        fs::read_dir(dir).map_or_else(|_| Vec::new(), |d| d.flatten().map(|e| e.path()).collect());
    v.sort();
    v
}

/// pi writes a session; Slate hands it off; pi `--continue`s the successor and, separately,
/// `--session`s the original, and both continue without error, the kickoff in context.
#[test]
fn real_pi_continues_sessions_slate_wrote() {
    let Some(pi) = pi_env::pi_or_skip("real_pi_continues_sessions_slate_wrote") else {
        return;
    };
    let fake = fake_llm::FakeLlm::start().unwrap();
    let sandbox = pi_env::PiSandbox::new("handoff", &fake.base_url()).unwrap();
    permit_fake_model(&sandbox.agent_dir, "off");
    pi_prompt(&sandbox, &pi, &[], "SCENARIO:TEXT first prompt");
    let first = sessions_in(&sandbox);
    assert_eq!(first.len(), 1, "pi wrote one session");
    let original = first[0].clone();
    let original_bytes = fs::read(&original).unwrap();

    let (code, report, err) = slate_in(
        &sandbox,
        &["handoff", "--track-boundary", "KICKOFF-MARKER carry on"],
    );
    assert_eq!(code, 0, "{err} {report}");
    assert_eq!(report["adoption"]["status"], "adopted", "{report}");
    let successor = PathBuf::from(report["successorFile"].as_str().unwrap());
    let successor_bytes = fs::read(&successor).unwrap();

    // --continue picks the successor (newest), keeps Slate's bytes, and appends after them.
    let records = pi_prompt(
        &sandbox,
        &pi,
        &["--continue"],
        "SCENARIO:TEXT after the handoff",
    );
    let state = records
        .iter()
        .find(|r| r["command"] == "get_state")
        .unwrap();
    assert_eq!(
        state["data"]["sessionId"], report["successorSessionId"],
        "{state}"
    );
    let assistant = records
        .iter()
        .rev()
        .find(|r| r["type"] == "message_end" && r["message"]["role"] == "assistant")
        .unwrap();
    assert_eq!(assistant["message"]["stopReason"], "stop", "{assistant}");
    let after = fs::read(&successor).unwrap();
    assert_eq!(&after[..successor_bytes.len()], &successor_bytes[..]);
    let s = session::read(&successor).unwrap();
    let kickoff_id = records_of(&s, "slate-kickoff");
    let first_pi = s
        .entries
        .iter()
        .position(|e| e.custom_type().is_none() && e.kind == "message")
        .unwrap();
    assert_eq!(
        s.entries[first_pi].parent_id.as_deref(),
        Some(kickoff_id.as_str()),
        "pi chains from Slate's leaf"
    );
    // The hidden kickoff reached the model.
    let last = fake.requests().last().unwrap().messages().to_vec();
    assert!(
        json!(last).to_string().contains("KICKOFF-MARKER"),
        "kickoff not in context"
    );

    // --session on the original file, which Slate appended to.
    pi_prompt(
        &sandbox,
        &pi,
        &["--session", original.to_str().unwrap()],
        "SCENARIO:TEXT back on the original",
    );
    let after = fs::read(&original).unwrap();
    assert!(after.len() > original_bytes.len());
    assert_eq!(&after[..original_bytes.len()], &original_bytes[..]);
    assert!(session::read(&original).unwrap().skipped_lines.is_empty());
}

fn records_of(s: &session::Session, custom_type: &str) -> String {
    s.entries
        .iter()
        .find(|e| e.custom_type() == Some(custom_type))
        .and_then(|e| e.id.clone())
        .unwrap()
}

/// While pi runs in the session's directory, Slate refuses to touch its session.
#[test]
fn real_pi_live_session_is_refused() {
    let Some(pi) = pi_env::pi_or_skip("real_pi_live_session_is_refused") else {
        return;
    };
    let fake = fake_llm::FakeLlm::start().unwrap();
    let sandbox = pi_env::PiSandbox::new("handoff-live", &fake.base_url()).unwrap();
    pi_prompt(&sandbox, &pi, &[], "SCENARIO:TEXT first prompt");
    let file = sessions_in(&sandbox).remove(0);
    let before = fs::read(&file).unwrap();
    let mut rpc = pi_env::RpcPi::spawn(&sandbox, &pi, &["--continue"]).unwrap();
    rpc.send(&json!({"id": "s", "type": "get_state"})).unwrap();
    rpc.read_until(PI_TIMEOUT, |r| r["id"] == "s").unwrap();
    let (code, v, _) = slate_in(&sandbox, &["handoff"]);
    assert_eq!(code, 1, "{v}");
    let error = v["error"]["message"].as_str().unwrap();
    assert!(error.contains("live pi process"), "{error}");
    assert!(error.contains(&format!("pid {}", rpc.pid())), "{error}");
    assert_eq!(fs::read(&file).unwrap(), before);
    assert_eq!(sessions_in(&sandbox).len(), 1);
    rpc.close_stdin();
    rpc.wait_exit(Duration::from_secs(20)).unwrap();
    // Once pi has exited, the handoff goes ahead.
    let (code, v, err) = slate_in(&sandbox, &["handoff"]);
    assert_eq!(code, 0, "{v} {err}");
}

/// With a coordinator serving the directory, the snapshot holds its threads; the generation
/// form of `slate resume` still goes to the coordinator.
#[test]
fn cli_handoff_takes_threads_from_a_serving_coordinator() {
    use std::io::{BufRead as _, BufReader};
    let env = Env::new();
    let run_dir = env.agent.parent().unwrap().to_owned();
    let mut server = Command::new(env!("CARGO_BIN_EXE_slate"))
        .args(["serve", "--backend", "sim", "--model", "fake/model"])
        .current_dir(&env.cwd)
        .env("PI_CODING_AGENT_DIR", &env.agent)
        .env("XDG_RUNTIME_DIR", &run_dir)
        .env_remove("SLATE_SOCKET")
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let mut lines = BufReader::new(server.stdout.take().unwrap()).lines();
    let parent = lines.next().unwrap().unwrap();
    assert!(parent.starts_with("slate serve: parent "), "{parent}");
    let _socket = lines.next();
    let (code, out, err) = slate(
        &env,
        &[
            "--json",
            "delegate",
            "--background",
            "Locate the startup code",
        ],
    );
    assert_eq!(code, 0, "{out} {err}");
    let child = serde_json::from_str::<Value>(&out).unwrap()["children"][0].clone();

    env.session(&[]);
    let (code, out, err) = slate(&env, &["--json", "handoff", "--user-request"]);
    let _ = server.kill();
    let _ = server.wait();
    assert_eq!(code, 0, "{out} {err}");
    let v: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(v["fleet"]["source"], "coordinator", "{v}");
    assert_eq!(v["fleet"]["threadCount"], 1, "{v}");
    let succ = PathBuf::from(v["successorFile"].as_str().unwrap());
    let h = &records(&succ, "slate-handoff")[0]["data"];
    assert_eq!(h["snapshot"]["threads"][0]["id"], child["id"], "{h}");

    // Once the coordinator is gone, the generation form reports it (exit 3), not the session
    // form.
    let target = format!("{}@1", child["id"].as_str().unwrap());
    let (code, _, err) = slate(&env, &["resume", &target, "go on"]);
    assert_eq!(code, 3, "{err}");
}

/// Makes a directory immutable (`chattr +i`: no new entries, existing files stay writable) and
/// undoes it on drop. `None` where the file system or the user cannot.
struct Immutable(PathBuf);
impl Immutable {
    fn set(dir: &Path) -> Option<Self> {
        let ok = Command::new("chattr")
            .arg("+i")
            .arg(dir)
            .output()
            .is_ok_and(|o| o.status.success());
        (ok && fs::write(dir.join("probe"), "").is_err()).then(|| Self(dir.to_owned()))
    }
}
impl Drop for Immutable {
    fn drop(&mut self) {
        let _ = Command::new("chattr").arg("-i").arg(&self.0).output();
    }
}

/// When the successor cannot be written, the attempt's purpose stays pending, and the retry
/// without an option keeps it.
#[test]
fn a_failed_transfer_keeps_the_purpose_for_the_retry() {
    let env = Env::new();
    let path = env.session(&[]);
    let Some(lock) = Immutable::set(&env.sessions) else {
        eprintln!(
            "SKIPPED: chattr +i is not available here [a_failed_transfer_keeps_the_purpose_for_the_retry]"
        );
        return;
    };
    let ctx = env.ctx(Some(&path), &ExactSelectionGate, &NoProbe, &untrusted);
    let err = run::handoff(&ctx, Some(Purpose::ContextBudget), None, Fleet::none("t")).unwrap_err();
    drop(lock);
    assert!(matches!(err, HandoffError::Transfer { .. }), "{err}");
    assert!(err.is_refusal());
    assert!(err.to_string().contains("stays pending"), "{err}");
    let attempts = records(&path, "slate-handoff-purpose");
    assert_eq!(attempts.len(), 1);
    assert_eq!(attempts[0]["data"]["status"], "pending");
    assert_eq!(
        fs::read_dir(&env.sessions).unwrap().count(),
        1,
        "no successor"
    );

    let r = run::handoff(&ctx, None, None, Fleet::none("t")).unwrap();
    assert_eq!(r.purpose, Purpose::ContextBudget, "retry keeps the purpose");
    assert_eq!(
        r.retry_of.as_ref(),
        attempts[0]["data"]["attemptId"]
            .as_str()
            .map(str::to_owned)
            .as_ref()
    );
    let attempts = records(&path, "slate-handoff-purpose");
    assert_eq!(attempts.last().unwrap()["data"]["status"], "consumed");
    // Consumed: the next bare request is a new user request.
    let v = rules::view(&session::read(&path).unwrap()).unwrap();
    assert_eq!(v.pending, None);
}

/// A failed save of the unpaused state keeps the pause; nothing is claimed or delivered.
#[test]
fn a_failed_unpause_save_keeps_the_pause() {
    let env = Env::new();
    let path = env.session(&[custom("slate-state", state(true, Some("adoption")))]);
    let before = fs::read(&path).unwrap();
    let Some(lock) = Immutable::set(&path) else {
        eprintln!(
            "SKIPPED: chattr +i is not available here [a_failed_unpause_save_keeps_the_pause]"
        );
        return;
    };
    let ctx = env.ctx(Some(&path), &ExactSelectionGate, &NoProbe, &untrusted);
    let err = run::resume(&ctx, None, None).unwrap_err();
    drop(lock);
    assert!(err.is_refusal(), "{err}");
    assert!(err.to_string().contains("the pause stays"), "{err}");
    assert_eq!(fs::read(&path).unwrap(), before);
    let v = rules::view(&session::read(&path).unwrap()).unwrap();
    assert_eq!(v.pause(), Some(Some(PauseReason::Adoption)));
    // Writable again: the resume goes through, once.
    let out = run::resume(&ctx, None, None).unwrap();
    assert_eq!(
        (out.pause_reason, out.kickoff),
        (ClearedPause::Adoption, "claimed")
    );
}

/// The routing gate an adoption pause uses: exact permissions of ordinary membership, the
/// definition's fixed effort, nothing while routing is blocked.
#[test]
fn routing_gate_permits_exact_permissions_at_their_fixed_effort() {
    use slate::handoff::gate::RoutingGate;
    use slate::policy::routing::{ProjectFile, SlateFile, resolve};
    let shipped = resolve(&SlateFile::absent("home"), &ProjectFile::Absent);
    let gate = RoutingGate {
        report: &shipped,
        home_file: None,
    };
    let choice = |m: &str, e: Option<&str>| ModelChoice {
        model: Some(m.to_owned()),
        effort: e.map(str::to_owned),
    };
    let ok = gate.permit(&choice("openai/gpt-6-luna", None)).unwrap();
    assert_eq!(
        ok.effort.map(slate::policy::model::Effort::as_str),
        Some("max"),
        "the fixed effort"
    );
    assert!(
        gate.permit(&choice("openai/gpt-6-luna", Some("max")))
            .is_ok()
    );
    let wrong_effort = gate
        .permit(&choice("openai/gpt-6-luna", Some("low")))
        .unwrap_err();
    assert_eq!(wrong_effort[0].path, "--effort");
    assert!(wrong_effort[0].rule.contains("luna-6"), "{wrong_effort:?}");
    let unknown = gate.permit(&choice("fake/fake-model", None)).unwrap_err();
    assert_eq!(unknown[0].path, "--model");
    let blocked_file = SlateFile {
        label: "home/slate.json",
        bytes: Some(br#"{"router": {"models": {"include": ["no-such-model"]}}}"#),
    };
    let blocked = resolve(&blocked_file, &ProjectFile::Absent);
    assert!(blocked.blocked);
    let refused = RoutingGate {
        report: &blocked,
        home_file: None,
    }
    .permit(&choice("openai/gpt-6-luna", None))
    .unwrap_err();
    assert!(refused[0].rule.contains("blocked"), "{refused:?}");
}

/// Issue 14, item 14: "a kickoff can be lost". Resuming an adoption pause used to save the
/// unpaused `slate-state` first and claim the kickoff in a second write; when only the second
/// failed (disk full, a file-size limit) the command exited 1 with `pauseCleared: true`, the
/// next `slate resume` said "not paused", and the kickoff was never delivered.
///
/// The real command runs under a file-size limit (`prlimit --fsize`, no root needed) at every
/// size from the successor's own length up to one that fits the whole resume, so some limit
/// falls between the state and the claim. Slate handles SIGXFSZ itself, so the write fails
/// with `EFBIG` instead of killing it. Each failure must exit 1 with the file exactly as it
/// was (the pause and the pending kickoff kept); the first limit that fits delivers the
/// kickoff, claimed before it is sent, exactly once.
#[test]
fn a_kickoff_is_never_lost_when_the_resume_write_fails_14() {
    let env = Env::new();
    env.session(&[]);
    // No routing permission yet: the successor's adoption pauses with its kickoff pending.
    let (code, out, err) = slate(&env, &["--json", "handoff", "--post-check", "carry on"]);
    assert_eq!(code, 0, "{err}");
    let v: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(v["adoption"]["status"], "paused", "{v}");
    assert_eq!(v["adoption"]["kickoff"], "pending", "{v}");
    let succ = PathBuf::from(v["successorFile"].as_str().unwrap());
    let original = fs::read(&succ).unwrap();
    permit_fake_model(&env.agent, "off");

    let resume_under = |limit: usize| {
        let out = Command::new("prlimit")
            .arg(format!("--fsize={limit}"))
            .arg("--")
            .arg(env!("CARGO_BIN_EXE_slate"))
            .args(["--json", "resume", "--session", succ.to_str().unwrap()])
            .current_dir(&env.cwd)
            .env("PI_CODING_AGENT_DIR", &env.agent)
            .env("HOME", env.agent.parent().unwrap())
            .env("XDG_RUNTIME_DIR", env.agent.parent().unwrap())
            .env_remove("SLATE_SOCKET")
            .output()
            .expect("prlimit (util-linux) runs");
        (
            out.status.code(),
            String::from_utf8_lossy(&out.stdout).into_owned(),
            String::from_utf8_lossy(&out.stderr).into_owned(),
        )
    };
    let mut failures = 0;
    let mut delivered = false;
    for limit in (original.len()..original.len() + 8192).step_by(61) {
        let (code, out, err) = resume_under(limit);
        if code == Some(0) {
            delivered = true;
            let v: Value = serde_json::from_str(&out).unwrap();
            assert_eq!(v["kickoff"], "claimed", "{v}");
            break;
        }
        failures += 1;
        assert_eq!(
            code,
            Some(1),
            "limit {limit}: a failed write exits 1 (not killed by SIGXFSZ): {out}{err}"
        );
        let v: Value = serde_json::from_str(&out).unwrap();
        let message = v["error"]["message"].as_str().unwrap_or_default();
        assert!(message.contains("the kickoff stays pending"), "{v}");
        assert!(v.get("pauseCleared").is_none(), "{v}");
        assert_eq!(
            fs::read(&succ).unwrap(),
            original,
            "limit {limit}: the file is cut back, the pause and the pending kickoff kept"
        );
        let view = rules::view(&session::read(&succ).unwrap()).unwrap();
        assert_eq!(view.pause(), Some(Some(PauseReason::Adoption)));
        assert!(view.claimed.is_empty(), "limit {limit}: nothing claimed");
    }
    assert!(failures > 0, "the smallest limit must fail");
    assert!(
        delivered,
        "a limit that fits the resume delivers the kickoff"
    );
    let kinds = kinds(&succ);
    assert_eq!(
        kinds[kinds.len() - 3..],
        ["slate-state", "slate-kickoff-claimed", "slate-kickoff"],
        "{kinds:?}"
    );
    assert_eq!(records(&succ, "slate-kickoff").len(), 1);
    assert_eq!(&fs::read(&succ).unwrap()[..original.len()], &original[..]);
}

/// The session id real pi 1.6 opens with `--continue` in the sandbox (asked with `get_state`,
/// no prompt).
fn pi_continue_session_id(sandbox: &pi_env::PiSandbox, pi: &pi_env::PiCommand) -> String {
    let mut rpc = pi_env::RpcPi::spawn(sandbox, pi, &["--continue"]).unwrap();
    rpc.send(&json!({"id": "s", "type": "get_state"})).unwrap();
    let state = rpc
        .read_until(PI_TIMEOUT, |r| r["id"] == "s")
        .unwrap_or_else(|e| panic!("no get_state answer ({e:?}): {}", rpc.stderr_text()));
    rpc.close_stdin();
    let _ = rpc.wait_exit(Duration::from_secs(20));
    state["data"]["sessionId"].as_str().unwrap().to_owned()
}

/// Issue 14, item 13, Slate's half: "Slate's own 'newest session' breaks the tie by name and
/// disagrees with pi". Two sessions with the same mtime: real pi's `--continue` takes the one
/// whose name sorts first, and so do Slate's [`session::most_recent_session`] and
/// `slate resume` (whose refusal names the session it chose).
#[test]
fn slate_and_pi_break_an_mtime_tie_alike_13() {
    let Some(pi) = pi_env::pi_or_skip("slate_and_pi_break_an_mtime_tie_alike_13") else {
        return;
    };
    let sandbox = pi_env::PiSandbox::new("tie", "http://127.0.0.1:9/v1").unwrap();
    let dir = slate::store::paths::default_session_dir(&sandbox.agent_dir, &sandbox.work).unwrap();
    let cwd = sandbox.work.display().to_string();
    let older = "0c6c0c6c-0000-4000-8000-000000000001";
    let newer = "0c6c0c6c-0000-4000-8000-000000000002";
    let a = session::create_session(&dir, older, &cwd, None, &[], 1_796_000_000_000).unwrap();
    let b = session::create_session(&dir, newer, &cwd, None, &[], 1_796_000_005_000).unwrap();
    let tie = std::time::SystemTime::now();
    for path in [&a.path, &b.path] {
        fs::OpenOptions::new()
            .append(true)
            .open(path)
            .unwrap()
            .set_modified(tie)
            .unwrap();
    }

    let pis = pi_continue_session_id(&sandbox, &pi);
    assert_eq!(pis, older, "pi 1.6 keeps directory (name) order on a tie");
    let slates = session::most_recent_session(&dir, &sandbox.work, false).unwrap();
    assert_eq!(slates, a.path, "Slate takes pi's choice");
    let (code, v, err) = slate_in(&sandbox, &["resume"]);
    assert_eq!(code, 1, "{err}");
    let message = v["error"]["message"].as_str().unwrap_or_default();
    assert!(message.contains(older), "slate resume chose another: {v}");
}

/// Issue 14, item 13: "a handoff does not always replace the main session". When the
/// successor stays paused (here an adoption pause: no model is permitted yet), the original
/// and the successor used to end with the same mtime, and real pi's `--continue` took the
/// original. After `slate handoff` the successor is what pi continues and what Slate takes.
#[test]
fn a_paused_successor_is_what_pi_continues_13() {
    let Some(pi) = pi_env::pi_or_skip("a_paused_successor_is_what_pi_continues_13") else {
        return;
    };
    let fake = fake_llm::FakeLlm::start().unwrap();
    let sandbox = pi_env::PiSandbox::new("paused-successor", &fake.base_url()).unwrap();
    pi_prompt(&sandbox, &pi, &[], "SCENARIO:TEXT first prompt");
    let (code, report, err) = slate_in(&sandbox, &["handoff", "--post-check", "check it"]);
    assert_eq!(code, 0, "{err} {report}");
    assert_eq!(report["adoption"]["status"], "paused", "{report}");
    let successor = report["successorSessionId"].as_str().unwrap();

    assert_eq!(pi_continue_session_id(&sandbox, &pi), successor);
    let dir = slate::store::paths::default_session_dir(&sandbox.agent_dir, &sandbox.work).unwrap();
    let slates = session::most_recent_session(&dir, &sandbox.work, false).unwrap();
    assert_eq!(
        slates.to_str(),
        report["successorFile"].as_str(),
        "Slate takes the successor too"
    );
}

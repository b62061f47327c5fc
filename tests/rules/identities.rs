//! Rule 1 — identities and snapshots [Registry, controls and final delivery].

use slate::core::{ChildRef, Party, Presence, Status};
use uuid::Uuid;

use crate::support::{Harness, ROOT, scout};

const ID: &str = "0b6a5c3e-9f21-4d7a-8c11-2f3e4d5a6b7c";

#[test]
fn child_ref_is_displayed_as_lowercase_uuid_at_generation() {
    let r = ChildRef::new(Uuid::parse_str(ID).unwrap(), 7);
    assert_eq!(r.to_string(), format!("{ID}@7"));
    let upper = ChildRef::new(Uuid::parse_str(&ID.to_uppercase()).unwrap(), 1);
    assert_eq!(
        upper.to_string(),
        format!("{ID}@1"),
        "display is canonical lowercase"
    );
}

#[test]
fn child_ref_parses_only_full_hyphenated_uuid_at_positive_generation() {
    let id = Uuid::parse_str(ID).unwrap();
    let accepted = [
        (format!("{ID}@1"), 1),
        (format!("{ID}@64"), 64),
        (format!("{ID}@4294967295"), u32::MAX),
        (format!("{}@2", ID.to_uppercase()), 2),
    ];
    for (text, generation) in accepted {
        let parsed: ChildRef = text.parse().unwrap_or_else(|e| panic!("{text}: {e}"));
        assert_eq!(parsed, ChildRef::new(id, generation), "{text}");
    }
    let simple = ID.replace('-', "");
    let rejected = [
        ("no generation", ID.to_owned()),
        ("empty generation", format!("{ID}@")),
        ("zero generation", format!("{ID}@0")),
        ("leading zero", format!("{ID}@01")),
        ("signed generation", format!("{ID}@+1")),
        ("negative generation", format!("{ID}@-1")),
        ("overflowing generation", format!("{ID}@4294967296")),
        ("latest alias", format!("{ID}@latest")),
        ("two generations", format!("{ID}@1@2")),
        ("prefix id", "0b6a5c3e@1".to_owned()),
        ("truncated id", format!("{}@1", &ID[..35])),
        ("braced id", format!("{{{ID}}}@1")),
        ("simple id", format!("{simple}@1")),
        ("urn id", format!("urn:uuid:{ID}@1")),
        ("padded", format!(" {ID}@1")),
        ("non-hex", format!("{}g@1", &ID[..35])),
        ("empty", String::new()),
    ];
    for (label, text) in rejected {
        assert!(
            text.parse::<ChildRef>().is_err(),
            "{label}: {text:?} must be rejected"
        );
    }
}

#[test]
fn child_ref_round_trips_through_display_and_party_wire_form() {
    let r = ChildRef::new(Uuid::parse_str(ID).unwrap(), 3);
    assert_eq!(r.to_string().parse::<ChildRef>().unwrap(), r);
    let party = Party::Child(r);
    let json = serde_json::to_string(&party).unwrap();
    assert_eq!(json, format!("\"{ID}@3\""));
    assert_eq!(serde_json::from_str::<Party>(&json).unwrap(), party);
    assert_eq!(serde_json::to_string(&Party::Root).unwrap(), "\"root\"");
    assert!(serde_json::from_str::<Party>(&format!("\"{}@3\"", &ID[..8])).is_err());
}

#[test]
fn unknown_references_are_never_prefix_matched_or_resolved_to_latest() {
    let mut h = Harness::new();
    let a = h.admit_one(ROOT, scout("a"));
    h.complete(a);
    let a2 = h.followup(a).unwrap();
    assert!(
        h.coord.snapshot(ChildRef::new(a.id, 3)).is_none(),
        "no generation 3"
    );
    assert!(
        h.coord.snapshot(ChildRef::new(a.id, 0)).is_none(),
        "no generation 0"
    );
    assert!(h.coord.snapshot(ChildRef::new(Uuid::nil(), 1)).is_none());
    // Mutations take the exact current generation; the stale one is refused, not redirected.
    assert_eq!(crate::support::code(&h.stop(a)), "stale-generation");
    assert_eq!(
        crate::support::code(&h.stop(ChildRef::new(a.id, 3))),
        "unknown-identity"
    );
    assert_eq!(
        h.status(a2),
        Status::Setup,
        "the refused stop did not touch generation 2"
    );
}

#[test]
fn child_snapshot_serializes_contract_fields_in_camel_case_with_nullable_telemetry() {
    let mut h = Harness::new();
    let r = h.admit_one(ROOT, scout("Locate startup code"));
    let json = serde_json::to_value(h.snap(r)).unwrap();
    let object = json.as_object().unwrap();
    for field in [
        "id",
        "generation",
        "parentId",
        "depth",
        "status",
        "profile",
        "cwd",
        "assignment",
        "activity",
        "progress",
        "result",
        "model",
        "effort",
        "telemetry",
        "limits",
        "toolCalls",
        "writerLease",
        "disposed",
        "createdAt",
        "endedAt",
        "tools",
        "leafTools",
        "skills",
        "capabilityDenials",
        "retainedContext",
        "window",
    ] {
        assert!(object.contains_key(field), "missing {field}: {json}");
    }
    for key in object.keys() {
        assert!(!key.contains('_'), "{key} is not camelCase");
    }
    assert_eq!(json["status"], "setup");
    assert_eq!(json["profile"], "scout");
    assert_eq!(json["parentId"], crate::support::root_id().to_string());
    assert!(
        object.get("parentGeneration").is_none(),
        "root children have no parentGeneration"
    );
    let telemetry = &json["telemetry"];
    for field in ["tokens", "cost", "context"] {
        assert!(
            telemetry[field].is_null(),
            "telemetry.{field} is null until reported"
        );
        assert!(
            telemetry.as_object().unwrap().contains_key(field),
            "telemetry.{field} is present"
        );
    }
    assert_eq!(
        telemetry["requests"], 0,
        "the registry's own dispatch count starts at 0"
    );
    for field in ["activity", "progress", "result", "endedAt"] {
        assert!(json[field].is_null(), "{field} is null before it is known");
    }
    assert_eq!(json["limits"]["deadlineMs"], 1_800_000);
    assert_eq!(json["window"]["deadlineAt"], 1_000 + 1_800_000);
}

#[test]
fn list_keeps_identity_admission_order_with_current_generations_only() {
    let mut h = Harness::new();
    let refs = h.admit(ROOT, vec![scout("a"), scout("b"), scout("c")]);
    h.complete(refs[0]);
    let a2 = h.followup(refs[0]).unwrap();
    let d = h.admit_one(ROOT, scout("d"));
    let listed: Vec<ChildRef> = h
        .coord
        .list()
        .iter()
        .map(slate::core::ChildSnapshot::child_ref)
        .collect();
    assert_eq!(listed, vec![a2, refs[1], refs[2], d]);
}

#[test]
fn snapshot_reads_a_pinned_generation_and_generations_returns_immutable_history() {
    let mut h = Harness::new();
    let a = h.admit_one(ROOT, scout("first assignment"));
    h.complete(a);
    let first = h.snap(a);
    let a2 = h.followup(a).unwrap();
    h.ready(a2);
    h.settle(a2, "second result");
    assert_eq!(h.snap(a), first, "generation 1 is immutable after renewal");
    assert_eq!(h.snap(a).assignment, "first assignment");
    assert_eq!(h.snap(a2).assignment, "next assignment");
    let history = h.coord.generations(a.id);
    assert_eq!(history.len(), 2);
    assert_eq!(history[0], first);
    assert_eq!(history[1].generation, 2);
    assert_eq!(history[1].status, Status::Draining);
    assert!(h.coord.generations(Uuid::nil()).is_empty());
    let view = h.coord.status(a).unwrap();
    assert_eq!(
        view.snapshot, first,
        "status pins the requested historical generation"
    );
    assert_eq!(view.generations.len(), 2);
}

#[test]
fn agents_reports_current_presence_separately_from_snapshots() {
    let mut h = Harness::with(crate::support::policy(1, 8));
    let refs = h.admit(ROOT, vec![scout("a"), scout("b"), scout("c")]);
    h.complete(refs[0]);
    h.park(refs[0]).unwrap();
    h.stop(refs[2]).unwrap();
    let agents = h.coord.agents();
    let got: Vec<(Uuid, u32, Presence)> = agents
        .iter()
        .map(|a| (a.id, a.generation, a.presence))
        .collect();
    assert_eq!(
        got,
        vec![
            (refs[0].id, 1, Presence::Parked),
            (refs[1].id, 1, Presence::Active),
            (refs[2].id, 1, Presence::Stopped),
        ]
    );
    assert_eq!(
        h.status(refs[0]),
        Status::Settled,
        "parking does not rewrite status"
    );
}

#[test]
fn uuids_are_never_reassigned_across_identities_or_generations() {
    let mut h = Harness::with(crate::support::policy(16, 256));
    let mut seen = std::collections::HashSet::new();
    for _ in 0..4 {
        let refs = h.admit(ROOT, (0..16).map(|i| scout(&format!("t{i}"))).collect());
        for r in refs {
            assert!(seen.insert(r.id), "{r} reused an id");
            assert_ne!(r.id, crate::support::root_id());
            h.complete(r);
        }
    }
    let first = h.coord.list()[0].child_ref();
    let renewed = h.followup(first).unwrap();
    assert_eq!(renewed.id, first.id, "renewal keeps the UUID");
    assert_eq!(renewed.generation, 2);
}

#[test]
fn every_registry_change_is_announced_once_per_generation_per_input() {
    let mut h = Harness::with(crate::support::policy(1, 8));
    let (request, effects) = h.call_effects(|request| slate::core::Input::Admit {
        request,
        actor: ROOT,
        tasks: vec![scout("a"), scout("b")],
        background: true,
    });
    let changed: Vec<ChildRef> = effects
        .iter()
        .filter_map(|e| match e {
            slate::core::Effect::Changed(r) => Some(*r),
            _ => None,
        })
        .collect();
    let refs: Vec<ChildRef> = h
        .coord
        .list()
        .iter()
        .map(slate::core::ChildSnapshot::child_ref)
        .collect();
    assert_eq!(changed, refs, "one change per touched generation, in order");
    assert!(crate::support::reply_to(&effects, request).unwrap().is_ok());
    let effects = h.ready(refs[0]);
    assert_eq!(effects, vec![slate::core::Effect::Changed(refs[0])]);
    let event = slate::core::RegistryEvent {
        kind: slate::core::RegistryEventKind::Changed,
        child: h.snap(refs[0]),
        event: None,
    };
    let json = serde_json::to_value(&event).unwrap();
    assert_eq!(json["type"], "changed");
    assert_eq!(json["child"]["status"], "running");
    assert!(json.get("event").is_none());
}

#[test]
fn progress_is_bounded_to_4096_characters() {
    let mut h = Harness::new();
    let r = h.running(scout("a"));
    h.event(r, slate::core::WorkerEvent::Progress("é".repeat(4096)));
    assert_eq!(
        h.snap(r).progress.unwrap().chars().count(),
        4096,
        "exactly at the bound"
    );
    h.event(r, slate::core::WorkerEvent::Progress("x".repeat(5000)));
    let progress = h.snap(r).progress.unwrap();
    assert_eq!(progress.chars().count(), 4096);
    assert!(progress.ends_with('…'), "the cut is marked");
}

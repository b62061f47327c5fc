//! `slate demo`: the scenario really runs through the coordinator, deterministically.

use std::process::Command;

use slate::core::{Role, Status};

fn by_assignment<'a>(
    run: &'a slate::demo::DemoRun,
    prefix: &str,
) -> Vec<&'a slate::core::ChildSnapshot> {
    run.generations
        .iter()
        .filter(|s| s.assignment.starts_with(prefix))
        .collect()
}

#[test]
fn demo_scenario_shows_each_contract_behaviour() {
    let run = slate::demo::run(7);
    let one = |prefix: &str| by_assignment(&run, prefix)[0].clone();

    // A request-limit cancellation keeps the first committed reason and counts exactly.
    let review = one("Review");
    assert_eq!(review.status, Status::Cancelled);
    assert_eq!(
        review.limit_reason,
        Some(slate::core::LimitReason::Requests)
    );
    assert_eq!(review.telemetry.requests, Some(3));

    // A provider failure fails only its own assignment.
    assert_eq!(one("Check the error").status, Status::Failed);
    assert_eq!(one("Fix").status, Status::Settled);

    // The deadline paused the survey; the explicit resume finished it in window 2.
    let survey = one("Survey");
    assert_eq!(survey.status, Status::Settled);
    assert_eq!(survey.window.number, 2);
    assert!(
        run.timeline
            .iter()
            .any(|e| e.event.starts_with("paused (deadline)"))
    );

    // Nested delegation: refused while capacity was taken, admitted once it was free.
    assert!(run.timeline.iter().any(|e| {
        e.event
            .contains("Nested capacity unavailable; no permit lending")
    }));
    let nested = by_assignment(&run, "Find where");
    assert_eq!(nested.len(), 2);
    assert!(
        nested
            .iter()
            .all(|s| s.depth == 2 && s.profile == Role::Scout && s.status == Status::Settled)
    );

    // The followup started generation 2 of the same identity.
    let scout = by_assignment(&run, "Locate");
    let followup = by_assignment(&run, "Also list");
    assert_eq!(followup[0].id, scout[0].id);
    assert_eq!(followup[0].generation, 2);

    // Writers never overlapped: the second starts after the first ended.
    let fix = one("Fix");
    let test = one("Add a regression");
    assert!(test.created_at <= fix.ended_at.unwrap());

    // One outcome per call: the batch, the nested call, the resume and the followup.
    let outcomes = run
        .timeline
        .iter()
        .filter(|e| e.event.starts_with("window outcome"))
        .count();
    assert_eq!(outcomes, 4);
}

#[test]
fn demo_is_deterministic_for_a_seed() {
    let a = serde_json::to_string(&slate::demo::run(11)).unwrap();
    let b = serde_json::to_string(&slate::demo::run(11)).unwrap();
    assert_eq!(a, b);
}

#[test]
fn demo_command_prints_timeline_and_outcomes() {
    let out = Command::new(env!("CARGO_BIN_EXE_slate"))
        .arg("demo")
        .env("COLUMNS", "100")
        .output()
        .unwrap();
    assert!(out.status.success());
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(text.contains("Timeline (virtual time)"));
    assert!(text.contains("Outcomes (every generation"));
    for line in text.lines() {
        // Full identities may exceed the width; every other line fits.
        if line.trim_start().chars().nth(8) != Some('-') {
            assert!(
                slate::text::width(line) <= 100,
                "line wider than 100 columns: {line:?}"
            );
        }
    }
}

#[test]
fn demo_json_is_machine_readable() {
    let out = Command::new(env!("CARGO_BIN_EXE_slate"))
        .args(["demo", "--json"])
        .output()
        .unwrap();
    assert!(out.status.success());
    let value: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(value["generations"].as_array().unwrap().len(), 10);
    assert!(value["generations"][0]["telemetry"]["tokens"]["cacheRead"].is_u64());
    assert!(value["timeline"].as_array().unwrap().len() > 20);
}

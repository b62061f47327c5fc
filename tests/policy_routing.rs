//! Spec 002 "Shipped definitions", "Configuration", "Prompt limits" and spec 000
//! `workerExtensions`: one table per rule.

#![allow(clippy::unwrap_used, reason = "test fixtures fail loudly")]

use proptest::prelude::*;
use serde_json::json;
use slate::policy::model::Effort;
use slate::policy::routing::prompt::{line_count, portable_len, render};
use slate::policy::routing::{
    ErrorClass, LogicalModel, MAX_PROMPT_CHARACTERS, MAX_PROMPT_LINES, Origin, ProjectFile,
    RoutingPolicy, RoutingReport, SlateFile, SourceStatus, WITHDRAWN, extensions, resolve,
};

const HOME: &str = "/home/u/.pi/agent/slate.json";
const PROJECT: &str = "/work/p/.pi/slate.json";

fn home(text: &str) -> RoutingReport {
    resolve(
        &SlateFile {
            label: HOME,
            bytes: Some(text.as_bytes()),
        },
        &ProjectFile::Absent,
    )
}

fn layered(home_text: Option<&str>, project_text: Option<&str>) -> RoutingReport {
    resolve(
        &SlateFile {
            label: HOME,
            bytes: home_text.map(str::as_bytes),
        },
        &ProjectFile::Trusted(SlateFile {
            label: PROJECT,
            bytes: project_text.map(str::as_bytes),
        }),
    )
}

fn policy(report: &RoutingReport) -> &RoutingPolicy {
    assert!(
        !report.blocked,
        "unexpected errors: {:#?}",
        report
            .errors
            .iter()
            .map(ToString::to_string)
            .collect::<Vec<_>>()
    );
    report.policy.as_ref().unwrap()
}

/// `(class, file, path)` of every error.
fn errors(report: &RoutingReport) -> Vec<(ErrorClass, String, String)> {
    report
        .errors
        .iter()
        .map(|e| {
            (
                e.class,
                e.problem.file.clone().unwrap_or_default(),
                e.problem.path.clone(),
            )
        })
        .collect()
}

fn has_error(report: &RoutingReport, class: ErrorClass, path: &str) -> bool {
    report
        .errors
        .iter()
        .any(|e| e.class == class && e.problem.path == path)
}

fn add_entry(name: &str) -> serde_json::Value {
    json!({
        "model": name, "capabilityRating": 48, "effort": "medium", "costRating": 20,
        "preferredProvider": "acme", "providers": {"acme": "acme-fast-v2"},
        "guidelines": [], "cautions": []
    })
}

fn router(models: &serde_json::Value) -> String {
    json!({ "router": { "models": models } }).to_string()
}

// ---------------------------------------------------------------------------------------
// Shipped definitions

/// One tabled row: model, effort, capability, cost, preferred provider and its id, guidance,
/// cautions.
type Tabled = (
    &'static str,
    Effort,
    u8,
    u8,
    &'static str,
    &'static str,
    &'static str,
    Vec<&'static str>,
);

#[test]
#[allow(clippy::too_many_lines, reason = "the spec's table, word for word")]
fn shipped_definitions_are_exactly_as_tabled() {
    let report = resolve(&SlateFile::absent(HOME), &ProjectFile::Absent);
    let p = policy(&report);
    let scope = "May exceed explicit scope or infer permission from earlier requests. Check changes against stated exclusions and approval requirements.";
    let table: [Tabled; 6] = [
        (
            "luna-6",
            Effort::Max,
            45,
            5,
            "openai",
            "gpt-6-luna",
            "Auxiliary tasks only, such as file location, check-result collection, or routine text management such as modifying research logs. Never primary research, implementation, design, or review. Consumer-contract work only when auxiliary.",
            vec![
                "May treat supplied repair context as permission to implement despite explicit task limits. Restrict write access for record-only work and verify the changed files.",
                "Do not use Luna to handle complex texts.",
            ],
        ),
        (
            "claude-sonnet-5.5",
            Effort::High,
            45,
            54,
            "anthropic",
            "claude-sonnet-5-5",
            "",
            vec![scope],
        ),
        (
            "sol-6.1",
            Effort::High,
            85,
            20,
            "openai",
            "gpt-6.1-sol",
            "Default thread choice.",
            vec![
                "When blocked, may substitute unapproved resources or perform destructive cleanup. Require permission before either action.",
            ],
        ),
        (
            "gemini-3.8-flash",
            Effort::Medium,
            55,
            30,
            "google-vertex",
            "gemini-3.8-flash",
            "Default thread choice. Generally prefer over Luna when available. A more specific active guideline overrides this general Flash preference.",
            vec![
                "Do not use as a reviewer. It relies too much on passing tests and exact-size assertions. Verify source citations and distinguish proposed behavior from existing behavior.",
            ],
        ),
        (
            "claude-opus-5.5",
            Effort::High,
            90,
            65,
            "anthropic",
            "claude-opus-5-5",
            "Reviewer for each proved DESIGN-TRIGGERING focus area, in adversarial design review and in implementation area review. Do not select Opus 5.5 as the default implementer. If a lower-capability model repeatedly fails at implementation, first ask Opus 5.5 to investigate and provide detailed repair instructions. Let the implementer try those instructions. Use Opus 5.5 as the implementer only if that guided attempt also fails. Treat that use as an exception. Select another suitable model for later implementation work. Existing approval requirements and repair limits still apply.",
            vec![scope],
        ),
        (
            "gpt-6-astra",
            Effort::Medium,
            86,
            60,
            "openai",
            "gpt-6-astra",
            "Do not select Astra as the default implementer. Prefer Sol 6.1 over Astra.",
            vec![],
        ),
    ];
    assert_eq!(p.definitions.len(), 6);
    for (i, (name, effort, cap, cost, preferred, id, guidance, cautions)) in
        table.iter().enumerate()
    {
        let d = &p.definitions[i];
        assert_eq!(d.model, *name);
        assert_eq!(d.effort, *effort, "{name}");
        assert_eq!(d.capability_rating, *cap, "{name}");
        assert_eq!(d.cost_rating, *cost, "{name}");
        assert_eq!(d.preferred_provider, *preferred, "{name}");
        assert_eq!(
            d.providers,
            vec![((*preferred).to_owned(), (*id).to_owned())],
            "{name}: the exact initial permission"
        );
        let expected: Vec<&str> = if guidance.is_empty() {
            vec![]
        } else {
            vec![*guidance]
        };
        assert_eq!(d.guidelines, expected, "{name}");
        assert_eq!(d.cautions, *cautions, "{name}");
        assert_eq!(d.origin, Origin::Shipped);
        assert!(d.sources.values().all(|s| s == "shipped"));
    }
    assert_eq!(
        p.ordinary,
        table.iter().map(|t| t.0.to_owned()).collect::<Vec<_>>()
    );
    assert!(p.definition("fable").is_none(), "Fable is not active");
    assert_eq!(p.compressor.len(), 1);
    assert_eq!(p.compressor[0].model, "claude-sonnet-5.5");
    assert_eq!(p.compressor[0].effort, Effort::Medium);
    assert_eq!(
        p.definition("claude-sonnet-5.5").unwrap().effort,
        Effort::High
    );
    assert!(report.errors.is_empty() && report.warnings.is_empty());
    assert!(!report.evidence_limits.is_empty());
}

// ---------------------------------------------------------------------------------------
// Critical errors: one row per class and position

#[test]
#[allow(
    clippy::too_many_lines,
    reason = "one row per error class and position"
)]
fn every_critical_error_class_is_reported_with_file_path_and_rule() {
    let add = |extra: serde_json::Value| {
        let mut entry = add_entry("project-fast");
        for (k, v) in extra.as_object().unwrap() {
            if v.is_null() {
                entry.as_object_mut().unwrap().remove(k);
            } else {
                entry[k] = v.clone();
            }
        }
        router(&json!({ "add": [entry] }))
    };
    let cases: Vec<(&str, String, ErrorClass, &str)> = vec![
        // invalid JSON and shapes
        ("not JSON", "{".to_owned(), ErrorClass::InvalidJson, "$"),
        ("root array", "[]".to_owned(), ErrorClass::InvalidJson, "$"),
        ("router string", r#"{"router": "x"}"#.to_owned(), ErrorClass::InvalidValue, "$.router"),
        ("models string", r#"{"router": {"models": "x"}}"#.to_owned(), ErrorClass::InvalidValue, "$.router.models"),
        ("include object", router(&json!({"include": {}})), ErrorClass::InvalidValue, "$.router.models.include"),
        ("include number item", router(&json!({"include": [1]})), ErrorClass::InvalidValue, "$.router.models.include[0]"),
        ("add object", router(&json!({"add": {}})), ErrorClass::InvalidValue, "$.router.models.add"),
        ("add item string", router(&json!({"add": ["x"]})), ErrorClass::InvalidValue, "$.router.models.add[0]"),
        ("replace item string", router(&json!({"replace": ["x"]})), ErrorClass::InvalidValue, "$.router.models.replace[0]"),
        ("compressor list", r#"{"router": {"compressor": []}}"#.to_owned(), ErrorClass::InvalidValue, "$.router.compressor"),
        ("compressor models object", r#"{"router": {"compressor": {"models": {}}}}"#.to_owned(), ErrorClass::InvalidValue, "$.router.compressor.models"),
        // unknown fields
        ("unknown router field", r#"{"router": {"bogus": 1}}"#.to_owned(), ErrorClass::UnknownField, "$.router.bogus"),
        ("unknown models field", router(&json!({"includes": []})), ErrorClass::UnknownField, "$.router.models.includes"),
        ("unknown add field", add(json!({"notes": "x"})), ErrorClass::UnknownField, "$.router.models.add[0].notes"),
        ("unknown replace field", router(&json!({"replace": [{"model": "sol-6.1", "speed": 1}]})), ErrorClass::UnknownField, "$.router.models.replace[0].speed"),
        ("unknown compressor field", r#"{"router": {"compressor": {"model": []}}}"#.to_owned(), ErrorClass::UnknownField, "$.router.compressor.model"),
        ("unknown compressor entry field", r#"{"router": {"compressor": {"models": [{"model": "sol-6.1", "effort": "low", "x": 1}]}}}"#.to_owned(), ErrorClass::UnknownField, "$.router.compressor.models[0].x"),
        // duplicate names
        ("duplicate include", router(&json!({"include": ["luna-6", "luna-6"]})), ErrorClass::DuplicateName, "$.router.models.include[1]"),
        ("duplicate exclude", router(&json!({"exclude": ["luna-6", "luna-6"]})), ErrorClass::DuplicateName, "$.router.models.exclude[1]"),
        ("duplicate add", router(&json!({"add": [add_entry("a1"), add_entry("a1")]})), ErrorClass::DuplicateName, "$.router.models.add[1].model"),
        ("add a shipped name", router(&json!({"add": [add_entry("sol-6.1")]})), ErrorClass::DuplicateName, "$.router.models.add[0].model"),
        ("duplicate replace", router(&json!({"replace": [{"model": "sol-6.1"}, {"model": "sol-6.1"}]})), ErrorClass::DuplicateName, "$.router.models.replace[1].model"),
        ("duplicate compressor", r#"{"router": {"compressor": {"models": [{"model": "sol-6.1", "effort": "low"}, {"model": "sol-6.1", "effort": "high"}]}}}"#.to_owned(), ErrorClass::DuplicateName, "$.router.compressor.models[1].model"),
        ("duplicate provider key", r#"{"router": {"models": {"add": [{"model": "a", "capabilityRating": 1, "effort": "low", "costRating": 1, "preferredProvider": "p", "providers": {"p": "x", "p": "y"}, "guidelines": [], "cautions": []}]}}}"#.to_owned(), ErrorClass::DuplicateName, "$.router.models.add[0].providers.p"),
        ("duplicate key", r#"{"router": {"models": {}, "models": {}}}"#.to_owned(), ErrorClass::DuplicateName, "$.router.models"),
        ("duplicate entry field", r#"{"router": {"models": {"replace": [{"model": "sol-6.1", "cautions": [], "cautions": []}]}}}"#.to_owned(), ErrorClass::DuplicateName, "$.router.models.replace[0].cautions"),
        // incomplete definitions
        ("add missing field", add(json!({"cautions": null})), ErrorClass::IncompleteDefinition, "$.router.models.add[0]"),
        ("replace without model", router(&json!({"replace": [{"effort": "low"}]})), ErrorClass::IncompleteDefinition, "$.router.models.replace[0]"),
        ("effort change without ratings", router(&json!({"replace": [{"model": "sol-6.1", "effort": "max"}]})), ErrorClass::IncompleteDefinition, "$.router.models.replace[0]"),
        ("effort change with one rating", router(&json!({"replace": [{"model": "sol-6.1", "effort": "max", "costRating": 3}]})), ErrorClass::IncompleteDefinition, "$.router.models.replace[0]"),
        ("compressor entry without effort", r#"{"router": {"compressor": {"models": [{"model": "sol-6.1"}]}}}"#.to_owned(), ErrorClass::IncompleteDefinition, "$.router.compressor.models[0]"),
        ("empty provider map", add(json!({"providers": {}})), ErrorClass::IncompleteDefinition, "$.router.models.add[0].providers"),
        // invalid ratings
        ("rating 0", add(json!({"capabilityRating": 0})), ErrorClass::InvalidRating, "$.router.models.add[0].capabilityRating"),
        ("rating 101", add(json!({"costRating": 101})), ErrorClass::InvalidRating, "$.router.models.add[0].costRating"),
        ("rating fraction", add(json!({"costRating": 50.5})), ErrorClass::InvalidRating, "$.router.models.add[0].costRating"),
        ("rating string", add(json!({"capabilityRating": "50"})), ErrorClass::InvalidRating, "$.router.models.add[0].capabilityRating"),
        ("rating negative", add(json!({"capabilityRating": -1})), ErrorClass::InvalidRating, "$.router.models.add[0].capabilityRating"),
        ("replace rating", router(&json!({"replace": [{"model": "sol-6.1", "capabilityRating": 200}]})), ErrorClass::InvalidRating, "$.router.models.replace[0].capabilityRating"),
        // invalid efforts
        ("effort uppercase", add(json!({"effort": "HIGH"})), ErrorClass::InvalidEffort, "$.router.models.add[0].effort"),
        ("effort unknown", add(json!({"effort": "huge"})), ErrorClass::InvalidEffort, "$.router.models.add[0].effort"),
        ("effort number", router(&json!({"replace": [{"model": "sol-6.1", "effort": 3}]})), ErrorClass::InvalidEffort, "$.router.models.replace[0].effort"),
        ("compressor effort", r#"{"router": {"compressor": {"models": [{"model": "sol-6.1", "effort": "ultra"}]}}}"#.to_owned(), ErrorClass::InvalidEffort, "$.router.compressor.models[0].effort"),
        // ambiguous operations
        ("add and replace", router(&json!({"add": [add_entry("a1")], "replace": [{"model": "a1"}]})), ErrorClass::AmbiguousOperation, "$.router.models.replace[0].model"),
        // unknown references
        ("include unknown", router(&json!({"include": ["nope"]})), ErrorClass::UnknownReference, "$.router.models.include[0]"),
        ("exclude unknown", router(&json!({"exclude": ["nope"]})), ErrorClass::UnknownReference, "$.router.models.exclude[0]"),
        ("replace unknown", router(&json!({"replace": [{"model": "nope"}]})), ErrorClass::UnknownReference, "$.router.models.replace[0].model"),
        ("compressor unknown", r#"{"router": {"compressor": {"models": [{"model": "nope", "effort": "low"}]}}}"#.to_owned(), ErrorClass::UnknownReference, "$.router.compressor.models[0].model"),
        ("preferred not a key", add(json!({"preferredProvider": "other"})), ErrorClass::UnknownReference, "$.router.models.add[0].preferredProvider"),
        ("replace drops the preferred provider", router(&json!({"replace": [{"model": "sol-6.1", "providers": {"gateway": "openai/gpt-6.1-sol"}}]})), ErrorClass::UnknownReference, "$.router.models.replace[0].providers"),
        // field patterns
        ("name uppercase", add(json!({"model": "Fast"})), ErrorClass::InvalidValue, "$.router.models.add[0].model"),
        ("name leading dash", add(json!({"model": "-fast"})), ErrorClass::InvalidValue, "$.router.models.add[0].model"),
        ("name space", add(json!({"model": "a b"})), ErrorClass::InvalidValue, "$.router.models.add[0].model"),
        ("provider uppercase", add(json!({"providers": {"Acme": "x", "acme": "y"}})), ErrorClass::InvalidValue, "$.router.models.add[0].providers.Acme"),
        ("provider __proto__", add(json!({"providers": {"__proto__": "x", "acme": "y"}})), ErrorClass::InvalidValue, "$.router.models.add[0].providers.__proto__"),
        ("provider prototype", add(json!({"providers": {"prototype": "x", "acme": "y"}})), ErrorClass::InvalidValue, "$.router.models.add[0].providers.prototype"),
        ("provider constructor", add(json!({"providers": {"constructor": "x", "acme": "y"}})), ErrorClass::InvalidValue, "$.router.models.add[0].providers.constructor"),
        ("preferred constructor", add(json!({"preferredProvider": "constructor"})), ErrorClass::InvalidValue, "$.router.models.add[0].preferredProvider"),
        ("physical id leading dash", add(json!({"providers": {"acme": "-x"}})), ErrorClass::InvalidValue, "$.router.models.add[0].providers.acme"),
        ("physical id space", add(json!({"providers": {"acme": "a b"}})), ErrorClass::InvalidValue, "$.router.models.add[0].providers.acme"),
        ("physical id number", add(json!({"providers": {"acme": 5}})), ErrorClass::InvalidValue, "$.router.models.add[0].providers.acme"),
        ("guidelines string", add(json!({"guidelines": "x"})), ErrorClass::InvalidValue, "$.router.models.add[0].guidelines"),
        ("empty guideline", add(json!({"guidelines": ["ok", ""]})), ErrorClass::InvalidValue, "$.router.models.add[0].guidelines[1]"),
        ("blank caution", add(json!({"cautions": ["  "]})), ErrorClass::InvalidValue, "$.router.models.add[0].cautions[0]"),
        // compressor and extensions
        ("empty compressor", r#"{"router": {"compressor": {"models": []}}}"#.to_owned(), ErrorClass::EmptyCompressor, "$.router.compressor.models"),
        ("invalid pattern", r#"{"workerExtensions": ["ok", "(unclosed"]}"#.to_owned(), ErrorClass::InvalidPattern, "$.workerExtensions[1]"),
        ("pattern not a string", r#"{"workerExtensions": [1]}"#.to_owned(), ErrorClass::InvalidValue, "$.workerExtensions[0]"),
        ("extensions not a list", r#"{"workerExtensions": "x"}"#.to_owned(), ErrorClass::InvalidValue, "$.workerExtensions"),
    ];
    for (name, text, class, path) in cases {
        let report = home(&text);
        assert!(report.blocked, "{name}: must block");
        assert!(report.policy.is_none(), "{name}: no policy when blocked");
        assert!(
            has_error(&report, class, path),
            "{name}: expected {class} at {path}, got {:#?}",
            errors(&report)
        );
        for e in &report.errors {
            assert_eq!(
                e.problem.file.as_deref(),
                Some(HOME),
                "{name}: names the file"
            );
            assert!(!e.problem.rule.is_empty(), "{name}: names the rule");
        }
        assert_eq!(
            report.sources[0].status,
            SourceStatus::Invalid,
            "{name}: the file is marked invalid"
        );
    }
}

#[test]
fn all_errors_are_reported_not_only_the_first() {
    let text = json!({
        "router": {
            "bogus": 1,
            "models": {
                "include": ["nope", "luna-6", "luna-6"],
                "add": [{"model": "x", "capabilityRating": 0, "effort": "huge"}],
                "replace": [{"model": "sol-6.1", "effort": "max"}]
            },
            "compressor": {"models": []}
        },
        "workerExtensions": ["("]
    })
    .to_string();
    let report = home(&text);
    let classes: Vec<ErrorClass> = report.errors.iter().map(|e| e.class).collect();
    for class in [
        ErrorClass::UnknownField,
        ErrorClass::UnknownReference,
        ErrorClass::DuplicateName,
        ErrorClass::InvalidRating,
        ErrorClass::InvalidEffort,
        ErrorClass::IncompleteDefinition,
        ErrorClass::EmptyCompressor,
        ErrorClass::InvalidPattern,
    ] {
        assert!(classes.contains(&class), "{class} missing from {classes:?}");
    }
    // Each problem once, although the file is validated alone and merged.
    let mut seen = report.errors.clone();
    seen.dedup();
    assert_eq!(seen.len(), report.errors.len());
}

// ---------------------------------------------------------------------------------------
// Withdrawn shipped names

#[test]
fn every_withdrawn_name_in_every_reference_position_is_an_unknown_model_error() {
    for (old, new) in WITHDRAWN {
        let positions: [(&str, String, String); 4] = [
            (
                "include",
                router(&json!({"include": [old]})),
                "$.router.models.include[0]".to_owned(),
            ),
            (
                "exclude",
                router(&json!({"exclude": [old]})),
                "$.router.models.exclude[0]".to_owned(),
            ),
            (
                "replace",
                router(&json!({"replace": [{"model": old}]})),
                "$.router.models.replace[0].model".to_owned(),
            ),
            (
                "compressor",
                json!({"router": {"compressor": {"models": [{"model": old, "effort": "medium"}]}}})
                    .to_string(),
                "$.router.compressor.models[0].model".to_owned(),
            ),
        ];
        for (position, text, path) in positions {
            let report = home(&text);
            assert!(report.blocked, "{old} in {position}");
            let e = report
                .errors
                .iter()
                .find(|e| e.problem.path == path)
                .unwrap_or_else(|| panic!("{old} in {position}: {:#?}", errors(&report)));
            assert_eq!(e.class, ErrorClass::UnknownReference);
            assert!(
                e.problem
                    .rule
                    .contains(&format!("`{position}` names an unknown model `{old}`")),
                "{}",
                e.problem.rule
            );
            match new {
                Some(new) => assert!(
                    e.problem.rule.contains(&format!("use `{new}`")),
                    "{}",
                    e.problem.rule
                ),
                None => assert!(
                    e.problem.rule.contains("no replacement"),
                    "{}",
                    e.problem.rule
                ),
            }
        }
    }
}

#[test]
fn a_withdrawn_spelling_can_be_added_as_a_new_custom_model() {
    for (old, _) in WITHDRAWN {
        let text = json!({"router": {
            "models": {"add": [add_entry(old)], "include": [old], "exclude": []},
            "compressor": {"models": [{"model": old, "effort": "low"}]}
        }})
        .to_string();
        let report = home(&text);
        let p = policy(&report);
        let d = p.definition(old).unwrap();
        assert_eq!(
            d.origin,
            Origin::Added,
            "{old} does not restore the shipped definition"
        );
        assert_eq!(
            d.providers,
            vec![("acme".to_owned(), "acme-fast-v2".to_owned())]
        );
        assert_eq!(p.ordinary, vec![old.to_owned()]);
        assert_eq!(p.compressor[0].model, old);
    }
}

// ---------------------------------------------------------------------------------------
// include / exclude / add / replace / compressor

fn ordinary(models: &serde_json::Value) -> Vec<String> {
    policy(&home(&router(models))).ordinary.clone()
}

#[test]
fn membership_rules() {
    let six = vec![
        "luna-6",
        "claude-sonnet-5.5",
        "sol-6.1",
        "gemini-3.8-flash",
        "claude-opus-5.5",
        "gpt-6-astra",
    ];
    assert_eq!(ordinary(&json!({})), six, "omitted include: all six");
    assert_eq!(
        ordinary(&json!({"include": null})),
        six,
        "null include: all six"
    );
    let empty = home(&router(&json!({"include": []})));
    assert!(
        policy(&empty).ordinary.is_empty(),
        "explicit [] is an empty pool"
    );
    assert_eq!(empty.warnings[0].class, ErrorClass::EmptyPool);
    assert_eq!(
        ordinary(&json!({"include": ["gpt-6-astra", "luna-6"]})),
        ["gpt-6-astra", "luna-6"],
        "include keeps its order"
    );
    assert_eq!(
        ordinary(&json!({"include": ["luna-6", "sol-6.1"], "exclude": ["luna-6"]})),
        ["sol-6.1"],
        "exclude applies last and wins"
    );
    assert_eq!(
        ordinary(&json!({"exclude": ["luna-6", "gpt-6-astra"]})),
        [
            "claude-sonnet-5.5",
            "sol-6.1",
            "gemini-3.8-flash",
            "claude-opus-5.5"
        ]
    );
    assert_eq!(
        ordinary(&json!({"include": [], "add": [add_entry("project-fast")]})),
        ["project-fast"],
        "an added model joins the pool"
    );
    assert_eq!(
        ordinary(
            &json!({"include": [], "add": [add_entry("project-fast")], "exclude": ["project-fast"]})
        ),
        Vec::<String>::new(),
        "exclude also removes an added model"
    );
    assert_eq!(
        ordinary(
            &json!({"include": ["project-fast", "luna-6"], "add": [add_entry("project-fast")]})
        ),
        ["project-fast", "luna-6"],
        "an included added model keeps its include position"
    );
    let excluded = home(&router(&json!({"exclude": ["sol-6.1"]})));
    assert!(
        policy(&excluded).definition("sol-6.1").is_some(),
        "an excluded definition still exists (for the compressor list)"
    );
}

#[test]
fn the_spec_examples_are_valid() {
    let config = r#"{ "router": { "models": { "include": ["luna-6", "claude-sonnet-5.5", "gpt-6-astra"], "add": [], "replace": [], "exclude": [] }, "compressor": { "models": [{ "model": "claude-sonnet-5.5", "effort": "medium" }] } } }"#;
    assert_eq!(
        policy(&home(config)).ordinary,
        ["luna-6", "claude-sonnet-5.5", "gpt-6-astra"]
    );
    let add = r#"{ "router": { "models": { "include": [], "add": [ { "model": "project-fast", "capabilityRating": 48, "effort": "medium", "costRating": 20, "preferredProvider": "acme", "providers": { "acme": "acme-fast-v2", "acme-backup": "acme/fast-v2" }, "guidelines": ["small bounded changes"], "cautions": [] } ] } } }"#;
    let report = home(add);
    let d = policy(&report).definition("project-fast").unwrap().clone();
    assert_eq!(
        d.providers,
        vec![
            ("acme".to_owned(), "acme-fast-v2".to_owned()),
            ("acme-backup".to_owned(), "acme/fast-v2".to_owned())
        ],
        "provider map keeps file order"
    );
    assert_eq!(d.sources["providers"], HOME);
    let replace = r#"{ "router": { "models": { "replace": [ { "model": "sol-6.1", "effort": "max", "capabilityRating": 85, "costRating": 20, "preferredProvider": "gateway", "providers": { "gateway": "openai/gpt-6.1-sol" }, "guidelines": ["repository-wide implementation"], "cautions": [] } ] } } }"#;
    let report = home(replace);
    let sol = policy(&report).definition("sol-6.1").unwrap();
    assert_eq!(sol.effort, Effort::Max);
    assert_eq!(sol.preferred_provider, "gateway");
    assert_eq!(sol.origin, Origin::Replaced);
    assert!(sol.cautions.is_empty());
}

#[test]
fn replace_rules() {
    let one = |entry: serde_json::Value| -> LogicalModel {
        let report = home(&router(&json!({"replace": [entry]})));
        policy(&report).definition("sol-6.1").unwrap().clone()
    };
    // A subset: other fields and their attribution are kept.
    let d = one(json!({"model": "sol-6.1", "guidelines": ["only this"]}));
    assert_eq!(d.guidelines, ["only this"]);
    assert_eq!(d.effort, Effort::High);
    assert_eq!(d.cost_rating, 20);
    assert_eq!(d.sources["guidelines"], HOME);
    assert_eq!(d.sources["effort"], "shipped");
    assert_eq!(d.sources["cautions"], "shipped");
    // Only `model`: nothing changes.
    assert_eq!(one(json!({"model": "sol-6.1"})).providers.len(), 1);
    // Repeating the existing effort needs no ratings.
    assert_eq!(
        one(json!({"model": "sol-6.1", "effort": "high"})).effort,
        Effort::High
    );
    // Changing it with both ratings.
    let d =
        one(json!({"model": "sol-6.1", "effort": "low", "capabilityRating": 70, "costRating": 9}));
    assert_eq!(
        (d.effort, d.capability_rating, d.cost_rating),
        (Effort::Low, 70, 9)
    );
    // A supplied provider map replaces the whole map (no merge), keeping the preferred provider
    // when it is still a key.
    let d = one(json!({"model": "sol-6.1", "providers": {"gw": "x/y", "openai": "gpt-6.1-sol-b"}}));
    assert_eq!(
        d.providers,
        vec![
            ("gw".to_owned(), "x/y".to_owned()),
            ("openai".to_owned(), "gpt-6.1-sol-b".to_owned())
        ]
    );
    assert_eq!(d.preferred_provider, "openai");
    assert_eq!(d.sources["preferredProvider"], "shipped");
    // Cautions list replaces the whole list.
    assert_eq!(
        one(json!({"model": "sol-6.1", "cautions": []}))
            .cautions
            .len(),
        0
    );
    // A preferred provider change within the existing map.
    let report = home(&router(
        &json!({"replace": [{"model": "sol-6.1", "preferredProvider": "gw"}]}),
    ));
    assert!(has_error(
        &report,
        ErrorClass::UnknownReference,
        "$.router.models.replace[0].preferredProvider"
    ));
}

#[test]
fn compressor_rules() {
    let p = |text: &str| policy(&home(text)).compressor.clone();
    assert_eq!(p("{}")[0].model, "claude-sonnet-5.5");
    assert_eq!(
        p(r#"{"router": {"compressor": null}}"#)[0].effort,
        Effort::Medium
    );
    assert_eq!(
        p(r#"{"router": {"compressor": {}}}"#)[0].model,
        "claude-sonnet-5.5"
    );
    let list = p(
        r#"{"router": {"models": {"exclude": ["luna-6"]}, "compressor": {"models": [{"model": "luna-6", "effort": "low"}, {"model": "sol-6.1", "effort": "xhigh"}]}}}"#,
    );
    assert_eq!(
        list.len(),
        2,
        "compressor membership is independent of ordinary membership"
    );
    assert_eq!(
        (list[0].model.as_str(), list[0].effort),
        ("luna-6", Effort::Low)
    );
    assert_eq!(
        (list[1].model.as_str(), list[1].effort),
        ("sol-6.1", Effort::Xhigh)
    );
}

// ---------------------------------------------------------------------------------------
// Legacy keys

#[test]
fn legacy_keys_are_named_and_ignored() {
    let cases = [
        (r#"{"modelFailover": {"x": 1}}"#, "$.modelFailover"),
        (r#"{"episodeModel": "x"}"#, "$.episodeModel"),
        (r#"{"router": {"models": ["luna-6"]}}"#, "$.router.models"),
        (
            r#"{"router": {"allowUnmeasuredEffort": true}}"#,
            "$.router.allowUnmeasuredEffort",
        ),
        (
            r#"{"router": {"showWarnings": false}}"#,
            "$.router.showWarnings",
        ),
    ];
    for (text, path) in cases {
        let report = home(text);
        let p = policy(&report);
        assert_eq!(p.ordinary.len(), 6, "{text}: ignored, nothing migrated");
        assert_eq!(report.warnings.len(), 1, "{text}");
        let w = &report.warnings[0];
        assert_eq!(w.class, ErrorClass::LegacyIgnored);
        assert_eq!(w.problem.path, path);
        assert_eq!(w.problem.file.as_deref(), Some(HOME));
        assert!(w.problem.rule.contains("ignored"));
    }
    // An ignored legacy value has no effect at all: the project's array-form `router.models`
    // does not replace home's object form.
    let r = layered(
        Some(&router(&json!({"exclude": ["luna-6"]}))),
        Some(r#"{"router": {"models": ["luna-6"]}}"#),
    );
    assert_eq!(policy(&r).ordinary.len(), 5);
    assert_eq!(r.warnings.len(), 1);
    assert_eq!(r.warnings[0].problem.file.as_deref(), Some(PROJECT));
}

// ---------------------------------------------------------------------------------------
// Files, merge and trust

#[test]
fn project_overrides_home_by_recursive_merge() {
    // Objects merge: home include + project exclude both apply.
    let r = layered(
        Some(&router(&json!({"include": ["luna-6", "sol-6.1"]}))),
        Some(&router(&json!({"exclude": ["luna-6"]}))),
    );
    assert_eq!(policy(&r).ordinary, ["sol-6.1"]);
    assert_eq!(r.sources[0].status, SourceStatus::Applied);
    assert_eq!(r.sources[1].status, SourceStatus::Applied);
    // Arrays replace.
    let r = layered(
        Some(&router(&json!({"include": ["luna-6", "sol-6.1"]}))),
        Some(&router(&json!({"include": ["gpt-6-astra"]}))),
    );
    assert_eq!(policy(&r).ordinary, ["gpt-6-astra"]);
    // Explicit null replaces (back to the shipped default).
    let r = layered(
        Some(&router(&json!({"include": ["luna-6"]}))),
        Some(r#"{"router": {"models": {"include": null}}}"#),
    );
    assert_eq!(policy(&r).ordinary.len(), 6);
    let r = layered(
        Some(&router(&json!({"include": ["luna-6"]}))),
        Some(r#"{"router": null}"#),
    );
    assert_eq!(policy(&r).ordinary.len(), 6);
    // A name added by home is known to the project's exclude and include.
    let r = layered(
        Some(&router(&json!({"add": [add_entry("home-fast")]}))),
        Some(&router(&json!({"exclude": ["home-fast"]}))),
    );
    assert_eq!(policy(&r).ordinary.len(), 6);
    assert!(policy(&r).definition("home-fast").is_some());
    // Scalars replace: the project's replacement of a home replacement's field.
    let r = layered(
        Some(&router(
            &json!({"replace": [{"model": "sol-6.1", "costRating": 30}]}),
        )),
        Some(&router(
            &json!({"replace": [{"model": "sol-6.1", "costRating": 40}]}),
        )),
    );
    let sol = policy(&r).definition("sol-6.1").unwrap();
    assert_eq!(sol.cost_rating, 40);
    assert_eq!(sol.sources["costRating"], PROJECT);
}

#[test]
fn an_invalid_permitted_file_blocks_even_when_the_other_overrides_it() {
    // Home's invalid add is replaced by the project's array in the merge; home still blocks.
    let r = layered(
        Some(&router(&json!({"add": [{"model": "broken"}]}))),
        Some(&router(&json!({"add": []}))),
    );
    assert!(r.blocked);
    assert_eq!(
        errors(&r),
        [(
            ErrorClass::IncompleteDefinition,
            HOME.to_owned(),
            "$.router.models.add[0]".to_owned()
        )]
    );
    assert_eq!(r.sources[0].status, SourceStatus::Invalid);
    assert_eq!(r.sources[1].status, SourceStatus::Applied);
    // Invalid project JSON blocks although home is valid.
    let r = layered(Some("{}"), Some("{not json"));
    assert!(r.blocked);
    assert_eq!(
        errors(&r)[0],
        (ErrorClass::InvalidJson, PROJECT.to_owned(), "$".to_owned())
    );
    // A project error names the project file and its path.
    let r = layered(Some("{}"), Some(&router(&json!({"include": ["nope"]}))));
    assert_eq!(
        errors(&r),
        [(
            ErrorClass::UnknownReference,
            PROJECT.to_owned(),
            "$.router.models.include[0]".to_owned()
        )]
    );
    // A merged reference the project breaks: home adds, project replaces the add list.
    let r = layered(
        Some(&router(
            &json!({"add": [add_entry("home-fast")], "include": ["home-fast"]}),
        )),
        Some(&router(&json!({"add": []}))),
    );
    assert!(r.blocked);
    assert_eq!(
        errors(&r),
        [(
            ErrorClass::UnknownReference,
            HOME.to_owned(),
            "$.router.models.include[0]".to_owned()
        )]
    );
}

#[test]
fn an_untrusted_project_gets_home_over_shipped_without_project_text() {
    let home_text = router(&json!({"exclude": ["luna-6"]}));
    let r = resolve(
        &SlateFile {
            label: HOME,
            bytes: Some(home_text.as_bytes()),
        },
        &ProjectFile::Untrusted { label: PROJECT },
    );
    assert_eq!(policy(&r).ordinary.len(), 5);
    assert_eq!(r.sources[1].status, SourceStatus::IgnoredUntrusted);
    let absent = resolve(&SlateFile::absent(HOME), &ProjectFile::Absent);
    assert_eq!(absent.sources.len(), 1);
    assert_eq!(absent.sources[0].status, SourceStatus::Absent);
    assert_eq!(
        policy(&absent),
        &RoutingPolicy::shipped(),
        "no files: the shipped policy"
    );
}

#[test]
fn other_root_keys_belong_to_other_features() {
    let r = home(
        r#"{"workerTools": ["read"], "contextBudget": {}, "workflow": {"routingRecommendations": true}}"#,
    );
    assert!(!r.blocked);
    assert!(r.warnings.is_empty());
}

// ---------------------------------------------------------------------------------------
// Prompt limits

/// A file with `count` added models (empty include), the first with a guideline of `len`
/// characters.
fn prompt_config(count: usize, len: usize) -> String {
    let adds: Vec<serde_json::Value> = (0..count)
        .map(|i| {
            let mut e = add_entry(&format!("m{i}"));
            if i == 0 {
                e["guidelines"] = json!(["g".repeat(len)]);
            }
            e
        })
        .collect();
    router(&json!({"include": [], "add": adds}))
}

fn section_for(text: &str) -> String {
    let report = home(text);
    render(policy(&report))
}

#[test]
fn prompt_characters_at_the_limit_are_accepted_and_one_over_is_rejected() {
    let base = portable_len(&section_for(&prompt_config(1, 1)));
    let exact = 1 + MAX_PROMPT_CHARACTERS - base;
    let at = home(&prompt_config(1, exact));
    let measure = at.prompt.unwrap();
    assert_eq!(measure.characters, MAX_PROMPT_CHARACTERS);
    assert!(!at.blocked, "equality is accepted");
    let section = render(at.policy.as_ref().unwrap());
    assert!(section.contains(&"g".repeat(exact)), "nothing truncated");

    let over = home(&prompt_config(1, exact + 1));
    assert!(over.blocked);
    let e = &over.errors[0];
    assert_eq!(e.class, ErrorClass::PromptLimit);
    assert_eq!(e.problem.path, "$.router.models.add[0].guidelines");
    assert_eq!(e.problem.file.as_deref(), Some(HOME));
    assert!(
        e.problem.rule.contains("19401 portable characters"),
        "{}",
        e.problem.rule
    );
    assert!(
        e.problem.rule.contains("`m0`"),
        "names the model: {}",
        e.problem.rule
    );
}

#[test]
fn prompt_characters_count_utf16_units() {
    let base = portable_len(&section_for(&prompt_config(1, 1)));
    let text = router(&json!({"include": [], "add": [{
        "model": "m0", "capabilityRating": 48, "effort": "medium", "costRating": 20,
        "preferredProvider": "acme", "providers": {"acme": "acme-fast-v2"},
        "guidelines": ["😀"], "cautions": []
    }]}));
    assert_eq!(
        home(&text).prompt.unwrap().characters,
        base + 1,
        "one astral char is two units"
    );
}

#[test]
fn prompt_lines_at_the_limit_are_accepted_and_one_over_is_rejected() {
    let header = line_count(&section_for(&prompt_config(1, 1))) - 1;
    let rows = MAX_PROMPT_LINES - header;
    let at = home(&prompt_config(rows, 1));
    assert_eq!(at.prompt.unwrap().lines, MAX_PROMPT_LINES);
    assert!(!at.blocked, "equality is accepted");
    let over = home(&prompt_config(rows + 1, 1));
    assert!(over.blocked);
    let e = &over.errors[0];
    assert_eq!(e.class, ErrorClass::PromptLimit);
    assert!(e.problem.rule.contains("106 lines"), "{}", e.problem.rule);
    assert!(
        e.problem.rule.contains(&format!("`m{rows}`")),
        "{}",
        e.problem.rule
    );
    assert_eq!(e.problem.path, format!("$.router.models.add[{rows}]"));
}

#[test]
fn prompt_rows_are_sanitized_and_cannot_break_the_table() {
    let text = router(&json!({"include": [], "add": [{
        "model": "m0", "capabilityRating": 48, "effort": "medium", "costRating": 20,
        "preferredProvider": "acme", "providers": {"acme": "acme-fast-v2"},
        "guidelines": ["a\u{1b}[31mred\u{1b}[0m | b\nc"], "cautions": []
    }]}));
    let section = section_for(&text);
    let row = section.lines().last().unwrap();
    assert_eq!(row, "| `m0` | medium | 48 | 20 | ared \\| b c | none |");
    assert!(!section.contains('\u{1b}'));
}

#[test]
fn the_shipped_section_fits() {
    let report = resolve(&SlateFile::absent(HOME), &ProjectFile::Absent);
    let m = report.prompt.unwrap();
    assert!(m.characters <= MAX_PROMPT_CHARACTERS && m.lines <= MAX_PROMPT_LINES);
    let section = render(report.policy.as_ref().unwrap());
    assert!(section.contains("| `sol-6.1` | high | 85 | 20 | Default thread choice. |"));
}

// ---------------------------------------------------------------------------------------
// workerExtensions

#[test]
fn worker_extensions_are_validated_regexes_matched_unanchored() {
    let r = home(r#"{"workerExtensions": ["pi-smart-fetch", "pi-web-search"]}"#);
    assert_eq!(r.worker_extensions, ["pi-smart-fetch", "pi-web-search"]);
    assert!(extensions::selects(
        &r.worker_extensions,
        &["npm:pi-web-search@1.3.1"]
    ));
    assert!(!extensions::selects(
        &r.worker_extensions,
        &["npm:pi-other@1"]
    ));
    assert!(extensions::selects(&["^npm:".to_owned()], &["npm:x"]));
    // The project list replaces home's (arrays replace).
    let r = layered(
        Some(r#"{"workerExtensions": ["a"]}"#),
        Some(r#"{"workerExtensions": ["b"]}"#),
    );
    assert_eq!(r.worker_extensions, ["b"]);
    // An untrusted project's list is not read.
    let text = r#"{"workerExtensions": ["a"]}"#;
    let r = resolve(
        &SlateFile {
            label: HOME,
            bytes: Some(text.as_bytes()),
        },
        &ProjectFile::Untrusted { label: PROJECT },
    );
    assert_eq!(r.worker_extensions, ["a"]);
}

// ---------------------------------------------------------------------------------------
// The parser never panics

fn arb_json() -> impl Strategy<Value = serde_json::Value> {
    let leaf = prop_oneof![
        Just(serde_json::Value::Null),
        any::<bool>().prop_map(serde_json::Value::from),
        any::<i64>().prop_map(serde_json::Value::from),
        (-1.0e3f64..1.0e3).prop_map(serde_json::Value::from),
        prop_oneof![
            Just("luna-6".to_owned()),
            Just("sol-6".to_owned()),
            Just("medium".to_owned()),
            Just("constructor".to_owned()),
            "[a-z0-9._/-]{0,8}",
            any::<String>(),
        ]
        .prop_map(serde_json::Value::from),
    ];
    leaf.prop_recursive(5, 64, 6, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..5).prop_map(serde_json::Value::Array),
            prop::collection::vec(
                (
                    prop_oneof![
                        Just("router".to_owned()),
                        Just("models".to_owned()),
                        Just("include".to_owned()),
                        Just("exclude".to_owned()),
                        Just("add".to_owned()),
                        Just("replace".to_owned()),
                        Just("compressor".to_owned()),
                        Just("model".to_owned()),
                        Just("effort".to_owned()),
                        Just("providers".to_owned()),
                        Just("preferredProvider".to_owned()),
                        Just("capabilityRating".to_owned()),
                        Just("costRating".to_owned()),
                        Just("guidelines".to_owned()),
                        Just("cautions".to_owned()),
                        Just("workerExtensions".to_owned()),
                        "[a-z]{1,6}",
                    ],
                    inner
                ),
                0..6
            )
            .prop_map(|members| serde_json::Value::Object(members.into_iter().collect())),
        ]
    })
}

proptest! {
    #[test]
    fn resolve_never_panics_on_bytes(home_bytes in prop::collection::vec(any::<u8>(), 0..256),
                                     project_bytes in prop::collection::vec(any::<u8>(), 0..256)) {
        let _ = resolve(
            &SlateFile { label: HOME, bytes: Some(&home_bytes) },
            &ProjectFile::Trusted(SlateFile { label: PROJECT, bytes: Some(&project_bytes) }),
        );
    }

    #[test]
    fn resolve_never_panics_on_json(home_value in arb_json(), project_value in arb_json()) {
        let h = json!({"router": home_value}).to_string();
        let p = project_value.to_string();
        let report = layered(Some(&h), Some(&p));
        prop_assert_eq!(report.blocked, !report.errors.is_empty());
        prop_assert_eq!(report.policy.is_some(), !report.blocked);
    }
}

/// Regression: lookups, merge and deduplication were quadratic in the number of keys, so a
/// hostile file with tens of thousands of keys took minutes. Every problem is still reported
/// exactly once.
#[test]
fn a_file_with_many_keys_reports_each_problem_once() {
    let keys: serde_json::Map<String, serde_json::Value> =
        (0..20_000).map(|i| (format!("k{i}"), json!(1))).collect();
    let text = json!({ "router": keys }).to_string();
    let report = layered(Some(&text), Some("{}"));
    assert_eq!(report.errors.len(), 20_000);
    assert!(
        report
            .errors
            .iter()
            .all(|e| e.class == ErrorClass::UnknownField)
    );
}

#[test]
fn a_leading_byte_order_mark_is_ignored() {
    let text = format!("\u{feff}{}", router(&json!({"exclude": ["luna-6"]})));
    assert_eq!(policy(&home(&text)).ordinary.len(), 5);
}

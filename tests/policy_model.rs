//! Issue 3 ¶9, model selection: the exact selection object or `provider/id[:effort]`, efforts
//! `off|minimal|low|medium|high|xhigh|max`, no guessing of bare ids or unknown providers, exact
//! operator grants for overrides, inherited effort and `models` allowlists that only narrow.

use std::collections::BTreeSet;

use proptest::prelude::*;
use serde_json::{Value, json};
use slate::core::task::ModelSelection;
use slate::policy::Problem;
use slate::policy::model::{
    EFFORT_NAMES, Effort, ModelContext, ModelGrant, allows, label, parse_selection,
    parse_selection_text, resolve_model, resolve_model_policy,
};

fn sel(provider: &str, id: &str, effort: Option<&str>) -> ModelSelection {
    ModelSelection {
        provider: provider.to_owned(),
        id: id.to_owned(),
        effort: effort.map(str::to_owned),
    }
}

fn providers() -> BTreeSet<String> {
    ["anthropic", "openai", "openrouter", "fake", "gw", "gw/eu"]
        .into_iter()
        .map(str::to_owned)
        .collect()
}

fn grant(provider: &str, id: &str, efforts: &[Effort]) -> ModelGrant {
    ModelGrant {
        provider: provider.to_owned(),
        id: id.to_owned(),
        efforts: efforts.to_vec(),
    }
}

/// Parent `anthropic/claude-sonnet:medium`; grants for gpt-5, an openrouter id with `/` and `:`,
/// a non-reasoning model and an effort change on the parent's own model.
fn ctx() -> ModelContext {
    ModelContext {
        parent: sel("anthropic", "claude-sonnet", Some("medium")),
        known_providers: providers(),
        operator_grants: vec![
            grant(
                "openai",
                "gpt-5",
                &[Effort::Low, Effort::Medium, Effort::High],
            ),
            grant(
                "openrouter",
                "anthropic/claude:beta",
                &[Effort::Off, Effort::High],
            ),
            grant("fake", "fake-model", &[Effort::Off]),
            grant(
                "anthropic",
                "claude-sonnet",
                &[Effort::Medium, Effort::High],
            ),
            grant("gw/eu", "model-x", &[Effort::Medium]),
        ],
        parent_allowlist: None,
    }
}

fn parse_text(text: &str) -> Result<ModelSelection, Vec<Problem>> {
    parse_selection_text(text, &providers(), "$.model")
}

/// Asserts one problem at `path` whose value contains `value` and whose rule contains `rule`.
fn has_problem(problems: &[Problem], path: &str, value: Option<&str>, rule: &str) {
    let found = problems.iter().any(|p| {
        p.path == path
            && p.rule.contains(rule)
            && match value {
                Some(v) => p.value.as_deref().is_some_and(|pv| pv.contains(v)),
                None => true,
            }
    });
    assert!(
        found,
        "expected a problem at {path} (value ~ {value:?}) with rule ~ {rule:?}, got {problems:#?}"
    );
}

// --- The string form and its split rule ---------------------------------------------------

#[test]
fn string_form_splits_provider_at_the_longest_known_prefix_and_effort_at_the_last_colon() {
    let table: [(&str, &str, &str, Option<&str>); 16] = [
        (
            "anthropic/claude-sonnet",
            "anthropic",
            "claude-sonnet",
            None,
        ),
        (
            "anthropic/claude-sonnet:high",
            "anthropic",
            "claude-sonnet",
            Some("high"),
        ),
        // ids may contain '/' and ':'
        (
            "openrouter/anthropic/claude:beta",
            "openrouter",
            "anthropic/claude:beta",
            None,
        ),
        (
            "openrouter/anthropic/claude:beta:high",
            "openrouter",
            "anthropic/claude:beta",
            Some("high"),
        ),
        (
            "openrouter/anthropic/claude:high:beta",
            "openrouter",
            "anthropic/claude:high:beta",
            None,
        ),
        ("openrouter/a/b/c", "openrouter", "a/b/c", None),
        // effort names are exact and lowercase; anything else stays in the id
        ("anthropic/m:HIGH", "anthropic", "m:HIGH", None),
        ("anthropic/m:", "anthropic", "m:", None),
        ("anthropic/ollama:7b", "anthropic", "ollama:7b", None),
        ("anthropic/m:none", "anthropic", "m:none", None),
        // a provider id that contains '/' wins over its shorter prefix
        ("gw/eu/model-x", "gw/eu", "model-x", None),
        ("gw/eu/model-x:medium", "gw/eu", "model-x", Some("medium")),
        ("gw/other", "gw", "other", None),
        ("gw/euro", "gw", "euro", None),
        // colons before the provider split do not matter
        ("fake/fake-model:off", "fake", "fake-model", Some("off")),
        ("openai/gpt-5::max", "openai", "gpt-5:", Some("max")),
    ];
    for (text, provider, id, effort) in table {
        assert_eq!(
            parse_text(text),
            Ok(sel(provider, id, effort)),
            "parsing {text:?}"
        );
    }
}

#[test]
fn every_effort_name_is_accepted_as_a_suffix_and_nothing_else() {
    for effort in Effort::ALL {
        let text = format!("openai/gpt-5:{effort}");
        assert_eq!(
            parse_text(&text),
            Ok(sel("openai", "gpt-5", Some(effort.as_str())))
        );
        assert_eq!(Effort::from_name(effort.as_str()), Some(effort));
    }
    assert_eq!(
        Effort::ALL.map(Effort::as_str).join("|"),
        EFFORT_NAMES,
        "the message list and the enum agree"
    );
    for not_effort in [
        "High", "OFF", "none", "", "extra", "xHigh", " high", "maximum",
    ] {
        assert_eq!(Effort::from_name(not_effort), None, "{not_effort:?}");
    }
}

#[test]
fn string_form_refusals_name_the_field_the_value_and_the_rule() {
    let table: [(&str, &str, &str); 10] = [
        (
            "claude-sonnet",
            "\"claude-sonnet\"",
            "bare model id without a provider",
        ),
        ("gpt-5:high", "\"gpt-5:high\"", "bare model id"),
        ("", "\"\"", "empty string is not a model selection"),
        (
            "/claude",
            "\"/claude\"",
            "provider before the first '/' is empty",
        ),
        (
            "Anthropic/claude",
            "\"Anthropic/claude\"",
            "unknown provider \"Anthropic\"",
        ),
        (
            "nope/x:high",
            "\"nope/x:high\"",
            "unknown provider \"nope\"",
        ),
        (
            " anthropic/x",
            "\" anthropic/x\"",
            "unknown provider \" anthropic\"",
        ),
        (
            "anthropic/",
            "\"anthropic/\"",
            "model id after \"anthropic/\" must contain",
        ),
        (
            "anthropic/:high",
            "\"anthropic/:high\"",
            "model id after \"anthropic/\"",
        ),
        ("anthropic/   ", "\"anthropic/   \"", "non-whitespace"),
    ];
    for (text, value, rule) in table {
        let problems = parse_text(text).expect_err(text);
        assert_eq!(problems.len(), 1, "{text:?}: {problems:#?}");
        has_problem(&problems, "$.model", Some(value), rule);
    }
    let unknown = parse_text("nope/x").expect_err("unknown");
    assert!(
        unknown[0].rule.contains("never guessed") && unknown[0].rule.contains("known: anthropic"),
        "lists the known providers: {unknown:#?}"
    );
}

// --- The object form ----------------------------------------------------------------------

#[test]
fn object_form_accepts_exactly_provider_id_and_optional_effort() {
    let known = providers();
    let table = [
        (
            json!({"provider": "openai", "id": "gpt-5"}),
            sel("openai", "gpt-5", None),
        ),
        (
            json!({"provider": "openai", "id": "gpt-5", "effort": "xhigh"}),
            sel("openai", "gpt-5", Some("xhigh")),
        ),
        // the object form reaches ids the string form cannot: one ending in ":<effort>"
        (
            json!({"provider": "anthropic", "id": "odd:high"}),
            sel("anthropic", "odd:high", None),
        ),
        (
            json!({"provider": "gw/eu", "id": "x/y:z", "effort": "off"}),
            sel("gw/eu", "x/y:z", Some("off")),
        ),
    ];
    for (value, expected) in table {
        assert_eq!(
            parse_selection(&value, &known, "$.model"),
            Ok(expected),
            "{value}"
        );
    }
}

#[test]
fn object_form_refusals_name_the_key_the_value_and_the_rule() {
    let known = providers();
    let table: [(Value, &str, Option<&str>, &str); 11] = [
        (
            json!({"provider": "openai", "id": "gpt-5", "thinking": "high"}),
            "$.model.thinking",
            Some("\"high\""),
            "additional property is not allowed",
        ),
        (
            json!({"id": "gpt-5"}),
            "$.model.provider",
            None,
            "required: the provider",
        ),
        (
            json!({"provider": "openai"}),
            "$.model.id",
            None,
            "required: the model id",
        ),
        (
            json!({"provider": 7, "id": "gpt-5"}),
            "$.model.provider",
            Some("7"),
            "must be a string",
        ),
        (
            json!({"provider": "openai", "id": ["gpt-5"]}),
            "$.model.id",
            Some("[\"gpt-5\"]"),
            "must be a string",
        ),
        (
            json!({"provider": "  ", "id": "gpt-5"}),
            "$.model.provider",
            Some("\"  \""),
            "non-whitespace",
        ),
        (
            json!({"provider": "openai", "id": ""}),
            "$.model.id",
            Some("\"\""),
            "non-whitespace",
        ),
        (
            json!({"provider": "nope", "id": "gpt-5"}),
            "$.model.provider",
            Some("\"nope\""),
            "unknown provider \"nope\"",
        ),
        (
            json!({"provider": "openai", "id": "gpt-5", "effort": "HIGH"}),
            "$.model.effort",
            Some("\"HIGH\""),
            "effort must be one of off|minimal|low|medium|high|xhigh|max",
        ),
        (
            json!({"provider": "openai", "id": "gpt-5", "effort": null}),
            "$.model.effort",
            Some("null"),
            "effort must be one of",
        ),
        (
            json!({"provider": "openai", "id": "gpt-5", "effort": 3}),
            "$.model.effort",
            Some("3"),
            "omitted to inherit the parent's effort",
        ),
    ];
    for (value, path, shown, rule) in table {
        let problems = parse_selection(&value, &known, "$.model").expect_err("refused");
        has_problem(&problems, path, shown, rule);
    }
}

#[test]
fn object_form_reports_every_problem_at_once() {
    let value = json!({"provider": "nope", "effort": "loud", "extra": 1, "more": true});
    let problems = parse_selection(&value, &providers(), "$.tasks[3].model").expect_err("bad");
    assert_eq!(problems.len(), 5, "{problems:#?}");
    has_problem(
        &problems,
        "$.tasks[3].model.extra",
        Some("1"),
        "additional property",
    );
    has_problem(
        &problems,
        "$.tasks[3].model.more",
        Some("true"),
        "additional property",
    );
    has_problem(
        &problems,
        "$.tasks[3].model.provider",
        Some("nope"),
        "unknown provider",
    );
    has_problem(&problems, "$.tasks[3].model.id", None, "required");
    has_problem(
        &problems,
        "$.tasks[3].model.effort",
        Some("loud"),
        "effort must be one of",
    );
}

#[test]
fn other_json_types_are_not_selections() {
    for (value, rule) in [
        (json!(null), "null is not a model selection: omit the field"),
        (json!(42), "exact model selection object"),
        (json!(true), "exact model selection object"),
        (json!(["openai/gpt-5"]), "exact model selection object"),
    ] {
        let problems = parse_selection(&value, &providers(), "$.model").expect_err("refused");
        assert_eq!(problems.len(), 1);
        has_problem(&problems, "$.model", Some(&value.to_string()), rule);
    }
}

// --- Resolution: inheritance and exact grants -----------------------------------------------

#[test]
fn resolution_inherits_the_parent_and_requires_exact_grants_for_overrides() {
    let ctx = ctx();
    let ok: [(Option<Value>, ModelSelection); 11] = [
        // omitted: the parent's exact selection, effort included
        (None, sel("anthropic", "claude-sonnet", Some("medium"))),
        // naming the parent's own model changes nothing and needs no grant
        (
            Some(json!("anthropic/claude-sonnet")),
            sel("anthropic", "claude-sonnet", Some("medium")),
        ),
        (
            Some(json!("anthropic/claude-sonnet:medium")),
            sel("anthropic", "claude-sonnet", Some("medium")),
        ),
        // an effort change on the parent's model is an override with a grant
        (
            Some(json!("anthropic/claude-sonnet:high")),
            sel("anthropic", "claude-sonnet", Some("high")),
        ),
        // omitted effort inherits the parent's
        (
            Some(json!("openai/gpt-5")),
            sel("openai", "gpt-5", Some("medium")),
        ),
        (
            Some(json!("openai/gpt-5:high")),
            sel("openai", "gpt-5", Some("high")),
        ),
        (
            Some(json!({"provider": "openai", "id": "gpt-5", "effort": "low"})),
            sel("openai", "gpt-5", Some("low")),
        ),
        (
            Some(json!({"provider": "openai", "id": "gpt-5"})),
            sel("openai", "gpt-5", Some("medium")),
        ),
        (
            Some(json!("openrouter/anthropic/claude:beta:high")),
            sel("openrouter", "anthropic/claude:beta", Some("high")),
        ),
        (
            Some(json!("fake/fake-model:off")),
            sel("fake", "fake-model", Some("off")),
        ),
        (
            Some(json!("gw/eu/model-x")),
            sel("gw/eu", "model-x", Some("medium")),
        ),
    ];
    for (request, expected) in ok {
        assert_eq!(
            resolve_model(request.as_ref(), None, &ctx, "$"),
            Ok(expected),
            "{request:?}"
        );
    }
}

#[test]
fn override_refusals_name_the_field_the_selection_and_the_rule() {
    let ctx = ctx();
    let table: [(Value, &str, &str); 9] = [
        (
            json!("openai/gpt-4"),
            "openai/gpt-4:medium",
            "requires an exact operator grant for openai/gpt-4",
        ),
        // grants match exactly: no case folding, no trimming
        (
            json!("openai/GPT-5"),
            "openai/GPT-5:medium",
            "exact operator grant for openai/GPT-5",
        ),
        (
            json!({"provider": "openai", "id": "gpt-5 "}),
            "openai/gpt-5 :medium",
            "exact operator grant",
        ),
        // a suffix that is not an effort is part of the id, and the refusal says so
        (
            json!("openai/gpt-5:turbo"),
            "openai/gpt-5:turbo",
            "is not an effort",
        ),
        // explicit effort outside the grant
        (
            json!("openai/gpt-5:max"),
            "openai/gpt-5:max",
            "effort \"max\" is not granted or not supported for openai/gpt-5 (granted efforts: low, medium, high)",
        ),
        (
            json!("anthropic/claude-sonnet:low"),
            "anthropic/claude-sonnet:low",
            "effort \"low\" is not granted",
        ),
        // inherited effort outside the grant
        (
            json!("fake/fake-model"),
            "fake/fake-model:medium",
            "the omitted effort inherits the parent's effort \"medium\", which is not granted",
        ),
        (
            json!("openrouter/anthropic/claude:beta"),
            "openrouter/anthropic/claude:beta:medium",
            "name a granted effort explicitly",
        ),
        (
            json!("gw/eu/model-x:high"),
            "gw/eu/model-x:high",
            "granted efforts: medium",
        ),
    ];
    for (request, shown, rule) in table {
        let problems =
            resolve_model(Some(&request), None, &ctx, "$.tasks[0]").expect_err("refused");
        assert_eq!(problems.len(), 1, "{request}: {problems:#?}");
        has_problem(&problems, "$.tasks[0].model", Some(shown), rule);
    }
    let no_grant = resolve_model(Some(&json!("openai/gpt-4")), None, &ctx, "$").expect_err("no");
    assert!(
        no_grant[0]
            .rule
            .contains("overriding the parent's model anthropic/claude-sonnet:medium")
            && no_grant[0]
                .rule
                .contains("granted: openai/gpt-5, openrouter/anthropic/claude:beta"),
        "names the parent and the grants: {no_grant:#?}"
    );
}

#[test]
fn a_model_with_no_grants_at_all_is_refused() {
    let ctx = ModelContext {
        operator_grants: Vec::new(),
        ..ctx()
    };
    let problems = resolve_model(Some(&json!("openai/gpt-5")), None, &ctx, "$").expect_err("no");
    has_problem(
        &problems,
        "$.model",
        Some("openai/gpt-5"),
        "(granted: none)",
    );
    // an empty effort list grants the model at no effort
    let ctx = ModelContext {
        operator_grants: vec![grant("openai", "gpt-5", &[])],
        ..self::ctx()
    };
    let problems =
        resolve_model(Some(&json!("openai/gpt-5:low")), None, &ctx, "$").expect_err("no");
    has_problem(
        &problems,
        "$.model",
        Some("openai/gpt-5:low"),
        "granted efforts: none",
    );
}

#[test]
fn a_parent_without_effort_passes_none_on_and_no_effort_is_checked() {
    let ctx = ModelContext {
        parent: sel("anthropic", "claude-sonnet", None),
        ..ctx()
    };
    assert_eq!(
        resolve_model(Some(&json!("fake/fake-model")), None, &ctx, "$"),
        Ok(sel("fake", "fake-model", None))
    );
    assert_eq!(
        resolve_model(None, None, &ctx, "$"),
        Ok(sel("anthropic", "claude-sonnet", None))
    );
}

#[test]
fn an_inherited_effort_the_parent_made_up_is_never_granted() {
    let ctx = ModelContext {
        parent: sel("anthropic", "claude-sonnet", Some("turbo")),
        ..ctx()
    };
    let problems = resolve_model(Some(&json!("openai/gpt-5")), None, &ctx, "$").expect_err("no");
    has_problem(
        &problems,
        "$.model",
        Some("openai/gpt-5:turbo"),
        "inherits the parent's effort \"turbo\"",
    );
}

// --- The `models` allowlist ------------------------------------------------------------------

#[test]
fn allowlist_membership_matches_provider_id_and_effort_when_the_entry_names_one() {
    let table = [
        (
            sel("openai", "gpt-5", None),
            sel("openai", "gpt-5", Some("high")),
            true,
        ),
        (
            sel("openai", "gpt-5", None),
            sel("openai", "gpt-5", None),
            true,
        ),
        (
            sel("openai", "gpt-5", Some("high")),
            sel("openai", "gpt-5", Some("high")),
            true,
        ),
        (
            sel("openai", "gpt-5", Some("high")),
            sel("openai", "gpt-5", Some("low")),
            false,
        ),
        // an entry with an effort does not cover "every effort"
        (
            sel("openai", "gpt-5", Some("high")),
            sel("openai", "gpt-5", None),
            false,
        ),
        (
            sel("openai", "gpt-5", None),
            sel("openai", "gpt-6", None),
            false,
        ),
        (
            sel("openai", "gpt-5", None),
            sel("anthropic", "gpt-5", None),
            false,
        ),
        (
            sel("openai", "gpt-5", None),
            sel("openai", "GPT-5", None),
            false,
        ),
    ];
    for (entry, selection, expected) in table {
        assert_eq!(
            allows(&entry, &selection),
            expected,
            "{entry:?} allows {selection:?}"
        );
    }
}

#[test]
fn allowlists_only_narrow_and_never_select() {
    let ctx = ctx();
    // chosen model inside the task's own allowlist
    let resolved = resolve_model_policy(
        Some(&json!("openai/gpt-5:high")),
        Some(&json!(["openai/gpt-5", {"provider": "fake", "id": "fake-model"}])),
        &ctx,
        "$",
    )
    .expect("allowed");
    assert_eq!(resolved.selection, sel("openai", "gpt-5", Some("high")));
    assert_eq!(
        resolved.allowlist,
        Some(vec![
            sel("openai", "gpt-5", None),
            sel("fake", "fake-model", None)
        ]),
        "the task's own allowlist is what its children inherit"
    );
    // the parent's model is kept when it is allowed
    let resolved = resolve_model_policy(
        None,
        Some(&json!(["anthropic/claude-sonnet:medium"])),
        &ctx,
        "$",
    )
    .expect("allowed");
    assert_eq!(resolved.selection, ctx.parent);

    let table: [(Option<Value>, Value, &str, &str, &str); 4] = [
        (
            Some(json!("openai/gpt-5:high")),
            json!(["openai/gpt-5:low"]),
            "$.model",
            "openai/gpt-5:high",
            "is not in this task's `models` allowlist (allowed: openai/gpt-5:low)",
        ),
        // `models` never selects: the inherited parent model must be in it
        (
            None,
            json!(["openai/gpt-5"]),
            "$.models",
            "anthropic/claude-sonnet:medium",
            "inherited because `model` is omitted) is not in this allowlist; `models` only narrows and never selects",
        ),
        (
            None,
            json!(["anthropic/claude-sonnet:high"]),
            "$.models",
            "anthropic/claude-sonnet:medium",
            "never selects a model",
        ),
        (
            Some(json!("openai/gpt-5")),
            json!(["openai/gpt-5:high"]),
            "$.model",
            "openai/gpt-5:medium",
            "not in this task's `models` allowlist",
        ),
    ];
    for (request, models, path, shown, rule) in table {
        let problems =
            resolve_model(request.as_ref(), Some(&models), &ctx, "$").expect_err("refused");
        assert_eq!(problems.len(), 1, "{problems:#?}");
        has_problem(&problems, path, Some(shown), rule);
    }
}

#[test]
fn malformed_allowlists_are_refused_entry_by_entry() {
    let ctx = ctx();
    let table: [(Value, &str, Option<&str>, &str); 6] = [
        (
            json!("openai/gpt-5"),
            "$.models",
            Some("\"openai/gpt-5\""),
            "must be an array of model selections",
        ),
        (json!(null), "$.models", Some("null"), "must be an array"),
        (
            json!([]),
            "$.models",
            Some("[]"),
            "must list at least one model selection",
        ),
        (
            json!([42]),
            "$.models[0]",
            Some("42"),
            "exact model selection object",
        ),
        (
            json!(["anthropic/claude-sonnet", "gpt-5"]),
            "$.models[1]",
            Some("\"gpt-5\""),
            "bare model id",
        ),
        (
            json!(["anthropic/claude-sonnet", {"provider": "openai", "id": "gpt-5", "x": 1}]),
            "$.models[1].x",
            Some("1"),
            "additional property",
        ),
    ];
    for (models, path, shown, rule) in table {
        let problems = resolve_model(None, Some(&models), &ctx, "$").expect_err("refused");
        assert_eq!(problems.len(), 1, "{models}: {problems:#?}");
        has_problem(&problems, path, shown, rule);
    }
}

#[test]
fn a_child_allowlist_must_be_a_subset_of_its_parents() {
    let ctx = ModelContext {
        parent_allowlist: Some(vec![
            sel("anthropic", "claude-sonnet", None),
            sel("openai", "gpt-5", Some("high")),
        ]),
        ..ctx()
    };
    // narrower entries are fine, and the effective allowlist is the child's
    let resolved = resolve_model_policy(
        Some(&json!("openai/gpt-5:high")),
        Some(&json!(["openai/gpt-5:high", "anthropic/claude-sonnet:low"])),
        &ctx,
        "$",
    )
    .expect("subset");
    assert_eq!(
        resolved.allowlist,
        Some(vec![
            sel("openai", "gpt-5", Some("high")),
            sel("anthropic", "claude-sonnet", Some("low")),
        ])
    );
    // without `models` the parent's allowlist carries over
    let resolved = resolve_model_policy(None, None, &ctx, "$").expect("inherited");
    assert_eq!(resolved.allowlist, ctx.parent_allowlist);

    let problems = resolve_model(
        Some(&json!("openai/gpt-5:high")),
        Some(&json!([
            "openai/gpt-5:high",
            "openai/gpt-5",
            "fake/fake-model:off"
        ])),
        &ctx,
        "$.tasks[1]",
    )
    .expect_err("widening");
    assert_eq!(problems.len(), 2, "{problems:#?}");
    has_problem(
        &problems,
        "$.tasks[1].models[1]",
        Some("\"openai/gpt-5\""),
        "openai/gpt-5 at every effort is not allowed by the parent's `models` allowlist: a child allowlist can only narrow",
    );
    has_problem(
        &problems,
        "$.tasks[1].models[2]",
        Some("fake/fake-model:off"),
        "parent allows: anthropic/claude-sonnet, openai/gpt-5:high",
    );
}

#[test]
fn the_chosen_model_must_be_in_the_parents_allowlist() {
    let ctx = ModelContext {
        parent_allowlist: Some(vec![sel("anthropic", "claude-sonnet", None)]),
        ..ctx()
    };
    let problems = resolve_model(Some(&json!("openai/gpt-5")), None, &ctx, "$").expect_err("no");
    assert_eq!(problems.len(), 1, "{problems:#?}");
    has_problem(
        &problems,
        "$.model",
        Some("openai/gpt-5:medium"),
        "the selection openai/gpt-5:medium is not in the parent's `models` allowlist (allowed: anthropic/claude-sonnet)",
    );
    // a context whose own parent model is outside its allowlist fails closed, too
    let ctx = ModelContext {
        parent_allowlist: Some(vec![sel("openai", "gpt-5", None)]),
        ..self::ctx()
    };
    let problems = resolve_model(None, None, &ctx, "$").expect_err("inconsistent");
    has_problem(
        &problems,
        "$.model",
        Some("anthropic/claude-sonnet:medium"),
        "the inherited parent model",
    );
}

#[test]
fn every_problem_of_model_and_models_is_reported_together() {
    let problems = resolve_model(
        Some(&json!({"provider": "nope", "id": "x", "effort": "loud"})),
        Some(&json!(["bare", 7])),
        &ctx(),
        "$.tasks[2]",
    )
    .expect_err("bad");
    assert_eq!(problems.len(), 4, "{problems:#?}");
    has_problem(
        &problems,
        "$.tasks[2].model.provider",
        Some("nope"),
        "unknown provider",
    );
    has_problem(
        &problems,
        "$.tasks[2].model.effort",
        Some("loud"),
        "effort must be one of",
    );
    has_problem(
        &problems,
        "$.tasks[2].models[0]",
        Some("bare"),
        "bare model id",
    );
    has_problem(
        &problems,
        "$.tasks[2].models[1]",
        Some("7"),
        "exact model selection object",
    );
}

#[test]
fn problems_display_path_value_and_rule() {
    let problems = resolve_model(Some(&json!("openai/gpt-4")), None, &ctx(), "$").expect_err("no");
    let shown = problems[0].to_string();
    assert!(
        shown.starts_with("$.model = openai/gpt-4:medium: overriding the parent's model"),
        "{shown}"
    );
}

#[test]
fn labels_name_provider_id_and_effort() {
    assert_eq!(label(&sel("openai", "gpt-5", None)), "openai/gpt-5");
    assert_eq!(
        label(&sel("openai", "gpt-5", Some("high"))),
        "openai/gpt-5:high"
    );
}

// --- No parser panics --------------------------------------------------------------------------

fn arbitrary_json() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i64>().prop_map(|n| json!(n)),
        any::<f64>().prop_map(|f| json!(f)),
        ".*".prop_map(Value::String),
        prop::sample::select(vec![
            "openai/gpt-5",
            "openai/gpt-5:high",
            "anthropic/claude-sonnet",
            "gw/eu/model-x",
            "openrouter/anthropic/claude:beta:off",
            "provider",
            "id",
            "effort",
            "high",
        ])
        .prop_map(|s| Value::String(s.to_owned())),
    ];
    leaf.prop_recursive(4, 32, 6, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..6).prop_map(Value::Array),
            prop::collection::btree_map(
                prop::sample::select(vec!["provider", "id", "effort", "x", ""])
                    .prop_map(str::to_owned),
                inner,
                0..5,
            )
            .prop_map(|m| Value::Object(m.into_iter().collect())),
        ]
    })
}

proptest! {
    #[test]
    fn the_string_parser_never_panics(text in ".*") {
        let _ = parse_selection_text(&text, &providers(), "$.model");
    }

    #[test]
    fn the_string_parser_never_panics_on_near_misses(
        provider in prop::sample::select(vec!["anthropic", "gw", "gw/eu", "", "nope", "gw/"]),
        rest in "[a-z/:é😀 ]{0,12}",
    ) {
        let text = format!("{provider}/{rest}");
        if let Ok(parsed) = parse_selection_text(&text, &providers(), "$.model") {
            prop_assert!(providers().contains(&parsed.provider));
            prop_assert!(!parsed.id.trim().is_empty());
        }
    }

    #[test]
    fn resolution_never_panics_on_arbitrary_json(
        model in proptest::option::of(arbitrary_json()),
        models in proptest::option::of(arbitrary_json()),
    ) {
        let result = resolve_model(model.as_ref(), models.as_ref(), &ctx(), "$");
        if let Err(problems) = result {
            prop_assert!(!problems.is_empty());
            prop_assert!(problems.iter().all(|p| p.path.starts_with("$.model")));
        }
    }

    #[test]
    fn labels_round_trip_through_the_string_form(
        provider in prop::sample::select(vec!["anthropic", "openai", "openrouter", "fake"]),
        id in "[a-zA-Z0-9._/:-]{1,20}",
        effort in proptest::option::of(prop::sample::select(Effort::ALL.to_vec())),
    ) {
        let id_ends_in_effort = id
            .rsplit_once(':')
            .is_some_and(|(_, suffix)| Effort::from_name(suffix).is_some());
        prop_assume!(!id_ends_in_effort && !id.trim().is_empty());
        let selection = sel(provider, &id, effort.map(Effort::as_str));
        let known: BTreeSet<String> = ["anthropic", "openai", "openrouter", "fake"]
            .into_iter().map(str::to_owned).collect();
        prop_assert_eq!(parse_selection_text(&label(&selection), &known, "$"), Ok(selection));
    }
}

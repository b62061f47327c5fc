//! The logical-model prompt section (instructions, table header and every ordinary row after
//! sanitation) and its ceilings: at most 19,400 portable characters and 105 lines, equality
//! accepted, nothing truncated.
//!
//! Portable characters are counted as UTF-16 code units, as the JavaScript implementation the
//! contract was written for measured string length. Portable measurement removes installed
//! documentation-directory prefixes; this section names no installed path, so its portable
//! length is its length.

use std::fmt::Write as _;

use serde::Serialize;

use super::RoutingPolicy;
use super::definition::LogicalModel;
use super::issue::{ErrorClass, Issue};
use super::json::JsonPath;
use crate::text::SafeText;

pub const MAX_PROMPT_CHARACTERS: usize = 19_400;
pub const MAX_PROMPT_LINES: usize = 105;

const INSTRUCTIONS: &str = "## Logical models

Every `thread` call names one logical `model` from this table and one non-empty `reason` of at \
most 200 characters. You do not choose effort: each model runs at its fixed effort.
Select from action fit, relevant area guidance, behavioral cautions, capability evidence, and a \
lower supported cost rating. A higher capability or cost rating is not enough by itself.
Guidance and cautions direct selection; Slate does not enforce them at runtime. A more specific \
active guideline overrides a general preference. A reference to another model describes a \
conditional preference and does not require selecting an excluded model.
Ratings are fixed project judgments from 1 through 100, not measurements: a higher capability \
rating means stronger expected capability, a higher cost rating greater expected expense.

| model | effort | capability | cost | guidance | cautions |
| --- | --- | ---: | ---: | --- | --- |";

/// The size of the rendered section against its ceilings.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct PromptMeasure {
    pub characters: usize,
    pub lines: usize,
    pub max_characters: usize,
    pub max_lines: usize,
}

/// One table cell: sanitized to one line, `|` escaped so it cannot end the cell.
fn cell(texts: &[String]) -> String {
    if texts.is_empty() {
        return "none".to_owned();
    }
    let joined = texts.join(" ");
    SafeText::line(&joined).as_str().replace('|', "\\|")
}

fn row(model: &LogicalModel) -> String {
    format!(
        "| `{}` | {} | {} | {} | {} | {} |",
        model.model,
        model.effort,
        model.capability_rating,
        model.cost_rating,
        cell(&model.guidelines),
        cell(&model.cautions)
    )
}

/// The ordinary definitions in membership order.
fn rows(policy: &RoutingPolicy) -> Vec<&LogicalModel> {
    policy
        .ordinary
        .iter()
        .filter_map(|name| policy.definition(name))
        .collect()
}

/// The complete section, without a trailing newline.
pub fn render(policy: &RoutingPolicy) -> String {
    let mut out = INSTRUCTIONS.to_owned();
    for model in rows(policy) {
        let _ = write!(out, "\n{}", row(model));
    }
    out
}

/// Portable characters: UTF-16 code units.
pub fn portable_len(text: &str) -> usize {
    text.encode_utf16().count()
}

pub fn line_count(text: &str) -> usize {
    text.split('\n').count()
}

/// Measure the section and report each exceeded ceiling, naming the model whose row crosses
/// it and the field responsible for that row.
pub fn check(policy: &RoutingPolicy) -> (PromptMeasure, Vec<Issue>) {
    let section = render(policy);
    let measure = PromptMeasure {
        characters: portable_len(&section),
        lines: line_count(&section),
        max_characters: MAX_PROMPT_CHARACTERS,
        max_lines: MAX_PROMPT_LINES,
    };
    let mut issues = Vec::new();
    let mut characters = portable_len(INSTRUCTIONS);
    let mut lines = line_count(INSTRUCTIONS);
    let (mut chars_reported, mut lines_reported) = (false, false);
    for model in rows(policy) {
        characters += 1 + portable_len(&row(model));
        lines += 1;
        if characters > MAX_PROMPT_CHARACTERS && !chars_reported {
            chars_reported = true;
            issues.push(
                Issue::new(
                    ErrorClass::PromptLimit,
                    text_field(model),
                    format!(
                        "the logical-model prompt section is {} portable characters, above the \
                         ceiling of {MAX_PROMPT_CHARACTERS} (nothing is truncated); the row of \
                         `{}` crosses it: shorten its guidance or cautions, or remove models \
                         from ordinary membership",
                        measure.characters, model.model
                    ),
                )
                .value(&model.model),
            );
        }
        if lines > MAX_PROMPT_LINES && !lines_reported {
            lines_reported = true;
            issues.push(
                Issue::new(
                    ErrorClass::PromptLimit,
                    membership_field(model),
                    format!(
                        "the logical-model prompt section is {} lines, above the ceiling of \
                         {MAX_PROMPT_LINES} (nothing is truncated); the row of `{}` crosses it: \
                         remove models from ordinary membership",
                        measure.lines, model.model
                    ),
                )
                .value(&model.model),
            );
        }
    }
    (measure, issues)
}

/// The field that supplied a row's text: the `guidelines` of its `add`/`replace` entry when a
/// file supplied them, else the entry, else ordinary membership.
fn text_field(model: &LogicalModel) -> JsonPath {
    match &model.defined_at {
        Some(at)
            if model
                .sources
                .get("guidelines")
                .is_some_and(|s| s != "shipped") =>
        {
            at.key("guidelines")
        }
        Some(at) => at.clone(),
        None => membership_path(),
    }
}

fn membership_field(model: &LogicalModel) -> JsonPath {
    match (&model.defined_at, model.origin) {
        (Some(at), super::definition::Origin::Added) => at.clone(),
        _ => membership_path(),
    }
}

fn membership_path() -> JsonPath {
    JsonPath::root().key("router").key("models").key("include")
}

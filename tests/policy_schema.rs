//! Issue 3 ¶8 — structured results [Required structured results]: the finite `resultSchema`
//! subset guard (every accepted keyword, every rejection class, the three size limits at
//! their boundary), strict value validation, and the submission protocol driven through
//! the coordinator.

#[path = "policy_schema/arbitrary.rs"]
mod arbitrary;
#[path = "policy_schema/guard.rs"]
mod guard;
#[path = "policy_schema/limits.rs"]
mod limits;
#[path = "policy_schema/protocol.rs"]
mod protocol;
#[path = "policy_schema/values.rs"]
mod values;

use serde_json::Value;
use slate::policy::Problem;
use slate::policy::schema::{CheckedSchema, validate_schema, validate_value};

const AT: &str = "$.tasks[0].resultSchema";

fn checked(schema: &Value) -> CheckedSchema {
    validate_schema(schema, AT).unwrap_or_else(|problems| {
        panic!("{schema} should be accepted, got:\n{}", render(&problems))
    })
}

fn problems(schema: &Value) -> Vec<Problem> {
    match validate_schema(schema, AT) {
        Ok(_) => panic!("{schema} should be rejected"),
        Err(problems) => problems,
    }
}

fn render(problems: &[Problem]) -> String {
    problems
        .iter()
        .map(ToString::to_string)
        .collect::<Vec<_>>()
        .join("\n")
}

fn errors(schema: &Value, value: &Value) -> Vec<String> {
    validate_value(&checked(schema), value)
}

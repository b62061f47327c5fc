//! Property tests: neither the guard nor value validation panics on arbitrary JSON.

use proptest::prelude::*;
use serde_json::{Value, json};
use slate::policy::schema::{
    MAX_VALUE_ERRORS, SUPPORTED_KEYWORDS, validate_schema, validate_value,
};

use crate::{AT, render};

fn any_json() -> impl Strategy<Value = Value> {
    json_of(5, 64, 6)
}

/// Small data for `const`/`enum`, so generated schemas stay within the size limits.
fn small_json() -> impl Strategy<Value = Value> {
    json_of(2, 8, 3)
}

fn json_of(depth: u32, size: u32, branch: u32) -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i64>().prop_map(Value::from),
        any::<u64>().prop_map(Value::from),
        any::<f64>()
            .prop_map(|f| serde_json::Number::from_f64(f).map_or(Value::Null, Value::Number)),
        "[a-z/~é😀\u{1b}]{0,8}".prop_map(Value::String),
    ];
    leaf.prop_recursive(depth, size, branch, move |inner| {
        let key = prop_oneof![
            proptest::sample::select(SUPPORTED_KEYWORDS.to_vec()).prop_map(str::to_owned),
            proptest::sample::select(vec!["$ref", "$schema", "pattern", "allOf", "format", "x"])
                .prop_map(str::to_owned),
            "[a-z/~]{0,4}",
        ];
        prop_oneof![
            proptest::collection::vec(inner.clone(), 0..branch as usize).prop_map(Value::Array),
            proptest::collection::btree_map(key, inner, 0..branch as usize)
                .prop_map(|m| Value::Object(m.into_iter().collect())),
        ]
    })
}

/// Mostly valid schemas, so value validation is exercised on real rules.
fn any_schema() -> impl Strategy<Value = Value> {
    let number = prop_oneof![
        (-100i64..100).prop_map(Value::from),
        (-100.0f64..100.0).prop_map(|f| json!(f)),
    ];
    let leaf = prop_oneof![
        any::<bool>().prop_map(Value::Bool),
        proptest::sample::select(vec![
            "object", "array", "string", "number", "integer", "boolean", "null"
        ])
        .prop_map(|t| json!({"type": t})),
        (number.clone(), number.clone())
            .prop_map(|(a, b)| json!({"minimum": a, "exclusiveMaximum": b})),
        (1u32..7).prop_map(|m| json!({"multipleOf": f64::from(m) / 4.0})),
        (0u32..4, 0u32..6)
            .prop_map(|(a, b)| json!({"minLength": a, "maxItems": b, "maxProperties": b})),
        small_json().prop_map(|c| json!({"const": c})),
        proptest::collection::vec(small_json(), 1..4).prop_map(|e| json!({"enum": e})),
    ];
    leaf.prop_recursive(3, 48, 4, |inner| {
        prop_oneof![
            inner.clone().prop_map(|s| json!({"type": "array", "items": s, "minItems": 1})),
            (proptest::collection::btree_map("[a-c]", inner.clone(), 0..4), inner.clone(), any::<bool>())
                .prop_map(|(props, extra, req)| {
                    let required: Vec<&String> = if req { props.keys().collect() } else { Vec::new() };
                    json!({"type": "object", "properties": props, "additionalProperties": extra, "required": required})
                }),
        ]
    })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    #[test]
    fn the_guard_never_panics_on_arbitrary_json(schema in any_json()) {
        let _ = validate_schema(&schema, AT);
    }

    #[test]
    fn generated_schemas_are_accepted_and_values_never_panic(
        schema in any_schema(),
        values in proptest::collection::vec(any_json(), 1..4),
    ) {
        let checked = validate_schema(&schema, AT)
            .map_err(|p| TestCaseError::fail(render(&p)))?;
        for value in &values {
            let found = validate_value(&checked, value);
            prop_assert!(found.len() <= MAX_VALUE_ERRORS);
            prop_assert!(found.iter().all(|e| e.starts_with('/')), "{found:?}");
            prop_assert_eq!(&validate_value(&checked, value), &found, "deterministic");
        }
    }

    #[test]
    fn any_accepted_json_validates_values_without_panicking(schema in any_json(), value in any_json()) {
        if let Ok(checked) = validate_schema(&schema, AT) {
            let found = validate_value(&checked, &value);
            prop_assert!(found.len() <= MAX_VALUE_ERRORS);
        }
    }

    #[test]
    fn a_const_accepts_its_own_value(value in any_json()) {
        let checked = validate_schema(&json!({"const": value.clone(), "enum": [value.clone()]}), AT)
            .map_err(|p| TestCaseError::fail(render(&p)))?;
        prop_assert!(validate_value(&checked, &value).is_empty());
    }
}

//! Strict, non-coercing value validation: messages, pointers, order and the error cap.

use serde_json::{Value, json};
use slate::policy::schema::MAX_VALUE_ERRORS;

use crate::errors;

#[test]
#[rustfmt::skip]
fn values_are_never_coerced() {
    let n = |ty: &str| json!({"type": "object", "properties": {"n": {"type": ty}}});
    let cases = [
        ("integer", json!("42"), Some("/n: expected integer, found string \"42\"")),
        ("integer", json!(42), None),
        ("integer", json!(1.0), None),
        ("integer", json!(-0.0), None),
        ("integer", json!(1e300), None),
        ("integer", json!(1.5), Some("/n: expected integer, found number 1.5")),
        ("integer", json!(true), Some("/n: expected integer, found boolean true")),
        ("number", json!(1), None),
        ("number", json!(1.5), None),
        ("number", json!("1.5"), Some("/n: expected number, found string \"1.5\"")),
        ("number", json!(false), Some("/n: expected number, found boolean false")),
        ("number", json!(null), Some("/n: expected number, found null")),
        ("boolean", json!("true"), Some("/n: expected boolean, found string \"true\"")),
        ("boolean", json!(1), Some("/n: expected boolean, found number 1")),
        ("boolean", json!(false), None),
        ("null", json!("null"), Some("/n: expected null, found string \"null\"")),
        ("null", json!(0), Some("/n: expected null, found number 0")),
        ("null", json!(null), None),
        ("string", json!(42), Some("/n: expected string, found number 42")),
        ("string", json!(["a"]), Some("/n: expected string, found array of 1 item")),
        ("array", json!("a"), Some("/n: expected array, found string \"a\"")),
        ("array", json!({"0": "a"}), Some("/n: expected array, found object with 1 property")),
        ("object", json!([]), Some("/n: expected object, found array of 0 items")),
        ("object", json!({}), None),
    ];
    for (ty, value, expected) in cases {
        let got = errors(&n(ty), &json!({ "n": value }));
        let expected: Vec<String> = expected.into_iter().map(str::to_owned).collect();
        assert_eq!(got, expected, "{ty} vs {value}");
    }
}

#[test]
#[rustfmt::skip]
#[allow(clippy::too_many_lines, reason = "one row per keyword behaviour")]
fn each_keyword_has_strict_semantics() {
    let cases: Vec<(Value, Value, Vec<&str>)> = vec![
        (json!(true), json!({"anything": [1]}), vec![]),
        (json!(false), json!(1), vec!["/: no value is allowed here (schema `false`), found number 1"]),
        (json!({"const": 1}), json!(1.0), vec![]),
        (json!({"const": {"a": 1, "b": [1.0]}}), json!({"b": [1], "a": 1.0}), vec![]),
        (json!({"const": [1, 2]}), json!([2, 1]), vec!["/: must equal [1,2], found array of 2 items"]),
        (json!({"const": "a"}), json!("b"), vec!["/: must equal \"a\", found string \"b\""]),
        (json!({"const": null}), json!(false), vec!["/: must equal null, found boolean false"]),
        (json!({"enum": ["a", 2]}), json!(2.0), vec![]),
        (json!({"enum": ["a", 2]}), json!("2"), vec!["/: must be one of [\"a\",2], found string \"2\""]),
        (json!({"minimum": 2}), json!(2), vec![]),
        (json!({"minimum": 2}), json!(1.999), vec!["/: must be >= 2, found 1.999"]),
        (json!({"exclusiveMinimum": 2}), json!(2), vec!["/: must be > 2, found 2"]),
        (json!({"exclusiveMinimum": 2}), json!(2.000_001), vec![]),
        (json!({"maximum": 2.5}), json!(2.5), vec![]),
        (json!({"maximum": 2.5}), json!(3), vec!["/: must be <= 2.5, found 3"]),
        (json!({"exclusiveMaximum": 0}), json!(0.0), vec!["/: must be < 0, found 0.0"]),
        (json!({"exclusiveMaximum": 0}), json!(-1), vec![]),
        (json!({"maximum": 9_007_199_254_740_992_u64}), json!(9_007_199_254_740_993_u64), vec!["/: must be <= 9007199254740992, found 9007199254740993"]),
        (json!({"multipleOf": 0.1}), json!(0.3), vec![]),
        (json!({"multipleOf": 3}), json!(-9), vec![]),
        (json!({"multipleOf": 3}), json!(10), vec!["/: must be a multiple of 3, found 10"]),
        (json!({"multipleOf": 0.5}), json!(0.75), vec!["/: must be a multiple of 0.5, found 0.75"]),
        (json!({"minimum": 0, "type": "number"}), json!("-1"), vec!["/: expected number, found string \"-1\""]),
        (json!({"minimum": 5}), json!("short"), vec![]),
        (json!({"minLength": 2}), json!("😀😀"), vec![]),
        (json!({"minLength": 3}), json!("😀😀"), vec!["/: must be at least 3 characters long, found 2"]),
        (json!({"maxLength": 1}), json!("é"), vec![]),
        (json!({"maxLength": 1}), json!("ab"), vec!["/: must be at most 1 characters long, found 2"]),
        (json!({"minItems": 1}), json!([]), vec!["/: must have at least 1 items, found 0"]),
        (json!({"maxItems": 1}), json!([1, 2]), vec!["/: must have at most 1 items, found 2"]),
        (json!({"items": {"type": "integer"}}), json!([1, "2", 3.5]), vec!["/1: expected integer, found string \"2\"", "/2: expected integer, found number 3.5"]),
        (json!({"items": false}), json!([]), vec![]),
        (json!({"items": false}), json!([0]), vec!["/0: no value is allowed here (schema `false`), found number 0"]),
        (json!({"minProperties": 1}), json!({}), vec!["/: must have at least 1 properties, found 0"]),
        (json!({"maxProperties": 1}), json!({"a": 1, "b": 2}), vec!["/: must have at most 1 properties, found 2"]),
        (json!({"required": ["a", "b"]}), json!({"b": 1}), vec!["/a: required property is missing"]),
        (json!({"required": ["a"]}), json!({"a": null}), vec![]),
        (json!({"properties": {"a": {"type": "string"}}}), json!({"b": 1}), vec![]),
        (json!({"properties": {"a": true}, "additionalProperties": false}), json!({"a": 1, "b": 2}), vec!["/b: additional property is not allowed"]),
        (json!({"properties": {"a": false}}), json!({"a": 1}), vec!["/a: no value is allowed here (schema `false`), found number 1"]),
        (json!({"additionalProperties": {"type": "string"}}), json!({"x": "1", "y": 2}), vec!["/y: expected string, found number 2"]),
        (json!({"title": "t", "description": "d"}), json!(null), vec![]),
    ];
    for (schema, value, expected) in cases {
        assert_eq!(errors(&schema, &value), expected, "{schema} vs {value}");
    }
}

#[test]
fn errors_follow_the_documented_order() {
    let schema = json!({
        "type": "object",
        "minProperties": 5,
        "required": ["z", "a"],
        "properties": {
            "b": {"type": "integer", "minimum": 10, "multipleOf": 4},
            "c": {"items": {"properties": {"d": {"const": 1}}}}
        },
        "additionalProperties": {"maxLength": 1}
    });
    let value = json!({"c": [{"d": 2}, {"d": 1}], "b": 6, "x": "long"});
    assert_eq!(
        errors(&schema, &value),
        vec![
            "/: must have at least 5 properties, found 3",
            "/z: required property is missing",
            "/a: required property is missing",
            "/b: must be >= 10, found 6",
            "/b: must be a multiple of 4, found 6",
            "/c/0/d: must equal 1, found number 2",
            "/x: must be at most 1 characters long, found 4",
        ]
    );
}

#[test]
fn a_value_of_the_wrong_type_gets_no_further_errors_at_that_location() {
    let schema = json!({"type": "string", "enum": ["a"], "minLength": 3});
    assert_eq!(
        errors(&schema, &json!(5)),
        vec!["/: expected string, found number 5"]
    );
}

#[test]
fn pointers_escape_tilde_and_slash() {
    let schema = json!({"properties": {"a/b": {"type": "string"}, "m~n": {"type": "string"}, "": {"type": "string"}}});
    assert_eq!(
        errors(&schema, &json!({"a/b": 1, "m~n": 2, "": 3})),
        vec![
            "/: expected string, found number 3",
            "/a~1b: expected string, found number 1",
            "/m~0n: expected string, found number 2",
        ]
    );
}

#[test]
fn at_most_32_errors_are_returned_in_index_order() {
    let schema = json!({"type": "array", "items": {"type": "integer"}});
    let value = Value::Array((0..100).map(|i| json!(format!("{i}"))).collect());
    let found = errors(&schema, &value);
    assert_eq!(found.len(), MAX_VALUE_ERRORS);
    assert_eq!(found[0], "/0: expected integer, found string \"0\"");
    assert_eq!(found[31], "/31: expected integer, found string \"31\"");
    // Deterministic.
    assert_eq!(errors(&schema, &value), found);
}

#[test]
fn found_strings_are_clipped_and_escaped() {
    let schema = json!({"type": "integer"});
    let found = errors(&schema, &json!(format!("\u{1b}[31m{}", "x".repeat(200))));
    assert_eq!(found.len(), 1);
    let line = &found[0];
    assert!(
        line.starts_with("/: expected integer, found string \"\\u001b[31mxxx"),
        "{line}"
    );
    assert!(!line.contains('\u{1b}'), "control characters are escaped");
    assert!(line.ends_with("…\""), "{line}");
    assert!(line.chars().count() < 120, "{line}");
}

#[test]
fn long_expected_constants_are_clipped() {
    let schema = json!({"const": "y".repeat(300)});
    let found = errors(&schema, &json!("n"));
    assert!(
        found[0].contains('…') && found[0].chars().count() < 160,
        "{}",
        found[0]
    );
}

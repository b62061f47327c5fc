//! The three size limits (characters, nodes, depth), each at its boundary: equality
//! accepted, one over rejected.

use serde_json::{Value, json};
use slate::core::bounds::{SCHEMA_CHARS, SCHEMA_DEPTH, SCHEMA_NODES};

use crate::{AT, checked, problems, render};

/// `{"description":"…"}` with exactly `chars` characters of compact JSON, using a
/// two-byte character so characters (not bytes) are what counts.
fn schema_of_chars(chars: usize) -> Value {
    let overhead = r#"{"description":""}"#.len();
    let schema = json!({"description": "é".repeat(chars - overhead)});
    assert_eq!(
        serde_json::to_string(&schema)
            .expect("json")
            .chars()
            .count(),
        chars
    );
    schema
}

#[test]
fn the_character_limit_is_inclusive() {
    checked(&schema_of_chars(SCHEMA_CHARS));
    let found = problems(&schema_of_chars(SCHEMA_CHARS + 1));
    assert_eq!(found.len(), 1, "{}", render(&found));
    assert_eq!(found[0].path, AT);
    assert_eq!(found[0].value.as_deref(), Some("16385 characters"));
    assert!(found[0].rule.contains("at most 16384 characters"));
}

/// A root object with `n - 1` boolean property schemas: `n` nodes.
fn schema_of_nodes(n: usize) -> Value {
    let properties: serde_json::Map<String, Value> = (1..n)
        .map(|i| (format!("p{i}"), Value::Bool(true)))
        .collect();
    json!({"type": "object", "properties": properties})
}

#[test]
fn the_node_limit_is_inclusive() {
    let schema = checked(&schema_of_nodes(SCHEMA_NODES));
    assert_eq!(schema.nodes(), SCHEMA_NODES);
    let found = problems(&schema_of_nodes(SCHEMA_NODES + 1));
    assert_eq!(found.len(), 1, "{}", render(&found));
    assert_eq!(found[0].path, AT);
    assert_eq!(found[0].value.as_deref(), Some("257 nodes"));
    assert!(found[0].rule.contains("at most 256 schema nodes"));
}

#[test]
fn boolean_subschemas_and_every_schema_position_count_as_nodes() {
    // root, properties.a, properties.a.items, additionalProperties (false) = 4.
    let schema = checked(&json!({
        "properties": {"a": {"items": true}},
        "additionalProperties": false,
        "const": {"properties": {"x": true}},
        "enum": [{"items": {}}]
    }));
    assert_eq!(schema.nodes(), 4, "const/enum data are not nodes");
    assert_eq!(schema.depth(), 3);
}

/// `depth` nested schemas through `keyword` (`items` or `additionalProperties`) or
/// `properties.p`: the root is level 1.
fn schema_of_depth(depth: usize, via: &str) -> Value {
    let mut schema = json!({"type": "string"});
    for _ in 1..depth {
        schema = match via {
            "properties" => json!({"properties": {"p": schema}}),
            keyword => json!({ keyword: schema }),
        };
    }
    schema
}

#[test]
fn the_depth_limit_is_inclusive_through_every_applicator() {
    for (via, step) in [
        ("items", ".items"),
        ("additionalProperties", ".additionalProperties"),
        ("properties", ".properties.p"),
    ] {
        let schema = checked(&schema_of_depth(SCHEMA_DEPTH, via));
        assert_eq!(schema.depth(), SCHEMA_DEPTH, "{via}");
        let found = problems(&schema_of_depth(SCHEMA_DEPTH + 1, via));
        assert_eq!(found.len(), 1, "{via}: {}", render(&found));
        assert_eq!(
            found[0].path,
            format!("{AT}{}", step.repeat(SCHEMA_DEPTH)),
            "{via}"
        );
        assert!(found[0].rule.contains("at most 16 levels"), "{via}");
    }
}

#[test]
fn very_deep_schemas_are_rejected_once_without_descending() {
    // 1000 levels stay under the character limit: only the depth rule applies.
    let found = problems(&schema_of_depth(1000, "items"));
    assert_eq!(found.len(), 1, "{}", render(&found));
    assert_eq!(
        found[0].path,
        format!("{AT}{}", ".items".repeat(SCHEMA_DEPTH))
    );
}

#[test]
fn all_three_limits_are_reported_together() {
    let mut schema = schema_of_nodes(300);
    schema["description"] = json!("d".repeat(SCHEMA_CHARS));
    schema["items"] = schema_of_depth(SCHEMA_DEPTH, "items");
    let found = problems(&schema);
    let rules: Vec<&str> = found.iter().map(|p| p.rule.as_str()).collect();
    assert_eq!(found.len(), 3, "{}", render(&found));
    assert!(rules[0].contains("characters"));
    assert!(rules[1].contains("schema nodes"));
    assert!(rules[2].contains("levels deep"));
}

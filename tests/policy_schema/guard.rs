//! The subset guard: every supported keyword accepted, every rejection class named with
//! its JSON path, value and rule.

use serde_json::{Value, json};
use slate::policy::schema::SUPPORTED_KEYWORDS;

use crate::{AT, checked, problems, render};

#[test]
fn every_supported_keyword_is_accepted() {
    let cases = [
        json!(true),
        json!(false),
        json!({}),
        json!({"type": "object"}),
        json!({"type": "array"}),
        json!({"type": "string"}),
        json!({"type": "number"}),
        json!({"type": "integer"}),
        json!({"type": "boolean"}),
        json!({"type": "null"}),
        json!({"properties": {}}),
        json!({"properties": {"a": {"type": "string"}, "b": true, "c": false}}),
        json!({"required": []}),
        json!({"required": ["a", "b"]}),
        json!({"items": {"type": "integer"}}),
        json!({"items": true}),
        json!({"items": false}),
        json!({"additionalProperties": false}),
        json!({"additionalProperties": true}),
        json!({"additionalProperties": {"type": "number"}}),
        json!({"const": null}),
        json!({"const": {"a": [1, 2.5, "x", null, true]}}),
        json!({"enum": [1]}),
        json!({"enum": ["a", 2, null, [], {}]}),
        json!({"enum": [1, 1]}),
        json!({"title": "Result"}),
        json!({"description": ""}),
        json!({"minimum": 0}),
        json!({"minimum": -1.5}),
        json!({"maximum": 1e300}),
        json!({"exclusiveMinimum": -9_007_199_254_740_993_i64}),
        json!({"exclusiveMaximum": 18_446_744_073_709_551_615_u64}),
        json!({"multipleOf": 3}),
        json!({"multipleOf": 0.01}),
        json!({"minLength": 0}),
        json!({"maxLength": 4096}),
        json!({"minItems": 1}),
        json!({"maxItems": 2.0}),
        json!({"minProperties": 0}),
        json!({"maxProperties": 64}),
        // Property names are names, never keywords.
        json!({"properties": {"$ref": true, "pattern": {"type": "string"}, "allOf": false}}),
        json!({"required": ["$ref", "format"]}),
        // Keywords that do not apply to the declared type are valid JSON Schema.
        json!({"type": "string", "minimum": 3, "items": true}),
    ];
    for schema in &cases {
        checked(schema);
    }
    // Every supported keyword appears above.
    let seen: Vec<String> = cases
        .iter()
        .filter_map(Value::as_object)
        .flat_map(|m| m.keys().cloned())
        .collect();
    for keyword in SUPPORTED_KEYWORDS {
        assert!(
            seen.iter().any(|k| k == keyword),
            "{keyword} is not covered"
        );
    }
}

#[test]
fn the_contract_example_and_a_kitchen_sink_are_accepted() {
    let example = json!({
        "type": "object",
        "properties": { "summary": { "type": "string" } },
        "required": ["summary"],
        "additionalProperties": false
    });
    let schema = checked(&example);
    assert_eq!(
        schema.as_value(),
        &example,
        "the schema is kept as supplied"
    );
    assert_eq!((schema.nodes(), schema.depth()), (3, 2));

    let sink = json!({
        "title": "Findings",
        "description": "What the scout found",
        "type": "object",
        "properties": {
            "files": {
                "type": "array",
                "minItems": 1,
                "maxItems": 50,
                "items": {
                    "type": "object",
                    "properties": {
                        "path": {"type": "string", "minLength": 1, "maxLength": 4096},
                        "line": {"type": "integer", "minimum": 1},
                        "score": {"type": "number", "exclusiveMinimum": 0, "exclusiveMaximum": 1, "multipleOf": 0.05},
                        "kind": {"enum": ["bug", "smell"]},
                        "version": {"const": 1}
                    },
                    "required": ["path", "line"],
                    "additionalProperties": false
                }
            },
            "notes": {"type": "object", "minProperties": 0, "maxProperties": 8, "additionalProperties": {"type": "string"}},
            "done": {"type": "boolean"},
            "blocked": {"type": "null"}
        },
        "required": ["files", "done"]
    });
    let schema = checked(&sink);
    assert_eq!(schema.depth(), 4);
    assert_eq!(schema.nodes(), 13);
}

// ---- the subset guard: rejected -------------------------------------------------------

/// `(label, schema, path after AT, rule fragment)`: each schema has exactly one problem.
#[rustfmt::skip]
#[allow(clippy::too_many_lines, reason = "one row per rejection class")]
fn rejection_table() -> Vec<(&'static str, Value, &'static str, &'static str)> {
    let supported_list = "the supported keywords are type, properties, required";
    vec![
        // Not a schema.
        ("number schema", json!(42), "", "object or a boolean"),
        ("string schema", json!("object"), "", "object or a boolean"),
        ("null schema", json!(null), "", "object or a boolean"),
        ("array schema", json!([{"type": "string"}]), "", "object or a boolean"),
        ("property not a schema", json!({"properties": {"a": "string"}}), ".properties.a", "object or a boolean"),
        // Unknown keywords (annotations outside the list included).
        ("unknown keyword", json!({"foo": 1}), ".foo", supported_list),
        ("default", json!({"default": 1}), ".default", supported_list),
        ("examples", json!({"examples": [1]}), ".examples", supported_list),
        ("$comment", json!({"$comment": "x"}), ".$comment", supported_list),
        ("uniqueItems", json!({"uniqueItems": true}), ".uniqueItems", supported_list),
        ("readOnly", json!({"readOnly": true}), ".readOnly", supported_list),
        ("odd name", json!({"x-y": 1}), "[\"x-y\"]", supported_list),
        // $schema in any form.
        ("$schema 2020-12", json!({"$schema": "https://json-schema.org/draft/2020-12/schema"}), ".$schema", "`$schema` is not supported"),
        ("$schema draft-07", json!({"$schema": "http://json-schema.org/draft-07/schema#"}), ".$schema", "`$schema` is not supported"),
        // References of any kind.
        ("$ref", json!({"$ref": "#/$defs/a"}), ".$ref", "references"),
        ("remote $ref", json!({"$ref": "https://example.com/s.json"}), ".$ref", "references"),
        ("$dynamicRef", json!({"$dynamicRef": "#meta"}), ".$dynamicRef", "references"),
        ("$recursiveRef", json!({"$recursiveRef": "#"}), ".$recursiveRef", "references"),
        ("$id", json!({"$id": "urn:x"}), ".$id", "references"),
        ("$anchor", json!({"$anchor": "a"}), ".$anchor", "references"),
        ("$dynamicAnchor", json!({"$dynamicAnchor": "meta"}), ".$dynamicAnchor", "references"),
        ("$recursiveAnchor", json!({"$recursiveAnchor": true}), ".$recursiveAnchor", "references"),
        ("$defs", json!({"$defs": {"a": true}}), ".$defs", "references"),
        ("definitions", json!({"definitions": {"a": true}}), ".definitions", "references"),
        ("$vocabulary", json!({"$vocabulary": {}}), ".$vocabulary", "references"),
        // Regular expressions.
        ("pattern", json!({"pattern": "^a"}), ".pattern", "regular expressions"),
        ("patternProperties", json!({"patternProperties": {"^a": true}}), ".patternProperties", "regular expressions"),
        // Formats.
        ("format", json!({"format": "email"}), ".format", "formats"),
        ("contentEncoding", json!({"contentEncoding": "base64"}), ".contentEncoding", "formats"),
        ("contentMediaType", json!({"contentMediaType": "application/json"}), ".contentMediaType", "formats"),
        ("contentSchema", json!({"contentSchema": true}), ".contentSchema", "formats"),
        // Compositions, conditionals and other applicators.
        ("allOf", json!({"allOf": [true]}), ".allOf", "compositions"),
        ("anyOf", json!({"anyOf": [true]}), ".anyOf", "compositions"),
        ("oneOf", json!({"oneOf": [true]}), ".oneOf", "compositions"),
        ("not", json!({"not": false}), ".not", "compositions"),
        ("if", json!({"if": true}), ".if", "compositions"),
        ("then", json!({"then": true}), ".then", "compositions"),
        ("else", json!({"else": true}), ".else", "compositions"),
        ("dependentSchemas", json!({"dependentSchemas": {"a": true}}), ".dependentSchemas", "compositions"),
        ("dependentRequired", json!({"dependentRequired": {"a": ["b"]}}), ".dependentRequired", "compositions"),
        ("dependencies", json!({"dependencies": {"a": ["b"]}}), ".dependencies", "compositions"),
        ("prefixItems", json!({"prefixItems": [true]}), ".prefixItems", "compositions"),
        ("additionalItems", json!({"additionalItems": false}), ".additionalItems", "compositions"),
        ("contains", json!({"contains": true}), ".contains", "compositions"),
        ("minContains", json!({"minContains": 1}), ".minContains", "compositions"),
        ("propertyNames", json!({"propertyNames": {"maxLength": 3}}), ".propertyNames", "compositions"),
        ("unevaluatedProperties", json!({"unevaluatedProperties": false}), ".unevaluatedProperties", "compositions"),
        ("unevaluatedItems", json!({"unevaluatedItems": false}), ".unevaluatedItems", "compositions"),
        // Dynamic or executable extensions.
        ("$data", json!({"$data": "1/a"}), ".$data", "dynamic or executable"),
        ("$async", json!({"$async": true}), ".$async", "dynamic or executable"),
        ("instanceof", json!({"instanceof": "Date"}), ".instanceof", "dynamic or executable"),
        ("typeof", json!({"typeof": "function"}), ".typeof", "dynamic or executable"),
        // Malformed values of supported keywords.
        ("type union", json!({"type": ["string", "null"]}), ".type", "type arrays are not supported"),
        ("type bigint", json!({"type": "bigint"}), ".type", "`type` must be one of object|array|string|number|integer|boolean|null"),
        ("type undefined", json!({"type": "undefined"}), ".type", "`type` must be one of"),
        ("type Object", json!({"type": "Object"}), ".type", "`type` must be one of"),
        ("type number", json!({"type": 1}), ".type", "as a string"),
        ("properties array", json!({"properties": [{"a": true}]}), ".properties", "`properties` must be an object"),
        ("required string", json!({"required": "a"}), ".required", "array of distinct strings"),
        ("required non-string", json!({"required": ["a", 1]}), ".required[1]", "must be strings"),
        ("required duplicate", json!({"required": ["a", "b", "a"]}), ".required[2]", "distinct"),
        ("items tuple", json!({"items": [true, false]}), ".items", "tuple forms"),
        ("items number", json!({"items": 1}), ".items", "`items` must be a schema"),
        ("additionalProperties string", json!({"additionalProperties": "no"}), ".additionalProperties", "boolean or a schema"),
        ("enum empty", json!({"enum": []}), ".enum", "nonempty array"),
        ("enum not array", json!({"enum": "a"}), ".enum", "nonempty array"),
        ("title number", json!({"title": 5}), ".title", "`title` must be a string"),
        ("description null", json!({"description": null}), ".description", "`description` must be a string"),
        ("minimum string", json!({"minimum": "1"}), ".minimum", "finite number"),
        ("maximum boolean", json!({"maximum": true}), ".maximum", "finite number"),
        ("exclusiveMinimum boolean (draft 4)", json!({"exclusiveMinimum": true}), ".exclusiveMinimum", "finite number"),
        ("exclusiveMaximum null", json!({"exclusiveMaximum": null}), ".exclusiveMaximum", "finite number"),
        ("multipleOf zero", json!({"multipleOf": 0}), ".multipleOf", "greater than 0"),
        ("multipleOf negative", json!({"multipleOf": -0.5}), ".multipleOf", "greater than 0"),
        ("multipleOf string", json!({"multipleOf": "2"}), ".multipleOf", "finite number"),
        ("minLength negative", json!({"minLength": -1}), ".minLength", "nonnegative integer"),
        ("maxLength fraction", json!({"maxLength": 1.5}), ".maxLength", "nonnegative integer"),
        ("minItems string", json!({"minItems": "1"}), ".minItems", "nonnegative integer"),
        ("maxItems boolean", json!({"maxItems": false}), ".maxItems", "nonnegative integer"),
        ("minProperties null", json!({"minProperties": null}), ".minProperties", "nonnegative integer"),
        ("maxProperties negative", json!({"maxProperties": -3}), ".maxProperties", "nonnegative integer"),
    ]
}

#[test]
fn every_rejection_class_names_the_path_the_value_and_the_rule() {
    for (label, schema, suffix, rule) in rejection_table() {
        let found = problems(&schema);
        assert_eq!(found.len(), 1, "{label}: {}", render(&found));
        let p = &found[0];
        assert_eq!(p.path, format!("{AT}{suffix}"), "{label}");
        assert!(
            p.rule.contains(rule),
            "{label}: rule {:?} lacks {rule:?}",
            p.rule
        );
        assert!(p.value.is_some(), "{label}: the offending value is shown");
        assert!(p.file.is_none(), "{label}: request input has no file");
    }
}

#[test]
fn rejections_are_found_at_every_schema_position() {
    // The same bad keyword under properties, items and additionalProperties.
    let cases = [
        (
            json!({"properties": {"n": {"type": "int"}}}),
            ".properties.n.type",
        ),
        (json!({"items": {"$ref": "#"}}), ".items.$ref"),
        (
            json!({"additionalProperties": {"format": "uri"}}),
            ".additionalProperties.format",
        ),
        (
            json!({"properties": {"a b": {"items": {"properties": {"c": {"anyOf": []}}}}}}),
            ".properties[\"a b\"].items.properties.c.anyOf",
        ),
    ];
    for (schema, suffix) in cases {
        let found = problems(&schema);
        assert_eq!(found.len(), 1, "{}", render(&found));
        assert_eq!(found[0].path, format!("{AT}{suffix}"));
    }
}

#[test]
fn every_problem_is_reported_with_value_and_rule() {
    let schema = json!({
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "type": "object",
        "properties": {
            "n": {"type": "int", "minimum": "0"},
            "tags": {"type": "array", "items": {"type": "string", "pattern": "^[a-z]+$"}},
            "when": {"type": "string", "format": "date-time"}
        },
        "required": ["n", "n"],
        "anyOf": [{"required": ["n"]}],
        "default": {}
    });
    let found = problems(&schema);
    let lines: Vec<String> = found.iter().map(ToString::to_string).collect();
    assert_eq!(
        lines,
        vec![
            format!(
                "{AT}.$schema = \"https://json-schema.org/draft/2020-12/schema\": `$schema` is not supported: omit it (the supported 2020-12 subset is implied)"
            ),
            format!(
                "{AT}.anyOf = [{{\"required\":[\"n\"]}}]: compositions, conditionals and other applicator keywords are not supported"
            ),
            format!(
                "{AT}.default = {{}}: unknown keyword; the supported keywords are {}",
                SUPPORTED_KEYWORDS.join(", ")
            ),
            format!("{AT}.properties.n.minimum = \"0\": `minimum` must be a finite number"),
            format!(
                "{AT}.properties.n.type = \"int\": `type` must be one of object|array|string|number|integer|boolean|null"
            ),
            format!(
                "{AT}.properties.tags.items.pattern = \"^[a-z]+$\": regular expressions and patterns are not supported"
            ),
            format!(
                "{AT}.properties.when.format = \"date-time\": formats and content encodings are not supported"
            ),
            format!(
                "{AT}.required[1] = \"n\": `required` names must be distinct; this one is repeated"
            ),
        ]
    );
    // Deterministic: the same input reports the same problems in the same order.
    assert_eq!(problems(&schema), found);
}

#[test]
fn long_offending_values_are_clipped_in_problems() {
    let long = "x".repeat(500);
    let found = problems(&json!({"format": long}));
    let value = found[0].value.as_deref().expect("a value");
    assert!(value.chars().count() <= 120, "{value}");
    assert!(value.ends_with('…'));
}

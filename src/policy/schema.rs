//! Required structured results: the finite `resultSchema` subset guard and strict value
//! validation for `submit_result` (spec 003, "Required structured results").
//!
//! [`validate_schema`] accepts exactly the contract's subset (2020-12 semantics) and reports
//! every problem with the JSON path of the offending keyword; [`validate_value`] checks a
//! submitted value against a [`CheckedSchema`] without coercion and returns at most
//! [`MAX_VALUE_ERRORS`] errors, each starting with a JSON Pointer.
//!
//! # Why a hand-written validator and not the `jsonschema` crate
//!
//! `jsonschema` (0.61) is a fine general validator, and it was evaluated for the value side
//! behind this guard. It was not chosen:
//!
//! * **Weight.** Its default features (`resolve-http`, `resolve-file`, `tls-aws-lc-rs`) pull
//!   reqwest, rustls and aws-lc for remote `$ref` retrieval. Even with
//!   `default-features = false` its tree is about 60 crates (`cargo tree`): `regex`,
//!   `fancy-regex`, `referencing`, `fraction`/`num-bigint`, `ahash`, `email_address`,
//!   `uuid-simd`, `unicode-general-category`, `strum`, `parking_lot`, … on a two-core
//!   build, for features the guard below rejects before they could ever be used
//!   (references, patterns, formats, compositions).
//! * **Global side effects.** It enables `serde_json/float_roundtrip`, which feature
//!   unification would switch on for every JSON parse in the program.
//! * **Messages.** Its errors read `"42" is not of type "integer"` with the instance path
//!   kept apart; we want one line per error that starts with the pointer, names what was
//!   expected and what was found (clipped, control characters escaped), in a documented,
//!   deterministic order, capped at 32. We would re-render every error anyway.
//! * **Size of the job.** Our subset is twenty keywords with no references, no regexes and
//!   no applicators; exact semantics fit in a few hundred lines we can test exhaustively,
//!   and the build gains no dependency.
//!
//! On our subset its semantics agree with ours where it matters (strict types, `1.0` is an
//! integer, booleans are not numbers, string lengths in code points), so nothing the
//! contract asks for is lost by not using it.
//!
//! # Value semantics
//!
//! * No coercion: `"42"` is not an integer, `"true"` is not a boolean, `1` is not `true`,
//!   a single value is not a one-item array.
//! * A number is an integer when its value is integral: `1` and `1.0` are integers.
//! * Numbers compare by mathematical value, exactly for integers (no rounding through
//!   `f64`); `const` and `enum` use JSON equality (`1` equals `1.0`, key order ignored).
//! * `multipleOf` is decided exactly on the shortest decimal form of both numbers (what the
//!   JSON text says), so `0.3` is a multiple of `0.1`; binary floating-point remainders
//!   would say otherwise.
//! * String lengths count Unicode scalar values (code points), as 2020-12 specifies.

mod number;
mod value;

use std::collections::BTreeMap;
use std::fmt;
use std::io;

use serde_json::{Map, Number, Value};

use crate::core::bounds::{SCHEMA_CHARS, SCHEMA_DEPTH, SCHEMA_NODES};
use crate::policy::problem::{Problem, index};

pub use value::validate_value;

/// Value validation reports at most this many errors.
pub const MAX_VALUE_ERRORS: usize = crate::core::bounds::SUBMISSION_ERRORS;

/// The supported keywords, in the contract's order.
pub const SUPPORTED_KEYWORDS: [&str; 20] = [
    "type",
    "properties",
    "required",
    "items",
    "additionalProperties",
    "const",
    "enum",
    "title",
    "description",
    "minimum",
    "maximum",
    "exclusiveMinimum",
    "exclusiveMaximum",
    "multipleOf",
    "minLength",
    "maxLength",
    "minItems",
    "maxItems",
    "minProperties",
    "maxProperties",
];

/// The seven JSON Schema type names `type` may hold (exactly one of them).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum JsonType {
    Object,
    Array,
    String,
    Number,
    Integer,
    Boolean,
    Null,
}

impl JsonType {
    pub const ALL: [JsonType; 7] = [
        JsonType::Object,
        JsonType::Array,
        JsonType::String,
        JsonType::Number,
        JsonType::Integer,
        JsonType::Boolean,
        JsonType::Null,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            JsonType::Object => "object",
            JsonType::Array => "array",
            JsonType::String => "string",
            JsonType::Number => "number",
            JsonType::Integer => "integer",
            JsonType::Boolean => "boolean",
            JsonType::Null => "null",
        }
    }

    pub fn from_name(name: &str) -> Option<JsonType> {
        JsonType::ALL.into_iter().find(|t| t.as_str() == name)
    }

    fn matches(self, value: &Value) -> bool {
        match (self, value) {
            (JsonType::Object, Value::Object(_))
            | (JsonType::Array, Value::Array(_))
            | (JsonType::String, Value::String(_))
            | (JsonType::Number, Value::Number(_))
            | (JsonType::Boolean, Value::Bool(_))
            | (JsonType::Null, Value::Null) => true,
            (JsonType::Integer, Value::Number(n)) => number::is_integer(n),
            _ => false,
        }
    }
}

impl fmt::Display for JsonType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A result schema that passed [`validate_schema`]: the original JSON (what the worker is
/// given) and the compiled rules [`validate_value`] applies.
#[derive(Clone, Debug, PartialEq)]
pub struct CheckedSchema {
    source: Value,
    root: Node,
    nodes: usize,
    depth: usize,
}

impl CheckedSchema {
    /// The schema exactly as supplied.
    pub fn as_value(&self) -> &Value {
        &self.source
    }

    pub fn into_value(self) -> Value {
        self.source
    }

    /// Schema nodes, counted as [`validate_schema`] defines them.
    pub fn nodes(&self) -> usize {
        self.nodes
    }

    /// Nesting depth, as [`validate_schema`] defines it (a lone root schema has depth 1).
    pub fn depth(&self) -> usize {
        self.depth
    }
}

#[derive(Clone, Debug, PartialEq)]
enum Node {
    Bool(bool),
    Rules(Box<Rules>),
}

#[derive(Clone, Debug, Default, PartialEq)]
struct Rules {
    kind: Option<JsonType>,
    properties: BTreeMap<String, Node>,
    required: Vec<String>,
    items: Option<Node>,
    additional: Option<Node>,
    constant: Option<Value>,
    choices: Option<Vec<Value>>,
    minimum: Option<Number>,
    maximum: Option<Number>,
    exclusive_minimum: Option<Number>,
    exclusive_maximum: Option<Number>,
    multiple_of: Option<Number>,
    min_length: Option<u64>,
    max_length: Option<u64>,
    min_items: Option<u64>,
    max_items: Option<u64>,
    min_properties: Option<u64>,
    max_properties: Option<u64>,
}

// ---- the subset guard -------------------------------------------------------------------

/// Check `schema` (found at JSON path `path`, e.g. `$.tasks[0].resultSchema`) against the
/// supported finite subset and return every problem, each at the JSON path of the offending
/// keyword (`$.tasks[0].resultSchema.properties.n.type`).
///
/// Limits, all inclusive:
///
/// * **Characters** ([`SCHEMA_CHARS`]): Unicode scalar values of the compact serialization
///   (`serde_json::to_string`), independent of how the caller formatted its JSON.
/// * **Nodes** ([`SCHEMA_NODES`]): every schema, object or boolean, at a schema position:
///   the root, each value of `properties`, `items`, and `additionalProperties`
///   (`additionalProperties: false` is a node). `const`/`enum` values, `required` names
///   and other keyword values are data, not nodes.
/// * **Depth** ([`SCHEMA_DEPTH`]): the root schema is at depth 1, and a schema under
///   `properties.<name>`, `items` or `additionalProperties` is one deeper than the schema
///   holding it; every node must be at depth ≤ 16. Data inside `const`/`enum` does not
///   count. A node past the limit is reported once and not descended into, so its own
///   subschemas are neither checked nor counted.
///
/// Rejected, each with its own rule: non-schema values (a schema is an object or a
/// boolean), unknown keywords, malformed keyword values, `$schema` in any form, references
/// of any kind (`$ref`, `$dynamicRef`, `$id`, `$anchor`, `$defs`, …), regular expressions
/// (`pattern`, `patternProperties`), formats and content encodings, applicators and
/// compositions (`allOf`, `anyOf`, `oneOf`, `not`, `if`/`then`/`else`,
/// `dependentSchemas`, `prefixItems`, …) and dynamic or executable extensions (`$data`,
/// `$async`, `instanceof`, …).
///
/// # Errors
///
/// Every problem found, in a deterministic order: size limits first, then the schema's
/// keywords depth-first in key order.
pub fn validate_schema(schema: &Value, path: &str) -> Result<CheckedSchema, Vec<Problem>> {
    let mut guard = Guard::default();
    let root = guard.schema(schema, path, 1);
    let mut problems = Vec::new();
    let chars = serialized_chars(schema);
    if chars > SCHEMA_CHARS {
        problems.push(
            Problem::new(
                path,
                format!("a result schema is at most {SCHEMA_CHARS} characters of compact JSON"),
            )
            .value(format!("{chars} characters")),
        );
    }
    if guard.nodes > SCHEMA_NODES {
        problems.push(
            Problem::new(
                path,
                format!(
                    "a result schema has at most {SCHEMA_NODES} schema nodes (the root, \
                     `properties` values, `items` and `additionalProperties`)"
                ),
            )
            .value(format!("{} nodes", guard.nodes)),
        );
    }
    problems.append(&mut guard.problems);
    match root {
        Some(root) if problems.is_empty() => Ok(CheckedSchema {
            source: schema.clone(),
            root,
            nodes: guard.nodes,
            depth: guard.depth,
        }),
        _ => Err(problems),
    }
}

/// What a keyword is, for the rule that names it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Class {
    Supported,
    Dialect,
    Reference,
    Regex,
    Format,
    Applicator,
    Dynamic,
    Unknown,
}

fn classify(keyword: &str) -> Class {
    if SUPPORTED_KEYWORDS.contains(&keyword) {
        return Class::Supported;
    }
    match keyword {
        "$schema" => Class::Dialect,
        "$ref" | "$dynamicRef" | "$recursiveRef" | "$id" | "$anchor" | "$dynamicAnchor"
        | "$recursiveAnchor" | "$defs" | "definitions" | "$vocabulary" => Class::Reference,
        "pattern" | "patternProperties" | "regexp" => Class::Regex,
        "format" | "contentEncoding" | "contentMediaType" | "contentSchema" => Class::Format,
        "allOf"
        | "anyOf"
        | "oneOf"
        | "not"
        | "if"
        | "then"
        | "else"
        | "dependentSchemas"
        | "dependentRequired"
        | "dependencies"
        | "prefixItems"
        | "additionalItems"
        | "contains"
        | "minContains"
        | "maxContains"
        | "propertyNames"
        | "unevaluatedProperties"
        | "unevaluatedItems" => Class::Applicator,
        "$data" | "$async" | "instanceof" | "typeof" | "transform" | "dynamicDefaults" => {
            Class::Dynamic
        }
        _ => Class::Unknown,
    }
}

fn class_rule(class: Class) -> String {
    match class {
        Class::Dialect => {
            "`$schema` is not supported: omit it (the supported 2020-12 subset is implied)".into()
        }
        Class::Reference => "references of any kind are not supported".into(),
        Class::Regex => "regular expressions and patterns are not supported".into(),
        Class::Format => "formats and content encodings are not supported".into(),
        Class::Applicator => {
            "compositions, conditionals and other applicator keywords are not supported".into()
        }
        Class::Dynamic => "dynamic or executable schema extensions are not supported".into(),
        Class::Supported | Class::Unknown => format!(
            "unknown keyword; the supported keywords are {}",
            SUPPORTED_KEYWORDS.join(", ")
        ),
    }
}

#[derive(Default)]
struct Guard {
    problems: Vec<Problem>,
    nodes: usize,
    depth: usize,
}

impl Guard {
    fn problem(&mut self, path: &str, value: &Value, rule: impl Into<String>) {
        self.problems.push(Problem::new(path, rule).json(value));
    }

    /// One schema node at `path` and `depth`; `None` when it is unusable.
    fn schema(&mut self, schema: &Value, path: &str, depth: usize) -> Option<Node> {
        self.nodes += 1;
        self.depth = self.depth.max(depth);
        if depth > SCHEMA_DEPTH {
            self.problem(
                path,
                schema,
                format!(
                    "result schemas nest at most {SCHEMA_DEPTH} levels deep (the root is level 1)"
                ),
            );
            return None;
        }
        match schema {
            Value::Bool(b) => Some(Node::Bool(*b)),
            Value::Object(map) => Some(Node::Rules(Box::new(self.rules(map, path, depth)))),
            other => {
                self.problem(path, other, "a schema must be an object or a boolean");
                None
            }
        }
    }

    fn rules(&mut self, map: &Map<String, Value>, path: &str, depth: usize) -> Rules {
        let mut rules = Rules::default();
        for (keyword, value) in map {
            let at = member(path, keyword);
            match classify(keyword) {
                Class::Supported => self.keyword(&mut rules, keyword, value, &at, depth),
                class => self.problem(&at, value, class_rule(class)),
            }
        }
        rules
    }

    fn keyword(&mut self, rules: &mut Rules, keyword: &str, value: &Value, at: &str, depth: usize) {
        match keyword {
            "type" => rules.kind = self.kind(value, at),
            "properties" => match value {
                Value::Object(props) => {
                    for (name, sub) in props {
                        if let Some(node) = self.schema(sub, &member(at, name), depth + 1) {
                            rules.properties.insert(name.clone(), node);
                        }
                    }
                }
                other => self.problem(at, other, "`properties` must be an object of schemas"),
            },
            "required" => rules.required = self.required(value, at),
            "items" => match value {
                Value::Bool(_) | Value::Object(_) => {
                    rules.items = self.schema(value, at, depth + 1);
                }
                Value::Array(_) => self.problem(
                    at,
                    value,
                    "`items` must be one schema (tuple forms and `prefixItems` are not supported)",
                ),
                other => self.problem(
                    at,
                    other,
                    "`items` must be a schema (an object or a boolean)",
                ),
            },
            "additionalProperties" => match value {
                Value::Bool(_) | Value::Object(_) => {
                    rules.additional = self.schema(value, at, depth + 1);
                }
                other => self.problem(
                    at,
                    other,
                    "`additionalProperties` must be a boolean or a schema",
                ),
            },
            "const" => rules.constant = Some(value.clone()),
            "enum" => match value {
                Value::Array(choices) if !choices.is_empty() => {
                    rules.choices = Some(choices.clone());
                }
                other => self.problem(at, other, "`enum` must be a nonempty array"),
            },
            "title" | "description" => {
                if !value.is_string() {
                    self.problem(at, value, format!("`{keyword}` must be a string"));
                }
            }
            "minimum" => rules.minimum = self.finite(keyword, value, at),
            "maximum" => rules.maximum = self.finite(keyword, value, at),
            "exclusiveMinimum" => rules.exclusive_minimum = self.finite(keyword, value, at),
            "exclusiveMaximum" => rules.exclusive_maximum = self.finite(keyword, value, at),
            "multipleOf" => {
                rules.multiple_of = self.finite(keyword, value, at).filter(|n| {
                    let positive = n.as_f64().is_some_and(|f| f > 0.0);
                    if !positive {
                        self.problem(at, value, "`multipleOf` must be a number greater than 0");
                    }
                    positive
                });
            }
            "minLength" => rules.min_length = self.count(keyword, value, at),
            "maxLength" => rules.max_length = self.count(keyword, value, at),
            "minItems" => rules.min_items = self.count(keyword, value, at),
            "maxItems" => rules.max_items = self.count(keyword, value, at),
            "minProperties" => rules.min_properties = self.count(keyword, value, at),
            "maxProperties" => rules.max_properties = self.count(keyword, value, at),
            _ => self.problem(at, value, class_rule(Class::Unknown)),
        }
    }

    fn kind(&mut self, value: &Value, at: &str) -> Option<JsonType> {
        let names = JsonType::ALL.map(JsonType::as_str).join("|");
        match value {
            Value::String(name) => {
                let kind = JsonType::from_name(name);
                if kind.is_none() {
                    self.problem(at, value, format!("`type` must be one of {names}"));
                }
                kind
            }
            Value::Array(_) => {
                self.problem(
                    at,
                    value,
                    format!(
                        "`type` must be one type name ({names}); type arrays are not supported"
                    ),
                );
                None
            }
            other => {
                self.problem(
                    at,
                    other,
                    format!("`type` must be one of {names}, as a string"),
                );
                None
            }
        }
    }

    fn required(&mut self, value: &Value, at: &str) -> Vec<String> {
        let Value::Array(names) = value else {
            self.problem(at, value, "`required` must be an array of distinct strings");
            return Vec::new();
        };
        let mut seen: Vec<String> = Vec::with_capacity(names.len());
        for (i, name) in names.iter().enumerate() {
            match name {
                Value::String(s) if seen.contains(s) => self.problem(
                    &index(at, i),
                    name,
                    "`required` names must be distinct; this one is repeated",
                ),
                Value::String(s) => seen.push(s.clone()),
                other => self.problem(&index(at, i), other, "`required` names must be strings"),
            }
        }
        seen
    }

    fn finite(&mut self, keyword: &str, value: &Value, at: &str) -> Option<Number> {
        match value {
            Value::Number(n) if n.as_f64().is_some_and(f64::is_finite) => Some(n.clone()),
            other => {
                self.problem(at, other, format!("`{keyword}` must be a finite number"));
                None
            }
        }
    }

    fn count(&mut self, keyword: &str, value: &Value, at: &str) -> Option<u64> {
        let count = match value {
            Value::Number(n) => nonnegative_integer(n),
            _ => None,
        };
        if count.is_none() {
            self.problem(
                at,
                value,
                format!("`{keyword}` must be a nonnegative integer"),
            );
        }
        count
    }
}

/// A nonnegative integral number as a count (`2.0` counts as 2; counts past `u64::MAX`
/// saturate, which no JSON value can reach anyway).
fn nonnegative_integer(n: &Number) -> Option<u64> {
    if let Some(u) = n.as_u64() {
        return Some(u);
    }
    let f = n.as_f64()?;
    if !(f.is_finite() && f >= 0.0 && f.fract() == 0.0) {
        return None;
    }
    #[allow(
        clippy::cast_possible_truncation,
        clippy::cast_sign_loss,
        reason = "f is integral and nonnegative; `as` saturates past u64::MAX"
    )]
    Some(f as u64)
}

/// JSON path of `name` under `base`: `.name` for identifier-like names, `["…"]` otherwise.
fn member(base: &str, name: &str) -> String {
    let plain = name.chars().next().is_some_and(|c| !c.is_ascii_digit())
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '$');
    if plain {
        format!("{base}.{name}")
    } else {
        format!("{base}[{}]", Value::String(name.to_owned()))
    }
}

/// Unicode scalar values in the compact serialization of `value`, without building it.
fn serialized_chars(value: &Value) -> usize {
    struct Counter(usize);
    impl io::Write for Counter {
        fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
            // Every UTF-8 character has exactly one byte that is not a continuation byte.
            self.0 += buf.iter().filter(|&&b| b & 0xC0 != 0x80).count();
            Ok(buf.len())
        }
        fn flush(&mut self) -> io::Result<()> {
            Ok(())
        }
    }
    let mut counter = Counter(0);
    // Serializing a `Value` into a writer that never fails cannot fail; if it somehow did,
    // the partial count still bounds the work and the node/depth checks still apply.
    let _ = serde_json::to_writer(&mut counter, value);
    counter.0
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn member_paths_quote_names_that_are_not_identifiers() {
        assert_eq!(member("$", "type"), "$.type");
        assert_eq!(member("$", "$ref"), "$.$ref");
        assert_eq!(member("$", "a b"), "$[\"a b\"]");
        assert_eq!(member("$", "1st"), "$[\"1st\"]");
        assert_eq!(member("$", ""), "$[\"\"]");
    }

    #[test]
    fn serialized_chars_count_scalar_values() {
        assert_eq!(
            serialized_chars(&json!({"a": "é😀"})),
            r#"{"a":"é😀"}"#.chars().count()
        );
    }
}

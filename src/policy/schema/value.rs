//! Strict, non-coercing validation of a submitted value against a [`CheckedSchema`].

use std::cmp::Ordering;
use std::fmt;

use serde_json::{Map, Number, Value};

use super::number::{cmp_numbers, is_multiple, json_equal};
use super::{CheckedSchema, MAX_VALUE_ERRORS, Node, Rules};
use crate::core::clip_chars;

/// Found strings and expected constants are clipped to this many characters in errors.
const SHOWN_CHARS: usize = 60;

/// Strict, non-coercing validation of `value` against a checked schema: at most
/// [`MAX_VALUE_ERRORS`] errors, empty when the value is valid.
///
/// Each error is `<JSON Pointer>: <message>`, e.g. `/n: expected integer, found string
/// "42"`; the root is written `/` (its pointer proper is the empty string, unreadable at
/// the start of a line). Order is deterministic: depth-first; at each location `type`
/// first (a value of the wrong type gets no further errors there), then `const`, `enum`,
/// numeric bounds, `multipleOf`, lengths and counts, then missing `required` properties in
/// their listed order, then members in the value's key order (array items by index).
pub fn validate_value(schema: &CheckedSchema, value: &Value) -> Vec<String> {
    let mut check = ValueCheck {
        errors: Vec::new(),
        pointer: String::new(),
    };
    check.node(&schema.root, value);
    check.errors
}

struct ValueCheck {
    errors: Vec<String>,
    /// The JSON Pointer of the value being checked.
    pointer: String,
}

impl ValueCheck {
    fn full(&self) -> bool {
        self.errors.len() >= MAX_VALUE_ERRORS
    }

    fn error(&mut self, message: impl fmt::Display) {
        if self.full() {
            return;
        }
        let at = if self.pointer.is_empty() {
            "/"
        } else {
            &self.pointer
        };
        self.errors.push(format!("{at}: {message}"));
    }

    /// Check `value` one level down, at `pointer` + `/token`.
    fn child(&mut self, token: &str, node: &Node, value: &Value) {
        let len = self.pointer.len();
        push_token(&mut self.pointer, token);
        self.node(node, value);
        self.pointer.truncate(len);
    }

    /// An error one level down (a missing or forbidden member).
    fn child_error(&mut self, token: &str, message: &str) {
        let len = self.pointer.len();
        push_token(&mut self.pointer, token);
        self.error(message);
        self.pointer.truncate(len);
    }

    fn node(&mut self, node: &Node, value: &Value) {
        if self.full() {
            return;
        }
        match node {
            Node::Bool(true) => {}
            Node::Bool(false) => self.error(format_args!(
                "no value is allowed here (schema `false`), found {}",
                describe(value)
            )),
            Node::Rules(rules) => self.rules(rules, value),
        }
    }

    fn rules(&mut self, rules: &Rules, value: &Value) {
        if let Some(kind) = rules.kind
            && !kind.matches(value)
        {
            self.error(format_args!("expected {kind}, found {}", describe(value)));
            return;
        }
        if let Some(constant) = &rules.constant
            && !json_equal(constant, value)
        {
            self.error(format_args!(
                "must equal {}, found {}",
                show(constant),
                describe(value)
            ));
        }
        if let Some(choices) = &rules.choices
            && !choices.iter().any(|c| json_equal(c, value))
        {
            self.error(format_args!(
                "must be one of {}, found {}",
                show(&Value::Array(choices.clone())),
                describe(value)
            ));
        }
        match value {
            Value::Number(n) => self.number(rules, n),
            Value::String(s) => self.string(rules, s),
            Value::Array(items) => self.array(rules, items),
            Value::Object(members) => self.object(rules, members),
            Value::Null | Value::Bool(_) => {}
        }
    }

    fn number(&mut self, rules: &Rules, n: &Number) {
        let bounds = [
            (&rules.minimum, ">=", false),
            (&rules.exclusive_minimum, ">", false),
            (&rules.maximum, "<=", true),
            (&rules.exclusive_maximum, "<", true),
        ];
        for (bound, op, upper) in bounds {
            let Some(bound) = bound else { continue };
            let ok = match (cmp_numbers(n, bound), op.len() == 2) {
                (Ordering::Equal, inclusive) => inclusive,
                (Ordering::Less, _) => upper,
                (Ordering::Greater, _) => !upper,
            };
            if !ok {
                self.error(format_args!("must be {op} {bound}, found {n}"));
            }
        }
        if let Some(m) = &rules.multiple_of
            && !is_multiple(n, m)
        {
            self.error(format_args!("must be a multiple of {m}, found {n}"));
        }
    }

    fn string(&mut self, rules: &Rules, s: &str) {
        if rules.min_length.is_none() && rules.max_length.is_none() {
            return;
        }
        let len = s.chars().count() as u64;
        if let Some(min) = rules.min_length
            && len < min
        {
            self.error(format_args!(
                "must be at least {min} characters long, found {len}"
            ));
        }
        if let Some(max) = rules.max_length
            && len > max
        {
            self.error(format_args!(
                "must be at most {max} characters long, found {len}"
            ));
        }
    }

    fn array(&mut self, rules: &Rules, items: &[Value]) {
        let len = items.len() as u64;
        if let Some(min) = rules.min_items
            && len < min
        {
            self.error(format_args!("must have at least {min} items, found {len}"));
        }
        if let Some(max) = rules.max_items
            && len > max
        {
            self.error(format_args!("must have at most {max} items, found {len}"));
        }
        if let Some(item) = &rules.items {
            for (i, value) in items.iter().enumerate() {
                if self.full() {
                    return;
                }
                self.child(&i.to_string(), item, value);
            }
        }
    }

    fn object(&mut self, rules: &Rules, members: &Map<String, Value>) {
        let len = members.len() as u64;
        if let Some(min) = rules.min_properties
            && len < min
        {
            self.error(format_args!(
                "must have at least {min} properties, found {len}"
            ));
        }
        if let Some(max) = rules.max_properties
            && len > max
        {
            self.error(format_args!(
                "must have at most {max} properties, found {len}"
            ));
        }
        for name in &rules.required {
            if !members.contains_key(name) {
                self.child_error(name, "required property is missing");
            }
        }
        for (name, value) in members {
            if self.full() {
                return;
            }
            let declared = rules.properties.get(name);
            let Some(node) = declared.or(rules.additional.as_ref()) else {
                continue;
            };
            if declared.is_none() && *node == Node::Bool(false) {
                self.child_error(name, "additional property is not allowed");
                continue;
            }
            self.child(name, node, value);
        }
    }
}

/// Append one RFC 6901 reference token (`~` → `~0`, `/` → `~1`).
fn push_token(pointer: &mut String, token: &str) {
    pointer.push('/');
    for c in token.chars() {
        match c {
            '~' => pointer.push_str("~0"),
            '/' => pointer.push_str("~1"),
            c => pointer.push(c),
        }
    }
}

/// A found value for an error: its JSON type and, for scalars, the value (strings clipped
/// and JSON-escaped, so control characters never reach a terminal raw).
fn describe(value: &Value) -> String {
    match value {
        Value::Null => "null".to_owned(),
        Value::Bool(b) => format!("boolean {b}"),
        Value::Number(n) => format!("number {n}"),
        Value::String(s) => format!("string {}", Value::String(clip_chars(s, SHOWN_CHARS))),
        Value::Array(items) => match items.len() {
            1 => "array of 1 item".to_owned(),
            n => format!("array of {n} items"),
        },
        Value::Object(members) => match members.len() {
            1 => "object with 1 property".to_owned(),
            n => format!("object with {n} properties"),
        },
    }
}

/// An expected value from the schema, as compact JSON clipped for an error line.
fn show(value: &Value) -> String {
    clip_chars(&value.to_string(), SHOWN_CHARS)
}

//! TypeScript declarations of the protocol, generated from its JSON Schema
//! ([`super::methods::protocol_schema`]) into `extension/protocol.gen.ts` by the same bless
//! step as `docs/protocol.schema.json` (`SLATE_BLESS=1 cargo test --test protocol`, which also
//! checks the file is current). The extension's method table is taken from it, so a shape the
//! extension reads differently from what Slate writes fails `tsc`.

use std::fmt::Write as _;

use serde_json::{Map, Value};

/// The generated file's text.
pub fn declarations(schema: &Value) -> String {
    let mut out = String::from(
        "// Generated from docs/protocol.schema.json (src/control/typescript.rs) by\n\
         // `SLATE_BLESS=1 cargo test --test protocol`; a test keeps it current. Do not edit.\n\
         /* eslint-disable */\n\n",
    );
    if let Some(Value::Object(defs)) = schema.get("$defs") {
        for (name, def) in defs {
            doc(&mut out, def, "");
            let _ = writeln!(out, "export type {} = {};\n", ident(name), ty(def, ""));
        }
    }
    out.push_str("/** Every method: its params and result. */\nexport interface GenMethods {\n");
    if let Some(Value::Object(methods)) = schema.get("x-methods") {
        for (name, m) in methods {
            let params = m
                .get("params")
                .map_or_else(|| "unknown".to_owned(), |p| ty(p, "\t\t"));
            let result = m
                .get("result")
                .map_or_else(|| "unknown".to_owned(), |r| ty(r, "\t\t"));
            let _ = writeln!(out, "\t{name}: {{ params: {params}; result: {result} }};");
        }
    }
    out.push_str("}\n\n");
    if let Some(n) = schema.get("x-notification") {
        let _ = writeln!(
            out,
            "/** A server → client line without an id. */\nexport type GenNotification = {};\n",
            ty(n, "")
        );
    }
    if let Some(e) = schema.get("x-error") {
        let _ = writeln!(
            out,
            "/** An error answer. */\nexport type GenError = {};",
            ty(e, "")
        );
    }
    out
}

/// A TypeScript identifier for a `$defs` name.
fn ident(name: &str) -> String {
    name.chars()
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '_' })
        .collect()
}

fn doc(out: &mut String, schema: &Value, indent: &str) {
    if let Some(text) = schema.get("description").and_then(Value::as_str) {
        let text = text.replace("*/", "* /");
        let _ = write!(out, "{indent}/**");
        for (i, line) in text.lines().enumerate() {
            if i == 0 {
                let _ = write!(out, " {line}");
            } else {
                let _ = write!(out, "\n{indent} * {line}");
            }
        }
        let _ = writeln!(out, " */");
    }
}

fn literal(value: &Value) -> String {
    serde_json::to_string(value).unwrap_or_else(|_| "unknown".to_owned())
}

fn union(parts: Vec<String>) -> String {
    let mut seen: Vec<String> = Vec::new();
    for p in parts {
        if !seen.contains(&p) {
            seen.push(p);
        }
    }
    match seen.len() {
        0 => "never".to_owned(),
        1 => seen.remove(0),
        _ => seen
            .iter()
            .map(|p| format!("({p})"))
            .collect::<Vec<_>>()
            .join(" | "),
    }
}

/// The type of one schema; `indent` is the current line's indentation.
fn ty(schema: &Value, indent: &str) -> String {
    let obj = match schema {
        Value::Bool(false) => return "never".to_owned(),
        Value::Object(obj) => obj,
        _ => return "unknown".to_owned(),
    };
    if let Some(r) = obj.get("$ref").and_then(Value::as_str) {
        return ident(r.rsplit('/').next().unwrap_or(r));
    }
    if let Some(c) = obj.get("const") {
        return literal(c);
    }
    if let Some(Value::Array(options)) = obj.get("enum") {
        return union(options.iter().map(literal).collect());
    }
    let mut parts: Vec<String> = Vec::new();
    let base = base_type(obj, indent);
    if let Some(base) = base {
        parts.push(base);
    }
    for key in ["oneOf", "anyOf"] {
        if let Some(Value::Array(options)) = obj.get(key) {
            let u = union(options.iter().map(|o| ty(o, indent)).collect());
            parts.push(format!("({u})"));
        }
    }
    if let Some(Value::Array(all)) = obj.get("allOf") {
        for s in all {
            parts.push(format!("({})", ty(s, indent)));
        }
    }
    match parts.len() {
        0 => "unknown".to_owned(),
        1 => parts.remove(0),
        _ => parts.join(" & "),
    }
}

/// `type`, `properties`, `items`: the schema's own shape, if it says one.
fn base_type(obj: &Map<String, Value>, indent: &str) -> Option<String> {
    let types: Vec<&str> = match obj.get("type") {
        Some(Value::String(t)) => vec![t.as_str()],
        Some(Value::Array(ts)) => ts.iter().filter_map(Value::as_str).collect(),
        _ if obj.contains_key("properties") => vec!["object"],
        _ => return None,
    };
    Some(union(
        types
            .into_iter()
            .map(|t| match t {
                "string" => "string".to_owned(),
                "integer" | "number" => "number".to_owned(),
                "boolean" => "boolean".to_owned(),
                "null" => "null".to_owned(),
                "array" => array(obj, indent),
                "object" => object(obj, indent),
                _ => "unknown".to_owned(),
            })
            .collect(),
    ))
}

fn array(obj: &Map<String, Value>, indent: &str) -> String {
    if let Some(Value::Array(prefix)) = obj.get("prefixItems") {
        let items: Vec<String> = prefix.iter().map(|p| ty(p, indent)).collect();
        return format!("[{}]", items.join(", "));
    }
    match obj.get("items") {
        Some(items) => format!("Array<{}>", ty(items, indent)),
        None => "unknown[]".to_owned(),
    }
}

fn object(obj: &Map<String, Value>, indent: &str) -> String {
    let extra = match obj.get("additionalProperties") {
        Some(Value::Bool(false)) => None,
        Some(Value::Object(s)) if !s.is_empty() => Some(ty(&Value::Object(s.clone()), indent)),
        _ => Some("unknown".to_owned()),
    };
    let Some(Value::Object(props)) = obj.get("properties") else {
        return format!(
            "Record<string, {}>",
            extra.unwrap_or_else(|| "never".to_owned())
        );
    };
    if props.is_empty() {
        return format!(
            "Record<string, {}>",
            extra.unwrap_or_else(|| "never".to_owned())
        );
    }
    let required: Vec<&str> = obj
        .get("required")
        .and_then(Value::as_array)
        .map(|r| r.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    let inner = format!("{indent}\t");
    let mut out = String::from("{\n");
    for (name, prop) in props {
        doc(&mut out, prop, &inner);
        let optional = if required.contains(&name.as_str()) {
            ""
        } else {
            "?"
        };
        let key = if name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') {
            name.clone()
        } else {
            literal(&Value::String(name.clone()))
        };
        let _ = writeln!(out, "{inner}{key}{optional}: {};", ty(prop, &inner));
    }
    let _ = write!(out, "{indent}}}");
    out
}

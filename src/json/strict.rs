//! JSON as Slate reads the documents people write: a request file, `--schema`, `--limits`,
//! `delegation.json`. Standard JSON, and two things `serde_json` lets through are refused:
//!
//! * **a repeated member name** in any object (`{"concurrency": 2, "concurrency": 3}`):
//!   `serde_json` keeps the last one silently, so the file would not say what it seems to say;
//!   the error names the member by its JSON path (`$.scheduling.concurrency`);
//! * **a leading UTF-8 byte order mark**, with an error that says so (the parser's own message
//!   would be "expected value at line 1 column 1").
//!
//! The document is read once, into `serde_json::Value`, with the path tracked only down the
//! branch being read (a `DeserializeSeed` per value), so nothing is re-parsed.

use std::collections::HashSet;
use std::fmt;

use serde::de::{DeserializeSeed, Deserializer, Error as _, MapAccess, SeqAccess, Visitor};
use serde_json::{Map, Value};

/// `text` as a JSON value, or why not (a repeated key names its path).
///
/// # Errors
/// Invalid JSON (the parser's message with its line and column), a repeated member name, or a
/// leading byte order mark.
pub fn from_str(text: &str) -> Result<Value, String> {
    if text.starts_with('\u{feff}') {
        return Err(
            "starts with a UTF-8 byte order mark (U+FEFF); save the file as UTF-8 without a BOM"
                .to_owned(),
        );
    }
    let mut de = serde_json::Deserializer::from_str(text);
    let value = At("$".to_owned())
        .deserialize(&mut de)
        .map_err(|e| e.to_string())?;
    de.end().map_err(|e| e.to_string())?;
    Ok(value)
}

/// The value at this JSON path.
struct At(String);

impl<'de> DeserializeSeed<'de> for At {
    type Value = Value;

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<Value, D::Error> {
        deserializer.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for At {
    type Value = Value;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a JSON value")
    }

    fn visit_bool<E>(self, v: bool) -> Result<Value, E> {
        Ok(Value::Bool(v))
    }

    fn visit_i64<E>(self, v: i64) -> Result<Value, E> {
        Ok(Value::from(v))
    }

    fn visit_u64<E>(self, v: u64) -> Result<Value, E> {
        Ok(Value::from(v))
    }

    fn visit_f64<E>(self, v: f64) -> Result<Value, E> {
        Ok(serde_json::Number::from_f64(v).map_or(Value::Null, Value::Number))
    }

    fn visit_str<E>(self, v: &str) -> Result<Value, E> {
        Ok(Value::String(v.to_owned()))
    }

    fn visit_string<E>(self, v: String) -> Result<Value, E> {
        Ok(Value::String(v))
    }

    fn visit_unit<E>(self) -> Result<Value, E> {
        Ok(Value::Null)
    }

    fn visit_none<E>(self) -> Result<Value, E> {
        Ok(Value::Null)
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Value, A::Error> {
        let mut items = Vec::new();
        while let Some(item) = seq.next_element_seed(At(format!("{}[{}]", self.0, items.len())))? {
            items.push(item);
        }
        Ok(Value::Array(items))
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Value, A::Error> {
        let mut members = Map::new();
        let mut seen = HashSet::new();
        while let Some(key) = map.next_key::<String>()? {
            let path = member_path(&self.0, &key);
            if !seen.insert(key.clone()) {
                return Err(A::Error::custom(format!(
                    "{path}: the member {key:?} appears more than once in one object; keep one"
                )));
            }
            let value = map.next_value_seed(At(path))?;
            members.insert(key, value);
        }
        Ok(Value::Object(members))
    }
}

/// `$.a.b`, or `$["a b"]` for a name that is not a plain identifier.
fn member_path(parent: &str, key: &str) -> String {
    let plain = !key.is_empty()
        && key
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '$')
        && !key.starts_with(|c: char| c.is_ascii_digit());
    if plain {
        format!("{parent}.{key}")
    } else {
        format!("{parent}[{}]", serde_json::Value::String(key.to_owned()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_repeated_member_is_refused_naming_its_path() {
        let e = from_str(r#"{"scheduling":{"concurrency":2,"concurrency":3}}"#).unwrap_err();
        assert!(
            e.starts_with(
                "$.scheduling.concurrency: the member \"concurrency\" appears more than once"
            ),
            "{e}"
        );
        let e = from_str(r#"{"tasks":[{"a":1},{"b":1,"b":2}]}"#).unwrap_err();
        assert!(e.starts_with("$.tasks[1].b:"), "{e}");
        let e = from_str(r#"{"a b":{"x":1,"x":1}}"#).unwrap_err();
        assert!(e.starts_with(r#"$["a b"].x:"#), "{e}");
    }

    #[test]
    fn a_bom_is_named() {
        let e = from_str("\u{feff}{}").unwrap_err();
        assert!(e.contains("byte order mark"), "{e}");
    }

    #[test]
    fn everything_else_reads_as_serde_json_does() {
        for text in [
            r#"{"a":[1,2.5,-3,"x",null,true,{"b":{}}],"c":"\u00e9"}"#,
            "[]",
            "\"s\"",
            "18446744073709551615",
            " {\"k\": 1} ",
        ] {
            let ours = from_str(text).unwrap();
            let theirs: Value = serde_json::from_str(text).unwrap();
            assert_eq!(ours, theirs, "{text}");
        }
        assert!(from_str("{} x").is_err(), "trailing characters");
        assert!(from_str("{\"a\":}").unwrap_err().contains("line 1"));
    }
}

//! Where things are in a JSON text: the byte spans of an object's members and an array's
//! elements, so a settings file can be edited in place (one entry added or removed) and keep
//! every other byte, its formatting and key order included.
//!
//! [`Document::parse`] first lets `serde_json` decide whether the text is JSON at all (its
//! error names line and column), then walks it once: every object's keys must be unique (pi
//! reads settings with `JSON.parse`, which silently keeps the last of two equal keys, so a
//! duplicate would make "what pi sees" and "what Slate edited" two different things). The walk
//! trusts the syntax check and only records positions.

use std::collections::HashSet;
use std::ops::Range;

/// Why a text is not a settings document Slate can edit.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum SpanError {
    #[error("invalid JSON: {0}")]
    Syntax(String),
    #[error("the key {key:?} appears more than once in {path}")]
    DuplicateKey { path: String, key: String },
}

impl SpanError {
    /// The JSON path the error is about (`$` for the whole text).
    pub fn path(&self) -> String {
        match self {
            Self::Syntax(_) => "$".to_owned(),
            Self::DuplicateKey { path, key } => member_path(path, key),
        }
    }
}

/// `$.key`, or `$["odd key"]` when the key is not a plain identifier.
pub fn member_path(parent: &str, key: &str) -> String {
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

/// One member of an object: its decoded key and where key and value are.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Member {
    pub key: String,
    /// From the opening quote of the key to the end of the value.
    pub span: Range<usize>,
    pub value: Range<usize>,
}

/// The top level of a JSON text.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Document {
    /// An object: its braces and members, in order.
    Object {
        /// From `{` to just past `}`.
        span: Range<usize>,
        members: Vec<Member>,
    },
    /// Anything else; its JSON kind (`array`, `string`, …).
    Other(&'static str),
}

impl Document {
    /// Checks `text` (syntax, unique keys at every depth) and records the top-level spans.
    pub fn parse(text: &str) -> Result<Self, SpanError> {
        serde_json::from_str::<serde::de::IgnoredAny>(text)
            .map_err(|e| SpanError::Syntax(e.to_string()))?;
        let mut walk = Walk {
            bytes: text.as_bytes(),
            text,
            at: 0,
        };
        walk.skip_ws();
        let start = walk.at;
        match walk.peek() {
            b'{' => {
                let members = walk.object("$")?;
                Ok(Self::Object {
                    span: start..walk.at,
                    members,
                })
            }
            other => {
                walk.value("$")?;
                Ok(Self::Other(kind(other)))
            }
        }
    }
}

/// The elements of the array at `span` of `text` (valid JSON, as from [`Document::parse`]):
/// each element's span and, for strings, its decoded text.
pub fn array_elements(text: &str, span: Range<usize>) -> Vec<(Range<usize>, Option<String>)> {
    let mut walk = Walk {
        bytes: text.as_bytes(),
        text,
        at: span.start,
    };
    let mut out = Vec::new();
    if walk.peek() != b'[' {
        return out;
    }
    walk.at += 1;
    loop {
        walk.skip_ws();
        if walk.peek() == b']' {
            break;
        }
        let start = walk.at;
        let string = (walk.peek() == b'"').then(|| walk.string());
        if string.is_none() {
            // Valid JSON and keys already checked: only positions matter here.
            let _ = walk.value("$");
        }
        out.push((start..walk.at, string));
        walk.skip_ws();
        if walk.peek() == b',' {
            walk.at += 1;
        }
    }
    out
}

/// The JSON kind a value starting with `byte` has.
pub fn kind(byte: u8) -> &'static str {
    match byte {
        b'{' => "object",
        b'[' => "array",
        b'"' => "string",
        b't' | b'f' => "boolean",
        b'n' => "null",
        _ => "number",
    }
}

/// A cursor over text `serde_json` has accepted.
struct Walk<'a> {
    bytes: &'a [u8],
    text: &'a str,
    at: usize,
}

impl Walk<'_> {
    fn peek(&self) -> u8 {
        self.bytes.get(self.at).copied().unwrap_or(0)
    }

    fn skip_ws(&mut self) {
        while matches!(self.peek(), b' ' | b'\t' | b'\n' | b'\r') {
            self.at += 1;
        }
    }

    /// A string starting at the cursor: decoded (through `serde_json`, so escapes are exact).
    fn string(&mut self) -> String {
        let start = self.at;
        self.at += 1;
        while self.at < self.bytes.len() {
            match self.bytes[self.at] {
                b'\\' => self.at += 2,
                b'"' => {
                    self.at += 1;
                    break;
                }
                _ => self.at += 1,
            }
        }
        serde_json::from_str(&self.text[start..self.at]).unwrap_or_default()
    }

    /// Skips one value, checking the keys of every object in it.
    fn value(&mut self, path: &str) -> Result<(), SpanError> {
        match self.peek() {
            b'{' => self.object(path).map(drop),
            b'[' => {
                self.at += 1;
                let mut index = 0usize;
                loop {
                    self.skip_ws();
                    if self.peek() == b']' {
                        self.at += 1;
                        return Ok(());
                    }
                    self.value(&format!("{path}[{index}]"))?;
                    index += 1;
                    self.skip_ws();
                    if self.peek() == b',' {
                        self.at += 1;
                    }
                }
            }
            b'"' => {
                self.string();
                Ok(())
            }
            _ => {
                while !matches!(
                    self.peek(),
                    b',' | b']' | b'}' | b' ' | b'\t' | b'\n' | b'\r' | 0
                ) {
                    self.at += 1;
                }
                Ok(())
            }
        }
    }

    /// An object starting at the cursor: its members; the cursor ends past `}`.
    fn object(&mut self, path: &str) -> Result<Vec<Member>, SpanError> {
        self.at += 1;
        let mut members = Vec::new();
        let mut seen = HashSet::new();
        loop {
            self.skip_ws();
            if self.peek() == b'}' {
                self.at += 1;
                return Ok(members);
            }
            let start = self.at;
            let key = self.string();
            if !seen.insert(key.clone()) {
                return Err(SpanError::DuplicateKey {
                    path: path.to_owned(),
                    key,
                });
            }
            self.skip_ws();
            self.at += 1; // ':'
            self.skip_ws();
            let value_start = self.at;
            self.value(&member_path(path, &key))?;
            members.push(Member {
                key,
                span: start..self.at,
                value: value_start..self.at,
            });
            self.skip_ws();
            if self.peek() == b',' {
                self.at += 1;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::{Document, SpanError, array_elements, member_path};

    fn members(text: &str) -> Vec<(String, String)> {
        match Document::parse(text).unwrap_or_else(|e| panic!("{text}: {e}")) {
            Document::Object { members, .. } => members
                .into_iter()
                .map(|m| (m.key, text[m.value].to_owned()))
                .collect(),
            Document::Other(kind) => panic!("{text}: {kind}"),
        }
    }

    #[test]
    fn members_and_values_are_found_with_their_exact_text() {
        let text = r#" { "a" : 1 , "b\"q":{"x":[1,{"y":"}"}]}, "c": "\u0041]" ,"d":[] } "#;
        assert_eq!(
            members(text),
            [
                ("a".to_owned(), "1".to_owned()),
                ("b\"q".to_owned(), r#"{"x":[1,{"y":"}"}]}"#.to_owned()),
                ("c".to_owned(), r#""\u0041]""#.to_owned()),
                ("d".to_owned(), "[]".to_owned()),
            ]
        );
    }

    #[test]
    fn array_elements_are_decoded_strings_or_other_values() {
        let text = r#"[ "a\\b" , 2, {"k": "v"}, "\u00e9" ]"#;
        let elements = array_elements(text, 0..text.len());
        let shown: Vec<(&str, Option<String>)> = elements
            .iter()
            .map(|(span, s)| (&text[span.clone()], s.clone()))
            .collect();
        assert_eq!(
            shown,
            [
                (r#""a\\b""#, Some("a\\b".to_owned())),
                ("2", None),
                (r#"{"k": "v"}"#, None),
                (r#""\u00e9""#, Some("é".to_owned())),
            ]
        );
        assert!(array_elements("[]", 0..2).is_empty());
        assert!(array_elements("[ \n ]", 0..5).is_empty());
    }

    #[test]
    fn duplicate_keys_are_refused_at_any_depth_naming_the_path() {
        let top = Document::parse(r#"{"extensions": [], "extensions": ["x"]}"#).unwrap_err();
        assert_eq!(top.path(), "$.extensions");
        let nested = Document::parse(r#"{"retry": {"provider": {"a": 1, "a": 2}}}"#).unwrap_err();
        assert_eq!(
            nested,
            SpanError::DuplicateKey {
                path: "$.retry.provider".to_owned(),
                key: "a".to_owned()
            }
        );
        let in_array = Document::parse(r#"{"packages": [{"s": 1}, {"s": 1, "s": 2}]}"#);
        assert_eq!(in_array.unwrap_err().path(), "$.packages[1].s");
        // The same key in two different objects is fine.
        assert!(Document::parse(r#"{"a": {"k": 1}, "b": {"k": 1}}"#).is_ok());
    }

    #[test]
    fn not_json_and_not_an_object() {
        assert!(matches!(
            Document::parse("{\"a\": 1,}"),
            Err(SpanError::Syntax(_))
        ));
        assert!(matches!(Document::parse(""), Err(SpanError::Syntax(_))));
        assert_eq!(Document::parse("[1]").unwrap(), Document::Other("array"));
        assert_eq!(Document::parse(" null ").unwrap(), Document::Other("null"));
    }

    #[test]
    fn member_paths_quote_keys_that_are_not_identifiers() {
        assert_eq!(member_path("$", "extensions"), "$.extensions");
        assert_eq!(member_path("$", "a b"), r#"$["a b"]"#);
        assert_eq!(member_path("$.x", "1st"), r#"$.x["1st"]"#);
    }
}

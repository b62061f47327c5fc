//! JSON as `slate.json` needs it: object members keep their file order (a provider map's order
//! is the recovery order) and repeated keys stay visible (a repeated name is an error, not
//! silently the last one). Also the recursive merge of two files and JSON paths.

use std::collections::{HashMap, HashSet};
use std::fmt;
use std::ops::Deref;

use serde::de::{self, Deserialize, Deserializer, MapAccess, SeqAccess, Visitor};
use serde_json::{Number, Value};

/// A parsed JSON value whose objects keep every member in file order.
#[derive(Clone, Debug, PartialEq)]
pub enum Json {
    Null,
    Bool(bool),
    Number(Number),
    String(String),
    Array(Vec<Json>),
    Object(Object),
}

/// An object's members in file order, repeats included, with an index of each key's last
/// occurrence so lookups stay constant-time on hostile files with many keys.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Object {
    members: Vec<(String, Json)>,
    last: HashMap<String, usize>,
}

impl Object {
    /// The member `name`; the last one when repeated, as `JSON.parse` keeps it.
    pub fn get(&self, name: &str) -> Option<&Json> {
        self.last.get(name).map(|i| &self.members[*i].1)
    }
}

impl From<Vec<(String, Json)>> for Object {
    fn from(members: Vec<(String, Json)>) -> Self {
        let last = members
            .iter()
            .enumerate()
            .map(|(i, (k, _))| (k.clone(), i))
            .collect();
        Self { members, last }
    }
}

impl FromIterator<(String, Json)> for Object {
    fn from_iter<I: IntoIterator<Item = (String, Json)>>(iter: I) -> Self {
        Self::from(iter.into_iter().collect::<Vec<_>>())
    }
}

impl<'a> IntoIterator for &'a Object {
    type Item = &'a (String, Json);
    type IntoIter = std::slice::Iter<'a, (String, Json)>;

    fn into_iter(self) -> Self::IntoIter {
        self.members.iter()
    }
}

impl Deref for Object {
    type Target = [(String, Json)];

    fn deref(&self) -> &Self::Target {
        &self.members
    }
}

impl Json {
    /// The member `name` of an object; the last one when repeated, as `JSON.parse` keeps it.
    pub fn get(&self, name: &str) -> Option<&Json> {
        match self {
            Json::Object(members) => members.get(name),
            _ => None,
        }
    }

    /// The value at `path`, walking object members and array items.
    pub fn at(&self, path: &[Seg]) -> Option<&Json> {
        let mut here = self;
        for seg in path {
            here = match (seg, here) {
                (Seg::Key(k), Json::Object(_)) => here.get(k)?,
                (Seg::Index(i), Json::Array(items)) => items.get(*i)?,
                _ => return None,
            };
        }
        Some(here)
    }

    /// The compact `serde_json` form, for messages (a repeated key keeps its last value).
    pub fn to_value(&self) -> Value {
        match self {
            Json::Null => Value::Null,
            Json::Bool(b) => Value::Bool(*b),
            Json::Number(n) => Value::Number(n.clone()),
            Json::String(s) => Value::String(s.clone()),
            Json::Array(items) => Value::Array(items.iter().map(Json::to_value).collect()),
            Json::Object(members) => Value::Object(
                members
                    .iter()
                    .map(|(k, v)| (k.clone(), v.to_value()))
                    .collect(),
            ),
        }
    }

    /// A short name of the JSON type, for messages.
    pub fn kind(&self) -> &'static str {
        match self {
            Json::Null => "null",
            Json::Bool(_) => "a boolean",
            Json::Number(_) => "a number",
            Json::String(_) => "a string",
            Json::Array(_) => "an array",
            Json::Object(_) => "an object",
        }
    }
}

impl fmt::Display for Json {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.to_value())
    }
}

impl<'de> Deserialize<'de> for Json {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_any(JsonVisitor)
    }
}

struct JsonVisitor;

impl<'de> Visitor<'de> for JsonVisitor {
    type Value = Json;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("any JSON value")
    }

    fn visit_bool<E: de::Error>(self, v: bool) -> Result<Json, E> {
        Ok(Json::Bool(v))
    }

    fn visit_i64<E: de::Error>(self, v: i64) -> Result<Json, E> {
        Ok(Json::Number(v.into()))
    }

    fn visit_u64<E: de::Error>(self, v: u64) -> Result<Json, E> {
        Ok(Json::Number(v.into()))
    }

    fn visit_f64<E: de::Error>(self, v: f64) -> Result<Json, E> {
        Number::from_f64(v)
            .map(Json::Number)
            .ok_or_else(|| E::custom("a number that is not finite"))
    }

    fn visit_str<E: de::Error>(self, v: &str) -> Result<Json, E> {
        Ok(Json::String(v.to_owned()))
    }

    fn visit_string<E: de::Error>(self, v: String) -> Result<Json, E> {
        Ok(Json::String(v))
    }

    fn visit_unit<E: de::Error>(self) -> Result<Json, E> {
        Ok(Json::Null)
    }

    fn visit_none<E: de::Error>(self) -> Result<Json, E> {
        Ok(Json::Null)
    }

    fn visit_some<D: Deserializer<'de>>(self, d: D) -> Result<Json, D::Error> {
        Json::deserialize(d)
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Json, A::Error> {
        let mut items = Vec::new();
        while let Some(item) = seq.next_element()? {
            items.push(item);
        }
        Ok(Json::Array(items))
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Json, A::Error> {
        let mut members = Vec::new();
        while let Some((k, v)) = map.next_entry::<String, Json>()? {
            members.push((k, v));
        }
        Ok(Json::Object(Object::from(members)))
    }
}

/// Parse one file's bytes (a leading UTF-8 byte-order mark is ignored).
///
/// # Errors
/// The parser's message: invalid UTF-8 or JSON, or nesting deeper than `serde_json` allows.
pub fn parse(bytes: &[u8]) -> Result<Json, String> {
    let bytes = bytes.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(bytes);
    serde_json::from_slice::<Json>(bytes).map_err(|e| e.to_string())
}

/// `over` on top of `base`: objects merge member by member, recursively; arrays, scalars and
/// explicit `null` replace. A repeated key counts once, with its last value.
pub fn merge(base: &Json, over: &Json) -> Json {
    match (base, over) {
        (Json::Object(base_members), Json::Object(over_members)) => {
            let mut seen: HashSet<&str> = HashSet::new();
            let mut merged: Vec<(String, Json)> = Vec::new();
            for (k, _) in base_members.iter().chain(over_members.iter()) {
                if !seen.insert(k) {
                    continue;
                }
                let value = match (base_members.get(k), over_members.get(k)) {
                    (Some(b), Some(o)) => merge(b, o),
                    (Some(v), None) | (None, Some(v)) => v.clone(),
                    (None, None) => continue,
                };
                merged.push((k.clone(), value));
            }
            Json::Object(Object::from(merged))
        }
        _ => over.clone(),
    }
}

/// One step of a JSON path.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Seg {
    Key(String),
    Index(usize),
}

/// A JSON path from the file's root, written `$.router.models.add[0].providers["a b"]`.
#[derive(Clone, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct JsonPath(pub Vec<Seg>);

impl JsonPath {
    pub fn root() -> Self {
        Self(Vec::new())
    }

    #[must_use]
    pub fn key(&self, name: &str) -> Self {
        let mut segs = self.0.clone();
        segs.push(Seg::Key(name.to_owned()));
        Self(segs)
    }

    #[must_use]
    pub fn index(&self, i: usize) -> Self {
        let mut segs = self.0.clone();
        segs.push(Seg::Index(i));
        Self(segs)
    }
}

impl fmt::Display for JsonPath {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("$")?;
        for seg in &self.0 {
            match seg {
                Seg::Index(i) => write!(f, "[{i}]")?,
                Seg::Key(k) if is_identifier(k) => write!(f, ".{k}")?,
                Seg::Key(k) => write!(f, "[{}]", Value::String(k.clone()))?,
            }
        }
        Ok(())
    }
}

fn is_identifier(name: &str) -> bool {
    let mut chars = name.chars();
    chars
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_' || c == '$')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '$')
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, reason = "test fixtures fail loudly")]

    use super::*;

    #[test]
    fn members_keep_file_order_and_repeats() {
        let v = parse(br#"{"b": 1, "a": 2, "b": 3}"#).unwrap();
        let Json::Object(members) = &v else {
            panic!("object")
        };
        let keys: Vec<&str> = members.iter().map(|(k, _)| k.as_str()).collect();
        assert_eq!(keys, ["b", "a", "b"]);
        assert_eq!(v.get("b"), Some(&Json::Number(3.into())));
    }

    #[test]
    fn merge_is_recursive_for_objects_only() {
        let home = parse(br#"{"r": {"a": [1, 2], "b": {"x": 1, "y": 2}, "c": 1}}"#).unwrap();
        let project = parse(br#"{"r": {"a": [3], "b": {"y": null}, "d": 4}}"#).unwrap();
        let merged = merge(&home, &project).to_value();
        assert_eq!(
            merged,
            serde_json::json!({"r": {"a": [3], "b": {"x": 1, "y": null}, "c": 1, "d": 4}})
        );
    }

    #[test]
    fn paths_quote_keys_that_are_not_identifiers() {
        let p = JsonPath::root()
            .key("router")
            .key("providers")
            .key("a-b")
            .index(2);
        assert_eq!(p.to_string(), r#"$.router.providers["a-b"][2]"#);
    }
}

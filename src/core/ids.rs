//! Identities: `ChildRef` (`UUID@generation`), parties, and the deterministic id source.

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Deserializer, Serialize, Serializer};
use uuid::Uuid;

/// Epoch milliseconds. The core never reads a clock: every `now` comes from the caller.
pub type Millis = u64;

/// Hex digits of a [`ChildRef::handle`].
pub const HANDLE_DIGITS: usize = 8;

/// One generation of one identity. Displayed and parsed strictly as `UUID@generation`;
/// never prefix-matched and never resolved to "the latest".
#[derive(
    Clone,
    Copy,
    Debug,
    PartialEq,
    Eq,
    Hash,
    PartialOrd,
    Ord,
    Serialize,
    Deserialize,
    schemars::JsonSchema,
)]
pub struct ChildRef {
    pub id: Uuid,
    pub generation: u32,
}

impl ChildRef {
    pub fn new(id: Uuid, generation: u32) -> Self {
        Self { id, generation }
    }

    /// What a person reads where a full identity would not fit: the UUID's first eight hex
    /// digits, with `@N` after a first generation (`0b6a1f3e`, `0b6a1f3e@2`). Display only:
    /// nothing ever accepts a handle as a target (no prefix matching); completions expand it
    /// to the full `UUID@generation`.
    pub fn handle(self) -> String {
        let mut text = self.id.simple().to_string();
        text.truncate(HANDLE_DIGITS);
        if self.generation != 1 {
            text.push('@');
            text.push_str(&self.generation.to_string());
        }
        text
    }

    /// How many characters [`ChildRef::handle`] has, without building it (the Hub lines its
    /// columns up after the widest handle of every row, each frame).
    pub fn handle_len(self) -> usize {
        match self.generation {
            1 => HANDLE_DIGITS,
            n => HANDLE_DIGITS + 1 + n.checked_ilog10().map_or(1, |d| d as usize + 1),
        }
    }

    /// The task directory name: `<id>` for generation 1, `<id>-g<N>` after.
    pub fn directory_name(self) -> String {
        if self.generation == 1 {
            self.id.to_string()
        } else {
            format!("{}-g{}", self.id, self.generation)
        }
    }
}

impl fmt::Display for ChildRef {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}@{}", self.id.hyphenated(), self.generation)
    }
}

/// Why a `UUID@generation` string was not accepted.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ParseRefError {
    #[error("expected UUID@generation (for example 0b6a…-…@1), found no '@' in {0:?}")]
    MissingAt(String),
    #[error(
        "the id part {0:?} is not a full hyphenated UUID (36 characters); ids are never prefix-matched"
    )]
    BadUuid(String),
    #[error(
        "the generation part {0:?} is not a whole number from 1 to 4294967295 without leading zeros"
    )]
    BadGeneration(String),
}

impl FromStr for ChildRef {
    type Err = ParseRefError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let (id, generation) = s
            .split_once('@')
            .ok_or_else(|| ParseRefError::MissingAt(s.to_owned()))?;
        Ok(Self {
            id: parse_full_uuid(id)?,
            generation: parse_generation(generation)?,
        })
    }
}

/// Accepts only the 36-character hyphenated form (any letter case), never a prefix,
/// a braced, URN or simple form.
pub fn parse_full_uuid(s: &str) -> Result<Uuid, ParseRefError> {
    let hyphens_at = [8, 13, 18, 23];
    let shape_ok = s.len() == 36
        && s.bytes().enumerate().all(|(i, b)| {
            if hyphens_at.contains(&i) {
                b == b'-'
            } else {
                b.is_ascii_hexdigit()
            }
        });
    if !shape_ok {
        return Err(ParseRefError::BadUuid(s.to_owned()));
    }
    Uuid::try_parse(s).map_err(|_| ParseRefError::BadUuid(s.to_owned()))
}

/// Generations are decimal, start at 1 and carry no sign or leading zero.
pub fn parse_generation(s: &str) -> Result<u32, ParseRefError> {
    let bad = || ParseRefError::BadGeneration(s.to_owned());
    if s.is_empty() || !s.bytes().all(|b| b.is_ascii_digit()) || s.starts_with('0') {
        return Err(bad());
    }
    s.parse::<u32>().map_err(|_| bad())
}

/// Who acts or receives: the root parent runtime, or one exact child generation.
/// On the wire: `"root"` or `"UUID@generation"`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Party {
    Root,
    Child(ChildRef),
}

impl Party {
    pub fn child(self) -> Option<ChildRef> {
        match self {
            Party::Root => None,
            Party::Child(r) => Some(r),
        }
    }
}

impl fmt::Display for Party {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Party::Root => f.write_str("root"),
            Party::Child(r) => r.fmt(f),
        }
    }
}

impl FromStr for Party {
    type Err = ParseRefError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        if s == "root" {
            Ok(Party::Root)
        } else {
            s.parse().map(Party::Child)
        }
    }
}

impl Serialize for Party {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_str(self)
    }
}

/// In schemas a party is the string it is on the wire.
impl schemars::JsonSchema for Party {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "Party".into()
    }

    fn json_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
        schemars::json_schema!({
            "type": "string",
            "description": "\"root\" or \"UUID@generation\"",
            "pattern": "^(root|[0-9A-Fa-f]{8}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{12}@[1-9][0-9]*)$"
        })
    }
}

impl<'de> Deserialize<'de> for Party {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let s = String::deserialize(deserializer)?;
        s.parse().map_err(serde::de::Error::custom)
    }
}

/// Identifies one caller request so the runtime can route the matching `Effect::Reply`.
#[derive(
    Clone,
    Copy,
    Debug,
    PartialEq,
    Eq,
    Hash,
    PartialOrd,
    Ord,
    Serialize,
    Deserialize,
    schemars::JsonSchema,
)]
#[serde(transparent)]
pub struct RequestId(pub u64);

/// One admission (or resume/renewal) call: the unit that receives one window outcome.
#[derive(
    Clone,
    Copy,
    Debug,
    PartialEq,
    Eq,
    Hash,
    PartialOrd,
    Ord,
    Serialize,
    Deserialize,
    schemars::JsonSchema,
)]
#[serde(transparent)]
pub struct CallId(pub u64);

/// A pending `wait`.
#[derive(
    Clone,
    Copy,
    Debug,
    PartialEq,
    Eq,
    Hash,
    PartialOrd,
    Ord,
    Serialize,
    Deserialize,
    schemars::JsonSchema,
)]
#[serde(transparent)]
pub struct WaiterId(pub u64);

/// A message receipt id (a UUID from the same id source as identities).
#[derive(
    Clone,
    Copy,
    Debug,
    PartialEq,
    Eq,
    Hash,
    PartialOrd,
    Ord,
    Serialize,
    Deserialize,
    schemars::JsonSchema,
)]
#[serde(transparent)]
pub struct MessageId(pub Uuid);

impl fmt::Display for MessageId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.0.hyphenated().fmt(f)
    }
}

/// Deterministic version-4 UUIDs from a seed (`SplitMix64`). The runtime seeds it from the OS;
/// tests and the simulation seed it themselves so every run replays exactly.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct IdSource {
    state: u64,
}

impl IdSource {
    pub fn new(seed: u64) -> Self {
        Self { state: seed }
    }

    fn next_u64(&mut self) -> u64 {
        self.state = self.state.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.state;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    pub fn next_uuid(&mut self) -> Uuid {
        let mut bytes = [0u8; 16];
        bytes[..8].copy_from_slice(&self.next_u64().to_le_bytes());
        bytes[8..].copy_from_slice(&self.next_u64().to_le_bytes());
        uuid::Builder::from_random_bytes(bytes).into_uuid()
    }
}

#[cfg(test)]
mod handle_tests {
    use super::ChildRef;

    #[test]
    fn a_handle_is_the_first_eight_hex_digits_with_the_generation_after_the_first() {
        let id = uuid::Uuid::parse_str("0b6a1f3e-4c2d-4e8a-9b1c-2d3e4f5a6b7c").unwrap_or_default();
        assert_eq!(ChildRef::new(id, 1).handle(), "0b6a1f3e");
        assert_eq!(ChildRef::new(id, 12).handle(), "0b6a1f3e@12");
    }

    #[test]
    fn handle_len_is_the_length_of_the_handle_23() {
        let id = uuid::Uuid::from_u128(0x1234_5678_9abc_def0_1234_5678_9abc_def0);
        for generation in [1, 2, 9, 10, 11, 99, 100, 12_345, u32::MAX] {
            let r = ChildRef::new(id, generation);
            assert_eq!(r.handle_len(), r.handle().len(), "generation {generation}");
        }
    }
}

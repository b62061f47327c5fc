//! pi's `AgentMessage` (any role) with the fields Slate reads: content blocks, stop reason,
//! error message and usage.

use std::borrow::Cow;
use std::fmt;

use serde::Deserialize;
use serde::de::{self, Deserializer, SeqAccess, Visitor};

use super::lenient::cow_str;

/// An `AgentMessage` of any role, with the fields Slate reads.
#[derive(Clone, Debug, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Message {
    pub role: Role,
    /// A plain-string `content` becomes one text block.
    #[serde(default)]
    pub content: Content,
    /// Assistant only: `"pending"` while streaming (and at `message_start`), else terminal.
    pub stop_reason: Option<StopReason>,
    pub error_message: Option<String>,
    /// Assistant messages always carry usage; tool results may.
    pub usage: Option<Usage>,
}

impl Message {
    /// The exact concatenation of the text blocks: no separators, no trimming.
    pub fn text(&self) -> String {
        self.content
            .0
            .iter()
            .filter_map(ContentBlock::text)
            .collect()
    }

    /// [`Message::text`] consuming the message, reusing a lone block's allocation.
    pub fn into_text(self) -> String {
        let mut texts = self.content.0.into_iter().filter_map(|b| match b {
            ContentBlock::Text(t) => Some(t),
            _ => None,
        });
        let Some(mut out) = texts.next() else {
            return String::new();
        };
        for t in texts {
            out.push_str(&t);
        }
        out
    }
}

/// `role`. Hosts can add roles, so unknown ones are kept by name.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Role {
    System,
    User,
    Assistant,
    ToolResult,
    BashExecution,
    Other(String),
}

impl<'de> Deserialize<'de> for Role {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let s = cow_str(d)?;
        Ok(match s.as_ref() {
            "system" => Role::System,
            "user" => Role::User,
            "assistant" => Role::Assistant,
            "toolResult" => Role::ToolResult,
            "bashExecution" => Role::BashExecution,
            _ => Role::Other(s.into_owned()),
        })
    }
}

/// An assistant message's `stopReason`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum StopReason {
    Pending,
    Stop,
    Length,
    ToolUse,
    /// Provider or stream failure; `errorMessage` says which (`"500: {…}"`).
    Error,
    /// `abort` (or an abort that caught a tool): `errorMessage` is informational only.
    Aborted,
    Deferred,
    Other(String),
}

impl<'de> Deserialize<'de> for StopReason {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let s = cow_str(d)?;
        Ok(match s.as_ref() {
            "pending" => StopReason::Pending,
            "stop" => StopReason::Stop,
            "length" => StopReason::Length,
            "toolUse" => StopReason::ToolUse,
            "error" => StopReason::Error,
            "aborted" => StopReason::Aborted,
            "deferred" => StopReason::Deferred,
            _ => StopReason::Other(s.into_owned()),
        })
    }
}

/// Per-message usage as pi reports it (`reasoning` is already inside `output`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Usage {
    pub input: u64,
    pub output: u64,
    pub cache_read: u64,
    pub cache_write: u64,
    pub total_tokens: u64,
    pub cost: Option<Cost>,
}

/// `usage.cost`, US dollars (`tokens × model cost / 1e6`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub struct Cost {
    pub input: f64,
    pub output: f64,
    pub cache_read: f64,
    pub cache_write: f64,
    pub total: Option<f64>,
}

/// A message's content blocks.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Content(pub Vec<ContentBlock>);

/// One content block. Payloads Slate never shows (thinking text, tool-call arguments, image
/// bytes) are skipped while parsing.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ContentBlock {
    Text(String),
    Thinking,
    ToolCall {
        id: String,
        name: String,
    },
    Image {
        mime_type: String,
    },
    /// A block type this model does not know, by name.
    Other(String),
}

impl ContentBlock {
    pub fn text(&self) -> Option<&str> {
        match self {
            ContentBlock::Text(t) => Some(t),
            _ => None,
        }
    }
}

impl<'de> Deserialize<'de> for Content {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct ContentVisitor;
        impl<'de> Visitor<'de> for ContentVisitor {
            type Value = Content;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a string or an array of content blocks")
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<Content, E> {
                Ok(Content(vec![ContentBlock::Text(v.to_owned())]))
            }
            fn visit_string<E: de::Error>(self, v: String) -> Result<Content, E> {
                Ok(Content(vec![ContentBlock::Text(v)]))
            }
            fn visit_unit<E: de::Error>(self) -> Result<Content, E> {
                Ok(Content::default())
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Content, A::Error> {
                let mut blocks = Vec::with_capacity(seq.size_hint().unwrap_or(1).min(16));
                while let Some(block) = seq.next_element::<RawBlock>()? {
                    blocks.push(block.into());
                }
                Ok(Content(blocks))
            }
        }
        d.deserialize_any(ContentVisitor)
    }
}

/// The flat wire shape of every block type; turned into [`ContentBlock`].
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct RawBlock<'a> {
    #[serde(rename = "type", borrow)]
    kind: Cow<'a, str>,
    #[serde(default)]
    text: Option<String>,
    #[serde(default)]
    id: Option<String>,
    #[serde(default)]
    name: Option<String>,
    #[serde(default)]
    mime_type: Option<String>,
}

impl From<RawBlock<'_>> for ContentBlock {
    fn from(b: RawBlock<'_>) -> Self {
        match b.kind.as_ref() {
            "text" => ContentBlock::Text(b.text.unwrap_or_default()),
            "thinking" => ContentBlock::Thinking,
            "toolCall" => ContentBlock::ToolCall {
                id: b.id.unwrap_or_default(),
                name: b.name.unwrap_or_default(),
            },
            "image" => ContentBlock::Image {
                mime_type: b.mime_type.unwrap_or_default(),
            },
            _ => ContentBlock::Other(b.kind.into_owned()),
        }
    }
}

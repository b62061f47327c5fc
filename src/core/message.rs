//! Live-messaging data: modes, receipts and messages.

use serde::{Deserialize, Serialize};

use crate::core::ids::{MessageId, Party};

#[derive(
    Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize, schemars::JsonSchema,
)]
pub enum MessageMode {
    #[default]
    #[serde(rename = "inbox")]
    Inbox,
    #[serde(rename = "steer")]
    Steer,
    #[serde(rename = "followUp")]
    FollowUp,
}

impl MessageMode {
    pub fn as_str(self) -> &'static str {
        match self {
            MessageMode::Inbox => "inbox",
            MessageMode::Steer => "steer",
            MessageMode::FollowUp => "followUp",
        }
    }
}

/// What actually happened to a message. None of these means the model understood it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum ReceiptStatus {
    /// Admitted to the recipient's mailbox.
    Accepted,
    /// The worker accepted a steer/followUp.
    Queued,
    /// An input handler consumed it.
    Handled,
    /// The exact message entered the recipient transcript, or an inbox read/wait returned it.
    Delivered,
    /// No running recipient (including one that ended before delivery).
    NotRunning,
    /// Delivery failed; `error` says why.
    Error,
}

impl ReceiptStatus {
    /// Final states: a receipt wait resolves once one is reached.
    pub fn is_final(self) -> bool {
        matches!(
            self,
            ReceiptStatus::Delivered | ReceiptStatus::NotRunning | ReceiptStatus::Error
        )
    }
}

/// A message and its receipt: `{id,sender,recipient,text,mode,status,error?}`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Message {
    pub id: MessageId,
    pub sender: Party,
    pub recipient: Party,
    pub text: String,
    pub mode: MessageMode,
    pub status: ReceiptStatus,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

//! Which failures begin recovery: temporary connection, timeout, rate-limit and server failures
//! after pi reports known retry exhaustion. Authentication, billing and context-window failures
//! never do; cancellation and unknown evidence stop recovery visibly.

use serde::Serialize;

/// The kind of a failed route.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum FailureKind {
    Connection,
    Timeout,
    RateLimit,
    Server,
    Authentication,
    Billing,
    ContextWindow,
    Cancelled,
    Unknown,
}

/// What pi reported about its own retries of the active route.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Exhaustion {
    /// pi reported that its retries are exhausted (`auto_retry_end{success:false}`, or a final
    /// failure with retry off).
    Known,
    /// No evidence that pi's retries ended.
    Unknown,
}

/// What Slate does about a failed route.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum RecoveryDecision {
    /// Begin a transition to the next route of the recovery order.
    Recover,
    /// Not eligible for transient recovery: the action fails with this error.
    Fail,
    /// Stop recovery visibly (cancellation, or unknown evidence).
    Stop,
}

pub fn decide(kind: FailureKind, exhaustion: Exhaustion) -> RecoveryDecision {
    match kind {
        FailureKind::Connection
        | FailureKind::Timeout
        | FailureKind::RateLimit
        | FailureKind::Server => match exhaustion {
            Exhaustion::Known => RecoveryDecision::Recover,
            Exhaustion::Unknown => RecoveryDecision::Stop,
        },
        FailureKind::Authentication | FailureKind::Billing | FailureKind::ContextWindow => {
            RecoveryDecision::Fail
        }
        FailureKind::Cancelled | FailureKind::Unknown => RecoveryDecision::Stop,
    }
}

/// Classify pi's final error text (`auto_retry_end.finalError`, an assistant `errorMessage`).
/// Checks run from the most specific (never recover) to the least, so a quota error carried
/// by a 429 counts as billing; text that matches nothing is [`FailureKind::Unknown`].
pub fn classify_message(text: &str) -> FailureKind {
    let t = text.to_ascii_lowercase();
    let any = |needles: &[&str]| needles.iter().any(|n| t.contains(n));
    if any(&["aborted", "cancelled", "canceled"]) {
        FailureKind::Cancelled
    } else if any(&[
        "context window",
        "context length",
        "context_length",
        "maximum context",
        "prompt is too long",
        "too many tokens",
    ]) {
        FailureKind::ContextWindow
    } else if any(&[
        "billing",
        "insufficient_quota",
        "quota",
        "payment",
        "credit balance",
        "402",
    ]) {
        FailureKind::Billing
    } else if any(&[
        "401",
        "403",
        "unauthorized",
        "authentication",
        "invalid api key",
        "invalid x-api-key",
        "no api key",
        "forbidden",
    ]) {
        FailureKind::Authentication
    } else if any(&[
        "429",
        "rate limit",
        "rate_limit",
        "too many requests",
        "overloaded",
    ]) {
        FailureKind::RateLimit
    } else if any(&["timeout", "timed out", "etimedout"]) {
        FailureKind::Timeout
    } else if any(&[
        "econnreset",
        "econnrefused",
        "enotfound",
        "socket hang up",
        "fetch failed",
        "connection",
        "network",
        "terminated",
    ]) {
        FailureKind::Connection
    } else if any(&[
        "500",
        "502",
        "503",
        "504",
        "server error",
        "internal error",
        "bad gateway",
        "service unavailable",
    ]) {
        FailureKind::Server
    } else {
        FailureKind::Unknown
    }
}

//! Every fixed bound of the contract, in one place.

/// Messages waiting in one mailbox (consumption frees a slot).
pub const MAILBOX_MESSAGES: usize = 64;
/// Messages admitted over the whole parent runtime (never freed).
pub const RUNTIME_MESSAGES: u32 = 512;
/// Pending `wait` calls at once.
pub const PENDING_WAITERS: usize = 64;
/// Generations one identity may ever have.
pub const GENERATIONS_PER_IDENTITY: u32 = 64;
/// `progress` is clipped to this many characters.
pub const PROGRESS_CHARS: usize = 4096;
/// Model-facing previews clip text fields to this many characters.
pub const PREVIEW_CHARS: usize = 2048;
/// Native preview truncation: bytes and lines.
pub const PREVIEW_BYTES: usize = 50 * 1024;
pub const PREVIEW_LINES: usize = 2000;
/// Result-schema limits.
pub const SCHEMA_CHARS: usize = 16_384;
pub const SCHEMA_NODES: usize = 256;
pub const SCHEMA_DEPTH: usize = 16;
/// Task-file size, in bytes, inclusive.
pub const TASK_FILE_MIN_BYTES: u64 = 1;
pub const TASK_FILE_MAX_BYTES: u64 = 50_000;
/// An inline assignment (delegate, resume, followup, revive), in UTF-8 bytes: no longer than
/// a task file may be, so both ways of giving a task have one bound.
pub const ASSIGNMENT_BYTES: usize = 50_000;
const _: () = assert!(ASSIGNMENT_BYTES as u64 == TASK_FILE_MAX_BYTES);
/// Message text, in UTF-8 bytes.
pub const MESSAGE_BYTES: usize = 4096;
/// `wait` timeout range, in milliseconds, inclusive.
pub const WAIT_MIN_MS: u64 = 1;
pub const WAIT_MAX_MS: u64 = 60_000;
/// The activity line kept on a snapshot (characters).
pub const ACTIVITY_CHARS: usize = 240;
/// Streaming output (assistant text deltas, tool partial output) changes a snapshot at most
/// once per this many milliseconds per generation; the end of a message or tool always does.
pub const STREAM_INTERVAL_MS: u64 = 100;
/// Validation errors kept per structured-result submission.
pub const SUBMISSION_ERRORS: usize = 32;

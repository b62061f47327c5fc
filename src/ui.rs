//! Terminal views of the registry: the Subagent Hub, the inline fleet widget and the
//! profiles overlay. They consume the registry through the control socket (or an embedded
//! coordinator) and never hold a second source of truth.

pub mod ansi;
pub mod fleet;
pub mod hub;
pub mod profiles;
pub mod terminal;
pub mod theme;

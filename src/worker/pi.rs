//! The pi worker backend (`pi --mode rpc`).

pub mod args;
pub mod mapper;
pub mod process;
pub mod protocol;
pub mod recovery;

pub use process::{PiBackend, PiCommand};

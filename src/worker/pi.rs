//! The pi worker backend (`pi --mode rpc`).

pub mod args;
pub mod extension;
pub mod lines;
pub mod mapper;
pub mod pool;
pub mod process;
pub mod protocol;
pub mod recovery;
pub mod version_cache;

pub use process::{PiBackend, PiCommand};

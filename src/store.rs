//! Storage adapters: the real file system behind `policy::fs_view::FsView`, delegation paths,
//! private task directories, artifact publication, the registry event log and pi session files.

pub mod artifacts;
pub mod error;
pub mod event_log;
pub mod fs;
pub mod paths;
mod private;
pub mod replace;
pub mod session;

pub use error::StoreError;

//! Storage adapters: the real file system behind `policy::fs_view::FsView`, delegation paths,
//! private task directories, artifact publication and the registry event log.

pub mod artifacts;
pub mod error;
pub mod event_log;
pub mod fs;
pub mod paths;
mod private;

pub use error::StoreError;

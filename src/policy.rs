//! Pure validators and resolvers over plain data (no IO; file facts come through
//! [`fs_view::FsView`]). Each returns every problem it finds, each naming the field.

pub mod capabilities;
pub mod fs_view;
pub mod host_extensions;
pub mod logical;
pub mod model;
pub mod parent_tools;
pub mod pool;
pub mod preview;
pub mod problem;
pub mod profiles;
pub mod recovery;
pub mod request;
pub mod resolve;
pub mod routing;
pub mod scheduling;
pub mod schema;
pub mod task_file;
pub mod trust;
pub mod version;
pub mod workspace;

pub use problem::{Problem, Problems};

//! Storage adapters: the real file system behind `policy::fs_view::FsView`.

pub mod fs;

//! The pi worker backend (`pi --mode rpc`).

pub mod mapper;
pub mod protocol;

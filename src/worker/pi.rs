//! The pi worker backend (`pi --mode rpc`).

pub mod args;

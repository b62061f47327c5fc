//! Slate: a terminal fleet manager for coding-agent subagents.
//!
//! `core` is the sans-IO coordinator; `policy` holds pure validators; `sim` runs the core
//! in virtual time with scripted workers (demo, simulation tests, benchmarks).

pub mod cli;
pub mod config;
pub mod control;
pub mod core;
pub mod demo;
pub mod handoff;
pub mod install;
pub mod json;
pub mod policy;
pub mod runtime;
pub mod sim;
pub mod store;
pub mod text;
pub mod tools;
pub mod ui;
pub mod worker;

//! Worker backends: they start workers and report what they do as `WorkerEvent`s. Both
//! implement `runtime::backend::WorkerBackend`.

pub mod contain;
pub mod pi;
pub mod reaper;
pub mod sim;

//! Worker backends: they start workers and report what they do as `WorkerEvent`s.

pub mod pi;

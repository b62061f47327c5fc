//! Table tests for the coordinator contract (issue 2), one module per numbered rule of
//! `shared/spec/003`: each test is named after the rule it checks and drives the sans-IO
//! core directly through `Coordinator::handle`.

#[path = "rules/support.rs"]
mod support;

#[path = "rules/streaming.rs"]
mod rule_10_streaming_progress;
#[path = "rules/telemetry.rs"]
mod rule_10_telemetry;
#[path = "rules/identities.rs"]
mod rule_1_identities_and_snapshots;
#[path = "rules/lifecycle.rs"]
mod rule_2_lifecycle;
#[path = "rules/admission.rs"]
mod rule_3_atomic_admission;
#[path = "rules/scheduling.rs"]
mod rule_4_fifo_scheduling;
#[path = "rules/guard.rs"]
mod rule_5_dispatch_guard;
#[path = "rules/limits.rs"]
mod rule_5_limits;
#[path = "rules/generations.rs"]
mod rule_6_generations_and_presence;
#[path = "rules/messaging.rs"]
mod rule_7_live_messaging;
#[path = "rules/waits.rs"]
mod rule_7_waits;
#[path = "rules/stop.rs"]
mod rule_8_stop_and_shutdown;
#[path = "rules/delivery.rs"]
mod rule_9_delivery;

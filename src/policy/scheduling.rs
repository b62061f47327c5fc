//! The finite scheduling policy: defaults, operator ceilings and validation.

use serde::{Deserialize, Serialize};

use crate::core::task::Limits;

/// `SchedulingPolicy`: all values finite; there is no unlimited sentinel.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct SchedulingPolicy {
    /// Active children, including setup, waiting nested parents and draining.
    pub concurrency: u32,
    /// Waiting assignments, accounting for writer/FIFO blocking as well as capacity.
    pub queue: u32,
    /// Assignments admitted by one call.
    pub batch: u32,
    /// Maximum absolute depth (root 0, child 1, grandchild 2); 0 and 1 disable nesting.
    pub depth: u32,
    /// Admitted direct children per child lifetime; 0 disables spawning.
    pub spawns: u32,
    /// Per-window elapsed time from admission or resume; paused time excluded.
    pub deadline_ms: u64,
    /// Direct child dispatches into the model registry.
    pub requests: u32,
    /// Executable child tool invocations, including local delegation.
    pub tools: u32,
}

/// One row of the policy table: name, default, operator ceiling, and whether 0 is allowed.
pub struct FieldRule {
    pub name: &'static str,
    pub default: u64,
    pub ceiling: u64,
    pub positive: bool,
}

pub const FIELD_RULES: [FieldRule; 8] = [
    FieldRule {
        name: "concurrency",
        default: 16,
        ceiling: 16,
        positive: true,
    },
    FieldRule {
        name: "queue",
        default: 32,
        ceiling: 256,
        positive: false,
    },
    FieldRule {
        name: "batch",
        default: 16,
        ceiling: 64,
        positive: true,
    },
    FieldRule {
        name: "depth",
        default: 2,
        ceiling: 4,
        positive: false,
    },
    FieldRule {
        name: "spawns",
        default: 8,
        ceiling: 32,
        positive: false,
    },
    FieldRule {
        name: "deadlineMs",
        default: 1_800_000,
        ceiling: 3_600_000,
        positive: true,
    },
    FieldRule {
        name: "requests",
        default: 100,
        ceiling: 1000,
        positive: true,
    },
    FieldRule {
        name: "tools",
        default: 100,
        ceiling: 1000,
        positive: true,
    },
];

impl Default for SchedulingPolicy {
    fn default() -> Self {
        Self {
            concurrency: 16,
            queue: 32,
            batch: 16,
            depth: 2,
            spawns: 8,
            deadline_ms: 1_800_000,
            requests: 100,
            tools: 100,
        }
    }
}

/// One rule broken by a policy value.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, thiserror::Error)]
#[error("scheduling.{field} = {value}: {rule}")]
pub struct PolicyProblem {
    pub field: &'static str,
    pub value: u64,
    pub rule: String,
}

impl SchedulingPolicy {
    /// Values in table order, matching [`FIELD_RULES`].
    pub fn values(&self) -> [u64; 8] {
        [
            u64::from(self.concurrency),
            u64::from(self.queue),
            u64::from(self.batch),
            u64::from(self.depth),
            u64::from(self.spawns),
            self.deadline_ms,
            u64::from(self.requests),
            u64::from(self.tools),
        ]
    }

    /// Every problem, each naming the field, the value and the rule.
    pub fn validate(&self) -> Result<(), Vec<PolicyProblem>> {
        let problems: Vec<PolicyProblem> = FIELD_RULES
            .iter()
            .zip(self.values())
            .filter_map(|(rule, value)| {
                if rule.positive && value == 0 {
                    Some(PolicyProblem {
                        field: rule.name,
                        value,
                        rule: "must be positive".to_owned(),
                    })
                } else if value > rule.ceiling {
                    Some(PolicyProblem {
                        field: rule.name,
                        value,
                        rule: format!("exceeds the operator ceiling of {}", rule.ceiling),
                    })
                } else {
                    None
                }
            })
            .collect();
        if problems.is_empty() {
            Ok(())
        } else {
            Err(problems)
        }
    }

    /// The execution limits a root child gets before request narrowing.
    pub fn limits(&self) -> Limits {
        Limits {
            deadline_ms: self.deadline_ms,
            requests: self.requests,
            tools: self.tools,
            depth: self.depth,
            spawns: self.spawns,
        }
    }
}

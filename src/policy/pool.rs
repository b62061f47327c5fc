//! `pool` in the operator's `delegation.json`: how many pi worker processes the coordinator
//! keeps started ahead of time, and for how long an unused one is kept (issue 23).
//!
//! ```json
//! { "pool": { "size": 2, "idleSeconds": 600 } }
//! ```
//!
//! Operator policy only: a pooled process costs the user's memory whether or not a project
//! delegates, so a project file cannot set it (it is refused, naming the key). `size` is at
//! most 16 (the `scheduling.concurrency` ceiling) and is further bounded by the effective
//! `concurrency` ([`PoolPolicy::effective_size`]); 0 turns the pool off. `idleSeconds` is 1 to
//! 3,600. The machine's free memory decides the rest at run time (`worker::pi::pool`).

use std::time::Duration;

use serde::Serialize;
use serde_json::{Map, Value};

use crate::policy::Problem;
use crate::policy::request::safe_integer;

/// The pool's operator policy.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct PoolPolicy {
    /// Pre-started processes kept idle (before the `concurrency` bound).
    pub size: u32,
    /// How long an unused pre-started process is kept before it is ended.
    pub idle_seconds: u32,
}

/// The field rules, in the order `slate profiles` shows them: name, default, ceiling, minimum.
pub const POOL_FIELDS: [(&str, u32, u32, u32); 2] =
    [("size", DEFAULT_SIZE, 16, 0), ("idleSeconds", 600, 3600, 1)];

/// One pre-started process by default: it costs one idle pi (about 110 MB, measured in
/// `docs/performance.md`) and makes a single delegation start warm.
const DEFAULT_SIZE: u32 = 1;

impl Default for PoolPolicy {
    fn default() -> Self {
        Self {
            size: DEFAULT_SIZE,
            idle_seconds: POOL_FIELDS[1].1,
        }
    }
}

impl PoolPolicy {
    /// `size`, never more than `concurrency` (a pooled process is not a worker, but the pool
    /// never holds more processes than could ever run at once).
    pub fn effective_size(&self, concurrency: u32) -> u32 {
        self.size.min(concurrency)
    }

    pub fn idle(&self) -> Duration {
        Duration::from_secs(u64::from(self.idle_seconds))
    }
}

/// Apply the operator's `pool` object over `current`; every problem names its field.
pub fn apply(value: &Value, current: PoolPolicy, problems: &mut Vec<Problem>) -> PoolPolicy {
    let Some(object) = value.as_object() else {
        problems.push(Problem::new("$.pool", "must be an object").json(value));
        return current;
    };
    apply_object(object, current, problems)
}

fn apply_object(
    object: &Map<String, Value>,
    mut next: PoolPolicy,
    problems: &mut Vec<Problem>,
) -> PoolPolicy {
    for (name, value) in object {
        let at = format!("$.pool.{name}");
        let Some(&(_, _, ceiling, minimum)) = POOL_FIELDS.iter().find(|f| f.0 == name) else {
            problems.push(Problem::new(
                at,
                "unknown field; allowed: size, idleSeconds".to_owned(),
            ));
            continue;
        };
        let Some(n) = safe_integer(value, &at, problems) else {
            continue;
        };
        match u32::try_from(n) {
            Ok(n) if (minimum..=ceiling).contains(&n) => {
                if name == "size" {
                    next.size = n;
                } else {
                    next.idle_seconds = n;
                }
            }
            _ => problems
                .push(Problem::new(at, format!("must be {minimum} to {ceiling}")).json(value)),
        }
    }
    next
}

/// The refusal of a project file's `pool`.
pub fn project_refusal() -> Problem {
    Problem::new(
        "$.pool",
        "pool is operator policy (<agentDir>/delegation.json): pre-started processes cost the \
         user's memory, so a project cannot set them",
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(text: &str) -> (PoolPolicy, Vec<String>) {
        let mut problems = Vec::new();
        let value: Value = serde_json::from_str(text).unwrap_or(Value::Null);
        let pool = apply(&value, PoolPolicy::default(), &mut problems);
        (pool, problems.iter().map(ToString::to_string).collect())
    }

    #[test]
    fn defaults_are_one_process_for_ten_minutes() {
        assert_eq!(
            PoolPolicy::default(),
            PoolPolicy {
                size: 1,
                idle_seconds: 600
            }
        );
    }

    #[test]
    fn both_fields_are_bounded_and_named() {
        let (pool, problems) = parse(r#"{"size": 0, "idleSeconds": 3600}"#);
        assert!(problems.is_empty(), "{problems:?}");
        assert_eq!((pool.size, pool.idle_seconds), (0, 3600));
        let (pool, problems) = parse(r#"{"size": 17, "idleSeconds": 0, "warm": true}"#);
        assert_eq!(
            pool,
            PoolPolicy::default(),
            "nothing applied from a bad value"
        );
        let text = problems.join("\n");
        assert!(
            text.contains("$.pool.size") && text.contains("0 to 16"),
            "{text}"
        );
        assert!(
            text.contains("$.pool.idleSeconds") && text.contains("1 to 3600"),
            "{text}"
        );
        assert!(
            text.contains("$.pool.warm") && text.contains("unknown field"),
            "{text}"
        );
        let (_, problems) = parse(r#"{"size": "2"}"#);
        assert!(
            problems[0].contains("non-negative safe integer"),
            "{problems:?}"
        );
        let (_, problems) = parse("[]");
        assert!(problems[0].contains("$.pool") && problems[0].contains("object"));
    }

    #[test]
    fn the_size_never_passes_concurrency() {
        let pool = PoolPolicy {
            size: 8,
            idle_seconds: 60,
        };
        assert_eq!(pool.effective_size(16), 8);
        assert_eq!(pool.effective_size(3), 3);
    }
}

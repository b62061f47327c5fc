//! `workerExtensions` (spec 000 "Worker extensions"): regex patterns that select extensions
//! the host session has already loaded, matched **unanchored** against a load unit's source
//! spec, its path, or a contributed tool's entry path.
//!
//! Patterns use the `regex` crate's syntax, which covers ordinary JavaScript patterns
//! (literals, classes, alternation, repetition) but not look-around or back-references; such a
//! pattern is reported as invalid rather than silently never matching.

use regex::{Regex, RegexBuilder};

use super::issue::{ErrorClass, Issue};
use super::json::{Json, JsonPath};

/// Compiled patterns are bounded so a hostile file cannot make compilation unbounded.
const PATTERN_SIZE_LIMIT: usize = 1 << 20;

/// The validated patterns of `workerExtensions` (`None`/`null`: none), and every problem.
pub fn parse(value: Option<&Json>) -> (Vec<String>, Vec<Issue>) {
    let path = JsonPath::root().key("workerExtensions");
    let mut issues = Vec::new();
    let items = match value {
        None | Some(Json::Null) => return (Vec::new(), issues),
        Some(Json::Array(items)) => items,
        Some(other) => {
            issues.push(
                Issue::new(
                    ErrorClass::InvalidValue,
                    path,
                    "`workerExtensions` must be an array of regular-expression strings",
                )
                .json(other),
            );
            return (Vec::new(), issues);
        }
    };
    let mut patterns = Vec::with_capacity(items.len());
    for (i, item) in items.iter().enumerate() {
        let at = path.index(i);
        let Json::String(pattern) = item else {
            issues.push(
                Issue::new(
                    ErrorClass::InvalidValue,
                    at,
                    "must be a regular-expression string",
                )
                .json(item),
            );
            continue;
        };
        match compile(pattern) {
            Ok(_) => patterns.push(pattern.clone()),
            Err(e) => issues.push(
                Issue::new(
                    ErrorClass::InvalidPattern,
                    at,
                    format!(
                        "is not a valid regular expression: {}",
                        e.lines().last().unwrap_or("invalid")
                    ),
                )
                .json(item),
            ),
        }
    }
    (patterns, issues)
}

/// One pattern, compiled for unanchored matching.
///
/// # Errors
/// The regex crate's message.
pub fn compile(pattern: &str) -> Result<Regex, String> {
    RegexBuilder::new(pattern)
        .size_limit(PATTERN_SIZE_LIMIT)
        .build()
        .map_err(|e| e.to_string())
}

/// Whether any pattern matches anywhere in one of `candidates` (source spec, load-unit path,
/// tool entry paths).
pub fn selects(patterns: &[String], candidates: &[&str]) -> bool {
    patterns
        .iter()
        .filter_map(|p| compile(p).ok())
        .any(|re| candidates.iter().any(|c| re.is_match(c)))
}

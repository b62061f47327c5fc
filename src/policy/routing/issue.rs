//! What routing validation reports: every critical error and warning with its class, the file,
//! the JSON path and the rule.

use std::fmt;

use serde::Serialize;

use super::json::{Json, JsonPath};
use crate::policy::Problem;

/// The class of a routing problem. Every class except the two warning classes is critical and
/// blocks logical work.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum ErrorClass {
    /// The file is not readable JSON, or its root or `router` is not an object.
    InvalidJson,
    /// A value of the wrong type or outside its pattern.
    InvalidValue,
    UnknownField,
    DuplicateName,
    IncompleteDefinition,
    InvalidRating,
    InvalidEffort,
    /// The same name is both added and replaced, or `replace` changes effort without ratings.
    AmbiguousOperation,
    /// A name that names no definition (withdrawn names included), or a preferred provider
    /// that is not a key of the provider map.
    UnknownReference,
    /// `router.compressor.models` is an explicit empty list.
    EmptyCompressor,
    /// The logical-model prompt section is above its character or line ceiling.
    PromptLimit,
    /// A `workerExtensions` entry is not a valid regular expression.
    InvalidPattern,
    /// Warning: a legacy key that Slate names and ignores.
    LegacyIgnored,
    /// Warning: the ordinary pool is empty, so no logical model can be selected.
    EmptyPool,
}

impl ErrorClass {
    pub fn is_warning(self) -> bool {
        matches!(self, Self::LegacyIgnored | Self::EmptyPool)
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Self::InvalidJson => "invalid-json",
            Self::InvalidValue => "invalid-value",
            Self::UnknownField => "unknown-field",
            Self::DuplicateName => "duplicate-name",
            Self::IncompleteDefinition => "incomplete-definition",
            Self::InvalidRating => "invalid-rating",
            Self::InvalidEffort => "invalid-effort",
            Self::AmbiguousOperation => "ambiguous-operation",
            Self::UnknownReference => "unknown-reference",
            Self::EmptyCompressor => "empty-compressor",
            Self::PromptLimit => "prompt-limit",
            Self::InvalidPattern => "invalid-pattern",
            Self::LegacyIgnored => "legacy-ignored",
            Self::EmptyPool => "empty-pool",
        }
    }
}

impl fmt::Display for ErrorClass {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// One reported routing problem: its class and the file, path, value and rule.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct RoutingProblem {
    pub class: ErrorClass,
    #[serde(flatten)]
    pub problem: Problem,
}

impl fmt::Display for RoutingProblem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "[{}] {}", self.class, self.problem)
    }
}

/// A problem before the file that owns its path is known.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Issue {
    pub class: ErrorClass,
    pub path: JsonPath,
    pub value: Option<String>,
    pub rule: String,
}

impl Issue {
    pub fn new(class: ErrorClass, path: JsonPath, rule: impl Into<String>) -> Self {
        Self {
            class,
            path,
            value: None,
            rule: rule.into(),
        }
    }

    #[must_use]
    pub fn json(self, value: &Json) -> Self {
        self.value(value)
    }

    #[must_use]
    pub fn value(mut self, value: impl fmt::Display) -> Self {
        self.value = Some(value.to_string());
        self
    }

    pub fn in_file(self, file: &str) -> RoutingProblem {
        let mut problem = Problem::new(self.path.to_string(), self.rule).in_file(file);
        if let Some(value) = self.value {
            problem = problem.value(value);
        }
        RoutingProblem {
            class: self.class,
            problem,
        }
    }
}

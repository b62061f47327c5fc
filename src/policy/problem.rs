//! One problem found by a validator: the file, the JSON path of the field, the bad value and
//! the rule. Validators return every problem they find, never just the first.

use std::fmt;

use serde::Serialize;

#[derive(Clone, Debug, PartialEq, Eq, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Problem {
    /// The file the value came from (`None` for request input).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub file: Option<String>,
    /// JSON path of the field, e.g. `$.general.tools[2]` or `$.tasks[1].limits.requests`.
    pub path: String,
    /// The offending value, rendered compactly (`None` when the field is missing).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub value: Option<String>,
    /// The rule it breaks, in words.
    pub rule: String,
}

impl Problem {
    pub fn new(path: impl Into<String>, rule: impl Into<String>) -> Self {
        Self {
            file: None,
            path: path.into(),
            value: None,
            rule: rule.into(),
        }
    }

    #[must_use]
    pub fn value(mut self, value: impl fmt::Display) -> Self {
        let mut text = value.to_string();
        if text.chars().count() > 120 {
            text = text.chars().take(119).collect::<String>() + "…";
        }
        self.value = Some(text);
        self
    }

    /// The value as compact JSON.
    #[must_use]
    pub fn json(self, value: &serde_json::Value) -> Self {
        self.value(value)
    }

    #[must_use]
    pub fn in_file(mut self, file: impl Into<String>) -> Self {
        self.file = Some(file.into());
        self
    }
}

impl fmt::Display for Problem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if let Some(file) = &self.file {
            write!(f, "{file}: ")?;
        }
        write!(f, "{}", self.path)?;
        if let Some(value) = &self.value {
            write!(f, " = {value}")?;
        }
        write!(f, ": {}", self.rule)
    }
}

/// Every problem of one validation, as one error.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, thiserror::Error)]
#[serde(transparent)]
pub struct Problems(pub Vec<Problem>);

impl fmt::Display for Problems {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, p) in self.0.iter().enumerate() {
            if i > 0 {
                f.write_str("\n")?;
            }
            write!(f, "{p}")?;
        }
        Ok(())
    }
}

/// JSON path helpers: `$`, `.key`, `[index]`.
pub fn key(base: &str, name: &str) -> String {
    format!("{base}.{name}")
}

pub fn index(base: &str, i: usize) -> String {
    format!("{base}[{i}]")
}

//! Validates JSON against the checked-in `docs/protocol.schema.json`.
//!
//! Validator: `boon`, a dev-dependency only (the shipped binary carries no validator). It
//! implements draft 2020-12, which `schemars` emits, uses the `regex` crate Slate already
//! depends on for `pattern`, and resolves only resources it is given (no network). Its cost is
//! `url`/`idna` (ICU normalizer tables) and `fluent-uri`, compiled once for tests. `jsonschema`
//! with default features off was the alternative: it validates the same drafts but its tree is
//! larger (`fancy-regex`, `referencing`, `num-cmp`, `ahash`, email/IDN format checkers) for
//! nothing these tests need.

#![allow(dead_code, reason = "each test file uses part of this module")]

use std::path::Path;

use serde_json::Value;

const LOCATION: &str = "file:///slate/docs/protocol.schema.json";

pub struct ProtocolSchema {
    schemas: boon::Schemas,
    compiler: boon::Compiler,
}

impl ProtocolSchema {
    /// The checked-in schema (not the one generated now: what clients are given is tested).
    pub fn load() -> Self {
        let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("docs/protocol.schema.json");
        let text =
            std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        let document: Value =
            serde_json::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        let mut compiler = boon::Compiler::new();
        compiler
            .add_resource(LOCATION, document)
            .unwrap_or_else(|e| panic!("the protocol schema: {e}"));
        Self {
            schemas: boon::Schemas::new(),
            compiler,
        }
    }

    /// Checks `value` against the schema at JSON pointer `pointer` (`/x-methods/status/result`).
    pub fn check(&mut self, pointer: &str, value: &Value) -> Result<(), String> {
        let index = self
            .compiler
            .compile(&format!("{LOCATION}#{pointer}"), &mut self.schemas)
            .map_err(|e| format!("{pointer}: {e}"))?;
        self.schemas
            .validate(value, index)
            .map_err(|e| format!("{pointer}: {e:#}\n{value}"))
    }

    pub fn result(&mut self, method: &str, value: &Value) -> Result<(), String> {
        self.check(&format!("/x-methods/{method}/result"), value)
    }

    pub fn params(&mut self, method: &str, value: &Value) -> Result<(), String> {
        self.check(&format!("/x-methods/{method}/params"), value)
    }

    pub fn notification(&mut self, value: &Value) -> Result<(), String> {
        self.check("/x-notification", value)
    }

    pub fn error(&mut self, value: &Value) -> Result<(), String> {
        self.check("/x-error", value)
    }
}

//! Logical-model routing policy (spec 002 "Shipped definitions", "Configuration", "Prompt
//! limits"): the six shipped definitions, home `<agentDir>/slate.json` then the trusted
//! project's `.pi/slate.json`, merged and validated as one policy.
//!
//! * Objects merge recursively; arrays, scalars and explicit `null` replace. After the merge a
//!   `null` means "not configured" (it resets a home setting to the shipped default).
//! * Each permitted file is also validated on its own, so an invalid file blocks routing even
//!   when the other file overrides its invalid part. References that only the merge can resolve
//!   (a name added by the other file) are checked on the merged policy.
//! * An untrusted project's file is not read: home over shipped, no project router text.
//! * Every problem is reported, each with its class, file, JSON path and rule. Critical errors
//!   block logical work; legacy keys are named and ignored (warnings).
//! * Root keys other than `router`, `workerExtensions` and the legacy `modelFailover` /
//!   `episodeModel` belong to other features and are not checked here.
//!
//! Parsing is pure: the caller reads the files and passes their bytes with a label.

mod definition;
pub mod extensions;
mod issue;
pub mod json;
pub mod prompt;
mod shipped;
mod validate;

use std::collections::HashSet;

use serde::Serialize;

pub use definition::{
    LogicalModel, Origin, RESERVED_PROVIDERS, effort_name, is_name, is_physical_id,
};
pub use issue::{ErrorClass, RoutingProblem};
pub use prompt::{MAX_PROMPT_CHARACTERS, MAX_PROMPT_LINES, PromptMeasure};
pub use shipped::{
    EVIDENCE_LIMITS, SHIPPED, SHIPPED_COMPRESSOR, ShippedModel, WITHDRAWN, withdrawn,
};

use crate::policy::model::Effort;
use issue::Issue;
use json::{Json, JsonPath};

/// The label used for a path no file supplied.
pub const SHIPPED_LABEL: &str = "shipped";

/// The resolved routing policy: every definition (shipped, after replacements, then added),
/// ordinary membership in configured order, and the compressor list.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct RoutingPolicy {
    pub definitions: Vec<LogicalModel>,
    /// Ordinary membership: `include` (or all six shipped), then added models, minus `exclude`.
    pub ordinary: Vec<String>,
    pub compressor: Vec<CompressorEntry>,
}

impl RoutingPolicy {
    /// The shipped defaults, with no configuration.
    pub fn shipped() -> Self {
        resolve(&SlateFile::absent("home"), &ProjectFile::Absent)
            .policy
            .unwrap_or_else(|| Self {
                definitions: Vec::new(),
                ordinary: Vec::new(),
                compressor: Vec::new(),
            })
    }

    pub fn definition(&self, name: &str) -> Option<&LogicalModel> {
        self.definitions.iter().find(|d| d.model == name)
    }

    /// The definitions of ordinary membership, in configured order.
    pub fn ordinary_definitions(&self) -> impl Iterator<Item = &LogicalModel> {
        self.ordinary
            .iter()
            .filter_map(|name| self.definition(name))
    }
}

/// One compressor entry: a logical model at its own compression effort.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct CompressorEntry {
    pub model: String,
    #[serde(serialize_with = "effort_name")]
    pub effort: Effort,
}

/// A permitted `slate.json`: its label (path) and bytes (`None` when it does not exist).
#[derive(Clone, Copy, Debug)]
pub struct SlateFile<'a> {
    pub label: &'a str,
    pub bytes: Option<&'a [u8]>,
}

impl<'a> SlateFile<'a> {
    pub fn absent(label: &'a str) -> Self {
        Self { label, bytes: None }
    }
}

/// The project's `.pi/slate.json` as trust allows it.
#[derive(Clone, Copy, Debug)]
pub enum ProjectFile<'a> {
    /// No project file, or no project.
    Absent,
    /// The project is trusted: its file (which may still be absent).
    Trusted(SlateFile<'a>),
    /// The project is not trusted: the file at `label` is not read.
    Untrusted { label: &'a str },
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Layer {
    Home,
    Project,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum SourceStatus {
    Applied,
    Absent,
    /// The file has critical errors (it blocks routing).
    Invalid,
    /// The project is not trusted: its file is not read.
    IgnoredUntrusted,
}

/// Where one layer came from and whether it applied.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct RoutingSource {
    pub layer: Layer,
    pub file: String,
    pub status: SourceStatus,
}

/// Everything routing resolution found: the policy (when not blocked), every error and
/// warning, the prompt measure, `workerExtensions` and the evidence limits.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct RoutingReport {
    pub sources: Vec<RoutingSource>,
    /// Critical errors were found: logical work is blocked before dispatch.
    pub blocked: bool,
    /// `None` when blocked.
    pub policy: Option<RoutingPolicy>,
    /// The logical-model prompt section's size (when the definitions were valid).
    pub prompt: Option<PromptMeasure>,
    pub worker_extensions: Vec<String>,
    pub errors: Vec<RoutingProblem>,
    pub warnings: Vec<RoutingProblem>,
    pub evidence_limits: Vec<String>,
}

struct Parsed<'a> {
    label: &'a str,
    root: Json,
}

/// Parse one present file; a problem when it is not a JSON object.
fn parse_file<'a>(file: &SlateFile<'a>, problems: &mut Vec<RoutingProblem>) -> Option<Parsed<'a>> {
    let bytes = file.bytes?;
    let invalid = |rule: String| {
        Issue::new(ErrorClass::InvalidJson, JsonPath::root(), rule).in_file(file.label)
    };
    match json::parse(bytes) {
        Ok(root @ Json::Object(_)) => Some(Parsed {
            label: file.label,
            root,
        }),
        Ok(other) => {
            problems.push(
                Issue::new(
                    ErrorClass::InvalidJson,
                    JsonPath::root(),
                    "must be a JSON object",
                )
                .json(&other)
                .in_file(file.label),
            );
            None
        }
        Err(e) => {
            problems.push(invalid(format!("is not valid JSON: {e}")));
            None
        }
    }
}

/// The sources and the parsed permitted files.
fn parse_files<'a>(
    home: &SlateFile<'a>,
    project: &ProjectFile<'a>,
    problems: &mut Vec<RoutingProblem>,
) -> (Vec<RoutingSource>, Option<Parsed<'a>>, Option<Parsed<'a>>) {
    let mut sources = vec![RoutingSource {
        layer: Layer::Home,
        file: home.label.to_owned(),
        status: if home.bytes.is_some() {
            SourceStatus::Applied
        } else {
            SourceStatus::Absent
        },
    }];
    let home_parsed = parse_file(home, problems);
    let project_parsed = match project {
        ProjectFile::Absent => None,
        ProjectFile::Trusted(file) => {
            sources.push(RoutingSource {
                layer: Layer::Project,
                file: file.label.to_owned(),
                status: if file.bytes.is_some() {
                    SourceStatus::Applied
                } else {
                    SourceStatus::Absent
                },
            });
            parse_file(file, problems)
        }
        ProjectFile::Untrusted { label } => {
            sources.push(RoutingSource {
                layer: Layer::Project,
                file: (*label).to_owned(),
                status: SourceStatus::IgnoredUntrusted,
            });
            None
        }
    };

    (sources, home_parsed, project_parsed)
}

/// Resolve the routing policy from the home file and the project file as trust allows.
pub fn resolve(home: &SlateFile<'_>, project: &ProjectFile<'_>) -> RoutingReport {
    let mut problems: Vec<RoutingProblem> = Vec::new();
    let (sources, home_parsed, project_parsed) = parse_files(home, project, &mut problems);

    // Each permitted file on its own.
    let files: Vec<&Parsed<'_>> = home_parsed.iter().chain(project_parsed.iter()).collect();
    for (i, file) in files.iter().enumerate() {
        let other_added: Vec<String> = files
            .iter()
            .enumerate()
            .filter(|(j, _)| *j != i)
            .flat_map(|(_, f)| validate::added_names(&f.root))
            .collect();
        let (_, issues) = validate::validate(
            &file.root,
            validate::Mode::Local {
                other_added: &other_added,
            },
            &|_| file.label.to_owned(),
        );
        problems.extend(issues.into_iter().map(|issue| issue.in_file(file.label)));
    }

    // The merged policy.
    let empty = Json::Object(json::Object::default());
    let home_root = home_parsed.as_ref().map_or(&empty, |p| &p.root);
    let project_root = project_parsed.as_ref().map_or(&empty, |p| &p.root);
    // Legacy values are named (by the single-file pass) and ignored: they take no part in the
    // merge.
    let merged = json::merge(
        &validate::without_legacy(home_root),
        &validate::without_legacy(project_root),
    );
    let file_of = |path: &JsonPath| -> String {
        if let Some(p) = project_parsed
            .as_ref()
            .filter(|p| p.root.at(&path.0).is_some())
        {
            p.label.to_owned()
        } else if let Some(h) = home_parsed
            .as_ref()
            .filter(|h| h.root.at(&path.0).is_some())
        {
            h.label.to_owned()
        } else {
            SHIPPED_LABEL.to_owned()
        }
    };
    let (policy, issues) = validate::validate(&merged, validate::Mode::Merged, &file_of);
    let mut located: Vec<RoutingProblem> = issues
        .into_iter()
        .map(|issue| {
            let file = file_of(&issue.path);
            issue.in_file(&file)
        })
        .collect();
    let (worker_extensions, extension_issues) = extensions::parse(merged.get("workerExtensions"));
    located.extend(extension_issues.into_iter().map(|issue| {
        let file = file_of(&issue.path);
        issue.in_file(&file)
    }));
    problems.extend(located);

    let mut prompt = None;
    if !problems.iter().any(|p| !p.class.is_warning()) {
        let (measure, issues) = prompt::check(&policy);
        prompt = Some(measure);
        problems.extend(issues.into_iter().map(|issue| {
            let file = file_of(&issue.path);
            issue.in_file(&file)
        }));
        if policy.ordinary.is_empty() {
            problems.push(
                Issue::new(
                    ErrorClass::EmptyPool,
                    JsonPath::root().key("router").key("models"),
                    "the ordinary pool is empty: no logical model can be selected for a thread",
                )
                .in_file(&file_of(&JsonPath::root().key("router").key("models"))),
            );
        }
    }

    finish(sources, policy, prompt, worker_extensions, problems)
}

/// Split, deduplicate and attribute problems, and mark invalid sources.
fn finish(
    mut sources: Vec<RoutingSource>,
    policy: RoutingPolicy,
    prompt: Option<PromptMeasure>,
    worker_extensions: Vec<String>,
    problems: Vec<RoutingProblem>,
) -> RoutingReport {
    let mut errors: Vec<RoutingProblem> = Vec::new();
    let mut warnings: Vec<RoutingProblem> = Vec::new();
    let mut seen: HashSet<String> = HashSet::new();
    for problem in problems {
        // The single-file and merged passes can find the same problem: report it once.
        if !seen.insert(problem.to_string()) {
            continue;
        }
        if problem.class.is_warning() {
            warnings.push(problem);
        } else {
            errors.push(problem);
        }
    }
    for source in &mut sources {
        if source.status == SourceStatus::Applied
            && errors
                .iter()
                .any(|e| e.problem.file.as_deref() == Some(source.file.as_str()))
        {
            source.status = SourceStatus::Invalid;
        }
    }
    let blocked = !errors.is_empty();
    RoutingReport {
        sources,
        blocked,
        policy: (!blocked).then_some(policy),
        prompt,
        worker_extensions,
        errors,
        warnings,
        evidence_limits: EVIDENCE_LIMITS.iter().map(|s| (*s).to_owned()).collect(),
    }
}

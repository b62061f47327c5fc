//! Validation of one `router` object (`router.models` include/exclude/add/replace and
//! `router.compressor.models`) into a [`RoutingPolicy`], reporting every problem.

use std::collections::HashSet;

use super::definition::{FIELDS, LogicalModel, Origin, Supplied, effort, model_name, parse_fields};
use super::issue::{ErrorClass, Issue};
use super::json::{Json, JsonPath};
use super::shipped::{SHIPPED, SHIPPED_COMPRESSOR, shipped, withdrawn};
use super::{CompressorEntry, RoutingPolicy};

mod replace;

/// Which validation runs.
#[derive(Clone, Copy, Debug)]
pub enum Mode<'a> {
    /// One permitted file on its own. Names added by the other file count as known, so a
    /// reference that only the merge resolves is not an error here; legacy keys are named.
    Local { other_added: &'a [String] },
    /// The merged `router`, validated as one policy.
    Merged,
}

const ROUTER_KEYS: [&str; 2] = ["models", "compressor"];
const LEGACY_ROUTER_KEYS: [&str; 2] = ["allowUnmeasuredEffort", "showWarnings"];
const LEGACY_ROOT_KEYS: [&str; 2] = ["modelFailover", "episodeModel"];
const MODELS_KEYS: [&str; 4] = ["include", "exclude", "add", "replace"];

/// `root` without its legacy values, so an ignored value has no effect at all: a project's
/// array-form `router.models` does not replace home's object form in the merge.
pub fn without_legacy(root: &Json) -> Json {
    let Json::Object(members) = root else {
        return root.clone();
    };
    let members = members
        .iter()
        .filter(|(k, _)| !LEGACY_ROOT_KEYS.contains(&k.as_str()))
        .map(|(k, v)| match (k.as_str(), v) {
            ("router", Json::Object(router)) => (
                k.clone(),
                Json::Object(
                    router
                        .iter()
                        .filter(|(rk, rv)| !is_legacy_router_member(rk, rv))
                        .cloned()
                        .collect(),
                ),
            ),
            _ => (k.clone(), v.clone()),
        })
        .collect();
    Json::Object(members)
}

fn is_legacy_router_member(key: &str, value: &Json) -> bool {
    LEGACY_ROUTER_KEYS.contains(&key) || (key == "models" && matches!(value, Json::Array(_)))
}

/// The names an `add` array defines (valid names only), for [`Mode::Local`] of the other file.
pub fn added_names(root: &Json) -> Vec<String> {
    let Some(Json::Array(adds)) = root
        .get("router")
        .and_then(|r| r.get("models"))
        .and_then(|m| m.get("add"))
    else {
        return Vec::new();
    };
    adds.iter()
        .filter_map(|a| match a.get("model") {
            Some(Json::String(s)) => Some(s.clone()),
            _ => None,
        })
        .collect()
}

/// Validate the `router` of `root`. `file_of` names the file that supplied a path (for field
/// attribution). Returns the policy (meaningful only when no critical issue was found) and
/// every issue, warnings included.
pub fn validate(
    root: &Json,
    mode: Mode<'_>,
    file_of: &dyn Fn(&JsonPath) -> String,
) -> (RoutingPolicy, Vec<Issue>) {
    let mut v = Validator {
        mode,
        issues: Vec::new(),
        added: Vec::new(),
        file_of,
    };
    let policy = v.root(root);
    (policy, v.issues)
}

struct Validator<'a> {
    mode: Mode<'a>,
    issues: Vec<Issue>,
    /// Every name an `add` entry gives (valid or not) plus, locally, the other file's.
    added: Vec<String>,
    file_of: &'a dyn Fn(&JsonPath) -> String,
}

fn shipped_policy() -> RoutingPolicy {
    RoutingPolicy {
        definitions: SHIPPED.iter().map(LogicalModel::from_shipped).collect(),
        ordinary: SHIPPED.iter().map(|m| m.model.to_owned()).collect(),
        compressor: shipped_compressor(),
    }
}

fn shipped_compressor() -> Vec<CompressorEntry> {
    SHIPPED_COMPRESSOR
        .iter()
        .map(|(model, effort)| CompressorEntry {
            model: (*model).to_owned(),
            effort: *effort,
        })
        .collect()
}

/// `None` and explicit `null` both mean "not configured" after the merge.
fn configured(value: Option<&Json>) -> Option<&Json> {
    value.filter(|v| **v != Json::Null)
}

impl Validator<'_> {
    fn local(&self) -> bool {
        matches!(self.mode, Mode::Local { .. })
    }

    fn push(&mut self, issue: Issue) {
        self.issues.push(issue);
    }

    fn legacy(&mut self, path: JsonPath, value: &Json, what: &str) {
        if self.local() {
            self.push(
                Issue::new(
                    ErrorClass::LegacyIgnored,
                    path,
                    format!("{what} is a legacy setting: it is named and ignored (Slate performs no automatic migration)"),
                )
                .json(value),
            );
        }
    }

    /// Members of an object, reporting repeated and unknown keys; legacy keys are skipped.
    fn members<'j>(
        &mut self,
        members: &'j [(String, Json)],
        path: &JsonPath,
        known: &[&str],
        legacy: &[&str],
    ) -> Vec<(&'j str, &'j Json)> {
        let mut out: Vec<(&str, &Json)> = Vec::new();
        for (name, value) in members {
            let at = path.key(name);
            if out.iter().any(|(k, _)| k == name) {
                self.push(
                    Issue::new(
                        ErrorClass::DuplicateName,
                        at,
                        format!("the key `{name}` is given more than once"),
                    )
                    .json(value),
                );
                continue;
            }
            if legacy.contains(&name.as_str()) {
                self.legacy(at, value, &format!("`{path}.{name}`"));
                continue;
            }
            if !known.contains(&name.as_str()) {
                self.push(
                    Issue::new(
                        ErrorClass::UnknownField,
                        at,
                        format!("unknown field `{name}` (known: `{}`)", known.join("`, `")),
                    )
                    .json(value),
                );
                continue;
            }
            out.push((name, value));
        }
        out
    }

    fn root(&mut self, root: &Json) -> RoutingPolicy {
        let mut policy = shipped_policy();
        let Json::Object(_) = root else {
            return policy;
        };
        for name in LEGACY_ROOT_KEYS {
            if let Some(value) = root.get(name) {
                self.legacy(JsonPath::root().key(name), value, &format!("`$.{name}`"));
            }
        }
        let path = JsonPath::root().key("router");
        let Some(router) = configured(root.get("router")) else {
            return policy;
        };
        let Json::Object(members) = router else {
            self.push(
                Issue::new(ErrorClass::InvalidValue, path, "`router` must be an object")
                    .json(router),
            );
            return policy;
        };
        let members = self.members(members, &path, &ROUTER_KEYS, &LEGACY_ROUTER_KEYS);
        let get = |k: &str| configured(members.iter().find(|(n, _)| *n == k).map(|m| m.1));
        if let Some(models) = get("models") {
            self.models(models, &path.key("models"), &mut policy);
        }
        if let Some(compressor) = get("compressor") {
            let known = policy
                .definitions
                .iter()
                .map(|d| d.model.clone())
                .collect::<Vec<_>>();
            policy.compressor = self.compressor(compressor, &path.key("compressor"), &known);
        }
        policy
    }

    fn models(&mut self, models: &Json, path: &JsonPath, policy: &mut RoutingPolicy) {
        let members = match models {
            Json::Array(_) => {
                self.legacy(path.clone(), models, "array-form `router.models`");
                return;
            }
            Json::Object(members) => self.members(members, path, &MODELS_KEYS, &[]),
            other => {
                self.push(
                    Issue::new(
                        ErrorClass::InvalidValue,
                        path.clone(),
                        "`router.models` must be an object with `include`, `exclude`, `add` and `replace`",
                    )
                    .json(other),
                );
                return;
            }
        };
        let get = |k: &str| configured(members.iter().find(|(n, _)| *n == k).map(|m| m.1));

        let (added, mut added_names) =
            get("add").map_or_else(Default::default, |a| self.adds(a, &path.key("add")));
        if let Mode::Local { other_added } = self.mode {
            added_names.extend(other_added.iter().cloned());
        }
        self.added.clone_from(&added_names);
        if let Some(replace) = get("replace") {
            self.replaces(replace, &path.key("replace"), &added_names, policy);
        }
        policy.definitions.extend(added.iter().cloned());

        let include =
            get("include").map(|v| self.names(v, &path.key("include"), "include", &added_names));
        let exclude = get("exclude")
            .map(|v| self.names(v, &path.key("exclude"), "exclude", &added_names))
            .unwrap_or_default();
        let mut ordinary = include.unwrap_or_else(|| policy.ordinary.clone());
        for model in &added {
            if !ordinary.contains(&model.model) {
                ordinary.push(model.model.clone());
            }
        }
        ordinary.retain(|m| !exclude.contains(m));
        policy.ordinary = ordinary;
    }

    /// `include` or `exclude`: known names, each once.
    fn names(
        &mut self,
        value: &Json,
        path: &JsonPath,
        position: &str,
        added: &[String],
    ) -> Vec<String> {
        let Json::Array(items) = value else {
            self.push(
                Issue::new(
                    ErrorClass::InvalidValue,
                    path.clone(),
                    format!("`{position}` must be an array of logical model names"),
                )
                .json(value),
            );
            return Vec::new();
        };
        let mut out: Vec<String> = Vec::new();
        for (i, item) in items.iter().enumerate() {
            let at = path.index(i);
            let Json::String(name) = item else {
                self.push(
                    Issue::new(
                        ErrorClass::InvalidValue,
                        at,
                        "must be a logical model name string",
                    )
                    .json(item),
                );
                continue;
            };
            if out.contains(name) {
                self.push(
                    Issue::new(
                        ErrorClass::DuplicateName,
                        at,
                        format!("`{name}` is named more than once in `{position}`"),
                    )
                    .json(item),
                );
                continue;
            }
            if shipped(name).is_none() && !added.contains(name) {
                self.unknown_model(at, name, position);
                continue;
            }
            out.push(name.clone());
        }
        out
    }

    fn unknown_model(&mut self, at: JsonPath, name: &str, position: &str) {
        let rule = match withdrawn(name) {
            Some(Some(new)) => format!(
                "`{position}` names an unknown model `{name}`: it is a withdrawn shipped name; \
                 use `{new}` (Slate provides no automatic alias)"
            ),
            Some(None) => format!(
                "`{position}` names an unknown model `{name}`: it is a withdrawn shipped name \
                 with no replacement"
            ),
            None => format!(
                "`{position}` names an unknown model `{name}`: it is neither a shipped \
                 definition ({}) nor added by `router.models.add`",
                SHIPPED.map(|m| m.model).join(", ")
            ),
        };
        self.push(Issue::new(ErrorClass::UnknownReference, at, rule).value(name));
    }

    fn entry_members<'j>(
        &mut self,
        item: &'j Json,
        at: &JsonPath,
        what: &str,
    ) -> Option<&'j [(String, Json)]> {
        if let Json::Object(members) = item {
            Some(members)
        } else {
            self.push(
                Issue::new(
                    ErrorClass::InvalidValue,
                    at.clone(),
                    format!("{what} must be an object"),
                )
                .json(item),
            );
            None
        }
    }

    fn array<'j>(&mut self, value: &'j Json, path: &JsonPath, what: &str) -> &'j [Json] {
        if let Json::Array(items) = value {
            items
        } else {
            self.push(
                Issue::new(
                    ErrorClass::InvalidValue,
                    path.clone(),
                    format!("{what} must be an array"),
                )
                .json(value),
            );
            &[]
        }
    }

    /// The valid added definitions, and every name an entry gives (valid or not), so that a
    /// reference to a broken entry is not reported a second time as unknown.
    fn adds(&mut self, value: &Json, path: &JsonPath) -> (Vec<LogicalModel>, Vec<String>) {
        let mut out: Vec<LogicalModel> = Vec::new();
        let mut names: Vec<String> = Vec::new();
        for (i, item) in self.array(value, path, "`add`").iter().enumerate() {
            let at = path.index(i);
            let Some(members) = self.entry_members(item, &at, "an `add` entry") else {
                continue;
            };
            let before = self.issues.len();
            let s = parse_fields(members, &at, &mut self.issues);
            let missing: Vec<&str> = FIELDS
                .iter()
                .copied()
                .filter(|f| !s.present.contains(f))
                .collect();
            if !missing.is_empty() {
                self.push(Issue::new(
                    ErrorClass::IncompleteDefinition,
                    at.clone(),
                    format!(
                        "an `add` entry requires exactly the eight fields `{}`; missing `{}`",
                        FIELDS.join("`, `"),
                        missing.join("`, `")
                    ),
                ));
            }
            if let Some(name) = &s.model {
                if shipped(name).is_some() {
                    self.push(
                        Issue::new(
                            ErrorClass::DuplicateName,
                            at.key("model"),
                            format!("`{name}` is already a shipped definition: `add` needs a new name; use `replace` to change it"),
                        )
                        .value(name),
                    );
                } else if names.contains(name) {
                    self.push(
                        Issue::new(
                            ErrorClass::DuplicateName,
                            at.key("model"),
                            format!("`{name}` is added more than once"),
                        )
                        .value(name),
                    );
                }
                names.push(name.clone());
            }
            self.preferred_in_map(&s, s.providers.as_deref(), &at);
            if self.issues.len() != before {
                continue;
            }
            let file = (self.file_of)(&at);
            if let Some(model) = complete(s, &file, at) {
                out.push(model);
            }
        }
        (out, names)
    }

    /// A supplied (or kept) preferred provider must be a key of the (resulting) provider map.
    fn preferred_in_map(
        &mut self,
        s: &Supplied,
        providers: Option<&[(String, String)]>,
        at: &JsonPath,
    ) {
        let (Some(preferred), Some(providers)) = (&s.preferred_provider, providers) else {
            return;
        };
        if !providers.iter().any(|(p, _)| p == preferred) {
            let keys: Vec<&str> = providers.iter().map(|(p, _)| p.as_str()).collect();
            // A kept preferred provider is not in the file: the new map is what broke it.
            let (field, which) = if s.present.contains(&"preferredProvider") {
                ("preferredProvider", "the preferred provider")
            } else {
                ("providers", "the kept preferred provider")
            };
            self.push(
                Issue::new(
                    ErrorClass::UnknownReference,
                    at.key(field),
                    format!(
                        "{which} `{preferred}` must be a key of `providers` ({})",
                        keys.join(", ")
                    ),
                )
                .value(preferred),
            );
        }
    }

    fn compressor(
        &mut self,
        value: &Json,
        path: &JsonPath,
        known: &[String],
    ) -> Vec<CompressorEntry> {
        let Json::Object(members) = value else {
            self.push(
                Issue::new(
                    ErrorClass::InvalidValue,
                    path.clone(),
                    "`router.compressor` must be an object with `models`",
                )
                .json(value),
            );
            return shipped_compressor();
        };
        let members = self.members(members, path, &["models"], &[]);
        let Some(models) = configured(members.first().map(|m| m.1)) else {
            return shipped_compressor();
        };
        let path = path.key("models");
        let items = self.array(models, &path, "`router.compressor.models`");
        if items.is_empty() && matches!(models, Json::Array(_)) {
            self.push(Issue::new(
                ErrorClass::EmptyCompressor,
                path.clone(),
                "an explicit empty compressor list is a blocking error: no hidden compressor follows it; omit the key to inherit `claude-sonnet-5.5` at `medium`",
            ).json(models));
        }
        let mut known: HashSet<String> = known.iter().cloned().collect();
        known.extend(self.added.iter().cloned());
        if let Mode::Local { other_added } = self.mode {
            known.extend(other_added.iter().cloned());
        }
        let mut out: Vec<CompressorEntry> = Vec::new();
        let mut listed: HashSet<String> = HashSet::new();
        for (i, item) in items.iter().enumerate() {
            let at = path.index(i);
            let Some(members) = self.entry_members(item, &at, "a compressor entry") else {
                continue;
            };
            let members = self.members(members, &at, &["model", "effort"], &[]);
            let get = |k: &str| members.iter().find(|(n, _)| *n == k).map(|m| m.1);
            let missing: Vec<&str> = ["model", "effort"]
                .into_iter()
                .filter(|k| get(k).is_none())
                .collect();
            if !missing.is_empty() {
                self.push(Issue::new(
                    ErrorClass::IncompleteDefinition,
                    at.clone(),
                    format!(
                        "a compressor entry requires `model` and `effort`; missing `{}`",
                        missing.join("`, `")
                    ),
                ));
            }
            let model =
                get("model").and_then(|m| model_name(m, &at.key("model"), &mut self.issues));
            let effort = get("effort").and_then(|e| effort(e, &at.key("effort"), &mut self.issues));
            let Some(model) = model else { continue };
            if !known.contains(&model) {
                self.unknown_model(at.key("model"), &model, "compressor");
                continue;
            }
            if !listed.insert(model.clone()) {
                self.push(
                    Issue::new(
                        ErrorClass::DuplicateName,
                        at.key("model"),
                        format!("`{model}` is listed more than once in the compressor list"),
                    )
                    .value(&model),
                );
                continue;
            }
            if let Some(effort) = effort {
                out.push(CompressorEntry { model, effort });
            }
        }
        out
    }
}

/// A complete `add` entry as a definition (`None` when a field is missing).
fn complete(s: Supplied, file: &str, at: JsonPath) -> Option<LogicalModel> {
    Some(LogicalModel {
        model: s.model?,
        effort: s.effort?,
        capability_rating: s.capability_rating?,
        cost_rating: s.cost_rating?,
        preferred_provider: s.preferred_provider?,
        providers: s.providers?,
        guidelines: s.guidelines?,
        cautions: s.cautions?,
        origin: Origin::Added,
        sources: FIELDS
            .iter()
            .map(|f| ((*f).to_owned(), file.to_owned()))
            .collect(),
        defined_at: Some(at),
    })
}

//! Which of the host session's extensions every worker loads too (`workerExtensions`, spec 000
//! "Worker extensions").
//!
//! Slate's extension in the user's pi session reports the load units its host has loaded
//! (`hostExtensions`, from pi's `getAllTools()` provenance: each tool's `sourceInfo`), once per
//! session; the coordinator selects from them here with the session's `workerExtensions`
//! patterns (`policy::routing::extensions`, matched unanchored against the unit's source
//! spec, its path and each contributed tool's entry path). Every worker started afterwards
//! loads each selected unit by its absolute path after Slate's own extension, and its tools
//! are named in the worker's `--tools` on top of the builtins. The extension only reports; the
//! decision, its reasons and the doctrine line the main session adds to its system prompt are
//! made here.
//!
//! A matched unit is withheld, with the reason, when it registers no tools (it cannot be
//! whitelisted), registers `codemode` or any of Slate's own tool names (a worker must never
//! obtain a second provider of Slate's tools, and Slate's own extension is loaded separately),
//! is built into pi (workers run `-ne --no-mcp`; pi's built-ins are not host extensions to
//! copy), or has no absolute path to load it from. A host started with extensions disabled
//! reports nothing and so offers nothing.

use std::path::PathBuf;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::policy::routing::extensions::selects;

/// The most load units one report may list.
pub const MAX_UNITS: usize = 256;
/// The most tools one unit may list.
pub const MAX_TOOLS: usize = 256;
/// The longest source spec, path or tool name, in UTF-8 bytes.
pub const MAX_TEXT: usize = 4096;

/// Tool names that belong to Slate: a unit registering one is never loaded into a worker.
pub const SLATE_TOOL_NAMES: [&str; 4] = [
    "delegate_task",
    "delegate_coordinate",
    "submit_result",
    "subagent",
];

/// One extension load unit the host session has loaded, as pi records it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct HostUnit {
    /// The recorded source spec (`npm:pi-web-search@1.3.1`, `local`, `builtin`, …).
    pub source: String,
    /// The load unit's path: the file pi loaded.
    pub path: String,
    /// The tools the unit registered.
    pub tools: Vec<HostTool>,
}

/// One tool a host unit registered.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct HostTool {
    pub name: String,
    /// The tool's entry path (pi's `sourceInfo.path`).
    pub path: String,
}

/// A unit every worker loads.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct WorkerExtension {
    pub source: String,
    /// Absolute: given to pi as `-e <path>`.
    pub path: PathBuf,
    /// Named in the worker's `--tools` (pi's ceiling for extension tools too).
    pub tools: Vec<String>,
}

/// A unit a pattern matched that no worker loads, and why.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Withheld {
    pub source: String,
    pub path: String,
    pub reason: String,
}

/// The session's decision.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Selection {
    pub selected: Vec<WorkerExtension>,
    pub withheld: Vec<Withheld>,
}

/// The first bound a report breaks, as `(JSON path, rule)`.
pub fn check(units: &[HostUnit]) -> Result<(), (String, String)> {
    if units.len() > MAX_UNITS {
        return Err((
            "$.units".to_owned(),
            format!("at most {MAX_UNITS} load units"),
        ));
    }
    let text = |path: String, s: &str| {
        if s.is_empty() || s.len() > MAX_TEXT || s.chars().any(char::is_control) {
            Err((
                path,
                format!("must be 1..={MAX_TEXT} bytes without control characters"),
            ))
        } else {
            Ok(())
        }
    };
    for (i, unit) in units.iter().enumerate() {
        text(format!("$.units[{i}].source"), &unit.source)?;
        text(format!("$.units[{i}].path"), &unit.path)?;
        if unit.tools.len() > MAX_TOOLS {
            return Err((
                format!("$.units[{i}].tools"),
                format!("at most {MAX_TOOLS} tools"),
            ));
        }
        for (j, tool) in unit.tools.iter().enumerate() {
            text(format!("$.units[{i}].tools[{j}].name"), &tool.name)?;
            text(format!("$.units[{i}].tools[{j}].path"), &tool.path)?;
        }
    }
    Ok(())
}

/// Selects, in report order, the units `patterns` match (each unit once, by path).
pub fn select(patterns: &[String], units: &[HostUnit]) -> Selection {
    let mut selection = Selection::default();
    if patterns.is_empty() {
        return selection;
    }
    let mut seen = std::collections::HashSet::new();
    for unit in units {
        if !seen.insert(unit.path.as_str()) {
            continue;
        }
        let mut candidates = vec![unit.source.as_str(), unit.path.as_str()];
        candidates.extend(unit.tools.iter().map(|t| t.path.as_str()));
        if !selects(patterns, &candidates) {
            continue;
        }
        match withheld_because(unit) {
            Some(reason) => selection.withheld.push(Withheld {
                source: unit.source.clone(),
                path: unit.path.clone(),
                reason,
            }),
            None => selection.selected.push(WorkerExtension {
                source: unit.source.clone(),
                path: PathBuf::from(&unit.path),
                tools: unit.tools.iter().map(|t| t.name.clone()).collect(),
            }),
        }
    }
    selection
}

fn withheld_because(unit: &HostUnit) -> Option<String> {
    if unit.tools.is_empty() {
        return Some("registers no tools, so it cannot be whitelisted".to_owned());
    }
    if unit.tools.iter().any(|t| t.name == "codemode") {
        return Some("registers `codemode`; Slate withholds any unit that does".to_owned());
    }
    if let Some(own) = unit
        .tools
        .iter()
        .find(|t| SLATE_TOOL_NAMES.contains(&t.name.as_str()))
    {
        return Some(format!(
            "registers Slate's own tool `{}`; workers get Slate's tools only from Slate",
            own.name
        ));
    }
    if unit.source == "builtin" || unit.path.starts_with("builtin:") {
        return Some("is built into pi; workers run without pi's built-in extensions".to_owned());
    }
    if !std::path::Path::new(&unit.path).is_absolute() {
        return Some("has no absolute path to load it from".to_owned());
    }
    None
}

/// The main session's doctrine line naming each whitelisted extension and its tools, so its
/// model knows what it can delegate (`None` without any).
pub fn doctrine(selected: &[WorkerExtension]) -> Option<String> {
    if selected.is_empty() {
        return None;
    }
    let units: Vec<String> = selected
        .iter()
        .map(|u| format!("{} ({})", u.source, u.tools.join(", ")))
        .collect();
    Some(format!(
        "Slate workers also load these host extensions (workerExtensions), on top of their \
         profile's tools: {}. Delegate work that needs those tools.",
        units.join("; ")
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn unit(source: &str, path: &str, tools: &[&str]) -> HostUnit {
        HostUnit {
            source: source.to_owned(),
            path: path.to_owned(),
            tools: tools
                .iter()
                .map(|name| HostTool {
                    name: (*name).to_owned(),
                    path: path.to_owned(),
                })
                .collect(),
        }
    }

    fn patterns(p: &[&str]) -> Vec<String> {
        p.iter().map(|s| (*s).to_owned()).collect()
    }

    #[test]
    fn a_bare_package_name_selects_its_unit_unanchored() {
        let units = [
            unit(
                "npm:pi-web-search@1.3.1",
                "/n/pi-web-search/index.ts",
                &["web_search"],
            ),
            unit("npm:other@1.0.0", "/n/other/index.ts", &["other_tool"]),
        ];
        let s = select(&patterns(&["pi-web-search"]), &units);
        assert_eq!(
            s.selected,
            vec![WorkerExtension {
                source: "npm:pi-web-search@1.3.1".into(),
                path: "/n/pi-web-search/index.ts".into(),
                tools: vec!["web_search".into()],
            }]
        );
        assert!(s.withheld.is_empty());
    }

    #[test]
    fn no_patterns_offer_nothing() {
        let units = [unit("local", "/x/a.ts", &["a"])];
        assert_eq!(select(&[], &units), Selection::default());
    }

    #[test]
    fn a_tool_entry_path_matches_too() {
        let mut u = unit("local", "/x/a.ts", &["a"]);
        u.tools[0].path = "/x/tools/fetcher.ts".into();
        assert_eq!(select(&patterns(&["fetcher"]), &[u]).selected.len(), 1);
    }

    #[test]
    fn matched_units_are_withheld_with_the_reason() {
        let units = [
            unit("local", "/x/none.ts", &[]),
            unit("local", "/x/cm.ts", &["codemode"]),
            unit("local", "/x/slate/index.ts", &["delegate_task"]),
            unit("builtin", "builtin:mcp", &["mcp"]),
            unit("local", "relative/x.ts", &["y"]),
        ];
        let s = select(&patterns(&["x", "mcp"]), &units);
        assert!(s.selected.is_empty());
        let reasons: Vec<&str> = s.withheld.iter().map(|w| w.reason.as_str()).collect();
        assert_eq!(reasons.len(), 5, "{reasons:?}");
        assert!(reasons[0].contains("registers no tools"));
        assert!(reasons[1].contains("`codemode`"));
        assert!(reasons[2].contains("Slate's own tool `delegate_task`"));
        assert!(reasons[3].contains("built into pi"));
        assert!(reasons[4].contains("absolute path"));
    }

    #[test]
    fn each_unit_once() {
        let u = unit("local", "/x/a.ts", &["a"]);
        assert_eq!(select(&patterns(&["a"]), &[u.clone(), u]).selected.len(), 1);
    }

    #[test]
    fn bounds_name_the_field() {
        let mut u = unit("local", "/x/a.ts", &["a"]);
        u.tools[0].name = "bad\u{1b}name".into();
        let (path, rule) = check(&[u]).unwrap_err();
        assert_eq!(path, "$.units[0].tools[0].name");
        assert!(rule.contains("control characters"));
        let many: Vec<HostUnit> = (0..=MAX_UNITS)
            .map(|i| unit("local", &format!("/x/{i}.ts"), &["t"]))
            .collect();
        assert_eq!(check(&many).unwrap_err().0, "$.units");
    }

    #[test]
    fn the_doctrine_names_each_unit_and_its_tools() {
        let s = select(
            &patterns(&["web"]),
            &[unit(
                "npm:pi-web@1",
                "/n/web.ts",
                &["web_search", "fetch_url"],
            )],
        );
        let line = doctrine(&s.selected).unwrap();
        assert!(
            line.contains("npm:pi-web@1 (web_search, fetch_url)"),
            "{line}"
        );
        assert_eq!(doctrine(&[]), None);
    }
}

//! `slate effective [--recovery MODEL]`: the effective routing policy for this directory —
//! ordinary membership, definitions, fixed efforts, exact permissions, configured preferred
//! providers (apart from remembered successful ones), compressor order, errors, warnings,
//! evidence limits and `workerExtensions`; never any credential. Exit 2 when routing is blocked.
//!
//! With `--parent ID` it also asks that running session (`routingFacts`) for what only the
//! session knows: its remembered successful providers, and the host pi's model registry as pi
//! last reported it. From those it says which permitted routes this pi can use, and warns
//! (on stderr) when none can: the next handoff would pause its successor.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::PathBuf;

use serde::Serialize;

use crate::cli::{Error, ExitCode, Printer};
use crate::config::routing::{LoadedRouting, load_routing};
use crate::control::session_routing::{HostModel, RoutingFacts, RoutingFactsParams};
use crate::policy::recovery::{
    RecoveryStop, Remembered, RouteAttempt, compressor_plan, initial_route, ordinary_recovery,
    reverse_map,
};
use crate::policy::routing::{
    LogicalModel, RoutingPolicy, RoutingProblem, RoutingReport, SourceStatus,
};
use crate::policy::trust::TrustDecision;
use crate::text::SafeText;

/// Why the remembered section is empty here.
const REMEMBERED_NOTE: &str = "Remembered successful providers belong to a running session \
(only a successful action publishes one; reopening, replacement and handoff clear them). Slate \
persists no remembered-provider store, and this command runs outside any session, so none are \
shown.";

/// What the remembered section shows with `--parent`.
const SESSION_NOTE: &str = "This session's memory: only a successful logical action publishes \
a provider; reopening, replacement and handoff clear them.";

/// The JSON answer (schema in docs/routing.md).
#[derive(Clone, Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct EffectiveView {
    pub cwd: PathBuf,
    pub agent_dir: PathBuf,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub project_trust: Option<TrustDecision>,
    #[serde(flatten)]
    pub report: RoutingReport,
    /// Configured preferred provider of each definition (from the definitions, never from
    /// session memory).
    pub preferred_providers: BTreeMap<String, String>,
    /// Remembered successful providers of the session named by `--parent`; empty without it
    /// (see `rememberedNote`).
    pub remembered_providers: BTreeMap<String, String>,
    pub remembered_note: &'static str,
    /// With `--parent`: the session's parent id, whose facts these are.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub session: Option<String>,
    /// With `--parent`, once the session's host pi reported its registry: the permitted routes
    /// and what pi has of each.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub host_routes: Option<HostRoutes>,
    /// The compressor list expanded into exact routes, in the order compression tries them.
    pub compressor_routes: Vec<RouteAttempt>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub recovery: Option<RecoveryView>,
}

/// `--recovery MODEL`: the first route of an action and the order after it fails.
#[derive(Clone, Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct RecoveryView {
    /// What was asked: a logical model name or an exact `provider/id` route.
    pub from: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub failed: Option<RouteAttempt>,
    pub attempts: Vec<RouteAttempt>,
    /// Set when recovery would stop and ask for a model choice instead.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub stop: Option<RecoveryStop>,
}

/// The exact routes routing permits (ordinary membership), as the host pi has them.
#[derive(Clone, Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct HostRoutes {
    pub routes: Vec<HostRoute>,
    /// At least one route is in pi's registry with credentials.
    pub usable: bool,
    /// When none is usable (and routing permits any): why that matters and the fix.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub warning: Option<String>,
}

/// One permitted route and what the host pi has of it.
#[derive(Clone, Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct HostRoute {
    /// The logical model that permits it.
    pub model: String,
    pub provider: String,
    pub id: String,
    pub state: RouteState,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum RouteState {
    /// In pi's registry, with credentials.
    Usable,
    /// In pi's registry, without credentials.
    NoCredentials,
    /// Not in pi's registry.
    NotInRegistry,
}

impl RouteState {
    fn words(self) -> &'static str {
        match self {
            RouteState::Usable => "usable",
            RouteState::NoCredentials => "no credentials",
            RouteState::NotInRegistry => "not in pi's models",
        }
    }
}

/// Each route routing permits, against the host's registry; the warning when none is usable.
pub fn host_routes(policy: Option<&RoutingPolicy>, models: &[HostModel]) -> HostRoutes {
    let mut routes = Vec::new();
    for name in policy.map(|p| p.ordinary.as_slice()).unwrap_or_default() {
        let Some(d) = policy.and_then(|p| p.definition(name)) else {
            continue;
        };
        for (provider, id) in &d.providers {
            let found = models
                .iter()
                .filter(|m| &m.provider == provider && &m.id == id)
                .map(|m| m.credentials)
                .max();
            let state = match found {
                Some(true) => RouteState::Usable,
                Some(false) => RouteState::NoCredentials,
                None => RouteState::NotInRegistry,
            };
            routes.push(HostRoute {
                model: d.model.clone(),
                provider: provider.clone(),
                id: id.clone(),
                state,
            });
        }
    }
    let usable = routes.iter().any(|r| r.state == RouteState::Usable);
    let warning = (!usable && !routes.is_empty()).then(|| {
        let mut text = format!(
            "routing: none of the {} routes routing permits is usable in this pi, so a handoff \
             pauses its successor (adoption) until one is:",
            routes.len()
        );
        for r in &routes {
            let _ = write!(
                text,
                "\n  - {}/{} ({}: {})",
                safe(&r.provider),
                safe(&r.id),
                r.model,
                r.state.words()
            );
        }
        text.push_str(
            "\nFix: configure one of these in pi (/login, models.json), or permit a model pi \
             has in slate.json (/slate handoff shows the entry for the current model).",
        );
        text
    });
    HostRoutes {
        routes,
        usable,
        warning,
    }
}

/// `routingFacts` of the session with parent id `parent`.
fn session_facts(parent: String) -> Result<RoutingFacts, Error> {
    crate::cli::fleet::block_on(async move {
        let client = crate::cli::fleet::connect(Some(parent)).await?;
        Ok(
            client
                .request::<crate::control::methods::method::RoutingFacts>(
                    &RoutingFactsParams::default(),
                )
                .await?,
        )
    })
}

pub fn run(
    printer: &Printer,
    approve: Option<bool>,
    recovery: Option<&str>,
    parent: Option<String>,
) -> Result<ExitCode, Error> {
    let cwd = std::env::current_dir()
        .map_err(|e| Error::Environment(format!("the current directory cannot be read: {e}")))?;
    let loaded = load_routing(&cwd, approve).map_err(|problems| {
        Error::problems("the routing configuration cannot be loaded", problems)
    })?;
    let recovery_view = match (recovery, &loaded.report.policy) {
        (None, _) => None,
        (Some(_), None) => {
            if !printer.json() {
                printer.err_line("--recovery: no order while routing is blocked");
            }
            None
        }
        (Some(from), Some(policy)) => Some(recovery_for(policy, from).map_err(Error::Usage)?),
    };
    let facts = parent.clone().map(session_facts).transpose()?;
    let mut view = view(loaded, recovery_view);
    if let Some(facts) = facts {
        view.remembered_providers = facts.remembered_providers;
        view.remembered_note = SESSION_NOTE;
        view.host_routes = facts
            .host_models
            .map(|models| host_routes(view.report.policy.as_ref(), &models));
        view.session = parent;
    }
    if printer.json() {
        printer.value(&view)?;
    } else {
        printer.out(&render(&view))?;
        if let Some(warning) = view.host_routes.as_ref().and_then(|h| h.warning.as_ref()) {
            printer.err_line(warning);
        }
    }
    // Blocked routing is the answer, printed in full, and exits 2.
    if view.report.blocked {
        Ok(ExitCode::Usage)
    } else {
        Ok(ExitCode::Ok)
    }
}

fn view(loaded: LoadedRouting, recovery: Option<RecoveryView>) -> EffectiveView {
    let remembered = Remembered::new();
    let (preferred_providers, compressor_routes) =
        loaded
            .report
            .policy
            .as_ref()
            .map_or_else(Default::default, |policy| {
                (
                    policy
                        .definitions
                        .iter()
                        .map(|d| (d.model.clone(), d.preferred_provider.clone()))
                        .collect(),
                    compressor_plan(policy, 0, &remembered),
                )
            });
    EffectiveView {
        cwd: loaded.cwd,
        agent_dir: loaded.agent_dir,
        project_trust: loaded.trust,
        report: loaded.report,
        preferred_providers,
        remembered_providers: BTreeMap::new(),
        remembered_note: REMEMBERED_NOTE,
        session: None,
        host_routes: None,
        compressor_routes,
        recovery,
    }
}

/// The recovery order from a logical model's first route, or from an exact `provider/id`
/// route reverse-mapped to its logical model.
fn recovery_for(policy: &RoutingPolicy, from: &str) -> Result<RecoveryView, String> {
    let remembered = Remembered::new();
    let mut view = RecoveryView {
        from: from.to_owned(),
        model: None,
        failed: None,
        attempts: Vec::new(),
        stop: None,
    };
    let (model, failed): (&LogicalModel, RouteAttempt) =
        if let Some((provider, id)) = from.split_once('/') {
            match reverse_map(policy, provider, id, None) {
                Ok(model) => (
                    model,
                    RouteAttempt {
                        model: model.model.clone(),
                        provider: provider.to_owned(),
                        id: id.to_owned(),
                        effort: model.effort,
                    },
                ),
                Err(stop) => {
                    view.stop = Some(stop);
                    return Ok(view);
                }
            }
        } else {
            let Some(model) = policy.definition(from) else {
                let names: Vec<&str> = policy
                    .definitions
                    .iter()
                    .map(|d| d.model.as_str())
                    .collect();
                return Err(format!(
                    "--recovery: no logical definition is named `{}` (defined: {}); give a logical \
                 model name or an exact provider/id route",
                    SafeText::line(from),
                    names.join(", ")
                ));
            };
            match initial_route(model, &remembered) {
                Some(first) => (model, first),
                None => return Ok(view),
            }
        };
    view.attempts = ordinary_recovery(policy, model, (&failed.provider, &failed.id), &remembered);
    view.model = Some(model.model.clone());
    view.failed = Some(failed);
    Ok(view)
}

fn safe(text: &str) -> String {
    SafeText::line(text).into_string()
}

fn status(status: SourceStatus) -> &'static str {
    match status {
        SourceStatus::Applied => "applied",
        SourceStatus::Absent => "absent",
        SourceStatus::Invalid => "invalid: blocks routing",
        SourceStatus::IgnoredUntrusted => "ignored: project not trusted",
    }
}

pub fn render(view: &EffectiveView) -> String {
    let mut out = String::new();
    let report = &view.report;
    let _ = writeln!(out, "Routing for {}", safe(&view.cwd.display().to_string()));
    let trust = view.project_trust.as_ref().map_or_else(
        || "no project Slate config".to_owned(),
        |t| safe(&t.to_string()),
    );
    let _ = writeln!(out, "project trust: {trust}");
    for source in &report.sources {
        let layer = match source.layer {
            crate::policy::routing::Layer::Home => "home",
            crate::policy::routing::Layer::Project => "project",
        };
        let _ = writeln!(
            out,
            "{layer:<8} {} ({})",
            safe(&source.file),
            status(source.status)
        );
    }
    if report.blocked {
        let _ = writeln!(
            out,
            "routing: BLOCKED ({} critical error{}; logical work is refused before dispatch)",
            report.errors.len(),
            if report.errors.len() == 1 { "" } else { "s" }
        );
    } else {
        let _ = writeln!(out, "routing: ok");
    }
    if let Some(policy) = &report.policy {
        render_policy(&mut out, view, policy);
    }
    render_problems(&mut out, "Errors", &report.errors);
    render_problems(&mut out, "Warnings", &report.warnings);
    let _ = writeln!(out, "\nEvidence limits");
    for limit in &report.evidence_limits {
        let _ = writeln!(out, "  - {}", safe(limit));
    }
    if let Some(recovery) = &view.recovery {
        render_recovery(&mut out, recovery);
    }
    if view.session.is_some() {
        render_host_routes(&mut out, view.host_routes.as_ref());
    }
    out
}

/// The permitted routes as the session's pi has them (the warning itself goes to stderr).
fn render_host_routes(out: &mut String, host: Option<&HostRoutes>) {
    let _ = writeln!(out, "\nPermitted routes in this session's pi");
    let Some(host) = host else {
        let _ = writeln!(
            out,
            "  not reported: pi reports its models when `/slate effective` runs in it"
        );
        return;
    };
    if host.routes.is_empty() {
        let _ = writeln!(out, "  none: routing permits no route");
        return;
    }
    for r in &host.routes {
        let _ = writeln!(
            out,
            "  {:<18} {}/{} ({})",
            r.state.words(),
            safe(&r.provider),
            safe(&r.id),
            r.model
        );
    }
}

fn render_policy(out: &mut String, view: &EffectiveView, policy: &RoutingPolicy) {
    let report = &view.report;
    let _ = writeln!(
        out,
        "\nOrdinary membership ({}): {}",
        policy.ordinary.len(),
        if policy.ordinary.is_empty() {
            "none".to_owned()
        } else {
            policy.ordinary.join(", ")
        }
    );
    let _ = writeln!(out, "\nDefinitions");
    for d in &policy.definitions {
        render_definition(out, d, policy.ordinary.contains(&d.model));
    }
    let _ = writeln!(out, "\nConfigured preferred providers");
    for (model, provider) in &view.preferred_providers {
        let _ = writeln!(out, "  {model:<20} {provider}");
    }
    let _ = writeln!(out, "\nRemembered successful providers");
    if view.remembered_providers.is_empty() {
        let _ = writeln!(out, "  none. {}", view.remembered_note);
    } else {
        for (model, provider) in &view.remembered_providers {
            let _ = writeln!(out, "  {:<20} {}", safe(model), safe(provider));
        }
        let _ = writeln!(out, "  {}", view.remembered_note);
    }
    let _ = writeln!(out, "\nCompressor order");
    for (i, entry) in policy.compressor.iter().enumerate() {
        let routes: Vec<String> = view
            .compressor_routes
            .iter()
            .filter(|r| r.model == entry.model)
            .map(|r| format!("{}/{}", r.provider, r.id))
            .collect();
        let _ = writeln!(
            out,
            "  {}. {} at {}: {}",
            i + 1,
            entry.model,
            entry.effort,
            routes.join(", ")
        );
    }
    if let Some(prompt) = &report.prompt {
        let _ = writeln!(
            out,
            "\nPrompt section: {} of {} portable characters, {} of {} lines",
            prompt.characters, prompt.max_characters, prompt.lines, prompt.max_lines
        );
    }
    let extensions = if report.worker_extensions.is_empty() {
        "none".to_owned()
    } else {
        report
            .worker_extensions
            .iter()
            .map(|p| safe(p))
            .collect::<Vec<_>>()
            .join(", ")
    };
    let _ = writeln!(out, "workerExtensions (unanchored patterns): {extensions}");
}

fn render_definition(out: &mut String, d: &LogicalModel, ordinary: bool) {
    let member = if ordinary {
        "ordinary"
    } else {
        "not in ordinary membership"
    };
    let origin = match d.origin {
        crate::policy::routing::Origin::Shipped => "shipped",
        crate::policy::routing::Origin::Replaced => "shipped, replaced",
        crate::policy::routing::Origin::Added => "added",
    };
    let _ = writeln!(out, "  {} ({origin}; {member})", d.model);
    let _ = writeln!(
        out,
        "    fixed effort {} · capability {} · cost {}",
        d.effort, d.capability_rating, d.cost_rating
    );
    let routes: Vec<String> = d
        .providers
        .iter()
        .map(|(p, id)| format!("{p}/{id}"))
        .collect();
    let _ = writeln!(out, "    exact permissions   {}", routes.join(", "));
    let guidance = if d.guidelines.is_empty() {
        "none".to_owned()
    } else {
        safe(&d.guidelines.join(" "))
    };
    let cautions = if d.cautions.is_empty() {
        "none".to_owned()
    } else {
        safe(&d.cautions.join(" "))
    };
    let _ = writeln!(out, "    guidance            {guidance}");
    let _ = writeln!(out, "    cautions            {cautions}");
    // Fields a file supplied, grouped by file (shipped fields are not repeated).
    let mut by_file: BTreeMap<&str, Vec<&str>> = BTreeMap::new();
    for (field, source) in d.sources.iter().filter(|(_, s)| s.as_str() != "shipped") {
        by_file.entry(source).or_default().push(field);
    }
    for (file, fields) in by_file {
        let _ = writeln!(
            out,
            "    from {}: {}",
            safe(file),
            if fields.len() == d.sources.len() {
                "every field".to_owned()
            } else {
                fields.join(", ")
            }
        );
    }
}

fn render_problems(out: &mut String, title: &str, problems: &[RoutingProblem]) {
    if problems.is_empty() {
        let _ = writeln!(out, "\n{title}: none");
        return;
    }
    let _ = writeln!(out, "\n{title} ({})", problems.len());
    for p in problems {
        let _ = writeln!(out, "  - {}", safe(&p.to_string()));
    }
}

fn render_recovery(out: &mut String, recovery: &RecoveryView) {
    let _ = writeln!(out, "\nRecovery from {}", safe(&recovery.from));
    if let Some(stop) = &recovery.stop {
        let _ = writeln!(out, "  stop: {}", safe(&stop.to_string()));
        return;
    }
    if let Some(failed) = &recovery.failed {
        let _ = writeln!(
            out,
            "  failed route  {}/{} ({})",
            failed.provider, failed.id, failed.model
        );
    }
    if recovery.attempts.is_empty() {
        let _ = writeln!(out, "  no other route: the action fails");
    }
    for (i, attempt) in recovery.attempts.iter().enumerate() {
        let _ = writeln!(
            out,
            "  {:>2}. {}/{} as {} at {}",
            i + 1,
            attempt.provider,
            attempt.id,
            attempt.model,
            attempt.effort
        );
    }
}

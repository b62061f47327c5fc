//! The shipped logical definitions, compressor list, withdrawn names and evidence limits,
//! exactly as spec 002 "Shipped definitions" tables them.

use crate::policy::model::Effort;

/// One shipped definition, as tabled.
pub struct ShippedModel {
    pub model: &'static str,
    pub effort: Effort,
    pub capability_rating: u8,
    pub cost_rating: u8,
    pub preferred_provider: &'static str,
    /// The exact initial permission: provider → Pi model identifier.
    pub providers: &'static [(&'static str, &'static str)],
    pub guidelines: &'static [&'static str],
    pub cautions: &'static [&'static str],
}

const SCOPE_CAUTION: &str = "May exceed explicit scope or infer permission from earlier \
requests. Check changes against stated exclusions and approval requirements.";
const BLOCKED_ACTION_CAUTION: &str = "When blocked, may substitute unapproved resources or \
perform destructive cleanup. Require permission before either action.";
const LUNA_SCOPE_CAUTION: &str = "May treat supplied repair context as permission to implement \
despite explicit task limits. Restrict write access for record-only work and verify the changed \
files.";
const LUNA_TEXT_CAUTION: &str = "Do not use Luna to handle complex texts.";
const FLASH_CAUTION: &str = "Do not use as a reviewer. It relies too much on passing tests and \
exact-size assertions. Verify source citations and distinguish proposed behavior from existing \
behavior.";

/// The six active shipped definitions, in table order. Fable is not active: it has no complete
/// approved definition.
pub const SHIPPED: [ShippedModel; 6] = [
    ShippedModel {
        model: "luna-6",
        effort: Effort::Max,
        capability_rating: 45,
        cost_rating: 5,
        preferred_provider: "openai",
        providers: &[("openai", "gpt-6-luna")],
        guidelines: &[
            "Auxiliary tasks only, such as file location, check-result collection, or routine \
             text management such as modifying research logs. Never primary research, \
             implementation, design, or review. Consumer-contract work only when auxiliary.",
        ],
        cautions: &[LUNA_SCOPE_CAUTION, LUNA_TEXT_CAUTION],
    },
    ShippedModel {
        model: "claude-sonnet-5.5",
        effort: Effort::High,
        capability_rating: 45,
        cost_rating: 54,
        preferred_provider: "anthropic",
        providers: &[("anthropic", "claude-sonnet-5-5")],
        guidelines: &[],
        cautions: &[SCOPE_CAUTION],
    },
    ShippedModel {
        model: "sol-6.1",
        effort: Effort::High,
        capability_rating: 85,
        cost_rating: 20,
        preferred_provider: "openai",
        providers: &[("openai", "gpt-6.1-sol")],
        guidelines: &["Default thread choice."],
        cautions: &[BLOCKED_ACTION_CAUTION],
    },
    ShippedModel {
        model: "gemini-3.8-flash",
        effort: Effort::Medium,
        capability_rating: 55,
        cost_rating: 30,
        preferred_provider: "google-vertex",
        providers: &[("google-vertex", "gemini-3.8-flash")],
        guidelines: &[
            "Default thread choice. Generally prefer over Luna when available. A more specific \
             active guideline overrides this general Flash preference.",
        ],
        cautions: &[FLASH_CAUTION],
    },
    ShippedModel {
        model: "claude-opus-5.5",
        effort: Effort::High,
        capability_rating: 90,
        cost_rating: 65,
        preferred_provider: "anthropic",
        providers: &[("anthropic", "claude-opus-5-5")],
        guidelines: &[
            "Reviewer for each proved DESIGN-TRIGGERING focus area, in adversarial design review \
             and in implementation area review. Do not select Opus 5.5 as the default \
             implementer. If a lower-capability model repeatedly fails at implementation, first \
             ask Opus 5.5 to investigate and provide detailed repair instructions. Let the \
             implementer try those instructions. Use Opus 5.5 as the implementer only if that \
             guided attempt also fails. Treat that use as an exception. Select another suitable \
             model for later implementation work. Existing approval requirements and repair \
             limits still apply.",
        ],
        cautions: &[SCOPE_CAUTION],
    },
    ShippedModel {
        model: "gpt-6-astra",
        effort: Effort::Medium,
        capability_rating: 86,
        cost_rating: 60,
        preferred_provider: "openai",
        providers: &[("openai", "gpt-6-astra")],
        guidelines: &["Do not select Astra as the default implementer. Prefer Sol 6.1 over Astra."],
        cautions: &[],
    },
];

/// The independent shipped compressor list: Sonnet 5.5 at `medium` (ordinary Sonnet stays at
/// `high`).
pub const SHIPPED_COMPRESSOR: [(&str, Effort); 1] = [("claude-sonnet-5.5", Effort::Medium)];

/// Withdrawn shipped names and their replacements (`None`: no replacement). Slate provides no
/// automatic alias.
pub const WITHDRAWN: [(&str, Option<&str>); 6] = [
    ("gpt-5.6-luna", Some("luna-6")),
    ("gpt-5.6-sol", Some("sol-6.1")),
    ("gpt-5.6-terra", None),
    ("claude-opus-5", Some("claude-opus-5.5")),
    ("sol-6", Some("sol-6.1")),
    ("claude-sonnet-5", Some("claude-sonnet-5.5")),
];

/// What the ratings and routing facts do and do not prove (shown by `slate effective`).
pub const EVIDENCE_LIMITS: [&str; 7] = [
    "Capability and cost ratings are fixed project judgments from 1 through 100. A higher \
     capability rating means stronger expected capability; a higher cost rating means greater \
     expected expense. They are not percentages, measurements, price ratios, statistical claims, \
     realized costs, or billing forecasts. Membership changes do not rescale them.",
    "The Sol 6.1 and Sonnet 5.5 capability and cost ratings are project judgments set on \
     2026-09-30 without new benchmark evidence.",
    "Other shipped ratings are project judgments informed by DeepSWE v1.1 by DataCurve and \
     reviewed supporting evidence, retrieved on 2026-09-11 and used without a later refresh. The \
     live source has no confirmed licence bridge for every newer result. Slate publishes no raw \
     task, trajectory, leaderboard row, copied publisher prose, or copied table structure. This \
     attribution is not a new licence grant.",
    "Ratings, guidance and cautions supplied by a configuration file are that file's judgments.",
    "Guidance and cautions direct selection, but Slate does not enforce them at runtime. Shipped \
     preferences are not rigid rankings and do not guarantee quality.",
    "A recorded logical name proves the selection, not which physical model executed. Final \
     model and effort prove only Slate's latest accepted local pi handoff, not transport, the \
     model served by a remote gateway, or billing.",
    "A failover is not evidence that one logical model has better capability than another.",
];

/// The replacement of a withdrawn shipped name: `Some(None)` when withdrawn without one,
/// `None` when `name` was never withdrawn.
pub fn withdrawn(name: &str) -> Option<Option<&'static str>> {
    WITHDRAWN
        .iter()
        .find(|(old, _)| *old == name)
        .map(|(_, new)| *new)
}

/// The shipped definition named `name`.
pub fn shipped(name: &str) -> Option<&'static ShippedModel> {
    SHIPPED.iter().find(|m| m.model == name)
}

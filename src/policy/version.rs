//! The host version gate: delegated execution needs **stable pi 1.5.2 or newer**.
//!
//! A version is accepted when it is a well-formed semantic version `MAJOR.MINOR.PATCH` (numeric
//! identifiers, no leading zeros, no leading `v`, no surrounding whitespace) without a prerelease
//! part, at or above 1.5.2. Build metadata (`+…`) has equal precedence, so `1.5.2+build` passes;
//! it must still be well formed. Empty, malformed, prerelease and lower versions fail closed,
//! each error naming the detected version and the minimum stable version.
//!
//! `pi --version` (and `-v`) in pi 1.6.0 runs `console.log(VERSION)` (`dist/main.js`), where
//! `VERSION` is the package version (or `"0.0.0"` when it is missing): stdout is exactly
//! `1.6.0\n`. [`parse_pi_version_output`] takes that one line, tolerating surrounding blank
//! lines, whitespace and `\r\n`.
//!
//! A hand-written parser rather than the `semver` crate: the gate needs core-triple precedence
//! and a strict stable/prerelease split only, in about as many lines as the glue would take.

use std::fmt;

/// The precedence-relevant part of a stable version. Build metadata is dropped.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Version {
    pub major: u64,
    pub minor: u64,
    pub patch: u64,
}

impl Version {
    pub const fn new(major: u64, minor: u64, patch: u64) -> Self {
        Self {
            major,
            minor,
            patch,
        }
    }
}

impl fmt::Display for Version {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}.{}.{}", self.major, self.minor, self.patch)
    }
}

/// The minimum stable pi version for delegated execution.
pub const MINIMUM_VERSION: Version = Version::new(1, 5, 2);

/// Why a detected host version was refused. Every message names the detected version and the
/// minimum stable version.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum VersionError {
    #[error(
        "Pi version is unknown (nothing detected in {}): delegated execution requires stable Pi \
         {MINIMUM_VERSION} or newer",
        shown(.detected)
    )]
    Unknown { detected: String },
    #[error(
        "Pi version {} is malformed ({reason}): delegated execution requires stable Pi \
         {MINIMUM_VERSION} or newer",
        shown(.detected)
    )]
    Malformed { detected: String, reason: String },
    #[error(
        "Pi {detected} is a prerelease: delegated execution requires stable Pi {MINIMUM_VERSION} \
         or newer"
    )]
    Prerelease { detected: String },
    #[error(
        "Pi {detected} is below the minimum stable version {MINIMUM_VERSION}: delegated execution \
         requires stable Pi {MINIMUM_VERSION} or newer"
    )]
    BelowMinimum { detected: String },
}

impl VersionError {
    /// The version text as detected.
    pub fn detected(&self) -> &str {
        match self {
            VersionError::Unknown { detected }
            | VersionError::Malformed { detected, .. }
            | VersionError::Prerelease { detected }
            | VersionError::BelowMinimum { detected } => detected,
        }
    }
}

/// The detected text, quoted with escapes and clipped to 64 characters, for messages.
fn shown(detected: &str) -> String {
    const SHOWN: usize = 64;
    if detected.chars().count() <= SHOWN {
        format!("{detected:?}")
    } else {
        let head: String = detected.chars().take(SHOWN).collect();
        format!("{head:?}…")
    }
}

/// Accepts stable `detected` ≥ 1.5.2.
///
/// # Errors
///
/// [`VersionError`] for an empty, malformed, prerelease or lower version.
pub fn check_host_version(detected: &str) -> Result<Version, VersionError> {
    if detected.trim().is_empty() {
        return Err(VersionError::Unknown {
            detected: detected.to_owned(),
        });
    }
    let malformed = |reason: String| VersionError::Malformed {
        detected: detected.to_owned(),
        reason,
    };
    let (rest, build) = match detected.split_once('+') {
        Some((rest, build)) => (rest, Some(build)),
        None => (detected, None),
    };
    let (core, pre) = match rest.split_once('-') {
        Some((core, pre)) => (core, Some(pre)),
        None => (rest, None),
    };
    let version = parse_core(core).map_err(malformed)?;
    if let Some(pre) = pre {
        check_identifiers(pre, "prerelease", true).map_err(malformed)?;
    }
    if let Some(build) = build {
        check_identifiers(build, "build metadata", false).map_err(malformed)?;
    }
    if pre.is_some() {
        return Err(VersionError::Prerelease {
            detected: detected.to_owned(),
        });
    }
    if version < MINIMUM_VERSION {
        return Err(VersionError::BelowMinimum {
            detected: detected.to_owned(),
        });
    }
    Ok(version)
}

/// The version line of `pi --version` output: the only non-blank line, trimmed.
///
/// # Errors
///
/// [`VersionError::Unknown`] when the output is blank, [`VersionError::Malformed`] when it has
/// more than one non-blank line.
pub fn pi_version_line(stdout: &str) -> Result<&str, VersionError> {
    let mut lines = stdout.lines().map(str::trim).filter(|l| !l.is_empty());
    match (lines.next(), lines.next()) {
        (None, _) => Err(VersionError::Unknown {
            detected: stdout.to_owned(),
        }),
        (Some(line), None) => Ok(line),
        (Some(_), Some(_)) => Err(VersionError::Malformed {
            detected: stdout.to_owned(),
            reason: format!(
                "expected one line holding only the version, found {} non-blank lines",
                stdout.lines().filter(|l| !l.trim().is_empty()).count()
            ),
        }),
    }
}

/// Extracts and checks the version printed by `pi --version`.
///
/// # Errors
///
/// As [`pi_version_line`] and [`check_host_version`].
pub fn parse_pi_version_output(stdout: &str) -> Result<Version, VersionError> {
    check_host_version(pi_version_line(stdout)?)
}

fn parse_core(core: &str) -> Result<Version, String> {
    if core.starts_with(['v', 'V']) {
        return Err("a leading 'v' is not part of a semantic version".to_owned());
    }
    let parts: Vec<&str> = core.split('.').collect();
    let [major, minor, patch] = parts.as_slice() else {
        return Err(format!(
            "expected MAJOR.MINOR.PATCH, found {} dot-separated part{}",
            parts.len(),
            if parts.len() == 1 { "" } else { "s" }
        ));
    };
    Ok(Version::new(number(major)?, number(minor)?, number(patch)?))
}

fn number(part: &str) -> Result<u64, String> {
    if part.is_empty() || !part.bytes().all(|b| b.is_ascii_digit()) {
        return Err(format!("version component {part:?} is not a number"));
    }
    if part.len() > 1 && part.starts_with('0') {
        return Err(format!("version component {part:?} has a leading zero"));
    }
    part.parse()
        .map_err(|_| format!("version component {part:?} is too large"))
}

/// Dot-separated non-empty identifiers of `[0-9A-Za-z-]`; prerelease numeric identifiers must
/// not have leading zeros.
fn check_identifiers(text: &str, what: &str, numeric_rule: bool) -> Result<(), String> {
    for identifier in text.split('.') {
        if identifier.is_empty()
            || !identifier
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b == b'-')
        {
            return Err(format!(
                "{what} identifier {identifier:?} is empty or not made of [0-9A-Za-z-]"
            ));
        }
        if numeric_rule
            && identifier.len() > 1
            && identifier.starts_with('0')
            && identifier.bytes().all(|b| b.is_ascii_digit())
        {
            return Err(format!(
                "{what} identifier {identifier:?} has a leading zero"
            ));
        }
    }
    Ok(())
}

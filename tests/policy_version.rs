//! Issue 3 ¶10, the host version gate [Supported host]: stable pi ≥ 1.5.2 is accepted, newer
//! patch, minor and major versions too, build metadata has equal precedence; prerelease,
//! malformed, unknown and lower versions fail closed naming the detected and minimum version.

use proptest::prelude::*;
use slate::policy::version::{
    MINIMUM_VERSION, Version, VersionError, check_host_version, parse_pi_version_output,
    pi_version_line,
};

#[test]
fn stable_versions_at_or_above_the_minimum_are_accepted() {
    let table: [(&str, Version); 12] = [
        ("1.5.2", Version::new(1, 5, 2)),
        ("1.5.3", Version::new(1, 5, 3)),
        ("1.5.10", Version::new(1, 5, 10)),
        ("1.6.0", Version::new(1, 6, 0)),
        ("1.10.0", Version::new(1, 10, 0)),
        ("2.0.0", Version::new(2, 0, 0)),
        ("10.0.0", Version::new(10, 0, 0)),
        // build metadata has equal precedence
        ("1.5.2+build", Version::new(1, 5, 2)),
        ("1.5.2+build.7", Version::new(1, 5, 2)),
        ("1.6.0+sha.0abc-1", Version::new(1, 6, 0)),
        ("1.5.2+001", Version::new(1, 5, 2)),
        ("18446744073709551615.0.0", Version::new(u64::MAX, 0, 0)),
    ];
    for (detected, expected) in table {
        assert_eq!(check_host_version(detected), Ok(expected), "{detected:?}");
    }
}

#[test]
fn lower_versions_fail_closed_naming_both_versions() {
    for detected in [
        "1.5.1",
        "1.5.0",
        "1.4.99",
        "1.0.0",
        "0.9.9",
        "0.0.0",
        "1.5.1+build",
    ] {
        let error = check_host_version(detected).expect_err(detected);
        assert_eq!(
            error,
            VersionError::BelowMinimum {
                detected: detected.to_owned()
            }
        );
        assert_eq!(
            error.to_string(),
            format!(
                "Pi {detected} is below the minimum stable version 1.5.2: delegated execution \
                 requires stable Pi 1.5.2 or newer"
            )
        );
    }
}

#[test]
fn prereleases_fail_closed_even_above_the_minimum() {
    for detected in [
        "1.6.0-rc.1",
        "1.5.2-beta",
        "2.0.0-0",
        "1.5.3-alpha.1",
        "1.5.2-rc.1+build",
        "1.0.0-rc",
        "1.6.0-x-y.z0",
    ] {
        let error = check_host_version(detected).expect_err(detected);
        assert_eq!(
            error,
            VersionError::Prerelease {
                detected: detected.to_owned()
            }
        );
        assert_eq!(
            error.to_string(),
            format!(
                "Pi {detected} is a prerelease: delegated execution requires stable Pi 1.5.2 or \
                 newer"
            )
        );
    }
}

#[test]
fn malformed_versions_fail_closed_naming_the_detected_text_and_the_reason() {
    let table: [(&str, &str); 22] = [
        (
            "1.5",
            "expected MAJOR.MINOR.PATCH, found 2 dot-separated parts",
        ),
        ("1", "found 1 dot-separated part)"),
        ("1.5.2.0", "found 4 dot-separated parts"),
        ("v1.5.2", "a leading 'v' is not part of a semantic version"),
        ("V2.0.0", "leading 'v'"),
        ("1.5.2 ", "version component \"2 \" is not a number"),
        (" 1.5.2", "version component \" 1\" is not a number"),
        ("1.5.2\n", "is not a number"),
        ("1.05.2", "version component \"05\" has a leading zero"),
        ("01.5.2", "version component \"01\" has a leading zero"),
        ("1.5.x", "version component \"x\" is not a number"),
        ("1..2", "version component \"\" is not a number"),
        ("１.5.2", "is not a number"),
        ("+1.5.2", "found 1 dot-separated part"),
        ("18446744073709551616.0.0", "is too large"),
        (
            "1.5.2+",
            "build metadata identifier \"\" is empty or not made of [0-9A-Za-z-]",
        ),
        ("1.5.2+a..b", "build metadata identifier \"\""),
        ("1.5.2+bad_meta", "build metadata identifier \"bad_meta\""),
        ("1.5.2-", "prerelease identifier \"\" is empty"),
        ("1.6.0-rc..1", "prerelease identifier \"\""),
        (
            "1.6.0-01",
            "prerelease identifier \"01\" has a leading zero",
        ),
        ("latest", "expected MAJOR.MINOR.PATCH"),
    ];
    for (detected, reason) in table {
        let error = check_host_version(detected).expect_err(detected);
        assert!(
            matches!(error, VersionError::Malformed { .. }),
            "{detected:?} should be malformed, got {error:?}"
        );
        let message = error.to_string();
        assert!(message.contains(reason), "{detected:?}: {message}");
        assert!(
            message.starts_with(&format!("Pi version {detected:?} is malformed (")),
            "names the detected text: {message}"
        );
        assert!(
            message.ends_with("delegated execution requires stable Pi 1.5.2 or newer"),
            "names the minimum: {message}"
        );
        assert_eq!(error.detected(), detected);
    }
}

#[test]
fn empty_and_blank_versions_are_unknown() {
    for detected in ["", " ", "\n", "\t\r\n"] {
        let error = check_host_version(detected).expect_err("unknown");
        assert_eq!(
            error,
            VersionError::Unknown {
                detected: detected.to_owned()
            }
        );
        assert_eq!(
            error.to_string(),
            format!(
                "Pi version is unknown (nothing detected in {detected:?}): delegated execution \
                 requires stable Pi 1.5.2 or newer"
            )
        );
    }
}

#[test]
fn long_detected_text_is_clipped_in_messages_but_kept_in_the_error() {
    let detected = "x".repeat(500);
    let error = check_host_version(&detected).expect_err("malformed");
    assert_eq!(error.detected(), detected);
    let message = error.to_string();
    assert!(
        message.contains(&format!("{:?}…", "x".repeat(64))),
        "{message}"
    );
    assert!(message.len() < 300, "{message}");
}

#[test]
fn the_boundary_is_exactly_1_5_2() {
    assert_eq!(MINIMUM_VERSION, Version::new(1, 5, 2));
    assert_eq!(MINIMUM_VERSION.to_string(), "1.5.2");
    assert!(check_host_version("1.5.1").is_err());
    assert!(check_host_version("1.5.2").is_ok());
    assert!(check_host_version("1.5.3").is_ok());
    assert!(Version::new(1, 5, 10) > Version::new(1, 5, 9));
    assert!(Version::new(1, 10, 0) > Version::new(1, 9, 99));
    assert!(Version::new(2, 0, 0) > Version::new(1, 99, 99));
}

/// `pi --version` in pi 1.6.0 is `console.log(VERSION)`: the bare version and a newline.
#[test]
fn pi_version_output_is_one_line_holding_the_version() {
    let ok: [(&str, Version); 6] = [
        ("1.6.0\n", Version::new(1, 6, 0)),
        ("1.6.0", Version::new(1, 6, 0)),
        ("1.6.0\r\n", Version::new(1, 6, 0)),
        ("\n  1.5.2  \n\n", Version::new(1, 5, 2)),
        ("1.5.2+build.1\n", Version::new(1, 5, 2)),
        ("3.0.1\n", Version::new(3, 0, 1)),
    ];
    for (stdout, expected) in ok {
        assert_eq!(parse_pi_version_output(stdout), Ok(expected), "{stdout:?}");
    }
    assert_eq!(pi_version_line("\n1.6.0\r\n"), Ok("1.6.0"));

    // pi's own fallback when its package version is missing is "0.0.0"
    assert_eq!(
        parse_pi_version_output("0.0.0\n"),
        Err(VersionError::BelowMinimum {
            detected: "0.0.0".to_owned()
        })
    );
    assert_eq!(
        parse_pi_version_output("1.6.0-rc.1\n"),
        Err(VersionError::Prerelease {
            detected: "1.6.0-rc.1".to_owned()
        })
    );
    assert!(matches!(
        parse_pi_version_output("pi 1.6.0\n"),
        Err(VersionError::Malformed { .. })
    ));
    assert!(matches!(
        parse_pi_version_output(""),
        Err(VersionError::Unknown { .. })
    ));
    assert!(matches!(
        parse_pi_version_output(" \n\n"),
        Err(VersionError::Unknown { .. })
    ));
    let two = parse_pi_version_output("Update available\n1.6.0\n").expect_err("two lines");
    assert!(
        two.to_string()
            .contains("expected one line holding only the version, found 2 non-blank lines"),
        "{two}"
    );
    assert!(two.to_string().contains("1.5.2"), "{two}");
}

proptest! {
    #[test]
    fn the_version_parsers_never_panic(text in ".*") {
        let checked = check_host_version(&text);
        let _ = parse_pi_version_output(&text);
        if let Ok(version) = checked {
            prop_assert!(version >= MINIMUM_VERSION);
            prop_assert!(!text.contains('-'));
        } else if let Err(error) = checked {
            prop_assert!(error.to_string().contains("1.5.2"));
        }
    }

    #[test]
    fn acceptance_follows_core_precedence(major in 0u64..4, minor in 0u64..12, patch in 0u64..12) {
        let version = Version::new(major, minor, patch);
        let text = version.to_string();
        let stable = check_host_version(&text);
        prop_assert_eq!(stable.is_ok(), version >= MINIMUM_VERSION);
        // build metadata never changes the outcome
        prop_assert_eq!(check_host_version(&format!("{text}+b.1")).is_ok(), stable.is_ok());
        // a prerelease never passes
        let is_prerelease = matches!(
            check_host_version(&format!("{text}-rc.1")),
            Err(VersionError::Prerelease { .. })
        );
        prop_assert!(is_prerelease);
    }
}

//! Project trust [issue 3 ¶3]: pi's own decision from fixture agent dirs on the real file
//! system (temp directories), then the pure parsers under proptest.

use std::fs;
use std::os::unix::fs::symlink;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU32, Ordering};

use proptest::prelude::*;
use serde_json::{Value, json};
use slate::policy::Problem;
use slate::policy::trust::{
    DefaultProjectTrust, MAX_FILE_BYTES, TrustDecision, TrustReason, TrustStore, agent_dir,
    decide_trust, has_project_config, parse_settings,
};
use slate::store::fs::RealFs;

/// A fresh directory under the system temp dir, removed on drop. Its path is canonical, so
/// saved keys written from it match what pi (and `decide_trust`) look up.
struct Fixture {
    root: PathBuf,
}

fn write(path: &Path, bytes: impl AsRef<[u8]>) {
    fs::create_dir_all(path.parent().expect("a parent")).expect("parent dir");
    fs::write(path, bytes).expect("fixture file");
}

impl Fixture {
    fn new(name: &str) -> Self {
        static NEXT: AtomicU32 = AtomicU32::new(0);
        let n = NEXT.fetch_add(1, Ordering::Relaxed);
        let dir =
            std::env::temp_dir().join(format!("slate-trust-{}-{n}-{name}", std::process::id()));
        let _ = fs::remove_dir_all(&dir);
        fs::create_dir_all(&dir).expect("temp dir");
        Self {
            root: fs::canonicalize(&dir).expect("canonical temp dir"),
        }
    }

    /// `rel` created as a directory, returned canonical.
    fn dir(&self, rel: &str) -> PathBuf {
        let path = self.root.join(rel);
        fs::create_dir_all(&path).expect("fixture dir");
        fs::canonicalize(path).expect("canonical fixture dir")
    }

    fn agent(&self) -> PathBuf {
        self.dir("agent")
    }

    /// `<agent>/trust.json` with these `(dir, decision)` entries.
    fn trust(&self, entries: &[(&Path, Value)]) {
        let mut map = serde_json::Map::new();
        for (dir, value) in entries {
            map.insert(
                dir.to_str().expect("UTF-8 fixture path").to_owned(),
                value.clone(),
            );
        }
        write(
            &self.agent().join("trust.json"),
            serde_json::to_vec_pretty(&Value::Object(map)).expect("serializable"),
        );
    }

    fn settings(&self, value: &Value) {
        write(
            &self.agent().join("settings.json"),
            serde_json::to_vec(value).expect("serializable"),
        );
    }

    fn decide(&self, project: &Path, override_: Option<bool>) -> TrustDecision {
        decide_trust(project, &self.agent(), override_, &RealFs).expect("a decision")
    }

    fn problems(&self, project: &Path) -> Vec<Problem> {
        decide_trust(project, &self.agent(), None, &RealFs).expect_err("problems")
    }
}

impl Drop for Fixture {
    fn drop(&mut self) {
        let _ = fs::remove_dir_all(&self.root);
    }
}

fn saved(dir: &Path) -> TrustReason {
    TrustReason::Saved {
        dir: dir.to_path_buf(),
    }
}

fn pi_default() -> TrustReason {
    TrustReason::Default {
        setting: DefaultProjectTrust::Ask,
        settings_file: None,
    }
}

// ---- saved decisions -------------------------------------------------------------------

#[test]
fn no_files_means_pi_default_ask_which_does_not_trust() {
    let fx = Fixture::new("nofiles");
    let project = fx.dir("work/proj");
    // Agent dir exists but is empty.
    let d = fx.decide(&project, None);
    assert!(!d.trusted);
    assert_eq!(d.reason, pi_default());
    assert!(d.warnings.is_empty());
    // Agent dir does not exist at all.
    let d = decide_trust(&project, &fx.root.join("no-such-agent"), None, &RealFs).unwrap();
    assert!(!d.trusted);
    assert_eq!(d.reason, pi_default());
}

#[test]
fn saved_trust_for_the_project_dir_applies() {
    let fx = Fixture::new("self");
    let project = fx.dir("work/proj");
    fx.trust(&[(&project, json!(true))]);
    let d = fx.decide(&project, None);
    assert!(d.trusted);
    assert_eq!(d.reason, saved(&project));
}

#[test]
fn saved_distrust_for_the_project_dir_applies() {
    let fx = Fixture::new("selfno");
    let project = fx.dir("work/proj");
    fx.trust(&[(&project, json!(false))]);
    fx.settings(&json!({"defaultProjectTrust": "always"}));
    let d = fx.decide(&project, None);
    assert!(!d.trusted, "a saved decision beats defaultProjectTrust");
    assert_eq!(d.reason, saved(&project));
}

#[test]
fn saved_trust_for_a_parent_applies_to_nested_projects() {
    let fx = Fixture::new("parent");
    let parent = fx.dir("work");
    let project = fx.dir("work/a/b/proj");
    fx.trust(&[(&parent, json!(true))]);
    let d = fx.decide(&project, None);
    assert!(d.trusted);
    assert_eq!(d.reason, saved(&parent));
}

#[test]
fn closer_untrusted_overrides_farther_trusted() {
    let fx = Fixture::new("closer");
    let far = fx.dir("work");
    let near = fx.dir("work/team");
    let project = fx.dir("work/team/proj");
    fx.trust(&[(&far, json!(true)), (&near, json!(false))]);
    let d = fx.decide(&project, None);
    assert!(!d.trusted);
    assert_eq!(d.reason, saved(&near));
    // And the other way round.
    fx.trust(&[(&far, json!(false)), (&near, json!(true))]);
    let d = fx.decide(&project, None);
    assert!(d.trusted);
    assert_eq!(d.reason, saved(&near));
}

#[test]
fn null_entry_is_no_decision_and_the_walk_continues_upward() {
    let fx = Fixture::new("null");
    let far = fx.dir("work");
    let project = fx.dir("work/proj");
    fx.trust(&[(&far, json!(true)), (&project, Value::Null)]);
    let d = fx.decide(&project, None);
    assert!(d.trusted);
    assert_eq!(d.reason, saved(&far));
}

#[test]
fn sibling_with_a_common_string_prefix_does_not_match() {
    let fx = Fixture::new("prefix");
    let trusted = fx.dir("work/a/b");
    let sibling = fx.dir("work/a/bc");
    let sibling_child = fx.dir("work/a/b-c/x");
    fx.trust(&[(&trusted, json!(true))]);
    for project in [&sibling, &sibling_child] {
        let d = fx.decide(project, None);
        assert!(
            !d.trusted,
            "{} must not inherit {}",
            project.display(),
            trusted.display()
        );
        assert_eq!(d.reason, pi_default());
    }
}

#[test]
fn symlinked_project_path_is_resolved_canonically() {
    let fx = Fixture::new("symlink");
    let real = fx.dir("real/proj");
    let links = fx.dir("links");
    let link = links.join("proj");
    symlink(&real, &link).unwrap();

    // Saved for the real directory: the symlinked spelling finds it.
    fx.trust(&[(&real, json!(true))]);
    let d = fx.decide(&link, None);
    assert!(d.trusted);
    assert_eq!(d.reason, saved(&real));

    // Saved only for the link's spelling (pi never writes such keys): it does not apply,
    // nor does a decision for the link's parent directory.
    fx.trust(&[(&link, json!(true)), (&links, json!(true))]);
    let d = fx.decide(&link, None);
    assert!(!d.trusted);
    assert_eq!(d.reason, pi_default());
}

#[test]
fn non_canonical_keys_never_match_and_are_reported_as_warnings() {
    let fx = Fixture::new("keys");
    let project = fx.dir("work/proj");
    let p = project.to_str().unwrap();
    let keys = [
        format!("{p}/"),
        format!("{p}/."),
        format!("{p}/../proj"),
        p.replacen('/', "//", 2),
        "work/proj".to_owned(),
    ];
    let text = Value::Object(keys.iter().map(|k| (k.clone(), json!(true))).collect());
    write(&fx.agent().join("trust.json"), text.to_string());
    let d = fx.decide(&project, None);
    assert!(!d.trusted);
    assert_eq!(d.reason, pi_default());
    assert_eq!(d.warnings.len(), keys.len());
    for w in &d.warnings {
        assert!(w.rule.starts_with("ignored:"), "{w}");
        assert!(w.file.as_deref().unwrap().ends_with("trust.json"));
    }
}

#[test]
fn a_leading_bom_is_ignored_in_trust_json() {
    let fx = Fixture::new("bom");
    let project = fx.dir("proj");
    let mut bytes = b"\xEF\xBB\xBF".to_vec();
    bytes.extend(
        json!({ project.to_str().unwrap(): true })
            .to_string()
            .bytes(),
    );
    write(&fx.agent().join("trust.json"), bytes);
    assert!(fx.decide(&project, None).trusted);
}

// ---- defaultProjectTrust ---------------------------------------------------------------

#[test]
fn each_default_project_trust_value_in_a_non_interactive_run() {
    let table = [
        ("always", DefaultProjectTrust::Always, true),
        ("ask", DefaultProjectTrust::Ask, false),
        ("never", DefaultProjectTrust::Never, false),
    ];
    for (name, setting, trusted) in table {
        let fx = Fixture::new(name);
        let project = fx.dir("proj");
        fx.settings(&json!({"defaultProvider": "x", "defaultProjectTrust": name, "retry": {}}));
        let d = fx.decide(&project, None);
        assert_eq!(d.trusted, trusted, "{name}");
        assert_eq!(
            d.reason,
            TrustReason::Default {
                setting,
                settings_file: Some(fx.agent().join("settings.json")),
            }
        );
    }
}

#[test]
fn settings_without_the_key_means_pi_default_ask() {
    let fx = Fixture::new("nokey");
    let project = fx.dir("proj");
    fx.settings(&json!({"defaultModel": "m"}));
    let d = fx.decide(&project, None);
    assert!(!d.trusted);
    assert_eq!(d.reason, pi_default());
}

#[test]
fn default_applies_only_when_no_saved_decision_covers_the_project() {
    let fx = Fixture::new("elsewhere");
    let other = fx.dir("other");
    let project = fx.dir("proj");
    fx.trust(&[(&other, json!(false))]);
    fx.settings(&json!({"defaultProjectTrust": "always"}));
    let d = fx.decide(&project, None);
    assert!(d.trusted);
    assert!(matches!(
        d.reason,
        TrustReason::Default {
            setting: DefaultProjectTrust::Always,
            ..
        }
    ));
}

#[test]
fn reasons_read_as_sentences() {
    let cases = [
        (
            TrustReason::Override { approve: true },
            "override --approve",
        ),
        (
            TrustReason::Override { approve: false },
            "override --no-approve",
        ),
        (saved(Path::new("/a/b")), "saved decision for /a/b"),
        (
            pi_default(),
            "defaultProjectTrust \"ask\" (pi's default): Slate cannot ask, so it does not trust",
        ),
        (
            TrustReason::Default {
                setting: DefaultProjectTrust::Never,
                settings_file: Some("/ag/settings.json".into()),
            },
            "defaultProjectTrust \"never\" in /ag/settings.json: never trusts without a decision",
        ),
        (
            TrustReason::Default {
                setting: DefaultProjectTrust::Always,
                settings_file: Some("/ag/settings.json".into()),
            },
            "defaultProjectTrust \"always\" in /ag/settings.json",
        ),
    ];
    for (reason, text) in cases {
        assert_eq!(reason.to_string(), text);
    }
    let d = TrustDecision {
        trusted: true,
        reason: saved(Path::new("/a")),
        warnings: Vec::new(),
    };
    assert_eq!(d.to_string(), "trusted (saved decision for /a)");
    assert_eq!(
        serde_json::to_value(&d).unwrap(),
        json!({"trusted": true, "reason": {"source": "saved", "dir": "/a"}})
    );
}

// ---- overrides -------------------------------------------------------------------------

#[test]
fn override_both_ways_beats_saved_decisions_and_settings() {
    let fx = Fixture::new("override");
    let project = fx.dir("proj");
    fx.trust(&[(&project, json!(false))]);
    fx.settings(&json!({"defaultProjectTrust": "never"}));
    let d = fx.decide(&project, Some(true));
    assert!(d.trusted);
    assert_eq!(d.reason, TrustReason::Override { approve: true });

    fx.trust(&[(&project, json!(true))]);
    fx.settings(&json!({"defaultProjectTrust": "always"}));
    let d = fx.decide(&project, Some(false));
    assert!(!d.trusted);
    assert_eq!(d.reason, TrustReason::Override { approve: false });
}

#[test]
fn override_reads_no_file_so_malformed_files_and_missing_dirs_do_not_matter() {
    let fx = Fixture::new("overridebad");
    let project = fx.dir("proj");
    write(&fx.agent().join("trust.json"), "{not json");
    write(&fx.agent().join("settings.json"), "[]");
    for approve in [true, false] {
        assert_eq!(fx.decide(&project, Some(approve)).trusted, approve);
        let missing = fx.root.join("missing");
        let d = decide_trust(&missing, &fx.agent(), Some(approve), &RealFs).unwrap();
        assert_eq!(d.trusted, approve);
    }
}

// ---- malformed files -------------------------------------------------------------------

fn rendered(problems: &[Problem]) -> Vec<String> {
    problems.iter().map(ToString::to_string).collect()
}

#[test]
fn trust_json_that_is_not_json_is_an_error_naming_the_file() {
    let fx = Fixture::new("badjson");
    let project = fx.dir("proj");
    write(&fx.agent().join("trust.json"), "{\"/a\": tru");
    let p = fx.problems(&project);
    assert_eq!(p.len(), 1);
    assert_eq!(
        p[0].file.as_deref(),
        Some(fx.agent().join("trust.json").to_str().unwrap())
    );
    assert_eq!(p[0].path, "$");
    assert!(p[0].rule.starts_with("is not valid JSON ("), "{}", p[0]);
    assert!(p[0].rule.contains("pi refuses"), "{}", p[0]);
}

#[test]
fn trust_json_root_must_be_an_object() {
    for text in ["[]", "true", "null", "\"/a\"", "3"] {
        let fx = Fixture::new("root");
        let project = fx.dir("proj");
        write(&fx.agent().join("trust.json"), text);
        let p = fx.problems(&project);
        assert_eq!(p.len(), 1, "{text}");
        assert_eq!(p[0].path, "$");
        assert_eq!(p[0].value.as_deref(), Some(text));
        assert!(p[0].rule.starts_with("must be a JSON object"), "{}", p[0]);
    }
}

#[test]
fn every_bad_trust_value_is_reported_with_its_json_path() {
    let fx = Fixture::new("values");
    let project = fx.dir("proj");
    write(
        &fx.agent().join("trust.json"),
        json!({"/a": "yes", "/b": 1, "/c": true, "/d \"q\"": {"x": 1}, "/e": []}).to_string(),
    );
    let p = fx.problems(&project);
    let file = fx.agent().join("trust.json");
    let rule = "must be true (trusted), false (not trusted) or null (no decision)";
    assert_eq!(
        rendered(&p),
        [
            format!("{}: $[\"/a\"] = \"yes\": {rule}", file.display()),
            format!("{}: $[\"/b\"] = 1: {rule}", file.display()),
            format!(
                "{}: $[\"/d \\\"q\\\"\"] = {{\"x\":1}}: {rule}",
                file.display()
            ),
            format!("{}: $[\"/e\"] = []: {rule}", file.display()),
        ]
    );
}

#[test]
fn settings_json_problems_name_the_file_path_value_and_rule() {
    let cases = [
        (
            "{\"defaultProjectTrust\": \"sometimes\"}",
            "$.defaultProjectTrust",
            Some("\"sometimes\""),
        ),
        (
            "{\"defaultProjectTrust\": \"Always\"}",
            "$.defaultProjectTrust",
            Some("\"Always\""),
        ),
        (
            "{\"defaultProjectTrust\": true}",
            "$.defaultProjectTrust",
            Some("true"),
        ),
        (
            "{\"defaultProjectTrust\": null}",
            "$.defaultProjectTrust",
            Some("null"),
        ),
        ("[\"always\"]", "$", Some("[\"always\"]")),
        ("{\"defaultProjectTrust\": \"always\"", "$", None),
        ("\u{FEFF}{\"defaultProjectTrust\": \"always\"}", "$", None),
    ];
    for (text, path, value) in cases {
        let fx = Fixture::new("settings");
        let project = fx.dir("proj");
        write(&fx.agent().join("settings.json"), text);
        let p = fx.problems(&project);
        assert_eq!(p.len(), 1, "{text}");
        let file = fx.agent().join("settings.json");
        assert_eq!(p[0].file.as_deref(), file.to_str(), "{text}");
        assert_eq!(p[0].path, path, "{text}");
        assert_eq!(p[0].value.as_deref(), value, "{text}");
    }
}

#[test]
fn problems_in_both_files_are_all_reported_even_when_a_saved_decision_exists() {
    let fx = Fixture::new("both");
    let project = fx.dir("proj");
    write(
        &fx.agent().join("trust.json"),
        json!({ project.to_str().unwrap(): true, "/x": "no" }).to_string(),
    );
    fx.settings(&json!({"defaultProjectTrust": "trust"}));
    let p = fx.problems(&project);
    assert_eq!(p.len(), 2);
    assert!(p[0].file.as_deref().unwrap().ends_with("trust.json"));
    assert_eq!(p[0].path, "$[\"/x\"]");
    assert!(p[1].file.as_deref().unwrap().ends_with("settings.json"));
    assert_eq!(p[1].path, "$.defaultProjectTrust");
}

#[test]
fn unreadable_or_oversized_agent_files_are_errors_not_absent() {
    let fx = Fixture::new("unreadable");
    let project = fx.dir("proj");
    fs::create_dir_all(fx.agent().join("trust.json")).unwrap();
    let p = fx.problems(&project);
    assert_eq!(p.len(), 1);
    assert!(p[0].rule.starts_with("cannot be read:"), "{}", p[0]);

    let fx = Fixture::new("huge");
    let project = fx.dir("proj");
    let big = format!(
        "{{\"/a\": true, \"pad\": \"{}\"}}",
        "x".repeat(usize::try_from(MAX_FILE_BYTES).unwrap())
    );
    write(&fx.agent().join("settings.json"), big);
    let p = fx.problems(&project);
    assert_eq!(p.len(), 1);
    assert_eq!(p[0].rule, format!("is larger than {MAX_FILE_BYTES} bytes"));
}

#[test]
fn a_missing_project_directory_is_an_error() {
    let fx = Fixture::new("missing");
    let p = fx.problems(&fx.root.join("gone"));
    assert_eq!(p.len(), 1);
    assert_eq!(p[0].path, "cwd");
    assert!(
        p[0].rule
            .starts_with("the project directory cannot be resolved")
    );
}

// ---- agent dir -------------------------------------------------------------------------

#[test]
fn agent_dir_follows_pi_coding_agent_dir_then_home() {
    let home = Path::new("/home/u");
    let ok = |env: Option<&str>, home: Option<&Path>| agent_dir(env, home).unwrap();
    assert_eq!(ok(None, Some(home)), Path::new("/home/u/.pi/agent"));
    assert_eq!(
        ok(Some(""), Some(home)),
        Path::new("/home/u/.pi/agent"),
        "empty = unset"
    );
    assert_eq!(ok(Some("/srv/agent"), Some(home)), Path::new("/srv/agent"));
    assert_eq!(
        ok(Some("/srv/agent"), None),
        Path::new("/srv/agent"),
        "HOME not needed"
    );
    assert_eq!(
        ok(Some("/srv/./x/../agent/"), None),
        Path::new("/srv/agent")
    );
    assert_eq!(ok(Some("~"), Some(home)), Path::new("/home/u"));
    assert_eq!(ok(Some("~/"), Some(home)), Path::new("/home/u"));
    assert_eq!(
        ok(Some("~/cfg/pi"), Some(home)),
        Path::new("/home/u/cfg/pi")
    );
    assert_eq!(
        ok(Some("~/../shared"), Some(home)),
        Path::new("/home/shared")
    );
}

#[test]
fn agent_dir_refusals_name_the_variable() {
    let home = Path::new("/home/u");
    let cases: [(Option<&str>, Option<&Path>, &str); 7] = [
        (Some("agent"), Some(home), "PI_CODING_AGENT_DIR"),
        (Some("./agent"), Some(home), "PI_CODING_AGENT_DIR"),
        (Some("~user/agent"), Some(home), "PI_CODING_AGENT_DIR"),
        (Some("file:///srv/agent"), Some(home), "PI_CODING_AGENT_DIR"),
        (None, None, "HOME"),
        (Some("~/x"), None, "HOME"),
        (None, Some(Path::new("rel/home")), "HOME"),
    ];
    for (env, home, path) in cases {
        let p = agent_dir(env, home).unwrap_err();
        assert_eq!(p.path, path, "{env:?} {home:?}: {p}");
    }
    let p = agent_dir(Some("agent"), Some(home)).unwrap_err();
    assert_eq!(p.value.as_deref(), Some("agent"));
    assert!(p.rule.starts_with("must be an absolute path"), "{p}");
}

#[test]
fn pi_coding_agent_dir_is_honoured_end_to_end() {
    let fx = Fixture::new("env");
    let project = fx.dir("proj");
    let custom = fx.dir("custom-agent");
    write(
        &custom.join("trust.json"),
        json!({ project.to_str().unwrap(): true }).to_string(),
    );
    // The home agent dir says otherwise; the variable wins.
    let home = fx.dir("home");
    write(
        &home.join(".pi/agent/trust.json"),
        json!({ project.to_str().unwrap(): false }).to_string(),
    );
    let dir = agent_dir(custom.to_str(), Some(&home)).unwrap();
    assert_eq!(dir, custom);
    let d = decide_trust(&project, &dir, None, &RealFs).unwrap();
    assert!(d.trusted);

    let dir = agent_dir(None, Some(&home)).unwrap();
    assert_eq!(dir, home.join(".pi/agent"));
    let d = decide_trust(&project, &dir, None, &RealFs).unwrap();
    assert!(!d.trusted);
    assert_eq!(d.reason, saved(&project));
}

// ---- when trust is needed --------------------------------------------------------------

#[test]
fn project_config_presence_decides_whether_trust_is_needed() {
    let fx = Fixture::new("presence");
    let project = fx.dir("proj");
    assert!(!has_project_config(&project, &RealFs));
    fx.dir("proj/.pi");
    write(&project.join(".pi/settings.json"), "{}");
    assert!(
        !has_project_config(&project, &RealFs),
        "pi's files are not Slate's"
    );
    write(&project.join(".pi/slate.json"), "{}");
    assert!(has_project_config(&project, &RealFs));
    fs::remove_file(project.join(".pi/slate.json")).unwrap();
    write(&project.join(".pi/delegation.json"), "{}");
    assert!(has_project_config(&project, &RealFs));
    fs::remove_file(project.join(".pi/delegation.json")).unwrap();
    symlink(fx.root.join("nowhere"), project.join(".pi/delegation.json")).unwrap();
    assert!(
        has_project_config(&project, &RealFs),
        "a dangling symlink counts"
    );
}

// ---- parsers ---------------------------------------------------------------------------

#[test]
fn repeated_trust_key_keeps_its_last_value_like_json_parse() {
    let store = TrustStore::parse(br#"{"/a": true, "/a": false}"#, "t").unwrap();
    assert_eq!(store.get("/a"), Some(Some(false)));
    let c = store.closest(Path::new("/a/b")).unwrap();
    assert_eq!((c.dir.as_path(), c.trusted), (Path::new("/a"), false));
}

#[test]
fn root_key_applies_to_everything() {
    let store = TrustStore::parse(br#"{"/": true}"#, "t").unwrap();
    assert!(store.closest(Path::new("/x/y")).unwrap().trusted);
    assert!(store.warnings.is_empty());
}

#[test]
fn settings_parser_reads_only_default_project_trust() {
    assert_eq!(parse_settings(b"{}", "s").unwrap(), None);
    assert_eq!(
        parse_settings(br#"{"defaultProjectTrust":"never","retry":7}"#, "s").unwrap(),
        Some(DefaultProjectTrust::Never)
    );
}

fn json_ish() -> impl Strategy<Value = Vec<u8>> {
    prop_oneof![
        proptest::collection::vec(any::<u8>(), 0..256),
        "[{}\\[\\]\",:/a-z0-9 \\\\tfnrule.\u{FEFF}-]{0,64}".prop_map(String::into_bytes),
    ]
}

proptest! {
    #[test]
    fn parsing_arbitrary_bytes_never_panics(bytes in json_ish()) {
        let _ = TrustStore::parse(&bytes, "trust.json");
        let _ = parse_settings(&bytes, "settings.json");
    }

    #[test]
    fn any_object_of_booleans_and_nulls_parses_and_finds_the_closest(
        entries in proptest::collection::btree_map(
            "/[a-c]{1,2}(/[a-c]{1,2}){0,2}",
            proptest::option::of(any::<bool>()),
            0..8,
        ),
        probe in "/[a-c]{1,2}(/[a-c]{1,2}){0,3}",
    ) {
        let text = Value::Object(
            entries.iter().map(|(k, v)| (k.clone(), v.map_or(Value::Null, Value::Bool))).collect(),
        );
        let store = TrustStore::parse(text.to_string().as_bytes(), "trust.json").unwrap();
        prop_assert!(store.warnings.is_empty());
        // Reference: the longest key that is the probe or a `/`-bounded prefix of it.
        let expected = entries
            .iter()
            .filter_map(|(k, v)| v.map(|v| (k, v)))
            .filter(|(k, _)| probe == **k || probe.starts_with(&format!("{k}/")))
            .max_by_key(|(k, _)| k.len())
            .map(|(k, v)| (PathBuf::from(k), v));
        let found = store.closest(Path::new(&probe)).map(|c| (c.dir, c.trusted));
        prop_assert_eq!(found, expected);
    }
}

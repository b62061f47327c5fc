//! The profiles overlay: key sequences through its loop, layouts, the invalid-configuration
//! view, width fitting and the injection corpus.

use ratatui::Terminal;
use ratatui::backend::TestBackend;
use ratatui::buffer::Buffer;
use ratatui::crossterm::event::{Event, KeyCode, KeyEvent, KeyModifiers};
use ratatui::layout::Rect;
use slate::config::{ProfilesView, ToolPolicy};
use slate::policy::capabilities::pi_offered_tools;
use slate::policy::profiles::{ConfigFile, resolve};
use slate::store::fs::RealFs;
use slate::ui::profiles::{Action, Content, ProfilesOverlay, Shape, event_loop, shape};

fn view() -> ProfilesView {
    let resolved = resolve(
        ConfigFile {
            path: "/home/u/.pi/agent/delegation.json",
            text: None,
        },
        ConfigFile {
            path: "/work/p/.pi/delegation.json",
            text: None,
        },
        false,
        &RealFs,
    )
    .expect("the bundled profiles resolve");
    ProfilesView {
        tool_policy: ToolPolicy {
            offered_tools: pi_offered_tools(),
            scheduling: resolved.scheduling,
            sources: resolved.sources.clone(),
            agent_dir: "/home/u/.pi/agent".into(),
            cwd: "/work/p".into(),
            project_trust: None,
        },
        profiles: resolved.profiles,
    }
}

fn invalid() -> Vec<slate::policy::Problem> {
    let operator = r#"{"scout": {"tools": ["teleport"], "colour": "red"}, "bogus": 1, "scheduling": {"concurrency": -3}}"#;
    resolve(
        ConfigFile {
            path: "/home/u/.pi/agent/delegation.json",
            text: Some(operator),
        },
        ConfigFile {
            path: "/work/p/.pi/delegation.json",
            text: None,
        },
        false,
        &RealFs,
    )
    .expect_err("an invalid configuration")
}

fn key(code: KeyCode) -> Event {
    Event::Key(KeyEvent::new(code, KeyModifiers::NONE))
}

fn text(buf: &Buffer) -> String {
    let mut out = String::new();
    for y in 0..buf.area.height {
        let mut line = String::new();
        for x in 0..buf.area.width {
            line.push_str(buf[(x, y)].symbol());
        }
        out.push_str(line.trim_end());
        out.push('\n');
    }
    out
}

/// Runs the overlay loop on a test terminal with these input batches; returns the screen,
/// the overlay, and whether the loop ended by closing (before the input ran out).
fn run(
    content: Content,
    width: u16,
    height: u16,
    batches: Vec<Vec<Event>>,
) -> (String, ProfilesOverlay, bool) {
    let mut terminal = Terminal::new(TestBackend::new(width, height)).expect("terminal");
    let mut overlay = ProfilesOverlay::new(content);
    let mut batches = batches.into_iter();
    let mut exhausted = false;
    event_loop(&mut terminal, &mut overlay, || {
        let next = batches.next();
        exhausted = next.is_none();
        Ok(next)
    })
    .expect("the loop runs");
    (text(terminal.backend().buffer()), overlay, !exhausted)
}

fn profiles() -> Content {
    Content::Profiles(Box::new(view()))
}

#[test]
fn arrows_select_and_stop_at_the_ends() {
    let (screen, overlay, closed) = run(
        profiles(),
        100,
        30,
        vec![vec![key(KeyCode::Down)], vec![key(KeyCode::Down)]],
    );
    assert!(!closed);
    assert_eq!(overlay.selected(), 2);
    assert!(screen.contains("▸ general"), "{screen}");
    let (_, overlay, _) = run(
        profiles(),
        100,
        30,
        vec![
            vec![key(KeyCode::Up); 3],
            vec![key(KeyCode::Down); 9],
            vec![key(KeyCode::Up)],
        ],
    );
    assert_eq!(overlay.selected(), 2, "4 profiles: Down stops at the last");
}

#[test]
fn j_k_page_home_end_scroll_the_details() {
    let batches = vec![vec![key(KeyCode::Char('j')), key(KeyCode::Char('j'))]];
    let (_, overlay, _) = run(profiles(), 100, 20, batches);
    assert_eq!(overlay.scroll(), 2);
    let (_, overlay, _) = run(
        profiles(),
        100,
        20,
        vec![
            vec![key(KeyCode::Char('j'))],
            vec![key(KeyCode::Char('k')), key(KeyCode::Char('k'))],
        ],
    );
    assert_eq!(overlay.scroll(), 0, "k stops at the top");
    let (end_screen, end, _) = run(profiles(), 100, 20, vec![vec![key(KeyCode::End)]]);
    assert!(end.scroll() > 0);
    let (_, again, _) = run(
        profiles(),
        100,
        20,
        vec![vec![key(KeyCode::End)], vec![key(KeyCode::Char('j'))]],
    );
    assert_eq!(
        again.scroll(),
        end.scroll(),
        "End is the bottom; j stops there"
    );
    assert!(end_screen.contains('/'), "{end_screen}");
    let (_, home, _) = run(
        profiles(),
        100,
        20,
        vec![vec![key(KeyCode::End)], vec![key(KeyCode::Home)]],
    );
    assert_eq!(home.scroll(), 0);
    // Details area: 20 rows - footer - borders = 17 lines a page.
    let (_, page, _) = run(profiles(), 100, 20, vec![vec![key(KeyCode::PageDown)]]);
    assert_eq!(page.scroll(), 17.min(end.scroll()));
    let (_, back, _) = run(
        profiles(),
        100,
        20,
        vec![vec![key(KeyCode::PageDown)], vec![key(KeyCode::PageUp)]],
    );
    assert_eq!(back.scroll(), 0);
    // A new selection starts at the top of its details.
    let (_, moved, _) = run(
        profiles(),
        100,
        20,
        vec![vec![key(KeyCode::Char('j'))], vec![key(KeyCode::Down)]],
    );
    assert_eq!((moved.selected(), moved.scroll()), (1, 0));
}

#[test]
fn esc_q_and_ctrl_c_close() {
    for close in [
        key(KeyCode::Esc),
        key(KeyCode::Char('q')),
        Event::Key(KeyEvent::new(KeyCode::Char('c'), KeyModifiers::CONTROL)),
    ] {
        let (_, _, closed) = run(
            profiles(),
            80,
            24,
            vec![vec![close.clone()], vec![key(KeyCode::Down)]],
        );
        assert!(closed, "{close:?} closes before the rest of the input");
    }
    let mut overlay = ProfilesOverlay::new(profiles());
    assert_eq!(
        overlay.handle_key(KeyEvent::new(KeyCode::Char('x'), KeyModifiers::NONE)),
        Action::None
    );
}

#[test]
fn details_show_prompt_description_ceilings_skills_grants_and_model_policy() {
    let mut v = view();
    v.profiles[2].skills = vec!["/home/u/skills/review-checklist.md".to_owned()];
    v.profiles[2].leaf_tools = vec!["lint_report".to_owned()];
    let (screen, _, _) = run(
        Content::Profiles(Box::new(v.clone())),
        120,
        60,
        vec![vec![key(KeyCode::Down), key(KeyCode::Down)]],
    );
    for want in [
        "builtin tools",
        "reviewed leaf",
        "lint_report",
        "/home/u/skills/review-checklist.md",
        "spawn",
        "coordination",
        "Model policy",
        "Prompt (",
        "not guaranteed session rights",
    ] {
        assert!(screen.contains(want), "{want} missing:\n{screen}");
    }
    let description = &v.profiles[2].description;
    let head: String = description.chars().take(30).collect();
    assert!(screen.contains(&head), "description missing:\n{screen}");
}

#[test]
fn an_invalid_configuration_shows_every_problem_instead_of_a_list() {
    let problems = invalid();
    assert!(problems.len() >= 2, "{problems:?}");
    let (screen, _, _) = run(Content::Invalid(problems.clone()), 120, 60, vec![]);
    assert!(!screen.contains("Profiles ("), "no list: {screen}");
    assert!(
        screen.contains(&format!("{} problems", problems.len())),
        "{screen}"
    );
    for p in &problems {
        let rule: String = p.rule.chars().take(40).collect();
        assert!(screen.contains(&rule), "{rule} missing:\n{screen}");
        assert!(screen.contains(&p.path), "{} missing:\n{screen}", p.path);
    }
    // Problems scroll like details, and close like the list.
    let (_, overlay, closed) = run(
        Content::Invalid(problems),
        80,
        10,
        vec![
            vec![key(KeyCode::Down), key(KeyCode::Char('j'))],
            vec![key(KeyCode::Esc)],
        ],
    );
    assert!(closed);
    assert_eq!(overlay.scroll(), 2);
}

#[test]
fn narrow_layouts_stack_and_tiny_layouts_ask_for_a_resize() {
    assert_eq!(shape(Rect::new(0, 0, 100, 30)), Shape::Wide);
    assert_eq!(shape(Rect::new(0, 0, 50, 30)), Shape::Stacked);
    assert_eq!(shape(Rect::new(0, 0, 20, 30)), Shape::Tiny);
    assert_eq!(shape(Rect::new(0, 0, 100, 5)), Shape::Tiny);
    let (screen, _, _) = run(profiles(), 50, 24, vec![]);
    let lines: Vec<&str> = screen.lines().collect();
    assert!(lines[0].contains("Profiles (4)"), "{screen}");
    assert!(lines[1].contains("scout"), "{screen}");
    assert!(
        lines[6].contains("scout"),
        "details title below the list: {screen}"
    );
    let (tiny, _, _) = run(profiles(), 20, 6, vec![]);
    assert!(tiny.contains("Resize"), "{tiny}");
    assert!(!tiny.contains("Profiles ("), "{tiny}");
}

#[test]
fn every_line_fits_at_every_width() {
    for content in [profiles(), Content::Invalid(invalid())] {
        for width in [1u16, 4, 40, 80, 200] {
            for height in [1u16, 4, 8, 24, 60] {
                let (screen, _, _) = run(
                    content.clone(),
                    width,
                    height,
                    vec![vec![key(KeyCode::End)], vec![key(KeyCode::Down)]],
                );
                for line in screen.lines() {
                    assert!(
                        slate::text::width(line) <= usize::from(width),
                        "{width}x{height}: {line:?}"
                    );
                }
            }
        }
    }
}

#[test]
fn snapshot_tiny() {
    insta::assert_snapshot!(run(profiles(), 20, 6, vec![]).0);
}

#[test]
fn snapshot_compact() {
    insta::assert_snapshot!(run(profiles(), 60, 24, vec![]).0);
}

#[test]
fn snapshot_wide() {
    insta::assert_snapshot!(run(profiles(), 110, 32, vec![vec![key(KeyCode::Down)]]).0);
}

#[test]
fn snapshot_invalid() {
    insta::assert_snapshot!(run(Content::Invalid(invalid()), 90, 24, vec![]).0);
}

const CORPUS: [&str; 8] = [
    "csi \u{1b}[2J\u{1b}[31mred\u{1b}[0m",
    "osc52 \u{1b}]52;c;cm0gLXJmIH4=\u{7}",
    "osc8 \u{1b}]8;;https://evil.example\u{1b}\\link\u{1b}]8;;\u{1b}\\",
    "dcs \u{1b}P1$qm\u{1b}\\",
    "c1 \u{9b}2J \u{9d}0;title\u{9c} \u{85}",
    "bidi \u{202e}txt.exe\u{2066}x\u{2069}",
    "reset \u{1b}c",
    "bell \u{7} bs \u{8} del \u{7f}",
];

fn assert_clean(screen: &str) {
    for c in screen.chars() {
        assert!(
            c == '\n'
                || !(c.is_control()
                    || matches!(c, '\u{061C}' | '\u{200E}' | '\u{200F}' | '\u{202A}'..='\u{202E}' | '\u{2066}'..='\u{2069}')),
            "{c:?} reached the buffer"
        );
    }
    for leak in ["52;", "]8;", "evil.example", "[2J", "$qm", "[31m"] {
        assert!(!screen.contains(leak), "{leak} leaked:\n{screen}");
    }
}

#[test]
fn injection_corpus_never_reaches_the_buffer() {
    let mut v = view();
    let all = CORPUS.join("\n");
    v.profiles[0].prompt = all.clone();
    v.profiles[0].description = all.replace('\n', " ");
    v.profiles[0].skills = CORPUS.iter().map(|c| format!("/skills/{c}.md")).collect();
    v.profiles[0].leaf_tools = CORPUS.iter().map(|c| (*c).to_owned()).collect();
    for keys in [vec![], vec![vec![key(KeyCode::End)]]] {
        let (screen, _, _) = run(Content::Profiles(Box::new(v.clone())), 200, 60, keys);
        assert_clean(&screen);
    }
    let problems = vec![
        slate::policy::Problem::new(format!("$.{}", CORPUS[0]), CORPUS[1]).value(CORPUS[2]),
        slate::policy::Problem::new("$.x", CORPUS[5]).in_file(CORPUS[3]),
    ];
    let (screen, _, _) = run(Content::Invalid(problems), 200, 40, vec![]);
    assert_clean(&screen);
}

//! `slate hub --pane`: the Hub in a new tmux pane of the tmux session this command runs in.
//!
//! The pane's environment is the tmux server's, not the caller's (its `XDG_RUNTIME_DIR` may
//! differ, so discovery there could find no socket): the pane is given the coordinator's
//! socket explicitly (`SLATE_SOCKET`), found here, in the caller's environment. Side by side
//! when the new pane is at least as wide as the Hub's wide layout; below when only the full
//! width is (or when the window is too narrow for both but tall enough); else a new window.
//! A Hub that fails leaves its pane open with the error until Enter.

use std::path::Path;
use std::process::Command;

use crate::cli::fleet::locate;
use crate::cli::{Error, ExitCode};
use crate::ui::hub::layout::WIDE_WIDTH;

/// A pane below this many rows is not worth splitting for: a new window is taller.
pub const MIN_HEIGHT: u16 = 20;

/// Where the Hub's pane goes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Placement {
    /// `split-window -h`.
    Beside,
    /// `split-window -v`.
    Below,
    /// `new-window`.
    Window,
}

impl Placement {
    /// For the current pane's size (tmux takes one column or row for the border).
    pub fn choose(width: u16, height: u16) -> Self {
        let half_width = width.saturating_sub(1) / 2;
        let half_height = height.saturating_sub(1) / 2;
        if half_width >= WIDE_WIDTH && height >= MIN_HEIGHT {
            Self::Beside
        } else if half_height >= MIN_HEIGHT {
            Self::Below
        } else {
            Self::Window
        }
    }

    fn describe(self) -> &'static str {
        match self {
            Self::Beside => "in a pane beside this one",
            Self::Below => "in a pane below this one",
            Self::Window => "in a new tmux window",
        }
    }
}

/// The pane's command: the Hub on `socket`; on failure its status and a wait for Enter.
pub const WRAPPER: &str = r#"SLATE_SOCKET="$2" "$1" hub; code=$?; if [ "$code" -ne 0 ]; then printf '\nslate hub exited with status %s; press Enter to close this pane.\n' "$code"; read -r _; fi"#;

/// The `tmux` arguments that open the pane.
pub fn tmux_args(placement: Placement, cwd: &Path, slate: &Path, socket: &Path) -> Vec<String> {
    let mut args: Vec<String> = match placement {
        Placement::Beside => vec!["split-window".into(), "-h".into()],
        Placement::Below => vec!["split-window".into(), "-v".into()],
        Placement::Window => vec!["new-window".into(), "-n".into(), "slate-hub".into()],
    };
    args.extend([
        "-c".into(),
        cwd.display().to_string(),
        "sh".into(),
        "-c".into(),
        WRAPPER.into(),
        "slate-hub".into(),
        slate.display().to_string(),
        socket.display().to_string(),
    ]);
    args
}

/// A word for `sh`, single-quoted unless it is plain.
fn quoted(word: &str) -> String {
    let plain = !word.is_empty()
        && word
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "_@%+=:,./-".contains(c));
    if plain {
        word.to_owned()
    } else {
        format!("'{}'", word.replace('\'', "'\\''"))
    }
}

fn tmux(args: &[String]) -> Result<String, Error> {
    let out = Command::new("tmux")
        .args(args)
        .output()
        .map_err(|e| Error::Environment(format!("cannot run tmux: {e}")))?;
    if !out.status.success() {
        return Err(Error::Environment(format!(
            "tmux {} failed: {}",
            args.first().map_or("", String::as_str),
            String::from_utf8_lossy(&out.stderr).trim()
        )));
    }
    Ok(String::from_utf8_lossy(&out.stdout).into_owned())
}

/// The current pane's `(width, height)`.
fn pane_size() -> Result<(u16, u16), Error> {
    let mut args = vec!["display-message".to_owned(), "-p".to_owned()];
    if let Some(pane) = std::env::var_os("TMUX_PANE").filter(|p| !p.is_empty()) {
        args.extend(["-t".to_owned(), pane.to_string_lossy().into_owned()]);
    }
    args.push("#{pane_width} #{pane_height}".to_owned());
    let text = tmux(&args)?;
    let mut words = text.split_whitespace().map(str::parse::<u16>);
    match (words.next(), words.next()) {
        (Some(Ok(w)), Some(Ok(h))) => Ok((w, h)),
        _ => Err(Error::Environment(format!(
            "tmux reported the pane size as {:?}",
            text.trim()
        ))),
    }
}

pub fn open(parent: Option<String>) -> Result<ExitCode, Error> {
    let socket = locate(parent)?.endpoint.socket;
    let slate = std::env::current_exe()
        .map_err(|e| Error::Environment(format!("cannot find the slate binary: {e}")))?;
    let cwd = std::env::current_dir()
        .map_err(|e| Error::Environment(format!("the current directory cannot be read: {e}")))?;
    if std::env::var_os("TMUX").is_none_or(|t| t.is_empty()) {
        return Err(Error::Usage(format!(
            "not inside tmux; open the Hub in another terminal:\n  cd {} && SLATE_SOCKET={} {} hub",
            quoted(&cwd.display().to_string()),
            quoted(&socket.display().to_string()),
            quoted(&slate.display().to_string()),
        )));
    }
    let (width, height) = pane_size()?;
    let placement = Placement::choose(width, height);
    tmux(&tmux_args(placement, &cwd, &slate, &socket))?;
    println!("The Subagent Hub opened {}.", placement.describe());
    Ok(ExitCode::Ok)
}

#[cfg(test)]
mod tests {
    use super::{MIN_HEIGHT, Placement, WIDE_WIDTH};

    #[test]
    fn beside_only_when_the_new_pane_gets_the_wide_layout() {
        assert_eq!(Placement::choose(2 * WIDE_WIDTH + 1, 45), Placement::Beside);
        assert_eq!(Placement::choose(2 * WIDE_WIDTH, 45), Placement::Below);
        assert_eq!(Placement::choose(160, 45), Placement::Below);
        assert_eq!(Placement::choose(80, 2 * MIN_HEIGHT + 1), Placement::Below);
        assert_eq!(Placement::choose(80, 24), Placement::Window);
        assert_eq!(Placement::choose(160, 2 * MIN_HEIGHT), Placement::Window);
    }
}

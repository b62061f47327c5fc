//! Terminal setup and restore: one RAII guard plus a panic hook that restores first.
//!
//! Raw mode is switched off before anything else so a panic message prints on a usable
//! terminal; the previous panic hook runs afterwards.

use std::io::{self, Stdout, Write};
use std::sync::Once;
use std::sync::atomic::{AtomicU8, Ordering};

use ratatui::Terminal;
use ratatui::TerminalOptions;
use ratatui::Viewport;
use ratatui::backend::CrosstermBackend;
use ratatui::crossterm::cursor;
use ratatui::crossterm::event::{DisableBracketedPaste, EnableBracketedPaste};
use ratatui::crossterm::execute;
use ratatui::crossterm::terminal::{
    EnterAlternateScreen, LeaveAlternateScreen, disable_raw_mode, enable_raw_mode,
};

/// The terminal the views draw on.
pub type Term = Terminal<CrosstermBackend<Stdout>>;

/// What the panic hook has to undo (0 = nothing, 1 = raw mode, 2 = raw + alternate screen
/// + bracketed paste).
static ACTIVE: AtomicU8 = AtomicU8::new(0);
static HOOK: Once = Once::new();

/// How the guard took the terminal.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    /// The alternate screen (the Hub, the profiles overlay), with bracketed paste on: a
    /// paste arrives as one text event, never as keys.
    Fullscreen,
    /// An inline viewport of this many rows under the cursor (the fleet widget); lines
    /// inserted above it scroll away into the normal scrollback.
    Inline(u16),
}

/// Owns the terminal while a view runs; dropping it restores the terminal.
pub struct TerminalGuard {
    terminal: Term,
    mode: Mode,
}

impl TerminalGuard {
    /// Takes the terminal: raw mode, and the alternate screen for [`Mode::Fullscreen`].
    pub fn enter(mode: Mode) -> io::Result<Self> {
        install_panic_hook();
        enable_raw_mode()?;
        ACTIVE.store(1, Ordering::SeqCst);
        let mut stdout = io::stdout();
        let viewport = match mode {
            Mode::Fullscreen => {
                if let Err(e) = execute!(
                    stdout,
                    EnterAlternateScreen,
                    cursor::Hide,
                    EnableBracketedPaste
                ) {
                    restore();
                    return Err(e);
                }
                ACTIVE.store(2, Ordering::SeqCst);
                Viewport::Fullscreen
            }
            Mode::Inline(rows) => Viewport::Inline(rows),
        };
        match Terminal::with_options(CrosstermBackend::new(stdout), TerminalOptions { viewport }) {
            Ok(terminal) => Ok(Self { terminal, mode }),
            Err(e) => {
                restore();
                Err(e)
            }
        }
    }

    pub fn terminal(&mut self) -> &mut Term {
        &mut self.terminal
    }

    pub fn mode(&self) -> Mode {
        self.mode
    }
}

impl Drop for TerminalGuard {
    fn drop(&mut self) {
        if self.mode != Mode::Fullscreen {
            // Leave the inline viewport's last frame in the scrollback, cursor below it.
            let _ = self.terminal.show_cursor();
            let _ = writeln!(io::stdout());
        }
        restore();
    }
}

/// Undoes whatever the guard did; safe to call more than once.
pub fn restore() {
    match ACTIVE.swap(0, Ordering::SeqCst) {
        0 => {}
        1 => {
            let _ = disable_raw_mode();
            let _ = execute!(io::stdout(), cursor::Show);
        }
        _ => {
            let _ = disable_raw_mode();
            let _ = execute!(
                io::stdout(),
                DisableBracketedPaste,
                LeaveAlternateScreen,
                cursor::Show
            );
        }
    }
}

fn install_panic_hook() {
    HOOK.call_once(|| {
        let previous = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            restore();
            previous(info);
        }));
    });
}

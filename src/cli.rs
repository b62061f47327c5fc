//! Command-line surface: clap definitions, one module per subcommand, one Printer.

mod commands;
mod demo;
mod demo_live;
mod doctor;
mod effective;
mod embedded;
pub mod error;
mod fleet;
mod handoff;
mod hub;
mod man;
mod mcp;
pub mod pi;
pub mod printer;
mod profiles;
mod run;
mod serve;
mod status;
mod watch;
mod watch_lines;

use std::path::PathBuf;

use clap::{Parser, Subcommand};

pub use error::Error;
pub use printer::Printer;

/// Exit codes, stable and documented in `docs/cli.md` (each [`Error`] has one).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ExitCode {
    Ok = 0,
    /// A refused request, or a failed/cancelled outcome.
    Refused = 1,
    /// Usage or configuration error.
    Usage = 2,
    /// No coordinator reachable.
    NoCoordinator = 3,
    /// The coordinator is at its connection limit (`busy`); try again later.
    Busy = 4,
}

impl ExitCode {
    /// Every code, in order (the man page's EXIT STATUS lists them from here).
    pub const ALL: [Self; 5] = [
        Self::Ok,
        Self::Refused,
        Self::Usage,
        Self::NoCoordinator,
        Self::Busy,
    ];

    /// What the code means, one sentence.
    pub fn meaning(self) -> &'static str {
        match self {
            Self::Ok => "Success.",
            Self::Refused => "A refused request, or an outcome that failed or was cancelled.",
            Self::Usage => "A usage or configuration error; nothing was changed.",
            Self::NoCoordinator => "No coordinator is reachable.",
            Self::Busy => "The coordinator is at its connection limit (busy); try again later.",
        }
    }

    /// The one mapping from a control-socket failure to an exit code (and the stable code
    /// shown in `--json` errors): a refusal is 1, a request this build got wrong is 2, no
    /// coordinator is 3, a coordinator at capacity is 4.
    pub fn of_client_error(error: &crate::control::ClientError) -> (Self, &str) {
        use crate::control::protocol::codes;
        match error.remote() {
            Some(remote) if remote.code == codes::BUSY => (Self::Busy, codes::BUSY),
            Some(remote)
                if remote.code == codes::INVALID_REQUEST
                    || remote.code == codes::UNKNOWN_METHOD
                    || remote.code == codes::UNSUPPORTED_PROTOCOL =>
            {
                (Self::Usage, remote.code.as_str())
            }
            Some(remote) => (Self::Refused, remote.code.as_str()),
            None if error.is_unreachable() => (Self::NoCoordinator, "no-coordinator"),
            None => (Self::Usage, "protocol"),
        }
    }
}

#[derive(Debug, Parser)]
#[command(
    name = "slate",
    version,
    about = "A terminal fleet manager for coding-agent subagents"
)]
pub struct Cli {
    /// Print machine-readable JSON instead of text.
    #[arg(long, global = true)]
    pub json: bool,
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// A simulated fleet (no network, no credentials): on a terminal, the live demo in the
    /// Subagent Hub; otherwise the virtual-time timeline and outcomes.
    Demo {
        /// Seed for identities; the same seed gives the same run.
        #[arg(long, default_value_t = 7)]
        seed: u64,
        /// Run the live demo in real time on this directory's control socket with nothing
        /// attached, until Ctrl+C (attach with `slate hub`, query with `slate status`).
        #[arg(long, conflicts_with = "timeline")]
        serve: bool,
        /// Print the virtual-time timeline and outcomes even on a terminal (the default
        /// when stdout is not a terminal, or with --json).
        #[arg(long)]
        timeline: bool,
    },
    /// Show the resolved subagent profiles and tool policy for this directory
    /// (bundled → operator → trusted project).
    Profiles {
        /// Trust this project's `.pi/` config for this command (pi's `--approve`).
        #[arg(long, conflicts_with = "no_approve")]
        approve: bool,
        /// Do not trust this project's `.pi/` config for this command (pi's `--no-approve`).
        #[arg(long)]
        no_approve: bool,
        /// Print each profile's full role prompt.
        #[arg(long)]
        prompts: bool,
        /// Human text even when stdout is not a terminal (the default there is JSON).
        #[arg(long, conflicts_with = "json")]
        text: bool,
    },
    /// Show the effective logical-model routing policy for this directory (shipped → home
    /// `slate.json` → trusted project `.pi/slate.json`); exit 2 when routing is blocked.
    Effective {
        /// Trust this project's `.pi/` config for this command.
        #[arg(long, conflicts_with = "no_approve")]
        approve: bool,
        /// Do not trust this project's `.pi/` config for this command.
        #[arg(long)]
        no_approve: bool,
        /// Also print the recovery order after a route fails: a logical model name (its first
        /// route fails) or an exact `provider/id` route.
        #[arg(long, value_name = "MODEL")]
        recovery: Option<String>,
        /// Also show what the running session with this parent id knows: its remembered
        /// successful providers, and which permitted routes its host pi has (as pi last
        /// reported its model registry; `/slate effective` in pi reports it first).
        #[arg(long, value_name = "ID")]
        parent: Option<String>,
    },
    /// Run one `delegate_task` request (JSON file, or `-` for stdin) in an embedded
    /// coordinator for this directory and print the ordered outcomes.
    Run {
        /// The request: native `{assignment|taskFile, profile, …}` / `{tasks:[…]}`, or a
        /// compatibility `subagent` launch.
        file: PathBuf,
        /// Which workers run the tasks.
        #[arg(long, value_enum, default_value = "pi")]
        backend: embedded::Backend,
        /// The root's model, `provider/id[:effort]` (default: pi's settings).
        #[arg(long)]
        model: Option<String>,
        /// Trust this project's `.pi/` config for this command.
        #[arg(long, conflicts_with = "no_approve")]
        approve: bool,
        /// Do not trust this project's `.pi/` config for this command.
        #[arg(long)]
        no_approve: bool,
    },
    /// Print a shell completion script (bash, zsh, fish, elvish, powershell).
    Completions {
        /// The shell to write the script for.
        #[arg(value_enum)]
        shell: clap_complete::Shell,
    },
    /// Print the man page (roff), e.g. `slate man > slate.1`; `--dir` writes every page.
    Man {
        /// Write `slate.1` and one `slate-NAME.1` per subcommand into this directory (created
        /// if missing) instead of printing the top page.
        #[arg(long, value_name = "DIR")]
        dir: Option<PathBuf>,
    },
    /// Serve a headless coordinator for this directory on its control socket.
    Serve {
        /// Which workers run the tasks.
        #[arg(long, value_enum, default_value = "pi")]
        backend: embedded::Backend,
        /// A script book (JSON) for `--backend sim`.
        #[arg(long)]
        scenario: Option<PathBuf>,
        /// The root's model, `provider/id[:effort]` (default: pi's settings).
        #[arg(long)]
        model: Option<String>,
        /// Trust this project's `.pi/` config.
        #[arg(long, conflicts_with = "no_approve")]
        approve: bool,
        /// Do not trust this project's `.pi/` config.
        #[arg(long)]
        no_approve: bool,
        /// Serve this pi session (its id, a UUID): the parent id is the session's, storage
        /// goes under `--session-dir`, a live coordinator of the session is attached to
        /// instead, and the coordinator exits (stopping every worker) when stdin closes.
        #[arg(long, value_name = "UUID")]
        pi_session: Option<String>,
        /// pi's session directory for this cwd (default: pi's default one); storage is
        /// `delegation/<session id>/` under it.
        #[arg(long, value_name = "DIR", requires = "pi_session")]
        session_dir: Option<PathBuf>,
        /// The host pi's version (pi's `VERSION`): below stable 1.5.2, a prerelease or
        /// malformed, delegated execution is refused (`unsupported-host`).
        #[arg(long, value_name = "VERSION", requires = "pi_session")]
        host_version: Option<String>,
    },
    /// Serve the Model Context Protocol on stdio: an MCP host (pi, Claude Code, Codex)
    /// delegates to Slate through `delegate_task`, `delegate_coordinate` and `subagent`
    /// (docs/mcp.md). The session has its own coordinator for this directory, or uses the
    /// one named by `--parent`.
    Mcp {
        /// Use this running coordinator (its parent id) instead of starting one; it is
        /// left running when the MCP session ends.
        #[arg(long, value_name = "UUID")]
        parent: Option<String>,
        /// Which workers run the tasks (own coordinator only).
        #[arg(long, value_enum, default_value = "pi", conflicts_with = "parent")]
        backend: embedded::Backend,
        /// A script book (JSON) for `--backend sim`.
        #[arg(long, conflicts_with = "parent")]
        scenario: Option<PathBuf>,
        /// The root's model, `provider/id[:effort]` (default: pi's settings).
        #[arg(long, conflicts_with = "parent")]
        model: Option<String>,
        /// Trust this project's `.pi/` config.
        #[arg(long, conflicts_with_all = ["no_approve", "parent"])]
        approve: bool,
        /// Do not trust this project's `.pi/` config.
        #[arg(long, conflicts_with = "parent")]
        no_approve: bool,
        /// While a tool call waits, send the host a progress notification this often
        /// (milliseconds, 100 to 3600000) when it asked for progress; each one restarts
        /// the host's request timeout (pi's default is 60 s).
        #[arg(long, value_name = "MS", default_value_t = 10_000,
              value_parser = clap::value_parser!(u64).range(100..=3_600_000))]
        progress_ms: u64,
    },
    /// Open the Subagent Hub on the coordinator serving this directory (or `--parent`);
    /// with none reachable, start one in-process for as long as the Hub runs.
    Hub {
        #[command(flatten)]
        select: Select,
        /// Which workers run tasks when the Hub has to start its own coordinator.
        #[arg(long, value_enum, default_value = "pi")]
        backend: embedded::Backend,
        /// A script book (JSON) for `--backend sim`.
        #[arg(long)]
        scenario: Option<PathBuf>,
        /// The root's model, `provider/id[:effort]` (default: pi's settings).
        #[arg(long)]
        model: Option<String>,
        /// Trust this project's `.pi/` config (only when starting a coordinator).
        #[arg(long, conflicts_with = "no_approve")]
        approve: bool,
        /// Do not trust this project's `.pi/` config (only when starting a coordinator).
        #[arg(long)]
        no_approve: bool,
        /// Draw for a host instead of a terminal: JSON lines in, one JSON frame per line out
        /// (pi's `/subagent-hub` overlay). Needs a running coordinator.
        #[arg(long, conflicts_with = "pane")]
        frames: bool,
        /// Open the Hub in a new tmux pane beside this one (below it, or in a new window,
        /// when a side-by-side pane would be narrower than the roster needs); the pane gets
        /// the coordinator's socket and stays open with the error if the Hub fails.
        #[arg(long)]
        pane: bool,
    },
    /// Show the fleet of the coordinator serving this directory (same as `subagent-status`),
    /// or one generation: `UUID@GEN` or `UUID GEN`.
    Status {
        /// One exact generation (`UUID@GEN`, or `UUID GEN`) to show with its history;
        /// without it, the whole fleet.
        #[arg(num_args = 0..=2, value_name = "TARGET")]
        target: Vec<String>,
        /// Fit the fleet table to this many columns (at least 56): handles instead of full
        /// identities, the counts line broken, long text cut with `…` (pi's
        /// `/subagent-status` passes its width). Without it, the full table.
        #[arg(long, value_name = "COLUMNS", value_parser = clap::value_parser!(u16).range(56..))]
        width: Option<u16>,
        #[command(flatten)]
        select: Select,
    },
    /// Follow the fleet live in an inline widget under the prompt (needs a terminal;
    /// `slate status` is the one-shot table). q, Esc or Ctrl+C leaves. With --lines, no
    /// terminal: the widget's rows as JSON lines, for pi's widget.
    Watch {
        #[command(flatten)]
        select: Select,
        /// No terminal: write `{"width": N, "lines": [...]}` (the widget's rows with SGR
        /// colours, at most 12, each fitting N columns) on one line each time the rows change;
        /// stdin lines `{"width": N}` (or `{"width": N, "rows": R}`) ask for a size and are
        /// answered at once; exit 0 when the coordinator goes away.
        #[arg(long)]
        lines: bool,
        /// The width of the --lines rows, in terminal columns, until stdin asks for another.
        #[arg(long, requires = "lines", value_name = "N",
              default_value_t = watch_lines::DEFAULT_WIDTH,
              value_parser = clap::value_parser!(u16).range(1..=1000))]
        width: u16,
    },
    /// Slate's extension in your own pi: `install`, `uninstall`, `doctor`.
    Pi {
        #[command(subcommand)]
        action: pi::PiAction,
    },
    /// Delegate work: one task from flags, or a request file (`--file`, `-` for stdin).
    Delegate {
        /// The assignment text (or use --task-file / --file).
        assignment: Option<String>,
        /// The profile: scout, review, general or implementation (`worker` is an alias).
        #[arg(long, default_value = "scout", value_parser = ProfileName)]
        profile: String,
        /// An exact model selection `provider/id[:effort]` (must be permitted).
        #[arg(long)]
        model: Option<String>,
        /// The working directory (default: the coordinator's directory).
        #[arg(long)]
        cwd: Option<String>,
        /// Request limits as JSON, e.g. '{"requests":20}'.
        #[arg(long)]
        limits: Option<String>,
        /// A JSON file with the result schema.
        #[arg(long)]
        schema: Option<PathBuf>,
        /// Read the assignment from a checked task file (instead of the text argument).
        #[arg(long)]
        task_file: Option<String>,
        /// A native `delegate_task` or compatibility `subagent` request (JSON), `-` for stdin.
        #[arg(long, conflicts_with_all = ["assignment", "task_file"])]
        file: Option<PathBuf>,
        /// Return the accepted identities at once.
        #[arg(long)]
        background: bool,
        #[command(flatten)]
        select: Select,
    },
    /// Stop one generation and its subtree.
    Stop {
        /// The exact generation: `UUID@GEN`, or `UUID GEN` as two words (never a prefix).
        #[arg(num_args = 1..=2, required = true, value_name = "TARGET")]
        target: Vec<String>,
        #[command(flatten)]
        select: Select,
    },
    /// Steer a running generation: `slate steer UUID@GEN TEXT` (or `UUID GEN TEXT`).
    Steer {
        /// `UUID@GEN TEXT` or `UUID GEN TEXT`: the exact generation, then the text delivered to its model.
        #[arg(num_args = 2..=3, required = true, value_name = "TARGET… TEXT")]
        words: Vec<String>,
        #[command(flatten)]
        select: Select,
    },
    /// Message a direct child: `slate message [UUID@GEN | UUID GEN] TEXT` (replies arrive
    /// in the root inbox: `slate inbox`). Without a target the coordinator refuses
    /// (`root-self-message`): the root cannot message itself.
    Message {
        /// `[UUID@GEN | UUID GEN] TEXT`: an optional exact target, then the text.
        #[arg(num_args = 1..=3, required = true, value_name = "TARGET… TEXT")]
        words: Vec<String>,
        /// How the child gets it: `inbox` (read with its own inbox), `steer` (now, while it
        /// runs) or `followUp` (after its current turn).
        #[arg(long, default_value = "inbox", value_parser = ["inbox", "steer", "followUp"])]
        mode: String,
        #[command(flatten)]
        select: Select,
    },
    /// Read (and consume) the root inbox.
    Inbox {
        #[command(flatten)]
        select: Select,
    },
    /// Park an idle generation.
    Park {
        /// The exact generation: `UUID@GEN`, or `UUID GEN` as two words (never a prefix).
        #[arg(num_args = 1..=2, required = true, value_name = "TARGET")]
        target: Vec<String>,
        #[command(flatten)]
        select: Select,
    },
    /// Continue a paused generation (`slate resume UUID@GEN TEXT`), or, with no target, clear
    /// the pause of this directory's pi session (`slate resume [--model provider/id]
    /// [--effort LEVEL] [--session FILE]`, docs/handoff.md).
    Resume {
        /// `UUID@GEN TEXT` (or `UUID GEN TEXT`); none for the session form.
        words: Vec<String>,
        /// Session form: the model an `adoption` pause is validated with.
        #[arg(long)]
        model: Option<String>,
        /// Session form: the thinking level (off|minimal|low|medium|high|xhigh|max).
        #[arg(long)]
        effort: Option<String>,
        /// Session form: this session file instead of the newest one for the directory.
        #[arg(long)]
        session: Option<PathBuf>,
        /// Session form, for Slate's pi extension: run by the pi that owns the session (not
        /// counted as a live writer); the kickoff is claimed and reported for pi to send.
        #[arg(long)]
        from_pi: bool,
        #[command(flatten)]
        select: Select,
    },
    /// Hand this directory's pi session off to a fresh successor session carrying the fleet's
    /// threads, episodes and kickoff (docs/handoff.md).
    Handoff {
        /// Purpose: a track boundary was reached.
        #[arg(long, group = "purpose")]
        track_boundary: bool,
        /// Purpose: a post-check.
        #[arg(long, group = "purpose")]
        post_check: bool,
        /// Purpose: the context budget.
        #[arg(long, group = "purpose")]
        context_budget: bool,
        /// Purpose: the user asked (the default for a new request; replaces a pending purpose).
        #[arg(long, group = "purpose")]
        user_request: bool,
        /// This session file instead of the newest one for the directory.
        #[arg(long)]
        session: Option<PathBuf>,
        /// For Slate's pi extension: run by the pi that owns the session (not counted as a
        /// live writer); the successor's kickoff is claimed and reported for pi to send.
        #[arg(long)]
        from_pi: bool,
        /// Write nothing: say whether a successor would adopt the session's model now (routing),
        /// and the `slate.json` fix when it would not.
        #[arg(long, conflicts_with_all = ["track_boundary", "post_check", "context_budget", "user_request"])]
        check: bool,
        /// The focus for the successor; everything after the first word is focus text.
        #[arg(trailing_var_arg = true, allow_hyphen_values = true)]
        focus: Vec<String>,
        #[command(flatten)]
        select: Select,
    },
    /// A new generation for an idle identity: `slate followup UUID@GEN TEXT` (or `UUID GEN
    /// TEXT`).
    Followup {
        /// `UUID@GEN TEXT` or `UUID GEN TEXT`: the exact generation, then the new generation's assignment.
        #[arg(num_args = 2..=3, required = true, value_name = "TARGET… TEXT")]
        words: Vec<String>,
        #[command(flatten)]
        select: Select,
    },
    /// A new generation for a parked identity: `slate revive UUID@GEN TEXT` (or `UUID GEN
    /// TEXT`).
    Revive {
        /// `UUID@GEN TEXT` or `UUID GEN TEXT`: the exact generation, then the new generation's assignment.
        #[arg(num_args = 2..=3, required = true, value_name = "TARGET… TEXT")]
        words: Vec<String>,
        #[command(flatten)]
        select: Select,
    },
    /// The read-only messages of exactly one generation.
    Transcript {
        /// The exact generation: `UUID@GEN`, or `UUID GEN` as two words (never a prefix).
        #[arg(num_args = 1..=2, required = true, value_name = "TARGET")]
        target: Vec<String>,
        #[command(flatten)]
        select: Select,
    },
    /// Wait for one outcome (`--target`), one receipt (`--message`), the root inbox, or
    /// every current assignment (`--all`, exit 1 if any failed or was cancelled).
    Wait {
        /// Wait for this generation's outcome (`UUID@GEN`).
        #[arg(long)]
        target: Option<String>,
        /// Wait for this message's receipt (its UUID).
        #[arg(long)]
        message: Option<String>,
        /// Wait until every current assignment drained; exit 1 if any failed or was cancelled.
        #[arg(long, conflicts_with_all = ["target", "message"])]
        all: bool,
        /// Give up after this many milliseconds (1–60000 for --target/--message).
        #[arg(long, default_value_t = 60_000)]
        timeout: u64,
        #[command(flatten)]
        select: Select,
    },
}

/// Which coordinator a command talks to.
#[derive(Debug, clap::Args)]
pub struct Select {
    /// The parent id of the coordinator (default: the one serving this directory, or
    /// `SLATE_SOCKET`).
    #[arg(long)]
    pub parent: Option<String>,
}

/// `--profile`'s value: any text, checked by the delegation policy like a request file's
/// `profile` (an unknown one is an `invalid-request` naming its JSON path), with the profile
/// names as its possible values, so help lists them and every generated completion script
/// offers them.
///
/// Why static completion and not `clap_complete`'s dynamic `CompleteEnv`: the names are
/// `Role::ALL`, fixed in the code — `delegation.json` (operator or project) configures those
/// four profiles and cannot add or remove one (`policy::profiles` refuses other keys) — so the
/// resolution for a directory would only ever answer the same names. Static values keep the
/// existing `slate completions SHELL` scripts (all five shells, no `slate` process per Tab,
/// nothing read from a project on Tab) and need no unstable `clap_complete` feature.
#[derive(Clone, Copy, Debug)]
struct ProfileName;

impl clap::builder::TypedValueParser for ProfileName {
    type Value = String;

    fn parse_ref(
        &self,
        cmd: &clap::Command,
        arg: Option<&clap::Arg>,
        value: &std::ffi::OsStr,
    ) -> Result<String, clap::Error> {
        clap::builder::StringValueParser::new().parse_ref(cmd, arg, value)
    }

    fn possible_values(
        &self,
    ) -> Option<Box<dyn Iterator<Item = clap::builder::PossibleValue> + '_>> {
        Some(Box::new(crate::core::Role::ALL.iter().map(|role| {
            clap::builder::PossibleValue::new(role.as_str())
        })))
    }
}

/// `slate`'s `main`: the command's result through the one exit ([`error::exit`]).
pub fn main(cli: Cli) -> std::process::ExitCode {
    survive_file_size_limit();
    let printer = Printer::new(cli.json);
    let result = try_main(&printer, cli.command);
    error::exit(&printer, result)
}

/// SIGXFSZ's default action kills the process, between the bytes of a write that crossed the
/// file-size limit (`RLIMIT_FSIZE`) and the cleanup that would cut the file back. With a
/// handler installed the write fails with `EFBIG` instead and every writer's own failure path
/// runs (a session append is cut back, a publication is reported). A handler, unlike an
/// ignored disposition, is reset on `exec`, so workers start with the default.
fn survive_file_size_limit() {
    let noticed = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    // Failing to install it leaves the default action: nothing else depends on it.
    let _ = signal_hook::flag::register(nix::libc::SIGXFSZ, noticed);
}

/// Runs a parsed command: its exit code (0, or the code of an answer that is itself a
/// failure, such as a failed outcome), or why it failed.
#[allow(clippy::too_many_lines, reason = "one dispatch arm per command")]
pub fn try_main(printer: &Printer, command: Command) -> Result<ExitCode, Error> {
    match command {
        Command::Demo { serve: true, .. } => demo_live::serve(printer),
        Command::Demo { seed, timeline, .. } => {
            use std::io::IsTerminal as _;
            let terminal = std::io::stdout().is_terminal() && std::io::stdin().is_terminal();
            if terminal && !timeline && !printer.json() {
                demo_live::hub()
            } else {
                demo::run(printer, seed)
            }
        }
        Command::Completions { shell } => {
            let mut command = <Cli as clap::CommandFactory>::command();
            let mut out = Vec::new();
            clap_complete::generate(shell, &mut command, "slate", &mut out);
            printer.out(&String::from_utf8_lossy(&out))?;
            Ok(ExitCode::Ok)
        }
        Command::Man { dir } => man::run(printer, dir.as_deref()),
        Command::Profiles {
            approve,
            no_approve,
            prompts,
            text,
        } => profiles::run(printer, approval(approve, no_approve), prompts, text),
        Command::Effective {
            approve,
            no_approve,
            recovery,
            parent,
        } => effective::run(
            printer,
            approval(approve, no_approve),
            recovery.as_deref(),
            parent,
        ),
        Command::Run {
            file,
            backend,
            model,
            approve,
            no_approve,
        } => run::run(
            printer,
            &run::RunArgs {
                file,
                embed: embedded::EmbedArgs {
                    backend,
                    scenario: None,
                    approve: approval(approve, no_approve),
                    model,
                    kill_grace: std::time::Duration::from_secs(10),
                    session: None,
                    prestart: false,
                },
            },
        ),
        Command::Serve {
            backend,
            scenario,
            model,
            approve,
            no_approve,
            pi_session,
            session_dir,
            host_version,
        } => {
            let session = pi_session
                .map(|id| {
                    crate::core::ids::parse_full_uuid(&id)
                        .map(|id| embedded::PiSession {
                            id,
                            session_dir,
                            host_version,
                        })
                        .map_err(|_| {
                            Error::Usage(format!(
                                "--pi-session: {id:?} is not a pi session id (a 36-character hyphenated UUID)"
                            ))
                        })
                })
                .transpose()?;
            serve::run(
                printer,
                &embedded::EmbedArgs {
                    backend,
                    scenario,
                    approve: approval(approve, no_approve),
                    model,
                    kill_grace: std::time::Duration::from_secs(10),
                    session,
                    prestart: true,
                },
            )
        }
        Command::Mcp {
            parent,
            backend,
            scenario,
            model,
            approve,
            no_approve,
            progress_ms,
        } => mcp::run(
            printer,
            &mcp::McpArgs {
                parent,
                embed: embedded::EmbedArgs {
                    backend,
                    scenario,
                    approve: approval(approve, no_approve),
                    model,
                    // A host stopping its stdio server closes stdin, then signals its
                    // process group within seconds (pi: SIGTERM after 0.5 s, SIGKILL 2 s
                    // later); workers lead groups of their own, so they are signalled first.
                    kill_grace: std::time::Duration::from_millis(1500),
                    session: None,
                    prestart: true,
                },
                progress_every: std::time::Duration::from_millis(progress_ms),
            },
        ),
        Command::Status {
            target,
            width,
            select,
        } => status::run(printer, &target, select.parent.as_deref(), width),
        Command::Watch {
            select,
            lines: true,
            width,
        } => watch_lines::run(printer, select.parent, width),
        Command::Watch { select, .. } => watch::run(select.parent),
        Command::Pi { action } => pi::run(printer, action),
        Command::Hub {
            select,
            backend,
            scenario,
            model,
            approve,
            no_approve,
            frames,
            pane,
        } => hub::run(
            select.parent,
            hub::Surface::of(frames, pane),
            &embedded::EmbedArgs {
                backend,
                scenario,
                approve: approval(approve, no_approve),
                model,
                kill_grace: std::time::Duration::from_secs(10),
                session: None,
                prestart: true,
            },
        ),
        Command::Resume {
            words,
            model,
            effort,
            session,
            from_pi,
            ..
        } if words.is_empty() => handoff::resume(printer, model, effort, session, from_pi),
        Command::Handoff {
            session,
            from_pi,
            check: true,
            ..
        } => handoff::check(printer, handoff::Target { session, from_pi }),
        Command::Handoff {
            track_boundary,
            post_check,
            context_budget,
            user_request,
            session,
            from_pi,
            focus,
            select,
            check: false,
        } => handoff::handoff(
            printer,
            handoff::PurposeFlags {
                track_boundary,
                post_check,
                context_budget,
                user_request,
            },
            &focus,
            handoff::Target { session, from_pi },
            select.parent,
        ),
        other => commands::run(printer, other),
    }
}

fn approval(approve: bool, no_approve: bool) -> Option<bool> {
    if approve {
        Some(true)
    } else if no_approve {
        Some(false)
    } else {
        None
    }
}

/// `subagent-status [UUID@generation]`: the one-shot status query, through the same exit.
pub fn subagent_status_main(
    args: impl IntoIterator<Item = std::ffi::OsString>,
) -> std::process::ExitCode {
    #[derive(Debug, Parser)]
    #[command(
        name = "subagent-status",
        version,
        about = "Show the subagent fleet of the coordinator serving this directory"
    )]
    struct Args {
        #[arg(long)]
        json: bool,
        /// The parent id of the coordinator to ask.
        #[arg(long)]
        parent: Option<String>,
        /// One generation: `UUID@GEN` or `UUID GEN`.
        target: Vec<String>,
    }
    let args = match error::parse_args::<Args>(args) {
        Ok(args) => args,
        // A usage error (as JSON with `--json`), --help or --version: what `slate` does.
        Err(code) => return code,
    };
    let printer = Printer::new(args.json);
    let result = status::run(&printer, &args.target, args.parent.as_deref(), None);
    error::exit(&printer, result)
}

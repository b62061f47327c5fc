//! Command-line surface: clap definitions, one module per subcommand, one Printer.

mod commands;
mod demo;
mod effective;
mod embedded;
mod fleet;
pub mod printer;
mod profiles;
mod run;
mod serve;
mod status;

use std::path::PathBuf;

use clap::{Parser, Subcommand};

pub use printer::Printer;

/// Exit codes, stable and documented in README.md.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ExitCode {
    Ok = 0,
    /// A refused request, or a failed/cancelled outcome.
    Refused = 1,
    /// Usage or configuration error.
    Usage = 2,
    /// No coordinator reachable.
    NoCoordinator = 3,
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
    /// Run a small simulated fleet through the coordinator in virtual time and print its
    /// timeline and outcomes (no network, no credentials).
    Demo {
        /// Seed for identities; the same seed gives the same run.
        #[arg(long, default_value_t = 7)]
        seed: u64,
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
        #[arg(value_enum)]
        shell: clap_complete::Shell,
    },
    /// Print the man page (roff), e.g. `slate man > slate.1`.
    Man,
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
    },
    /// Show the fleet of the coordinator serving this directory (same as `subagent-status`),
    /// or one generation: `UUID@GEN` or `UUID GEN`.
    Status {
        target: Vec<String>,
        #[command(flatten)]
        select: Select,
    },
    /// Delegate work: one task from flags, or a request file (`--file`, `-` for stdin).
    Delegate {
        /// The assignment text (or use --task-file / --file).
        assignment: Option<String>,
        #[arg(long, default_value = "scout")]
        profile: String,
        #[arg(long)]
        model: Option<String>,
        #[arg(long)]
        cwd: Option<String>,
        /// Request limits as JSON, e.g. '{"requests":20}'.
        #[arg(long)]
        limits: Option<String>,
        /// A JSON file with the result schema.
        #[arg(long)]
        schema: Option<PathBuf>,
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
        #[arg(num_args = 1..=2, required = true)]
        target: Vec<String>,
        #[command(flatten)]
        select: Select,
    },
    /// Steer a running generation: `slate steer UUID@GEN TEXT`.
    Steer {
        target: String,
        text: String,
        #[command(flatten)]
        select: Select,
    },
    /// Message a direct child (or the root inbox is read with `slate inbox`).
    Message {
        target: String,
        text: String,
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
        #[arg(num_args = 1..=2, required = true)]
        target: Vec<String>,
        #[command(flatten)]
        select: Select,
    },
    /// Continue a paused generation: `slate resume UUID@GEN TEXT`.
    Resume {
        target: String,
        text: String,
        #[command(flatten)]
        select: Select,
    },
    /// A new generation for an idle identity: `slate followup UUID@GEN TEXT`.
    Followup {
        target: String,
        text: String,
        #[command(flatten)]
        select: Select,
    },
    /// A new generation for a parked identity: `slate revive UUID@GEN TEXT`.
    Revive {
        target: String,
        text: String,
        #[command(flatten)]
        select: Select,
    },
    /// The read-only messages of exactly one generation.
    Transcript {
        #[arg(num_args = 1..=2, required = true)]
        target: Vec<String>,
        #[command(flatten)]
        select: Select,
    },
    /// Wait for one outcome (`--target`), one receipt (`--message`), the root inbox, or
    /// every current assignment (`--all`, exit 1 if any failed or was cancelled).
    Wait {
        #[arg(long)]
        target: Option<String>,
        #[arg(long)]
        message: Option<String>,
        #[arg(long, conflicts_with_all = ["target", "message"])]
        all: bool,
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

/// Run a parsed command; the caller maps the result to the process exit code.
pub fn run(cli: Cli) -> ExitCode {
    let printer = Printer::new(cli.json);
    match cli.command {
        Command::Demo { seed } => demo::run(&printer, seed),
        Command::Completions { shell } => {
            let mut command = <Cli as clap::CommandFactory>::command();
            let mut out = Vec::new();
            clap_complete::generate(shell, &mut command, "slate", &mut out);
            printer.out(&String::from_utf8_lossy(&out));
            ExitCode::Ok
        }
        Command::Man => {
            let command = <Cli as clap::CommandFactory>::command();
            let mut out = Vec::new();
            match clap_mangen::Man::new(command).render(&mut out) {
                Ok(()) => {
                    printer.out(&String::from_utf8_lossy(&out));
                    ExitCode::Ok
                }
                Err(e) => {
                    printer.error(&format!("cannot render the man page: {e}"));
                    ExitCode::Usage
                }
            }
        }
        Command::Profiles {
            approve,
            no_approve,
            prompts,
            text,
        } => profiles::run(&printer, approval(approve, no_approve), prompts, text),
        Command::Effective {
            approve,
            no_approve,
            recovery,
        } => effective::run(&printer, approval(approve, no_approve), recovery.as_deref()),
        Command::Run {
            file,
            backend,
            model,
            approve,
            no_approve,
        } => run::run(
            &printer,
            &run::RunArgs {
                file,
                embed: embedded::EmbedArgs {
                    backend,
                    scenario: None,
                    approve: approval(approve, no_approve),
                    model,
                    kill_grace: std::time::Duration::from_secs(10),
                },
            },
        ),
        Command::Serve {
            backend,
            scenario,
            model,
            approve,
            no_approve,
        } => serve::run(
            &printer,
            &embedded::EmbedArgs {
                backend,
                scenario,
                approve: approval(approve, no_approve),
                model,
                kill_grace: std::time::Duration::from_secs(10),
            },
        ),
        Command::Status { target, select } => status::run(&printer, &target, select.parent),
        other => commands::run(&printer, other),
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

/// `subagent-status [UUID@generation]`: the one-shot status query.
pub fn run_subagent_status(args: impl IntoIterator<Item = String>) -> ExitCode {
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
    match Args::try_parse_from(args) {
        Ok(args) => status::run(&Printer::new(args.json), &args.target, args.parent),
        Err(e) => {
            let code = if e.use_stderr() {
                ExitCode::Usage
            } else {
                ExitCode::Ok
            };
            let _ = e.print();
            code
        }
    }
}

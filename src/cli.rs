//! Command-line surface: clap definitions, one module per subcommand, one Printer.

mod demo;
pub mod printer;
mod profiles;
mod run;
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
    },
    /// Run one `delegate_task` request (JSON file, or `-` for stdin) in an embedded
    /// coordinator for this directory and print the ordered outcomes.
    Run {
        /// The request: native `{assignment|taskFile, profile, …}` / `{tasks:[…]}`, or a
        /// compatibility `subagent` launch.
        file: PathBuf,
        /// Which workers run the tasks.
        #[arg(long, value_enum, default_value = "pi")]
        backend: run::Backend,
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
    /// Show the fleet of the coordinator serving this directory (same as `subagent-status`).
    Status {
        /// `UUID@generation` of one generation to show.
        target: Option<String>,
    },
}

/// Run a parsed command; the caller maps the result to the process exit code.
pub fn run(cli: Cli) -> ExitCode {
    let printer = Printer::new(cli.json);
    match cli.command {
        Command::Demo { seed } => demo::run(&printer, seed),
        Command::Profiles {
            approve,
            no_approve,
            prompts,
        } => profiles::run(&printer, approval(approve, no_approve), prompts),
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
                backend,
                approve: approval(approve, no_approve),
                model,
            },
        ),
        Command::Status { target } => status::run(&printer, target.as_deref()),
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
        /// `UUID@generation` of one generation to show.
        target: Option<String>,
    }
    match Args::try_parse_from(args) {
        Ok(args) => status::run(&Printer::new(args.json), args.target.as_deref()),
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

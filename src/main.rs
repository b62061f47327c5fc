use clap::Parser;

fn main() -> std::process::ExitCode {
    slate::cli::main(slate::cli::Cli::parse())
}

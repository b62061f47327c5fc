use clap::Parser;

fn main() -> std::process::ExitCode {
    // A containment process for one worker (`worker::contain`) exits here, before any CLI
    // parsing or runtime: it must start fast and stay small.
    slate::worker::contain::main_if_asked();
    slate::cli::main(slate::cli::Cli::parse())
}

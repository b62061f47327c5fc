fn main() -> std::process::ExitCode {
    // A containment process for one worker (`worker::contain`) exits here, before any CLI
    // parsing or runtime: it must start fast and stay small.
    slate::worker::contain::main_if_asked();
    // A usage error is reported here (as JSON with `--json`) and is the exit code.
    match slate::cli::error::parse_args::<slate::cli::Cli>(std::env::args_os()) {
        Ok(cli) => slate::cli::main(cli),
        Err(code) => code,
    }
}

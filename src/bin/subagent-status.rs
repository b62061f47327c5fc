fn main() -> std::process::ExitCode {
    slate::cli::subagent_status_main(std::env::args_os())
}

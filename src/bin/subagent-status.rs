fn main() -> std::process::ExitCode {
    let code = slate::cli::run_subagent_status(std::env::args());
    std::process::ExitCode::from(code as u8)
}

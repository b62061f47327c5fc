use clap::Parser;

fn main() -> std::process::ExitCode {
    let code = slate::cli::run(slate::cli::Cli::parse());
    std::process::ExitCode::from(code as u8)
}

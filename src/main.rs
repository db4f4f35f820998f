//! The `degrade` binary: parse the command line, set up logging, run one subcommand, exit with its code.

use clap::Parser;

fn main() -> std::process::ExitCode {
    let cli = degrade::cli::Cli::parse();
    let service = matches!(cli.command, degrade::cli::Command::Serve(_));
    degrade::cli::init_logging(cli.verbose, service);
    degrade::cli::run(cli).into()
}

//! `strata`: solve and benchmark the anisotropic elliptic problem of atmospheric models.

mod backend_choice;
mod bench;
mod options;
mod report;
mod solve;

use clap::{Parser, Subcommand};
use std::process::ExitCode;

/// Errors of a command: anything with a one-line message.
pub type CliError = Box<dyn std::error::Error + Send + Sync>;
/// Result of a command.
pub type CliResult<T> = Result<T, CliError>;

/// Matrix-free CG and tensor-product multigrid for the pressure-correction equation of
/// atmospheric models (Müller, Scheichl & Vainikko 2014), on a cubed-sphere panel or a flat box.
#[derive(Parser, Debug)]
#[command(name = "strata", version, about, long_about = None)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand, Debug)]
enum Command {
    /// Solve one problem and report convergence and performance in the paper's terms.
    #[command(allow_negative_numbers = true)]
    Solve(solve::SolveArgs),
    /// Measure memory bandwidth, time every kernel and solver, report useful bandwidth.
    #[command(allow_negative_numbers = true)]
    Bench(bench::BenchArgs),
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let result = match cli.command {
        Command::Solve(args) => solve::run(args),
        Command::Bench(args) => bench::run(args),
    };
    match result {
        Ok(code) => code,
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::FAILURE
        }
    }
}

//! `strata`: solve and benchmark the anisotropic elliptic problem of atmospheric models.

mod backend_choice;
mod bench;
mod compare;
mod flags;
mod job;
mod operator;
mod options;
mod report;
mod reproduce;
mod solve;

use clap::{CommandFactory, Parser, Subcommand};
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
    /// Compare a variable of two NetCDF files (e.g. solutions of two runs).
    Compare(compare::CompareArgs),
    /// Write the assembled matrix and a right-hand side as Matrix Market files (for SciPy, PETSc).
    #[command(allow_negative_numbers = true)]
    Operator(operator::OperatorArgs),
    /// Rerun the paper's experiments: CSV, PNG plots and tables beside the paper's.
    #[command(allow_negative_numbers = true)]
    Reproduce(reproduce::ReproduceArgs),
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let job = job::Job::init();
    if job.size() > 1 {
        // A rank that panics ends the whole job instead of leaving the others waiting.
        let rank = job.rank();
        let default = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            eprintln!("error (rank {rank}): internal error");
            default(info);
            let _ = std::io::Write::flush(&mut std::io::stderr());
        }));
    }
    let result = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        let (name, result) = match cli.command {
            Command::Solve(args) => ("solve", solve::run(args, &job)),
            Command::Bench(args) => ("bench", bench::run(args, &job)),
            Command::Compare(args) => ("compare", compare::run(args)),
            Command::Operator(args) => ("operator", operator::run(args)),
            Command::Reproduce(args) => ("reproduce", reproduce::run(args, &job)),
        };
        result.map_err(|e| match Cli::command().find_subcommand(name) {
            Some(command) => flags::flag_error(e, command),
            None => e,
        })
    }));
    match result {
        Ok(Ok(code)) => code,
        Ok(Err(e)) if job.size() > 1 => {
            eprintln!("error (rank {}): {e}", job.rank());
            job.abort(1)
        }
        Ok(Err(e)) => {
            eprintln!("error: {e}");
            ExitCode::FAILURE
        }
        Err(_) => job.abort(101),
    }
}
